"""Per-example losses of linear models, with bounds from public quantities only.

A loss maps scores ``Z`` of shape ``(m, k)`` and targets to per-example values and
to ``d loss / d Z``. Given a public bound ``H`` on every score, it states bounds on
the value, on ``||d loss / d Z||`` and on the curvature: the objectives turn them
into the per-example Lipschitz bounds privacy rests on. All formulas are
overflow-free for extreme scores (log-sum-exp, ``logaddexp``).
"""

import math

import numpy as np
import scipy.sparse as sp
from scipy.special import expit

from skdpminimax.privacy.mechanisms import squared_row_norms

__all__ = ["LogisticLoss", "MultinomialLoss", "SquaredLoss", "LinearModel"]


def _log_softmax(Z):
    """Row-wise ``log softmax``, overflow-free (the row maximum is subtracted first).

    Plain numpy: scipy's version costs several times more per call on the small
    batches of the certified solves, which call it hundreds of thousands of times."""
    S = Z - Z.max(axis=1, keepdims=True)
    return S - np.log(np.exp(S).sum(axis=1, keepdims=True))


def check_plus_minus_one(y, owner):
    """Refuse ``y`` outside ``{-1, +1}``, the labels ``owner``'s bounds assume."""
    if y is None or not np.all((y == 1.0) | (y == -1.0)):
        raise ValueError(f"{owner} needs y in {{-1, +1}} (its gradient bounds assume it); "
                         "encode the labels first.")


class LogisticLoss:
    """Binary logistic loss ``log(1 + exp(-y z))`` with ``y`` in ``{-1, +1}``."""

    n_outputs = 1
    curvature = 0.25  # sup of the second derivative
    # A score magnitude a fitted model typically reaches (a public guess, read by
    # GroupDRO.typical_solution_norm): a logit of 5 is a probability of 0.993.
    typical_score = 5.0

    def check_targets(self, y):
        """Refuse ``y`` outside ``{-1, +1}``: the gradient bound 1 assumes it."""
        check_plus_minus_one(y, "LogisticLoss")

    def values(self, Z, y):
        """Return the per-example losses, shape ``(m,)``, at scores ``Z``."""
        return np.logaddexp(0.0, -y * Z[:, 0])

    def score_grads(self, Z, y):
        """Return ``d loss / d Z`` per example, the shape of ``Z``."""
        return (-y * expit(-y * Z[:, 0]))[:, None]

    def value_bound(self, H):
        """Return a bound on the loss where every score is bounded by ``H`` (public)."""
        return float(np.logaddexp(0.0, H))

    def grad_bound(self, H):
        """Return a bound on ``||d loss / d Z||`` where every score is bounded by ``H``."""
        return 1.0


class MultinomialLoss:
    """Multinomial logistic loss ``logsumexp(z) - z_y`` with integer ``y`` in ``[0, k)``."""

    curvature = 0.5  # largest eigenvalue of diag(p) - p p^T
    typical_score = 5.0  # per class, as for LogisticLoss

    def __init__(self, n_classes):
        self.n_outputs = int(n_classes)

    def check_targets(self, y):
        """Refuse ``y`` that is not an integer class code in ``[0, k)``."""
        if (y is None or not np.all(np.isfinite(y)) or not np.all(y == np.round(y))
                or np.any(y < 0) or np.any(y >= self.n_outputs)):
            raise ValueError(f"MultinomialLoss needs integer class codes y in [0, "
                             f"{self.n_outputs}); encode the labels first.")

    def values(self, Z, y):
        """Return the per-example losses, shape ``(m,)``, at scores ``Z``."""
        return -_log_softmax(Z)[np.arange(Z.shape[0]), y.astype(int)]

    def score_grads(self, Z, y):
        """Return ``d loss / d Z`` per example, the shape of ``Z``."""
        P = np.exp(_log_softmax(Z))
        P[np.arange(Z.shape[0]), y.astype(int)] -= 1.0
        return P

    def value_bound(self, H):
        # z_j - z_y <= (||W_j|| + ||W_y||) kappa <= sqrt(2) * radius * kappa = sqrt(2) H.
        """Return a bound on the loss where every score is bounded by ``H`` (public)."""
        return math.log(self.n_outputs) + math.sqrt(2.0) * H

    def grad_bound(self, H):
        """Return a bound on ``||d loss / d Z||`` where every score is bounded by ``H``."""
        return math.sqrt(2.0)  # ||softmax(z) - e_y||


