r"""Strongly monotone problems solved to a distance fixed *a priori* (no stopping test).

Problem: find :math:`z^* \in K` with

.. math::

    \langle F(z^*) + \Lambda (z^* - c),\; u - z^* \rangle \ge 0 \quad \forall u \in K,

``K`` a product of closed convex sets (the blocks of ``W x V``), ``Lambda`` diagonal and
constant on each block (``lam_b >= lam_min >= 0``), ``F`` ``s``-monotone
(:math:`\langle F(x) - F(y), x - y\rangle \ge s\|x - y\|^2`, ``s`` may be negative) and
``L``-Lipschitz on ``K``, with ``s + lam_min > 0``. Prox-gradient step, ``eta`` in
``(0, inf]``:

.. math::

    z^+ = \Pi_K\Big(\frac{z - \eta F(z) + \eta\Lambda c}{1 + \eta\Lambda}\Big)
    \quad(\eta = \infty:\ z^+ = \Pi_K(c - \Lambda^{-1} F(z))).

**Contraction.** ``z*`` is a fixed point (the step is the resolvent of the
quadratic plus the indicator of ``K``, which separates by blocks and is a projection
within each), the resolvent is ``1 / (1 + eta lam_min)``-Lipschitz, and
:math:`\|x - \eta F x - (y - \eta F y)\|^2 \le (1 - 2\eta s + \eta^2 L^2)\|x - y\|^2`, so

.. math::

    \|z^+ - z^*\| \le q\,\|z - z^*\|, \qquad
    q(\eta)^2 = \frac{1 - 2\eta s + \eta^2 L^2}{(1 + \eta\lambda_{\min})^2},
    \quad q(\infty) = L / \lambda_{\min},

minimised at ``eta = (s + lam_min) / (L^2 + s lam_min)`` when that is positive, else
at ``eta = inf`` (seed-002 digest section 3.2(c) proves the ``Lambda = 0`` case).
**Start.** For ``z0`` in ``K``, strong monotonicity (modulus ``m``, at least
``s + lam_min``) and the inequality at ``z*`` give ``||z0 - z*|| <= ||G(z0)|| / m``
with ``G = F + Lambda (. - c)``; any public bound ``D`` of it will do. Then
``T = ceil(log(D / r) / log(1 / q))`` steps reach ``||z_T - z*|| <= r``: the count
and the guarantee come from public constants only, so nothing about the data decides
whether, or how long, the solve runs. Half of the requested radius is left for
float64 rounding (each step's error shrinks by ``q`` afterwards).

The guarantee rests on ``s`` and ``L`` being true (an objective's certified
constants, or ``smoothness()`` for a clipped operator, see the callers).
"""

import math

import numpy as np

__all__ = ["contraction_rate", "a_priori_iterations", "prox_step", "solve_a_priori"]


def contraction_rate(monotonicity, lipschitz, prox_weight):
    """``(eta, q)``: the best step of the module's map and its contraction factor.

    Parameters
    ----------
    monotonicity : float
        ``s`` (may be negative).
    lipschitz : float
        ``L``; raised to ``|s|`` if below it (a Lipschitz bound is at least the modulus).
    prox_weight : float
        ``lam_min >= 0``.

    Returns
    -------
    eta : float
        Step size, ``math.inf`` for the fixed-point step ``Pi(c - F(z) / lam)``.
    q : float in [0, 1)
    """
    s, lam = float(monotonicity), float(prox_weight)
    lip = max(float(lipschitz), abs(s))
    if not (lam >= 0 and s + lam > 0 and math.isfinite(lip)):
        raise ValueError(
            f"An a-priori solve needs a finite Lipschitz bound and prox_weight + monotonicity "
            f"> 0; got L={lipschitz}, s={monotonicity}, lam={prox_weight}."
        )
    candidates = [(math.inf, lip / lam)] if lam > 0 else []
    denominator = lip * lip + s * lam
    if denominator > 0:
        eta = (s + lam) / denominator
        q2 = (1.0 - 2.0 * eta * s + (eta * lip) ** 2) / (1.0 + eta * lam) ** 2
        candidates.append((eta, math.sqrt(max(q2, 0.0))))
    return min(candidates, key=lambda c: c[1])


def a_priori_iterations(q, distance, radius, neg_log_q=None):
    """Steps of factor ``q`` taking a start within ``distance`` to within ``radius``.

    ``neg_log_q``, if given, is ``-log q`` computed without rounding ``q`` (a factor
    within 1e-16 of 1 rounds to 1.0, whose log is 0)."""
    if not (math.isfinite(distance) and radius > 0):
        raise ValueError(f"Need a finite start distance and radius > 0; got {distance}, {radius}.")
    if distance <= radius:
        return 0
    if q == 0:
        return 1
    rate = -math.log(q) if neg_log_q is None else neg_log_q
    if not rate > 0:
        raise ValueError(f"A contraction factor below 1 is needed; got {q}.")
    return int(math.ceil(math.log(distance / radius) / rate))


def prox_step(z, g, centre, prox_weight, eta):
    """The module's step before projection: ``(z - eta g + eta lam c) / (1 + eta lam)``.

    ``prox_weight`` may be a scalar or one weight per coordinate; ``eta = inf`` gives
    ``c - g / lam``.
    """
    if math.isinf(eta):
        return centre - g / prox_weight
    keep = 1.0 / (1.0 + eta * np.asarray(prox_weight, dtype=float))
    return keep * (z - eta * g) + (1.0 - keep) * centre


def solve_a_priori(field, project, start, centre, prox_weight, monotonicity, lipschitz,
                   distance, radius):
    """Run the module's map for the a-priori count; the result is within ``radius`` of ``z*``.

    Parameters
    ----------
    field : callable
        ``F(z)`` (without the prox term).
    project : callable
        Euclidean projection onto ``K``.
    start : ndarray
        A point of ``K``.
    centre : ndarray
        ``c``.
    prox_weight : float or ndarray
        ``lam`` (scalar) or its diagonal (constant on each block of ``K``).
    monotonicity, lipschitz : float
        ``s`` and ``L`` of ``F`` on ``K``.
    distance : float
        A bound on ``||start - z*||`` from public quantities.
    radius : float
        Target distance to ``z*``.

    Returns
    -------
    z : ndarray
    n_iter : int
        Evaluations of ``field``: a function of the arguments' public values only.
    """
    eta, q = contraction_rate(monotonicity, lipschitz, float(np.min(prox_weight)))
    n_iter = a_priori_iterations(q, distance, 0.5 * radius)  # half left for rounding
    z = start
    for _ in range(n_iter):
        z = project(prox_step(z, field(z), centre, prox_weight, eta))
    return z, n_iter
