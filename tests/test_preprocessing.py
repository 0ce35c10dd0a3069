"""DPStandardScaler: one Gaussian release of clipped first and second moments."""

import math
import warnings

import numpy as np
import pytest
from diffprivlib import BudgetAccountant
from diffprivlib.models import StandardScaler as DiffprivlibScaler
from diffprivlib.utils import BudgetError, PrivacyLeakWarning
from sklearn.datasets import make_classification
from sklearn.linear_model import LogisticRegression
from sklearn.metrics import roc_auc_score
from sklearn.model_selection import GridSearchCV, train_test_split
from sklearn.pipeline import make_pipeline
from sklearn.preprocessing import StandardScaler

from skdpminimax import DPAUCMaximizer, DPStandardScaler
from skdpminimax.preprocessing import clipped_moment_sums, moment_sensitivity
from skdpminimax.search import PrivateSearchCV, search_budgets
from skdpminimax.solvers import NoisySGDA
from privacy_reference import analytic_gaussian_sigma
from sklearn_checks import parametrize_with_checks_list


@parametrize_with_checks_list(
    [DPStandardScaler(bounds=(-50.0, 50.0), random_state=0),
     DPStandardScaler(epsilon=np.inf, random_state=0)],  # bounds from the data: warns
    lambda estimator: {})
def test_sklearn_compatible(estimator, check):
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", PrivacyLeakWarning)
        check(estimator)


def _rows(n=300, d=6, seed=0):
    rng = np.random.default_rng(seed)
    return rng.normal(2.0, np.linspace(0.5, 3.0, d), size=(n, d))


@pytest.mark.parametrize("with_std", [True, False])
def test_neighbours_move_the_release_at_most_its_sensitivity(with_std):
    """Add/remove one row of [-1, 1] entries clipped to norm c: sqrt(2) c (c for the
    first sums), attained by c^2 entries at -1; a replacement moves it at most twice."""
    rng = np.random.default_rng(1)
    U = rng.uniform(-1, 1, size=(200, 9))
    c = 2.0  # binding for most rows
    bound = moment_sensitivity(c, with_std)
    assert bound == (math.sqrt(2.0) * c if with_std else c)
    full = clipped_moment_sums(U, c, with_std)
    removals = [np.linalg.norm(full - clipped_moment_sums(np.delete(U, i, axis=0), c, with_std))
                for i in range(U.shape[0])]
    assert max(removals) <= bound * (1 + 1e-12)
    extreme = np.zeros((1, 9))
    extreme[0, :4] = -1.0  # norm 2 = c
    assert np.linalg.norm(clipped_moment_sums(extreme, c, with_std)) == pytest.approx(bound)
    replaced = [np.linalg.norm(full - clipped_moment_sums(
        np.vstack([np.delete(U, i, axis=0), -U[i][None]]), c, with_std)) for i in range(50)]
    assert max(replaced) <= moment_sensitivity(c, with_std, "replace_one") * (1 + 1e-12)


@pytest.mark.parametrize("neighbouring, with_std", [("add_remove", True), ("add_remove", False),
                                                     ("replace_one", True)])
def test_noise_is_the_analytic_gaussians_for_the_sensitivity(neighbouring, with_std):
    X = _rows()
    n, d = X.shape
    scaler = DPStandardScaler(epsilon=0.7, delta=1e-5, bounds=(-10.0, 14.0), row_clip=0.5,
                              with_std=with_std, n_samples_budget=n, neighbouring=neighbouring,
                              random_state=3).fit(X)
    c = 0.5 * math.sqrt(d)
    if neighbouring == "replace_one":
        # c > 1 here: sqrt(2 kappa(1)) c, kappa from an independent grid (~2.3114)
        sens = math.sqrt(2.0 * _grid_ratio(1.0)[0]) * c
    else:
        sens = (math.sqrt(2.0) if with_std else 1.0) * c
    assert scaler.sensitivity_ == pytest.approx(sens, rel=1e-5)
    assert scaler.noise_std_ == pytest.approx(analytic_gaussian_sigma(0.7, 1e-5, sens), rel=1e-5)
    assert scaler.n_samples_seen_ == n  # declared (add/remove) or len(X) (replace-one)


