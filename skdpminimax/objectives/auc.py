r"""Square-loss AUC maximisation as a saddle problem (Ying et al. 2016; Yang et al. 2022).

With ``p = P(y = +1)``, scores ``h = h(theta; x)``, primal ``w = (theta, a, b)`` and
dual ``v = alpha``:

.. math::

    f(w, v; x, y) = (1-p)(h-a)^2 [y=1] + p(h-b)^2 [y=-1]
                    + 2(1+\alpha)(p h [y=-1] - (1-p) h [y=1]),

    r(w, v) = \frac{\lambda}{2}\|w\|^2 - p(1-p)\alpha^2 .

For fixed ``theta`` the saddle point is ``a = E[h | y=1]``, ``b = E[h | y=-1]``,
``alpha = b - a`` (when ``lambda = 0``), and the saddle value is
``p(1-p)(E[(1 - h(x) + h(x'))^2 | y=1, y'=-1] - 1)``: minimising over ``theta``
minimises the pairwise square AUC surrogate. ``p`` must be a public constant or a
private estimate; the term ``-p(1-p) alpha^2`` is then data-free, so it is neither
clipped nor noised.
"""

import math

import numpy as np

from skdpminimax.objectives.base import SaddleObjective
from skdpminimax.objectives.losses import check_plus_minus_one
from skdpminimax.objectives.scorers import LinearScorer, MLPScorer
from skdpminimax.privacy.mechanisms import clip_factors, scaled_by_factors, squared_row_norms
from skdpminimax.sets import Box, L2Ball, ProductSet

__all__ = ["SquareLossAUC"]


def linear_solution_norm(n_features, data_norm):
    """The public guess of a linear AUC scorer's solution norm, ``max(10, sqrt(d)) /
    data_norm`` (see :meth:`SquareLossAUC.typical_solution_norm`)."""
    return max(10.0, math.sqrt(n_features)) / data_norm


