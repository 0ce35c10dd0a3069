"""Per-coordinate dual clips (``clip_v="auto"`` on group objectives): the ellipsoidal
clip, its noise, its sensitivity, and what it changes for the robust classifier."""

import math
import warnings

import numpy as np
import pytest
from scipy.optimize import minimize
from scipy.special import logsumexp

from skdpminimax import DPRobustClassifier
from skdpminimax.objectives import GroupDRO, SaddleData, SquareLossAUC
from skdpminimax.objectives import LogisticLoss, MultinomialLoss, SquaredLoss
from skdpminimax.privacy.budget import PrivacyBudget
from skdpminimax.privacy.mechanisms import clip_rows, clipped_sum
from skdpminimax.privacy.samplers import make_sampler
from skdpminimax.sets import Simplex
from skdpminimax.solvers import NoisySGDA
from skdpminimax.solvers import sgda as sgda_module
from skdpminimax.solvers.oracle import NoisyGradientOracle, dual_clips, resolve_clip_norms

PI = np.array([0.05, 0.15, 0.8])


def _group_problem(rng, n=600, loss=None):
    X = clip_rows(rng.normal(size=(n, 3)), 2.0)
    groups = rng.choice(3, size=n, p=PI)
    y = np.where(X[:, 0] + 0.5 * rng.normal(size=n) > 0, 1.0, -1.0)
    obj = GroupDRO(3, loss or LogisticLoss(), PI, data_norm=2.0, radius=5.0, dual_reg=1.0)
    return obj, SaddleData(X, y, groups)


@pytest.mark.parametrize("loss, ell0", [(LogisticLoss(), math.log(2.0)),
                                        (MultinomialLoss(4), math.log(4.0)),
                                        (SquaredLoss((-2.0, 1.0)), 4.0)])
def test_group_dro_dual_clips_formula(loss, ell0):
    obj = GroupDRO(3, loss, PI, data_norm=2.0, radius=5.0)
    # without noise: each group's start value ell(0) / pi_g
    np.testing.assert_allclose(obj.typical_dual_clips(0.0), ell0 / PI)
    # with noise 0.1 a step: the 5% group is capped at ell(0) / 0.1, the others keep theirs
    np.testing.assert_allclose(obj.typical_dual_clips(0.1), ell0 / np.array([0.1, 0.15, 0.8]))
    # so no coordinate's noise (noise_scale * c_g) exceeds ell(0)
    for scale in (1e-3, 0.1, 3.0):
        assert np.all(scale * obj.typical_dual_clips(scale) <= ell0 * (1 + 1e-12))
    # a regularised copy (recursive regularisation) forwards the hook
    np.testing.assert_allclose(obj.regularized(0.5).typical_dual_clips(0.1),
                               obj.typical_dual_clips(0.1))


def test_objectives_without_the_hook_keep_one_scalar_clip():
    auc = SquareLossAUC(3, 0.3, data_norm=2.0, radius=5.0)
    assert auc.typical_dual_clips(0.1) is None
    sampler = make_sampler("poisson", 1000, 50)
    resolved = resolve_clip_norms(auc, 1.0, "auto")[1]
    assert dual_clips(auc, "auto", resolved, 2.0, sampler) == resolved


def test_dual_clips_rule():
    obj = GroupDRO(3, LogisticLoss(), PI, data_norm=2.0, radius=5.0)
    for kind, factor in (("poisson", 1.0), ("without_replacement", 2.0)):
        sampler = make_sampler(kind, 1000, 50)
        assert sampler.sensitivity_factor == factor
        z_v = 3.0
        scale = z_v * factor / 50.0  # noise std on the mean gradient per unit clip
        got = dual_clips(obj, "auto", 9.9, z_v, sampler)
        np.testing.assert_allclose(got, np.minimum(math.log(2.0) / np.maximum(PI, scale),
                                                   obj.lipschitz()[1]))
    # an explicit clip, or None (the certified bound), is left as resolved
    assert dual_clips(obj, 2.0, 2.0, 3.0, sampler) == 2.0
    assert dual_clips(obj, None, obj.lipschitz()[1], 3.0, sampler) == obj.lipschitz()[1]


