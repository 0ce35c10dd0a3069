"""Saddle objectives with known saddle points, for solver tests.

Both are ``min_{||w|| <= R_w} max_{||v|| <= R_v} (1/n) sum_i f(w, v; z_i) + r(w, v)``
with per-example data ``z_i = (x_i, y_i)`` (the rows of ``X``: the first
``dim`` columns are ``x``, the next ``dim`` are ``y``) and

    f(w, v; z) = w^T A v + <w, x> - <v, y>,
    r(w, v)    = mu/2 ||w||^2 - mu/2 ||v||^2      (mu = 0: the bilinear game).

The empirical saddle point solves ``mu w + A v = -x_bar``, ``A^T w - mu v = y_bar``
when it lies inside the balls (the tests pick radii so that it does).
"""

import numpy as np

from skdpminimax.objectives.base import SaddleObjective
from skdpminimax.sets import L2Ball

__all__ = ["BilinearGame", "StronglyMonotoneQuadratic", "make_linear_data"]


class _LinearDataSaddle(SaddleObjective):
    """Shared body; ``mu`` is the data-free strong convexity / concavity."""

    mu = 0.0
    certified_constants = True  # the bounds below are proved from data_norm and the radii

    def __init__(self, A, data_norm, radius_w=5.0, radius_v=5.0):
        self.A = np.asarray(A, dtype=float)
        self.dim = self.A.shape[0]
        self.data_norm = float(data_norm)
        self.radius_w = float(radius_w)
        self.radius_v = float(radius_v)
        self.primal_set = L2Ball(radius_w)
        self.dual_set = L2Ball(radius_v)

    def init_params(self, rng=None):
        return np.zeros(self.dim), np.zeros(self.dim)

    def _split(self, data):
        return data.X[:, : self.dim], data.X[:, self.dim :]

    def per_example_values(self, w, v, data):
        x, y = self._split(data)
        return float(w @ self.A @ v) + x @ w - y @ v

    def per_example_grads(self, w, v, data):
        x, y = self._split(data)
        return self.A @ v + x, self.A.T @ w - y

    def lipschitz(self):
        # ||x||, ||y|| <= data_norm (rows are clipped to it), and the balls bound w, v.
        spec = np.linalg.norm(self.A, 2)
        return spec * self.radius_v + self.data_norm, spec * self.radius_w + self.data_norm

    def reg_value(self, w, v):
        return 0.5 * self.mu * (float(w @ w) - float(v @ v))

    def reg_grad(self, w, v):
        return self.mu * w, -self.mu * v

    def smoothness(self):
        return float(np.linalg.norm(self.A, 2) + self.mu)

    def strong_convexity(self):
        return self.mu, self.mu

    def saddle_point(self, data):
        """Exact empirical saddle point (assumed interior)."""
        x, y = self._split(data)
        d, mu = self.dim, self.mu
        K = np.block([[mu * np.eye(d), self.A], [self.A.T, -mu * np.eye(d)]])
        sol = np.linalg.solve(K, np.concatenate([-x.mean(0), y.mean(0)]))
        return sol[:d], sol[d:]


class StronglyMonotoneQuadratic(_LinearDataSaddle):
    """``mu``-strongly-convex-strongly-concave quadratic game."""

    def __init__(self, A, data_norm, mu=1.0, radius_w=5.0, radius_v=5.0):
        super().__init__(A, data_norm, radius_w, radius_v)
        self.mu = float(mu)


class BilinearGame(_LinearDataSaddle):
    """Bilinear game (``mu = 0``); ``A`` must be invertible for a unique saddle point."""


def make_linear_data(n, dim, rng, mean_x=None, mean_y=None, spread=0.05, data_norm=2.0):
    """``n`` rows ``(x_i, y_i)`` around given means, clipped to ``data_norm``."""
    from skdpminimax.objectives.base import SaddleData
    from skdpminimax.privacy.mechanisms import clip_rows

    mean_x = np.full(dim, 0.3) if mean_x is None else mean_x
    mean_y = np.full(dim, -0.2) if mean_y is None else mean_y
    X = np.concatenate([mean_x, mean_y]) + spread * rng.standard_normal((n, 2 * dim))
    # Each half is clipped to data_norm, which lipschitz() assumes for x and y.
    X = np.hstack([clip_rows(X[:, :dim], data_norm), clip_rows(X[:, dim:], data_norm)])
    return SaddleData(X)
