"""A pipeline that is private end to end: diffprivlib's scaler, then an estimator.

Features far from the origin defeat a clipped first-order fit (docs/install.rst,
"Preprocessing under the guarantee"); diffprivlib's ``StandardScaler`` with public
bounds centres them privately, and one ``BudgetAccountant`` composes both steps.
"""

import copy
import warnings

import numpy as np
import pytest
from diffprivlib import BudgetAccountant
from diffprivlib.models import GaussianNB
from diffprivlib.models import StandardScaler as DPStandardScaler
from diffprivlib.utils import PrivacyLeakWarning
from sklearn.base import BaseEstimator, ClassifierMixin, clone
from sklearn.calibration import CalibratedClassifierCV
from sklearn.compose import ColumnTransformer, TransformedTargetRegressor
from sklearn.datasets import make_classification
from sklearn.ensemble import BaggingClassifier
from sklearn.linear_model import LogisticRegression
from sklearn.metrics import roc_auc_score
from sklearn.model_selection import GridSearchCV, cross_val_score, train_test_split
from sklearn.pipeline import FeatureUnion, Pipeline, make_pipeline

from skdpminimax import DPAUCMaximizer, DPGroupFairRegressor, DPRobustClassifier
from skdpminimax.search import PrivateSearchCV, search_budgets
from skdpminimax.solvers import NoisySGDA


def _offset_data():
    # Five features of scale 10 around 100: the public bounds (40, 160) per feature.
    X, y = make_classification(3000, 5, n_informative=3, n_redundant=0, weights=[0.7],
                               class_sep=1.5, random_state=0)
    X = 10.0 * X + 100.0
    return train_test_split(X, y, test_size=0.3, stratify=y, random_state=0)


BOUNDS = (np.full(5, 40.0), np.full(5, 160.0))


def _replace_one():
    # diffprivlib's models are DP for replace-one neighbours with the row count public:
    # compose them with a replace-one fit (fixed-size batches without replacement).
    return NoisySGDA(step_size="scaled", n_epochs="auto", sampler="without_replacement")


def _pipeline(accountant, epsilon, estimator=DPAUCMaximizer, random_state=0, solver=None):
    return make_pipeline(
        DPStandardScaler(epsilon=0.5, bounds=BOUNDS, accountant=accountant,
                         random_state=random_state),
        estimator(epsilon=epsilon, delta=1e-5, data_norm=10.0, accountant=accountant,
                  random_state=random_state, solver=solver or _replace_one()),
    )


@pytest.mark.parametrize("epsilon", [2.0, np.inf])
def test_private_scaler_then_estimator_fits_and_both_are_charged(epsilon):
    X_train, X_test, y_train, y_test = _offset_data()
    ledger = BudgetAccountant()
    model = _pipeline(ledger, epsilon).fit(X_train, y_train)

    assert model[-1].calibration_.neighboring_relation == "replace-one"
    spent_epsilon, spent_delta = ledger.total()
    assert spent_epsilon == pytest.approx(0.5 + epsilon)
    assert spent_delta == pytest.approx(1e-5)
    assert len(ledger.spent_budget) == 2  # the scaler's entry and the fit's

    ceiling = roc_auc_score(y_test, LogisticRegression().fit(X_train, y_train)
                            .decision_function(X_test))
    auc = roc_auc_score(y_test, model.decision_function(X_test))
    # Without noise the pipeline matches the non-private baseline; with epsilon = 2
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
    # The refit model leaves the search holding the caller's ledger again: fitting it
    # later is charged there, not accepted by the prepaid ledger.
    assert all(step.accountant is ledger for _, step in search.best_estimator_.steps)
    assert [(b.epsilon, b.delta) for b in search.privacy_spent_] == ledger.spent_budget
    assert np.isfinite(search.best_score_)
    search.best_estimator_.fit(X_train, y_train)
    assert ledger.spent_budget[len(expected):] == [(0.5, 0.0), (1.0, 1e-5)]


def test_private_cross_validation_of_one_candidate():
    # A GridSearchCV with an empty grid and no refit is a charged cross_val_score.
    X_train, _, y_train, _ = _offset_data()
    ledger = BudgetAccountant()
    grid = GridSearchCV(_pipeline(ledger, 2.0, random_state=None), {}, cv=3,
                        scoring="roc_auc", refit=False)
    search = PrivateSearchCV(grid, accountant=ledger).fit(X_train, y_train)
    assert len(ledger.spent_budget) == 6
    assert ledger.total()[0] == pytest.approx(3 * 2.5)
    # fresh noise in every fit (no seed): a loose bound, well above chance (0.5)
    assert search.cv_results_["mean_test_score"][0] > 0.6


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


