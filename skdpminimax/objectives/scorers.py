"""Scoring functions ``h(theta; x)``: parameters to scores, and their gradients.

A scorer is the model part of an objective (the AUC objective takes any scorer).
It reports, from public bounds only, how large a score and its gradient can be.
"""

import numpy as np
import scipy.sparse as sp

from skdpminimax.privacy.mechanisms import squared_row_norms

__all__ = ["LinearScorer", "MLPScorer"]


class LinearScorer:
    """``h(theta; x) = theta @ x`` with ``||theta|| <= radius``.

    With rows clipped to ``||x|| <= data_norm``: ``|h| <= data_norm * radius`` and
    ``||grad_theta h|| = ||x|| <= data_norm``.
    """

    def n_params(self, n_features):
        """Return the number of parameters for ``n_features`` features."""
        return int(n_features)

    def init_params(self, n_features, rng=None):
        """Return the data-free initial parameters (zeros for the linear scorer)."""
        return np.zeros(n_features)

    def scores(self, theta, X):
        """Return the scores ``h(theta; x)`` of the rows of ``X``, shape ``(m,)``."""
        return X @ theta

    def score_grads(self, theta, X):
        """Per-example ``grad_theta h(theta; x_i)``: shape ``(m, n_params)``, dense."""
        return X.toarray() if sp.issparse(X) else X

    def weighted_grad_sum(self, theta, X, weights):
        """``sum_i weights_i * grad_theta h(theta; x_i)`` without forming the Jacobian."""
        return weights @ X

    def grad_norms(self, theta, X, sq_x=None):
        """Per-example ``||grad_theta h(theta; x_i)||`` (``sq_x``: precomputed ``||x_i||^2``)."""
        return np.sqrt(squared_row_norms(X) if sq_x is None else sq_x)

    def score_bound(self, data_norm, radius):
        """Return a bound on ``|h|`` over the ball of ``radius`` (public)."""
        return data_norm * radius

    def grad_bound(self, data_norm, radius):
        """Return a bound on ``||grad_theta h||`` over the ball of ``radius`` (public)."""
        return data_norm


# Hidden activations computed at once when scoring (rows x units): 8 MB of floats.
_SCORE_BLOCK_ENTRIES = 1 << 20


