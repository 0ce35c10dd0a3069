"""NoisySGDA / DP-GDA: convergence without noise, calibration, determinism."""

import numpy as np
import pytest
from scipy.optimize import minimize

from skdpminimax.objectives import SaddleData, SquareLossAUC
from skdpminimax.privacy import PrivacyBudget, clip_rows
from skdpminimax.privacy.calibration import UncertifiableBudgetError
from skdpminimax.solvers import NoisySGDA


def auc_problem(seed=0, n=300, d=5, l2=0.2):
    rng = np.random.default_rng(seed)
    y = np.where(rng.random(n) < 0.35, 1.0, -1.0)
    X = clip_rows(rng.normal(size=(n, d)) + 0.8 * y[:, None] * np.linspace(1, 0, d), 3.0)
    p = float(np.mean(y > 0))
    obj = SquareLossAUC(d, pos_ratio=p, data_norm=3.0, radius=50.0, l2_reg=l2)
    return obj, SaddleData(X, y)


def reference_saddle(obj, data):
    """Deterministic solve: minimise phi(w) = max_alpha F(w, alpha) (closed-form alpha)."""
    p = obj.p

    def best_alpha(w):
        # F is -p(1-p) alpha^2 + alpha A(w) + const: maximiser A / (2 p (1-p))
        g0 = obj.grad(w, np.zeros(1), data)[1][0]
        return np.array([g0 / (2 * p * (1 - p))])

    def phi(w):
        return obj.value(w, best_alpha(w), data)

    def dphi(w):
        return obj.grad(w, best_alpha(w), data)[0]

    res = minimize(phi, np.zeros(obj.n_theta + 2), jac=dphi, method="L-BFGS-B",
                   options={"gtol": 1e-12, "ftol": 1e-15, "maxiter": 10_000})
    return res.x, best_alpha(res.x)


NO_PRIVACY = PrivacyBudget(np.inf, 1e-5)


def test_full_batch_gda_reaches_reference_saddle_point():
    obj, data = auc_problem()
    w_ref, v_ref = reference_saddle(obj, data)
    solver = NoisySGDA(batch_size=None, n_iter=4000, step_size="auto", average="last",
                       clip_w=None, clip_v=None)
    res = solver.solve(obj, data, NO_PRIVACY, np.random.default_rng(0))
    np.testing.assert_allclose(res.w, w_ref, atol=1e-6)
    np.testing.assert_allclose(res.v, v_ref, atol=1e-6)
    assert res.calibration.noise_multiplier == 0.0
    assert res.n_iter == 4000 and res.diagnostics["n_grad_evals"] == 4000 * data.n_samples


def test_averaged_sgda_approaches_reference_saddle_point():
    obj, data = auc_problem(1)
    w_ref, v_ref = reference_saddle(obj, data)
    solver = NoisySGDA(batch_size=30, n_epochs=400, step_size=0.05, schedule="constant",
                       average="tail", clip_w=None, clip_v=None)
    res = solver.solve(obj, data, NO_PRIVACY, np.random.default_rng(0))
    scale = np.linalg.norm(w_ref)
    assert np.linalg.norm(res.w - w_ref) < 0.02 * scale
    assert abs(res.v[0] - v_ref[0]) < 0.02 * max(1.0, abs(v_ref[0]))


def test_linear_schedule_decays_from_eta_to_eta_over_n_steps():
    obj, _ = auc_problem()
    etas_w, etas_v = NoisySGDA(schedule="linear")._schedule(obj, 0.3, 0.1, 4)
    np.testing.assert_allclose(etas_w, [0.3, 0.225, 0.15, 0.075])
    np.testing.assert_allclose(etas_v, [0.1, 0.075, 0.05, 0.025])


