"""Group DRO and demographic-parity objectives: gradients, bounds, saddle points."""

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from scipy.optimize import check_grad, minimize

from skdpminimax.objectives import (
    DemographicParityRegression,
    GroupDRO,
    LogisticLoss,
    MultinomialLoss,
    SaddleData,
    SquaredLoss,
)
from skdpminimax.privacy.budget import PrivacyBudget
from skdpminimax.privacy.mechanisms import clip_rows, clipped_sum
from skdpminimax.sets import Simplex
from skdpminimax.solvers import NoisySGDA

K_GROUPS = 3


def _data(rng, n=40, d=4, task="binary", data_norm=2.0):
    X = clip_rows(rng.normal(size=(n, d)), data_norm)
    groups = np.arange(n) % K_GROUPS
    if task == "binary":
        y = rng.choice([-1.0, 1.0], size=n)
    elif task == "multinomial":
        y = (np.arange(n) % 3).astype(float)
    else:
        y = rng.uniform(-1.5, 1.5, size=n)  # some outside bounds (-1, 1): clipped
    return SaddleData(X, y, groups)


def _objectives(d=4, data_norm=2.0, radius=3.0):
    pi = np.array([0.2, 0.3, 0.5])
    return {
        "binary": GroupDRO(d, LogisticLoss(), pi, data_norm, radius, dual_reg=0.3, l2_reg=0.1),
        "multinomial": GroupDRO(d, MultinomialLoss(3), pi, data_norm, radius, dual_reg=0.3),
        "squared": GroupDRO(d, SquaredLoss((-1, 1)), pi, data_norm, radius, fit_intercept=False),
        "parity": DemographicParityRegression(d, pi, data_norm, radius, (-1, 1), tolerance=0.1,
                                              multiplier_bound=2.0, dual_reg=0.2, l2_reg=0.1),
    }


def _task(name):
    return {"binary": "binary", "multinomial": "multinomial"}.get(name, "regression")


def _random_point(obj, rng, scale=1.0):
    w0, v0 = obj.init_params()
    w = obj.primal_set.project(scale * rng.normal(size=w0.size))
    v = obj.dual_set.project(rng.uniform(-1, 3, size=v0.size))
    return w, v


@pytest.mark.parametrize("name", ["binary", "multinomial", "squared", "parity"])
def test_gradients_match_finite_differences(name):
    rng = np.random.default_rng(0)
    obj = _objectives()[name]
    data = _data(rng, task=_task(name))
    w, v = _random_point(obj, rng, scale=0.5)
    nw = w.size

    def f(z):
        return obj.value(z[:nw], z[nw:], data)

    def g(z):
        gw, gv = obj.grad(z[:nw], z[nw:], data)
        return np.concatenate([gw, gv])

    z = np.concatenate([w, v])
    assert check_grad(f, g, z, epsilon=1e-6) < 1e-5 * max(1.0, np.linalg.norm(g(z)))


@pytest.mark.parametrize("name", ["binary", "multinomial", "squared", "parity"])
@pytest.mark.parametrize("clip", [np.inf, 0.3])
def test_fast_clipped_sums_equal_materialised_ones(name, clip):
    rng = np.random.default_rng(1)
    obj = _objectives()[name]
    data = _data(rng, task=_task(name))
    w, v = _random_point(obj, rng)
    gw, gv = obj.per_example_grads(w, v, data)
    sw, sv = obj.clipped_grad_sums(w, v, data, clip, clip)
    np.testing.assert_allclose(sw, clipped_sum(gw, clip), rtol=1e-10, atol=1e-12)
    np.testing.assert_allclose(sv, clipped_sum(gv, clip), rtol=1e-10, atol=1e-12)


class _NegativeMarginLoss(LogisticLoss):
    """``ell(z, y) = -y z``: convex and 1-Lipschitz, and negative (a user's loss may be)."""

    def values(self, Z, y):
        return -y * Z[:, 0]

    def score_grads(self, Z, y):
        return (-y)[:, None] * np.ones_like(Z)

    def value_bound(self, H):
        return H