def test_ellipsoidal_clipped_sum():
    rng = np.random.default_rng(0)
    U = rng.normal(size=(200, 4)) * np.array([0.1, 1.0, 5.0, 20.0])
    c = np.array([0.5, 1.0, 2.0, 8.0])
    rows = np.array([clipped_sum(U[i : i + 1], c) for i in range(len(U))])
    np.testing.assert_allclose(rows.sum(axis=0), clipped_sum(U, c))
    whitened = np.linalg.norm(rows / c, axis=1)
    assert whitened.max() <= 1.0 + 1e-12
    inside = np.linalg.norm(U / c, axis=1) <= 1.0
    assert inside.any() and (~inside).any()
    np.testing.assert_allclose(rows[inside], U[inside])  # rows inside are untouched
    # a vector of equal clips is the scalar clip
    np.testing.assert_allclose(clipped_sum(U, np.full(4, 2.0)), clipped_sum(U, 2.0))
    for bad in (np.array([1.0, 0.0, 1.0, 1.0]), np.array([1.0, np.inf, 1.0, 1.0]),
                np.ones(3)):
        with pytest.raises(ValueError, match="Per-coordinate clips"):
            clipped_sum(U, bad)


@pytest.mark.parametrize("loss", [LogisticLoss(), SquaredLoss((-1.0, 1.0))])
def test_group_dro_vector_clip_matches_generic_clip_and_bounds_sensitivity(loss):
    rng = np.random.default_rng(1)
    obj, data = _group_problem(rng, loss=loss)
    w, v = rng.normal(size=obj.n_primal), np.array([0.2, 0.3, 0.5])
    c = np.array([0.3, 2.0, 0.4])  # binds on some examples of every group
    gw, gv = obj.per_example_grads(w, v, data)
    _, sv = obj.clipped_grad_sums(w, v, data, 1.0, c)
    np.testing.assert_allclose(sv, clipped_sum(gv, c), rtol=1e-10, atol=1e-12)
    assert all(np.any(gv[data.groups == g, g] > c[g]) for g in range(3))
    # add/remove-one: the whitened dual sum moves by at most 1
    for i in rng.choice(data.n_samples, size=20, replace=False):
        keep = np.delete(np.arange(data.n_samples), i)
        _, sv_minus = obj.clipped_grad_sums(w, v, data.take(keep), 1.0, c)
        assert np.linalg.norm((sv - sv_minus) / c) <= 1.0 + 1e-12


def test_oracle_noise_per_dual_coordinate():
    rng = np.random.default_rng(2)
    obj, data = _group_problem(rng)
    sampler = make_sampler("poisson", data.n_samples, 60)
    c = np.array([4.0, 1.0, 0.25])
    oracle = NoisyGradientOracle(obj, data, sampler, (1.5, 2.0), 1.0, c,
                                 np.random.default_rng(3))
    noise = oracle.noise_block(40_000, obj.n_primal, 3)
    std = noise.std(axis=0)
    m = float(sampler.normalizer)
    np.testing.assert_allclose(std[: obj.n_primal], 1.5 * 1.0 / m, rtol=0.03)
    np.testing.assert_allclose(std[obj.n_primal :], 2.0 * c / m, rtol=0.03)
    # without noise nothing is drawn, whatever the clips
    quiet = NoisyGradientOracle(obj, data, sampler, (0.0, 0.0), 1.0, c, rng)
    assert not quiet.noisy and quiet.noise_block(3, obj.n_primal, 3) is None


def test_sgda_uses_the_clips_of_its_dual_noise():
    rng = np.random.default_rng(4)
    obj, data = _group_problem(rng)
    res = NoisySGDA(batch_size=100, n_iter=5, clip_v="auto").solve(
        obj, data, PrivacyBudget(1.0, 1e-5), rng)
    z_v = res.calibration.block_noise_multipliers[1]
    assert z_v > 0
    scale = z_v / 100.0  # Poisson: sensitivity factor 1, normaliser the batch size
    np.testing.assert_allclose(res.info["clip_v"],
                               math.log(2.0) / np.maximum(PI, scale), rtol=1e-12)
    # without noise: the start values ell(0) / pi_g
    res = NoisySGDA(batch_size=100, n_iter=5, clip_v="auto").solve(
        obj, data, PrivacyBudget(np.inf, 1e-5), rng)
    np.testing.assert_allclose(res.info["clip_v"], math.log(2.0) / PI)
    # an explicit clip stays one scalar
    res = NoisySGDA(batch_size=100, n_iter=5, clip_v=0.7).solve(
        obj, data, PrivacyBudget(1.0, 1e-5), rng)
    assert res.info["clip_v"] == 0.7


