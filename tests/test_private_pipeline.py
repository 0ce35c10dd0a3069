"""A pipeline that is private end to end: diffprivlib's scaler, then an estimator.

Features far from the origin defeat a clipped first-order fit (docs/install.rst,
"Preprocessing under the guarantee"); diffprivlib's ``StandardScaler`` with public
bounds centres them privately, and one ``BudgetAccountant`` composes both steps.
"""

import numpy as np
import pytest
from diffprivlib import BudgetAccountant
from diffprivlib.models import StandardScaler as DPStandardScaler
from diffprivlib.utils import PrivacyLeakWarning
from sklearn.datasets import make_classification
from sklearn.linear_model import LogisticRegression
from sklearn.metrics import roc_auc_score
from sklearn.model_selection import GridSearchCV, cross_val_score, train_test_split
from sklearn.pipeline import make_pipeline

from skdpminimax import DPAUCMaximizer, DPRobustClassifier
from skdpminimax.search import PrivateSearchCV, search_budgets


def _offset_data():
    # Five features of scale 10 around 100: the public bounds (40, 160) per feature.
    X, y = make_classification(3000, 5, n_informative=3, n_redundant=0, weights=[0.7],
                               class_sep=1.5, random_state=0)
    X = 10.0 * X + 100.0
    return train_test_split(X, y, test_size=0.3, stratify=y, random_state=0)


BOUNDS = (np.full(5, 40.0), np.full(5, 160.0))


def _pipeline(accountant, epsilon, estimator=DPAUCMaximizer, random_state=0):
    return make_pipeline(
        DPStandardScaler(epsilon=0.5, bounds=BOUNDS, accountant=accountant,
                         random_state=random_state),
        estimator(epsilon=epsilon, delta=1e-5, data_norm=10.0, accountant=accountant,
                  random_state=random_state),
    )


@pytest.mark.parametrize("epsilon", [1.0, np.inf])
def test_private_scaler_then_estimator_fits_and_both_are_charged(epsilon):
    X_train, X_test, y_train, y_test = _offset_data()
    ledger = BudgetAccountant()
    model = _pipeline(ledger, epsilon).fit(X_train, y_train)

    spent_epsilon, spent_delta = ledger.total()
    assert spent_epsilon == pytest.approx(0.5 + epsilon)
    assert spent_delta == pytest.approx(1e-5)
    assert len(ledger.spent_budget) == 2  # the scaler's entry and the fit's

    ceiling = roc_auc_score(y_test, LogisticRegression().fit(X_train, y_train)
                            .decision_function(X_test))
    auc = roc_auc_score(y_test, model.decision_function(X_test))
    # Without noise the pipeline matches the non-private baseline; with epsilon = 1
    # (and the scaler's 0.5) it stays close.
    assert auc > ceiling - (0.01 if np.isinf(epsilon) else 0.05)


def test_plain_cross_validation_loses_diffprivlib_spend():
    # Why the private search below exists: scikit-learn's clone deep-copies a
    # diffprivlib model's accountant (skdpminimax's estimators share theirs), so in a
    # plain cross_val_score only the skdpminimax fits reach the caller's ledger.
    X_train, _, y_train, _ = _offset_data()
    ledger = BudgetAccountant()
    cross_val_score(_pipeline(ledger, 1.0), X_train, y_train, cv=3, scoring="roc_auc")
    assert ledger.spent_budget == [(1.0, 1e-5)] * 3


@pytest.mark.parametrize("n_jobs", [1, 2])
def test_private_search_charges_the_diffprivlib_steps_too(n_jobs):
    X_train, _, y_train, _ = _offset_data()
    ledger = BudgetAccountant()
    grid = GridSearchCV(_pipeline(ledger, 1.0, random_state=None),
                        {"dpaucmaximizer__alpha": [1e-4, 1e-2]}, cv=2, scoring="roc_auc",
                        n_jobs=n_jobs)
    expected = search_budgets(grid, X_train, y_train)
    # 2 candidates x 2 folds x (scaler, estimator), then the refit's sum of both
    assert [(b.epsilon, b.delta) for b in expected] == (
        [(0.5, 0.0), (1.0, 1e-5)] * 4 + [(1.5, 1e-5)])
    search = PrivateSearchCV(grid, accountant=ledger).fit(X_train, y_train)
    # Exactly the prepaid entries: the fits spent on the prepaid ledger, not again here.
    assert ledger.spent_budget == [(b.epsilon, b.delta) for b in expected]
    assert [(b.epsilon, b.delta) for b in search.privacy_spent_] == ledger.spent_budget
    assert np.isfinite(search.best_score_)


def test_private_cross_validation_of_one_candidate():
    # A GridSearchCV with an empty grid and no refit is a charged cross_val_score.
    X_train, _, y_train, _ = _offset_data()
    ledger = BudgetAccountant()
    grid = GridSearchCV(_pipeline(ledger, 1.0, random_state=None), {}, cv=3,
                        scoring="roc_auc", refit=False)
    search = PrivateSearchCV(grid, accountant=ledger).fit(X_train, y_train)
    assert len(ledger.spent_budget) == 6
    assert ledger.total()[0] == pytest.approx(3 * 1.5)
    assert search.cv_results_["split2_test_score"][0] > 0.7


def test_private_search_warns_on_a_seeded_diffprivlib_step():
    X_train, _, y_train, _ = _offset_data()
    ledger = BudgetAccountant()
    pipe = _pipeline(ledger, 1.0, random_state=None)
    pipe.set_params(standardscaler__random_state=0)
    grid = GridSearchCV(pipe, {}, cv=2, refit=False)
    with pytest.warns(PrivacyLeakWarning, match="fixed random_state"):
        PrivateSearchCV(grid, accountant=ledger).fit(X_train, y_train)


def test_private_pipeline_with_the_robust_classifier():
    X_train, X_test, y_train, y_test = _offset_data()
    ledger = BudgetAccountant()
    model = _pipeline(ledger, 2.0, DPRobustClassifier).fit(X_train, y_train)
    assert model.score(X_test, y_test) > 0.7  # majority class alone: 0.7
    assert ledger.total()[0] == pytest.approx(2.5)
