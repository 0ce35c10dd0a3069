"""Gradient-perturbation engine: NSEG, NISPP, recursive regularization, disjoint batches."""

import math

import dp_accounting
import numpy as np
import pytest
from dp_accounting import pld, rdp
from sklearn.datasets import make_classification
from sklearn.model_selection import GridSearchCV

from objectives_for_tests import BilinearGame, StronglyMonotoneQuadratic, make_linear_data
from privacy_reference import analytic_gaussian_sigma as reference_gaussian_sigma
from privacy_reference import gdp_mu
from skdpminimax import DPAUCMaximizer
from skdpminimax.objectives.base import RegularizedObjective, SaddleData
from skdpminimax.privacy import (
    PrivacyBudget,
    calibrate_noise_multiplier,
    certified_epsilon,
    make_sampler,
)
from skdpminimax.privacy.calibration import analytic_gaussian_sigma
from skdpminimax.solvers import (
    SOLVERS,
    NoisyExtragradient,
    NoisyInexactProximalPoint,
    NoisySGDA,
    RecursiveRegularization,
    SolverResult,
)

A = np.array([[1.0, 0.5], [-0.3, 0.8]])
NO_PRIVACY = PrivacyBudget(np.inf, 1e-5)
UNCLIPPED = {"clip_w": None, "clip_v": None}  # clip at the certified bounds: a no-op


@pytest.fixture(scope="module")
def data():
    return make_linear_data(2000, 2, np.random.default_rng(0))


def _problems():
    return [StronglyMonotoneQuadratic(A, 2.0, mu=1.0), BilinearGame(A, 2.0)]


def _distance(result, objective, data):
    w_star, v_star = objective.saddle_point(data)
    return math.hypot(np.linalg.norm(result.w - w_star), np.linalg.norm(result.v - v_star))


# ---- epsilon = inf: convergence to the known saddle point ---------------------
SOLVER_CASES = {
    "nseg_single": (NoisyExtragradient(batch_size=1, **UNCLIPPED), 0.05),
    "nseg_multi_full": (NoisyExtragradient(mode="multi_pass", batch_size=None, n_iter=1500,
                                           step_size=0.4, **UNCLIPPED), 0.01),
    "nseg_multi_sampled": (NoisyExtragradient(mode="multi_pass", batch_size=32, n_iter=1500,
                                              step_size=0.3, **UNCLIPPED), 0.02),
    "nispp_single": (NoisyInexactProximalPoint(batch_size=20, prox_weight=2.0, **UNCLIPPED),
                     0.06),
    "nispp_multi": (NoisyInexactProximalPoint(mode="multi_pass", batch_size=100, n_iter=200,
                                              prox_weight=1.0, **UNCLIPPED), 0.01),
    "recursive_eg": (RecursiveRegularization(
        NoisyExtragradient(mode="multi_pass", batch_size=None, n_iter=600, **UNCLIPPED),
        reg_constant=0.1), 0.02),
    "recursive_sgda": (RecursiveRegularization(
        NoisySGDA(sampler="without_replacement", batch_size=None, n_iter=400, step_size=0.2,
                  **UNCLIPPED), reg_constant=0.1), 0.05),
}


def _gaussian_sigma(epsilon, delta):
    """dp_accounting's closed form of one Gaussian mechanism (``get_sigma_gaussian``, new
    in dp-accounting 0.6); before 0.6 the tests' own (privacy_reference)."""
    get_sigma = getattr(dp_accounting, "get_sigma_gaussian", None)
    if get_sigma is None:
        return reference_gaussian_sigma(epsilon, delta, 1.0)
    return get_sigma(epsilon, delta)


@pytest.mark.parametrize("problem", _problems(), ids=["scsc_quadratic", "bilinear"])
@pytest.mark.parametrize("case", sorted(SOLVER_CASES))
def test_reaches_reference_saddle_point_without_noise(case, problem, data):
    solver, tol = SOLVER_CASES[case]
    start = _distance(SolverResult(*problem.init_params(), n_iter=0), problem, data)
    result = solver.solve(problem, data, NO_PRIVACY, np.random.default_rng(1))
    assert result.calibration.noise_multiplier == 0.0
    assert _distance(result, problem, data) < tol < start


