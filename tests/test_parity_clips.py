"""The demographic-parity Lagrangian's per-group dual clips and the regressor's defaults.

An example's dual gradient is ``(a, -a)`` with ``a = h (e_g / pi_g - 1)``; with one clip
per coordinate (``typical_dual_clips``) it is clipped in whitened coordinates, like any
ellipsoidal clip, and no prediction within the target's bound is clipped."""

import math
import warnings

import numpy as np
import pytest
from scipy.optimize import minimize
from sklearn.datasets import make_regression

from skdpminimax import DPGroupFairRegressor
from skdpminimax.objectives import DemographicParityRegression, SaddleData
from skdpminimax.privacy.mechanisms import clip_rows, clipped_sum
from skdpminimax.privacy.samplers import make_sampler
from skdpminimax.solvers.oracle import dual_clips

PI = np.array([0.05, 0.15, 0.8])


def _parity_problem(rng, n=600, bounds=(-1.0, 1.0)):
    X = clip_rows(rng.normal(size=(n, 3)), 2.0)
    groups = rng.choice(3, size=n, p=PI)
    y = np.clip(X[:, 0] + 0.5 * groups + 0.3 * rng.normal(size=n), *bounds)
    obj = DemographicParityRegression(3, PI, data_norm=2.0, radius=5.0, bounds=bounds)
    return obj, SaddleData(X, y, groups)


def test_parity_dual_clips_formula():
    obj = DemographicParityRegression(3, PI, data_norm=2.0, radius=5.0, bounds=(-2.0, 1.0))
    # independent computation: c0 = B_y sqrt(2 max_g ((1 - pi_g)^2 + sum_{a != g} pi_a^2))
    spreads = [(1 - PI[g]) ** 2 + sum(PI[a] ** 2 for a in range(3) if a != g) for g in range(3)]
    c0 = 2.0 * math.sqrt(2.0 * max(spreads))
    np.testing.assert_allclose(obj.typical_dual_clips(0.0), np.tile(c0 / PI, 2))
    # a group rarer than the noise is capped at c0 / r: no coordinate's noise above c0
    np.testing.assert_allclose(obj.typical_dual_clips(0.1),
                               np.tile(c0 / np.array([0.1, 0.15, 0.8]), 2))
    for scale in (1e-3, 0.1, 3.0):
        assert np.all(scale * obj.typical_dual_clips(scale) <= c0 * (1 + 1e-12))
    np.testing.assert_allclose(obj.regularized(0.5).typical_dual_clips(0.1),
                               obj.typical_dual_clips(0.1))
    # divided by the clips, a prediction at the target's bound has norm <= 1 in every
    # group: nothing within the bound is clipped, whatever the group
    h = 2.0
    for g in range(3):
        a = -h * np.ones(3)
        a[g] += h / PI[g]
        u = np.concatenate([a, -a]) / obj.typical_dual_clips(0.0)
        assert np.linalg.norm(u) <= 1.0 + 1e-12


@pytest.mark.parametrize("clip", [np.array([0.5, 3.0, 0.8, 0.4, 2.0, 1.0]), 0.7])
def test_parity_clipped_sums_match_the_generic_clip_and_bound_sensitivity(clip):
    rng = np.random.default_rng(1)
    obj, data = _parity_problem(rng)
    w, v = rng.normal(size=obj.n_primal), rng.uniform(0, 1, size=6)
    gw, gv = obj.per_example_grads(w, v, data)
    sw, sv = obj.clipped_grad_sums(w, v, data, 0.5, clip)
    np.testing.assert_allclose(sv, clipped_sum(gv, clip), rtol=1e-10, atol=1e-10)
    np.testing.assert_allclose(sw, clipped_sum(gw, 0.5), rtol=1e-10, atol=1e-10)
    whitened = np.linalg.norm(gv / clip, axis=1)
    assert np.any(whitened > 1.0) and np.any(whitened < 1.0)  # the clip binds on some
    # add/remove-one: the whitened dual sum moves by at most 1
    for i in rng.choice(data.n_samples, size=20, replace=False):
        keep = np.delete(np.arange(data.n_samples), i)
        _, sv_minus = obj.clipped_grad_sums(w, v, data.take(keep), 0.5, clip)
        assert np.linalg.norm((sv - sv_minus) / clip) <= 1.0 + 1e-12


def test_parity_auto_dual_clips_reach_the_oracle():
    obj = DemographicParityRegression(3, PI, data_norm=2.0, radius=5.0, bounds=(-1.0, 1.0))
    sampler = make_sampler("poisson", 1000, 50)
    got = dual_clips(obj, "auto", 1.0, 3.0, sampler)
    expected = np.minimum(obj.typical_dual_clips(3.0 / 50.0), obj.lipschitz()[1])
    assert np.shape(got) == (6,)
    np.testing.assert_allclose(got, expected)


def _exact_parity(X, y, groups, tolerance):
    # Least squares with |E[h | a] - E[h]| <= t for every group, by SLSQP.
    Xa = np.hstack([X, np.ones((len(X), 1))])
    A = np.array([Xa[groups == a].mean(axis=0) - Xa.mean(axis=0) for a in np.unique(groups)])
    constraints = [{"type": "ineq", "fun": lambda w: tolerance - A @ w},
                   {"type": "ineq", "fun": lambda w: tolerance + A @ w}]
    result = minimize(lambda w: np.mean((y - Xa @ w) ** 2), np.zeros(Xa.shape[1]),
                      jac=lambda w: -2.0 * Xa.T @ (y - Xa @ w) / len(y),
                      constraints=constraints, method="SLSQP", options={"maxiter": 500})
    return Xa @ result.x


