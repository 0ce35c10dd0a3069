"""DPRobustClassifier and DPGroupFairRegressor: scikit-learn checks and behaviour."""

import warnings

import numpy as np
import pytest
import sklearn
from diffprivlib.accountant import BudgetAccountant
from diffprivlib.utils import PrivacyLeakWarning
from scipy.optimize import minimize
from sklearn.datasets import load_iris, make_classification, make_regression
from sklearn.linear_model import LogisticRegression, Ridge
from sklearn.model_selection import GridSearchCV, cross_validate
from sklearn.pipeline import make_pipeline
from sklearn.preprocessing import StandardScaler

from skdpminimax import DPGroupFairRegressor, DPRobustClassifier
from skdpminimax.metrics import demographic_parity_gap, worst_group_loss
from skdpminimax.objectives.base import SaddleData
from skdpminimax.sets import Simplex
from skdpminimax.solvers import NoisySGDA
from sklearn_checks import parametrize_with_checks_list

def _expected_failed_checks(estimator):
    # None today: the ``poor_score`` tag makes scikit-learn's score checks lenient
    # enough for epsilon=1. A check that starts failing must be listed here with a reason.
    return {}


_ESTIMATORS = [
    DPRobustClassifier(epsilon=1.0, data_norm=5.0, random_state=0),
    DPGroupFairRegressor(epsilon=1.0, data_norm=5.0, bounds=(-5, 5), random_state=0),
]


@parametrize_with_checks_list(_ESTIMATORS, _expected_failed_checks)
def test_sklearn_compatible(estimator, check):
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", UserWarning)
        check(estimator)


# ---- data helpers -------------------------------------------------------------------------
def _classification(n=300, seed=0):
    X, y = make_classification(n_samples=n, n_features=5, n_informative=3, random_state=seed)
    groups = np.where(X[:, 0] > 0.5, "a", "b")
    return X, y, groups


def _regression(n=300, seed=0):
    X, y = make_regression(n_samples=n, n_features=4, noise=5.0, random_state=seed)
    groups = (X[:, 1] > 0).astype(int)
    return X, y + 20 * groups, groups


def _fresh_accountant():
    return BudgetAccountant()


# ---- errors come before any budget is spent -------------------------------------------------
@pytest.mark.parametrize("make, kwargs, sf, match", [
    ("robust", {}, np.array(["a"] * 300), "at least 2 groups"),
    ("robust", {}, np.array(["a", "b"] * 100), "rows, expected"),
    ("robust", {"group_ratios": {"a": 0.5, "c": 0.5}}, None, "not in group_ratios"),
    ("robust", {"group_ratios": {"a": 0.3, "b": 0.3, "c": 0.4}}, None, "no training samples"),
    ("robust", {"group_ratios": [0.5, 0.3, 0.2]}, None, "3 entries"),
    ("fair", {"bounds": (-100, 100)}, np.zeros(300), "at least 2 groups"),
    ("fair", {"bounds": (-100, 100)}, np.arange(299), "rows, expected"),
    ("fair", {"bounds": (5, -5)}, None, "lower < upper"),
    ("fair", {"bounds": (1, 1)}, None, "lower < upper"),
    ("fair", {"bounds": ((1, 2), (3, 4))}, None, "two numbers"),  # not a raw numpy error
    ("fair", {"bounds": ("low", 3)}, None, "two numbers"),
    ("fair", {"bounds": (1, 2, 3)}, None, "two numbers"),
    ("fair", {"bounds": {0.0, 1.0}}, None, "two numbers"),  # a set has no order
    ("robust", {"group_ratios": ["a", "b"]}, None, "must hold numbers"),
    ("robust", {}, np.array([[1, 2], [3]] * 150, dtype=object), "one label per row"),
    ("fair", {"bounds": (-np.inf, np.inf)}, None, "finite"),
    ("fair", {"bounds": (0.0, np.inf)}, None, "finite"),
    ("fair", {"bounds": (-1e308, 1e308)}, None, "finite width"),  # the width overflows
    # missing values must not become a group of their own ("nan")
    ("robust", {}, np.array(["a", "b", None] * 100, dtype=object), "missing"),
    ("robust", {}, np.array(["a", "b", np.nan] * 100, dtype=object), "missing"),
    ("robust", {}, np.column_stack([np.r_[np.nan, np.zeros(299)], np.arange(300) % 2]),
     "missing"),
    ("fair", {"bounds": (-100, 100)}, np.array([1.0, 2.0, np.nan] * 100), "missing"),
    # a continuous attribute would make one group per value and publish them in groups_
    ("robust", {}, np.round(np.random.default_rng(0).lognormal(10, 1, 300), 2), "continuous"),
    ("fair", {"bounds": (-100, 100)}, np.linspace(0.5, 7.25, 300), "continuous"),
    ("robust", {}, np.column_stack([np.arange(300) % 2, np.linspace(0, 1, 300)]), "continuous"),
    ("robust", {}, np.array([0.0, 1.0, np.inf] * 100), "inf"),
    # ... and so would the same column as strings, whole numbers or dates (a reviewer's)
    ("robust", {}, np.random.default_rng(0).lognormal(10, 1, 300).astype(str), "identifier"),
    ("robust", {}, np.round(np.random.default_rng(0).lognormal(10, 1, 300)), "identifier"),
    ("fair", {"bounds": (-100, 100)},
     np.datetime64("2020-01-01") + np.arange(300).astype("timedelta64[D]"), "identifier"),
    ("robust", {"group_ratios": [[0.5, 0.5]]}, None, "1-D"),
    ("fair", {"bounds": (-100, 100), "group_ratios": [0.5, 0.5]}, "none", "sensitive_features"),
])
def test_bad_input_raises_before_spending(make, kwargs, sf, match):
    acc = _fresh_accountant()
    if make == "robust":
        X, y, groups = _classification()
        est = DPRobustClassifier(data_norm=5.0, accountant=acc, random_state=0, **kwargs)
    else:
        X, y, groups = _regression()
        est = DPGroupFairRegressor(data_norm=5.0, accountant=acc, random_state=0, **kwargs)
    if isinstance(sf, str):  # "none": no sensitive features at all
        groups, sf = None, None
    with pytest.raises(ValueError, match=match):
        est.fit(X, y, sensitive_features=groups if sf is None else sf)
    assert tuple(acc.total()) == (0.0, 0.0)