@pytest.mark.parametrize("margin", [10.0, 1e308, np.inf])
def test_a_negative_loss_is_clipped_in_the_dual_block_too(margin):
    """The dual gradient of an example, ell / pi_g, is clipped both ways: a loss
    object of the user's may be negative (it was capped from above only)."""
    obj = GroupDRO(2, _NegativeMarginLoss(), [0.5, 0.5], data_norm=1.0, radius=np.inf)
    w, v = np.array([margin, 0.0, 0.0]), np.array([0.5, 0.5])
    rows = SaddleData(np.array([[1.0, 0.0], [1.0, 0.0]]), np.array([1.0, -1.0]),
                      np.array([0, 1]))
    with np.errstate(all="ignore"):
        gw, gv = obj.per_example_grads(w, v, rows)
        sw, sv = obj.clipped_grad_sums(w, v, rows, 1.0, 0.5)
    assert np.all(np.isfinite(sv)) and np.all(np.abs(sv) <= 0.5)
    if margin < 1e300:  # equal to the materialised clip where ell / pi does not overflow
        np.testing.assert_allclose(sv, clipped_sum(gv, 0.5))
    assert sv[0] == -0.5 and sv[1] == 0.5


@pytest.mark.parametrize("name", ["binary", "multinomial", "squared", "parity"])
@pytest.mark.parametrize("sparse", [False, True])
def test_mean_gradient_equals_the_mean_of_per_example_ones(name, sparse):
    """GroupDRO's grad sums without forming per-example gradients (the certified
    solves' hot path); it, and a regularised wrapper's, must be the generic mean."""
    import scipy.sparse as sp

    from skdpminimax.objectives.base import SaddleObjective

    rng = np.random.default_rng(2)
    obj = _objectives()[name]
    data = _data(rng, task=_task(name))
    if sparse:
        data = SaddleData(sp.csr_matrix(data.X), data.y, data.groups)
    w, v = _random_point(obj, rng)
    for objective in (obj, obj.regularized(0.7, 0.2, center_w=np.ones_like(w),
                                           center_v=np.full_like(v, 0.1))):
        generic = SaddleObjective.grad(objective, w, v, data)
        fast = objective.grad(w, v, data)
        for a, b in zip(fast, generic):
            np.testing.assert_allclose(a, b, rtol=1e-12, atol=1e-14)


def test_a_subclass_with_its_own_per_example_gradients_gets_their_mean():
    """A user probe: a GroupDRO subclass that halves its data term (and declares its
    halved bounds) was certified by output perturbation against the parent's gradient,
    i.e. the wrong saddle point, with noise calibrated for the subclass's sensitivity."""
    from skdpminimax.objectives.base import SaddleObjective

    class HalfWeight(GroupDRO):
        certified_constants = True

        def per_example_values(self, w, v, data):
            return 0.5 * super().per_example_values(w, v, data)

        def per_example_grads(self, w, v, data):
            gw, gv = super().per_example_grads(w, v, data)
            return 0.5 * gw, 0.5 * gv

    rng = np.random.default_rng(4)
    pi = np.array([0.2, 0.3, 0.5])
    obj = HalfWeight(4, LogisticLoss(), pi, 2.0, 3.0, dual_reg=0.3, l2_reg=0.1)
    data = _data(rng)
    w, v = _random_point(obj, rng)
    for objective in (obj, obj.regularized(0.5)):
        for a, b in zip(objective.grad(w, v, data), SaddleObjective.grad(objective, w, v, data)):
            np.testing.assert_allclose(a, b, rtol=1e-12, atol=1e-14)
    parent = GroupDRO(4, LogisticLoss(), pi, 2.0, 3.0, dual_reg=0.3, l2_reg=0.1)
    assert not np.allclose(obj.grad(w, v, data)[0], parent.grad(w, v, data)[0])


@pytest.mark.parametrize("scale", [1.0, 1e3, 1e6])
def test_multinomial_loss_matches_scipys_softmax(scale):
    """The loss computes its log-softmax in plain numpy (speed); it must agree with
    scipy's, extreme logits included."""
    from scipy.special import log_softmax, softmax

    rng = np.random.default_rng(3)
    Z = scale * rng.normal(size=(200, 4))
    y = rng.integers(0, 4, size=200).astype(float)
    loss = MultinomialLoss(4)
    rows = np.arange(200), y.astype(int)
    expected_grads = softmax(Z, axis=1)
    expected_grads[rows] -= 1.0
    np.testing.assert_allclose(loss.values(Z, y), -log_softmax(Z, axis=1)[rows],
                               rtol=1e-12, atol=1e-12)
    np.testing.assert_allclose(loss.score_grads(Z, y), expected_grads, rtol=1e-12, atol=1e-12)
    assert np.all(np.isfinite(loss.values(Z, y)))


@settings(max_examples=40, deadline=None)
@given(seed=st.integers(0, 2**31 - 1), name=st.sampled_from(["binary", "multinomial", "squared",
                                                             "parity"]),
       scale=st.floats(0.1, 100.0), boundary=st.booleans())
