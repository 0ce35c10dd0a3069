r"""Demographic-parity-constrained least squares as a Lagrangian saddle problem.

For a linear predictor ``h(x) = w^T (x, 1)``, groups ``a = 1..K`` of frequencies
``pi_a`` and a public tolerance ``t``, the constrained problem

.. math::

    \min_{\|w\| \le R} E[(y - h)^2] \quad\text{s.t.}\quad
    |E[h \mid g=a] - E[h]| \le t \quad (a = 1..K)

has the Lagrangian (multipliers ``lambda^+, lambda^-`` in ``[0, B]^K``, bounded so
that gradients stay bounded, as in fairlearn's reductions)

.. math::

    \min_w \max_{\lambda^\pm} \frac1n \sum_i (y_i - h_i)^2
        + \mu_{g_i} h_i / \pi_{g_i} - h_i \textstyle\sum_a \mu_a
        \;-\; t \sum_a (\lambda^+_a + \lambda^-_a)
        - \frac{\nu}{2}\|\lambda\|^2 + \frac{\alpha}{2}\|w\|^2,

with ``mu = lambda^+ - lambda^-``, because ``E[h | g=a] = E[h 1{g=a}] / pi_a``.
Everything after the per-example sum is data-free. ``y`` is clipped to public
``bounds``.
"""

import math

import numpy as np

from skdpminimax.objectives.base import SaddleObjective
from skdpminimax.objectives.group_dro import check_group_codes, check_group_ratios
from skdpminimax.objectives.losses import LinearModel, SquaredLoss
from skdpminimax.privacy.mechanisms import clip_factors, scaled_by_factors
from skdpminimax.sets import Box, L2Ball

__all__ = ["DemographicParityRegression"]