def test_linear_schedule_last_iterate_approaches_reference_saddle_point():
    # the constant-step last iterate of the same run stays at the noise floor of its
    # step; the decaying step brings the last iterate itself close to the saddle point
    obj, data = auc_problem(1)
    w_ref, _ = reference_saddle(obj, data)

    def error(schedule):
        solver = NoisySGDA(batch_size=30, n_epochs=400, step_size=0.05, schedule=schedule,
                           average="last", clip_w=None, clip_v=None)
        res = solver.solve(obj, data, NO_PRIVACY, np.random.default_rng(0))
        return np.linalg.norm(res.w - w_ref) / np.linalg.norm(w_ref)

    linear = error("linear")
    assert linear < 0.02
    assert linear < error("constant") / 3


def test_strongly_convex_schedule_converges():
    obj, data = auc_problem(2)
    w_ref, _ = reference_saddle(obj, data)
    solver = NoisySGDA(batch_size=None, n_iter=3000, schedule="strongly_convex",
                       average="uniform", clip_w=None, clip_v=None)
    res = solver.solve(obj, data, NO_PRIVACY, np.random.default_rng(0))
    assert np.linalg.norm(res.w - w_ref) < 0.05 * np.linalg.norm(w_ref)


def test_calibration_is_data_free_and_within_budget():
    obj, data = auc_problem()
    budget = PrivacyBudget(1.0, 1e-5)
    solver = NoisySGDA(batch_size=32, n_epochs=3)
    cal = solver.calibrate(obj, data.n_samples, budget)
    assert cal.epsilon <= 1.0
    assert cal.n_steps == int(np.ceil(3 * data.n_samples / 32))
    z_w, z_v = cal.block_noise_multipliers
    assert z_w**-2 + z_v**-2 == pytest.approx(cal.noise_multiplier**-2)
    # a different data set of the same size gives the same calibration
    obj2, data2 = auc_problem(seed=9)
    assert solver.calibrate(obj2, data2.n_samples, budget) == cal
    assert solver.solve(obj, data, budget, np.random.default_rng(0)).calibration == cal


def test_noise_allocation_options():
    obj, data = auc_problem()
    budget = PrivacyBudget(1.0, 1e-5)
    equal = NoisySGDA(noise_allocation="equal").calibrate(obj, 300, budget)
    assert equal.block_noise_multipliers[0] == pytest.approx(equal.block_noise_multipliers[1])
    dim = NoisySGDA(noise_allocation="dimension").calibrate(obj, 300, budget)
    # the 7-dimensional primal block gets the larger share: less noise than the dual
    assert dim.block_noise_multipliers[0] < dim.block_noise_multipliers[1]
    share = NoisySGDA(noise_allocation=0.2).calibrate(obj, 300, budget)
    assert share.block_noise_multipliers[1] == pytest.approx(share.noise_multiplier / np.sqrt(0.2))


@pytest.mark.parametrize("sampler, factor, compositions", [
    ("poisson", 1.0, 2000),  # add/remove-one: every subsampled step composed
    ("shuffle", 2.0, 200),   # replace-one: one Gaussian release per epoch (200 epochs)
])
def test_noise_has_calibrated_scale(sampler, factor, compositions):
    # With a zero data term (zero features), the step is pure noise: its std per
    # coordinate must be z_b s C_b / m, s the sampler's sensitivity factor, with z
    # calibrated on as many releases as an example can affect (2000 steps of 100 rows
    # out of 1000).
    n, d = 1000, 3
    obj = SquareLossAUC(d, pos_ratio=0.5, data_norm=1.0, radius=1e6, l2_reg=0.0)
    data = SaddleData(np.zeros((n, d)), np.where(np.arange(n) % 2 == 0, 1.0, -1.0))
    solver = NoisySGDA(batch_size=100, n_iter=2000, step_size=1.0, average="last",
                       clip_w=0.5, clip_v=0.25, sampler=sampler)
    cal = solver.calibrate(obj, n, PrivacyBudget(2.0, 1e-5))
    assert cal.sampler == sampler and cal.n_compositions == compositions
    from skdpminimax.privacy import make_sampler
    from skdpminimax.solvers import NoisyGradientOracle
    batches = make_sampler(sampler, n, 100)
    oracle = NoisyGradientOracle(obj, data, batches, cal.block_noise_multipliers, 0.5, 0.25,
                                 np.random.default_rng(0))
    w0, v0 = obj.init_params()
    draws = np.array([oracle(w0, v0, idx)[0][:d] for idx in batches.batches(
        np.random.default_rng(1), 2000)])
    expected = factor * cal.block_noise_multipliers[0] * 0.5 / 100
    assert draws.std() == pytest.approx(expected, rel=0.05)