def test_bounds_may_be_size_one_arrays():
    """diffprivlib takes array bounds; size-1 arrays (a user's) are two numbers."""
    X, y, groups = _regression()
    fitted = [DPGroupFairRegressor(epsilon=1.0, data_norm=5.0, bounds=bounds, random_state=0)
              .fit(X, y, sensitive_features=groups)
              for bounds in [(-300.0, 300.0), (np.array([-300.0]), np.array([300.0]))]]
    assert fitted[1].bounds_ == (-300.0, 300.0)
    np.testing.assert_array_equal(fitted[0].coef_, fitted[1].coef_)


def test_integer_valued_float_groups_are_accepted():
    X, y, groups = _classification()
    numeric = np.where(groups == "a", 10.0, -3.0)  # integer-valued floats: discrete groups
    clf = DPRobustClassifier(epsilon=np.inf, data_norm=5.0, random_state=0).fit(
        X, y, sensitive_features=numeric)
    assert clf.groups_.tolist() == [-3.0, 10.0]


def test_single_class_and_unknown_label_type_raise():
    X, _, _ = _classification()
    with pytest.raises(ValueError, match="at least 2 classes"):
        DPRobustClassifier(data_norm=5.0).fit(X, np.zeros(300, int))
    with pytest.raises(ValueError, match="Unknown label type"):
        DPRobustClassifier(data_norm=5.0).fit(X, np.linspace(0, 1, 300))


def test_bounds_none_warns_and_fit_spends_once():
    X, y, groups = _regression()
    acc = _fresh_accountant()
    with pytest.warns(PrivacyLeakWarning, match="bounds|Bounds"):
        est = DPGroupFairRegressor(epsilon=0.7, data_norm=5.0, accountant=acc,
                                   random_state=0).fit(X, y, sensitive_features=groups)
    assert est.bounds_ == (y.min(), y.max())
    assert tuple(acc.total()) == pytest.approx((0.7, 1e-5))


# ---- fitted attributes ---------------------------------------------------------------------
def test_default_groups_are_classes_and_multiclass_shapes():
    X, y = load_iris(return_X_y=True)
    X = StandardScaler().fit_transform(X)
    clf = DPRobustClassifier(epsilon=2.0, data_norm=4.0, group_ratios=[1 / 3] * 3,
                             random_state=0).fit(X, y)
    assert list(clf.groups_) == [0, 1, 2]
    assert clf.coef_.shape == (3, 4) and clf.intercept_.shape == (3,)
    proba = clf.predict_proba(X)
    np.testing.assert_allclose(proba.sum(axis=1), 1.0)
    np.testing.assert_array_equal(clf.predict(X), clf.classes_[proba.argmax(axis=1)])
    assert np.isclose(clf.group_weights_.sum(), 1.0) and np.all(clf.group_weights_ >= 0)
    assert clf.n_iter_ == clf.calibration_.n_steps


def test_intersectional_groups_from_2d_sensitive_features():
    X, y, groups = _classification()
    sf = np.column_stack([groups, y])
    clf = DPRobustClassifier(epsilon=1.0, data_norm=5.0, random_state=0).fit(
        X, y, sensitive_features=sf)
    assert len(clf.groups_) == 4 and isinstance(clf.groups_[0], tuple)


def test_same_seed_same_model_and_public_ratios_are_used_as_given():
    X, y, groups = _classification()
    kw = dict(epsilon=1.0, data_norm=5.0, group_ratios={"a": 0.25, "b": 0.75}, random_state=3)
    a = DPRobustClassifier(**kw).fit(X, y, sensitive_features=groups)
    b = DPRobustClassifier(**kw).fit(X, y, sensitive_features=groups)
    np.testing.assert_array_equal(a.coef_, b.coef_)
    np.testing.assert_allclose(a.group_ratios_, [0.25, 0.75])


# ---- the private group counts ---------------------------------------------------------------
class _Relation:
    def __init__(self, relation):
        self.neighboring_relation = relation


