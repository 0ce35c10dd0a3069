"""What the solvers' privacy proofs need from the objective and from the run itself.

1. Declared constants: only an objective that opts in (``certified_constants``) has
   its ``lipschitz()`` / ``strong_convexity()`` trusted where nothing is clipped; the
   default ``strong_convexity()`` claims nothing.
2. Phased output perturbation: a phase sees earlier chunks only through releases
   (its own generator and base solver).
3. ``SolverResult.diagnostics`` (not private) is kept apart from what is released.
4. No data-dependent failure after the spend: NISPP's inner solve and output
   perturbation's fallback run a number of steps fixed by public constants.
"""

import copy
import math

import numpy as np
import pytest
from diffprivlib.accountant import BudgetAccountant
from sklearn.datasets import make_classification

from objectives_for_tests import StronglyMonotoneQuadratic, make_linear_data
from objectives_for_tests_op import BilinearGame, make_game_data
from skdpminimax import DPAUCMaximizer, DPSaddleEstimator
from skdpminimax.objectives import (
    DemographicParityRegression,
    GroupDRO,
    LogisticLoss,
    MLPScorer,
    SquareLossAUC,
    certifies_constants,
)
from skdpminimax.objectives.base import SaddleData, SaddleObjective
from skdpminimax.privacy import PrivacyBudget
from skdpminimax.sets import L2Ball
from skdpminimax.solvers import (
    SOLVERS,
    Extragradient,
    NoisyInexactProximalPoint,
    NoisySGDA,
    OutputPerturbation,
    PhasedOutputPerturbation,
    RecursiveRegularization,
    SolverResult,
)
from skdpminimax.solvers.contraction import (
    a_priori_iterations,
    contraction_rate,
    solve_a_priori,
)
from skdpminimax.solvers.output_perturbation import a_priori_solve, check_objective

A = np.array([[1.0, 0.5], [-0.3, 0.8]])
INF = PrivacyBudget(np.inf, 1e-5)
BUDGET = PrivacyBudget(1.0, 1e-5)
DIAGNOSTIC_KEYS = {"n_grad_evals", "inner_iterations", "a_priori_fallback",
                   "a_priori_fallbacks", "diagnostics"}


class Understated(SaddleObjective):
    """Reviewer's repro c: convex, honest smoothness 100, ``lipschitz()`` understated
    (1 where gradients reach ~600), no opt-in."""

    primal_set, dual_set = L2Ball(5.0), L2Ball(1.0)
    H = np.diag([1.0, 100.0])

    def init_params(self, rng=None):
        return np.zeros(2), np.zeros(1)

    def per_example_values(self, w, v, data):
        d = w - data.X
        return 0.5 * np.einsum("ij,jk,ik->i", d, self.H, d)

    def per_example_grads(self, w, v, data):
        return (w - data.X) @ self.H, np.zeros((data.n_samples, 1))

    def lipschitz(self):
        return 1.0, 1.0

    def smoothness(self):
        return 100.0

    def strong_convexity(self):
        return 0.0, 0.0


class Concave(SaddleObjective):
    """Reviewer's repro c2: nonconvex in ``w``, honest bounds, ``strong_convexity()`` left
    at the default."""

    primal_set, dual_set = L2Ball(5.0), L2Ball(1.0)

    def init_params(self, rng=None):
        return np.zeros(2), np.zeros(1)

    def per_example_values(self, w, v, data):
        return -0.5 * ((w - data.X) ** 2).sum(1)

    def per_example_grads(self, w, v, data):
        return -(w - data.X), np.zeros((data.n_samples, 1))

    def lipschitz(self):
        return 7.0, 1.0

    def smoothness(self):
        return 1.0


class UncertifiedGame(BilinearGame):
    """The test game, honest, but without the opt-in."""

    certified_constants = False


# ---- 1. declared constants ---------------------------------------------------------------
def test_default_strong_convexity_claims_no_convexity():
    obj = Concave()
    assert obj.strong_convexity() == (-np.inf, -np.inf)
    # a quadratic regulariser does not make an unknown objective strongly convex
    assert obj.regularized(3.0).strong_convexity() == (-np.inf, -np.inf)
    assert not certifies_constants(obj) and not certifies_constants(obj.regularized(1.0))


