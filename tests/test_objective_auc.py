"""The square-loss AUC objective: gradients, public gradient bounds, closed-form optimum."""

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from scipy.optimize import check_grad

from skdpminimax.objectives import SaddleData, SquareLossAUC
from skdpminimax.privacy import clip_rows, clipped_sum


def make_problem(seed, n=40, d=5, p=0.3, data_norm=2.0, radius=3.0, l2=0.1):
    rng = np.random.default_rng(seed)
    X = clip_rows(rng.normal(size=(n, d)), data_norm)
    y = np.where(rng.random(n) < p, 1.0, -1.0)
    y[:2] = [1.0, -1.0]
    obj = SquareLossAUC(d, pos_ratio=p, data_norm=data_norm, radius=radius, l2_reg=l2)
    return obj, SaddleData(X, y), rng


def random_point(obj, rng):
    w = obj.primal_set.project(rng.normal(size=obj.n_theta + 2) * 3)
    v = obj.dual_set.project(rng.normal(size=1) * 3)
    return w, v


@pytest.mark.parametrize("seed", range(3))
def test_gradients_match_finite_differences(seed):
    obj, data, rng = make_problem(seed)
    w, v = random_point(obj, rng)
    for i in range(3):
        row = data.take(np.array([i]))
        gw, gv = obj.per_example_grads(w, v, row)
        err_w = check_grad(lambda w_: obj.per_example_values(w_, v, row)[0],
                           lambda w_: obj.per_example_grads(w_, v, row)[0][0], w)
        err_v = check_grad(lambda v_: obj.per_example_values(w, v_, row)[0],
                           lambda v_: obj.per_example_grads(w, v_, row)[1][0], v)
        assert err_w < 1e-5 * max(1.0, np.linalg.norm(gw))
        assert err_v < 1e-5 * max(1.0, np.linalg.norm(gv))
    # full objective including the data-free term
    err = check_grad(lambda w_: obj.value(w_, v, data), lambda w_: obj.grad(w_, v, data)[0], w)
    assert err < 1e-5
    err = check_grad(lambda v_: obj.value(w, v_, data), lambda v_: obj.grad(w, v_, data)[1], v)
    assert err < 1e-5


@settings(max_examples=60, deadline=None)
@given(seed=st.integers(0, 10_000), p=st.floats(0.01, 0.99),
       data_norm=st.floats(0.1, 10.0), radius=st.floats(0.1, 10.0))
def test_per_example_gradients_never_exceed_lipschitz_bounds(seed, p, data_norm, radius):
    rng = np.random.default_rng(seed)
    d = 4
    # rows anywhere in the data_norm ball, including on its boundary
    X = rng.normal(size=(30, d))
    X = X / np.linalg.norm(X, axis=1, keepdims=True) * data_norm * rng.uniform(0, 1, (30, 1)) ** 0.2
    y = np.where(rng.random(30) < 0.5, 1.0, -1.0)
    obj = SquareLossAUC(d, pos_ratio=p, data_norm=data_norm, radius=radius, l2_reg=0.5)
    g_w, g_v = obj.lipschitz()
    for _ in range(5):
        # extreme points of the feasible set stress the bound
        w, v = random_point(obj, rng)
        w = obj.primal_set.project(w * 100)
        v = obj.dual_set.project(v * 100)
        gw, gv = obj.per_example_grads(w, v, SaddleData(X, y))
        assert np.linalg.norm(gw, axis=1).max() <= g_w * (1 + 1e-9)
        assert np.abs(gv).max() <= g_v * (1 + 1e-9)


@pytest.mark.parametrize("clip", [0.05, 0.5, 1e6])
def test_fast_clipped_sums_equal_generic_clipping(clip):
    obj, data, rng = make_problem(4)
    w, v = random_point(obj, rng)
    sw, sv = obj.clipped_grad_sums(w, v, data, clip, clip)
    gw, gv = obj.per_example_grads(w, v, data)
    np.testing.assert_allclose(sw, clipped_sum(gw, clip), rtol=1e-10, atol=1e-12)
    np.testing.assert_allclose(sv, clipped_sum(gv, clip), rtol=1e-10, atol=1e-12)


def test_closed_form_saddle_in_a_b_alpha():
    # For fixed theta, with p = empirical ratio and no regularisation on (a, b):
    # a* = E[h | y=1], b* = E[h | y=-1], alpha* = b* - a*, and the saddle value is
    # p(1-p) (E[(1 - h(x) + h(x'))^2 | y=1, y'=-1] - 1).
    rng = np.random.default_rng(5)
    n, d = 60, 4
    X = rng.normal(size=(n, d))
    y = np.where(np.arange(n) < 18, 1.0, -1.0)
    p = 18 / n
    obj = SquareLossAUC(d, pos_ratio=p, data_norm=100.0, radius=100.0, l2_reg=0.0)
    data = SaddleData(X, y)
    theta = rng.normal(size=d)
    h = X @ theta
    a, b = h[y > 0].mean(), h[y < 0].mean()
    w = np.concatenate([theta, [a, b]])
    v = np.array([b - a])
    gw, gv = obj.grad(w, v, data)
    assert abs(gw[d]) < 1e-12 and abs(gw[d + 1]) < 1e-12  # stationary in a and b
    assert abs(gv[0]) < 1e-12  # stationary in alpha
    pairwise = np.mean((1 - h[y > 0][:, None] + h[y < 0][None, :]) ** 2)
    assert obj.value(w, v, data) == pytest.approx(p * (1 - p) * (pairwise - 1), rel=1e-10)


