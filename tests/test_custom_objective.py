"""DPSaddleEstimator: fitting a user's SaddleObjective privately."""

import numpy as np
import pytest
from diffprivlib.accountant import BudgetAccountant
from sklearn.base import clone
from sklearn.utils.estimator_checks import parametrize_with_checks

from skdpminimax import DPSaddleEstimator
from skdpminimax.objectives import SaddleObjective
from skdpminimax.sets import Box, L2Ball
from skdpminimax.solvers import NoisySGDA


class CoupledMean(SaddleObjective):
    """f(w, v; x) = ||w - x||^2 / 2 + v a.w, r = -lam v^2 / 2 (saddle point in closed form).

    v* = a.xbar / (lam + ||a||^2), w* = xbar - v* a (when inside the sets).
    """

    def __init__(self, n_features, data_norm, a=None, lam=1.0, radius=10.0, v_bound=10.0):
        self.a = np.ones(n_features) if a is None else np.asarray(a, float)
        self.lam = lam
        self.data_norm = data_norm
        self.radius = radius
        self.v_bound = v_bound
        self.primal_set = L2Ball(radius)
        self.dual_set = Box(-v_bound, v_bound)

    def init_params(self, rng=None):
        return np.zeros(self.a.size), np.zeros(1)

    def per_example_values(self, w, v, data):
        return 0.5 * np.sum((w - data.X) ** 2, axis=1) + v[0] * (self.a @ w)

    def per_example_grads(self, w, v, data):
        gw = (w - data.X) + v[0] * self.a
        return gw, np.full((data.n_samples, 1), self.a @ w)

    def reg_value(self, w, v):
        return -0.5 * self.lam * float(v @ v)

    def reg_grad(self, w, v):
        return np.zeros_like(w), -self.lam * v

    def lipschitz(self):
        na = np.linalg.norm(self.a)
        return self.radius + self.data_norm + self.v_bound * na, na * self.radius

    def strong_convexity(self):
        return 1.0, self.lam

    def predict(self, w, X):
        return X @ w


def _gda(n_iter=2000):
    return NoisySGDA(batch_size=None, n_iter=n_iter, step_size=0.2, clip_w=None, clip_v=None,
                     average="last")


def test_noise_free_fit_reaches_the_closed_form_saddle_point():
    rng = np.random.default_rng(0)
    X = rng.normal(loc=1.0, size=(100, 3))
    est = DPSaddleEstimator(CoupledMean, {"a": [1.0, -2.0, 0.5], "lam": 2.0}, epsilon=np.inf,
                            data_norm=10.0, solver=_gda(), random_state=0).fit(X)
    a, xbar = np.array([1.0, -2.0, 0.5]), X.mean(axis=0)
    v_star = a @ xbar / (2.0 + a @ a)
    np.testing.assert_allclose(est.dual_coef_, [v_star], atol=1e-6)
    np.testing.assert_allclose(est.coef_, xbar - v_star * a, atol=1e-6)
    np.testing.assert_allclose(est.predict(X), X @ est.coef_)


def test_private_fit_spends_the_budget_and_is_reproducible():
    rng = np.random.default_rng(1)
    X = rng.normal(size=(200, 2))
    acc = BudgetAccountant()
    est = DPSaddleEstimator(CoupledMean, epsilon=1.0, data_norm=3.0, accountant=acc,
                            random_state=5)
    w1 = est.fit(X).coef_.copy()
    w2 = clone(est).fit(X).coef_
    np.testing.assert_array_equal(w1, w2)
    assert acc.total()[0] == pytest.approx(2.0)
    assert est.calibration_.noise_multiplier > 0 and est.n_iter_ == est.calibration_.n_steps


def test_groups_and_targets_reach_the_objective():
    seen = {}

    class Spy(CoupledMean):
        def per_example_values(self, w, v, data):
            seen["groups"], seen["y"] = data.groups, data.y
            return super().per_example_values(w, v, data)

        def per_example_grads(self, w, v, data):
            seen["groups"], seen["y"] = data.groups, data.y
            return super().per_example_grads(w, v, data)

    X = np.random.default_rng(2).normal(size=(20, 2))
    sf = np.array(["u", "v"] * 10)
    est = DPSaddleEstimator(Spy, epsilon=np.inf, data_norm=5.0, solver=_gda(3)).fit(
        X, np.arange(20.0), sensitive_features=sf)
    assert list(est.groups_) == ["u", "v"]
    assert set(np.unique(seen["groups"])) == {0, 1} and seen["y"] is not None


def test_not_an_objective_raises_before_spending():
    acc = BudgetAccountant()
    est = DPSaddleEstimator(lambda n_features, data_norm: object(), epsilon=1.0, data_norm=1.0,
                            accountant=acc)
    with pytest.raises(TypeError, match="must return a SaddleObjective"):
        est.fit(np.zeros((5, 2)))
    assert tuple(acc.total()) == (0.0, 0.0)
    assert not hasattr(DPSaddleEstimator(CoupledMean), "predict")  # unfitted: not available


def _materialised(decorator):
    mark = decorator.mark
    return pytest.mark.parametrize(mark.args[0], list(mark.args[1]), **mark.kwargs)


def _no_expected_failures(estimator):
    return {}


@_materialised(parametrize_with_checks(
    [DPSaddleEstimator(CoupledMean, epsilon=1.0, data_norm=5.0, random_state=0)],
    expected_failed_checks=_no_expected_failures))
def test_sklearn_compatible(estimator, check):
    check(estimator)