def test_builtin_objectives_certify_also_through_regularized():
    pi = np.array([0.3, 0.7])
    builtins = [SquareLossAUC(3, 0.4, 1.0, 2.0, l2_reg=0.1),
                SquareLossAUC(3, 0.4, 1.0, 2.0, scorer=MLPScorer(2)),
                GroupDRO(3, LogisticLoss(), pi, data_norm=1.0, radius=2.0),
                DemographicParityRegression(3, pi, 1.0, 2.0, (-1.0, 1.0))]
    for obj in builtins:
        assert certifies_constants(obj) and obj.certified_constants
        reg = obj.regularized(0.5).regularized(0.1, 0.2)
        assert certifies_constants(reg) and reg.certified_constants

    class Looser(SquareLossAUC):  # changes a vouched-for method without vouching again
        def lipschitz(self):
            return tuple(0.5 * g for g in super().lipschitz())

    class Reproved(Looser):
        certified_constants = True

    assert not certifies_constants(Looser(3, 0.4, 1.0, 2.0))
    assert not certifies_constants(Looser(3, 0.4, 1.0, 2.0).regularized(1.0))
    assert certifies_constants(Reproved(3, 0.4, 1.0, 2.0))
    # the refusal names the inherited flag and the override (it read "which it does
    # not certify (certified_constants)" while the class's flag was True)
    with pytest.raises(ValueError, match="inherits certified_constants from SquareLossAUC, "
                                         "but Looser overrides lipschitz"):
        check_objective(Looser(3, 0.4, 1.0, 2.0))
    with pytest.raises(ValueError, match="Concave does not set certified_constants"):
        check_objective(Concave())

    class AnyLabel(SquareLossAUC):  # drops the label domain the bounds are proved on
        def check_data(self, y, groups):
            pass

    # a review: it kept the flag, and output perturbation under-noised a neighbour with
    # the label 1e5 by 22x
    assert not certifies_constants(AnyLabel(3, 0.4, 1.0, 2.0))


@pytest.mark.parametrize("objective", [Understated(), Concave()], ids=["understated", "default"])
def test_nispp_uses_smoothness_for_an_objective_that_does_not_opt_in(objective):
    """Clip norms at (or above) lipschitz() no longer buy mu = lambda + min(sc): the
    objective has not certified them, so mu = lambda - smoothness(), and a weight at or
    below smoothness() is refused before anything is spent (repros c, c2: 2.2x and 8x the
    claimed sensitivity before)."""
    weak = NoisyInexactProximalPoint(mode="multi_pass", batch_size=50, n_iter=1,
                                     prox_weight=0.5, clip_w=None, clip_v=None)
    with pytest.raises(ValueError, match="strongly monotone"):
        weak.calibrate(objective, 50, BUDGET)
    strong = NoisyInexactProximalPoint(mode="multi_pass", batch_size=50, n_iter=1,
                                       prox_weight=2.0 * objective.smoothness(),
                                       clip_w=None, clip_v=None)
    plan = strong._plan(objective, 50, BUDGET)
    assert plan["strong_monotonicity"] == pytest.approx(objective.smoothness())


def test_nispp_sensitivity_holds_for_the_concave_objective():
    """Repro c2 at a weight the solver accepts: the measured move stays within the claim."""
    solver = NoisyInexactProximalPoint(mode="multi_pass", batch_size=50, n_iter=1,
                                       prox_weight=2.0, clip_w=None, clip_v=None)
    X = np.zeros((50, 2))
    neighbour = X.copy()
    neighbour[0] = [2.0, 0.0]
    out = [solver.solve(Concave(), SaddleData(Z), INF, np.random.default_rng(0))
           for Z in (X, neighbour)]
    assert 0 < np.linalg.norm(out[0].w - out[1].w) <= out[0].info["sensitivity"]


def test_nispp_keeps_the_monotone_branch_for_builtin_objectives():
    obj = SquareLossAUC(3, 0.4, 1.0, 2.0, l2_reg=0.1)
    solver = NoisyInexactProximalPoint(prox_weight=50.0, clip_w=None, clip_v=None)
    plan = solver._plan(obj, 1000, BUDGET)
    assert plan["strong_monotonicity"] == pytest.approx(50.0 + min(obj.strong_convexity()))