def test_per_example_gradients_within_lipschitz(seed, name, scale, boundary):
    rng = np.random.default_rng(seed)
    obj = _objectives()[name]
    data = _data(rng, task=_task(name))
    if boundary:  # rows on the sphere of radius data_norm, w on the ball's boundary
        data.X = 2.0 * data.X / np.linalg.norm(data.X, axis=1, keepdims=True)
        scale = 1e3
    w, v = _random_point(obj, rng, scale=scale)
    gw, gv = obj.per_example_grads(w, v, data)
    g_w, g_v = obj.lipschitz()
    assert np.linalg.norm(gw, axis=1).max() <= g_w * (1 + 1e-9)
    assert np.linalg.norm(gv, axis=1).max() <= g_v * (1 + 1e-9)
    assert np.all(np.isfinite(obj.per_example_values(w, v, data)))


def test_extreme_logits_do_not_overflow():
    X = np.array([[1e3, 0.0], [-1e3, 0.0]])
    data = SaddleData(X, np.array([1.0, -1.0]), np.array([0, 1]))
    for loss, y in ((LogisticLoss(), data.y), (MultinomialLoss(3), np.array([0.0, 2.0]))):
        obj = GroupDRO(2, loss, [0.5, 0.5], data_norm=1e3, radius=1e3)
        data.y = y
        w = obj.primal_set.project(np.full(obj.model.n_params, 1e3))
        with np.errstate(over="raise", invalid="raise", divide="raise"):
            values = obj.per_example_values(w, np.array([0.5, 0.5]), data)
            gw, gv = obj.per_example_grads(w, np.array([0.5, 0.5]), data)
        assert np.all(np.isfinite(values)) and np.all(np.isfinite(gw)) and np.all(np.isfinite(gv))


def test_per_example_form_is_the_weighted_group_risk():
    rng = np.random.default_rng(2)
    data = _data(rng, n=60)
    pi = np.bincount(data.groups) / data.n_samples
    obj = GroupDRO(4, LogisticLoss(), pi, 2.0, 3.0)
    w, _ = _random_point(obj, rng)
    q = np.array([0.1, 0.6, 0.3])
    assert np.isclose(obj.value(w, q, data), q @ obj.group_risks(w, data))


# ---- epsilon = inf reaches the reference saddle point -----------------------------------
def _dro_reference(obj, data):
    """min_w max_q sum_k q_k R_k(w) - lam/2||q - 1/K||^2 + alpha/2||w||^2 by L-BFGS on w.

    The inner maximiser is closed-form (a simplex projection), so the envelope is smooth.
    """
    K, lam = obj.n_groups, obj.dual_reg
    simplex = Simplex()

    def q_star(w):
        return simplex.project(1.0 / K + obj.group_risks(w, data) / lam)

    def envelope(w):
        q = q_star(w)
        return obj.value(w, q, data), obj.grad(w, q, data)[0]

    w = minimize(envelope, np.zeros(obj.model.n_params), jac=True, method="L-BFGS-B",
                 options={"gtol": 1e-10, "maxiter": 2000}).x
    return w, q_star(w)


@pytest.mark.parametrize("task", ["binary", "regression"])
def test_noise_free_gda_reaches_reference_dro_saddle_point(task):
    rng = np.random.default_rng(3)
    data = _data(rng, n=90, d=3, task=task, data_norm=1.5)
    data.groups = (data.X[:, 0] > 0.3).astype(int) + (data.X[:, 1] > 0.0)  # unequal groups
    pi = np.bincount(data.groups) / data.n_samples
    loss = LogisticLoss() if task == "binary" else SquaredLoss((-1, 1))
    obj = GroupDRO(3, loss, pi, 1.5, radius=50.0, dual_reg=0.5, l2_reg=0.05)
    w_ref, q_ref = _dro_reference(obj, data)
    assert np.linalg.norm(w_ref) < 50.0  # the ball constraint is inactive at the reference
    solver = NoisySGDA(batch_size=None, n_iter=4000, step_size=0.5, clip_w=None, clip_v=None,
                       average="last")
    res = solver.solve(obj, data, PrivacyBudget(np.inf, 1e-5), np.random.default_rng(0))
    np.testing.assert_allclose(res.w, w_ref, atol=2e-3)
    np.testing.assert_allclose(res.v, q_ref, atol=2e-3)


