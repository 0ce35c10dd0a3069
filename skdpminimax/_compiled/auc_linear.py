"""Compiled NoisySGDA steps for the square-loss AUC objective with a linear scorer.

Step for step the arithmetic of the numpy path: ``SquareLossAUC.clipped_grad_sums``
(per-example clipping of the primal block ``(theta, a, b)`` and of the dual
``alpha``), ``NoisyGradientOracle.noisy_grads`` (sum / normaliser + noise row +
exact regulariser gradient) and ``NoisySGDA.solve`` (simultaneous projected steps,
running sums for the average).
"""

import math

import numba
import numpy as np

from skdpminimax._compiled.projections import flat_set, project_flat
from skdpminimax.objectives.auc import SquareLossAUC
from skdpminimax.objectives.scorers import LinearScorer

__all__ = ["linear_auc_sgda_kernel"]


def linear_auc_sgda_kernel(objective, oracle):
    """Chunk runner for ``objective`` (see :func:`skdpminimax._compiled.sgda_kernel`),
    or ``None`` when the objective is not a linear-scorer :class:`SquareLossAUC`."""
    if type(objective) is not SquareLossAUC or type(objective.scorer) is not LinearScorer:
        return None
    n_w = objective.n_theta + 2
    flat_w, flat_v = flat_set(objective.primal_set, n_w), flat_set(objective.dual_set, 1)
    if flat_w is None or flat_v is None:
        return None
    data = oracle.data  # prepared: aux = (s, s * y, ||x||^2)
    X = np.ascontiguousarray(data.X, dtype=float)
    y, aux = np.ascontiguousarray(data.y, dtype=float), np.ascontiguousarray(data.aux)
    all_rows = np.arange(data.n_samples)
    consts = np.array([objective.p, objective.l2_reg, oracle.clip_w, oracle.clip_v,
                       oracle.inv_normalizer])

    def run(w, v, sum_w, sum_v, indices, starts, stops, noise, etas_w, etas_v, first_averaged):
        rows = all_rows if indices is None else indices
        if noise is None:
            noise = np.empty((0, n_w + 1))
        _sgda_chunk(w, v, sum_w, sum_v, X, y, aux, rows, starts, stops, noise,
                    np.asarray(etas_w, float), np.asarray(etas_v, float), first_averaged,
                    consts, flat_w, flat_v)
        oracle.n_calls += len(starts)
        oracle.n_grad_evals += int(np.sum(stops - starts))

    return run


@numba.njit(cache=True)
def _clipped_sums(w, v, X, y, aux, rows, start, stop, clip_w, clip_v, sw):
    """``SquareLossAUC.clipped_grad_sums`` on ``rows[start:stop]``; returns the dual sum."""
    n_theta = X.shape[1]
    a, b, alpha = w[n_theta], w[n_theta + 1], v[0]
    sw[:] = 0.0
    sv = 0.0
    for r in range(start, stop):
        i = rows[r]
        h = 0.0
        for j in range(n_theta):
            h += X[i, j] * w[j]
        s, sy = aux[i, 0], aux[i, 1]
        dev = h - 0.5 * (a + b) - 0.5 * (a - b) * y[i]
        s_dev = s * dev
        g_h = 2.0 * (s_dev - sy * (1.0 + alpha))
        g_centre = -2.0 * s_dev
        norm = math.hypot(g_h * math.sqrt(aux[i, 2]), g_centre)
        scale = min(1.0, clip_w / max(norm, 1e-300))
        coef = g_h * scale
        for j in range(n_theta):
            sw[j] += coef * X[i, j]
        if y[i] > 0:
            sw[n_theta] += g_centre * scale
        else:
            sw[n_theta + 1] += g_centre * scale
        sv += min(clip_v, max(-clip_v, -2.0 * sy * h))
    return sv


@numba.njit(cache=True)
def _sgda_chunk(w, v, sum_w, sum_v, X, y, aux, rows, starts, stops, noise, etas_w, etas_v,
                first_averaged, consts, flat_w, flat_v):
    p, l2_reg, clip_w, clip_v, inv_norm = consts[0], consts[1], consts[2], consts[3], consts[4]
    n_w = w.shape[0]
    sw = np.empty(n_w)
    g_w = np.empty(n_w)
    for t in range(starts.shape[0]):
        if t >= first_averaged:
            sum_w += w
            sum_v += v
        sv = _clipped_sums(w, v, X, y, aux, rows, starts[t], stops[t], clip_w, clip_v, sw)
        for j in range(n_w):
            g_w[j] = sw[j] * inv_norm
        g_v = sv * inv_norm
        if noise.shape[0] > 0:
            for j in range(n_w):
                g_w[j] += noise[t, j]
            g_v += noise[t, n_w]
        for j in range(n_w):
            w[j] -= etas_w[t] * (g_w[j] + l2_reg * w[j])
        v[0] += etas_v[t] * (g_v - 2.0 * p * (1.0 - p) * v[0])
        project_flat(w, flat_w)
        project_flat(v, flat_v)