def test_private_search_warns_when_relations_differ():
    # The default Poisson fit is add/remove-one; the scaler is replace-one.
    X_train, _, y_train, _ = _offset_data()
    ledger = BudgetAccountant()
    poisson = NoisySGDA(step_size="scaled", n_epochs="auto")
    grid = GridSearchCV(_pipeline(ledger, 1.0, random_state=None, solver=poisson), {}, cv=2,
                        refit=False)
    with pytest.warns(PrivacyLeakWarning, match="neither relation"):
        PrivateSearchCV(grid, accountant=ledger).fit(X_train, y_train)
    grid = GridSearchCV(_pipeline(ledger, 1.0, random_state=None), {}, cv=2, refit=False)
    with warnings.catch_warnings():
        warnings.filterwarnings("error", ".*neither relation", PrivacyLeakWarning)
        PrivateSearchCV(grid, accountant=ledger).fit(X_train, y_train)


def test_column_transformer_and_nested_pipeline_steps_are_charged():
    X_train, _, y_train, _ = _offset_data()
    ledger = BudgetAccountant()
    scaler = DPStandardScaler(epsilon=0.25, bounds=(BOUNDS[0][:3], BOUNDS[1][:3]),
                              accountant=ledger)
    columns = ColumnTransformer([("scaled", make_pipeline(scaler), [0, 1, 2])],
                                remainder=DPStandardScaler(epsilon=0.5, bounds=(
                                    BOUNDS[0][3:], BOUNDS[1][3:]), accountant=ledger))
    model = make_pipeline(columns, DPAUCMaximizer(epsilon=1.0, data_norm=10.0,
                                                  accountant=ledger, solver=_replace_one()))
    grid = GridSearchCV(model, {}, cv=2, refit=False)
    PrivateSearchCV(grid, accountant=ledger).fit(X_train, y_train)
    assert sorted(e for e, _ in ledger.spent_budget) == [0.25, 0.25, 0.5, 0.5, 1.0, 1.0]


@pytest.mark.parametrize("wrap", [
    lambda ledger: CalibratedClassifierCV(DPAUCMaximizer(epsilon=1.0, data_norm=10.0,
                                                         accountant=ledger), cv=3),
    lambda ledger: BaggingClassifier(GaussianNB(epsilon=1.0, bounds=BOUNDS, accountant=ledger),
                                     n_estimators=3),
])
def test_private_steps_under_a_refitting_meta_estimator_are_refused(wrap):
    # Such meta-estimators fit their private child several times per fit: one entry
    # per fit would under-charge them.
    X_train, _, y_train, _ = _offset_data()
    ledger = BudgetAccountant()
    grid = GridSearchCV(wrap(ledger), {}, cv=2)
    with pytest.raises(TypeError, match="several times"):
        PrivateSearchCV(grid, accountant=ledger).fit(X_train, y_train)
    assert ledger.spent_budget == []


def test_a_copied_diffprivlib_ledger_is_not_taken_for_the_callers():
    X_train, _, y_train, _ = _offset_data()
    ledger = BudgetAccountant()
    pipe = _pipeline(ledger, 1.0, random_state=None)
    pipe.set_params(standardscaler__accountant=copy.deepcopy(ledger))  # what clone makes
    grid = GridSearchCV(pipe, {}, cv=2, refit=False)
    with pytest.raises(ValueError, match="copy made by clone"):
        PrivateSearchCV(grid).fit(X_train, y_train)
    assert ledger.spent_budget == []
    # Naming the ledger settles it: every fit is charged to it.
    PrivateSearchCV(grid, accountant=ledger).fit(X_train, y_train)
    assert len(ledger.spent_budget) == 4


def test_default_ledgers_of_both_libraries_are_the_same_ledger():
    X_train, _, y_train, _ = _offset_data()
    with BudgetAccountant() as default:  # diffprivlib's default ledger inside the block
        pipe = make_pipeline(
            DPStandardScaler(epsilon=0.5, bounds=BOUNDS),
            DPAUCMaximizer(epsilon=1.0, data_norm=10.0, solver=_replace_one()))
        PrivateSearchCV(GridSearchCV(pipe, {}, cv=2, refit=False)).fit(X_train, y_train)
        assert len(default.spent_budget) == 4
        # A pure diffprivlib search on the default ledger is charged too.
        PrivateSearchCV(GridSearchCV(GaussianNB(epsilon=1.0, bounds=BOUNDS), {}, cv=2,
                                     refit=False)).fit(X_train, y_train)
        assert len(default.spent_budget) == 6


class _RecordingLedger(BudgetAccountant):
    """Records every spend, on the ledger or on any copy of it, in one shared list."""

    spends = []

    def spend(self, epsilon, delta):
        type(self).spends.append((id(self), epsilon, delta))
        return super().spend(epsilon, delta)