@pytest.mark.parametrize("framework", [OutputPerturbation, PhasedOutputPerturbation])
def test_output_perturbation_refuses_an_objective_that_does_not_opt_in(framework):
    M = np.random.default_rng(0).standard_normal((4, 3))
    game = UncertifiedGame(M, radius_w=3.0, radius_v=3.0, mu_w=0.5, mu_v=0.5)
    with pytest.raises(ValueError, match="certified_constants"):
        framework().calibrate(game, 400, BUDGET)


def test_estimator_with_output_perturbation_refuses_before_spending():
    class Mean(SaddleObjective):  # honest, strongly convex-concave, no opt-in
        def __init__(self, n_features, data_norm):
            self.d, self.data_norm = n_features, data_norm
            self.primal_set, self.dual_set = L2Ball(3.0), L2Ball(1.0)

        def init_params(self, rng=None):
            return np.zeros(self.d), np.zeros(1)

        def per_example_values(self, w, v, data):
            return 0.5 * ((w - data.X) ** 2).sum(1) - 0.5 * v[0] ** 2

        def per_example_grads(self, w, v, data):
            return w - data.X, -np.full((data.n_samples, 1), v[0])

        def lipschitz(self):
            return 3.0 + self.data_norm, 1.0

        def smoothness(self):
            return 1.0

        def strong_convexity(self):
            return 1.0, 1.0

    acc = BudgetAccountant()
    est = DPSaddleEstimator(Mean, data_norm=1.0, solver="output_perturbation", accountant=acc)
    with pytest.raises(ValueError, match="certified_constants"):
        est.fit(np.random.default_rng(0).normal(size=(50, 2)))
    assert acc.total() == (0, 0)


def test_phased_output_perturbation_refuses_a_nonconvex_objective_before_spending():
    mlp = SquareLossAUC(3, 0.4, 1.0, 2.0, l2_reg=0.1, scorer=MLPScorer(2))
    with pytest.raises(ValueError, match="convex-concave"):
        PhasedOutputPerturbation().calibrate(mlp, 400, BUDGET)


# ---- 2. phases see the past only through releases ---------------------------------------------
class DrawsByData:
    """A base solver that draws a data-dependent amount of randomness (as SVRG's batches
    do), records the generator's state it was handed, and counts its own uses."""

    log = []  # class attribute: shared by the engine's copies

    def __init__(self):
        self.uses = 0

    def solve_saddle(self, objective, data, tol, *, init=None, rng=None):
        entry = copy.deepcopy(rng.bit_generator.state)
        rng.random(1 + int(1e6 * abs(data.X.sum())) % 37)
        DrawsByData.log.append({"entry": entry, "X": data.X.copy(), "uses": self.uses})
        self.uses += 1
        return Extragradient().solve_saddle(objective, data, tol, init=init, rng=rng)


def _phased_log(data, objective):
    DrawsByData.log = []
    PhasedOutputPerturbation(base_solver=DrawsByData(), variant="convex-concave").solve(
        objective, data, PrivacyBudget(2.0, 1e-5), np.random.default_rng(7))
    return DrawsByData.log


def test_phase_state_does_not_depend_on_earlier_chunks():
    """Repro b: change one row of phase 1's chunk; every later phase must be handed the
    same generator state (and a base solver that has never run)."""
    rng = np.random.default_rng(0)
    objective = BilinearGame(rng.standard_normal((4, 3)), radius_w=3.0, radius_v=3.0)
    data = make_game_data(128, 4, 3, rng)
    before = _phased_log(data, objective)
    row = np.flatnonzero((data.X == before[0]["X"][0]).all(axis=1))[0]
    X = data.X.copy()
    X[row] = -X[row]
    after = _phased_log(SaddleData(X), objective)
    assert len(before) == len(after) == 2 * 7
    assert not np.array_equal(before[0]["X"], after[0]["X"])  # phase 1 saw the change
    for k in range(1, len(before)):
        assert before[k]["entry"] == after[k]["entry"], f"phase {k + 1}"
    assert all(call["uses"] == 0 for call in before + after)  # a fresh solver per phase