def test_same_rng_same_result_and_validation():
    obj, data = auc_problem()
    solver = NoisySGDA(batch_size=20, n_epochs=2)
    budget = PrivacyBudget(1.0, 1e-5)
    a = solver.solve(obj, data, budget, np.random.default_rng(3))
    b = solver.solve(obj, data, budget, np.random.default_rng(3))
    np.testing.assert_array_equal(a.w, b.w)
    with pytest.raises(ValueError):
        NoisySGDA(batch_size=0).calibrate(obj, 100, budget)
    with pytest.raises(ValueError, match="strongly"):
        NoisySGDA(schedule="strongly_convex", batch_size=None, n_iter=3).solve(
            SquareLossAUC(5, 0.3, 3.0, 1.0, l2_reg=0.0), data, budget, np.random.default_rng(0))


def _primal_energy(obj, cal, batch_size=64):
    """A step's primal noise energy recomputed independently from a calibration."""
    z_w = cal.block_noise_multipliers[0] if cal.block_noise_multipliers else 0.0
    return obj.n_primal * (z_w / batch_size) ** 2  # Poisson: sensitivity 1, sum / m


# ---- step_size="scaled" --------------------------------------------------------------
def _scaled_step(obj, n, budget, batch_size=64, clip_w=1.0):
    """The "scaled" rule recomputed from the calibration's public numbers: gradients
    of RMS r C_w, r = 2 sqrt(p (1 - p)) for the AUC objective's class weights."""
    solver = NoisySGDA(batch_size=batch_size, clip_w=clip_w)
    cal = solver.calibrate(obj, n, budget)
    energy = _primal_energy(obj, cal, batch_size)
    auto = 1.0 / obj.smoothness()
    r = 2.0 * np.sqrt(obj.p * (1.0 - obj.p))
    return max(auto, 10.0 / obj.data_norm / (r * clip_w * np.sqrt(cal.n_steps))
               / (1.0 + energy / r ** 2) ** 2), auto


@pytest.mark.parametrize("epsilon", [np.inf, 5.0, 0.05])
def test_scaled_step_follows_its_rule(epsilon):
    obj, data = auc_problem(l2=0.0)
    budget = PrivacyBudget(epsilon, 1e-5)
    expected, auto = _scaled_step(obj, data.n_samples, budget)
    res = NoisySGDA(step_size="scaled").solve(obj, data, budget, np.random.default_rng(0))
    assert res.info["step_size"] == pytest.approx(expected, rel=1e-12)
    assert res.info["step_size"] >= auto
    if np.isinf(epsilon):
        assert res.info["step_size"] > 2 * auto  # the rule binds on this problem
    if epsilon == 0.05:
        assert res.info["step_size"] == pytest.approx(auto)  # drowned by the noise


