"""The compiled NoisySGDA and NoisyExtragradient kernels agree with the numpy
reference loops step for step."""

import numpy as np
import pytest

from skdpminimax._compiled import nseg_kernel, sgda_kernel
from skdpminimax.objectives import SaddleData, SquareLossAUC
from skdpminimax.objectives.scorers import MLPScorer
from skdpminimax.privacy import PrivacyBudget, clip_rows
from skdpminimax.privacy.samplers import (
    DisjointBatches, FullBatch, PoissonSampler, WithoutReplacementSampler,
)
from skdpminimax.sets import Box, L2Ball, ProductSet, Reals, Simplex
from skdpminimax.solvers import NoisyExtragradient, NoisySGDA

numba = pytest.importorskip("numba")
from skdpminimax._compiled.glue import flat_set  # noqa: E402
from skdpminimax._compiled.kernels import project_flat  # noqa: E402


def auc_problem(seed=0, n=400, d=6, l2=0.1, radius=3.0, scorer=None):
    rng = np.random.default_rng(seed)
    y = np.where(rng.random(n) < 0.3, 1.0, -1.0)
    X = clip_rows(rng.normal(size=(n, d)) * 2 + 0.8 * y[:, None], 4.0)
    obj = SquareLossAUC(d, pos_ratio=0.3, data_norm=4.0, radius=radius, l2_reg=l2,
                        scorer=scorer)
    return obj, SaddleData(X, y)


def solve(backend, solver_params, budget, seed=3, solver=NoisySGDA, **problem):
    obj, data = auc_problem(**problem)
    solver = solver(backend=backend, **solver_params)
    return solver.solve(obj, data, budget, np.random.default_rng(seed))


CASES = [
    # (solver parameters, budget): clipping active (clip below the gradients), the
    # three samplers, the three averages, the four schedules, with and without noise
    (dict(batch_size=16, n_epochs=3, step_size=0.05, clip_w=0.5, clip_v=0.3), (1.0, 1e-5)),
    (dict(batch_size=16, n_epochs=3, step_size=0.05, sampler="without_replacement",
          average="tail", schedule="inverse_sqrt"), (0.5, 1e-5)),
    (dict(batch_size=None, n_iter=40, step_size="auto", average="last", clip_w=None,
          clip_v=None), (2.0, 1e-6)),
    (dict(batch_size=16, n_epochs=3, step_size=0.1, schedule="linear", average="last"),
     (1.0, 1e-5)),
    (dict(batch_size=32, n_epochs=2, step_size=0.1, schedule="strongly_convex",
          noise_allocation="equal"), (np.inf, 1e-5)),
]


@pytest.mark.parametrize("params, budget", CASES)
def test_kernel_matches_numpy_reference(params, budget):
    budget = PrivacyBudget(*budget)
    ref = solve("numpy", params, budget)
    fast = solve("numba", params, budget)
    # the same batches and noise: only the order of floating-point sums differs
    np.testing.assert_allclose(fast.w, ref.w, rtol=1e-9, atol=1e-11)
    np.testing.assert_allclose(fast.v, ref.v, rtol=1e-9, atol=1e-11)
    np.testing.assert_allclose(fast.info["w_last"], ref.info["w_last"], rtol=1e-9, atol=1e-11)
    assert fast.diagnostics == ref.diagnostics and fast.n_iter == ref.n_iter
    # and the iterates moved: the comparison is not between two untouched starts
    assert np.linalg.norm(ref.w) > 1e-3


NSEG_CASES = [
    # the multi-pass samplers, full batches, single pass (disjoint batches), extra
    # noise on the extrapolation (two oracles), clipping active, with and without noise
    (dict(mode="multi_pass", sampler="poisson", batch_size=16, n_epochs=3, step_size=0.05,
          clip_w=0.5, clip_v=0.3, extrapolation_noise=2.0), (1.0, 1e-5)),
    (dict(mode="multi_pass", batch_size=16, n_epochs=3, step_size=0.05), (0.5, 1e-5)),
    (dict(mode="multi_pass", batch_size=None, n_iter=40, clip_w=None, clip_v=None),
     (2.0, 1e-6)),
    (dict(mode="single_pass", batch_size=10, step_size=0.1), (1.0, 1e-5)),
    (dict(mode="multi_pass", sampler="poisson", batch_size=32, n_epochs=2, step_size=0.1),
     (np.inf, 1e-5)),
]