def test_released_means_have_the_stated_noise():
    """Over many seeds the released means' spread is the noise's: sigma * half / n."""
    X = _rows(n=200, d=4)
    half = 12.0
    means = np.array([DPStandardScaler(epsilon=1.0, bounds=(2.0 - half, 2.0 + half),
                                       n_samples_budget=200, random_state=s).fit(X).mean_
                      for s in range(400)])
    sigma = DPStandardScaler(epsilon=1.0, bounds=(2.0 - half, 2.0 + half),
                             n_samples_budget=200, random_state=0).fit(X).noise_std_
    expected = sigma * half / 200
    np.testing.assert_allclose(means.std(axis=0), expected, rtol=0.15)
    np.testing.assert_allclose(means.mean(axis=0), X.mean(axis=0), atol=4 * expected / 20)


def test_without_noise_it_is_scikit_learns_scaler():
    X = _rows()
    exact = DPStandardScaler(epsilon=np.inf, bounds=(-50.0, 50.0), min_scale=1e-9).fit(X)
    np.testing.assert_allclose(exact.transform(X), StandardScaler().fit_transform(X),
                               atol=1e-10)
    np.testing.assert_allclose(exact.inverse_transform(exact.transform(X)), X, atol=1e-10)
    assert exact.noise_std_ == 0.0
    centred = DPStandardScaler(epsilon=np.inf, bounds=(-50.0, 50.0), with_std=False).fit(X)
    assert centred.scale_ is None and centred.var_ is None
    np.testing.assert_allclose(centred.transform(X), X - X.mean(axis=0), atol=1e-10)


def test_bounds_clip_the_values_and_the_std_has_a_floor():
    X = np.column_stack([np.linspace(0, 100, 50), np.full(50, 3.0), np.linspace(-1, 1, 50)])
    scaler = DPStandardScaler(epsilon=np.inf, bounds=([0, 0, 5], [10, 10, 5]),
                              min_scale=0.05).fit(X)
    clipped = np.clip(X[:, 0], 0, 10)
    assert scaler.mean_[0] == pytest.approx(clipped.mean())
    assert scaler.scale_[1] == pytest.approx(0.05 * 10)  # a constant feature: the floor
    assert scaler.mean_[2] == 5.0 and scaler.scale_[2] == 1.0  # fixed by its bounds


def test_the_size_is_released_declared_or_public():
    X = _rows(n=400)
    released = [DPStandardScaler(epsilon=1.0, bounds=(-20.0, 20.0), random_state=s).fit(X)
                .n_samples_seen_ for s in range(30)]
    assert len(set(released)) > 1 and abs(np.mean(released) - 400) < 30
    assert DPStandardScaler(bounds=(-20.0, 20.0), n_samples_budget=1000,
                            random_state=0).fit(X).n_samples_seen_ == 1000
    with pytest.warns(PrivacyLeakWarning, match="public"):
        public = DPStandardScaler(bounds=(-20.0, 20.0), n_samples_budget="public",
                                  random_state=0).fit(X)
    assert public.n_samples_seen_ == 400
    with pytest.warns(UserWarning, match="ten times") as record:
        DPStandardScaler(bounds=(-20.0, 20.0), n_samples_budget=10**4, random_state=0).fit(X)
    assert not any("400" in str(w.message) for w in record)  # not the row count
    with pytest.raises(ValueError, match="divided by 1000000") as refused:
        DPStandardScaler(bounds=(-20.0, 20.0), n_samples_budget=10**6, random_state=0).fit(X)
    assert "400" not in str(refused.value)


def test_the_whole_budget_is_spent_once_on_the_accountant():
    X = _rows()
    ledger = BudgetAccountant()
    DPStandardScaler(epsilon=0.4, delta=1e-6, bounds=(-20.0, 20.0), accountant=ledger,
                     random_state=0).fit(X)
    assert ledger.spent_budget == [(0.4, 1e-6)]
    with pytest.raises(BudgetError):
        DPStandardScaler(epsilon=2.0, bounds=(-20.0, 20.0),
                         accountant=BudgetAccountant(epsilon=1.0)).fit(X)


def test_missing_bounds_warn_as_diffprivlib_does():
    with pytest.warns(PrivacyLeakWarning, match="Bounds have not been specified"):
        DPStandardScaler(random_state=0).fit(_rows())


