"""DPAUCMaximizer: scikit-learn conventions, the shared ledger, bad input."""

import warnings

import numpy as np
import pytest
from diffprivlib import BudgetAccountant
from diffprivlib.utils import BudgetError, PrivacyLeakWarning
from sklearn.base import clone
from sklearn.datasets import make_classification
from sklearn.model_selection import GridSearchCV, cross_val_score
from sklearn.pipeline import make_pipeline
from sklearn.preprocessing import StandardScaler
from sklearn.utils._param_validation import InvalidParameterError

from skdpminimax import DPAUCMaximizer
from skdpminimax.solvers import NoisySGDA
from sklearn_checks import LEGACY_CHECKS, parametrize_with_checks_list

# Checks that cannot hold for a private estimator, each with its reason.
EXPECTED_FAILURES = {
    "check_sample_weight_equivalence_on_dense_data":
        "sample weights are not supported (they would change the sensitivity)",
}
if LEGACY_CHECKS:
    EXPECTED_FAILURES["check_classifiers_regression_target"] = (
        "scikit-learn < 1.6 wants 'Unknown label type: ' for a continuous y; the error "
        "names the target 'continuous', which the check accepts since 1.6")


def _expected_failed_checks(estimator):
    return EXPECTED_FAILURES


def _checked_estimators():
    return [DPAUCMaximizer(epsilon=1.0, data_norm=10.0, pos_ratio=0.5, random_state=0,
                           solver=NoisySGDA(batch_size=16, n_epochs=2))]


@parametrize_with_checks_list(_checked_estimators(), _expected_failed_checks)
def test_sklearn_compatible(estimator, check):
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", PrivacyLeakWarning)
        check(estimator)


@pytest.fixture
def data():
    X, y = make_classification(n_samples=400, n_features=6, n_informative=4,
                               weights=[0.7], random_state=0)
    return X, y


def model(**kw):
    params = dict(epsilon=2.0, delta=1e-5, data_norm=6.0, pos_ratio=0.3, random_state=0)
    params.update(kw)
    return DPAUCMaximizer(**params)


def test_fitted_attributes_and_privacy_record(data):
    X, y = data
    m = model(solver=NoisySGDA(batch_size=32, n_epochs=4)).fit(X, y)
    assert m.coef_.shape == (1, 6) and m.intercept_.shape == (1,)
    np.testing.assert_array_equal(m.classes_, [0, 1])
    assert m.privacy_spent_.epsilon == 2.0 and m.privacy_spent_.delta == 1e-5
    # Poisson (add/remove-one): planned on a released size, not on the 400 rows
    assert m.n_iter_ == m.calibration_.n_steps == int(np.ceil(4 * m.planning_size_ / 32))
    assert m.calibration_.epsilon <= 2.0 and m.calibration_.sampler == "poisson"
    assert m.calibration_.neighboring_relation == "add/remove-one"
    a, b = m.class_score_means_[1], m.class_score_means_[0]
    assert m.intercept_[0] == pytest.approx(-(a + b) / 2)
    np.testing.assert_allclose(m.decision_function(X), X @ m.coef_[0] + m.intercept_[0])
    assert m.score(X, y) > 0.6


def test_ranks_as_well_as_logistic_regression_without_noise(data):
    from sklearn.linear_model import LogisticRegression
    from sklearn.metrics import roc_auc_score
    X, y = data
    m = model(epsilon=np.inf, solver=NoisySGDA(n_epochs=100)).fit(X, y)
    reference = roc_auc_score(y, LogisticRegression().fit(X, y).decision_function(X))
    assert roc_auc_score(y, m.decision_function(X)) > reference - 0.01


