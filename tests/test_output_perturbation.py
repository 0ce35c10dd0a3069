"""Output perturbation and phased output perturbation (seed 004, Algorithms 3-5)."""

import math
import warnings

import numpy as np
import pytest
from diffprivlib.accountant import BudgetAccountant
from scipy.stats import norm
from sklearn.datasets import make_classification
from sklearn.model_selection import GridSearchCV

from skdpminimax import DPAUCMaximizer
from skdpminimax.metrics import duality_gap
from skdpminimax.objectives.base import SaddleData
from skdpminimax.privacy import PrivacyBudget
from skdpminimax.solvers import (
    SOLVERS,
    CertifiedSolution,
    Extragradient,
    OutputPerturbation,
    PhasedOutputPerturbation,
    ProjectedGDA,
    SVRGExtragradient,
    resolve_solver,
)
from skdpminimax.solvers.output_perturbation import sets_extent, stability_bound
from objectives_for_tests_op import BilinearGame, make_game_data

INF = PrivacyBudget(np.inf, 1e-5)


def _gaussian_delta(sigma, sensitivity, epsilon):
    """Balle & Wang (2018, Thm. 8): exact delta of the Gaussian mechanism, computed here."""
    a = sensitivity / (2 * sigma)
    b = epsilon * sigma / sensitivity
    return norm.cdf(a - b) - math.exp(epsilon) * norm.cdf(-a - b)


@pytest.fixture(scope="module")
def game():
    rng = np.random.default_rng(0)
    M = rng.standard_normal((4, 3))
    return BilinearGame(M, radius_w=3.0, radius_v=3.0), make_game_data(400, 4, 3, rng)


class SpyBaseSolver:
    """A user's base solver (not a BaseEstimator): records its calls, delegates to EG."""

    def __init__(self, lie=False, calls=None):
        self.calls = [] if calls is None else calls
        self.lie = lie

    def __deepcopy__(self, memo):
        # The engine runs a copy per solve (and per phase); the copies share one log.
        return SpyBaseSolver(self.lie, self.calls)

    def solve_saddle(self, objective, data, tol, *, init=None, rng=None):
        self.calls.append({"objective": objective, "X": data.X.copy(), "tol": tol,
                           "init": None if init is None else (init[0].copy(), init[1].copy())})
        if self.lie:  # claims certification of an arbitrary point
            w, v = objective.init_params()
            return CertifiedSolution(w, v, 0.0, 0.0, 0, 0)
        return Extragradient().solve_saddle(objective, data, tol, init=init, rng=rng)


# ---- Algorithm 3 ---------------------------------------------------------------------
@pytest.mark.parametrize("base", [None, Extragradient(), ProjectedGDA(), SVRGExtragradient()])
def test_infinite_epsilon_reaches_sc_sc_saddle(game, base):
    objective, data = game
    sc = BilinearGame(objective.M, radius_w=3.0, radius_v=3.0, mu_w=0.7, mu_v=1.3)
    ws, vs = sc.unconstrained_saddle(data)
    solver = OutputPerturbation(base_solver=base)
    res = solver.solve(sc, data, INF, np.random.default_rng(0))
    radius = math.sqrt(res.info["target"] / 0.7)  # certified weighted target -> distance
    dist = math.sqrt(np.sum((res.w - ws) ** 2) + np.sum((res.v - vs) ** 2))
    assert dist <= radius and res.info["sigma_w"] == 0.0 and res.n_iter == 1


def test_infinite_epsilon_reaches_regularised_bilinear_saddle(game):
    objective, data = game
    reg = objective.regularized(0.4)
    ws, vs = objective.unconstrained_saddle(data, 0.4, 0.4)
    res = OutputPerturbation().solve(reg, data, INF, np.random.default_rng(1))
    dist = math.sqrt(np.sum((res.w - ws) ** 2) + np.sum((res.v - vs) ** 2))
    assert dist <= math.sqrt(res.info["target"] / 0.4)