class SquaredLoss:
    """Squared loss ``(y - z)^2``; targets are clipped to the public ``bounds``."""

    n_outputs = 1
    curvature = 2.0
    # per-example gradients 2 (z - y) shrink to the residuals at a fit
    shrinks_at_fit = True

    @property
    def typical_score(self):
        """Predictions live in the targets' public range."""
        return self.target_bound

    def __init__(self, bounds):
        low, high = (float(b) for b in bounds)
        if not low <= high:
            raise ValueError(f"bounds must satisfy lower <= upper, got {bounds}.")
        self.bounds = (low, high)
        self.target_bound = max(abs(low), abs(high))

    def check_targets(self, y):
        """Any finite ``y``: targets are clipped to the public ``bounds``."""
        if y is None or not np.all(np.isfinite(y)):
            raise ValueError("SquaredLoss needs finite targets y.")

    def _residual(self, Z, y):
        return Z[:, 0] - np.clip(y, *self.bounds)

    def values(self, Z, y):
        """Return the per-example losses, shape ``(m,)``, at scores ``Z``."""
        return self._residual(Z, y) ** 2

    def score_grads(self, Z, y):
        """Return ``d loss / d Z`` per example, the shape of ``Z``."""
        return (2.0 * self._residual(Z, y))[:, None]

    def value_bound(self, H):
        """Return a bound on the loss where every score is bounded by ``H`` (public)."""
        bound = self.target_bound + H
        return bound * bound  # inf, not OverflowError, for huge public bounds

    def grad_bound(self, H):
        """Return a bound on ``||d loss / d Z||`` where every score is bounded by ``H``."""
        return 2.0 * (self.target_bound + H)


class LinearModel:
    """Scores ``Z = X W^T + b`` from a flat parameter vector ``w = vec([W, b])``.

    ``W`` has shape ``(k, n_features)``; with ``fit_intercept`` each row of the
    parameter matrix carries its intercept in a last column, so the augmented row
    ``(x, 1)`` has norm at most ``kappa = sqrt(data_norm^2 + 1)`` and, with
    ``||w|| <= radius``, every score is bounded by ``H = radius * kappa``.
    """

    def __init__(self, n_features, n_outputs, data_norm, radius, fit_intercept=True):
        self.n_features = int(n_features)
        self.n_outputs = int(n_outputs)
        self.fit_intercept = bool(fit_intercept)
        self.n_cols = self.n_features + int(self.fit_intercept)
        # hypot: no OverflowError for a huge data_norm (kappa is then inf).
        self.kappa = math.hypot(float(data_norm), float(self.fit_intercept))
        self.score_bound = float(radius) * self.kappa

    @property
    def n_params(self):
        return self.n_outputs * self.n_cols

    def matrix(self, w):
        return w.reshape(self.n_outputs, self.n_cols)

    def coef_intercept(self, w):
        """``(coef, intercept)`` of shapes ``(k, n_features)`` and ``(k,)``."""
        M = self.matrix(w)
        b = M[:, -1] if self.fit_intercept else np.zeros(self.n_outputs)
        return M[:, : self.n_features].copy(), b.copy()

    def scores(self, w, X):
        coef, b = self.coef_intercept(w)
        return X @ coef.T + b

    def row_norms(self, X):
        """``||(x_i, 1)||`` per example."""
        return np.sqrt(squared_row_norms(X) + float(self.fit_intercept))

    def weighted_grad_sum(self, X, G):
        """``sum_i G_i (x_i, 1)^T`` flattened: the primal gradient sum for score weights ``G``."""
        out = G.T @ X
        if self.fit_intercept:
            out = np.column_stack([out, G.sum(axis=0)])
        return out.ravel()

    def per_example_grads(self, X, G):
        """Per-example ``G_i (x_i, 1)^T``: shape ``(m, n_params)``."""
        X = X.toarray() if sp.issparse(X) else X
        Xa = np.column_stack([X, np.ones(X.shape[0])]) if self.fit_intercept else X
        return (G[:, :, None] * Xa[:, None, :]).reshape(X.shape[0], -1)