class PrivateDrawsByData:
    """A private base solver for recursive regularization with the same habits."""

    log = []

    def __init__(self):
        self.uses = 0

    def calibrate(self, objective, n_samples, budget):
        return NoisySGDA(sampler="without_replacement", batch_size=5, n_iter=3).calibrate(
            objective, n_samples, budget)

    def solve(self, objective, data, budget, rng, *, init=None):
        entry = copy.deepcopy(rng.bit_generator.state)
        rng.random(1 + int(1e6 * abs(data.X.sum())) % 37)
        PrivateDrawsByData.log.append({"entry": entry, "X": data.X.copy(), "uses": self.uses})
        self.uses += 1
        return NoisySGDA(sampler="without_replacement", batch_size=5, n_iter=3).solve(
            objective, data, budget, rng, init=init)


def test_recursive_round_state_does_not_depend_on_earlier_chunks():
    """The same precondition for recursive regularization's adaptive parallel composition."""
    objective = StronglyMonotoneQuadratic(A, 2.0, mu=1.0)

    def run(X):
        PrivateDrawsByData.log = []
        RecursiveRegularization(PrivateDrawsByData(), n_rounds=3, prox_weight=0.5).solve(
            objective, SaddleData(X), BUDGET, np.random.default_rng(5))
        return PrivateDrawsByData.log

    X = make_linear_data(40, 2, np.random.default_rng(0), spread=0.5).X
    before = run(X)
    row = np.flatnonzero((X == before[0]["X"][0]).all(axis=1))[0]
    X = X.copy()
    X[row] = -X[row]  # one row of round 1's chunk replaced
    after = run(X)
    assert len(before) == len(after) == 3
    assert not np.array_equal(before[0]["X"], after[0]["X"])
    for k in range(1, 3):
        assert before[k]["entry"] == after[k]["entry"], f"round {k + 1}"
    assert all(call["uses"] == 0 for call in before + after)


# ---- 3. diagnostics apart from releases ---------------------------------------------------
def _neighbours(n=60):
    X = make_linear_data(n, 2, np.random.default_rng(0), spread=0.5).X
    neighbour = X.copy()
    neighbour[0] = np.array([2.0, 0.0, -2.0, 0.0]) / math.sqrt(2)
    return X, neighbour


def _scalars(info):
    """The entries of ``info`` a fitted ``solver_info_`` could keep, and scalar lists."""
    return {k: v for k, v in info.items()
            if isinstance(v, (str, int, float, np.number))
            or (isinstance(v, list) and all(isinstance(x, (int, float)) for x in v))}


@pytest.mark.parametrize("name", sorted(SOLVERS))
def test_result_info_is_the_same_on_neighbours_and_counters_are_diagnostics(name):
    """Repro a: NISPP's inner iteration counts and gradient evaluations differed on
    neighbours. Now only ``diagnostics`` may differ; ``info`` holds none of them."""
    objective = StronglyMonotoneQuadratic(A, 2.0, mu=1.0)
    solver = SOLVERS[name]()
    if name == "nispp":
        solver.set_params(mode="multi_pass", batch_size=60, n_iter=5, prox_weight=3.0,
                          inner_tol=1e-3)
    elif hasattr(solver, "n_iter") and "nseg" not in name and name != "nispp":
        solver.set_params(n_iter=20)
    results = [solver.solve(objective, SaddleData(X), BUDGET, np.random.default_rng(1))
               for X in _neighbours()]
    for res in results:
        assert not hasattr(res, "n_grad_evals")
        assert res.diagnostics["n_grad_evals"] > 0
        assert not DIAGNOSTIC_KEYS & set(res.info)
    assert _scalars(results[0].info) == _scalars(results[1].info)