def test_noise_free_gda_reaches_reference_parity_saddle_point():
    rng = np.random.default_rng(4)
    data = _data(rng, n=90, d=3, task="regression", data_norm=1.5)
    data.y = np.clip(data.X[:, 0] + 0.2 * data.groups - 0.2, -1, 1)
    pi = np.bincount(data.groups) / data.n_samples
    obj = DemographicParityRegression(3, pi, 1.5, 50.0, (-1, 1), tolerance=0.02,
                                      multiplier_bound=5.0, dual_reg=0.5, l2_reg=0.05)
    K, B, t, nu = obj.n_groups, obj.multiplier_bound, obj.tolerance, obj.dual_reg

    def v_star(w):  # per coordinate: argmax of lam * c - t lam - nu/2 lam^2 on [0, B]
        c = obj.group_mean_gaps(w, data)
        return np.clip((np.concatenate([c, -c]) - t) / nu, 0.0, B)

    def envelope(w):
        v = v_star(w)
        return obj.value(w, v, data), obj.grad(w, v, data)[0]

    w_ref = minimize(envelope, np.zeros(obj.model.n_params), jac=True, method="L-BFGS-B",
                     options={"gtol": 1e-10, "maxiter": 2000}).x
    v_ref = v_star(w_ref)
    assert np.any(v_ref > 0)  # the constraint binds: the test exercises the multipliers
    solver = NoisySGDA(batch_size=None, n_iter=4000, step_size=0.3, clip_w=None, clip_v=None,
                       average="last")
    res = solver.solve(obj, data, PrivacyBudget(np.inf, 1e-5), np.random.default_rng(0))
    np.testing.assert_allclose(res.w, w_ref, atol=2e-3)
    np.testing.assert_allclose(res.v, v_ref, atol=5e-3)


@pytest.mark.parametrize("x", [[3e16, 1e16, -2e16], [1e20, 1e20 + 1e5, 0.0], [-1e300, 0.0, 5.0]])
def test_simplex_projection_of_huge_entries(x):
    """A review: entries of ~1e16 (output perturbation's noise at a huge data_norm)
    rounded every candidate threshold away and raised IndexError after the spend."""
    x = np.asarray(x)
    p = Simplex().project(x)
    assert np.all(p >= 0) and p.sum() == pytest.approx(1.0)
    assert p[np.argmax(x)] == pytest.approx(1.0)


def test_parity_grad_is_the_mean_without_the_per_example_matrix(monkeypatch):
    # A scale probe: output perturbation's certified solve calls grad on the whole data,
    # and DemographicParityRegression took the mean of per_example_grads, an n x (d + 1)
    # dense matrix even for sparse X (64 MB for 2,000 x 2,000; 80 GB for 50,000 rows of
    # 200,000 features). Now weighted sums, as GroupDRO.grad.
    import scipy.sparse as sp

    from skdpminimax.objectives import SaddleObjective
    from skdpminimax.objectives.losses import LinearModel

    rng = np.random.default_rng(0)
    X = rng.normal(size=(300, 7)) / 3
    X[rng.random(X.shape) < 0.5] = 0.0
    obj = DemographicParityRegression(7, [0.3, 0.3, 0.4], 3.0, 5.0, (-2, 2), tolerance=0.05,
                                      l2_reg=0.1, dual_reg=0.2)
    w = rng.normal(size=8) * 0.3
    v = rng.uniform(0, 0.5, size=6)
    data = SaddleData(X, rng.normal(size=300), rng.integers(0, 3, 300))
    expected = SaddleObjective.grad(obj, w, v, data)  # the mean of per_example_grads

    def refused(*args, **kwargs):
        raise AssertionError("grad formed the per-example matrix")

    monkeypatch.setattr(LinearModel, "per_example_grads", refused)
    for X_ in (X, sp.csr_matrix(X)):
        got = obj.grad(w, v, SaddleData(X_, data.y, data.groups))
        for a, b in zip(got, expected):
            np.testing.assert_allclose(a, b, rtol=1e-12, atol=1e-15)


def test_the_checks_before_the_spend_form_per_example_gradients_of_one_row(monkeypatch):
    # A scale probe: the stand-in check called per_example_grads on one row per class
    # (up to 64): for 100 classes of 20,000 sparse features 1.1 GB before the spend (10 GB
    # at 200,000 features), though the solvers never form that matrix for the built-in
    # objectives. It is now checked on one row; a user's objective still on every code.
    import scipy.sparse as sp

    from skdpminimax import DPRobustClassifier

    rows = []
    original = GroupDRO.per_example_grads

    def recording(self, w, v, data):
        rows.append(data.n_samples)
        return original(self, w, v, data)

    monkeypatch.setattr(GroupDRO, "per_example_grads", recording)
    rng = np.random.default_rng(0)
    X = sp.random(600, 50, density=0.1, format="csr", random_state=0)
    y = rng.integers(0, 20, 600)
    DPRobustClassifier(epsilon=1.0, data_norm=1.0, random_state=0)._check_fit(X, y)
    assert rows and max(rows) == 1