def test_sigma_matches_independent_formulas(game):
    objective, data = game
    reg = objective.regularized(0.5, 0.25)
    n, rho, eps, delta = data.n_samples, 0.1, 0.8, 1e-6
    M_norm = np.linalg.norm(objective.M, 2)
    g_w, g_v = 1 + 3.0 * M_norm, 1 + 3.0 * M_norm
    q_stab = 4 / n**2 * (g_w**2 / 0.5 + g_v**2 / 0.25)
    sens = (1 + 2 * rho) * math.sqrt(q_stab)
    res = OutputPerturbation(accuracy_ratio=rho).solve(reg, data, PrivacyBudget(eps, delta),
                                                       np.random.default_rng(2))
    assert res.info["sensitivity"] == pytest.approx(sens, rel=1e-12)
    sigma = res.info["sigma_w"] * math.sqrt(0.5)
    assert res.info["sigma_v"] * math.sqrt(0.25) == pytest.approx(sigma)
    assert _gaussian_delta(sigma, sens, eps) <= delta * (1 + 1e-6)  # private
    assert _gaussian_delta(0.98 * sigma, sens, eps) > delta  # and tight
    # For epsilon < 1 it is below the classical sqrt(2 log(1.25/delta)) calibration.
    assert sigma <= sens * math.sqrt(2 * math.log(1.25 / delta)) / eps


def test_stability_bound_holds_on_neighbouring_datasets(game):
    objective, data = game
    lam = 0.3
    q_stab = stability_bound(objective.regularized(lam), data.n_samples)
    ws, vs = objective.unconstrained_saddle(data, lam, lam)
    for row in ([1, 0, 0, 0, -1, 0, 0], [0, 0, 0, -1, 0, 0, 1], [0.6, 0.8, 0, 0, 0, 0.6, 0.8]):
        X = data.X.copy()
        X[0] = row
        w2, v2 = objective.unconstrained_saddle(SaddleData(X), lam, lam)
        assert lam * (np.sum((w2 - ws) ** 2) + np.sum((v2 - vs) ** 2)) <= q_stab


def test_user_base_solver_is_recertified_not_trusted(game):
    objective, data = game
    reg = objective.regularized(0.5)
    ws, vs = objective.unconstrained_saddle(data, 0.5, 0.5)
    liar = SpyBaseSolver(lie=True)
    res = OutputPerturbation(base_solver=liar).solve(reg, data, INF, np.random.default_rng(0))
    assert len(liar.calls) == 1
    # The engine noticed the false claim and kept solving until its own certificate held.
    dist = math.sqrt(np.sum((res.w - ws) ** 2) + np.sum((res.v - vs) ** 2))
    assert dist <= math.sqrt(res.info["target"] / 0.5) and dist < 1e-2
    spy = SpyBaseSolver()
    res = OutputPerturbation(base_solver=spy, accuracy_ratio=0.2).solve(
        reg, data, PrivacyBudget(1.0, 1e-5), np.random.default_rng(0))
    # tol handed over = sqrt(rho^2 Q_stab / max mu)
    assert spy.calls[0]["tol"] == pytest.approx(math.sqrt(0.04 * stability_bound(reg, 400) / 0.5))


class EditsInPlace:
    """A base solver that edits what it is given: the data, the objective and the
    start (a buggy in-place normalisation), then solves its edited problem."""

    def solve_saddle(self, objective, data, tol, *, init=None, rng=None):
        for edit in (lambda: data.X.__setitem__(slice(None), 0.0),
                     lambda: objective.M.__setitem__(slice(None), 0.0),
                     lambda: init[0].__setitem__(slice(None), 1.0)):
            try:
                edit()
            except ValueError:  # read-only: the edit is refused, the solver goes on
                pass
        return Extragradient().solve_saddle(objective, data, tol, init=init, rng=rng)