def test_solve_noises_each_group_for_its_clip(monkeypatch):
    # End to end: the noise NoisySGDA.solve adds to each dual coordinate is z_v s c_g / m
    # with c_g from the rule (computed here independently), and the oracle clips at the
    # same c_g. A group of 1% is rarer than the step's relative noise: its clip is
    # capped, the others keep ell(0) / pi_g.
    pi = np.array([0.01, 0.19, 0.8])
    rng = np.random.default_rng(7)
    X = clip_rows(rng.normal(size=(2000, 3)), 2.0)
    data = SaddleData(X, np.where(X[:, 0] > 0, 1.0, -1.0), rng.choice(3, size=2000, p=pi))
    obj = GroupDRO(3, LogisticLoss(), pi, data_norm=2.0, radius=5.0, dual_reg=1.0)
    seen = []
    original = NoisyGradientOracle.noise_block

    def recording(self, n_calls, dim_w, dim_v):
        rows = original(self, n_calls, dim_w, dim_v)
        seen.append((np.array(self.clip_v, dtype=float), rows))
        return rows

    monkeypatch.setattr(sgda_module.NoisyGradientOracle, "noise_block", recording)
    res = NoisySGDA(batch_size=50, n_iter=4000, clip_v="auto", noise_allocation=0.3).solve(
        obj, data, PrivacyBudget(4.0, 1e-5), np.random.default_rng(8))
    z_v = res.calibration.block_noise_multipliers[1]
    r = z_v * 1.0 / 50.0  # Poisson: sensitivity factor 1, normaliser the batch size
    assert pi[0] < r < pi[1]  # both branches of the rule
    expected = math.log(2.0) / np.array([r, pi[1], pi[2]])
    clips_used = {tuple(c) for c, _ in seen}
    assert len(clips_used) == 1
    np.testing.assert_allclose(np.array(clips_used.pop()), expected, rtol=1e-12)
    noise = np.vstack([rows for _, rows in seen])[:, obj.n_primal :]
    assert noise.shape[0] == 4000
    np.testing.assert_allclose(noise.std(axis=0), z_v * expected / 50.0, rtol=0.06)


def test_dual_clips_are_capped_validated_and_opt_in():
    sampler = make_sampler("poisson", 1000, 50)

    class Huge(GroupDRO):  # its own clips over the inherited clipped_grad_sums: used
        def typical_dual_clips(self, noise_scale):
            return np.full(3, 1e12)

    huge = Huge(3, LogisticLoss(), PI, data_norm=2.0, radius=5.0)
    np.testing.assert_allclose(dual_clips(huge, "auto", 1.0, 2.0, sampler),
                               np.full(3, huge.lipschitz()[1]))  # capped where it changes nothing

    for bad in (np.array([1.0, 0.0, 1.0]), np.array([1.0, np.nan, 1.0]), np.ones(2)):
        class Bad(GroupDRO):
            def typical_dual_clips(self, noise_scale, bad=bad):
                return bad

        with pytest.raises(ValueError, match="Per-coordinate clips"):
            dual_clips(Bad(3, LogisticLoss(), PI, data_norm=2.0, radius=5.0), "auto", 1.0, 2.0,
                       sampler)

    class ScalarSums(GroupDRO):  # overrides the clipping below the inherited clips
        exact_clipped_sums = True

        def clipped_grad_sums(self, w, v, data, clip_w, clip_v):
            return super().clipped_grad_sums(w, v, data, clip_w, float(clip_v))

    scalar = ScalarSums(3, LogisticLoss(), PI, data_norm=2.0, radius=5.0)
    for objective in (scalar, scalar.regularized(0.5)):
        with pytest.warns(UserWarning, match="keeps one scalar clip"):
            assert dual_clips(objective, "auto", 1.5, 2.0, sampler) == 1.5
    # GroupDRO itself, and its regularised copy, clip per group
    obj = GroupDRO(3, LogisticLoss(), PI, data_norm=2.0, radius=5.0)
    for objective in (obj, obj.regularized(0.5)):
        assert np.shape(dual_clips(objective, "auto", 1.5, 2.0, sampler)) == (3,)


def test_scalar_clipped_sum_unchanged_and_clips_recorded():
    U = np.array([[3.0, 4.0], [0.3, 0.4]])
    np.testing.assert_allclose(clipped_sum(U, 1.0), [0.6 + 0.3, 0.8 + 0.4])
    np.testing.assert_allclose(clipped_sum(U, 0.0), [0.0, 0.0])
    # the estimator's audit record holds the clips actually used, one per group
    rng = np.random.default_rng(9)
    X = rng.normal(size=(300, 3))
    y = rng.integers(0, 3, size=300)
    est = DPRobustClassifier(epsilon=1.0, data_norm=4.0, group_ratios=np.bincount(y) / 300,
                             random_state=0).fit(X, y)
    assert isinstance(est.solver_info_["clip_v"], list) and len(est.solver_info_["clip_v"]) == 3
    assert "w_last" not in est.solver_info_