@pytest.mark.parametrize("params, X, match", [
    ({"epsilon": 0.0}, None, "epsilon"),
    ({"epsilon": -1.0}, None, "epsilon"),
    ({"delta": 1.0}, None, "delta"),
    ({"delta": 0.0}, None, "delta"),
    ({"bounds": (5.0, 1.0)}, None, "lower > upper"),
    ({"bounds": (np.zeros(3), np.ones(3))}, None, "features"),
    ({"bounds": (0.0, np.inf)}, None, "finite"),
    ({"bounds": (0.0,)}, None, "pair"),
    ({"row_clip": 0.0}, None, "row_clip"),
    ({"n_samples_budget": True}, None, "n_samples_budget"),
    ({}, np.array([[1.0, np.nan], [0.0, 1.0]]), "NaN"),
    ({}, np.array([[1.0, np.inf], [0.0, 1.0]]), "infinity"),
    ({}, np.ones(4), "2D"),
])
def test_bad_input_is_refused_before_the_spend_and_changes_nothing(params, X, match):
    ledger = BudgetAccountant()
    scaler = DPStandardScaler(**{"bounds": (-20.0, 20.0), "accountant": ledger, **params})
    X = _rows() if X is None else X
    before = dict(vars(scaler))
    with pytest.raises(ValueError, match=match):
        scaler.fit(X)
    assert ledger.spent_budget == []
    assert set(vars(scaler)) == set(before)
    assert not hasattr(scaler, "mean_") and not hasattr(scaler, "n_features_in_")


def test_size_one_bounds_are_one_value_as_diffprivlib_takes_them():
    # A review: (array([-20.]), array([20.])) was refused as of shape (1,), which the
    # group fair regressor and diffprivlib take as one value.
    X = _rows()
    scalar, arrays = (DPStandardScaler(epsilon=1.0, bounds=bounds, random_state=0).fit(X)
                      for bounds in [(-20.0, 20.0), (np.array([-20.0]), np.array([[20.0]]))])
    np.testing.assert_array_equal(scalar.scale_, arrays.scale_)
    np.testing.assert_array_equal(arrays.lower_, np.full(X.shape[1], -20.0))


def test_a_delta_not_below_one_over_n_warns_as_the_estimators_do():
    # A review: the docstring says "choose it well below 1 / n_samples", the estimators
    # warn, the scaler did not.
    X = _rows()  # 300 rows
    spread = 4.0 * np.linspace(0.5, 3.0, 6)  # per feature: the std floor stays silent
    bounds = (2.0 - spread, 2.0 + spread)
    with pytest.warns(UserWarning, match="not below 1 / n"):
        DPStandardScaler(epsilon=1.0, delta=0.5, bounds=bounds, n_samples_budget=300,
                         random_state=0).fit(X)
    with warnings.catch_warnings():
        warnings.filterwarnings("error", ".*not below 1 / n")
        DPStandardScaler(epsilon=1.0, delta=1e-4, bounds=bounds, n_samples_budget=300,
                         random_state=0).fit(X)


def test_a_failed_fit_keeps_the_previous_one():
    ledger = BudgetAccountant(epsilon=1.5)
    scaler = DPStandardScaler(epsilon=1.0, bounds=(-20.0, 20.0), accountant=ledger,
                              random_state=0).fit(_rows())
    mean, n_features = scaler.mean_.copy(), scaler.n_features_in_
    with pytest.raises(BudgetError):
        scaler.fit(_rows(d=3))  # over the ledger's budget: refused before the spend
    np.testing.assert_array_equal(scaler.mean_, mean)
    assert scaler.n_features_in_ == n_features and ledger.spent_budget == [(1.0, 1e-6)]



def test_a_refit_starts_from_a_clean_slate():
    """No fitted attribute of an earlier fit survives a successful one (a DataFrame's
    feature names, anything set by an earlier version of the scaler)."""
    pd = pytest.importorskip("pandas")
    X = _rows()
    scaler = DPStandardScaler(epsilon=1.0, bounds=(-20.0, 20.0), n_samples_budget=len(X),
                              random_state=0)
    scaler.fit(pd.DataFrame(X, columns=[f"f{j}" for j in range(X.shape[1])]))
    assert hasattr(scaler, "feature_names_in_")
    scaler.stale_ = "from an earlier fit"
    scaler.fit(X)
    assert not hasattr(scaler, "stale_") and not hasattr(scaler, "feature_names_in_")

def _offset_data():
    X, y = make_classification(3000, 5, n_informative=3, n_redundant=0, weights=[0.7],
                               class_sep=1.5, random_state=0)
    return train_test_split(10.0 * X + 100.0, y, test_size=0.3, stratify=y, random_state=0)