def test_rare_positives_reach_the_exact_minimiser_without_noise():
    """With 1% positives the AUC objective's mean gradient is 2 p (1 - p) of the
    balanced case's; the default step is sized for that (it stopped at 0.942 against
    the exact minimiser's 0.952 when it was sized for balanced classes)."""
    from sklearn.metrics import roc_auc_score
    from sklearn.model_selection import train_test_split

    X, y = make_classification(n_samples=6000, n_features=10, weights=[0.99], flip_y=0,
                               random_state=0)
    X_tr, X_te, y_tr, y_te = train_test_split(X / 3, y, test_size=0.5, stratify=y,
                                              random_state=0)
    pos, neg = X_tr[y_tr == 1], X_tr[y_tr == 0]
    exact = np.linalg.solve(np.cov(pos.T) + np.cov(neg.T), pos.mean(0) - neg.mean(0))
    est = model(epsilon=np.inf, data_norm=3.0, pos_ratio=0.01, random_state=0)
    est.fit(X_tr, y_tr)
    best = roc_auc_score(y_te, X_te @ exact)
    assert roc_auc_score(y_te, est.decision_function(X_te)) > best - 0.003


@pytest.mark.parametrize("pos_ratio", [1e-160, 5e-324, 1.0 - 1e-16])
def test_an_extreme_declared_ratio_fits_without_overflow(data, pos_ratio):
    """A user probe: pos_ratio=1e-160 overflowed the step rule's noise damping after
    the spend (OverflowError). The step now saturates."""
    X, y = data
    acc = BudgetAccountant()
    est = model(pos_ratio=pos_ratio, accountant=acc).fit(X, y)
    assert len(acc.spent_budget) == 1
    assert np.isfinite(est.solver_info_["step_size"])
    assert np.all(np.isfinite(est.decision_function(X)))


def test_private_class_ratio_is_paid_for(data):
    X, y = data
    m = model(pos_ratio=None, pos_ratio_budget=0.1, epsilon=1.0,
              composition="basic").fit(X, y)
    assert 0 < m.pos_ratio_ < 1
    assert m.calibration_.epsilon <= 0.9  # the solver got the other 90 percent
    # Composed in one PLD (the default): the count is in the solver's certificate.
    m = model(pos_ratio=None, pos_ratio_budget=0.1, epsilon=1.0).fit(X, y)
    assert m.calibration_.composed_with == ("count(epsilon=0.1)",)
    assert 0.9 < m.calibration_.epsilon <= 1.0
    assert model(pos_ratio=0.3).fit(X, y).pos_ratio_ == 0.3


def test_data_norm_none_warns_privacy_leak(data):
    X, y = data
    with pytest.warns(PrivacyLeakWarning):
        model(data_norm=None).fit(X, y)


def test_rows_are_clipped_to_data_norm(data):
    X, y = data
    m = model(data_norm=1e-3, epsilon=np.inf).fit(X, y)
    assert m.data_norm_ == 1e-3
    # with rows clipped to 1e-3 the scores stay within the declared bound
    assert np.abs(X / np.maximum(1, np.linalg.norm(X, axis=1, keepdims=True) / 1e-3)
                  @ m.coef_[0]).max() <= 1e-3 * 10.0 + 1e-12


def test_pipeline_grid_search_and_cross_validation(data):
    X, y = data
    pipe = make_pipeline(StandardScaler(), model(solver=NoisySGDA(batch_size=32, n_epochs=2)))
    pipe.fit(X, y)
    assert pipe.predict(X).shape == (400,)
    grid = GridSearchCV(
        model(),
        {"epsilon": [0.5, 4.0], "solver": ["sgda", NoisySGDA(batch_size=None, n_iter=50)]},
        scoring="roc_auc", cv=3,
    ).fit(X, y)
    assert grid.best_score_ > 0.6
    grid = GridSearchCV(model(), {"solver__batch_size": [16, 64]} , cv=2)
    grid.set_params(estimator__solver=NoisySGDA(n_epochs=2)).fit(X, y)
    scores = cross_val_score(model(), X, y, scoring="roc_auc", cv=3)
    assert scores.shape == (3,) and np.all(scores > 0.6)