def test_a_base_solver_cannot_edit_the_problem_the_release_is_certified_on(game):
    """A privacy review: the base solver got the engine's own data and objective, and
    the engine certified on what the solver had edited (a release whose sensitivity
    was no longer the stated one). It now gets read-only data and its own copies."""
    objective, data = game
    reg = objective.regularized(0.5)
    M_before, X_before = reg.base.M.copy(), data.X.copy()
    res = OutputPerturbation(base_solver=EditsInPlace()).solve(reg, data, INF,
                                                               np.random.default_rng(0))
    np.testing.assert_array_equal(reg.base.M, M_before)
    np.testing.assert_array_equal(data.X, X_before)
    ws, vs = objective.unconstrained_saddle(data, 0.5, 0.5)
    dist = math.sqrt(np.sum((res.w - ws) ** 2) + np.sum((res.v - vs) ** 2))
    assert dist <= math.sqrt(res.info["target"] / 0.5)


def test_the_calibration_records_how_many_releases_an_example_is_in(game):
    """What an auditor composes: ``n_compositions`` Gaussians at the multiplier are
    (epsilon, delta)-DP (k of multiplier z are one of z / sqrt(k), exactly)."""
    objective, data = game
    budget = PrivacyBudget(1.0, 1e-5)
    csc = BilinearGame(objective.M, radius_w=3.0, radius_v=3.0, mu_v=2.0)
    for solver, obj, k in ((OutputPerturbation(), objective.regularized(0.5), 1),
                           (PhasedOutputPerturbation(), objective, 2),
                           (PhasedOutputPerturbation(), csc, 1)):
        cal = solver.calibrate(obj, data.n_samples, budget)
        assert cal.n_compositions == k and cal.n_steps >= k
        z = cal.noise_multiplier
        assert _gaussian_delta(z, math.sqrt(k), 1.0) <= 1e-5 * (1 + 1e-6)
        assert _gaussian_delta(z, math.sqrt(k + 1), 1.0) > 1e-5  # one more would not be


def test_needs_strong_convexity_before_any_release(game):
    objective, data = game
    with pytest.raises(ValueError, match="strongly-convex-strongly-concave"):
        OutputPerturbation().calibrate(objective, data.n_samples, INF)


# ---- Algorithms 4 and 5, Section 4.3 ---------------------------------------------------
def test_phases_see_only_released_outputs_and_right_budget(game):
    objective, data = game
    spy = SpyBaseSolver()
    eps, delta = 2.0, 1e-5
    res = PhasedOutputPerturbation(base_solver=spy, variant="convex-concave").solve(
        objective, data, PrivacyBudget(eps, delta), np.random.default_rng(3))
    K = int(math.floor(math.log2(data.n_samples)))
    phases, mu = res.info["phases"], res.info["mu"]
    assert len(spy.calls) == len(phases) == 2 * K and res.n_iter == 2 * K
    assert res.info["n_passes"] == 2
    for which, offset in (("primal", 0), ("dual", K)):
        rows = np.concatenate([spy.calls[offset + j]["X"] for j in range(K)])
        assert len(np.unique(rows, axis=0)) == data.n_samples  # disjoint chunks covering S
        for j in range(K):
            call, rec = spy.calls[offset + j], phases[offset + j]
            obj = call["objective"]
            lam_k = mu * 2.0 ** (j + 1)
            if which == "primal":
                assert (obj.lam_w, obj.lam_v) == pytest.approx((lam_k, mu))
                centre, start = obj.center_w, call["init"][0]
                assert not np.any(obj.center_v)
            else:
                assert (obj.lam_w, obj.lam_v) == pytest.approx((mu, lam_k))
                centre, start = obj.center_v, call["init"][1]
            S = objective.primal_set if which == "primal" else objective.dual_set
            prev = (objective.init_params()[0 if which == "primal" else 1] if j == 0
                    else phases[offset + j - 1]["released"])
            np.testing.assert_array_equal(centre, S.project(prev))  # only the noisy release
            np.testing.assert_array_equal(start, S.project(prev))
            expected_sigma = rec["sensitivity"] * PhasedOutputPerturbation().calibrate(
                objective, data.n_samples, PrivacyBudget(eps, delta)).noise_multiplier
            assert rec["sigma"] == pytest.approx(expected_sigma)
            # Each example is in one release of each pass: two Gaussians at this
            # multiplier compose to one of sqrt(2) times the sensitivity (exactly).
            assert _gaussian_delta(rec["sigma"], math.sqrt(2) * rec["sensitivity"],
                                   eps) <= delta * (1 + 1e-6)
            # and the noise is below what basic composition of (eps/2, delta/2) needed
            assert _gaussian_delta(rec["sigma"], rec["sensitivity"], eps / 2) > delta / 2