def test_a_pipeline_with_the_default_poisson_fit_is_charged_once_per_step():
    """The add/remove scaler in front of the default (Poisson, add/remove) fit: one
    relation, one ledger, the sum of the two budgets; the offset features (on raw
    rows the clipped fit ranks at chance or inverted, docs/benchmarks.md) are
    standardised well enough to rank about as well as a non-private model."""
    X_train, X_test, y_train, y_test = _offset_data()
    ledger = BudgetAccountant()
    model = make_pipeline(
        DPStandardScaler(epsilon=0.5, bounds=(40.0, 160.0), accountant=ledger, random_state=0),
        DPAUCMaximizer(epsilon=1.0, delta=1e-5, data_norm=10.0, accountant=ledger,
                       random_state=0))
    model.fit(X_train, y_train)
    assert ledger.spent_budget == [(0.5, 1e-6), (1.0, 1e-5)]
    assert model[-1].calibration_.neighboring_relation == "add/remove-one"
    ceiling = roc_auc_score(y_test, LogisticRegression().fit(X_train, y_train)
                            .decision_function(X_test))
    assert roc_auc_score(y_test, model.decision_function(X_test)) > ceiling - 0.02


def test_private_search_charges_the_scaler_and_sees_one_relation():
    X_train, _, y_train, _ = _offset_data()
    ledger = BudgetAccountant()
    pipe = make_pipeline(
        DPStandardScaler(epsilon=0.5, bounds=(40.0, 160.0), accountant=ledger),
        DPAUCMaximizer(epsilon=1.0, delta=1e-5, data_norm=10.0, accountant=ledger))
    grid = GridSearchCV(pipe, {"dpaucmaximizer__alpha": [1e-4, 1e-2]}, cv=2,
                        scoring="roc_auc", refit=False)
    expected = search_budgets(grid, X_train, y_train)
    assert [(b.epsilon, b.delta) for b in expected] == [(0.5, 1e-6), (1.0, 1e-5)] * 4
    with warnings.catch_warnings():
        warnings.filterwarnings("error", ".*neither relation", PrivacyLeakWarning)
        PrivateSearchCV(grid, accountant=ledger).fit(X_train, y_train)
    assert ledger.spent_budget == [(b.epsilon, b.delta) for b in expected]


def test_private_search_warns_for_a_replace_one_scaler_before_a_poisson_fit():
    X_train, _, y_train, _ = _offset_data()
    ledger = BudgetAccountant()
    pipe = make_pipeline(
        DPStandardScaler(epsilon=0.5, bounds=(40.0, 160.0), neighbouring="replace_one",
                         accountant=ledger),
        DPAUCMaximizer(epsilon=1.0, delta=1e-5, data_norm=10.0, accountant=ledger))
    grid = GridSearchCV(pipe, {}, cv=2, refit=False)
    with pytest.warns(PrivacyLeakWarning, match="neither relation"):
        PrivateSearchCV(grid, accountant=ledger).fit(X_train, y_train)
    # in front of a replace-one solver: one relation, no warning
    pipe.set_params(dpaucmaximizer__solver=NoisySGDA(sampler="without_replacement",
                                                     step_size="scaled", n_epochs="auto"))
    with warnings.catch_warnings():
        warnings.filterwarnings("error", ".*neither relation", PrivacyLeakWarning)
        PrivateSearchCV(GridSearchCV(pipe, {}, cv=2, refit=False),
                        accountant=ledger).fit(X_train, y_train)


def test_a_search_refuses_bad_scaler_bounds_before_its_charge():
    X_train, _, y_train, _ = _offset_data()
    ledger = BudgetAccountant()
    pipe = make_pipeline(
        DPStandardScaler(epsilon=0.5, bounds=(np.zeros(3), np.ones(3)), accountant=ledger),
        DPAUCMaximizer(epsilon=1.0, data_norm=10.0, accountant=ledger))
    with pytest.raises(ValueError, match="features"):
        PrivateSearchCV(GridSearchCV(pipe, {}, cv=2, refit=False),
                        accountant=ledger).fit(X_train, y_train)
    assert ledger.spent_budget == []


def test_less_noise_than_a_per_feature_laplace_scaler_in_many_dimensions():
    """At the same epsilon on 100 features: one Gaussian release against diffprivlib's
    per-feature Laplace (its relation, replace-one, for both)."""
    rng = np.random.default_rng(0)
    X = rng.normal(0.0, 1.0, size=(2000, 100))
    ours = [DPStandardScaler(epsilon=1.0, bounds=(-4.0, 4.0), neighbouring="replace_one",
                             random_state=s).fit(X).mean_ for s in range(5)]
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        theirs = [DiffprivlibScaler(epsilon=1.0, bounds=(-4.0, 4.0), random_state=s)
                  .fit(X).mean_ for s in range(5)]
    err = lambda means: np.sqrt(np.mean((np.array(means) - X.mean(axis=0)) ** 2))  # noqa: E731
    assert err(ours) < err(theirs) / 2


