"""Scoring functions ``h(theta; x)``: parameters to scores, and their gradients.

A scorer is the model part of an objective (the AUC objective takes any scorer).
It reports, from public bounds only, how large a score and its gradient can be.
"""

import numpy as np

__all__ = ["LinearScorer"]


class LinearScorer:
    """``h(theta; x) = theta @ x`` with ``||theta|| <= radius``.

    With rows clipped to ``||x|| <= data_norm``: ``|h| <= data_norm * radius`` and
    ``||grad_theta h|| = ||x|| <= data_norm``.
    """

    def n_params(self, n_features):
        return int(n_features)

    def init_params(self, n_features, rng=None):
        return np.zeros(n_features)

    def scores(self, theta, X):
        return X @ theta

    def score_grads(self, theta, X):
        """Per-example ``grad_theta h(theta; x_i)``: shape ``(m, n_params)``."""
        return X

    def weighted_grad_sum(self, theta, X, weights):
        """``sum_i weights_i * grad_theta h(theta; x_i)`` without forming the Jacobian."""
        return weights @ X

    def grad_norms(self, theta, X):
        """Per-example ``||grad_theta h(theta; x_i)||``."""
        return np.sqrt(np.einsum("ij,ij->i", X, X))

    def score_bound(self, data_norm, radius):
        return data_norm * radius

    def grad_bound(self, data_norm, radius):
        return data_norm