def test_convex_strongly_concave_variant_spends_all_on_primal(game):
    objective, data = game
    csc = BilinearGame(objective.M, radius_w=3.0, radius_v=3.0, mu_v=2.0)
    spy = SpyBaseSolver()
    solver = PhasedOutputPerturbation(base_solver=spy)
    res = solver.solve(csc, data, PrivacyBudget(1.0, 1e-5), np.random.default_rng(0))
    K = int(math.floor(math.log2(data.n_samples)))
    assert res.info["variant"] == "convex-strongly-concave" and len(spy.calls) == K
    assert res.info["n_passes"] == 1
    z = solver.calibrate(csc, data.n_samples, PrivacyBudget(1.0, 1e-5)).noise_multiplier
    assert _gaussian_delta(z, 1.0, 1.0) == pytest.approx(1e-5, rel=1e-6)  # all on the primal
    assert all(c["objective"].lam_v == 0.0 for c in spy.calls)
    np.testing.assert_array_equal(res.v, csc.init_params()[1])  # v is not released from data


def test_phased_infinite_epsilon_gap_shrinks_with_n():
    rng = np.random.default_rng(0)
    objective = BilinearGame(rng.standard_normal((4, 3)), radius_w=1.0, radius_v=1.0)
    gaps = []
    for n in (100, 1600):
        data = make_game_data(n, 4, 3, rng)
        res = PhasedOutputPerturbation(variant="convex-concave").solve(
            objective, data, INF, np.random.default_rng(1))
        gaps.append(duality_gap(objective, data, res.w, res.v).upper)
    assert gaps[1] < 0.5 * gaps[0] and gaps[1] < 0.05


# ---- estimator integration ------------------------------------------------------------
def test_registered_and_selectable_by_name():
    assert isinstance(resolve_solver("output_perturbation"), OutputPerturbation)
    assert isinstance(resolve_solver("phased_output_perturbation"), PhasedOutputPerturbation)


@pytest.fixture(scope="module")
def auc_data():
    return make_classification(n_samples=300, n_features=5, random_state=0)


@pytest.mark.parametrize("name", sorted(SOLVERS))
def test_every_solver_on_auc_maximizer(auc_data, name):
    X, y = auc_data
    model = DPAUCMaximizer(epsilon=np.inf, data_norm=3.0, pos_ratio=0.5, alpha=0.5,
                           radius=2.0, solver=name, random_state=0).fit(X, y)
    assert model.score(X, y) > 0.7
    assert np.all(np.isfinite(model.coef_))


def test_grid_search_over_solver_names(auc_data):
    X, y = auc_data
    acc = BudgetAccountant()
    search = GridSearchCV(
        DPAUCMaximizer(epsilon=1.0, data_norm=3.0, pos_ratio=0.5, alpha=0.5, radius=2.0,
                       accountant=acc, random_state=0),
        {"solver": sorted(SOLVERS)}, cv=2, scoring="roc_auc")
    search.fit(X, y)
    assert set(search.cv_results_["param_solver"]) == set(SOLVERS)
    assert np.all(np.isfinite(search.cv_results_["mean_test_score"]))


def test_auc_without_regularisation_fails_before_spending(auc_data):
    X, y = auc_data
    acc = BudgetAccountant()
    with pytest.raises(ValueError, match="alpha"):
        DPAUCMaximizer(epsilon=1.0, data_norm=3.0, pos_ratio=0.5, alpha=0.0,
                       solver="output_perturbation", accountant=acc).fit(X, y)
    assert acc.total() == (0, 0)