def test_poisson_gradient_count_is_only_a_diagnostic():
    """Poisson SGDA planned on a public size: its evaluation count tracks the true size."""
    objective = StronglyMonotoneQuadratic(A, 2.0, mu=1.0)
    solver = NoisySGDA(batch_size=20, n_iter=200, sampler="poisson")
    counts = []
    for n_true in (400, 480):
        X = make_linear_data(n_true, 2, np.random.default_rng(0), spread=0.5).X
        res = solver.solve(objective, SaddleData(X, public_size=400), BUDGET,
                           np.random.default_rng(3))
        assert not DIAGNOSTIC_KEYS & set(res.info)
        counts.append(res.diagnostics["n_grad_evals"])
    assert counts[1] > counts[0]


def _walk(value, path="", seen=None):
    """Every (path, value) reachable through dicts, lists and plain objects."""
    seen = set() if seen is None else seen
    if id(value) in seen:
        return
    seen.add(id(value))
    yield path, value
    if isinstance(value, dict):
        for k, v in value.items():
            yield from _walk(v, f"{path}[{k!r}]", seen)
    elif isinstance(value, (list, tuple)):
        for i, v in enumerate(value):
            yield from _walk(v, f"{path}[{i}]", seen)


@pytest.mark.parametrize("solver", ["sgda", "nseg", "nispp", "output_perturbation",
                                    "phased_output_perturbation", "recursive"])
def test_no_fitted_attribute_holds_a_diagnostic(solver):
    X, y = make_classification(n_samples=300, n_features=5, random_state=0)
    est = DPAUCMaximizer(epsilon=1.0, data_norm=3.0, pos_ratio=0.5, alpha=0.5, radius=2.0,
                         solver=solver, random_state=0).fit(X, y)
    for name, value in vars(est).items():
        if not name.endswith("_") or name.startswith("_"):
            continue
        assert not isinstance(value, SolverResult), name
        for path, item in _walk(value, name):
            assert not isinstance(item, SolverResult), path
            if isinstance(item, dict):
                assert not DIAGNOSTIC_KEYS & set(item), path


# ---- 4. no data-dependent failure ----------------------------------------------------------
def test_contraction_rate_is_the_best_step():
    for s, L, lam in [(-1.0, 1.0, 1.5), (0.0, 2.0, 0.3), (0.5, 2.0, 0.0), (0.2, 1.0, 4.0),
                      (-0.5, 3.0, 10.0), (0.0, 0.0, 1.0)]:
        eta, q = contraction_rate(s, L, lam)
        lip = max(L, abs(s))
        grid = np.geomspace(1e-4, 1e4, 4001)
        q_grid = np.sqrt((1 - 2 * grid * s + (grid * lip) ** 2)) / (1 + grid * lam)
        best = min(q_grid.min(), lip / lam if lam > 0 else np.inf)
        assert q <= best + 1e-9 and 0 <= q < 1
    with pytest.raises(ValueError):
        contraction_rate(-1.0, 1.0, 1.0)  # lam + s = 0: not strongly monotone
    assert a_priori_iterations(0.5, 8.0, 1.0) == 3 and a_priori_iterations(0.5, 1.0, 1.0) == 0
    # A factor within 1e-16 of 1 (it rounds to 1.0): counted from -log q, not divided by 0
    ratio = 1e-17
    steps = a_priori_iterations(math.sqrt(1 - ratio), math.e, 1.0, -0.5 * math.log1p(-ratio))
    assert steps == pytest.approx(2e17, rel=1e-9)
    with pytest.raises(ValueError, match="below 1"):
        a_priori_iterations(1.0, 8.0, 1.0)


@pytest.mark.parametrize("seed", range(6))
def test_solve_a_priori_reaches_the_radius(seed):
    """Affine strongly monotone problems with a known solution, from the worst start the
    public bound allows, including negative monotonicity (NISPP's clipped branch)."""
    rng = np.random.default_rng(seed)
    d = 4
    skew = rng.standard_normal((d, d))
    skew -= skew.T
    sym = rng.standard_normal((d, d))
    sym = sym @ sym.T
    s = -1.0 if seed % 2 else 0.3
    sym = sym / np.linalg.eigvalsh(sym).max() * 2.0 + s * np.eye(d)  # spectrum in [s, 2 + s]
    M = sym + skew
    L = np.linalg.norm(M, 2)
    lam = L * (1.05 if seed % 2 else 0.2) + max(0.0, -s)
    b, centre = rng.standard_normal(d), rng.standard_normal(d)
    z_star = np.linalg.solve(M + lam * np.eye(d), lam * centre - b)
    start = np.zeros(d)
    distance = np.linalg.norm(start - z_star) * 1.0001
    radius = 1e-6
    z, n = solve_a_priori(lambda z: M @ z + b, lambda z: z, start, centre, lam, s, L,
                          distance, radius)
    assert n > 0 and np.linalg.norm(z - z_star) <= radius