@pytest.mark.parametrize("relation, factor", [("add/remove-one", 1.0), ("replace-one", 2.0)])
def test_group_counts_use_the_solver_relation_sensitivity(relation, factor, monkeypatch):
    """Each count gets epsilon_c under add/remove (one count moves) and epsilon_c/2 under
    replace-one (two counts move): check the epsilon handed to the geometric mechanism."""
    import skdpminimax.estimators._groups as groups_module

    seen = []

    def spy(counts, upper, epsilon, rng):
        seen.extend([epsilon] * len(counts))
        return np.asarray(counts)

    priors = []
    real_posterior = groups_module.count_posterior_mean

    def posterior_spy(released, upper, epsilon, low=1, high=None):
        priors.append((upper, epsilon, low, high))
        return real_posterior(released, upper, epsilon, low=low, high=high)

    monkeypatch.setattr(groups_module, "private_counts", spy)
    monkeypatch.setattr(groups_module, "count_posterior_mean", posterior_spy)
    X, y, groups = _classification()
    sampler = "poisson" if relation == "add/remove-one" else "without_replacement"
    clf = DPRobustClassifier(epsilon=2.0, data_norm=5.0, group_ratios_budget=0.1,
                             solver=NoisySGDA(sampler=sampler), random_state=0)
    clf.fit(X, y, sensitive_features=groups)
    assert clf.calibration_.neighboring_relation == relation
    assert seen == pytest.approx([0.2 / factor] * 2)
    # The counts are read at the epsilon they were released with, each group at least
    # 1 (so at most n - k + 1 with k = 2 groups).
    [(upper, epsilon, low, high)] = priors
    assert epsilon == pytest.approx(0.2 / factor) and (low, high) == (1, upper - 1)
    # The released counts' posterior means: within a thousandth of a count here (each
    # count is tens of noise scales from the edges).
    np.testing.assert_allclose(clf.group_ratios_, np.bincount(groups == "b") / 300, rtol=1e-5)


# ---- metadata routing ------------------------------------------------------------------------
def test_sensitive_features_are_routed_in_pipeline_grid_search_and_cross_validate():
    X, y, groups = _classification()
    acc = _fresh_accountant()
    with sklearn.config_context(enable_metadata_routing=True):
        pipe = make_pipeline(StandardScaler(), DPRobustClassifier(
            epsilon=1.0, data_norm=5.0, accountant=acc, random_state=0))
        pipe.fit(X, y, sensitive_features=groups)
        assert list(pipe[-1].groups_) == ["a", "b"]
        grid = GridSearchCV(pipe, {"dprobustclassifier__dual_reg": [0.1, 1.0]}, cv=2)
        grid.fit(X, y, sensitive_features=groups)
        assert list(grid.best_estimator_[-1].groups_) == ["a", "b"]
        Xr, yr, gr = _regression()
        res = cross_validate(DPGroupFairRegressor(epsilon=1.0, data_norm=5.0, bounds=(-300, 300),
                                                  accountant=acc, random_state=0),
                             Xr, yr, cv=3, params={"sensitive_features": gr},
                             return_estimator=True)
        assert all(len(e.groups_) == 2 for e in res["estimator"])
    # pipeline fit + 2x2 grid + refit + 3 folds, all on the one shared ledger
    assert acc.total()[0] == pytest.approx(1.0 * (1 + 4 + 1 + 3))


# ---- epsilon = inf: the non-private worst-group solution -------------------------------------
def test_noise_free_robust_classifier_matches_max_of_group_risks():
    """dual_reg -> 0 solves min_w max_k R_k(w); compare with an epigraph solve (SLSQP)."""
    X, y, groups = _classification(n=200, seed=1)
    X = StandardScaler().fit_transform(X)[:, :3]
    data_norm = float(np.linalg.norm(X, axis=1).max())
    codes = (groups == "b").astype(int)
    pi = np.bincount(codes) / codes.size
    alpha = 0.05
    solver = NoisySGDA(batch_size=None, n_iter=3000, step_size=0.3, clip_w=None, clip_v=None,
                       average="last")
    clf = DPRobustClassifier(epsilon=np.inf, data_norm=data_norm, radius=50.0, alpha=alpha,
                             dual_reg=1e-3, group_ratios=pi, solver=solver, random_state=0)
    clf.fit(X, y, sensitive_features=groups)
    obj = clf.objective_
    from skdpminimax.objectives import SaddleData

    data = SaddleData(X, np.where(y == 1, 1.0, -1.0), codes)

    def risks(w):
        return obj.group_risks(w, data) + 0.5 * alpha * w @ w

    d = obj.model.n_params
    res = minimize(lambda z: z[-1], np.zeros(d + 1), method="SLSQP",
                   constraints=[{"type": "ineq", "fun": lambda z: z[-1] - risks(z[:-1])}],
                   options={"ftol": 1e-12, "maxiter": 500})
    w_learned = np.concatenate([clf.coef_[0], clf.intercept_])
    assert risks(w_learned).max() == pytest.approx(res.x[-1], abs=2e-3)
    # it beats plain logistic regression on the worst group (sanity, not a tolerance test)
    lr = LogisticRegression(C=1 / alpha / len(y)).fit(X, y)
    w_lr = np.concatenate([lr.coef_[0], lr.intercept_])
    assert risks(w_learned).max() <= risks(w_lr).max() + 1e-9