def test_small_rows_have_the_smaller_sensitivity():
    """For c < 1, ||u^2|| <= ||u||^2 <= c^2: c sqrt(1 + c^2), attained by one entry at c."""
    c = 0.5
    assert moment_sensitivity(c) == pytest.approx(c * math.sqrt(1 + c * c))
    one = np.zeros((1, 4))
    one[0, 0] = -c
    assert np.linalg.norm(clipped_moment_sums(one, c)) == pytest.approx(moment_sensitivity(c))
    U = np.random.default_rng(2).uniform(-1, 1, size=(300, 4))
    full = clipped_moment_sums(U, c)
    worst = max(np.linalg.norm(full - clipped_moment_sums(np.delete(U, i, axis=0), c))
                for i in range(U.shape[0]))
    assert worst <= moment_sensitivity(c) * (1 + 1e-12)


def test_bounds_near_the_float_range_give_finite_statistics():
    X = _rows()
    for bounds in [(-1e308, 1e308), (1e308, 1.5e308)]:
        scaler = DPStandardScaler(epsilon=1.0, bounds=bounds, n_samples_budget=300,
                                  random_state=0).fit(X)
        assert np.all(np.isfinite(scaler.mean_)) and np.all(np.isfinite(scaler.scale_))
        assert np.all(scaler.scale_ > 0)


def test_a_tiny_min_scale_still_floors_the_std():
    X = np.column_stack([np.zeros(300), _rows(d=1)[:, 0]])  # a constant feature
    scaler = DPStandardScaler(epsilon=np.inf, bounds=(-4.0, 4.0), min_scale=1e-300).fit(X)
    assert np.all(scaler.scale_ > 0) and np.all(np.isfinite(scaler.transform(X)))


def test_transform_keeps_float32_and_handles_read_only_input_in_place_mode():
    X = _rows()
    scaler = DPStandardScaler(bounds=(-20.0, 20.0), copy=False, n_samples_budget=300,
                              random_state=0).fit(X)
    X32 = X.astype(np.float32)
    assert scaler.transform(X32.copy()).dtype == np.float32
    frozen = X.copy()
    frozen.setflags(write=False)
    np.testing.assert_allclose(scaler.transform(frozen), (X - scaler.mean_) / scaler.scale_)
    np.testing.assert_allclose(scaler.inverse_transform(scaler.transform(X.copy())), X)


def test_inverse_transform_takes_arrays_after_a_dataframe_fit():
    pd = pytest.importorskip("pandas")
    frame = pd.DataFrame(_rows(), columns=[f"f{j}" for j in range(6)])
    scaler = DPStandardScaler(bounds=(-20.0, 20.0), n_samples_budget=300,
                              random_state=0).fit(frame)
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        scaler.inverse_transform(scaler.transform(frame))


def test_the_identity_scaler_is_refused_before_the_spend():
    ledger = BudgetAccountant()
    with pytest.raises(ValueError, match="identity"):
        DPStandardScaler(with_mean=False, with_std=False, bounds=(-20.0, 20.0),
                         accountant=ledger).fit(_rows())
    assert ledger.spent_budget == []


def _canary_scores(epsilon, n_runs, monkeypatch=None, shrink=1.0):
    """Attack statistic of the released first sums' direction towards a worst-case
    canary (a corner of the bounds), with and without it (add/remove-one, size
    declared so that only the sums tell the data sets apart)."""
    X = np.zeros((20, 2))
    canary = np.array([[1.0, 1.0]])  # u = (1, 1): the first sums move by sqrt(2) = c
    scores = {}
    for name, data in (("in", np.vstack([X, canary])), ("out", X)):
        out = []
        for seed in range(n_runs):
            scaler = DPStandardScaler(epsilon=epsilon, delta=1e-5, bounds=(-1.0, 1.0),
                                      with_std=False, n_samples_budget=21,
                                      random_state=seed).fit(data)
            out.append(scaler.mean_.sum())
        scores[name] = np.array(out)
    return scores["in"], scores["out"]


