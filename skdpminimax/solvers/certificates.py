r"""Deterministic, smoothness-free certificates of distance to an exact saddle point.

Let :math:`\Phi(w, v)` be an objective (data term plus data-free term) that is
:math:`\mu_w`-strongly convex in ``w`` and :math:`\mu_v`-strongly concave in ``v`` on
:math:`Z = W \times V`, with saddle point :math:`z^* = (w^*, v^*)`, and let
:math:`F(z) = (\nabla_w \Phi, -\nabla_v \Phi)` be its (strongly monotone) gradient map.
Split ``z`` into pieces ``j`` (the parts of a :class:`~skdpminimax.sets.ProductSet`, or
the whole block), each with the modulus :math:`\mu_j` of its block and its own set
:math:`Z_j`; write :math:`r_j = \|z_j - z^*_j\|`, :math:`g_j = F_j(z)` and

.. math::

    Q(z) = \sum_j \mu_j r_j^2 = \mu_w\|w - w^*\|^2 + \mu_v\|v - v^*\|^2 .

**Derivation.** For :math:`z \in Z`, strong monotonicity and the variational
inequality :math:`\langle F(z^*), z - z^*\rangle \ge 0` give

.. math::

    Q(z) \le \langle F(z) - F(z^*), z - z^*\rangle \le \langle F(z), z - z^*\rangle
         = \sum_j \langle g_j, z_j - z^*_j\rangle .

Each term is bounded in two ways, both needing no smoothness constant:

(A) Cauchy-Schwarz and Young: :math:`\langle g_j, z_j - z_j^*\rangle \le \|g_j\| r_j
    \le \|g_j\|^2/(2\mu_j) + \mu_j r_j^2/2`;
(B) since :math:`z_j^* \in Z_j`: :math:`\langle g_j, z_j - z_j^*\rangle \le
    \mathrm{lin}_j := \max_{u \in Z_j} \langle g_j, z_j - u\rangle` (closed form from the
    set's support function; infinite for an unbounded piece unless :math:`g_j = 0`).

Using (B) for every piece gives :math:`Q \le \sum_j \mathrm{lin}_j`. Using (A) on a
non-empty set of pieces :math:`\mathcal A` and (B) on the rest gives
:math:`Q \le \sum_{\mathcal A} \|g_j\|^2/(2\mu_j) + Q/2 + \sum_{\mathcal B}\mathrm{lin}_j`,
hence :math:`Q \le \sum_{\mathcal A}\|g_j\|^2/\mu_j + 2\sum_{\mathcal B}\mathrm{lin}_j`.
The best of these bounds is

.. math::

    Q(z) \le B(z) := \min\Big(\sum_j \mathrm{lin}_j,\;
                \sum_j \min\big(\|g_j\|^2/\mu_j,\; 2\,\mathrm{lin}_j\big)\Big),

and then :math:`\|w - w^*\| \le \sqrt{B/\mu_w}`, :math:`\|v - v^*\| \le \sqrt{B/\mu_v}`
and :math:`\|z - z^*\| \le \sqrt{B / \min(\mu_w, \mu_v)}`. (A) is exact in spirit for
interior saddle points (where :math:`F(z^*) = 0`); (B) is what certifies points whose
saddle point lies on the boundary, where :math:`\mathrm{lin}_j` vanishes linearly in
the distance. This is the bound of the seed-004 digest (section 7.2), refined per piece.

The map ``F`` is evaluated with one exact full pass in float64 and every
cancellation-prone term is padded with a rounding allowance, so ``B`` is an upper
bound in floating point too. We deliberately do **not** use the natural-residual
bound :math:`\|z - z^*\| \le (1 + \eta\ell)\|z - \Pi(z - \eta F(z))\|/(\eta\mu)`: it
needs a guaranteed smoothness constant :math:`\ell`, and an understated :math:`\ell`
would void the privacy of output perturbation, which rests on this certificate.
"""

from dataclasses import dataclass

import numpy as np

from skdpminimax.sets import Box, L2Ball, ProductSet, Reals, Simplex

__all__ = ["Certificate", "certify", "support", "linear_gap", "set_pieces"]

_EPS = np.finfo(float).eps