def test_one_ledger_across_clones_in_grid_search(data):
    X, y = data
    ledger = BudgetAccountant()
    est = model(epsilon=0.5, accountant=ledger, solver=NoisySGDA(batch_size=32, n_epochs=1))
    assert clone(est).accountant is ledger
    grid = GridSearchCV(est, {"alpha": [1e-4, 1e-2, 1e-1]}, cv=4, refit=True).fit(X, y)
    fits = 3 * 4 + 1
    assert len(ledger.spent_budget) == fits
    total_epsilon, total_delta = ledger.total()
    assert total_epsilon == pytest.approx(fits * 0.5)
    assert grid.best_estimator_.accountant is ledger


def test_default_accountant_is_diffprivlibs(data):
    X, y = data
    default = BudgetAccountant.load_default(None)
    before = len(default.spent_budget)
    model().fit(X, y)
    assert len(default.spent_budget) == before + 1


@pytest.mark.parametrize("bad", [
    dict(epsilon=0.0), dict(epsilon=-1.0), dict(delta=0.0), dict(delta=1.0), dict(delta=1.5),
    dict(data_norm=-1.0), dict(pos_ratio=1.0), dict(solver="no-such-solver"),
    dict(solver=NoisySGDA(batch_size=0)),
])
def test_bad_parameters_fail_before_spending(data, bad):
    X, y = data
    ledger = BudgetAccountant()
    with pytest.raises((ValueError, TypeError)):
        model(accountant=ledger, **bad).fit(X, y)
    assert ledger.spent_budget == []


def _bad_inputs():
    X, y = make_classification(n_samples=50, n_features=3, n_informative=2, n_redundant=0,
                               random_state=1)
    X_nan = X.copy(); X_nan[3, 1] = np.nan
    X_inf = X.copy(); X_inf[0, 0] = np.inf
    return [
        ("nan", X_nan, y), ("inf", X_inf, y), ("one class", X, np.zeros(50)),
        ("three classes", X, np.arange(50) % 3), ("wrong length", X, y[:-1]),
        ("1d X", X[:, 0], y), ("empty", X[:0], y[:0]), ("y nan", X, np.where(y == 1, np.nan, 0.0)),
        ("continuous y", X, np.linspace(0, 1, 50)),
    ]


@pytest.mark.parametrize("name,X,y", _bad_inputs(), ids=[b[0] for b in _bad_inputs()])
def test_bad_input_fails_before_spending_and_mutates_nothing(name, X, y):
    ledger = BudgetAccountant()
    X0, y0 = np.copy(X), np.copy(y)
    with pytest.raises(ValueError):
        model(accountant=ledger).fit(X, y)
    assert ledger.spent_budget == []
    np.testing.assert_array_equal(X, X0)
    np.testing.assert_array_equal(y, y0)


def test_exhausted_budget_raises_before_fit(data):
    X, y = data
    ledger = BudgetAccountant(epsilon=1.0, delta=1e-4)
    model(epsilon=0.8, accountant=ledger).fit(X, y)
    m = model(epsilon=0.8, accountant=ledger)
    with pytest.raises(BudgetError):
        m.fit(X, y)
    assert len(ledger.spent_budget) == 1
    assert not hasattr(m, "coef_")
    # a non-private fit cannot be charged to a finite ledger either
    with pytest.raises(BudgetError):
        model(epsilon=np.inf, accountant=ledger).fit(X, y)


def test_reproducible_and_independent_of_global_random_state(data):
    X, y = data
    np.random.seed(0)
    a = model(random_state=42).fit(X, y).coef_
    np.random.seed(1)
    b = model(random_state=42).fit(X, y).coef_
    np.testing.assert_array_equal(a, b)
    c = model(random_state=43).fit(X, y).coef_
    assert not np.array_equal(a, c)
    with pytest.warns(PrivacyLeakWarning, match="replays the fit's noise"):
        d = model(random_state=np.random.default_rng(42)).fit(X, y).coef_
    np.testing.assert_array_equal(a, d)