@pytest.mark.parametrize("params, budget", NSEG_CASES)
def test_nseg_kernel_matches_numpy_reference(params, budget):
    budget = PrivacyBudget(*budget)
    ref = solve("numpy", params, budget, solver=NoisyExtragradient)
    fast = solve("numba", params, budget, solver=NoisyExtragradient)
    np.testing.assert_allclose(fast.w, ref.w, rtol=1e-9, atol=1e-11)
    np.testing.assert_allclose(fast.v, ref.v, rtol=1e-9, atol=1e-11)
    for a, b in zip(fast.info["u_last"], ref.info["u_last"]):
        np.testing.assert_allclose(a, b, rtol=1e-9, atol=1e-11)
    assert fast.diagnostics == ref.diagnostics and fast.n_iter == ref.n_iter
    assert np.linalg.norm(ref.w) > 1e-3


def test_nseg_kernel_binds_projections_and_clipping():
    params = dict(mode="multi_pass", batch_size=20, n_epochs=4, step_size=0.5, clip_w=0.05,
                  clip_v=0.05)
    ref = solve("numpy", params, PrivacyBudget(np.inf, 1e-5), radius=0.02,
                solver=NoisyExtragradient)
    fast = solve("numba", params, PrivacyBudget(np.inf, 1e-5), radius=0.02,
                 solver=NoisyExtragradient)
    obj, _ = auc_problem(radius=0.02)
    assert np.linalg.norm(ref.info["u_last"][0][: obj.n_theta]) == pytest.approx(0.02)
    np.testing.assert_allclose(fast.info["u_last"][0], ref.info["u_last"][0], rtol=1e-9,
                               atol=1e-12)


def test_kernel_binds_projections_and_clipping():
    # A small ball and a tiny clip: both mechanisms act on every step; a kernel that
    # skipped either would diverge from the reference.
    params = dict(batch_size=20, n_epochs=4, step_size=0.5, clip_w=0.05, clip_v=0.05)
    ref = solve("numpy", params, PrivacyBudget(np.inf, 1e-5), radius=0.02)
    fast = solve("numba", params, PrivacyBudget(np.inf, 1e-5), radius=0.02)
    obj, _ = auc_problem(radius=0.02)
    assert np.linalg.norm(ref.info["w_last"][: obj.n_theta]) == pytest.approx(0.02)
    np.testing.assert_allclose(fast.info["w_last"], ref.info["w_last"], rtol=1e-9, atol=1e-12)


def test_auto_backend_uses_kernel_only_where_one_exists():
    obj, data = auc_problem()
    from skdpminimax.solvers.oracle import NoisyGradientOracle

    oracle = NoisyGradientOracle(obj, data, PoissonSampler(400, 16), (1.0, 1.0), 1.0, 1.0,
                                 np.random.default_rng(0))
    assert sgda_kernel(obj, oracle) is not None
    assert sgda_kernel(obj.regularized(0.1), oracle) is None  # no kernel for a wrapper
    mlp, mlp_data = auc_problem(scorer=MLPScorer(hidden_units=3))
    assert sgda_kernel(mlp, oracle) is None
    assert nseg_kernel(obj, oracle, oracle, 0.1) is not None
    assert nseg_kernel(mlp, oracle, oracle, 0.1) is None
    for solver in (NoisySGDA(backend="numba", n_epochs=1),
                   NoisyExtragradient(backend="numba", mode="multi_pass", n_epochs=1)):
        with pytest.raises(ValueError, match="no compiled kernel"):
            solver.solve(mlp, mlp_data, PrivacyBudget(1.0, 1e-5), np.random.default_rng(0))