def support(S, c):
    """``max_{u in S} <c, u>`` in closed form (``np.inf`` for unbounded directions).

    Sets other than those of :mod:`skdpminimax.sets` get ``np.inf`` (unknown), which
    only makes the certificates that use it looser, never wrong.
    """
    c = np.asarray(c, dtype=float)
    if isinstance(S, Reals):
        return 0.0 if not np.any(c) else np.inf
    if isinstance(S, L2Ball):
        centre = 0.0 if S.center is None else float(c @ S.center)
        return centre + S.radius_ * float(np.sqrt(c @ c))
    if isinstance(S, Box):
        low = np.broadcast_to(S.low, c.shape)
        high = np.broadcast_to(S.high, c.shape)
        with np.errstate(invalid="ignore"):
            terms = np.where(c > 0, c * high, np.where(c < 0, c * low, 0.0))
        return float(terms.sum())
    if isinstance(S, Simplex):
        return float(c.max())
    if isinstance(S, ProductSet):
        return float(sum(support(s, c[sl]) for sl, (_, s) in zip(S.slices, S.parts)))
    return np.inf


def linear_gap(S, g, x):
    """``max_{u in S} <g, x - u>`` for ``x`` in ``S``: a Frank-Wolfe gap, padded for rounding.

    It is ``>= 0`` and bounds ``<g, x - u>`` for every ``u`` in ``S``.
    """
    inner = float(g @ x)
    sup = support(S, -g)
    if not np.isfinite(sup):
        return np.inf
    slack = 8 * _EPS * (abs(inner) + abs(sup) + float(np.abs(g) @ np.abs(x)))
    return max(inner + sup, 0.0) + slack


def set_pieces(S, dim):
    """``[(slice, set)]``: the parts of a product set, or the whole block."""
    if isinstance(S, ProductSet):
        return list(zip(S.slices, [s for _, s in S.parts]))
    return [(slice(0, dim), S)]


@dataclass(frozen=True)
class Certificate:
    """A certified bound at one point (see the module docstring).

    Attributes
    ----------
    weighted : float
        ``B >= mu_w ||w - w*||^2 + mu_v ||v - v*||^2``.
    distance : float
        ``sqrt(B / min(mu_w, mu_v)) >= ||(w, v) - (w*, v*)||``.
    primal_distance, dual_distance : float
        ``sqrt(B / mu_w)`` and ``sqrt(B / mu_v)``: per-block bounds.
    grad_w, grad_v : ndarray
        The exact full gradient of the objective at the point (reused by solvers).
    """

    weighted: float
    distance: float
    primal_distance: float
    dual_distance: float
    grad_w: np.ndarray
    grad_v: np.ndarray


def certify(objective, data, w, v, grad=None):
    """Certified distance from ``(w, v)`` to the exact saddle point of ``objective`` on ``data``.

    ``(w, v)`` must lie in the objective's sets (project first). ``grad`` may pass
    the exact full gradient at ``(w, v)`` when it is already known.
    """
    mu_w, mu_v = (float(m) for m in objective.strong_convexity())
    if not (mu_w > 0 and mu_v > 0):
        raise ValueError(
            "A distance certificate needs a strongly-convex-strongly-concave objective; "
            f"strong_convexity() = {(mu_w, mu_v)}."
        )
    gw, gv = objective.grad(w, v, data) if grad is None else grad
    gw, gv = np.asarray(gw, dtype=float), np.asarray(gv, dtype=float)
    all_lin, mixed = 0.0, 0.0
    for z, g, S, mu in ((w, gw, objective.primal_set, mu_w), (v, -gv, objective.dual_set, mu_v)):
        for sl, piece in set_pieces(S, z.size):
            lin = linear_gap(piece, g[sl], z[sl])
            quad = float(g[sl] @ g[sl]) / mu * (1 + 8 * _EPS)
            all_lin += lin
            mixed += min(quad, 2.0 * lin)
    bound = min(all_lin, mixed)
    return Certificate(
        weighted=bound,
        distance=float(np.sqrt(bound / min(mu_w, mu_v))),
        primal_distance=float(np.sqrt(bound / mu_w)),
        dual_distance=float(np.sqrt(bound / mu_v)),
        grad_w=gw,
        grad_v=gv,
    )