class MLPScorer:
    r"""Two-layer perceptron ``h(theta; x) = w_2 @ lrelu(W_1 x + b_1)``, scalar output.

    The model of Yang et al. (2022, Sec. 6: 256 hidden units, leaky ReLU following
    Liu et al. 2020). ``theta`` is the flat vector ``(W_1.ravel(), b_1, w_2)`` of
    size ``hidden_units * (n_features + 2)``. There is no output bias: the AUC
    objective's class centres ``a`` and ``b`` absorb it and AUC ignores it.

    Parameters
    ----------
    hidden_units : int, default=256
        Width of the hidden layer.
    negative_slope : float, default=0.01
        Slope of the leaky ReLU for negative inputs (PyTorch's default).
    init_scale : float, default=1.0
        Multiplies PyTorch's default initial weights (see :meth:`init_params`). On the
        Yang et al. validation splits 0.5 gained up to 0.18 points at epsilon >= 0.5
        and lost up to 1.5 at epsilon = 0.1, so the reproduction keeps 1
        (docs/benchmarks.md).

    Notes
    -----
    The per-example gradient has a rank-one first layer,
    ``d h / d W_1 = (w_2 * lrelu'(z)) x^T``, so its squared norm is
    ``||w_2 * lrelu'(z)||^2 (||x||^2 + 1) + ||lrelu(z)||^2`` and weighted sums are two
    matrix products: neither forms the ``(m, n_params)`` Jacobian.

    There is no public bound on the score or its gradient over a ball of
    parameters worth using (it grows with the radius squared), so
    :meth:`score_bound` and :meth:`grad_bound` are infinite: per-example clipping is
    what makes a solver private with this scorer, and clip norms are required.
    """

    def __init__(self, hidden_units=256, negative_slope=0.01, init_scale=1.0):
        if int(hidden_units) < 1:
            raise ValueError(f"hidden_units must be >= 1, got {hidden_units}.")
        if not 0 <= negative_slope < 1:
            raise ValueError(f"negative_slope must be in [0, 1), got {negative_slope}.")
        if not (np.isfinite(init_scale) and init_scale > 0):
            raise ValueError(f"init_scale must be finite and > 0, got {init_scale}.")
        self.hidden_units = int(hidden_units)
        self.negative_slope = float(negative_slope)
        self.init_scale = float(init_scale)

    def n_params(self, n_features):
        """Return the number of parameters for ``n_features`` features."""
        return self.hidden_units * (int(n_features) + 2)

    def init_params(self, n_features, rng=None):
        """``init_scale`` times PyTorch's default ``nn.Linear`` init, ``U(-1/sqrt(fan_in),
        1/sqrt(fan_in))``.

        Data-independent; ``rng=None`` (used only to read shapes) gives a fixed seed.
        """
        rng = np.random.default_rng(0) if rng is None else rng
        H, d = self.hidden_units, int(n_features)
        first = rng.uniform(-1.0, 1.0, H * (d + 1)) / np.sqrt(d)  # W_1 and b_1
        second = rng.uniform(-1.0, 1.0, H) / np.sqrt(H)
        return self.init_scale * np.concatenate([first, second])

    def _unpack(self, theta, n_features):
        H = self.hidden_units
        W1 = theta[: H * n_features].reshape(H, n_features)
        b1 = theta[H * n_features : H * (n_features + 1)]
        w2 = theta[H * (n_features + 1) :]
        return W1, b1, w2

    def _forward(self, theta, X):
        """Hidden activations ``A = lrelu(Z)`` and ``D = w_2 * lrelu'(Z)``, both ``(m, H)``."""
        W1, b1, w2 = self._unpack(theta, X.shape[1])
        A, slope = self._lrelu(X @ W1.T + b1)
        return A, slope * w2

    def _lrelu(self, Z):
        """The leaky ReLU of ``Z`` and its slope at ``Z``."""
        slope = np.where(Z > 0, 1.0, self.negative_slope)
        return Z * slope, slope

    def forward(self, theta, X):
        """The batch's hidden activations and output weights' slopes ``(A, D)``: pass it
        as ``state`` to the methods below so that one step computes the forward pass
        once (it was computed three times: scores, norms, weighted sum)."""
        return self._forward(theta, X)

    def scores(self, theta, X, state=None):
        """Return the scores ``h(theta; x)`` of the rows of ``X``, shape ``(m,)``."""
        W1, b1, w2 = self._unpack(theta, X.shape[1])
        if state is not None:
            return state[0] @ w2
        # In blocks of rows: the hidden layer of a whole prediction set is (n, H)
        # floats several times over (7.8 GB for 1e6 rows at 256 units; a scale probe).
        out = np.empty(X.shape[0])
        step = max(1, _SCORE_BLOCK_ENTRIES // self.hidden_units)
        for start in range(0, X.shape[0], step):
            A, _ = self._lrelu(X[start:start + step] @ W1.T + b1)
            out[start:start + step] = A @ w2
        return out

    def score_grads(self, theta, X):
        """Per-example ``grad_theta h(theta; x_i)``: shape ``(m, n_params)`` (small cases)."""
        A, D = self._forward(theta, X)
        m = X.shape[0]
        X = X.toarray() if sp.issparse(X) else X
        first = (D[:, :, None] * X[:, None, :]).reshape(m, -1)
        return np.hstack([first, D, A])

    def weighted_grad_sum(self, theta, X, weights, state=None):
        """``sum_i weights_i * grad_theta h(theta; x_i)`` without forming the Jacobian."""
        A, D = self._forward(theta, X) if state is None else state
        G = D * weights[:, None]
        return np.concatenate([(G.T @ X).ravel(), G.sum(axis=0), weights @ A])

    def grad_norms(self, theta, X, sq_x=None, state=None):
        """Per-example ``||grad_theta h(theta; x_i)||`` from the rank-one structure.

        ``sq_x`` are the precomputed ``||x_i||^2`` (computed here when not given).
        """
        A, D = self._forward(theta, X) if state is None else state
        if sq_x is None:
            sq_x = squared_row_norms(X)
        sq = np.einsum("ij,ij->i", D, D) * (sq_x + 1.0) + np.einsum("ij,ij->i", A, A)
        return np.sqrt(sq)

    def score_bound(self, data_norm, radius):
        """Return a bound on ``|h|`` over the ball of ``radius`` (public)."""
        return np.inf

    def grad_bound(self, data_norm, radius):
        """Return a bound on ``||grad_theta h||`` over the ball of ``radius`` (public)."""
        return np.inf