def test_a_canary_audit_stays_below_the_claim_and_catches_too_little_noise(monkeypatch):
    """Empirical: the canary attack's epsilon lower bound (Clopper-Pearson, 95%) stays
    below the claimed epsilon; with the noise calibrated for a quarter of the true
    sensitivity, the same attack proves the claim false (the test can fail)."""
    from skdpminimax import preprocessing
    from skdpminimax.audit import epsilon_lower_bound

    claimed = 1.0
    scores_in, scores_out = _canary_scores(claimed, 800)
    honest = epsilon_lower_bound(scores_in, scores_out, delta=1e-5, epsilon_claimed=claimed,
                                 neighboring_relation="add/remove-one")
    assert honest.epsilon_lower_bound <= claimed
    assert honest.epsilon_lower_bound_gdp <= claimed * 1.25  # the Gaussian heuristic, near
    true_sensitivity = preprocessing.moment_sensitivity
    monkeypatch.setattr(preprocessing, "moment_sensitivity",
                        lambda *a, **k: true_sensitivity(*a, **k) / 4.0)
    scores_in, scores_out = _canary_scores(claimed, 800)
    broken = epsilon_lower_bound(scores_in, scores_out, delta=1e-5, epsilon_claimed=claimed,
                                 neighboring_relation="add/remove-one")
    assert broken.epsilon_lower_bound > claimed


def _grid_ratio(m, points=1601):
    """The largest ``(a - b)^2 (1 + (a + b)^2) / (a^2 + b^2)`` on a grid of ``[-m, m]^2``
    (an independent estimate of the constant behind the replace-one bound)."""
    grid = np.linspace(-m, m, points)
    a, b = np.meshgrid(grid, grid)
    norm2 = a ** 2 + b ** 2
    ratio = (a - b) ** 2 * (1 + (a + b) ** 2) / np.where(norm2 > 0, norm2, 1.0)
    return float(ratio.max()), a.ravel()[ratio.argmax()], b.ravel()[ratio.argmax()]


@pytest.mark.parametrize("c", [0.3, 0.5, 0.7, 0.9, 1.0, 2.0, 28.0])
def test_the_replace_one_bound_is_the_per_coordinate_ratio(c):
    """sqrt(2 kappa(min(1, c))) c, kappa the ratio's maximum on the box: at least the
    grid's maximum, and within the grid's resolution of it (2 at c <= 0.5, ~2.3114 at
    c >= 1, where the earlier bound took 3)."""
    m = min(1.0, c)
    kappa = moment_sensitivity(c, neighbouring="replace_one") ** 2 / (2 * c * c)
    on_grid = _grid_ratio(m)[0]
    assert on_grid <= kappa <= on_grid * (1 + 1e-5)
    assert moment_sensitivity(c, neighbouring="replace_one") <= 2 * moment_sensitivity(c)


@pytest.mark.parametrize("c", [0.2, 0.45, 0.5, 0.51, 0.55, 0.6])
def test_the_replace_one_bound_is_2c_up_to_half(c):
    """kappa is 2 for c <= 1/2 and above it beyond (the docs said 2 up to 0.6; at 0.6
    it is 2.004): near s = |a + b| = 0 the ratio is 2 + 2 s^2 (4 m^2 - 1) / (s^2 + t^2)
    to second order, so it rises above 2 exactly when m > 1/2."""
    kappa = moment_sensitivity(c, neighbouring="replace_one") ** 2 / (2 * c * c)
    if c <= 0.5:
        assert kappa == pytest.approx(2.0, rel=1e-8)
    else:
        assert kappa > 2.0 * (1 + 1e-6)
        assert _grid_ratio(c)[0] > 2.0 * (1 + 1e-7)


def test_the_replace_one_bound_is_attained():
    """Two coordinates (1, b) against (b, 1) at the ratio's maximiser: both rows have
    norm c = sqrt(1 + b^2), every coordinate is at the ratio kappa, and the release
    moves by exactly the bound (for c >= 1 it cannot be lowered)."""
    kappa, a_star, b_star = _grid_ratio(1.0, 4001)
    b = b_star / a_star  # the maximiser scaled so that the larger entry is 1
    c = math.sqrt(1 + b * b)
    assert c >= 1.0
    row, other = np.array([[1.0, b]]), np.array([[b, 1.0]])
    moved = np.linalg.norm(clipped_moment_sums(row, c) - clipped_moment_sums(other, c))
    bound = moment_sensitivity(c, neighbouring="replace_one")
    assert moved <= bound * (1 + 1e-12)
    assert moved >= bound * (1 - 1e-5)


def test_no_replacement_moves_the_release_beyond_the_replace_one_bound():
    rng = np.random.default_rng(4)
    for c, d in [(2.0, 4), (0.7, 3), (0.4, 5)]:
        U = rng.uniform(-1, 1, size=(100, d))
        full = clipped_moment_sums(U, c)
        bound = moment_sensitivity(c, neighbouring="replace_one")
        worst = 0.0
        for i in range(100):
            for candidate in (-U[i], rng.uniform(-1, 1, d), np.sign(rng.standard_normal(d)),
                              np.roll(U[i], 1)):
                moved = clipped_moment_sums(np.vstack([np.delete(U, i, axis=0), candidate]), c)
                worst = max(worst, np.linalg.norm(full - moved))
        assert worst <= bound * (1 + 1e-12)