class ConcaveDeclared(Concave):
    """``Concave`` with its (negative) modulus declared: honest constants throughout."""

    def strong_convexity(self):
        return -1.0, 0.0


def _nearly_centred_rows(offset=1e-4):
    X = np.random.default_rng(0).choice([-1.0, 1.0], size=(40, 2)) * 0.5
    return X - X.mean(0) + offset  # the exact prox point -x_bar / (lam - 1) stays inside


@pytest.mark.parametrize("objective, lam, inner_tol",
                         [(Concave(), 1.01, 1e-3), (ConcaveDeclared(), 1.001, 1e-6)],
                         ids=["default-convexity", "declared-modulus"])
def test_nispp_releases_within_its_radius_of_the_exact_prox_point(objective, lam, inner_tol):
    """Before: with the default strong_convexity() the inner solve was "certified" with
    mu = lambda and released w = 0 where the prox point is -0.01 (radius 3.5e-4); with
    the modulus declared, operator extrapolation raised after the spend (repro g). Now
    the a-priori solve reaches the radius, and cannot fail."""
    X = _nearly_centred_rows()
    solver = NoisyInexactProximalPoint(mode="multi_pass", batch_size=40, n_iter=1,
                                       prox_weight=lam, inner_tol=inner_tol,
                                       clip_w=None, clip_v=None)
    res = solver.solve(objective, SaddleData(X), INF, np.random.default_rng(0))
    # G(w) = -(w - x_bar) + lam w at the centre 0; the dual block's operator is 0
    w_star = -X.mean(0) / (lam - 1.0)
    assert math.hypot(np.linalg.norm(res.w - w_star), np.linalg.norm(res.v)) \
        <= res.info["inner_radius"]


def test_nispp_inner_iteration_count_is_the_same_on_neighbours():
    objective = StronglyMonotoneQuadratic(A, 2.0, mu=1.0)
    solver = NoisyInexactProximalPoint(mode="multi_pass", batch_size=60, n_iter=5,
                                       prox_weight=3.0, inner_tol=1e-3)
    counts = [solver.solve(objective, SaddleData(X), BUDGET,
                           np.random.default_rng(1)).diagnostics["inner_iterations"]
              for X in _neighbours()]
    assert counts[0] == counts[1] and len(counts[0]) == 5


@pytest.mark.parametrize("framework", [OutputPerturbation, PhasedOutputPerturbation])
def test_output_perturbation_releases_when_every_solver_gives_up(framework):
    """Before: Extragradient(max_iter=1) as the base solver raised CertificationError after
    the spend. Now the a-priori solve releases, within the target."""
    rng = np.random.default_rng(0)
    M = rng.standard_normal((4, 3))
    objective = BilinearGame(M, radius_w=3.0, radius_v=3.0, mu_w=0.7, mu_v=1.3)
    data = make_game_data(64, 4, 3, rng)
    gives_up = Extragradient(max_iter=1, check_every=1)
    res = framework(base_solver=gives_up).solve(objective, data, INF, np.random.default_rng(0))
    if framework is OutputPerturbation:
        assert res.diagnostics["a_priori_fallback"]
        ws, vs = objective.unconstrained_saddle(data)
        dist = math.sqrt(0.7 * np.sum((res.w - ws) ** 2) + 1.3 * np.sum((res.v - vs) ** 2))
        assert dist <= math.sqrt(res.info["target"])
    else:
        assert res.diagnostics["a_priori_fallbacks"] == res.n_iter > 0


@pytest.mark.parametrize("layers", [(), ((0.8, 0.0),), ((2.0, 0.5), (0.3, 0.0))],
                         ids=["plain", "primal-layer", "two-layers"])