def test_demographic_parity_regressor_reduces_the_gap():
    X, y, groups = _regression(n=400)
    kw = dict(epsilon=np.inf, data_norm=float(np.linalg.norm(X, axis=1).max()),
              bounds=(-300, 300), random_state=0, dual_reg=1e-3,
              solver=NoisySGDA(batch_size=None, n_iter=1500, step_size=0.5, clip_w=None,
                               clip_v=None, average="last"))
    plain = DPGroupFairRegressor(constraint="minimax_loss", **kw).fit(X, y,
                                                                      sensitive_features=groups)
    fair = DPGroupFairRegressor(constraint="demographic_parity", tolerance=1.0,
                                multiplier_bound=50.0, **kw).fit(X, y, sensitive_features=groups)
    gap_plain = demographic_parity_gap(plain.predict(X), sensitive_features=groups)
    gap_fair = demographic_parity_gap(fair.predict(X), sensitive_features=groups)
    assert gap_fair < 0.5 * gap_plain
    assert worst_group_loss(y, plain.predict(X), sensitive_features=groups) < \
        worst_group_loss(y, fair.predict(X), sensitive_features=groups) * 1.5


def test_regressor_without_sensitive_features_is_plain_private_least_squares():
    X, y, _ = _regression()
    for constraint in ("minimax_loss", "demographic_parity"):
        with pytest.warns(UserWarning, match="one group"):
            est = DPGroupFairRegressor(epsilon=1.0, data_norm=5.0, bounds=(-300, 300),
                                       constraint=constraint, random_state=0).fit(X, y)
        assert est.group_weights_.shape == (1,) and est.predict(X).shape == (300,)


def test_binary_string_labels_without_intercept():
    X, y, groups = _classification()
    labels = np.array(["no", "yes"])[y]
    clf = DPRobustClassifier(epsilon=1.0, data_norm=5.0, fit_intercept=False,
                             random_state=0).fit(X, labels, sensitive_features=groups)
    assert clf.coef_.shape == (1, 5) and np.all(clf.intercept_ == 0)
    proba = clf.predict_proba(X)
    assert proba.shape == (300, 2)
    np.testing.assert_array_equal(clf.predict(X), clf.classes_[(proba[:, 1] > 0.5).astype(int)])
    assert set(clf.predict(X)) <= {"no", "yes"}


def test_group_input_slips_get_clear_messages():
    """A user-style probe: a fairlearn-style column name as sensitive_features gave
    'must be 1-D or 2-D, got shape ()'; frequencies {0: 0.7, 1: 0.7} were silently
    normalised. Counts are still accepted silently."""
    X, y = make_classification(n_samples=120, n_features=4, random_state=0)
    groups = np.arange(120) % 2
    with pytest.raises(ValueError, match="not a column name"):
        DPRobustClassifier(epsilon=1.0, data_norm=3.0).fit(X, y, sensitive_features="sex")
    with pytest.warns(UserWarning, match="sum to 1.4"):
        DPRobustClassifier(epsilon=1.0, data_norm=3.0, group_ratios={0: 0.7, 1: 0.7},
                           accountant=BudgetAccountant()).fit(X, y, sensitive_features=groups)
    with warnings.catch_warnings():
        warnings.simplefilter("error", UserWarning)
        est = DPRobustClassifier(epsilon=1.0, data_norm=3.0, group_ratios=[60, 60],
                                 accountant=BudgetAccountant())
        est.fit(X, y, sensitive_features=groups)


def test_group_labels_of_several_attributes_keep_their_types():
    """A user-style probe: a table of a string and an integer attribute gave labels
    ('F', '1') (every attribute made a string), so group_ratios keyed by the real
    values, ('F', 1), was refused as not naming the groups."""
    from skdpminimax.estimators._groups import encode_groups

    X, y = make_classification(n_samples=400, n_features=5, random_state=0)
    rng = np.random.default_rng(0)
    sf = np.empty((400, 2), dtype=object)
    sf[:, 0] = rng.choice(["F", "M"], 400)
    sf[:, 1] = [int(v) for v in rng.choice([1, 2], 400)]
    ratios = {("F", 1): 0.25, ("F", 2): 0.25, ("M", 1): 0.25, ("M", 2): 0.25}
    est = DPRobustClassifier(epsilon=1.0, data_norm=4.0, random_state=0, group_ratios=ratios,
                             accountant=BudgetAccountant()).fit(X, y, sensitive_features=sf)
    assert list(est.groups_) == [("F", 1), ("F", 2), ("M", 1), ("M", 2)]
    # one attribute whose values do not compare (ints and strings) keeps its types
    mixed = np.array([1, "a"] * 200, dtype=object)
    est = DPRobustClassifier(epsilon=1.0, data_norm=4.0, random_state=0,
                             accountant=BudgetAccountant()).fit(X, y, sensitive_features=mixed)
    assert list(est.groups_) == [1, "a"] and type(est.groups_[0]) is int
    # a review: True and 1 (which numpy would merge) stay apart
    assert len(encode_groups(np.array([True, 1, 0, False], dtype=object), 4)[1]) == 4


def test_mixed_type_group_column_keeps_the_int_and_the_string_apart():
    """The open item of the last session: compared as strings, the int 1 and the string
    "1" were one group. Keyed by kind and value they are two; 1 and 1.0 (equal numbers)
    stay one, as Python compares them."""
    from skdpminimax.estimators._groups import encode_groups

    column = np.array([1, "1", 1.0, "a", 2, "1", True], dtype=object)
    codes, labels = encode_groups(column, len(column))
    assert labels == [True, 1, 2, "1", "a"]
    assert [type(v) for v in labels] == [bool, int, int, str, str]
    np.testing.assert_array_equal(codes, [1, 3, 1, 4, 2, 3, 0])
    # several attributes: the combination keeps each attribute's kinds apart as well
    two = np.empty((4, 2), dtype=object)
    two[:, 0] = [1, "1", 1, "1"]
    two[:, 1] = ["x", "x", "y", "y"]
    assert encode_groups(two, 4)[1] == [(1, "x"), (1, "y"), ("1", "x"), ("1", "y")]