def test_private_search_warns_for_an_add_remove_scaler_before_a_replace_one_fit():
    X_train, _, y_train, _ = _offset_data()
    ledger = BudgetAccountant()
    replace_one = NoisySGDA(sampler="without_replacement", step_size="scaled", n_epochs="auto")
    pipe = make_pipeline(
        DPStandardScaler(epsilon=0.5, bounds=(40.0, 160.0), accountant=ledger),
        DPAUCMaximizer(epsilon=1.0, delta=1e-5, data_norm=10.0, accountant=ledger,
                       solver=replace_one))
    with pytest.warns(PrivacyLeakWarning, match="neither relation"):
        PrivateSearchCV(GridSearchCV(pipe, {}, cv=2, refit=False),
                        accountant=ledger).fit(X_train, y_train)


def test_a_rows_only_check_refuses_what_the_parameters_alone_refuse():
    """A search checks a scaler behind a private step on its parameters only; the
    identity scaler and a vanishing count share must fail there, before the charge."""
    ledger = BudgetAccountant()
    X = _rows()
    for params, match in [({"with_mean": False, "with_std": False}, "identity"),
                          ({"epsilon": 1e-9, "n_samples_budget": 0.5}, "private count")]:
        scaler = DPStandardScaler(bounds=(-20.0, 20.0), accountant=ledger, **params)
        with pytest.raises(ValueError, match=match):
            scaler._check_fit(X, rows_only=True)
    assert ledger.spent_budget == []


def test_a_ledger_warns_once_when_fits_outside_a_search_mix_relations():
    """A privacy review: an add/remove-one scaler and a replace-one fit on one ledger,
    in a plain Pipeline, warned nothing (only a search checked)."""
    X_train, _, y_train, _ = _offset_data()
    replace_one = NoisySGDA(sampler="without_replacement", step_size="scaled",
                            n_epochs="auto")

    def pipe(ledger, solver="sgda"):
        return make_pipeline(
            DPStandardScaler(epsilon=0.5, bounds=(40.0, 160.0), accountant=ledger,
                             n_samples_budget=len(X_train), random_state=0),
            DPAUCMaximizer(epsilon=1.0, delta=1e-5, data_norm=10.0, pos_ratio=0.3,
                           accountant=ledger, solver=solver, random_state=0))

    ledger = BudgetAccountant()
    with pytest.warns(PrivacyLeakWarning, match="two neighbouring relations") as record:
        pipe(ledger, replace_one).fit(X_train, y_train)
    assert sum("two neighbouring relations" in str(w.message) for w in record) == 1
    with warnings.catch_warnings():  # once per ledger
        warnings.filterwarnings("error", ".*two neighbouring relations", PrivacyLeakWarning)
        pipe(ledger, replace_one).fit(X_train, y_train)
        pipe(BudgetAccountant()).fit(X_train, y_train)  # one relation: add/remove-one


def test_fit_sums_the_moments_in_blocks_of_rows(monkeypatch):
    # A scale probe: fit made three X-sized temporaries (scaled, clipped, squared rows):
    # 240 MB for a 2,000 x 5,000 X of 80 MB. Now blocks of rows; each row is clipped on
    # its own, so the release is the same.
    import tracemalloc

    from skdpminimax.privacy import mechanisms

    X = np.random.default_rng(0).normal(size=(2000, 50)) * 3.0
    kwargs = dict(epsilon=1.0, bounds=(-4.0, 6.0), row_clip=0.3, random_state=0)
    whole = DPStandardScaler(**kwargs).fit(X)
    monkeypatch.setattr(mechanisms, "_ROW_BLOCK_ENTRIES", 1000)  # the shared row blocks
    tracemalloc.start()
    try:
        blocks = DPStandardScaler(**kwargs).fit(X)
        peak = tracemalloc.get_traced_memory()[1]
    finally:
        tracemalloc.stop()
    assert peak < X.nbytes / 4
    np.testing.assert_allclose(blocks.mean_, whole.mean_, rtol=1e-12, atol=1e-14)
    np.testing.assert_allclose(blocks.scale_, whole.scale_, rtol=1e-12, atol=1e-14)