@pytest.mark.parametrize("pos_ratio", [0.5, 0.1, 0.01])
@pytest.mark.parametrize("epsilon", [np.inf, 2.0])
def test_scaled_step_grows_as_the_class_weights_shrink(pos_ratio, epsilon):
    """The AUC objective weighs a positive 1 - p and a negative p, so its gradients'
    RMS is 2 sqrt(p (1 - p)) of the balanced case's: the step grows by its inverse
    without noise, and the noise is measured against that smaller RMS."""
    data = auc_problem(l2=0.0, n=2000)[1]
    obj = SquareLossAUC(5, pos_ratio=pos_ratio, data_norm=3.0, radius=50.0)
    r = 2.0 * np.sqrt(pos_ratio * (1.0 - pos_ratio))
    assert obj.typical_grad_rms_fraction() == pytest.approx(r, rel=1e-12)
    assert obj.regularized(0.1).typical_grad_rms_fraction() == pytest.approx(r, rel=1e-12)
    budget = PrivacyBudget(epsilon, 1e-5)
    expected, auto = _scaled_step(obj, data.n_samples, budget)
    res = NoisySGDA(step_size="scaled").solve(obj, data, budget, np.random.default_rng(0))
    assert res.info["step_size"] == pytest.approx(expected, rel=1e-12)
    if np.isinf(epsilon):
        balanced = SquareLossAUC(5, pos_ratio=0.5, data_norm=3.0, radius=50.0)
        base = NoisySGDA(step_size="scaled").solve(
            balanced, data, budget, np.random.default_rng(0)).info["step_size"]
        assert res.info["step_size"] == pytest.approx(base / r, rel=1e-12)


@pytest.mark.parametrize("fraction", [0.0, -0.5, 1.5, np.nan])
def test_scaled_step_refuses_a_bad_rms_fraction(fraction):
    obj, data = auc_problem(l2=0.0)

    class Declared(type(obj)):
        def typical_grad_rms_fraction(self):
            return fraction

    bad = Declared(5, pos_ratio=obj.p, data_norm=3.0, radius=50.0)
    with pytest.raises(ValueError, match="typical_grad_rms_fraction"):
        NoisySGDA(step_size="scaled", n_iter=3).solve(bad, data, NO_PRIVACY,
                                                      np.random.default_rng(0))
    # calibrate (which the estimators run before they spend) refuses it too
    with pytest.raises(ValueError, match="typical_grad_rms_fraction"):
        NoisySGDA(step_size="scaled", n_iter=3).calibrate(bad, data.n_samples,
                                                          PrivacyBudget(1.0, 1e-5))


def test_scaled_step_without_a_scale():
    from skdpminimax.objectives import DemographicParityRegression, MLPScorer

    # Nonconvex (the MLP: no smoothness bound, so "auto" is 0.1): without noise the
    # "scaled" rule's step * clip is 0.7, doubled at the start of a linear decay.
    obj = SquareLossAUC(4, pos_ratio=0.4, data_norm=3.0, radius=50.0,
                        scorer=MLPScorer(hidden_units=3))
    assert obj.typical_solution_norm() is None
    data = auc_problem(d=4)[1]

    def step(objective, data, **kw):
        return NoisySGDA(n_iter=3, **kw).solve(
            objective, data, NO_PRIVACY, np.random.default_rng(0)).info["step_size"]

    assert step(obj, data, step_size="auto") == 0.1
    assert step(obj, data, step_size="scaled", clip_w=2.0) == pytest.approx(0.7 / 2.0)
    assert step(obj, data, step_size="scaled", clip_w=2.0, schedule="linear") == (
        pytest.approx(1.4 / 2.0))
    # Convex without a solution scale (the parity Lagrangian): "scaled" is "auto".
    parity = DemographicParityRegression(3, np.array([0.5, 0.5]), data_norm=2.0, radius=5.0,
                                         bounds=(-1.0, 1.0))
    rng = np.random.default_rng(0)
    X = rng.normal(size=(40, 3))
    pdata = SaddleData(X, np.clip(X[:, 0], -1, 1), rng.integers(0, 2, 40))
    with pytest.warns(UserWarning, match="declares no typical_solution_norm"):
        scaled = step(parity, pdata, step_size="scaled")
    assert scaled == step(parity, pdata, step_size="auto")


def test_scaled_step_reaches_further_than_auto_without_noise():
    """On a small problem the certified 1 / L is far below the curvature met: with the
    same 15 epochs the averaged iterate of the scaled step gets much closer to the
    saddle point (about 0.08 against 0.39 here)."""
    obj, data = auc_problem(l2=0.0, n=200, d=5)
    w_ref, _ = reference_saddle(auc_problem(l2=1e-6, n=200, d=5)[0], data)
    dist = {rule: np.linalg.norm(NoisySGDA(step_size=rule).solve(
        obj, data, NO_PRIVACY, np.random.default_rng(1)).w - w_ref)
        for rule in ("auto", "scaled")}
    assert dist["scaled"] < 0.5 * dist["auto"]