class SquareLossAUC(SaddleObjective):
    """Square-loss AUC saddle objective; labels encoded as ``+1`` / ``-1``.

    Parameters
    ----------
    n_features : int
        Number of features of ``X``.
    pos_ratio : float in (0, 1)
        Public (or privately estimated) probability of the positive class.
    data_norm : float
        Public bound on ``||x||`` (rows are clipped to it before fitting).
    radius : float
        Radius of the L2 ball for the scorer's parameters.
    l2_reg : float, default=0
        ``lambda``: weight of ``lambda/2 ||w||^2`` on the whole primal block.
    scorer : scorer object or None, default=None
        The model ``h`` (:mod:`skdpminimax.objectives.scorers`); ``None`` uses
        ``LinearScorer()``.
    """

    @property
    def certified_constants(self):
        # lipschitz(), smoothness() and strong_convexity() below are proved from the
        # public bounds (data_norm, radius, the public ratios) for every data set, for
        # the library's own scorers only (not for a subclass of them).
        return type(self.scorer) in (LinearScorer, MLPScorer)

    def __init__(self, n_features, pos_ratio, data_norm, radius, l2_reg=0.0, scorer=None):
        if not 0 < pos_ratio < 1:
            raise ValueError(f"pos_ratio must be in (0, 1), got {pos_ratio}.")
        self.n_features = int(n_features)
        self.p = float(pos_ratio)
        self.data_norm = float(data_norm)
        self.radius = float(radius)
        self.l2_reg = float(l2_reg)
        self.scorer = LinearScorer() if scorer is None else scorer
        self.n_theta = self.scorer.n_params(self.n_features)
        # |h| <= H on the feasible set; a, b, alpha are boxed so that the saddle
        # point stays inside and the gradients stay bounded (SOLAM's domains).
        self.score_bound = self.scorer.score_bound(self.data_norm, self.radius)
        H = self.score_bound
        self.primal_set = ProductSet([(self.n_theta, L2Ball(self.radius)), (2, Box(-H, H))])
        self.dual_set = Box(-2 * H, 2 * H)

    def init_params(self, rng=None):
        theta = self.scorer.init_params(self.n_features, rng)
        return np.concatenate([theta, [0.0, 0.0]]), np.zeros(1)

    def split(self, w):
        """``(theta, a, b)`` from the primal vector."""
        return w[: self.n_theta], w[self.n_theta], w[self.n_theta + 1]

    # With y in {+1, -1}: the class weight is s = 1-p (y=1) or p (y=-1), i.e.
    # s = 1/2 + (1/2 - p) y, and the class centre is c = a (y=1) or b (y=-1), i.e.
    # c = (a+b)/2 + (a-b)/2 y. Arithmetic instead of masks keeps a step cheap.
    def check_data(self, y, groups):
        """Refuse ``y`` outside ``{-1, +1}``: the class weights and bounds assume it."""
        check_plus_minus_one(y, "SquareLossAUC")

    def prepare(self, data):
        """Precompute the per-example constants ``s_i``, ``s_i y_i`` and ``||x_i||^2``."""
        if data.aux is not None:
            return data
        s = 0.5 + (0.5 - self.p) * data.y
        aux = np.column_stack([s, s * data.y, squared_row_norms(data.X)])
        return type(data)(data.X, data.y, data.groups, aux, data.public_size)

    def _grad_parts(self, w, v, data, state=None):
        data = self.prepare(data)
        theta, a, b = self.split(w)
        s, sy = data.aux[:, 0], data.aux[:, 1]
        h = (self.scorer.scores(theta, data.X) if state is None
             else self.scorer.scores(theta, data.X, state=state))
        dev = h - 0.5 * (a + b) - 0.5 * (a - b) * data.y
        s_dev = s * dev
        g_h = 2.0 * (s_dev - sy * (1.0 + v[0]))  # d f / d h
        g_centre = -2.0 * s_dev  # d f / d a (y=1) or d f / d b (y=-1)
        g_alpha = -2.0 * sy * h
        return theta, h, s, dev, g_h, g_centre, g_alpha

    def per_example_values(self, w, v, data):
        _, h, s, dev, _, _, _ = self._grad_parts(w, v, data)
        return s * dev**2 - 2.0 * (1.0 + v[0]) * s * data.y * h

    def per_example_grads(self, w, v, data):
        theta, _, _, _, g_h, g_centre, g_alpha = self._grad_parts(w, v, data)
        pos = data.y > 0
        gw = np.empty((data.n_samples, self.n_theta + 2))
        gw[:, : self.n_theta] = g_h[:, None] * self.scorer.score_grads(theta, data.X)
        gw[:, self.n_theta] = np.where(pos, g_centre, 0.0)
        gw[:, self.n_theta + 1] = np.where(pos, 0.0, g_centre)
        return gw, g_alpha[:, None]

    def grad(self, w, v, data):
        # The mean of per_example_grads without forming the (n, dim w) matrix (as
        # GroupDRO.grad): output perturbation's certified solve calls it on the whole
        # data set, where the matrix was n x (d + 2) dense even for sparse X. A subclass
        # with its own per-example gradients gets their mean.
        if type(self).per_example_grads is not SquareLossAUC.per_example_grads:
            return super().grad(w, v, data)
        data = self.prepare(data)
        theta, _, _, _, g_h, g_centre, g_alpha = self._grad_parts(w, v, data)
        n = data.n_samples
        gw = np.empty(self.n_theta + 2)
        gw[: self.n_theta] = self.scorer.weighted_grad_sum(theta, data.X, g_h) / n
        pos = data.y > 0
        gw[self.n_theta] = np.where(pos, g_centre, 0.0).sum() / n
        gw[self.n_theta + 1] = np.where(pos, 0.0, g_centre).sum() / n
        rw, rv = self.reg_grad(w, v)
        return gw + rw, np.array([g_alpha.sum() / n]) + rv

    exact_clipped_sums = True  # clips every row per block; a non-finite row adds 0

    def clipped_grad_sums(self, w, v, data, clip_w, clip_v):
        # Per-example primal norm^2 = g_h^2 ||grad h||^2 + g_centre^2: no need to form
        # the (m, dim w) matrix, which matters for wide scorers.
        data = self.prepare(data)  # once: _grad_parts reuses the precomputed columns
        # The MLP's forward pass once per batch (most of a step's cost). Not for a
        # subclass: it may override a method without the state parameter.
        shares = type(self.scorer) is MLPScorer
        state = self.scorer.forward(self.split(w)[0], data.X) if shares else None
        theta, _, _, _, g_h, g_centre, g_alpha = self._grad_parts(w, v, data, state)
        kw = {} if state is None else {"state": state}
        grad_h_norms = self.scorer.grad_norms(theta, data.X, data.aux[:, 2], **kw)
        norms = np.hypot(g_h * grad_h_norms, g_centre)  # hypot: no overflow
        scale = clip_factors(norms, clip_w)
        sw = np.empty(self.n_theta + 2)
        sw[: self.n_theta] = self.scorer.weighted_grad_sum(
            theta, data.X, scaled_by_factors(g_h, scale), **kw)
        centre = scaled_by_factors(g_centre, scale)
        total, signed = centre.sum(), centre @ data.y
        sw[self.n_theta] = 0.5 * (total + signed)  # positives' sum
        sw[self.n_theta + 1] = 0.5 * (total - signed)  # negatives' sum
        # clipped to [-clip_v, clip_v]; a NaN (an overflowed score) adds 0
        sv = np.minimum(clip_v, np.maximum(-clip_v, g_alpha)).sum(keepdims=True)
        if np.isnan(sv[0]):  # rare: only then the pass that zeroes NaNs
            g_alpha = np.nan_to_num(g_alpha, nan=0.0, posinf=np.inf, neginf=-np.inf)
            sv = np.minimum(clip_v, np.maximum(-clip_v, g_alpha)).sum(keepdims=True)
        return sw, sv

    def reg_value(self, w, v):
        return 0.5 * self.l2_reg * float(w @ w) - self.p * (1.0 - self.p) * float(v[0] ** 2)

    def reg_grad(self, w, v):
        return self.l2_reg * w, -2.0 * self.p * (1.0 - self.p) * v

    def lipschitz(self):
        H = self.score_bound
        K = self.scorer.grad_bound(self.data_norm, self.radius)
        s_max = max(self.p, 1.0 - self.p)
        # |h - centre + u(1+alpha)| <= 4H + 1 and |h - centre| <= 2H on the sets.
        # hypot: no OverflowError for huge public bounds (the bound is then inf).
        g_w = 2.0 * s_max * math.hypot(K * (4.0 * H + 1.0), 2.0 * H)
        g_v = 2.0 * s_max * H
        return float(g_w), float(g_v)

    def smoothness(self):
        K = self.scorer.grad_bound(self.data_norm, self.radius)
        if not isinstance(self.scorer, LinearScorer):
            return np.inf
        # Per-example Hessian is 2 s [x; -1; -1][x; -1; -1]^T-like: norm <= 2 s (K + 1)^2.
        return 2.0 * max(self.p, 1.0 - self.p) * (K + 1.0) * (K + 1.0) + max(
            self.l2_reg, 2.0 * self.p * (1.0 - self.p)
        )

    def typical_grad_norms(self):
        # At the start (scores 0) an example's primal gradient is about 2 s ||x|| with
        # s ~ 1/2: data_norm / 2 on rows of about half the public bound (what
        # clip_w="auto" / "scaled" clip at). The dual and the MLP keep their certified
        # bounds.
        g_w, g_v = self.lipschitz()
        if not isinstance(self.scorer, LinearScorer):
            return g_w, g_v
        return float(min(g_w, 0.5 * self.data_norm)), g_v

    def typical_solution_norm(self):
        # The square loss fits score gaps to 1, so scores of a few units (here up to
        # 5) on rows of about half the public bound: ||w|| ~ 10 / data_norm. The exact
        # minimisers of five benchmark sets have ||w|| data_norm / 2 of 3 to 9
        # (docs/benchmarks.md). Where rows are sparse, a rare coordinate carries a
        # large weight and the minimiser's norm grows with the dimension (2 to 4 times
        # 10 / data_norm on binary rows of 3,000 columns): sqrt(d) / data_norm above
        # d = 100 (public; never a smaller step; benchmarks/auc_solution_norm.py). No
        # guess for the MLP's weights.
        if not isinstance(self.scorer, LinearScorer) or not self.data_norm > 0:
            return None
        return linear_solution_norm(self.n_features, self.data_norm)

    def typical_grad_rms_fraction(self):
        # A positive's gradient carries the weight 1 - p, a negative's p: their RMS is
        # sqrt(p (1 - p)) against 1/2 at p = 1/2 (what typical_grad_norms assumes), and
        # the mean gradient and curvature shrink with p (1 - p). Without this the
        # "scaled" step stalls on rare positives (docs/benchmarks.md).
        return float(2.0 * np.sqrt(self.p * (1.0 - self.p)))

    def reg_curvature(self):
        return float(self.l2_reg), 2.0 * self.p * (1.0 - self.p)

    def strong_convexity(self):
        # The MLP's scores are not linear in its weights: the objective is nonconvex
        # in w (-inf: no convexity to rely on); concave in the dual for any scorer.
        mu_w = self.l2_reg if isinstance(self.scorer, LinearScorer) else -np.inf
        return mu_w, 2.0 * self.p * (1.0 - self.p)