def test_search_fits_spend_on_the_prepaid_ledger_not_on_copies_of_the_callers():
    X_train, _, y_train, _ = _offset_data()
    ledger = _RecordingLedger()
    _RecordingLedger.spends = []
    grid = GridSearchCV(_pipeline(ledger, 1.0, random_state=None), {}, cv=2, refit=False)
    PrivateSearchCV(grid, accountant=ledger).fit(X_train, y_train)
    # Only the charge itself, on the caller's ledger: a fit spending on a copy of it
    # (a step the search did not re-point to the prepaid ledger) would show up here.
    assert [(e, d) for _, e, d in _RecordingLedger.spends] == [(0.5, 0.0), (1.0, 1e-5)] * 2
    assert {i for i, _, _ in _RecordingLedger.spends} == {id(ledger)}


def test_feature_union_and_target_transformer_steps_are_charged():
    X_train, _, y_train, _ = _offset_data()
    ledger = BudgetAccountant()
    union = FeatureUnion([
        ("a", DPStandardScaler(epsilon=0.25, bounds=BOUNDS, accountant=ledger)),
        ("b", DPStandardScaler(epsilon=0.5, bounds=BOUNDS, accountant=ledger)),
    ])
    model = make_pipeline(union, DPAUCMaximizer(epsilon=1.0, data_norm=20.0,
                                                accountant=ledger, solver=_replace_one()))
    PrivateSearchCV(GridSearchCV(model, {}, cv=2, refit=False),
                    accountant=ledger).fit(X_train, y_train)
    assert sorted(e for e, _ in ledger.spent_budget) == [0.25, 0.25, 0.5, 0.5, 1.0, 1.0]

    ledger = BudgetAccountant()
    regressor = TransformedTargetRegressor(
        regressor=make_pipeline(DPStandardScaler(epsilon=0.5, bounds=BOUNDS,
                                                 accountant=ledger),
                                DPGroupFairRegressor(epsilon=1.0, data_norm=20.0,
                                                     bounds=(-1.0, 2.0), accountant=ledger,
                                                     solver=_replace_one())),
        func=lambda y: y, inverse_func=lambda y: y, check_inverse=False)
    search = GridSearchCV(regressor, {}, cv=2, refit=False)
    assert len(search_budgets(search, X_train, y_train.astype(float))) == 4


class _ListEnsemble(ClassifierMixin, BaseEstimator):
    """A meta-estimator holding its members in a list (get_params does not see them)."""

    def __init__(self, members=()):
        self.members = members

    def fit(self, X, y):
        self.fitted_ = [clone(m).fit(X, y) for m in self.members]
        return self


def test_private_steps_hidden_in_a_list_parameter_are_refused():
    X_train, _, y_train, _ = _offset_data()
    ledger = BudgetAccountant()
    ensemble = _ListEnsemble([DPAUCMaximizer(epsilon=1.0, data_norm=10.0, accountant=ledger)])
    with pytest.raises(TypeError, match="several times"):
        PrivateSearchCV(GridSearchCV(ensemble, {}, cv=2), accountant=ledger).fit(X_train,
                                                                                 y_train)
    assert ledger.spent_budget == []


@pytest.mark.parametrize("n_jobs", [1, 2])
def test_estimators_in_list_and_array_grid_values_spend_on_the_prepaid_ledger(n_jobs):
    X_train, _, y_train, _ = _offset_data()
    ledger = BudgetAccountant()
    scaler = DPStandardScaler(epsilon=0.5, bounds=BOUNDS, accountant=ledger)
    model = DPAUCMaximizer(epsilon=2.0, data_norm=10.0, accountant=ledger,
                           solver=_replace_one())
    base = Pipeline([("m", DPAUCMaximizer(epsilon=1.0, data_norm=10.0, accountant=ledger,
                                          solver=_replace_one()))])
    # a whole steps list as a grid value, and estimators in an object array
    for grid in ({"steps": [[("s", scaler), ("m", model)]]},
                 {"m": np.array([model], dtype=object)}):
        ledger = BudgetAccountant()
        for step in (scaler, model, base.named_steps["m"]):
            step.set_params(accountant=ledger)
        search = GridSearchCV(base, grid, cv=2, n_jobs=n_jobs)
        expected = [(b.epsilon, b.delta) for b in search_budgets(search, X_train, y_train)]
        PrivateSearchCV(search, accountant=ledger).fit(X_train, y_train)
        assert ledger.spent_budget == expected


@pytest.mark.filterwarnings("ignore:No sensitive_features")
def test_target_transformer_steps_are_charged_when_the_search_runs():
    X_train, _, y_train, _ = _offset_data()
    ledger = BudgetAccountant()
    regressor = TransformedTargetRegressor(
        regressor=DPGroupFairRegressor(epsilon=1.0, data_norm=20.0, bounds=(-2.0, 2.0),
                                       accountant=ledger, solver=_replace_one()),
        transformer=DPStandardScaler(epsilon=0.5, bounds=(-1.0, 2.0), accountant=ledger),
        check_inverse=False)
    search = GridSearchCV(regressor, {}, cv=2, refit=False)
    PrivateSearchCV(search, accountant=ledger).fit(X_train, y_train.astype(float))
    assert sorted(ledger.spent_budget) == [(0.5, 0.0)] * 2 + [(1.0, 1e-5)] * 2