# ---- n_epochs="auto" -------------------------------------------------------------------
def _energy(obj, n, budget, n_iter, batch_size=64):
    """A step's primal noise energy for a run of n_iter steps, recomputed independently."""
    cal = NoisySGDA(batch_size=batch_size, n_iter=n_iter).calibrate(obj, n, budget)
    return _primal_energy(obj, cal, batch_size)


@pytest.mark.parametrize("n, epsilon", [(300, np.inf), (300, 1.0), (300, 0.1),
                                        (5000, np.inf), (2000, 5.0), (40000, np.inf)])
def test_auto_epochs_lengthen_while_the_noise_is_small(n, epsilon):
    obj = auc_problem()[0]
    budget = PrivacyBudget(epsilon, 1e-5)
    base = int(np.ceil(15 * n / 64))
    # the doubling ladder from 15 epochs towards 8000 steps, each rung kept only if its
    # own calibration leaves a step's noise energy at most 0.5
    expected, steps = base, base
    while steps < 8000:
        steps = min(2 * steps, 8000)
        if _energy(obj, n, budget, steps) > 0.5:
            break
        expected = steps
    cal = NoisySGDA(n_epochs="auto").calibrate(obj, n, budget)
    assert cal.n_steps == expected
    assert cal.n_steps >= base  # never fewer than 15 epochs
    if n == 40000:
        assert cal.n_steps == base  # 15 epochs are already more than 8000 steps
    if np.isinf(epsilon) and n < 40000:
        assert cal.n_steps == 8000
    if n == 300 and epsilon == 1.0:
        assert base < cal.n_steps < 8000  # lengthened part of the way
    if n == 300 and epsilon == 0.1:
        assert cal.n_steps == base  # the noise is too large to lengthen the run
    # the run takes the planned steps, calibrated for exactly that many
    res = NoisySGDA(n_epochs="auto").solve(obj, auc_problem(n=n)[1], budget,
                                          np.random.default_rng(0))
    assert res.n_iter == cal.n_steps
    assert res.calibration.noise_multiplier == cal.noise_multiplier


@pytest.mark.parametrize("base", [820, 1000, 5000, 7999, 8000, 9000])
@pytest.mark.parametrize("growth", [1.0, 2.0, 4.0])
def test_auto_epochs_ladder_is_searched_from_a_guess(base, growth):
    """The ladder's longest quiet rung is the rung-by-rung walk's, for every place the
    energy can cross its limit and however fast it grows with the run (growth: the
    energy's power of the length), with at most 3 + ceil(log2(rungs)) calibrations
    (a walk needs up to one per rung), and 2 besides the 15 epochs' where the energy
    grows in proportion to the length (the guess is then right)."""
    from types import SimpleNamespace

    from skdpminimax.solvers import sgda as sgda_module

    rungs = sgda_module._ladder(base)
    assert all(b == min(2 * a, 8000) for a, b in zip([base] + rungs, rungs))
    assert rungs[-1:] == ([8000] if base < 8000 else [])
    sampler = SimpleNamespace(sensitivity_factor=1.0, normalizer=1.0)
    for start_energy in (1e-4, 0.01, 0.1, 0.3, 0.6):
        planned = []

        def plan(n_steps, start_energy=start_energy):
            planned.append(n_steps)
            z = np.sqrt(start_energy * (n_steps / base) ** growth)  # energy = z^2 here
            return SimpleNamespace(n_steps=n_steps, block_noise_multipliers=(z, z))

        walk = base
        for n_steps in rungs:
            if start_energy * (n_steps / base) ** growth > 0.5:
                break
            walk = n_steps
        assert sgda_module._longest_quiet_run(base, plan, 1, sampler).n_steps == walk
        assert planned[0] == base and len(set(planned)) == len(planned)
        if start_energy == 0.6:  # a rung no noise certifies counts as too noisy
            def refusing(n_steps):
                if n_steps > base:
                    raise UncertifiableBudgetError("no multiplier up to 1e7")
                return plan(n_steps)

            assert sgda_module._longest_quiet_run(base, refusing, 1, sampler).n_steps == base
        assert len(planned) <= 3 + int(np.ceil(np.log2(max(len(rungs), 1))))
        if growth == 1.0:
            assert len(planned) <= 3