def test_group_labels_of_a_dataframe_keep_each_columns_type():
    """A review: np.asarray of a DataFrame made its int column float next to a float one;
    each column is read as it is."""
    pd = pytest.importorskip("pandas")  # not a dependency: CI runs without it
    from skdpminimax.estimators._groups import encode_groups

    frame = pd.DataFrame({"a": [1, 2, 1, 2], "b": [0.0, 0.0, 1.0, 1.0]})
    labels = encode_groups(frame, 4)[1]
    assert labels == [(1, 0.0), (1, 1.0), (2, 0.0), (2, 1.0)]
    assert type(labels[0][0]) is int
    frame = pd.DataFrame({"sex": ["F", "M", "F", "M"], "band": [1, 1, 2, 2]})
    assert encode_groups(frame, 4)[1] == [("F", 1), ("F", 2), ("M", 1), ("M", 2)]


def test_bounds_read_from_the_data_warn_only_where_there_is_a_guarantee():
    """A probe: the data_norm and bounds PrivacyLeakWarnings fired at epsilon = inf,
    where no guarantee is claimed (the replayable-seed warning is quiet there)."""
    X, y = make_regression(n_samples=200, n_features=3, random_state=0)
    groups = np.arange(200) % 2
    kwargs = dict(random_state=0, group_ratios=[0.5, 0.5])
    with pytest.warns(PrivacyLeakWarning) as record:
        DPGroupFairRegressor(epsilon=1.0, accountant=BudgetAccountant(), **kwargs).fit(
            X, y, sensitive_features=groups)
    messages = " ".join(str(w.message) for w in record if w.category is PrivacyLeakWarning)
    assert "data_norm" in messages and "Bounds" in messages
    with warnings.catch_warnings():
        warnings.simplefilter("error", PrivacyLeakWarning)
        DPGroupFairRegressor(epsilon=np.inf, accountant=BudgetAccountant(), **kwargs).fit(
            X, y, sensitive_features=groups)


def test_regressor_predictions_are_clipped_to_the_bounds_unless_asked_not_to():
    # Output perturbation on 300 rows at epsilon=1: its noise exceeds the set, so the
    # linear predictor runs past the public bounds (the case the clip is for).
    X, y, groups = _regression()
    X = X / np.linalg.norm(X, axis=1).max()
    bounds = (float(np.min(y)), float(np.max(y)))
    est = DPGroupFairRegressor(epsilon=1.0, data_norm=1.0, bounds=bounds,
                               solver="output_perturbation", random_state=0)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", UserWarning)
        est.fit(X, y, sensitive_features=groups)
    linear = X @ est.coef_ + est.intercept_
    assert np.any((linear < bounds[0]) | (linear > bounds[1]))
    clipped = est.predict(X)
    np.testing.assert_array_equal(clipped, np.clip(linear, *bounds))
    assert np.mean((clipped - y) ** 2) < np.mean((linear - y) ** 2)
    est.set_params(clip_predictions=False)
    np.testing.assert_allclose(est.predict(X), linear)


def _parity_fit(group_ratios=None, constraint="demographic_parity", epsilon=1.0):
    X, y = make_regression(n_samples=400, n_features=4, noise=5.0, random_state=0)
    groups = np.digitize(X[:, 0], np.quantile(X[:, 0], np.linspace(0, 1, 11)[1:-1]))
    est = DPGroupFairRegressor(epsilon=epsilon, data_norm=5.0, bounds=(-300, 300),
                               constraint=constraint, group_ratios=group_ratios,
                               accountant=BudgetAccountant(), random_state=0)
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        est.fit(X, y, sensitive_features=groups)
    noisy = [w for w in caught if "group sizes were released" in str(w.message)]
    return est, noisy, np.bincount(groups) / len(groups)


def test_parity_warns_when_the_released_group_sizes_are_noisy():
    # 10 groups of 40 at epsilon=1: each count gets 0.05, noise std ~28 on counts ~40.
    est, noisy, frequencies = _parity_fit()
    assert len(noisy) == 1 and "group_ratios_budget=0.05" in str(noisy[0].message)
    assert "Demographic parity" in str(noisy[0].message)
    # public ratios and a quiet release: silent
    assert not _parity_fit(group_ratios=frequencies)[1]
    assert not _parity_fit(epsilon=1e4)[1]
    # The minimax loss weighs groups by 1 / ratio too: it warns, without parity's words.
    minimax = _parity_fit(constraint="minimax_loss")[1]
    assert len(minimax) == 1 and "Demographic parity" not in str(minimax[0].message)
    # a refit with public ratios forgets the previous fit's release
    est.set_params(group_ratios=frequencies)
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        X, y = make_regression(n_samples=400, n_features=4, noise=5.0, random_state=0)
        groups = np.digitize(X[:, 0], np.quantile(X[:, 0], np.linspace(0, 1, 11)[1:-1]))
        est.fit(X, y, sensitive_features=groups)
    assert not [w for w in caught if "group sizes were released" in str(w.message)]