def _unlike_scales(n=2000, seed=0):
    """Six features whose spreads range over three orders of magnitude (wine-like)."""
    rng = np.random.default_rng(seed)
    return rng.normal(size=(n, 6)) * np.array([0.1, 0.3, 1.0, 3.0, 30.0, 300.0]) + 500.0


def test_a_scale_set_by_the_floor_for_most_features_warns():
    X = _unlike_scales()
    lo, hi = X.min(), X.max()  # one pair of bounds for every feature
    with pytest.warns(UserWarning, match=r"of 6 features' released stds .* floored"):
        shared = DPStandardScaler(epsilon=1.0, bounds=(lo, hi), n_samples_budget=len(X),
                                  random_state=0).fit(X)
    # the warning tells what scale_ shows: most scales are the floor, not the data's
    floor = shared.min_scale * (hi - lo)
    assert np.sum(np.isclose(shared.scale_, floor)) > 3
    with warnings.catch_warnings():  # bounds per feature: the data set the scales
        warnings.filterwarnings("error", ".*floored")
        own = DPStandardScaler(epsilon=1.0, bounds=(X.min(0), X.max(0)),
                               n_samples_budget=len(X), random_state=0).fit(X)
    np.testing.assert_allclose(own.scale_, X.std(axis=0), rtol=0.25)


def test_the_floor_warning_follows_the_data_without_noise():
    # At epsilon = inf the release is the clipped data's own statistics: the fit warns
    # exactly where most true stds are below the floor.
    X = _unlike_scales(n=200)
    for bounds in [(X.min(), X.max()),  # one pair for all: 5 of 6 below the floor
                   (X.min(axis=0), X.max(axis=0)),  # per feature: none
                   (X.min(axis=0) - 4.0, X.max(axis=0) + 4.0)]:  # 3 of 6: not more than half
        with warnings.catch_warnings(record=True) as record:
            warnings.simplefilter("always")
            fitted = DPStandardScaler(epsilon=np.inf, bounds=bounds, random_state=0).fit(X)
        warned = any("floored" in str(w.message) for w in record)
        width = np.asarray(bounds[1]) - np.asarray(bounds[0])
        below = np.sum(np.clip(X, *bounds).std(axis=0) < fitted.min_scale * width)
        assert warned == (2 * below > 6)


def test_noise_that_swamps_the_variances_floors_without_a_warning():
    """Found by a review: the demo (breast cancer, per-feature bounds, a scaler at
    epsilon 0.5 on 398 rows) warned to give per-feature bounds. There only 5 of 30
    true stds are below the floor; the noise floors 10 to 18, and no bounds help."""
    from sklearn.datasets import load_breast_cancer
    X = load_breast_cancer(return_X_y=True)[0][:398]
    span = np.ptp(X, axis=0)
    bounds = (np.maximum(0.0, X.min(axis=0) - 0.2 * span), X.max(axis=0) + 0.2 * span)
    floor = 0.1 * (bounds[1] - bounds[0])
    for seed in range(4):
        with warnings.catch_warnings():
            warnings.filterwarnings("error", ".*floored")
            fitted = DPStandardScaler(epsilon=0.5, delta=1e-6, bounds=bounds,
                                      random_state=seed).fit(X)
        assert np.sum(np.isclose(fitted.scale_, floor)) > 30 / 4  # the floor set many
    # the same bounds with scalar width (the slip) and no noise to blame: it warns
    with pytest.warns(UserWarning, match="floored"):
        DPStandardScaler(epsilon=np.inf, bounds=(0.0, X.max()), random_state=0).fit(X)


def test_privacy_shares_add_up_to_the_spend():
    X = _rows()
    scaler = DPStandardScaler(epsilon=0.8, delta=1e-6, bounds=(-20.0, 20.0),
                              random_state=0).fit(X)
    shares = scaler.privacy_shares_
    assert shares["n_samples"].epsilon == pytest.approx(0.05 * 0.8)
    assert shares["n_samples"].delta == 0.0
    assert shares["moments"].delta == 1e-6
    assert shares["n_samples"].epsilon + shares["moments"].epsilon == pytest.approx(0.8)
    # the moments' noise is the analytic Gaussian's at their share (independent code)
    assert scaler.noise_std_ == pytest.approx(analytic_gaussian_sigma(
        shares["moments"].epsilon, 1e-6, scaler.sensitivity_), rel=1e-6)
    declared = DPStandardScaler(epsilon=0.8, bounds=(-20.0, 20.0), n_samples_budget=500,
                                random_state=0).fit(X)
    assert declared.privacy_shares_["n_samples"] is None
    assert declared.privacy_shares_["moments"].epsilon == 0.8