def test_auto_epochs_validation():
    obj = auc_problem()[0]
    with pytest.raises(ValueError, match="n_epochs"):
        NoisySGDA(n_epochs="long").calibrate(obj, 300, PrivacyBudget(1.0, 1e-5))
    # n_iter still wins
    cal = NoisySGDA(n_epochs="auto", n_iter=7).calibrate(obj, 300, PrivacyBudget(1.0, 1e-5))
    assert cal.n_steps == 7
    # full batch: 15 epochs are 15 steps, not lengthened (a step is a pass over the data)
    cal = NoisySGDA(batch_size=None, n_epochs="auto").calibrate(obj, 300, NO_PRIVACY)
    assert cal.n_steps == 15


# ---- clip_w="scaled" -------------------------------------------------------------------
@pytest.mark.parametrize("epsilon", [np.inf, 2.0, 0.2])
def test_scaled_clip_is_typical_norm_over_sqrt_one_plus_energy(epsilon):
    obj, data = auc_problem()
    budget = PrivacyBudget(epsilon, 1e-5)
    typical = obj.typical_grad_norms()[0]
    assert typical == pytest.approx(obj.data_norm / 2)  # linear AUC: half the row bound
    # E recomputed independently: the calibration at the typical clip
    energy = _primal_energy(obj, NoisySGDA(clip_w=typical).calibrate(obj, data.n_samples, budget))
    expected = typical / np.sqrt(1.0 + energy)
    res = NoisySGDA(clip_w="scaled").solve(obj, data, budget, np.random.default_rng(0))
    assert res.info["clip_w"] == pytest.approx(expected, rel=1e-12)
    if np.isinf(epsilon):
        assert res.info["clip_w"] == typical
    else:
        assert res.info["clip_w"] < typical
    # the noise is split for the clip actually used
    at_clip = NoisySGDA(clip_w=expected).calibrate(obj, data.n_samples, budget)
    assert res.calibration.block_noise_multipliers == pytest.approx(
        at_clip.block_noise_multipliers)


def test_scaled_clip_bounds_and_objective_scales():
    from skdpminimax.objectives import MLPScorer
    from skdpminimax.solvers.oracle import resolve_clip_norms

    obj = auc_problem()[0]
    # elsewhere (e.g. recursive regularization's bound) "scaled" reads as the typical
    # norm, an upper bound of the clip NoisySGDA uses
    assert resolve_clip_norms(obj, "scaled", 1.0) == (obj.typical_grad_norms()[0], 1.0)
    assert obj.typical_grad_norms()[1] == obj.lipschitz()[1]
    mlp = SquareLossAUC(4, pos_ratio=0.4, data_norm=3.0, radius=5.0,
                        scorer=MLPScorer(hidden_units=3))
    assert mlp.typical_grad_norms() == mlp.lipschitz()
    with pytest.raises(ValueError, match="clip_v"):
        NoisySGDA(clip_v="scaled").calibrate(obj, 300, PrivacyBudget(1.0, 1e-5))


# ---- clip_w="auto_if_quiet" -------------------------------------------------------------
@pytest.mark.parametrize("n, epsilon", [(300, np.inf), (300, 0.2), (300, 2.0), (20000, 0.5),
                                        (20000, 0.05)])