def test_user_base_solver_returning_nan_is_recovered(game):
    objective, data = game
    reg = objective.regularized(0.5)
    ws, vs = objective.unconstrained_saddle(data, 0.5, 0.5)

    class Broken:
        def solve_saddle(self, objective, data, tol, *, init=None, rng=None):
            return CertifiedSolution(np.full(4, np.nan), np.full(3, np.nan), 0.0, 0.0, 0, 0)

    res = OutputPerturbation(base_solver=Broken()).solve(reg, data, INF, np.random.default_rng(0))
    dist = math.sqrt(np.sum((res.w - ws) ** 2) + np.sum((res.v - vs) ** 2))
    assert dist <= math.sqrt(res.info["target"] / 0.5)


def test_release_is_projected_onto_the_sets(game):
    """Huge noise (tiny epsilon) must still give a feasible point; noise-free runs unchanged."""
    objective, data = game
    sc = BilinearGame(objective.M, radius_w=0.5, radius_v=0.5, mu_w=0.7, mu_v=1.3)
    res = OutputPerturbation().solve(sc, data, PrivacyBudget(1e-3, 1e-6), np.random.default_rng(3))
    assert res.info["sigma_w"] > 10 * 0.5  # the unprojected release would leave the ball
    assert np.linalg.norm(res.w) <= 0.5 + 1e-12 and np.linalg.norm(res.v) <= 0.5 + 1e-12
    assert np.linalg.norm(res.w) == pytest.approx(0.5)  # it was projected, not clipped to 0


class _GivesUp:
    """A base solver that raises CertificationError, as the built-in ones do at max_iter."""

    def solve_saddle(self, objective, data, tol, *, init=None, rng=None):
        from skdpminimax.solvers.base_solvers import CertificationError

        raise CertificationError("gave up")


def test_a_base_solver_that_gives_up_falls_back_to_extragradient(game):
    """The budget is spent when the base solver runs: Extragradient tries from the start
    point, and the certificate is checked on its point; if Extragradient gives up too,
    the a-priori continuation releases a point within the target (never an error)."""
    objective, data = game
    sc = BilinearGame(objective.M, radius_w=3.0, radius_v=3.0, mu_w=0.7, mu_v=1.3)
    res = OutputPerturbation(base_solver=_GivesUp()).solve(sc, data, INF,
                                                           np.random.default_rng(0))
    ref = OutputPerturbation(base_solver=Extragradient()).solve(sc, data, INF,
                                                                np.random.default_rng(0))
    # both certified to the same target around the same saddle point (noise-free)
    ws, vs = sc.unconstrained_saddle(data)
    radius = math.sqrt(res.info["target"] / 0.7)
    for out in (res, ref):
        assert np.linalg.norm(out.w - ws) <= radius + 1e-9
    assert not res.diagnostics["a_priori_fallback"]
    # Extragradient itself giving up: not retried (same engine), the a-priori solve runs
    out = OutputPerturbation(base_solver=Extragradient(max_iter=1)).solve(
        sc, data, INF, np.random.default_rng(0))
    assert out.diagnostics["a_priori_fallback"]
    assert np.linalg.norm(out.w - ws) <= radius + 1e-9


def test_noise_larger_than_the_set_warns_and_no_noise_does_not():
    """A user-style probe: on breast cancer at epsilon = 1 the release's noise (std
    ~1e5 per coordinate) dwarfed the radius-10 ball, so the model was a random point of
    it (test AUC 0.17-0.75 by seed, the same at epsilon 1, 5 and 100), silently."""
    import warnings

    from sklearn.datasets import load_breast_cancer
    from sklearn.preprocessing import StandardScaler

    from skdpminimax import DPAUCMaximizer
    X, y = load_breast_cancer(return_X_y=True)
    X = StandardScaler().fit_transform(X)

    def fit(epsilon):
        return DPAUCMaximizer(epsilon=epsilon, data_norm=5.5, pos_ratio=0.63,
                              solver="output_perturbation", random_state=0).fit(X, y)

    with pytest.warns(UserWarning, match="larger than the primal set"):
        fit(1.0)
    with warnings.catch_warnings():
        warnings.filterwarnings("error", "Output perturbation's noise")
        fit(np.inf)