def test_a_generator_or_randomstate_warns_and_a_seed_or_none_does_not(data):
    """The estimator keeps its random_state: a Generator's or RandomState's state
    replays the noise (a reviewer rebuilt the fit's stream from a pickled model)."""
    X, y = data
    for state in (np.random.default_rng(), np.random.RandomState()):
        with pytest.warns(PrivacyLeakWarning, match=type(state).__name__):
            model(random_state=state).fit(X, y)
    with warnings.catch_warnings():
        warnings.simplefilter("error", PrivacyLeakWarning)
        model(random_state=None).fit(X, y)
        model(random_state=0).fit(X, y)
        model(epsilon=np.inf, random_state=np.random.default_rng(0)).fit(X, y)


def test_a_randomstate_seeds_the_fit_with_128_bits():
    from skdpminimax.base import resolve_rng
    state = np.random.RandomState(5)
    expected = np.random.RandomState(5).randint(0, 2**32, size=4, dtype=np.uint64)
    rng = resolve_rng(state)
    np.testing.assert_array_equal(rng.random(4), np.random.default_rng(expected).random(4))
    assert np.asarray(expected).max() >= 2**31  # not the old 31-bit draw


def test_inputs_not_mutated(data):
    X, y = data
    X0, y0 = X.copy(), y.copy()
    model(data_norm=0.5).fit(X, y)
    np.testing.assert_array_equal(X, X0)
    np.testing.assert_array_equal(y, y0)


def test_string_labels_and_positive_class(data):
    X, y = data
    labels = np.array(["neg", "pos"])[y]
    m = model(epsilon=np.inf).fit(X, labels)
    np.testing.assert_array_equal(m.classes_, ["neg", "pos"])
    assert set(m.predict(X)) <= {"neg", "pos"}
    # classes_[1] is the positive class: its scores are higher on average
    s = m.decision_function(X)
    assert s[labels == "pos"].mean() > s[labels == "neg"].mean()


@pytest.mark.parametrize("alpha", [24.0, 100.0])
def test_a_strong_regulariser_keeps_the_scaled_step_stable(data, alpha):
    """The "scaled" step ignored alpha: once step * alpha > 2 the iterates oscillated
    with growing amplitude and the ranking inverted (a user-style probe: breast cancer,
    alpha 24, test AUC 0.05). The step is now at most 1 / alpha."""
    X, y = data
    m = model(alpha=alpha, solver=NoisySGDA(step_size="scaled", n_epochs=5)).fit(X, y)
    assert m.solver_info_["step_size"] * alpha <= 1.0 + 1e-12
    free = model(alpha=alpha, epsilon=np.inf,
                 solver=NoisySGDA(step_size="scaled", n_epochs=5)).fit(X, y)
    assert free.score(X, y) > 0.7


def test_solver_settings_of_a_name_cannot_be_set_and_the_error_names_the_object():
    """The docs call solver__step_size a knob; with the default name it failed with
    AttributeError 'str' object has no attribute 'set_params' (a user-style probe)."""
    with pytest.raises(ValueError, match="solver='sgda' is a name.*NoisySGDA\\("):
        model().set_params(solver__step_size=0.1)
    tuned = model(solver=NoisySGDA()).set_params(solver__step_size=0.1)
    assert tuned.solver.step_size == 0.1
    grid = GridSearchCV(model(), {"solver__n_epochs": [1, 2]}, cv=2, error_score="raise")
    with pytest.raises(ValueError, match="is a name"):
        grid.fit(*make_classification(n_samples=60, n_features=4, random_state=0))


