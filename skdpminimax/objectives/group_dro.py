r"""Worst-group risk (group distributionally robust optimisation) as a saddle problem.

With groups ``k = 1..K`` of frequencies ``pi_k`` and group risks ``R_k(w)``:

.. math::

    \min_{\|w\| \le R} \max_{q \in \Delta_K} \sum_k q_k R_k(w)
        - \frac{\lambda}{2}\|q - \mathbf{1}/K\|^2 + \frac{\alpha}{2}\|w\|^2 ,

written per example (Yang et al. 2022, App. A; seed digest C3) as

.. math::

    f(w, q; x, y, g) = \frac{q_g}{\pi_g}\,\ell(w; x, y), \qquad
    \frac1n \sum_i f(w, q; z_i) = \sum_k q_k \hat R_k(w)
    \quad\text{when } \pi_k = n_k / n .

The dual regulariser (strong concavity ``lambda``) and ``alpha/2 ||w||^2`` are
data-free, hence neither clipped nor noised. ``pi`` must be public or a private
release: it enters the per-example gradients, whose bounds scale with ``1/pi_min``.
"""

import numpy as np

from skdpminimax.objectives.base import SaddleObjective
from skdpminimax.objectives.losses import (
    LinearModel,
    LogisticLoss,
    MultinomialLoss,
    SquaredLoss,
)
from skdpminimax.privacy.mechanisms import clip_factors, scaled_by_factors
from skdpminimax.sets import L2Ball, Simplex

__all__ = ["GroupDRO", "check_group_ratios"]

# typical_solution_norm: scores of this many times the loss's typical score at the row
# bound. Chosen among 1, 2 and 4 with benchmarks/estimator_defaults.py (docs/benchmarks.md).
_SCALE_FACTOR = 4.0


def check_group_ratios(group_ratios):
    """Validate group frequencies: a 1-D array of positive numbers summing to 1."""
    pi = np.asarray(group_ratios, dtype=float)
    if pi.ndim != 1 or pi.size < 1 or np.any(~np.isfinite(pi)) or np.any(pi <= 0):
        raise ValueError(f"group_ratios must be a 1-D array of positive numbers, got {group_ratios}.")
    if not np.isclose(pi.sum(), 1.0, atol=1e-6):
        raise ValueError(f"group_ratios must sum to 1, got sum {pi.sum():.6g}.")
    return pi / pi.sum()


def check_group_codes(groups, n_groups):
    """Refuse missing group codes, or codes outside ``[0, n_groups)``: the per-group
    weights ``1 / pi_g`` the bounds rest on exist for those groups only."""
    if groups is None:
        raise ValueError(f"This objective needs a group code per example "
                         f"(sensitive_features), for its {n_groups} group ratios.")
    codes = np.asarray(groups)
    if codes.size and (codes.min() < 0 or codes.max() >= n_groups):
        raise ValueError(f"sensitive_features give {int(codes.max()) + 1} groups; the "
                         f"objective's group_ratios have {n_groups}.")