def test_phased_noise_larger_than_a_typical_solution_warns():
    """A probe: the phased release on breast cancer had its first phase's noise at std
    ~7 per coordinate (about 40 in norm, the AUC objective's typical solution ~0.9)
    and ranked at 0.19-0.84 by seed, at epsilon 1, 10 and 100 alike, silently (its
    last phase's noise, 0.06, was the one checked, and only against the set)."""
    import warnings

    from sklearn.datasets import load_breast_cancer
    from sklearn.preprocessing import StandardScaler

    X, y = load_breast_cancer(return_X_y=True)
    X = StandardScaler().fit_transform(X)

    def fit(epsilon):
        return DPAUCMaximizer(epsilon=epsilon, data_norm=2 * math.sqrt(30), pos_ratio=0.63,
                              solver="phased_output_perturbation", random_state=0).fit(X, y)

    with pytest.warns(UserWarning, match="larger than a typical solution") as record:
        model = fit(10.0)
    first = model.solver_info_["sigma_w_first_phase"]
    assert any(f"{first:.3g} per coordinate" in str(w.message) for w in record)
    with warnings.catch_warnings():
        warnings.filterwarnings("error", "Output perturbation's noise")
        fit(np.inf)

def test_without_noise_output_perturbation_fits_the_data():
    """A probe caught a reverted change: stopping the base solvers at the weighted
    target the release rests on returned the public start point (all-zero
    coefficients) on small data, since that target does not shrink with epsilon and
    can exceed the set. Without noise the release must be a fitted model."""
    import warnings

    from sklearn.datasets import load_breast_cancer
    from sklearn.metrics import roc_auc_score
    from sklearn.preprocessing import StandardScaler

    X, y = load_breast_cancer(return_X_y=True)
    X = StandardScaler().fit_transform(X)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        est = DPAUCMaximizer(epsilon=np.inf, data_norm=8.0, solver="output_perturbation",
                             random_state=0, accountant=BudgetAccountant()).fit(X, y)
    assert np.any(est.coef_ != 0)
    assert roc_auc_score(y, est.decision_function(X)) > 0.95


def test_phased_output_perturbation_reports_its_released_noise():
    """A probe: the docs said to read the release's noise and target from solver_info_,
    which held only the variant for the phased solver (its per-phase list is dropped)."""
    import warnings

    X, y = make_classification(n_samples=300, n_features=4, random_state=0)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        est = DPAUCMaximizer(epsilon=1.0, data_norm=4.0, pos_ratio=0.5, alpha=0.1,
                             solver="phased_output_perturbation", random_state=0,
                             accountant=BudgetAccountant()).fit(X, y)
    info = est.solver_info_
    assert info["sigma_w"] > 0 and info["sensitivity"] > 0
    assert info["sigma_w"] == pytest.approx(est.calibration_.noise_multiplier
                                            * info["sensitivity"])
    # The first phase's noise, which moves every later centre, is reported too: it
    # is the largest (a probe found only the last phase's reported).
    assert info["sigma_w_first_phase"] > info["sigma_w"]


def test_a_loose_solve_meets_the_weighted_target_and_its_fallback_too(game):
    """certified_solve(loose=True) asks the base solvers for the weighted target itself
    (Euclidean sqrt(target / min mu)); what it returns is still within the target, also
    where the base solvers give up and the a-priori solve (proved for Euclidean
    distances, so run at sqrt(target / max mu)) takes over."""
    from skdpminimax.solvers.certificates import certify
    from skdpminimax.solvers.output_perturbation import certified_solve

    objective, data = game
    sc = BilinearGame(objective.M, radius_w=3.0, radius_v=3.0, mu_w=0.01, mu_v=2.0)
    target = 0.2 * stability_bound(sc, data.n_samples)
    for base in (Extragradient(), Extragradient(max_iter=1)):
        out = {}
        for loose in (False, True):
            w, v, diag = certified_solve(base, sc, data, target, None,
                                         np.random.default_rng(0), loose=loose)
            assert certify(sc, data, w, v).weighted <= target
            out[loose] = diag
        assert out[True]["n_grad_evals"] <= out[False]["n_grad_evals"]
    # the fallback really ran in the second case, and stayed within the target
    assert out[True]["a_priori_fallback"]