def test_a_search_replays_earlier_non_private_steps_for_its_checks():
    """A user-style probe: NaN in X behind a StandardScaler (which passes NaN through)
    was found by the first fit, after the whole search had been charged (epsilon 7.5).
    The earlier non-private steps are now fitted (clones) for the checks, so the
    private step checks the X it will receive, on the full data and on each fold."""
    from sklearn.preprocessing import StandardScaler

    X, y = make_classification(n_samples=200, n_features=5, random_state=0)
    X_nan = X.copy()
    X_nan[7, 2] = np.nan
    grid = GridSearchCV(
        make_pipeline(StandardScaler(), DPAUCMaximizer(epsilon=1.0, data_norm=5.0,
                                                       pos_ratio=0.5)),
        {"dpaucmaximizer__alpha": [1e-4, 1e-2]}, cv=3, scoring="roc_auc")
    ledger = BudgetAccountant()
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", PrivacyLeakWarning)
        with pytest.raises(ValueError, match="NaN"):
            PrivateSearchCV(grid, accountant=ledger, selection_epsilon=0.5).fit(X_nan, y)
        assert ledger.spent_budget == []
        PrivateSearchCV(grid, accountant=ledger, selection_epsilon=0.5).fit(X, y)
    assert len(ledger.spent_budget) == 8


def test_a_candidate_ending_in_a_non_private_model_is_refused():
    """A review's finding: Pipeline([diffprivlib scaler, LogisticRegression]) passed the
    check for a private step and was charged for the scaler only; the classifier, what
    the search scores and refits, was fitted without noise."""
    X, y = make_classification(n_samples=120, n_features=4, random_state=0)
    grid = GridSearchCV(Pipeline([("sc", DPStandardScaler(epsilon=1.0, bounds=(-5, 5))),
                                  ("clf", LogisticRegression())]),
                        {"clf__C": [0.1, 1.0]}, cv=3)
    ledger = BudgetAccountant()
    with pytest.raises(TypeError, match="ends in LogisticRegression"):
        PrivateSearchCV(grid, accountant=ledger).fit(X, y)
    assert ledger.spent_budget == []


def test_replaying_earlier_steps_leaves_the_callers_x_alone():
    """A review's finding: a transformer with copy=False rewrote the caller's X in
    place during the checks, so the search then fitted twice-transformed data."""
    from sklearn.preprocessing import PowerTransformer

    X, y = make_classification(n_samples=150, n_features=4, random_state=1)
    X = np.abs(X) + 0.5
    before = X.copy()
    grid = GridSearchCV(
        make_pipeline(PowerTransformer(copy=False, standardize=False),
                      DPAUCMaximizer(epsilon=1.0, data_norm=10.0, pos_ratio=0.5)),
        {"dpaucmaximizer__alpha": [1e-4]}, cv=2, scoring="roc_auc")
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", PrivacyLeakWarning)
        search_budgets(grid, X, y)
        from skdpminimax.search import charge_search
        charge_search(grid, X, y, accountant=BudgetAccountant())
    np.testing.assert_array_equal(X, before)


def test_a_search_warns_about_non_private_steps_that_learn_from_the_rows():
    """A fitted StandardScaler's means and scales ship in the released pipeline without
    noise; stateless transformers and diffprivlib's scalers are not listed."""
    from sklearn.preprocessing import FunctionTransformer, StandardScaler

    X, y = make_classification(n_samples=120, n_features=4, random_state=2)

    def search(first):
        return GridSearchCV(make_pipeline(first, DPAUCMaximizer(epsilon=1.0, data_norm=4.0,
                                                                pos_ratio=0.5)),
                            {"dpaucmaximizer__alpha": [1e-4]}, cv=2, scoring="roc_auc")

    with pytest.warns(PrivacyLeakWarning, match="fit StandardScaler on the private rows"):
        PrivateSearchCV(search(StandardScaler()), accountant=BudgetAccountant(),
                        selection_epsilon=0.5).fit(X, y)
    for first in (FunctionTransformer(), DPStandardScaler(epsilon=0.5, bounds=(-4, 4))):
        with warnings.catch_warnings(record=True) as caught:
            warnings.simplefilter("always")
            PrivateSearchCV(search(first), accountant=BudgetAccountant(),
                            selection_epsilon=0.5).fit(X, y)
        assert not any("on the private rows without noise" in str(w.message) for w in caught)