def _largest_gap(h, groups):
    return max(abs(h[groups == a].mean() - h.mean()) for a in np.unique(groups))


def test_parity_regressor_without_noise_meets_its_tolerance():
    # A task whose least-squares fit has 8 times the allowed gap: the default solver,
    # without noise, ends at the constrained solution (the scalar dual clip, the clip
    # of 1 on the primal and dual_reg=0.1 left the gap at 3.6 times the tolerance).
    X, y = make_regression(1500, 8, n_informative=5, noise=20.0, random_state=0)
    X = (X - X.mean(axis=0)) / X.std(axis=0)
    groups = (X[:, 0] > 0.3).astype(int) + (X[:, 1] > 0.5).astype(int)
    bounds = (float(y.min()), float(y.max()))
    t = 0.01 * (bounds[1] - bounds[0])
    exact = _exact_parity(X, y, groups, t)
    plain = np.hstack([X, np.ones((len(X), 1))]) @ np.linalg.lstsq(
        np.hstack([X, np.ones((len(X), 1))]), y, rcond=None)[0]
    assert _largest_gap(plain, groups) > 5 * t and _largest_gap(exact, groups) <= 1.01 * t

    model = DPGroupFairRegressor(epsilon=np.inf, constraint="demographic_parity", bounds=bounds,
                                 data_norm=math.ceil(np.linalg.norm(X, axis=1).max()),
                                 tolerance=t, group_ratios=np.bincount(groups) / len(groups),
                                 random_state=0)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        model.fit(X, y, sensitive_features=groups)
    h = model.predict(X)
    assert _largest_gap(h, groups) <= 1.25 * t
    assert np.mean((y - h) ** 2) <= 1.05 * np.mean((y - exact) ** 2)
    assert model.solver_.clip_w == "scaled" and np.shape(model.solver_info_["clip_v"]) == (6,)
    assert model.objective_.dual_reg == 0.01


def test_parity_primal_clip_leaves_room_for_the_multipliers_where_quiet():
    """A user-style probe: with 10 groups on diabetes the default primal clip (the
    loss's typical norm) cut the multipliers' terms s_g = mu_g / pi_g - sum(mu), whose
    sum over the data cancels only unclipped, and the intercept drifted without noise
    (mean prediction 92 for a mean target of 152, R^2 -0.22). The clip now has room for
    max_example_weight() = 1 + B (1/pi_min - 1 + K - 1) / |loss'(0)| typical norms where
    the noise is quiet, as the group-DRO clip has."""
    from sklearn.datasets import load_diabetes
    from sklearn.preprocessing import StandardScaler

    from skdpminimax.privacy import PrivacyBudget
    from skdpminimax.solvers import NoisySGDA

    obj = DemographicParityRegression(3, PI, data_norm=2.0, radius=5.0, bounds=(-1.0, 1.0),
                                      multiplier_bound=2.0)
    # independent: B = 2, 1/pi_min = 20, K = 3, loss'(0) bound 2 B_y = 2
    assert obj.max_example_weight() == pytest.approx(1 + 2.0 * (20 - 1 + 2) / 2.0)
    sampler = make_sampler("poisson", 10_000, 64)
    solver = NoisySGDA(clip_w="scaled")
    typical = obj.typical_grad_norms()[0]
    assert solver._primal_clip(obj, sampler, 500, PrivacyBudget(np.inf, 1e-6)) == \
        pytest.approx(typical * obj.max_example_weight())
    # with noise, k-fold while k^2 E <= 0.01, and the old rule once E >= 0.01
    from skdpminimax.solvers._planning import calibrate_gradient_blocks, primal_noise_energy
    for epsilon in (0.5, 0.02):
        budget = PrivacyBudget(epsilon, 1e-6)
        at_typical = calibrate_gradient_blocks(obj, sampler, 500, budget, solver.accounting,
                                               typical, solver.clip_v,
                                               solver.noise_allocation)
        energy = primal_noise_energy(at_typical, obj.n_primal, sampler)
        k = min(obj.max_example_weight(), max(1.0, math.sqrt(0.01 / energy)))
        assert solver._primal_clip(obj, sampler, 500, budget) == \
            pytest.approx(typical / math.sqrt(1 + energy) * k)
    assert k == 1.0  # epsilon = 0.02: noisy, the rule as before

    X, y = load_diabetes(return_X_y=True)
    X = StandardScaler().fit_transform(X)
    groups = np.digitize(X[:, 0], np.quantile(X[:, 0], np.linspace(0, 1, 11)[1:-1]))
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        est = DPGroupFairRegressor(epsilon=np.inf, data_norm=5.0, bounds=(25, 346),
                                   tolerance=0.05, constraint="demographic_parity",
                                   random_state=0).fit(X, y, sensitive_features=groups)
    pred = est.predict(X)
    assert abs(pred.mean() - y.mean()) < 0.03 * y.mean()
    assert est.score(X, y) > 0.25