def test_a_release_drowned_in_noise_does_not_solve_past_its_target():
    """A user-style probe: output perturbation on breast cancer (alpha 1e-4) solved for
    30 s although its noise (std ~1e5) filled the set: the base solvers were asked for
    the Euclidean distance sqrt(target / max mu), 2,000 times tighter in squared terms
    than the weighted target the release rests on. Where the noise drowns the primal
    set (ten diameters per coordinate) they are asked for the target itself; without
    noise nothing changes (the release is then the solution:
    test_without_noise_output_perturbation_fits_the_data)."""
    import warnings

    from sklearn.datasets import load_breast_cancer
    from sklearn.preprocessing import StandardScaler

    X, y = load_breast_cancer(return_X_y=True)
    X = StandardScaler().fit_transform(X)
    calls = []
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        est = DPAUCMaximizer(epsilon=1.0, data_norm=10.0, solver=OutputPerturbation(
            base_solver=SpyBaseSolver(calls=calls)), random_state=0,
            accountant=BudgetAccountant()).fit(X, y)
    (call,) = calls
    mu_w, mu_v = call["objective"].strong_convexity()
    target = est.solver_info_["target"]
    assert mu_w < mu_v
    assert call["tol"] == pytest.approx(math.sqrt(target / mu_w))


def test_a_drowned_release_whose_target_covers_the_sets_is_not_solved():
    """A review: DPRobustClassifier(solver="output_perturbation") with three groups on
    500 rows took 131 s at epsilon 1: its target covered the sets (every point meets
    it) and its noise drowned them, but the certificate at the start (an upper bound,
    2.4 against the target 0.58) did not show it, so the engines ran to their caps.
    The start is now released as it is (without noise the solve still runs:
    test_without_noise_output_perturbation_fits_the_data)."""
    import warnings

    from skdpminimax import DPRobustClassifier

    rng = np.random.default_rng(0)
    X = rng.normal(size=(500, 5)) / np.sqrt(5)
    y = (X[:, 0] + 0.2 * rng.normal(size=500) > 0).astype(int)
    groups = rng.integers(0, 3, 500)
    calls = []
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        est = DPRobustClassifier(
            epsilon=1.0, data_norm=3.0, random_state=0,
            solver=OutputPerturbation(base_solver=SpyBaseSolver(calls=calls)),
            accountant=BudgetAccountant()).fit(X, y, sensitive_features=groups)
    assert calls == []
    assert est.solver_info_["target"] >= sets_extent(est.objective_)


def test_a_target_larger_than_the_sets_warns_even_without_noise():
    """An extreme-settings probe: DPGroupFairRegressor with output perturbation at
    epsilon=inf returned an all-zero model silently (its target, 2.6e4, exceeded the
    sets' extent, 0.24)."""
    import warnings

    from sklearn.datasets import make_regression

    from skdpminimax import DPGroupFairRegressor

    X, y = make_regression(200, 5, noise=1.0, random_state=0)
    groups = np.arange(200) % 3
    est = DPGroupFairRegressor(epsilon=np.inf, bounds=(-300, 300), data_norm=5.0,
                               solver="output_perturbation", random_state=0)
    with pytest.warns(UserWarning, match="accuracy target .* exceeds the sets' whole extent"):
        est.fit(X, y, sensitive_features=groups)
    # a well-regularised large fit: the target is small, no such warning
    X, y = make_regression(5000, 5, noise=1.0, random_state=0)
    est.set_params(alpha=1.0, data_norm=float(np.linalg.norm(X, axis=1).max()))
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        est.fit(X, y, sensitive_features=np.arange(5000) % 3)
    assert not [w for w in caught if "exceeds the sets' whole extent" in str(w.message)]