def test_a_priori_solve_reaches_the_tolerance(layers):
    """Output perturbation's fallback, on objectives whose saddle point is known: the
    quadratic layers of regularized() (one with no dual weight, as in the C-SC phases)."""
    rng = np.random.default_rng(4)
    M = rng.standard_normal((4, 3))
    objective = BilinearGame(M, radius_w=50.0, radius_v=50.0, mu_w=0.0 if layers else 0.5,
                             mu_v=0.6)
    data = make_game_data(80, 4, 3, rng)
    lam_w = sum(lw for lw, _ in layers)
    lam_v = sum(lv for _, lv in layers)
    for lw, lv in layers:
        objective = objective.regularized(lw, lv)  # centred at 0: closed form below
    start = (np.full(4, 3.0), np.full(3, -2.0))
    w, v, steps = a_priori_solve(objective, data, start, 1e-7)
    base = objective
    while hasattr(base, "base"):
        base = base.base
    ws, vs = base.unconstrained_saddle(data, lam_w, lam_v)
    assert steps > 0
    assert math.hypot(np.linalg.norm(w - ws), np.linalg.norm(v - vs)) <= 1e-7


# ---- review mends: the fallback's length, what certifies, malformed answers ---------------
def test_a_priori_solve_is_linear_in_the_condition_number_and_stops_when_certified():
    """The fallback is projected extragradient: its public count grows like L / mu (the
    earlier prox-gradient count grew like (L / mu)^2, 2e5 steps on the solver
    benchmark's AUC problem and 1e12 at the estimator's default alpha), and with a
    target it stops at the first passing certificate, within the target."""
    from skdpminimax.objectives import SquareLossAUC
    from skdpminimax.solvers.certificates import certify
    from skdpminimax.solvers.output_perturbation import a_priori_steps

    def steps(l2):
        obj = SquareLossAUC(5, pos_ratio=0.4, data_norm=2.0, radius=2.0, l2_reg=l2)
        return a_priori_steps(obj, obj.init_params(), 1e-4)

    assert steps(0.1) < 20_000
    assert 1.8 < steps(0.05) / steps(0.1) < 2.2  # linear, not quadratic, in 1 / mu
    rng = np.random.default_rng(2)
    M = rng.standard_normal((4, 3))
    objective = BilinearGame(M, radius_w=50.0, radius_v=50.0, mu_w=0.5, mu_v=0.6)
    data = make_game_data(80, 4, 3, rng)
    start = (np.full(4, 3.0), np.full(3, -2.0))
    full = a_priori_solve(objective, data, start, 1e-7)[2]
    assert full == a_priori_steps(objective, start, 1e-7)
    target = 1e-6
    w, v, early = a_priori_solve(objective, data, start, 1e-7, target)
    assert early < full and certify(objective, data, w, v).weighted <= target


def test_certification_covers_the_pluggable_parts_and_grad():
    from skdpminimax.objectives import GroupDRO, LogisticLoss, SquareLossAUC
    from skdpminimax.objectives.scorers import LinearScorer

    class MyLoss(LogisticLoss):  # a user's loss: its bounds are nobody's proof
        def grad_bound(self, H):
            return 0.01

    class MyScorer(LinearScorer):
        pass

    assert certifies_constants(GroupDRO(3, LogisticLoss(), [0.5, 0.5], 1.0, 5.0))
    assert not certifies_constants(GroupDRO(3, MyLoss(), [0.5, 0.5], 1.0, 5.0))
    assert certifies_constants(SquareLossAUC(3, 0.4, 1.0, 5.0))
    assert not certifies_constants(SquareLossAUC(3, 0.4, 1.0, 5.0, scorer=MyScorer()))

    class SumGame(BilinearGame):  # overrides only grad (the full-batch gradient)
        def grad(self, w, v, data):
            gw, gv = super().grad(w, v, data)
            return data.n_samples * gw, data.n_samples * gv

    game = dict(radius_w=1.0, radius_v=1.0, mu_w=0.5, mu_v=0.5)
    assert certifies_constants(BilinearGame(np.eye(2), **game))
    assert not certifies_constants(SumGame(np.eye(2), **game))