@pytest.mark.parametrize("epsilon", [0.05, 0.5, 2.0])
def test_geometric_noise_std_matches_the_mechanism(epsilon):
    from diffprivlib.mechanisms import Geometric

    from skdpminimax.privacy.mechanisms import geometric_noise_std

    mech = Geometric(epsilon=epsilon, sensitivity=1, random_state=0)
    draws = np.array([mech.randomise(0) for _ in range(20000)], float)
    assert geometric_noise_std(epsilon) == pytest.approx(draws.std(), rel=0.04)
    assert geometric_noise_std(np.inf) == 0.0


def test_private_counts_are_independent_truncated_geometric_releases():
    """The vector release that serves the group counts: one count gives private_count's
    draw for the same seed; every count is clamped to [0, upper] before the noise and its
    release stays there; the noise of many counts has the geometric std and no
    correlation between neighbours in the vector (one stream, independent draws)."""
    from skdpminimax.privacy.mechanisms import (
        geometric_noise_std,
        private_count,
        private_counts,
    )

    for seed in range(5):
        assert private_counts([37], 100, 0.7, np.random.default_rng(seed))[0] == \
            private_count(37, 100, 0.7, np.random.default_rng(seed))
    np.testing.assert_array_equal(private_counts([-3, 5, 250], 100, np.inf,
                                                 np.random.default_rng(0)), [0, 5, 100])
    edge = private_counts([0, 100] * 500, 100, 0.5, np.random.default_rng(1))
    assert edge.min() >= 0 and edge.max() <= 100
    noise = private_counts(np.full(20000, 500), 1000, 0.5, np.random.default_rng(2)) - 500.0
    assert noise.std() == pytest.approx(geometric_noise_std(0.5), rel=0.04)
    assert abs(noise.mean()) < 0.1
    assert abs(np.corrcoef(noise[:-1], noise[1:])[0, 1]) < 0.03


def test_parity_regressor_resolves_its_solver_before_fit():
    """A user-style probe: the parity regressor's default solver read groups_ before fit,
    so set_params(solver__...) and a charged search raised AttributeError."""
    from skdpminimax.search import PrivateSearchCV

    est = DPGroupFairRegressor(constraint="demographic_parity")
    with pytest.raises(ValueError, match="solver='sgda' is a name"):
        est.set_params(solver__step_size=0.1)
    assert est._resolve_solver().get_params()["clip_w"] == "scaled"
    X, y, groups = _regression(n=240)
    acc = BudgetAccountant()
    est = DPGroupFairRegressor(epsilon=1.0, data_norm=5.0, bounds=(-300, 300),
                               constraint="demographic_parity", accountant=acc)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        PrivateSearchCV(GridSearchCV(est, {}, cv=3, refit=False), accountant=acc).fit(
            X, y, sensitive_features=groups)
    assert acc.total()[0] == pytest.approx(3.0)


def test_group_labels_in_a_list_are_told_apart_as_in_an_object_array():
    """A user-style probe: numpy made a list [1, "1", True] one dtype, merging groups."""
    from skdpminimax.estimators._groups import encode_groups

    values = [1, "1", 2, True, 1, "1", 2, True]
    codes, labels = encode_groups(values, 8)
    assert labels == encode_groups(np.array(values, dtype=object), 8)[1]
    assert labels == [True, 1, 2, "1"] and len(set(codes)) == 4
    rows = [[1, "x"], ["1", "x"], [1, "y"], ["1", "y"]]
    assert encode_groups(rows, 4)[1] == [(1, "x"), (1, "y"), ("1", "x"), ("1", "y")]
    # plain lists of one kind are unchanged
    assert encode_groups([0.0, 1.0, 1.0, 0.0], 4)[1] == [0.0, 1.0]
    assert encode_groups(("b", "a", "b", "a"), 4)[1] == ["a", "b"]


def test_dict_group_ratios_cannot_name_true_and_one_apart():
    """A user-style probe: {True: a, 1: b} is {True: b} in Python, and the plain lookup
    gave both groups b."""
    X, y, _ = _regression(n=200)
    groups = np.array([True] * 50 + [1] * 150, dtype=object)
    acc = BudgetAccountant()
    est = DPGroupFairRegressor(epsilon=1.0, data_norm=5.0, bounds=(-300, 300),
                               group_ratios={True: 50, 1: 150}, accountant=acc)
    with pytest.raises(ValueError, match=r"True and 1 are different groups"):
        est.fit(X, y, sensitive_features=groups)
    assert acc.total()[0] == 0
    # keys of the groups' own kinds are matched as before
    est.set_params(group_ratios={True: 50, 2: 150})
    est.fit(X, y, sensitive_features=np.array([True] * 50 + [2] * 150, dtype=object))
    np.testing.assert_allclose(est.group_ratios_, [0.25, 0.75])


def test_regressor_bounds_as_an_array_and_overflowing_bounds():
    X, y, groups = _regression(n=200)
    acc = BudgetAccountant()
    est = DPGroupFairRegressor(epsilon=1.0, data_norm=5.0, bounds=np.array([-300.0, 300.0]),
                               accountant=acc, random_state=0)
    est.fit(X, y, sensitive_features=groups)
    assert est.bounds_ == (-300.0, 300.0)
    spent = acc.total()[0]
    with pytest.raises(ValueError, match="squared errors must not overflow"):
        est.set_params(bounds=(1e300, 1e301)).fit(X, y, sensitive_features=groups)
    assert acc.total()[0] == spent