def test_auto_if_quiet_clips_at_the_typical_norm_only_where_the_noise_is_small(n, epsilon):
    obj = auc_problem()[0]
    data = auc_problem(n=n)[1]
    budget = PrivacyBudget(epsilon, 1e-5)
    typical = obj.typical_grad_norms()[0]
    # E recomputed independently, at the typical clip; the rule's threshold is 0.1
    energy = _primal_energy(obj, NoisySGDA(clip_w=typical).calibrate(obj, n, budget))
    expected = typical if energy <= 0.1 else 1.0
    res = NoisySGDA(clip_w="auto_if_quiet").solve(obj, data, budget, np.random.default_rng(0))
    assert res.info["clip_w"] == expected
    at_clip = NoisySGDA(clip_w=expected).calibrate(obj, n, budget)
    assert res.calibration.block_noise_multipliers == pytest.approx(
        at_clip.block_noise_multipliers)
    # both branches are met across the grid: without noise the typical norm, at small
    # epsilon on little data the generic clip
    if np.isinf(epsilon) or (n, epsilon) == (20000, 0.5):
        assert res.info["clip_w"] == typical
    if (n, epsilon) in ((300, 0.2), (20000, 0.05)):
        assert res.info["clip_w"] == 1.0


@pytest.mark.parametrize("data_norm", [0.5, 1.0, 3.0])
def test_auto_if_quiet_never_raises_a_small_typical_norm_to_one_under_noise(data_norm):
    """A user probe: on rows of a small public bound the noisy branch's clip of 1 was
    above every gradient (data_norm / 2), adding noise only (AUC 0.78 against 0.83 at
    data_norm 0.25). It is now the smaller of 1 and the typical norm."""
    obj = SquareLossAUC(5, pos_ratio=0.3, data_norm=data_norm, radius=50.0)
    data = auc_problem(n=300)[1]
    budget = PrivacyBudget(0.2, 1e-5)  # noisy: the generic branch
    typical = obj.typical_grad_norms()[0]
    energy = _primal_energy(obj, NoisySGDA(clip_w=typical).calibrate(obj, 300, budget))
    assert energy > 0.1
    res = NoisySGDA(clip_w="auto_if_quiet").solve(obj, data, budget, np.random.default_rng(0))
    assert res.info["clip_w"] == min(1.0, 0.5 * data_norm)


def test_auto_if_quiet_reads_as_an_upper_bound_elsewhere():
    from skdpminimax.solvers.oracle import resolve_clip_norms

    obj = auc_problem()[0]  # typical norm 1.5
    assert resolve_clip_norms(obj, "auto_if_quiet", 1.0)[0] == pytest.approx(1.5)
    small = SquareLossAUC(5, pos_ratio=0.3, data_norm=1.0, radius=5.0)  # typical 0.5
    assert resolve_clip_norms(small, "auto_if_quiet", 1.0)[0] == pytest.approx(1.0)


def test_auto_if_quiet_fits_an_imbalanced_task_that_clip_one_biases():
    """Without noise a clip of 1 (far below standardised rows' gradients) drops the
    square loss's class weights; the typical-norm clip finds the exact saddle point's
    direction of theta (what the AUC depends on) far better, with 10% positives."""
    rng = np.random.default_rng(0)
    n, d = 3000, 8
    y = np.where(rng.random(n) < 0.1, 1.0, -1.0)
    X = rng.normal(size=(n, d)) + 0.7 * y[:, None] * np.linspace(1, -1, d)
    X[:, 0] += 2 * rng.normal(size=n) * (y > 0)  # spread-out positives: clip 1 bites
    X = clip_rows(X, 10.0)
    obj = SquareLossAUC(d, pos_ratio=float(np.mean(y > 0)), data_norm=10.0, radius=50.0,
                        l2_reg=1e-3)
    data = SaddleData(X, y)
    theta_ref = reference_saddle(obj, data)[0][:d]
    angle_gap = {}
    for clip in (1.0, "auto_if_quiet"):
        theta = NoisySGDA(step_size="scaled", n_epochs="auto", clip_w=clip).solve(
            obj, data, NO_PRIVACY, np.random.default_rng(0)).w[:d]
        cos = theta @ theta_ref / np.linalg.norm(theta) / np.linalg.norm(theta_ref)
        angle_gap[clip] = 1.0 - cos
    # measured: 0.0195 with clip 1, 0.0009 with the typical-norm clip
    assert angle_gap["auto_if_quiet"] < 0.2 * angle_gap[1.0]


