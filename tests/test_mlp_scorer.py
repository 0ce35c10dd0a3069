"""MLPScorer: gradients, per-example norms, Jacobian-free sums, use in the AUC objective."""

import numpy as np
import pytest
from scipy.optimize import check_grad

from skdpminimax.objectives import MLPScorer, SaddleData, SquareLossAUC


@pytest.fixture
def setup():
    rng = np.random.default_rng(0)
    X = rng.normal(size=(7, 4))
    scorer = MLPScorer(hidden_units=5, negative_slope=0.1)
    theta = scorer.init_params(4, rng) + 0.3 * rng.normal(size=scorer.n_params(4))
    return scorer, theta, X


def test_shapes_and_init_is_data_free():
    scorer = MLPScorer(hidden_units=3)
    assert scorer.n_params(4) == 3 * 6
    a = scorer.init_params(4, np.random.default_rng(1))
    b = scorer.init_params(4, np.random.default_rng(1))
    np.testing.assert_array_equal(a, b)
    assert not np.allclose(a, scorer.init_params(4, np.random.default_rng(2)))
    # PyTorch's nn.Linear bounds: 1/sqrt(fan_in).
    assert np.all(np.abs(a[: 3 * 5]) <= 1 / np.sqrt(4))
    assert np.all(np.abs(a[3 * 5 :]) <= 1 / np.sqrt(3))


def test_init_scale_multiplies_the_default_init():
    default = MLPScorer(hidden_units=3).init_params(4, np.random.default_rng(5))
    half = MLPScorer(hidden_units=3, init_scale=0.5).init_params(4, np.random.default_rng(5))
    np.testing.assert_allclose(half, 0.5 * default)
    for bad in (0.0, -1.0, np.inf, np.nan):
        with pytest.raises(ValueError, match="init_scale"):
            MLPScorer(init_scale=bad)


def test_scores_match_explicit_forward(setup):
    scorer, theta, X = setup
    H, d = 5, 4
    W1 = theta[: H * d].reshape(H, d)
    b1 = theta[H * d : H * d + H]
    w2 = theta[H * d + H :]
    Z = X @ W1.T + b1
    expected = np.where(Z > 0, Z, 0.1 * Z) @ w2
    np.testing.assert_allclose(scorer.scores(theta, X), expected)


def test_score_grads_check_grad(setup):
    scorer, theta, X = setup
    J = scorer.score_grads(theta, X)
    assert J.shape == (7, scorer.n_params(4))
    for i in range(X.shape[0]):
        err = check_grad(lambda t: scorer.scores(t, X[i : i + 1])[0],
                         lambda t: scorer.score_grads(t, X[i : i + 1])[0], theta)
        assert err < 1e-6 * max(1.0, np.linalg.norm(J[i]))


def test_jacobian_free_sum_and_norms_match_jacobian(setup):
    scorer, theta, X = setup
    J = scorer.score_grads(theta, X)
    weights = np.random.default_rng(3).normal(size=7)
    np.testing.assert_allclose(scorer.weighted_grad_sum(theta, X, weights), weights @ J)
    np.testing.assert_allclose(scorer.grad_norms(theta, X), np.linalg.norm(J, axis=1))


def test_no_public_bound_requires_clipping():
    scorer = MLPScorer(hidden_units=4)
    assert scorer.score_bound(1.0, 1.0) == np.inf and scorer.grad_bound(1.0, 1.0) == np.inf
    objective = SquareLossAUC(3, pos_ratio=0.4, data_norm=1.0, radius=5.0, scorer=scorer)
    assert objective.lipschitz() == (np.inf, np.inf)


def test_auc_objective_gradients_and_clipped_norms():
    rng = np.random.default_rng(4)
    X = rng.normal(size=(9, 3))
    y = np.where(rng.random(9) < 0.4, 1.0, -1.0)
    y[:2] = [1.0, -1.0]
    scorer = MLPScorer(hidden_units=6)
    obj = SquareLossAUC(3, pos_ratio=0.4, data_norm=10.0, radius=50.0, scorer=scorer)
    w, v = obj.init_params(rng)
    w = w + 0.2 * rng.normal(size=w.size)
    v = np.array([0.3])
    data = SaddleData(X, y)
    gw, gv = obj.per_example_grads(w, v, data)
    for i in range(9):
        row = data.take(np.array([i]))
        err = check_grad(lambda ww: obj.per_example_values(ww, v, row)[0],
                         lambda ww: obj.per_example_grads(ww, v, row)[0][0], w)
        assert err < 1e-5 * max(1.0, np.linalg.norm(gw[i]))
    # Clipped sums from the Jacobian-free path equal clipping the explicit rows.
    clip = 0.5 * np.median(np.linalg.norm(gw, axis=1))
    sw, sv = obj.clipped_grad_sums(w, v, data, clip, 0.1)
    norms = np.linalg.norm(gw, axis=1)
    assert np.any(norms > clip)
    expected = (gw * np.minimum(1.0, clip / norms)[:, None]).sum(axis=0)
    np.testing.assert_allclose(sw, expected, rtol=1e-10, atol=1e-12)
    np.testing.assert_allclose(sv, np.clip(gv[:, 0], -0.1, 0.1).sum(keepdims=True))


def test_a_clipped_step_computes_the_forward_pass_once():
    """A user-style probe's profile: the MLP's forward pass ran three times per step
    (scores, norms, weighted sum). It is shared now, with the same sums."""
    rng = np.random.default_rng(5)
    X = rng.normal(size=(20, 4))
    y = np.where(np.arange(20) % 3 == 0, 1.0, -1.0)
    scorer = MLPScorer(hidden_units=7)
    obj = SquareLossAUC(4, pos_ratio=0.35, data_norm=10.0, radius=50.0, scorer=scorer)
    w, v = obj.init_params(rng)
    data = SaddleData(X, y)
    calls = []
    original = scorer._forward
    scorer._forward = lambda theta, X: calls.append(1) or original(theta, X)
    sw, sv = obj.clipped_grad_sums(w, v, data, 0.3, 0.1)
    assert len(calls) == 1
    gw, gv = obj.per_example_grads(w, v, data)  # the unshared path
    norms = np.linalg.norm(gw, axis=1)
    expected = (gw * np.minimum(1.0, 0.3 / norms)[:, None]).sum(axis=0)
    np.testing.assert_allclose(sw, expected, rtol=1e-10, atol=1e-12)


def test_scores_in_blocks_of_rows_match_one_pass(setup, monkeypatch):
    """A scale probe: scoring 1e6 rows built the (n, 256) hidden layer four times over
    (7.8 GB). Scores are computed in blocks of rows; the blocks change no digit, for dense
    and sparse X."""
    import scipy.sparse as sp

    from skdpminimax.objectives import scorers

    scorer, theta, _ = setup
    X = np.random.default_rng(3).normal(size=(103, 4))
    whole = scorer.scores(theta, X)
    monkeypatch.setattr(scorers, "_SCORE_BLOCK_ENTRIES", 5 * 10)  # 10 rows a block
    np.testing.assert_array_equal(scorer.scores(theta, X), whole)
    np.testing.assert_allclose(scorer.scores(theta, sp.csr_matrix(X)), whole, rtol=1e-12)
    A, _ = scorer.forward(theta, X)
    np.testing.assert_array_equal(scorer.scores(theta, X, state=scorer.forward(theta, X)),
                                  A @ theta[-5:])