def test_a_base_solver_answering_the_wrong_shape_does_not_fail_after_the_spend():
    from skdpminimax.solvers.base_solvers import CertifiedSolution

    class Malformed:
        def solve_saddle(self, objective, data, tol, init=None, rng=None):
            w, v = init
            return CertifiedSolution(np.append(w, 0.0), v, 0.0, 0.0, 1, 1)

    rng = np.random.default_rng(0)
    objective = BilinearGame(rng.standard_normal((4, 3)), radius_w=3.0, radius_v=3.0,
                             mu_w=0.7, mu_v=1.3)
    data = make_game_data(64, 4, 3, rng)
    res = OutputPerturbation(base_solver=Malformed()).solve(objective, data, INF,
                                                            np.random.default_rng(0))
    assert res.w.shape == (4,) and res.v.shape == (3,)


# ---- clipping survives rows where the objective blows up ----------------------------------

@pytest.mark.parametrize("clip", [2.0, np.array([1.0, 4.0, 0.5])])
def test_clipped_sum_keeps_each_row_in_the_clip_even_when_it_overflows(clip):
    """A row with inf or NaN counts as zero; a finite row whose squares overflow is
    clipped exactly. Before, one such row made the whole sum NaN."""
    from skdpminimax.privacy.mechanisms import clipped_sum
    c = np.broadcast_to(np.asarray(clip, dtype=float), (3,))
    rows = np.array([[1.0, 2.0, 0.5], [np.inf, 1.0, 0.0], [np.nan, 0.0, 0.0],
                     [1e300, -1e300, 0.0], [0.1, 0.0, -0.2]])
    total = clipped_sum(rows, clip)
    assert np.all(np.isfinite(total))

    def whitened_norm(row):  # scaled by the largest entry, so no square overflows
        peak = np.max(np.abs(row / c))
        return peak * np.linalg.norm(row / c / peak)

    expected = np.zeros(3)
    for row in rows[[0, 3, 4]]:
        expected += row * min(1.0, 1.0 / whitened_norm(row))
    np.testing.assert_allclose(total, expected, rtol=1e-12)
    # each row alone stays within the clip (whitened), the overflowing one at its edge
    for row in rows:
        alone = clipped_sum(row[None, :], clip)
        assert np.linalg.norm(alone / c) <= 1.0 + 1e-12
    np.testing.assert_allclose(np.linalg.norm(clipped_sum(rows[[3]], clip) / c), 1.0)


class _UnboundedLeastSquares(SaddleObjective):
    """(x.w - y) x: no finite gradient bound, so privacy comes from the solver's clip."""

    def __init__(self, n_features, data_norm):
        self.n_features = n_features

    def init_params(self, rng=None):
        return np.zeros(3), np.zeros(1)

    def per_example_values(self, w, v, data):
        return 0.5 * (data.X @ w - data.y) ** 2

    def per_example_grads(self, w, v, data):
        r = data.X @ w - data.y
        return r[:, None] * data.X, np.zeros((data.n_samples, 1))

    @property
    def primal_set(self):
        return L2Ball(10.0)

    @property
    def dual_set(self):
        return L2Ball(1.0)

    def lipschitz(self):
        return np.inf, 1.0


def test_one_extreme_target_does_not_turn_a_clipped_release_into_nan():
    rng = np.random.default_rng(0)
    X = rng.normal(size=(200, 3))
    y = X @ np.array([0.5, -0.5, 0.25]) + 0.1 * rng.normal(size=200)
    y[7] = -1e300  # a finite gradient whose squared norm overflows: clipped exactly
    est = DPSaddleEstimator(_UnboundedLeastSquares, epsilon=1.0, delta=1e-5,
                            data_norm=3.0, solver="sgda", random_state=0,
                            accountant=BudgetAccountant())
    est.fit(X, y)
    assert np.all(np.isfinite(est.coef_))
    # A gradient that overflows to inf at the start is refused before the spend (the
    # fit would count the row as zero: fitted on the others without a word)
    y[7] = -1.7e308
    ledger = BudgetAccountant()
    with pytest.raises(ValueError, match="not finite"):
        est.set_params(accountant=ledger).fit(X, y)
    assert ledger.spent_budget == []