class GroupDRO(SaddleObjective):
    """Worst-group risk of a linear model under a per-example loss.

    Parameters
    ----------
    n_features : int
        Number of features of ``X``.
    loss : LogisticLoss, MultinomialLoss or SquaredLoss
        From :mod:`skdpminimax.objectives.losses`.
    group_ratios : array-like of shape (n_groups,)
        Public (or privately released) group frequencies ``pi``, positive, summing to 1.
    data_norm : float
        Public bound on ``||x||`` (rows are clipped to it).
    radius : float
        Radius of the L2 ball holding ``w`` (all coefficients and intercepts).
    dual_reg : float, default=0
        ``lambda``: strong concavity in ``q``.
    l2_reg : float, default=0
        ``alpha``: strong convexity in ``w``.
    fit_intercept : bool, default=True
        Whether ``w`` holds one intercept per output.
    dual_center : {"uniform", "ratios"}, default="uniform"
        ``q_0``, the point ``dual_reg`` pulls ``q`` towards: uniform ``1 / K``, or
        ``group_ratios``.

    Notes
    -----
    Data: ``X`` (clipped rows), ``y`` in the loss's encoding, ``groups`` integer codes.
    Per-example bounds on the feasible set (``H = radius * kappa`` bounds every score,
    ``kappa = sqrt(data_norm^2 + 1)``): ``||grad_w f|| <= G_ell(H) kappa / pi_min``
    since ``q_g <= 1``, and ``||grad_q f|| = ell / pi_g <= ell_max(H) / pi_min``.
    """

    @property
    def certified_constants(self):
        # lipschitz(), smoothness() and strong_convexity() below are proved from the
        # public bounds (data_norm, radius, the public ratios) for every data set, for
        # the library's own losses: a loss object of another class (a subclass
        # included) brings bounds and a convexity nobody here has proved.
        return type(self.loss) in (LogisticLoss, MultinomialLoss, SquaredLoss)

    def __init__(self, n_features, loss, group_ratios, data_norm, radius, dual_reg=0.0,
                 l2_reg=0.0, fit_intercept=True, dual_center="uniform"):
        self.loss = loss
        self.group_ratios = check_group_ratios(group_ratios)
        self.n_groups = self.group_ratios.size
        self.dual_reg = float(dual_reg)
        if dual_center not in ("uniform", "ratios"):
            raise ValueError(f"dual_center must be 'uniform' or 'ratios', got {dual_center!r}.")
        self.dual_center = dual_center
        # The point q is pulled towards: uniform weights, or the group frequencies
        # (then a large dual_reg recovers empirical risk minimisation).
        self.q_center = (np.full(self.n_groups, 1.0 / self.n_groups) if dual_center == "uniform"
                         else self.group_ratios.copy())
        self.l2_reg = float(l2_reg)
        self.model = LinearModel(n_features, loss.n_outputs, data_norm, radius, fit_intercept)
        self.primal_set = L2Ball(radius)
        self.dual_set = Simplex()

    def init_params(self, rng=None):
        return np.zeros(self.model.n_params), self.q_center.copy()

    def _parts(self, w, v, data):
        """Per-example losses, score gradients and weights ``q_g / pi_g``."""
        Z = self.model.scores(w, data.X)
        inv_pi = 1.0 / self.group_ratios[data.groups]
        return self.loss.values(Z, data.y), self.loss.score_grads(Z, data.y), v[data.groups] * inv_pi, inv_pi

    def group_risks(self, w, data):
        """Empirical risk of each group (``nan`` for a group without rows)."""
        Z = self.model.scores(w, data.X)
        losses = self.loss.values(Z, data.y)
        counts = np.bincount(data.groups, minlength=self.n_groups)
        sums = np.bincount(data.groups, weights=losses, minlength=self.n_groups)
        with np.errstate(invalid="ignore", divide="ignore"):
            return sums / counts

    def per_example_values(self, w, v, data):
        losses, _, weight, _ = self._parts(w, v, data)
        return weight * losses

    def per_example_grads(self, w, v, data):
        losses, G, weight, inv_pi = self._parts(w, v, data)
        gw = self.model.per_example_grads(data.X, weight[:, None] * G)
        gv = np.zeros((data.n_samples, self.n_groups))
        gv[np.arange(data.n_samples), data.groups] = losses * inv_pi
        return gw, gv

    def grad(self, w, v, data):
        # The mean of per_example_grads without forming the (m, dim w) matrix: the
        # certified solves of output perturbation call this hundreds of thousands of
        # times on small batches. A subclass with its own per-example gradients gets
        # their mean: output perturbation's certificate must describe the objective its
        # sensitivity was computed for, not this class's.
        if type(self).per_example_grads is not GroupDRO.per_example_grads:
            return super().grad(w, v, data)
        losses, G, weight, inv_pi = self._parts(w, v, data)
        n = data.n_samples
        gw = self.model.weighted_grad_sum(data.X, weight[:, None] * G) / n
        gv = np.bincount(data.groups, weights=losses * inv_pi, minlength=self.n_groups) / n
        rw, rv = self.reg_grad(w, v)
        return gw + rw, gv + rv

    exact_clipped_sums = True  # clips every row per block; a non-finite row adds 0

    def clipped_grad_sums(self, w, v, data, clip_w, clip_v):
        # Rank-one per-example gradients: norms without forming the (m, dim w) matrix;
        # the dual gradient of an example is one coordinate, ell / pi_g.
        losses, G, weight, inv_pi = self._parts(w, v, data)
        coef = weight[:, None] * G
        norms = np.linalg.norm(coef, axis=1) * self.model.row_norms(data.X)
        scale = clip_factors(norms, clip_w)
        sw = self.model.weighted_grad_sum(data.X, scaled_by_factors(coef, scale))
        # One scalar clip, or one per group (typical_dual_clips): an example's dual
        # gradient is its group's coordinate only, so the ellipsoidal clip is a min.
        cap = clip_v if np.ndim(clip_v) == 0 else np.asarray(clip_v)[data.groups]
        # Clipped both ways: a loss object of the user's may be negative (the built-in
        # ones are not); an infinite value is capped, a NaN one (an overflow) adds 0.
        gq = np.clip(np.nan_to_num(losses * inv_pi, nan=0.0, posinf=np.inf, neginf=-np.inf),
                     -cap, cap)
        sv = np.bincount(data.groups, weights=gq, minlength=self.n_groups).astype(float)
        return sw, sv

    def reg_value(self, w, v):
        dv = v - self.q_center
        return 0.5 * self.l2_reg * float(w @ w) - 0.5 * self.dual_reg * float(dv @ dv)

    def reg_grad(self, w, v):
        return self.l2_reg * w, -self.dual_reg * (v - self.q_center)

    def check_data(self, y, groups):
        """The loss's target domain, and one group code in ``[0, K)`` per example."""
        self.loss.check_targets(y)
        check_group_codes(groups, self.group_ratios.size)

    def lipschitz(self):
        H, kappa = self.model.score_bound, self.model.kappa
        inv_pi_min = 1.0 / float(self.group_ratios.min())
        return (float(self.loss.grad_bound(H) * kappa * inv_pi_min),
                float(self.loss.value_bound(H) * inv_pi_min))

    def typical_grad_norms(self):
        # An example's dual gradient is ell / pi_g, at most ell(0) / pi_min at the
        # data-free start (scores 0). Clipping there never under-counts a group's risk
        # but every coordinate then pays the smallest group's noise; clipping at ell(0)
        # ignores the 1 / pi weighting. The geometric mean ell(0) / sqrt(pi_min) is the
        # compromise (better than both on validation splits of Adult and law school).
        # It is the scalar for planning; the oracle clips per group (typical_dual_clips).
        # An example of weight q_g / pi_g = 1 has primal norm <= G_ell(0) kappa.
        kappa, pi_min = self.model.kappa, float(self.group_ratios.min())
        return (float(self.loss.grad_bound(0.0) * kappa),
                float(self.loss.value_bound(0.0) / np.sqrt(pi_min)))

    def gradients_shrink_at_fit(self):
        return bool(getattr(self.loss, "shrinks_at_fit", False))  # a squared loss

    def max_example_weight(self):
        # An example weighs q_g / pi_g with q in the simplex: at most 1 / pi_min.
        return float(1.0 / self.group_ratios.min())

    def typical_dual_clips(self, noise_scale):
        # Group g's coordinate is clipped at its start value ell(0) / pi_g, so no group's
        # risk is under-counted against another's (a scalar clip below ell(0) / pi_min
        # does that to the small groups, and the weights drift to the large ones), but
        # never above ell(0) / noise_scale: a group rarer than the release's relative
        # noise has its loss clipped at ell(0) pi_g / noise_scale, so no coordinate's
        # noise exceeds ell(0), the start's risk, in a step. Public: pi and the noise.
        pi = np.asarray(self.group_ratios, dtype=float)
        return self.loss.value_bound(0.0) / np.maximum(pi, float(noise_scale))

    def typical_solution_norm(self):
        # Scores of 4 x the loss's typical score s at the row bound, one score row per
        # output: ||w|| ~ 4 s sqrt(k) / kappa (public constants only).
        score = self.loss.typical_score * np.sqrt(self.loss.n_outputs)
        return float(_SCALE_FACTOR * score / self.model.kappa)

    def smoothness(self):
        H, kappa = self.model.score_bound, self.model.kappa
        inv_pi_min = 1.0 / float(self.group_ratios.min())
        # d2f/dw2 <= curvature kappa^2 / pi_min; the w-q coupling is G_ell kappa / pi_min.
        curvature = self.loss.curvature * kappa * kappa  # inf, not OverflowError, if huge
        coupled = (curvature + self.loss.grad_bound(H) * kappa) * inv_pi_min
        return float(coupled + max(self.l2_reg, self.dual_reg))

    def strong_convexity(self):
        return self.l2_reg, self.dual_reg