def _exact_worst_class(X, y, K, lam=0.1, alpha=1e-4):
    """Worst-class training accuracy of the exact group-DRO minimiser (L-BFGS on the
    primal envelope; the dual has a closed form for lambda > 0)."""
    n, d = X.shape
    Xa, Y = np.hstack([X, np.ones((n, 1))]), np.eye(K)[y]
    counts = np.bincount(y, minlength=K)

    def envelope(flat):
        W = flat.reshape(d + 1, K)
        Z = Xa @ W
        risks = np.bincount(y, logsumexp(Z, axis=1) - (Z * Y).sum(1), K) / counts
        q = Simplex().project(1.0 / K + risks / lam)
        P = np.exp(Z - logsumexp(Z, axis=1, keepdims=True))
        G = Xa.T @ ((P - Y) * (q[y] / counts[y])[:, None])
        G[:-1] += alpha * W[:-1]
        value = q @ risks + alpha / 2 * np.sum(W[:-1] ** 2)
        return value - lam / 2 * np.sum((q - 1.0 / K) ** 2), G.ravel()

    W = minimize(envelope, np.zeros((d + 1) * K), jac=True, method="L-BFGS-B").x
    pred = np.argmax(Xa @ W.reshape(d + 1, K), axis=1)
    return min(np.mean(pred[y == k] == k) for k in range(K))


def test_robust_classifier_reaches_the_minimax_solution_on_imbalanced_classes():
    # Four overlapping classes of 50% / 25% / 17% / 8%. One scalar dual clip below the
    # small classes' start value (ell(0) / sqrt(pi_min), the rule before) under-counts
    # their risk, and the model stays near plain logistic regression; the per-group
    # clips reach the exact minimiser's worst class without noise.
    rng = np.random.default_rng(6)
    K, n = 4, 2400
    y = rng.choice(K, size=n, p=[0.5, 0.25, 0.17, 0.08])
    X = 0.9 * rng.normal(size=(K, 6))[y] + rng.normal(size=(n, 6))
    data_norm = float(np.ceil(np.linalg.norm(X, axis=1).max()))
    ratios = np.bincount(y) / n

    def worst_class(est):
        pred = est.fit(X, y).predict(X)
        return min(np.mean(pred[y == k] == k) for k in range(K))

    exact = _exact_worst_class(X, y, K)
    new = worst_class(DPRobustClassifier(epsilon=np.inf, data_norm=data_norm,
                                         group_ratios=ratios, random_state=0))
    scalar = math.log(K) / math.sqrt(ratios.min())
    old = worst_class(DPRobustClassifier(
        epsilon=np.inf, data_norm=data_norm, group_ratios=ratios, random_state=0,
        solver=NoisySGDA(step_size="scaled", n_epochs="auto", clip_v=scalar,
                         noise_allocation=0.3, average="tail")))
    assert new >= exact - 0.05
    assert old < exact - 0.1  # the test tells the two rules apart


def test_scale_rules_on_an_objective_without_declared_scales_warn():
    """A user-style probe: clip_v="auto" clipped a user objective at its lipschitz()
    bound (335 for gradients of order 1) and step_size="scaled" fell back to 1 / L,
    both silently."""
    from objectives_for_tests import StronglyMonotoneQuadratic, make_linear_data

    from skdpminimax.privacy import PrivacyBudget
    from skdpminimax.solvers import NoisySGDA

    rng = np.random.default_rng(0)
    objective = StronglyMonotoneQuadratic(np.eye(2), data_norm=1.0, mu=0.5)
    data = make_linear_data(200, 2, rng, data_norm=1.0)
    solver = NoisySGDA(clip_w=1.0, clip_v="auto", step_size="scaled", batch_size=20, n_epochs=2)
    with pytest.warns(UserWarning) as record:
        solver.solve(objective, data, PrivacyBudget(1.0, 1e-5), rng)
    messages = [str(w.message) for w in record]
    assert any("clip_v='auto': StronglyMonotoneQuadratic declares no typical_grad_norms()"
               in m for m in messages)
    assert any("step_size='scaled': StronglyMonotoneQuadratic declares no "
               "typical_solution_norm()" in m for m in messages)
    # numeric clips and steps: nothing to say
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        NoisySGDA(clip_w=1.0, clip_v=1.0, step_size=0.1, batch_size=20, n_epochs=2).solve(
            objective, data, PrivacyBudget(1.0, 1e-5), rng)
