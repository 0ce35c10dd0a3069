"""Dual clip norms from public bounds ("auto"), the group estimators' default solver,
and the dual regulariser's centre."""

import math

import numpy as np
import pytest

from skdpminimax import DPGroupFairRegressor, DPRobustClassifier
from skdpminimax.objectives import (
    DemographicParityRegression,
    GroupDRO,
    LogisticLoss,
    MultinomialLoss,
    SaddleData,
    SquaredLoss,
)
from skdpminimax.privacy.mechanisms import clip_rows
from skdpminimax.solvers import NoisySGDA
from skdpminimax.solvers.oracle import resolve_clip_norms

PI = np.array([0.05, 0.15, 0.8])


def _group_data(rng, n=600, d=3):
    X = clip_rows(rng.normal(size=(n, d)), 2.0)
    groups = rng.choice(3, size=n, p=PI)
    y = np.where(X[:, 0] + 0.5 * rng.normal(size=n) > 0, 1, 0)
    return X, y, groups


@pytest.mark.parametrize("loss, ell0", [(LogisticLoss(), math.log(2.0)),
                                        (MultinomialLoss(4), math.log(4.0)),
                                        (SquaredLoss((-2.0, 1.0)), 4.0)])
def test_group_dro_typical_dual_norm(loss, ell0):
    obj = GroupDRO(3, loss, PI, data_norm=2.0, radius=5.0)
    c_w, c_v = obj.typical_grad_norms()
    assert c_v == pytest.approx(ell0 / math.sqrt(0.05))
    assert c_w == pytest.approx(loss.grad_bound(0.0) * math.sqrt(5.0))
    # the loss at score 0 really is ell0 for the worst target
    Z = np.zeros((2, loss.n_outputs))
    y = np.array([0.0, 1.0]) if loss.n_outputs > 1 else np.array([-2.0, 1.0])
    assert loss.values(Z, y).max() == pytest.approx(ell0)
    # typical norms never exceed the certified bounds
    assert c_w <= obj.lipschitz()[0] and c_v <= obj.lipschitz()[1]


def test_parity_typical_dual_norm():
    obj = DemographicParityRegression(3, PI, data_norm=2.0, radius=5.0, bounds=(-1.0, 1.0))
    expected = math.sqrt(2.0 * ((1.0 / math.sqrt(0.05) - 1.0) ** 2 + 2.0))
    assert obj.typical_grad_norms()[1] == pytest.approx(expected)
    assert obj.typical_grad_norms()[1] <= obj.lipschitz()[1]


def test_resolve_clip_norms_auto_is_typical_capped_at_lipschitz():
    obj = GroupDRO(3, LogisticLoss(), PI, data_norm=2.0, radius=5.0)
    assert resolve_clip_norms(obj, 1.5, "auto") == (1.5, obj.typical_grad_norms()[1])
    assert resolve_clip_norms(obj, "auto", None) == (obj.typical_grad_norms()[0],
                                                      obj.lipschitz()[1])
    # "auto" is capped at the certified bounds like any clip norm
    class Loose(GroupDRO):
        def typical_grad_norms(self):
            return 1e12, 1e12

    loose = Loose(3, LogisticLoss(), PI, data_norm=2.0, radius=5.0)
    assert resolve_clip_norms(loose, "auto", "auto") == loose.lipschitz()


def test_sgda_auto_clip_is_used_and_rejects_other_strings():
    rng = np.random.default_rng(0)
    X, y, groups = _group_data(rng)
    obj = GroupDRO(3, LogisticLoss(), PI, data_norm=2.0, radius=5.0, dual_reg=1.0)
    data = SaddleData(X, np.where(y == 1, 1.0, -1.0), groups)
    from skdpminimax.privacy.budget import PrivacyBudget

    res = NoisySGDA(batch_size=100, n_iter=5, clip_v="auto").solve(
        obj, data, PrivacyBudget(1.0, 1e-5), rng)
    assert res.info["clip_v"] == pytest.approx(math.log(2.0) / math.sqrt(0.05))
    with pytest.raises(ValueError):
        NoisySGDA(clip_v="big").calibrate(obj, 600, PrivacyBudget(1.0, 1e-5))


@pytest.mark.parametrize("Estimator, kwargs", [
    (DPRobustClassifier, {}),
    (DPGroupFairRegressor, {"bounds": (0, 1)}),
    (DPGroupFairRegressor, {"bounds": (0, 1), "constraint": "demographic_parity"}),
])
def test_group_estimators_default_solver(Estimator, kwargs):
    rng = np.random.default_rng(1)
    X, y, groups = _group_data(rng)
    est = Estimator(epsilon=1.0, data_norm=2.0, group_ratios=PI, random_state=0, **kwargs)
    est.fit(X, y, sensitive_features=groups)
    solver = est.solver_
    assert isinstance(solver, NoisySGDA)
    assert (solver.clip_v, solver.noise_allocation, solver.average) == ("auto", 0.3, "tail")
    # the dual clip actually used is the objective's typical norm (public pi given)
    assert est.objective_.typical_grad_norms()[1] > 1.0
    # an explicit solver is left alone
    est2 = Estimator(epsilon=1.0, data_norm=2.0, group_ratios=PI, random_state=0,
                     solver=NoisySGDA(clip_v=2.0), **kwargs)
    assert est2.fit(X, y, sensitive_features=groups).solver_.clip_v == 2.0


def test_dual_center_ratios_reaches_frequencies_with_strong_regulariser():
    rng = np.random.default_rng(2)
    X, y, groups = _group_data(rng)
    solver = NoisySGDA(batch_size=None, n_iter=400, step_size=0.5, dual_step_size=0.01,
                       clip_w=None, clip_v=None)
    weights = {}
    for center in ("uniform", "ratios"):
        est = DPRobustClassifier(epsilon=np.inf, data_norm=2.0, dual_reg=50.0,
                                 dual_center=center, group_ratios=PI, solver=solver,
                                 random_state=0).fit(X, y, sensitive_features=groups)
        weights[center] = est.group_weights_
    # q* = Proj(center + R / lambda): within max risk / lambda of the centre
    assert np.abs(weights["ratios"] - PI).max() < 0.03
    assert np.abs(weights["uniform"] - 1.0 / 3).max() < 0.03


def test_dual_center_ratios_objective():
    obj = GroupDRO(2, LogisticLoss(), PI, data_norm=1.0, radius=2.0, dual_reg=2.0,
                   dual_center="ratios")
    w0, v0 = obj.init_params()
    np.testing.assert_allclose(v0, PI)
    np.testing.assert_allclose(obj.reg_grad(w0, PI)[1], 0.0)
    np.testing.assert_allclose(obj.reg_grad(w0, np.array([1.0, 0, 0]))[1],
                               -2.0 * (np.array([1.0, 0, 0]) - PI))
    with pytest.raises(ValueError, match="dual_center"):
        GroupDRO(2, LogisticLoss(), PI, data_norm=1.0, radius=2.0, dual_center="flat")
    with pytest.raises(ValueError, match="dual_center"):
        DPRobustClassifier(dual_center="flat").fit(np.ones((4, 2)), [0, 1, 0, 1],
                                                   sensitive_features=[0, 0, 1, 1])
