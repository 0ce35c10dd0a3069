"""Test objectives with closed-form saddle points (output-perturbation engine tests)."""

import numpy as np

from skdpminimax.objectives.base import SaddleData, SaddleObjective
from skdpminimax.sets import L2Ball, ProductSet, Box


class BilinearGame(SaddleObjective):
    r"""``f(w, v; a, b) = <w, a> + w^T M v - <v, b>`` plus ``mu_w/2 ||w||^2 - mu_v/2 ||v||^2``.

    Rows of ``X`` are ``(a, b)`` with ``||a||, ||b|| <= data_norm``. With
    ``mu_w = mu_v = 0`` it is the bilinear game; ``regularized`` makes it SC-SC. Sets
    are balls of radius ``radius_w`` / ``radius_v``.
    """

    certified_constants = True  # the bounds below are proved from data_norm and the sets

    def __init__(self, M, data_norm=1.0, radius_w=10.0, radius_v=10.0, mu_w=0.0, mu_v=0.0,
                 primal_set=None, dual_set=None):
        self.M = np.asarray(M, dtype=float)
        self.dw, self.dv = self.M.shape
        self.data_norm = data_norm
        self.mu_w, self.mu_v = mu_w, mu_v
        self.radius_w, self.radius_v = radius_w, radius_v
        self.primal_set = L2Ball(radius_w) if primal_set is None else primal_set
        self.dual_set = L2Ball(radius_v) if dual_set is None else dual_set

    def init_params(self, rng=None):
        return np.zeros(self.dw), np.zeros(self.dv)

    def _ab(self, data):
        return data.X[:, : self.dw], data.X[:, self.dw:]

    def per_example_values(self, w, v, data):
        a, b = self._ab(data)
        return a @ w + w @ self.M @ v - b @ v

    def per_example_grads(self, w, v, data):
        a, b = self._ab(data)
        return a + self.M @ v, -b + self.M.T @ w

    def reg_value(self, w, v):
        return 0.5 * self.mu_w * float(w @ w) - 0.5 * self.mu_v * float(v @ v)

    def reg_grad(self, w, v):
        return self.mu_w * w, -self.mu_v * v

    def lipschitz(self):
        norm_m = np.linalg.norm(self.M, 2)
        return (self.data_norm + norm_m * self.dual_set.radius(self.dv),
                self.data_norm + norm_m * self.primal_set.radius(self.dw))

    def smoothness(self):
        return float(np.linalg.norm(self.M, 2)) + max(self.mu_w, self.mu_v)

    def strong_convexity(self):
        return self.mu_w, self.mu_v

    def unconstrained_saddle(self, data, lam_w=0.0, lam_v=0.0):
        """Solve ``grad = 0`` for the objective plus ``lam/2`` quadratics centred at 0."""
        a, b = self._ab(data)
        mw, mv = self.mu_w + lam_w, self.mu_v + lam_v
        K = np.block([[mw * np.eye(self.dw), self.M], [self.M.T, -mv * np.eye(self.dv)]])
        rhs = np.concatenate([-a.mean(axis=0), b.mean(axis=0)])
        z = np.linalg.solve(K, rhs)
        return z[: self.dw], z[self.dw:]


def make_game_data(n, dw, dv, rng, data_norm=1.0, shift=0.3):
    """Rows ``(a, b)`` with a common mean and norms clipped to ``data_norm``."""
    mean = shift * np.ones(dw + dv) / np.sqrt(dw + dv)
    X = mean + 0.3 * rng.standard_normal((n, dw + dv))
    for sl in (slice(0, dw), slice(dw, dw + dv)):
        norms = np.linalg.norm(X[:, sl], axis=1, keepdims=True)
        X[:, sl] *= np.minimum(1.0, data_norm / np.maximum(norms, 1e-12))
    return SaddleData(X)


def decoupled_boundary_game(dw, dv, radius=0.05, box=0.05):
    """``M = 0``: saddle point is ``(Pi_W(-abar/mu_w), Pi_V(-bbar/mu_v))`` (on the boundary)."""
    M = np.zeros((dw, dv))
    W = ProductSet([(dw - 1, L2Ball(radius)), (1, Box(-box, box))])
    return BilinearGame(M, mu_w=1.0, mu_v=2.0, primal_set=W, dual_set=L2Ball(radius))


def decoupled_solution(objective, data):
    a, b = objective._ab(data)
    return (objective.primal_set.project(-a.mean(axis=0) / objective.mu_w),
            objective.dual_set.project(-b.mean(axis=0) / objective.mu_v))