def test_group_labels_do_not_depend_on_which_rows_hold_which_type():
    """A privacy review: the published label of the group {1, 1.0} was the first value
    seen (or np.unique's pick), so replacing one row's 1 by 1.0 changed groups_."""
    from skdpminimax.estimators._groups import encode_groups

    base = [0, 1, 1, 0, "x", "x"]
    for variant in ([0, 1.0, 1, 0, "x", "x"], [0.0, 1, 1.0, 0, "x", "x"],
                    np.array([0, 1.0, 1, 0], dtype=object), np.array([0, 1, 1.0, 0], dtype=object)):
        labels = encode_groups(variant, len(variant))[1]
        assert labels == [0, 1, "x"][: len(labels)]
        assert [type(v) for v in labels] == [int, int, str][: len(labels)]
    assert encode_groups(base, 6)[1] == [0, 1, "x"]
    # equal values of one kind are one group whatever their class
    assert encode_groups(np.array(["a", np.str_("a"), "b", "b"], dtype=object), 4)[1] == ["a", "b"]
    assert encode_groups(np.array([b"x", np.bytes_(b"x"), b"y", b"y"], dtype=object), 4)[1] == [
        b"x", b"y"]


@pytest.mark.parametrize("kwargs", [{"group_ratios_budget": 1e-320}, {"n_samples_budget": 1e-300}])
def test_a_vanishing_share_for_a_count_is_refused_before_the_spend(kwargs):
    """A privacy review: at 1e-320 the geometric noise overflowed after the spend."""
    X, y, groups = _regression(n=200)
    acc = BudgetAccountant()
    est = DPGroupFairRegressor(epsilon=1.0, data_norm=5.0, bounds=(-300, 300), accountant=acc,
                               **kwargs)
    with pytest.raises(ValueError, match="below 1e-06: its noise .* would swamp any count"):
        est.fit(X, y, sensitive_features=groups)
    assert tuple(acc.total()) == (0.0, 0.0)


# ---- fit_intercept=False: the model passes through the origin ------------------------------
def _through_the_origin(n=1000, seed=0):
    # Targets in [0, 60]: bounds far from symmetric around 0 (centre 30).
    rng = np.random.default_rng(seed)
    X = rng.uniform(0.0, 1.0, (n, 3))
    y = X @ np.array([10.0, 20.0, 30.0]) + rng.normal(0.0, 1.0, n)
    return X, y, rng.integers(0, 2, n)


@pytest.mark.parametrize("constraint", ["minimax_loss", "demographic_parity"])
def test_regressor_without_intercept_is_least_squares_through_the_origin(constraint):
    """The intercept was dropped on the centred scale (y - c) / s, i.e. fixed at the
    centre c = 30 of bounds (0, 60): intercept_ 30, coef_ [-7, 1, 11], R^2 0.21."""
    X, y, groups = _through_the_origin()
    alpha = 1e-4
    # tolerance = the whole range: the parity constraint is inactive.
    est = DPGroupFairRegressor(epsilon=np.inf, bounds=(0, 60), data_norm=2.0, alpha=alpha,
                               fit_intercept=False, constraint=constraint, tolerance=60.0,
                               clip_predictions=False, accountant=BudgetAccountant(),
                               random_state=0).fit(X, y, sensitive_features=groups)
    assert est.intercept_ == 0.0
    np.testing.assert_allclose(est.predict(X), X @ est.coef_)
    # (1/n) sum (x.w - y/s)^2 + alpha/2 ||w||^2 with coef = s w is Ridge's objective
    # ||y - X coef||^2 + a ||coef||^2 divided by n s^2, for a = n alpha / 2.
    ridge = Ridge(alpha=len(y) * alpha / 2, fit_intercept=False).fit(X, y)
    np.testing.assert_allclose(est.coef_, ridge.coef_, atol=0.05)
    np.testing.assert_allclose(est.coef_, np.linalg.lstsq(X, y, rcond=None)[0], atol=0.05)
    assert est.score(X, y) == pytest.approx(ridge.score(X, y), abs=1e-4)


@pytest.mark.parametrize("constraint", ["minimax_loss", "demographic_parity"])
def test_objective_without_intercept_is_the_released_models_loss_within_its_bounds(constraint):
    """The objective's loss is the released model's squared error (in units of s^2), and
    its certified per-example gradient bound holds, tightly, for the uncentred target:
    |residual| <= H + max(|low|, |high|) / s = H + 2 for bounds (0, 60)."""
    X, y, groups = _through_the_origin(n=200)
    est = DPGroupFairRegressor(epsilon=np.inf, bounds=(0, 60), data_norm=2.0,
                               fit_intercept=False, constraint=constraint, tolerance=60.0,
                               accountant=BudgetAccountant(), random_state=0)
    est.fit(X, y, sensitive_features=groups)
    obj = est.objective_
    targets, _ = est._validate_targets(X, y, sensitive_features=groups)
    s = 30.0
    w = est.coef_ / s
    losses = obj.loss.values(obj.model.scores(w, X), targets)
    np.testing.assert_allclose(losses * s * s, (np.clip(y, 0, 60) - X @ est.coef_) ** 2)
    assert obj.loss.target_bound == pytest.approx(2.0)
    # Worst example: a row at data_norm, scores -H, target at the upper bound 60.
    u = np.ones(3) / np.sqrt(3.0)
    w_worst = -est.radius * u
    data = SaddleData(X=2.0 * u[None, :], y=np.array([60.0 / s]),
                      groups=np.array([int(np.argmin(est.group_ratios_))]))
    _, v0 = obj.init_params()
    v = v0.copy()
    if constraint == "minimax_loss":  # all the weight on the smallest group
        v[:] = 0.0
        v[data.groups[0]] = 1.0
    gw, gv = obj.per_example_grads(w_worst, v, data)
    g_w, g_v = obj.lipschitz()
    assert np.linalg.norm(gw) <= g_w * (1 + 1e-12)
    assert np.linalg.norm(gv) <= g_v * (1 + 1e-12)
    if constraint == "minimax_loss":
        assert np.linalg.norm(gw) == pytest.approx(g_w)  # 2 (H + 2) kappa / pi_min