# ---- DisjointBatches and parallel composition --------------------------------
def test_disjoint_batches_cover_each_example_at_most_once():
    sampler = make_sampler("disjoint", 103, 10)
    batches = list(sampler.batches(np.random.default_rng(0), 10))
    flat = np.concatenate(batches)
    assert len(flat) == 100 == len(np.unique(flat))
    assert sampler.releases_per_example(10) == 1
    with pytest.raises(ValueError, match="disjoint batches"):
        sampler.releases_per_example(11)
    # Other samplers let one example touch every step.
    assert make_sampler("without_replacement", 103, 10).releases_per_example(7) == 7


@pytest.mark.parametrize("epsilon", [0.5, 1.0, 4.0])
def test_single_pass_nseg_costs_one_gaussian_release(epsilon):
    objective = StronglyMonotoneQuadratic(A, 2.0)
    solver = NoisyExtragradient(batch_size=5)
    cal = solver.calibrate(objective, 1000, PrivacyBudget(epsilon, 1e-5))
    assert cal.n_steps == 2 * (1000 // 10) and cal.n_compositions == 1
    assert cal.epsilon <= epsilon
    # Independent closed forms of one Gaussian mechanism (multiplier = sigma / sensitivity).
    assert cal.noise_multiplier == pytest.approx(_gaussian_sigma(epsilon, 1e-5),
                                                 rel=5e-3)
    assert cal.noise_multiplier == pytest.approx(analytic_gaussian_sigma(epsilon, 1e-5, 1.0),
                                                 rel=5e-3)


def test_multi_pass_nseg_composes_two_releases_per_iteration():
    objective = StronglyMonotoneQuadratic(A, 2.0)
    solver = NoisyExtragradient(mode="multi_pass", batch_size=20, n_iter=50)
    cal = solver.calibrate(objective, 1000, PrivacyBudget(1.0, 1e-5))
    assert cal.n_steps == cal.n_compositions == 100 and cal.accounting == "rdp"

    def rdp_epsilon(z, count):  # built here, independently of the library
        acc = rdp.RdpAccountant(neighboring_relation=dp_accounting.NeighboringRelation.REPLACE_ONE)
        acc.compose(dp_accounting.SelfComposedDpEvent(
            dp_accounting.SampledWithoutReplacementDpEvent(
                1000, 20, dp_accounting.GaussianDpEvent(z)), count))
        return acc.get_epsilon(1e-5)

    z = cal.noise_multiplier
    assert rdp_epsilon(z, 100) <= 1.0 < rdp_epsilon(0.99 * z, 100)
    assert rdp_epsilon(z, 50) < 0.9  # counting only T releases would under-noise


def test_poisson_nseg_calibration_matches_independent_pld():
    objective = StronglyMonotoneQuadratic(A, 2.0)
    solver = NoisyExtragradient(mode="multi_pass", sampler="poisson", batch_size=50, n_iter=40)
    cal = solver.calibrate(objective, 2000, PrivacyBudget(1.0, 1e-6))
    acc = pld.PLDAccountant(value_discretization_interval=1e-4)
    acc.compose(dp_accounting.SelfComposedDpEvent(dp_accounting.PoissonSampledDpEvent(
        0.025, dp_accounting.GaussianDpEvent(cal.noise_multiplier)), 80))
    assert acc.get_epsilon(1e-6) == pytest.approx(1.0, abs=0.01)
    assert cal.neighboring_relation == "add/remove-one"


FAST_SGDA = NoisySGDA(batch_size=None, n_iter=20)  # full batch: replace-one, PLD


@pytest.mark.parametrize("solver", [NoisyExtragradient(), NoisyInexactProximalPoint(),
                                    RecursiveRegularization(FAST_SGDA)],
                         ids=["nseg", "nispp", "rr"])
def test_calibration_is_invariant_to_the_data(solver):
    objective = StronglyMonotoneQuadratic(A, 2.0)
    budget = PrivacyBudget(1.0, 1e-5)
    expected = solver.calibrate(objective, 600, budget)
    assert expected.epsilon <= 1.0
    for seed, mean in [(1, 0.3), (2, -0.9)]:
        rng = np.random.default_rng(seed)
        d = make_linear_data(600, 2, rng, mean_x=np.full(2, mean), spread=0.5)
        assert solver.solve(objective, d, budget, rng).calibration == expected


# ---- NISPP: a-priori inner solve, sensitivity, compositions -------------------
def test_nispp_compositions_and_noise_scale(data):
    objective = StronglyMonotoneQuadratic(A, 2.0)
    budget = PrivacyBudget(1.0, 1e-5)
    single = NoisyInexactProximalPoint(batch_size=20).calibrate(objective, 2000, budget)
    assert single.n_steps == 100 and single.n_compositions == 1
    assert single.noise_multiplier == pytest.approx(
        _gaussian_sigma(1.0, 1e-5), rel=5e-3)
    # Full batches: K + 1 Gaussian releases compose to one Gaussian with multiplier
    # z / sqrt(K + 1), a closed form independent of the accountant.
    multi = NoisyInexactProximalPoint(mode="multi_pass", batch_size=2000, n_iter=30)
    cal = multi.calibrate(objective, 2000, budget)
    assert cal.n_compositions == 30 and cal.epsilon <= 1.0
    assert cal.noise_multiplier == pytest.approx(
        math.sqrt(30) * _gaussian_sigma(1.0, 1e-5), rel=5e-3)
    result = multi.solve(objective, data, budget, np.random.default_rng(0))
    assert result.info["noise_std"] == pytest.approx(cal.noise_multiplier
                                                     * result.info["sensitivity"])


@pytest.mark.parametrize("clip", [None, 0.5], ids=["monotone", "clipped"])
def test_nispp_released_point_respects_its_sensitivity(clip):
    objective = StronglyMonotoneQuadratic(A, 2.0, mu=0.2)
    rng = np.random.default_rng(3)
    X = make_linear_data(50, 2, rng, spread=0.5).X
    X_neighbour = X.copy()
    X_neighbour[7] = np.array([2.0, 0.0, -2.0, 0.0]) / math.sqrt(2)  # adversarial replacement
    solver = NoisyInexactProximalPoint(mode="multi_pass", batch_size=50, n_iter=1,
                                       prox_weight=2.0, clip_w=clip, clip_v=clip)
    out = [solver.solve(objective, SaddleData(x), NO_PRIVACY, np.random.default_rng(0))
           for x in (X, X_neighbour)]
    gap = math.hypot(np.linalg.norm(out[0].w - out[1].w), np.linalg.norm(out[0].v - out[1].v))
    assert 0 < gap <= out[0].info["sensitivity"]


def test_nispp_rejects_a_weak_prox_weight():
    solver = NoisyInexactProximalPoint(prox_weight=0.5, clip_w=0.5, clip_v=0.5)
    with pytest.raises(ValueError, match="strongly monotone"):
        solver.calibrate(StronglyMonotoneQuadratic(A, 2.0), 1000, PrivacyBudget(1.0, 1e-5))


def test_nispp_solve_falls_back_to_the_automatic_weight():
    """At solve time the budget is spent: a prox_weight too weak for the objective (built
    from privately released constants) is replaced by the automatic one, with a warning."""
    obj = StronglyMonotoneQuadratic(A, 2.0)
    data = make_linear_data(200, 2, np.random.default_rng(1), spread=0.5)
    budget = PrivacyBudget(1.0, 1e-5)
    weak = NoisyInexactProximalPoint(prox_weight=0.5, clip_w=0.5, clip_v=0.5, n_iter=5)
    auto = NoisyInexactProximalPoint(clip_w=0.5, clip_v=0.5, n_iter=5)
    with pytest.warns(UserWarning, match="automatic weight"):
        res = weak.solve(obj, data, budget, np.random.default_rng(0))
    ref = auto.solve(obj, data, budget, np.random.default_rng(0))
    assert res.info["prox_weight"] == ref.info["prox_weight"] > 0.5
    np.testing.assert_array_equal(res.w, ref.w)


# ---- Recursive regularization --------------------------------------------------
class SpySolver:
    """Records what each round receives; returns a fixed function of the round index."""

    def __init__(self, log):
        self.log = log

    def __deepcopy__(self, memo):
        # Recursive regularization runs a fresh copy per round; the copies share one log.
        return SpySolver(self.log)

    def calibrate(self, objective, n_samples, budget):
        return make_sampler("full", n_samples)  # any record with a replace-one relation

    def solve(self, objective, data, budget, rng, *, init=None):
        k = len(self.log)
        self.log.append({"objective": objective, "rows": data.X[:, 0].copy(), "budget": budget,
                         "init": (init[0].copy(), init[1].copy())})
        return SolverResult(np.full(2, 0.1 * (k + 1)), np.full(2, -0.05 * (k + 1)), n_iter=1)


def _spy_run(X, n_rounds=3, lam=0.5):
    log = []
    rr = RecursiveRegularization(base_solver=SpySolver(log), n_rounds=n_rounds, prox_weight=lam)
    out = rr.solve(BilinearGame(A, 10.0), SaddleData(X), PrivacyBudget(0.7, 1e-6),
                   np.random.default_rng(5))
    return log, out


def test_recursive_hands_disjoint_chunks_full_budget_and_accumulated_regularisers():
    X = np.arange(31.0)[:, None] * np.ones((1, 4))  # column 0 identifies the row
    log, out = _spy_run(X)
    chunks = [set(r["rows"]) for r in log]
    assert [len(c) for c in chunks] == [10, 10, 10]
    assert len(set().union(*chunks)) == 30  # pairwise disjoint
    assert all(r["budget"] == PrivacyBudget(0.7, 1e-6) for r in log)
    lam, centres_w = 0.5, [np.zeros(2)] + [np.full(2, 0.1 * (k + 1)) for k in range(3)]
    for t, r in enumerate(log, start=1):
        obj = r["objective"]
        assert isinstance(obj, RegularizedObjective)
        weights = [2.0 ** (k + 1) * lam for k in range(t)]
        # sum_k c_k ||w - a_k||^2 = C ||w - a||^2 + const: lam_w = 2C, centre = weighted mean.
        assert obj.lam_w == obj.lam_v == pytest.approx(2 * sum(weights))
        np.testing.assert_allclose(obj.center_w, np.average(centres_w[:t], axis=0, weights=weights))
        np.testing.assert_allclose(r["init"][0], centres_w[t - 1])  # warm start: last release
    np.testing.assert_allclose(out.w, [0.3, 0.3])  # the last round's output


def test_recursive_round_depends_on_earlier_rounds_only_through_releases():
    X = np.arange(31.0)[:, None] * np.ones((1, 4))
    log_a, _ = _spy_run(X)
    X_other = X.copy()
    first_chunk = np.isin(X[:, 0], log_a[0]["rows"])
    X_other[first_chunk, 1:] = -X_other[first_chunk, 1:]  # change only round 1's data
    log_b, _ = _spy_run(X_other)
    for ra, rb in zip(log_a[1:], log_b[1:]):
        np.testing.assert_array_equal(ra["rows"], rb["rows"])
        assert ra["objective"].lam_w == rb["objective"].lam_w
        np.testing.assert_array_equal(ra["objective"].center_w, rb["objective"].center_w)
        np.testing.assert_array_equal(ra["init"][1], rb["init"][1])


def test_recursive_calibration_is_the_base_calibration_on_one_chunk():
    objective = StronglyMonotoneQuadratic(A, 2.0)
    rr = RecursiveRegularization(FAST_SGDA, n_rounds=4)
    cal = rr.calibrate(objective, 2000, PrivacyBudget(1.0, 1e-5))
    base = FAST_SGDA.calibrate(objective, 500, PrivacyBudget(1.0, 1e-5))
    assert cal == base and cal.epsilon <= 1.0
    with pytest.raises(ValueError, match="replace-one"):
        RecursiveRegularization(NoisySGDA(sampler="poisson")).calibrate(
            objective, 2000, PrivacyBudget(1.0, 1e-5))


def test_recursive_auto_rounds_grow_as_the_constant_shrinks():
    objective = StronglyMonotoneQuadratic(A, 2.0)
    rounds = [RecursiveRegularization(reg_constant=c)._plan(
        objective, 20000, NO_PRIVACY, NoisySGDA())[0] for c in (48.0, 2.0, 0.1)]
    assert rounds[0] == 1 and rounds[0] < rounds[1] < rounds[2]


# ---- Estimator integration ---------------------------------------------------------
@pytest.fixture(scope="module")
def auc_data():
    return make_classification(n_samples=300, n_features=5, random_state=0)


@pytest.mark.parametrize("name", ["nseg", "nseg_multipass", "nispp", "recursive"])
def test_solver_selectable_by_name(name, auc_data):
    X, y = auc_data
    model = DPAUCMaximizer(epsilon=2.0, data_norm=3.0, pos_ratio=0.5, solver=name,
                           random_state=0).fit(X, y)
    assert type(model.solver_) is type(SOLVERS[name]())
    assert model.calibration_.epsilon <= 2.0
    assert np.all(np.isfinite(model.coef_))


def test_grid_search_over_solvers(auc_data):
    X, y = auc_data
    grid = GridSearchCV(
        DPAUCMaximizer(epsilon=2.0, data_norm=3.0, pos_ratio=0.5, random_state=0),
        param_grid={"solver": ["nseg", "nseg_multipass", "nispp", "recursive"]}, cv=2,
    ).fit(X, y)
    assert grid.best_params_["solver"] in SOLVERS
    assert np.all(np.isfinite(grid.cv_results_["mean_test_score"]))


# ---- NSEG with more noise on the extrapolation than on the update ----------------
def test_extrapolation_noise_composes_each_kind_as_often_as_it_occurs():
    objective = StronglyMonotoneQuadratic(A, 2.0)
    budget = PrivacyBudget(1.0, 1e-6)
    kw = dict(mode="multi_pass", sampler="poisson", batch_size=50, n_iter=40)
    equal = NoisyExtragradient(**kw).calibrate(objective, 2000, budget)
    cal = NoisyExtragradient(extrapolation_noise=4.0, **kw).calibrate(objective, 2000, budget)
    assert cal.noise_ratios == (4.0, 1.0) and cal.n_steps == cal.n_compositions == 80

    def pld_epsilon(z):  # built here, independently of the library
        acc = pld.PLDAccountant(value_discretization_interval=1e-4)
        for ratio in (4.0, 1.0):
            acc.compose(dp_accounting.SelfComposedDpEvent(dp_accounting.PoissonSampledDpEvent(
                0.025, dp_accounting.GaussianDpEvent(ratio * z)), 40))
        return acc.get_epsilon(1e-6)

    z = cal.noise_multiplier
    assert pld_epsilon(z) <= 1.0 + 1e-3 and pld_epsilon(0.99 * z) > 1.0
    # The update gets less noise than under equal noise, never less than if the
    # extrapolations were free (only its T releases composed).
    free = calibrate_noise_multiplier(make_sampler("poisson", 2000, 50), 40, 1.0,
                                      1e-6).noise_multiplier
    assert free < z < 0.9 * equal.noise_multiplier


@pytest.mark.parametrize("ratio", [0.5, 3.0])
def test_extrapolation_noise_full_batch_matches_gaussian_closed_form(ratio):
    # T releases at z and T at ratio * z are exactly mu-GDP, mu = sqrt(T (1 + ratio^-2)) / z.
    objective = StronglyMonotoneQuadratic(A, 2.0)
    solver = NoisyExtragradient(mode="multi_pass", batch_size=None, n_iter=50,
                                extrapolation_noise=ratio)
    cal = solver.calibrate(objective, 500, PrivacyBudget(1.0, 1e-6))
    mu = gdp_mu(1.0, 1e-6)
    z_exact = math.sqrt(50 * (1 + ratio**-2)) / mu
    assert z_exact * (1 - 1e-9) <= cal.noise_multiplier <= z_exact * 1.01


def test_single_pass_extrapolation_noise_is_charged_at_the_least_noisy_release():
    objective = StronglyMonotoneQuadratic(A, 2.0)
    budget = PrivacyBudget(1.0, 1e-5)
    z = {r: NoisyExtragradient(batch_size=5, extrapolation_noise=r).calibrate(
        objective, 1000, budget).noise_multiplier for r in (1.0, 4.0, 0.5)}
    assert z[4.0] == pytest.approx(z[1.0])  # an example is in one release: no gain
    assert z[0.5] == pytest.approx(2 * z[1.0], rel=5e-3)  # the extrapolation must certify


def test_extrapolation_oracle_adds_ratio_times_the_update_noise(data):
    # One full-batch iteration: the released point is the extrapolated one, whose
    # spread over seeds is gamma times the extrapolation noise's std.
    objective = StronglyMonotoneQuadratic(A, 2.0)
    budget = PrivacyBudget(20.0, 1e-5)

    def spread(ratio):
        solver = NoisyExtragradient(mode="multi_pass", batch_size=None, n_iter=1, step_size=0.01,
                                    extrapolation_noise=ratio, **UNCLIPPED)
        ws = np.array([solver.solve(objective, data, budget, np.random.default_rng(s)).w
                       for s in range(400)])
        return ws.std(axis=0).mean(), solver.calibrate(objective, data.n_samples,
                                                       budget).noise_multiplier

    (s1, z1), (s4, z4) = spread(1.0), spread(4.0)
    assert s4 / s1 == pytest.approx(4.0 * z4 / z1, rel=0.1)
    assert z4 < z1


def test_extrapolation_noise_must_be_positive():
    objective = StronglyMonotoneQuadratic(A, 2.0)
    with pytest.raises(ValueError, match="extrapolation_noise"):
        NoisyExtragradient(extrapolation_noise=0.0).calibrate(
            objective, 1000, PrivacyBudget(1.0, 1e-5))


@pytest.mark.parametrize("backend", ["numpy", "numba"])
@pytest.mark.parametrize("n", [30, 19, 15])  # epochs of 3, 1 and 1 batches of 10
def test_multi_pass_nseg_over_shuffled_epochs_takes_every_planned_step(n, backend):
    """NSEG pairs a chunk's steps two by two; shuffled epochs of an odd number of
    batches once ended chunks at odd lengths, so a batch an epoch was dropped (and with
    one batch an epoch, every step: a zero model after the spend)."""
    if backend == "numba":
        pytest.importorskip("numba")
    from skdpminimax.objectives import SquareLossAUC
    rng = np.random.default_rng(0)
    X = rng.normal(size=(n, 3))
    y = np.where(np.arange(n) % 2 == 0, 1.0, -1.0)
    objective = SquareLossAUC(3, 0.5, data_norm=4.0, radius=10.0)
    solver = NoisyExtragradient(mode="multi_pass", sampler="shuffle", batch_size=10, n_iter=6,
                                step_size=0.1, backend=backend)
    for budget in (NO_PRIVACY, PrivacyBudget(5.0, 1e-5)):
        result = solver.solve(objective, SaddleData(X, y), budget, np.random.default_rng(1))
        assert result.diagnostics["n_grad_evals"] == 2 * 6 * 10
        assert np.any(result.w != 0)
