"""Every numba-compiled function of the package, in one module.

numba's on-disk cache (``cache=True``) is invalidated by a change of the *file* that
defines a function, not of the files of the functions it calls: keeping all compiled
code in this one file means an edit anywhere here recompiles everything.

Flat set encoding (see :func:`skdpminimax._compiled.glue.flat_set`): rows
``(start, stop, kind, a, b)`` acting on ``x[start:stop]``; kind 0 leaves the slice
alone, kind 1 projects it onto the centred ball of radius ``a``, kind 2 clips it to
``[a, b]``.
"""

import math

import numba
import numpy as np

__all__ = ["project_flat", "linear_auc_clipped_sums", "linear_auc_sgda_chunk",
           "linear_auc_nseg_chunk"]


@numba.njit(cache=True)
def project_flat(x, flat):
    """Project ``x`` in place onto the set encoded by ``flat`` (see module doc)."""
    for k in range(flat.shape[0]):
        start, stop, kind = int(flat[k, 0]), int(flat[k, 1]), int(flat[k, 2])
        if kind == 1:
            sq = 0.0
            for i in range(start, stop):
                sq += x[i] * x[i]
            norm = math.sqrt(sq)
            if norm > flat[k, 3]:
                factor = flat[k, 3] / norm
                for i in range(start, stop):
                    x[i] *= factor
        elif kind == 2:
            for i in range(start, stop):
                x[i] = min(max(x[i], flat[k, 3]), flat[k, 4])


@numba.njit(cache=True)
def linear_auc_clipped_sums(w, v, X, y, aux, rows, start, stop, clip_w, clip_v, sw):
    """``SquareLossAUC.clipped_grad_sums`` (linear scorer) on ``rows[start:stop]``.

    Writes the primal sum into ``sw`` and returns the dual one.
    """
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
        # A row whose gradient is not finite (an overflow) counts as zero, as in
        # clipped_sum: one row must not turn the released sum into NaN.
        if math.isfinite(norm):
            scale = min(1.0, clip_w / max(norm, 1e-300))
            coef = g_h * scale
            for j in range(n_theta):
                sw[j] += coef * X[i, j]
            if y[i] > 0:
                sw[n_theta] += g_centre * scale
            else:
                sw[n_theta + 1] += g_centre * scale
        g_v = -2.0 * sy * h
        if math.isfinite(g_v):
            sv += min(clip_v, max(-clip_v, g_v))
    return sv


@numba.njit(cache=True)
def _noisy_auc_grads(w, v, X, y, aux, rows, start, stop, noise, t, consts, sw, g_w):
    """The oracle's release on ``rows[start:stop]`` plus ``noise`` row ``t`` (none if
    ``noise`` has no rows; an empty batch still gets its noise, as in the numpy
    oracle): writes the primal gradient into ``g_w``, returns the dual one (the
    regulariser's gradient added to both)."""
    p, l2_reg, clip_w, clip_v, inv_norm = consts[0], consts[1], consts[2], consts[3], consts[4]
    n_w = w.shape[0]
    sv = linear_auc_clipped_sums(w, v, X, y, aux, rows, start, stop, clip_w, clip_v, sw)
    g_v = sv * inv_norm
    for j in range(n_w):
        g_w[j] = sw[j] * inv_norm
    if noise.shape[0] > 0:
        for j in range(n_w):
            g_w[j] += noise[t, j]
        g_v += noise[t, n_w]
    for j in range(n_w):
        g_w[j] += l2_reg * w[j]
    return g_v - 2.0 * p * (1.0 - p) * v[0]


@numba.njit(cache=True)
def linear_auc_sgda_chunk(w, v, sum_w, sum_v, X, y, aux, rows, starts, stops, noise,
                          etas_w, etas_v, first_averaged, consts, flat_w, flat_v):
    """NoisySGDA steps on the linear AUC objective, in place (see glue.linear_auc_runner)."""
    n_w = w.shape[0]
    sw = np.empty(n_w)
    g_w = np.empty(n_w)
    for t in range(starts.shape[0]):
        if t >= first_averaged:
            sum_w += w
            sum_v += v
        g_v = _noisy_auc_grads(w, v, X, y, aux, rows, starts[t], stops[t], noise, t, consts,
                               sw, g_w)
        for j in range(n_w):
            w[j] -= etas_w[t] * g_w[j]
        v[0] += etas_v[t] * g_v
        project_flat(w, flat_w)
        project_flat(v, flat_v)


@numba.njit(cache=True)
def linear_auc_nseg_chunk(w, v, sum_w, sum_v, X, y, aux, rows, starts, stops, noise_ext,
                          noise_upd, gamma, consts, flat_w, flat_v):
    """NoisyExtragradient iterations on the linear AUC objective, in place (see
    glue.linear_auc_nseg_runner): iteration ``t`` extrapolates on batch ``2 t`` and
    updates on batch ``2 t + 1``."""
    n_w = w.shape[0]
    sw = np.empty(n_w)
    g_w = np.empty(n_w)
    x_w = np.empty(n_w)
    x_v = np.empty(1)
    for t in range(starts.shape[0] // 2):
        g_v = _noisy_auc_grads(w, v, X, y, aux, rows, starts[2 * t], stops[2 * t],
                               noise_ext, t, consts, sw, g_w)
        for j in range(n_w):
            x_w[j] = w[j] - gamma * g_w[j]
        x_v[0] = v[0] + gamma * g_v
        project_flat(x_w, flat_w)
        project_flat(x_v, flat_v)
        g_v = _noisy_auc_grads(x_w, x_v, X, y, aux, rows, starts[2 * t + 1],
                               stops[2 * t + 1], noise_upd, t, consts, sw, g_w)
        for j in range(n_w):
            w[j] -= gamma * g_w[j]
        v[0] += gamma * g_v
        project_flat(w, flat_w)
        project_flat(v, flat_v)
        sum_w += x_w
        sum_v += x_v