def test_small_steps_run_on_one_blas_thread(monkeypatch):
    """A scale probe: the MLP's small products ran 3-19x slower on two BLAS threads when
    the machine was busy. NoisySGDA's step loop runs on one thread where a step touches
    fewer than _SMALL_STEP_ENTRIES numbers, and the result is the same either way."""
    from diffprivlib.accountant import BudgetAccountant
    from sklearn.datasets import make_classification
    from threadpoolctl import threadpool_info

    from skdpminimax import DPAUCMaximizer
    from skdpminimax.solvers import oracle

    seen = []
    original = oracle.blas_threads_for_steps

    def spy(batch_size, n_params):
        context = original(batch_size, n_params)
        seen.append(batch_size * n_params)
        return context

    monkeypatch.setattr("skdpminimax.solvers.sgda.blas_threads_for_steps", spy)
    blas = [info for info in threadpool_info() if info["user_api"] == "blas"]
    if not blas:
        pytest.skip("no BLAS library that threadpoolctl can see")
    before = [info["num_threads"] for info in blas]
    with oracle.blas_threads_for_steps(64, 1000):
        inside = [info["num_threads"] for info in threadpool_info()
                  if info["user_api"] == "blas"]
    assert inside and all(n == 1 for n in inside)
    # not in other threads (a review: overlapping fits left the process at one thread)
    import threading
    seen_in_thread = []

    def other():
        with oracle.blas_threads_for_steps(64, 1000):
            seen_in_thread.extend(info["num_threads"] for info in threadpool_info()
                                  if info["user_api"] == "blas")

    worker = threading.Thread(target=other)
    worker.start()
    worker.join()
    assert seen_in_thread == before
    assert [info["num_threads"] for info in threadpool_info()
            if info["user_api"] == "blas"] == before
    X, y = make_classification(n_samples=300, n_features=5, random_state=0)
    y = 2.0 * y - 1.0
    runs = []
    for limit in (1 << 24, 0):  # small steps: one thread; limit 0: the default threads
        monkeypatch.setattr(oracle, "_SMALL_STEP_ENTRIES", limit)
        est = DPAUCMaximizer(epsilon=1.0, data_norm=5.0, scorer="mlp", hidden_units=8,
                             random_state=0, accountant=BudgetAccountant(),
                             n_samples_budget="public").fit(X, y)
        runs.append(est.decision_function(X))
    assert seen and seen[0] < (1 << 24)
    np.testing.assert_array_equal(runs[0], runs[1])


def test_a_diverged_run_raises_instead_of_releasing_a_nan_model():
    """An extreme-settings probe: the MLP AUC model came out all-NaN after 500 full-batch
    steps of size 1e3 (its dual box is unbounded), with only numpy's warnings."""
    import warnings

    from diffprivlib import BudgetAccountant
    from sklearn.datasets import make_classification

    from skdpminimax import DPAUCMaximizer

    X, y = make_classification(n_samples=300, n_features=5, random_state=0)
    acc = BudgetAccountant()
    est = DPAUCMaximizer(epsilon=1.0, scorer="mlp", hidden_units=16, data_norm=5.0,
                         pos_ratio=0.5, accountant=acc, random_state=0,
                         solver=NoisySGDA(batch_size=None, n_iter=500, step_size=1e3))
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", RuntimeWarning)
        with pytest.raises(FloatingPointError, match="diverged"):
            est.fit(X, y)
    assert not hasattr(est, "scorer_params_")
    assert tuple(acc.total()) == (1.0, 1e-5)  # charged: the run happened