def test_phased_warns_when_its_phase_targets_cover_the_sets():
    """With a tiny user mu every phase's accuracy target exceeded its sets' extent:
    each phase released its centre plus noise, and at epsilon=inf the model scored
    R^2 -0.01, silently. mu='auto' on the same data does not warn."""
    import warnings

    from sklearn.datasets import make_regression

    from skdpminimax import DPGroupFairRegressor

    X, y = make_regression(200, 5, noise=1.0, random_state=0)
    groups = np.arange(200) % 3

    def fit(mu):
        return DPGroupFairRegressor(
            epsilon=np.inf, bounds=(-300, 300), data_norm=5.0, random_state=0,
            solver=PhasedOutputPerturbation(mu=mu)).fit(X, y, sensitive_features=groups)

    with pytest.warns(UserWarning, match=r"in 14 of 14 phases .* exceeds the phase's sets"):
        fit(1e-3)
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        fit("auto")
    assert not [w for w in caught if "whole extent" in str(w.message)]


def test_a_noise_free_release_of_the_start_warns():
    """A user review: at epsilon = inf output perturbation returned the untrained start
    (coefficients 0, AUC 0.5) silently, its target (rho^2 Q_stab, whatever epsilon)
    being met there. Without noise the fit now says so; with a target tight enough to
    move, it does not."""
    X, y = make_classification(2000, 20, n_informative=10, random_state=0, weights=[0.9])
    X = (X - X.mean(axis=0)) / X.std(axis=0)
    params = dict(epsilon=np.inf, alpha=0.1, data_norm=9.0, random_state=0)
    with pytest.warns(UserWarning, match="met at the public start"):
        model = DPAUCMaximizer(solver=OutputPerturbation(), accountant=BudgetAccountant(),
                               **params).fit(X, y)
    assert not model.coef_.any()
    with warnings.catch_warnings():
        warnings.simplefilter("error", UserWarning)
        tight = DPAUCMaximizer(solver=OutputPerturbation(accuracy_ratio=0.01),
                               accountant=BudgetAccountant(), **params).fit(X, y)
    assert tight.coef_.any()


class RandomStart(BilinearGame):
    """A start drawn from the generator it is given (public: data-free)."""

    def init_params(self, rng=None):
        rng = np.random.default_rng() if rng is None else rng  # unseeded without one
        return rng.uniform(-1, 1, self.dw), rng.uniform(-1, 1, self.dv)


@pytest.mark.parametrize("solver", [OutputPerturbation, PhasedOutputPerturbation])
def test_a_random_start_is_drawn_from_the_fits_generator(game, solver):
    """A review: output perturbation called init_params() without the fit's generator,
    so a random start made two fits with one seed differ."""
    objective, data = game
    random_start = RandomStart(objective.M, radius_w=3.0, radius_v=3.0)
    if solver is OutputPerturbation:
        random_start = random_start.regularized(0.5)
    budget = PrivacyBudget(1.0, 1e-5)
    runs = [solver().solve(random_start, data, budget, np.random.default_rng(seed))
            for seed in (4, 4, 5)]
    np.testing.assert_array_equal(runs[0].w, runs[1].w)
    np.testing.assert_array_equal(runs[0].v, runs[1].v)
    assert not np.array_equal(runs[0].w, runs[2].w)


@pytest.mark.parametrize("solver", ["output_perturbation", "phased_output_perturbation"])
@pytest.mark.parametrize("data_norm", [1e100, 1e-300])
def test_constants_out_of_float_range_are_refused_before_the_spend(solver, data_norm):
    """A fuzzing review: data_norm 1e100 (accepted up to 1e150) made the phased solve
    raise OverflowError after its spend, and 1e-300 made the accuracy target 0, which
    the fallback refused after the spend (1e-160 ran for minutes). The stability bound,
    target and noise are now checked in float64 before anything is spent."""
    rng = np.random.default_rng(0)
    X = rng.normal(size=(60, 3))
    y = (X[:, 0] > 0).astype(int)
    ledger = BudgetAccountant()
    model = DPAUCMaximizer(epsilon=1.0, data_norm=data_norm, solver=solver,
                           accountant=ledger, random_state=0)
    with pytest.raises(ValueError, match="cannot plan a release in float64.*Nothing was spent"):
        model.fit(X, y)
    assert ledger.spent_budget == []