class DemographicParityRegression(SaddleObjective):
    """Least squares with bounded Lagrange multipliers on the demographic-parity gaps.

    Parameters
    ----------
    n_features : int
        Number of features of ``X``.
    group_ratios : array-like of shape (n_groups,)
        Public or privately released group frequencies.
    data_norm : float
        Public bound on ``||x||`` (rows are clipped to it).
    radius : float
        Radius of the L2 ball holding ``w`` (coefficients and intercept).
    bounds : (float, float)
        Public range of ``y`` (targets are clipped to it).
    tolerance : float, default=0.0
        Allowed gap ``t`` between each group mean prediction and the overall mean.
    multiplier_bound : float, default=1.0
        ``B``: multipliers live in ``[0, B]``.
    dual_reg : float, default=0
        ``nu``: strong concavity in the multipliers.
    l2_reg : float, default=0
        ``alpha``: strong convexity in ``w``.
    fit_intercept : bool, default=True
        Whether ``w`` holds an intercept.

    Notes
    -----
    Dual vector ``v = (lambda^+, lambda^-)``. On the feasible set (``|h| <= H =
    radius * kappa``, ``|y| <= B_y``), per example:
    ``||grad_w f|| <= kappa (2 (B_y + H) + B (1/pi_min - 1 + K - 1))`` and
    ``||grad_v f|| <= H sqrt(2 ((1/pi_min - 1)^2 + K - 1))``.
    """

    # lipschitz(), smoothness() and strong_convexity() below are proved from the
    # public bounds (data_norm, radius, the public ratios) for every data set.
    certified_constants = True

    def __init__(self, n_features, group_ratios, data_norm, radius, bounds, tolerance=0.0,
                 multiplier_bound=1.0, dual_reg=0.0, l2_reg=0.0, fit_intercept=True):
        self.loss = SquaredLoss(bounds)
        self.group_ratios = check_group_ratios(group_ratios)
        self.n_groups = self.group_ratios.size
        self.tolerance = float(tolerance)
        self.multiplier_bound = float(multiplier_bound)
        self.dual_reg = float(dual_reg)
        self.l2_reg = float(l2_reg)
        self.model = LinearModel(n_features, 1, data_norm, radius, fit_intercept)
        self.primal_set = L2Ball(radius)
        self.dual_set = Box(0.0, self.multiplier_bound)

    def init_params(self, rng=None):
        return np.zeros(self.model.n_params), np.zeros(2 * self.n_groups)

    def _parts(self, w, v, data):
        Z = self.model.scores(w, data.X)
        mu = v[: self.n_groups] - v[self.n_groups:]
        inv_pi = 1.0 / self.group_ratios[data.groups]
        s = mu[data.groups] * inv_pi - mu.sum()  # d(constraint term)/dh per example
        return Z, s, inv_pi

    def group_mean_gaps(self, w, data):
        """``E[h | g=a] - E[h]`` on ``data`` for each group (``nan`` if empty)."""
        h = self.model.scores(w, data.X)[:, 0]
        counts = np.bincount(data.groups, minlength=self.n_groups)
        with np.errstate(invalid="ignore", divide="ignore"):
            means = np.bincount(data.groups, weights=h, minlength=self.n_groups) / counts
        return means - h.mean()

    def per_example_values(self, w, v, data):
        Z, s, _ = self._parts(w, v, data)
        return self.loss.values(Z, data.y) + s * Z[:, 0]

    def _dual_grads(self, h, groups, inv_pi):
        gplus = -np.repeat(h[:, None], self.n_groups, axis=1)
        gplus[np.arange(h.size), groups] += h * inv_pi
        return np.hstack([gplus, -gplus])

    def per_example_grads(self, w, v, data):
        Z, s, inv_pi = self._parts(w, v, data)
        G = self.loss.score_grads(Z, data.y) + s[:, None]
        return (self.model.per_example_grads(data.X, G),
                self._dual_grads(Z[:, 0], data.groups, inv_pi))

    def grad(self, w, v, data):
        # The mean of per_example_grads without forming the (n, dim w) matrix (as
        # GroupDRO.grad): output perturbation's certified solve calls it on the whole
        # data set, where the matrix was n x (d + 1) dense even for sparse X (80 GB for
        # 50,000 rows of 200,000 features). A subclass with its own per-example
        # gradients gets their mean.
        if type(self).per_example_grads is not DemographicParityRegression.per_example_grads:
            return super().grad(w, v, data)
        Z, s, inv_pi = self._parts(w, v, data)
        G = self.loss.score_grads(Z, data.y) + s[:, None]
        n, h = data.n_samples, Z[:, 0]
        gw = self.model.weighted_grad_sum(data.X, G) / n
        # sum_i of _dual_grads' rows: h_i / pi_g on the row's group, -h_i on every group
        gplus = (np.bincount(data.groups, weights=h * inv_pi, minlength=self.n_groups)
                 - h.sum()) / n
        rw, rv = self.reg_grad(w, v)
        return gw + rw, np.concatenate([gplus, -gplus]) + rv

    exact_clipped_sums = True  # clips every row per block; a non-finite row adds 0

    def clipped_grad_sums(self, w, v, data, clip_w, clip_v):
        Z, s, inv_pi = self._parts(w, v, data)
        G = self.loss.score_grads(Z, data.y) + s[:, None]
        norms = np.abs(G[:, 0]) * self.model.row_norms(data.X)
        scale = clip_factors(norms, clip_w)
        sw = self.model.weighted_grad_sum(data.X, scaled_by_factors(G, scale))
        # An example's dual gradient is (a, -a) with a = h (e_g / pi_g - 1): its norm
        # after dividing by the clips c (one scalar, or one per coordinate from
        # typical_dual_clips) is |h| sqrt(((1/pi_g - 1)^2 - 1) k_g + sum_a k_a), with
        # k_a = c+_a^-2 + c-_a^-2. Closed form, so the clipped sum needs only per-group
        # sums of the clipped h.
        K = self.n_groups
        clips = np.broadcast_to(np.asarray(clip_v, dtype=float), (2 * K,))
        k = clips[:K] ** -2.0 + clips[K:] ** -2.0
        h = Z[:, 0]
        wnorm = np.abs(h) * np.sqrt(((inv_pi - 1.0) ** 2 - 1.0) * k[data.groups] + k.sum())
        hc = scaled_by_factors(h, clip_factors(wnorm, 1.0))
        gplus = np.bincount(data.groups, weights=hc * inv_pi, minlength=K) - hc.sum()
        return sw, np.concatenate([gplus, -gplus])

    def typical_dual_clips(self, noise_scale):
        # Coordinate a is clipped at c0 / max(pi_a, r): divided by these clips, an
        # example of group g has norm |h| sqrt(2 ((1 - pi_g)^2 + sum_{a != g} pi_a^2)) / c0
        # (groups at least as frequent as the noise r), and c0, that root's largest
        # value times B_y, leaves every prediction |h| <= B_y unclipped in every group. The gap estimates are then
        # unbiased, and each multiplier's noise is that of its group's mean (~ 1 / pi_a).
        # One scalar clip (typical_grad_norms) instead clips the small groups'
        # predictions and under-states their gaps. A group rarer than the noise r has its
        # clip capped at c0 / r, so no coordinate's noise exceeds c0 in a step (as in
        # GroupDRO.typical_dual_clips). Public: pi, B_y and the noise.
        pi = np.asarray(self.group_ratios, dtype=float)
        spread = (1.0 - pi) ** 2 + (np.sum(pi ** 2) - pi ** 2)
        c0 = self.loss.target_bound * math.sqrt(2.0 * float(spread.max()))
        clips = c0 / np.maximum(pi, float(noise_scale))
        return np.concatenate([clips, clips])

    def reg_value(self, w, v):
        return (0.5 * self.l2_reg * float(w @ w) - self.tolerance * float(v.sum())
                - 0.5 * self.dual_reg * float(v @ v))

    def reg_grad(self, w, v):
        return self.l2_reg * w, -self.tolerance - self.dual_reg * v

    def _inv_pi_min(self):
        return 1.0 / float(self.group_ratios.min())

    def check_data(self, y, groups):
        """Finite targets (clipped to the bounds), one group code in ``[0, K)`` each."""
        self.loss.check_targets(y)
        check_group_codes(groups, self.n_groups)

    def lipschitz(self):
        H, kappa, K = self.model.score_bound, self.model.kappa, self.n_groups
        inv_pi_min, B = self._inv_pi_min(), self.multiplier_bound
        g_w = kappa * (self.loss.grad_bound(H) + B * (inv_pi_min - 1.0 + K - 1.0))
        g_v = H * math.sqrt(2.0 * ((inv_pi_min - 1.0) ** 2 + K - 1.0))
        return float(g_w), float(g_v)

    def typical_grad_norms(self):
        # The dual norm of an example is |h| sqrt(2 ((1/pi_g - 1)^2 + K - 1)); with |h| on
        # the target's scale B_y and 1/pi_min replaced by 1/sqrt(pi_min) (the compromise
        # between clipping small groups and paying their noise everywhere, as in
        # GroupDRO.typical_grad_norms). Primal: the loss term, G_ell(0) kappa.
        kappa, K, b_y = self.model.kappa, self.n_groups, self.loss.target_bound
        inv_sqrt_pi = 1.0 / math.sqrt(float(self.group_ratios.min()))
        g_v = b_y * math.sqrt(2.0 * ((inv_sqrt_pi - 1.0) ** 2 + K - 1.0))
        return float(self.loss.grad_bound(0.0) * kappa), float(g_v)

    def gradients_shrink_at_fit(self):
        return bool(getattr(self.loss, "shrinks_at_fit", False))  # a squared loss

    def max_example_weight(self):
        # An example's primal gradient is (loss'(h) + s_g) x with s_g = mu_g / pi_g -
        # sum(mu), |s_g| <= B (1/pi_min - 1 + K - 1): in units of the loss's typical
        # |loss'(0)|, it reaches 1 + that. Clipping it away breaks the cancellation of the
        # s_g over the data (sum_i s_i = 0 when the ratios are the frequencies), and the
        # intercept drifts (10 groups on diabetes, no noise: mean prediction 98 for a
        # mean target of 152). NoisySGDA's clip rules make room for it where quiet.
        K, B = self.n_groups, self.multiplier_bound
        coupling = B * (self._inv_pi_min() - 1.0 + K - 1.0)
        return float(1.0 + coupling / self.loss.grad_bound(0.0))

    # No typical_solution_norm: with GroupDRO's scale the "scaled" step also speeds up
    # the multipliers, and on law school and a make_regression task it widened the
    # parity gap (0.09 against 0.04 at tolerance 0.05) without a better fit, so
    # NoisySGDA keeps its certified "auto" step here (docs/benchmarks.md).

    def smoothness(self):
        kappa, K = self.model.kappa, self.n_groups
        coupling = kappa * math.sqrt(2.0 * ((self._inv_pi_min() - 1.0) ** 2 + K - 1.0))
        curvature = self.loss.curvature * kappa * kappa  # inf, not OverflowError, if huge
        return float(curvature + coupling + max(self.l2_reg, self.dual_reg))

    def strong_convexity(self):
        return self.l2_reg, self.dual_reg