@pytest.mark.parametrize("constraint", ["minimax_loss", "demographic_parity"])
@pytest.mark.parametrize("solver", ["sgda", "output_perturbation"])
def test_private_regressor_without_intercept_has_no_intercept(constraint, solver):
    X, y, groups = _through_the_origin(n=500)
    est = DPGroupFairRegressor(epsilon=1.0, bounds=(0, 60), data_norm=2.0, fit_intercept=False,
                               constraint=constraint, solver=solver,
                               accountant=BudgetAccountant(), random_state=0)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", UserWarning)
        est.fit(X, y, sensitive_features=groups)
    assert est.intercept_ == 0.0
    assert est.coef_.shape == (3,) and np.all(np.isfinite(est.coef_))
    np.testing.assert_allclose(est.predict(X), np.clip(X @ est.coef_, 0, 60))
    assert est.privacy_spent_.epsilon <= 1.0 + 1e-9


def test_robust_score_is_documented_as_overall_accuracy():
    # score() was ClassifierMixin's: nothing said it is the accuracy over all rows, not
    # the worst group's that the fit targets (and GridSearchCV's default scoring).
    from sklearn.metrics import accuracy_score

    X, y = load_iris(return_X_y=True)
    model = DPRobustClassifier(epsilon=np.inf, data_norm=10.0, random_state=0,
                               accountant=BudgetAccountant()).fit(X, y)
    assert model.score(X, y) == accuracy_score(y, model.predict(X))
    doc = DPRobustClassifier.score.__doc__
    assert "not** the worst group" in doc and "worst_group_accuracy" in doc


def test_fair_score_is_documented_as_overall_r2():
    # score() was RegressorMixin's: nothing said it is the R^2 over all rows, not the
    # worst group's loss or the parity gap that the fit targets.
    from sklearn.metrics import r2_score

    X, y = make_regression(n_samples=200, n_features=4, noise=1.0, random_state=0)
    g = np.arange(200) % 2
    model = DPGroupFairRegressor(epsilon=np.inf, data_norm=10.0, bounds=(-300, 300),
                                 random_state=0, accountant=BudgetAccountant()).fit(
        X, y, sensitive_features=g)
    assert model.score(X, y) == r2_score(y, model.predict(X))
    doc = DPGroupFairRegressor.score.__doc__
    assert "not** the worst group" in doc and "worst_group_loss" in doc


def test_a_regressor_given_string_targets_says_so():
    """A fuzzing review: string y reached numpy's 'could not convert string to float'."""
    X, _, groups = _regression()
    ledger = _fresh_accountant()
    with pytest.raises(ValueError, match="is a regressor: y must be numeric.*Nothing was spent"):
        DPGroupFairRegressor(data_norm=5.0, bounds=(-1, 1), accountant=ledger).fit(
            X, np.array(["a", "b"] * (len(X) // 2)), sensitive_features=groups)
    assert ledger.spent_budget == []


@pytest.mark.parametrize("make", [DPRobustClassifier, DPGroupFairRegressor])
def test_a_group_count_released_at_zero_is_read_as_about_one_noise_scale(make, monkeypatch):
    """A group whose count was released as 0 got ratio 1 / n (the release floored at 1)
    and an n-fold weight, silently. Every group has a row (checked before the spend),
    so its size is now the count's posterior mean on [1, n - k + 1], and the fit warns
    that the counts are noisy."""
    import skdpminimax.estimators._groups as groups_module

    real = groups_module.private_counts
    monkeypatch.setattr(groups_module, "private_counts",
                        lambda counts, n, eps, rng: np.r_[0, real(counts, n, eps, rng)[1:]])
    rng = np.random.default_rng(0)
    X = rng.normal(size=(300, 3))
    groups = np.repeat([0, 1, 2], 100)
    if make is DPRobustClassifier:
        model, y, kw = make(epsilon=0.5, data_norm=5.0), (X[:, 0] > 0).astype(int), {
            "sensitive_features": groups}
    else:
        model, y, kw = make(epsilon=0.5, data_norm=5.0, bounds=(-3, 3)), X[:, 0], {
            "sensitive_features": groups}
    model.set_params(random_state=0, accountant=BudgetAccountant(), n_samples_budget=300)
    with pytest.warns(UserWarning, match="group sizes were released with noise"):
        model.fit(X, y, **kw)
    epsilon = 0.5 * model.group_ratios_budget  # add/remove-one: the whole share per count
    assert model.group_ratios_[0] * 300 > 0.5 / epsilon / 3  # 1 before