def test_predict_is_the_midpoint_and_a_public_threshold_wraps_it():
    """predict thresholds at intercept_ (the midpoint of the class score means); the
    documented way to another operating point, FixedThresholdClassifier on
    decision_function, works with the estimator and uses the threshold given."""
    import sklearn.model_selection

    X, y = make_classification(n_samples=600, n_features=5, weights=[0.9, 0.1],
                               random_state=0)
    est = model(epsilon=np.inf, data_norm=6.0).fit(X, y)
    s = est.decision_function(X)
    np.testing.assert_array_equal(est.predict(X), (s > 0).astype(int))
    b, a = est.class_score_means_
    assert est.intercept_[0] == pytest.approx(-(a + b) / 2)
    FixedThresholdClassifier = getattr(sklearn.model_selection, "FixedThresholdClassifier", None)
    if FixedThresholdClassifier is None:
        pytest.skip("FixedThresholdClassifier is new in scikit-learn 1.5")
    t = float(np.quantile(s, 0.9))
    wrapped = FixedThresholdClassifier(model(epsilon=np.inf, data_norm=6.0), threshold=t,
                                       response_method="decision_function").fit(X, y)
    np.testing.assert_array_equal(wrapped.predict(X), (s >= t).astype(int))
    assert wrapped.predict(X).mean() < est.predict(X).mean()


def test_a_noisy_class_ratio_release_warns_and_a_public_one_does_not():
    """A practitioner probe: with 30 positives in 3,000 rows at epsilon=1 the released
    count (noise std ~28) was often 0, floored to 0.001, silently."""
    X, y = make_classification(n_samples=3000, n_features=10, weights=[0.99], flip_y=0,
                               random_state=0)
    X = X / 3
    est = DPAUCMaximizer(epsilon=1.0, data_norm=3.0, random_state=0,
                         accountant=BudgetAccountant())
    with pytest.warns(UserWarning, match=r"class ratio was released as \d+ positives"):
        est.fit(X, y)
    with warnings.catch_warnings():
        warnings.simplefilter("error", UserWarning)
        est.set_params(pos_ratio=0.01).fit(X, y)
        balanced = make_classification(n_samples=3000, n_features=10, random_state=0)
        est.set_params(pos_ratio=None).fit(balanced[0] / 3, balanced[1])


def test_score_is_documented_as_accuracy_not_auc(data):
    # score() was ClassifierMixin's, whose docstring says nothing of this estimator: a
    # user tuning with GridSearchCV's default scoring optimised accuracy at the class
    # means' midpoint, not the AUC the fit maximises. The docstring now says so and
    # names scoring="roc_auc".
    from sklearn.metrics import accuracy_score

    X, y = data
    model = DPAUCMaximizer(epsilon=np.inf, data_norm=10.0, random_state=0,
                           accountant=BudgetAccountant()).fit(X, y)
    assert model.score(X, y) == accuracy_score(y, model.predict(X))
    doc = DPAUCMaximizer.score.__doc__
    assert "not** the AUC" in doc and 'scoring="roc_auc"' in doc


def test_a_class_count_released_at_the_edge_is_read_as_about_one_noise_scale_in(monkeypatch):
    """The released positives' count was n (no negatives) on breast cancer at epsilon
    0.5 for one seed in ten: the ratio was clamped to 0.999, the negatives weighed a
    thousand-fold and the ranking came out inverted (test AUC 15%). Both classes are
    present (checked before the spend), so the ratio is now the count's posterior mean
    on [1, size - 1]: about one noise scale (1 / epsilon share) from the edge."""
    import skdpminimax.estimators.auc as auc_module

    X, y = make_classification(400, 5, random_state=0)
    monkeypatch.setattr(auc_module, "private_count", lambda count, upper, eps, rng: upper)
    model = DPAUCMaximizer(epsilon=0.5, data_norm=5.0, n_samples_budget=400, random_state=0,
                           accountant=BudgetAccountant())
    with pytest.warns(UserWarning, match="class ratio was released as 400 positives"):
        model.fit(X, y)
    share = 0.5 * model.pos_ratio_budget
    assert 1 - model.pos_ratio_ > 0.5 / share / 400  # 0.001 before
    assert model.pos_ratio_ > 0.5  # still read as mostly positives