def test_invalid_pos_ratio():
    with pytest.raises(ValueError, match="pos_ratio"):
        SquareLossAUC(3, pos_ratio=1.0, data_norm=1.0, radius=1.0)


def test_a_row_whose_score_overflows_adds_nothing_to_the_clipped_sums():
    """An accounting audit: an MLP score that overflowed to inf got clip factor 0 but
    weight inf, and inf * 0 turned the whole primal sum into NaN (the fit then failed
    after the spend, revealing the row). It needs weights of norm ~1e154 (a radius that
    large); the row must add nothing, as clip_factors says."""
    from skdpminimax.objectives.base import SaddleData
    from skdpminimax.objectives.scorers import MLPScorer

    objective = SquareLossAUC(2, 0.5, 3.0, 1e160, scorer=MLPScorer(hidden_units=1))
    w = np.concatenate([np.array([1.0, 0.0, 0.0, 1.0]) * 1e154, [0.0, 0.0]])
    X = np.array([[1e-3, 0.0], [2e-3, 0.0], [3.0, 0.0]])  # the last row's score overflows
    data = objective.prepare(SaddleData(X, np.array([1.0, -1.0, 1.0])))
    with np.errstate(all="ignore"):
        without = objective.clipped_grad_sums(w, np.zeros(1), data.take(np.array([0, 1])),
                                              5.0, 1.0)
        with_row = objective.clipped_grad_sums(w, np.zeros(1), data, 5.0, 1.0)
    for block_without, block_with in zip(without, with_row):
        assert np.all(np.isfinite(block_with))
    np.testing.assert_array_equal(with_row[0], without[0])


@pytest.mark.parametrize("scorer", ["linear", "mlp"])
def test_grad_is_the_mean_without_the_per_example_matrix(monkeypatch, scorer):
    # A scale probe: output perturbation's certified solve calls grad on the whole data,
    # and SquareLossAUC took the mean of per_example_grads, an n x (d + 2) dense matrix
    # even for sparse X. Now the scorer's weighted sum, as GroupDRO.grad.
    import scipy.sparse as sp

    from skdpminimax.objectives import MLPScorer, SaddleObjective
    from skdpminimax.objectives.scorers import LinearScorer

    rng = np.random.default_rng(1)
    X = rng.normal(size=(200, 6)) / 3
    X[rng.random(X.shape) < 0.5] = 0.0
    y = np.where(rng.random(200) < 0.3, 1.0, -1.0)
    obj = SquareLossAUC(6, 0.3, 3.0, 5.0, l2_reg=0.1,
                        scorer=MLPScorer(8) if scorer == "mlp" else None)
    w, v = obj.init_params(rng)
    w = w + rng.normal(size=w.size) * 0.2
    v = v + 0.3
    expected = SaddleObjective.grad(obj, w, v, SaddleData(X, y))

    def refused(*args, **kwargs):
        raise AssertionError("grad formed the per-example matrix")

    monkeypatch.setattr(type(obj.scorer), "score_grads", refused)
    assert isinstance(obj.scorer, (LinearScorer, MLPScorer))
    for X_ in (X, sp.csr_matrix(X)):
        got = obj.grad(w, v, SaddleData(X_, y))
        for a, b in zip(got, expected):
            np.testing.assert_allclose(a, b, rtol=1e-12, atol=1e-15)


def test_typical_solution_norm_grows_with_the_dimension_above_100():
    """10 / data_norm up to d = 100 (dense rows: scores of a few units), sqrt(d) /
    data_norm above (a sparse row's rare coordinates need large weights): public,
    and never below the dense guess (benchmarks/auc_solution_norm.py)."""
    from skdpminimax.objectives.scorers import MLPScorer

    for d, expected in ((30, 10.0), (100, 10.0), (400, 20.0), (3000, 3000 ** 0.5)):
        objective = SquareLossAUC(d, 0.3, data_norm=4.0, radius=10.0)
        assert objective.typical_solution_norm() == pytest.approx(expected / 4.0)
    mlp = SquareLossAUC(400, 0.3, data_norm=4.0, radius=10.0, scorer=MLPScorer(8))
    assert mlp.typical_solution_norm() is None