def test_backend_numba_without_numba_is_a_clear_error(monkeypatch):
    import skdpminimax._compiled as compiled_module
    import skdpminimax.solvers.extragradient as nseg_module
    import skdpminimax.solvers.sgda as sgda_module

    monkeypatch.setattr(compiled_module, "numba_available", lambda: False)
    monkeypatch.setattr(sgda_module, "sgda_kernel", lambda objective, oracle: None)
    monkeypatch.setattr(nseg_module, "nseg_kernel", lambda *args: None)
    obj, data = auc_problem()
    for make in (lambda backend: NoisySGDA(backend=backend, n_epochs=1),
                 lambda backend: NoisyExtragradient(backend=backend, mode="multi_pass",
                                                    n_epochs=1)):
        with pytest.raises(ValueError, match="numba is not installed"):
            make("numba").solve(obj, data, PrivacyBudget(1.0, 1e-5), np.random.default_rng(0))
        with pytest.raises(ValueError, match="numba is not installed"):  # data-free: pre-spend
            make("numba").calibrate(obj, 100, PrivacyBudget(1.0, 1e-5))
        # "auto" falls back to numpy silently
        res = make("auto").solve(obj, data, PrivacyBudget(1.0, 1e-5), np.random.default_rng(0))
        assert np.all(np.isfinite(res.w))


SETS = [
    (ProductSet([(4, L2Ball(1.5)), (2, Box(-0.5, 0.5))]), 6),
    (ProductSet([(3, Reals()), (3, L2Ball(0.1))]), 6),
    (Box(-1.0, 2.0), 5),
    (L2Ball(2.0), 5),
]


@pytest.mark.parametrize("the_set, dim", SETS)
def test_flat_projection_equals_set_projection(the_set, dim):
    flat = flat_set(the_set, dim)
    rng = np.random.default_rng(1)
    for scale in (0.01, 1.0, 10.0):
        x = rng.normal(size=dim) * scale
        out = x.copy()
        project_flat(out, flat)
        np.testing.assert_allclose(out, the_set.project(x), rtol=1e-14, atol=0)


@pytest.mark.parametrize("the_set", [Simplex(), L2Ball(1.0, center=np.ones(3)),
                                     Box(np.zeros(3), np.ones(3))])
def test_sets_without_a_flat_form_are_refused(the_set):
    assert flat_set(the_set, 3) is None


@pytest.mark.parametrize("sampler", [PoissonSampler(50, 7), WithoutReplacementSampler(50, 7),
                                     FullBatch(50), DisjointBatches(50, 7)])
def test_batch_chunks_and_batches_draw_the_same_batches(sampler):
    steps = 6 if isinstance(sampler, DisjointBatches) else 23
    one_by_one = list(sampler.batches(np.random.default_rng(5), steps))
    chunked = []
    for indices, starts, stops in sampler.batch_chunks(np.random.default_rng(5), steps, 1024):
        chunked += [None if indices is None else indices[a:b] for a, b in zip(starts, stops)]
    assert len(chunked) == len(one_by_one) == steps
    for a, b in zip(one_by_one, chunked):
        assert (a is None and b is None) or np.array_equal(a, b)


def test_a_row_whose_gradient_overflows_counts_as_zero_as_in_clipped_sum():
    """A review: unlike clipped_sum, the kernel added an overflowing row's gradient
    (inf * 0 = NaN after the clip), so one row could turn the released sum into NaN."""
    from skdpminimax._compiled.kernels import linear_auc_clipped_sums
    X = np.array([[1e200, 0.0], [0.5, -0.25]])
    y = np.array([1.0, -1.0])
    s = np.array([0.7, 0.3])  # the per-example weights of aux: (s, s * y, ||x||^2)
    with np.errstate(over="ignore"):  # the first row's squared norm is inf
        aux = np.column_stack([s, s * y, np.sum(X ** 2, axis=1)])
    w, v = np.array([1e200, 0.0, 0.1, -0.1]), np.array([0.2])
    rows = np.array([0, 1])
    both, second = np.zeros(4), np.zeros(4)
    sv_both = linear_auc_clipped_sums(w, v, X, y, aux, rows, 0, 2, 1.0, 1.0, both)
    sv_second = linear_auc_clipped_sums(w, v, X, y, aux, rows, 1, 2, 1.0, 1.0, second)
    assert np.all(np.isfinite(both)) and np.isfinite(sv_both)
    np.testing.assert_array_equal(both, second)
    assert sv_both == sv_second
