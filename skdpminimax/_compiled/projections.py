"""Compiled projections onto the sets of :mod:`skdpminimax.sets` that have a flat form.

A set is encoded as rows ``(start, stop, kind, a, b)`` acting on ``x[start:stop]``:
kind 0 leaves the slice alone (:class:`~skdpminimax.sets.Reals`), kind 1 projects it
onto the centred ball of radius ``a`` (:class:`~skdpminimax.sets.L2Ball`), kind 2
clips it to ``[a, b]`` (:class:`~skdpminimax.sets.Box` with scalar bounds).
"""

import math

import numba
import numpy as np

from skdpminimax.sets import Box, L2Ball, ProductSet, Reals

__all__ = ["flat_set", "project_flat"]


def _parts(the_set, dim):
    if isinstance(the_set, ProductSet):
        if the_set.dim != dim:
            return None
        return [(size, s) for size, s in the_set.parts]
    return [(dim, the_set)]


def flat_set(the_set, dim):
    """The ``(k, 5)`` encoding of ``the_set`` in dimension ``dim``, or ``None``."""
    rows, start = [], 0
    parts = _parts(the_set, dim)
    if parts is None:
        return None
    for size, s in parts:
        if isinstance(s, Reals):
            row = (0, 0.0, 0.0)
        elif isinstance(s, L2Ball) and s.center is None:
            row = (1, s.radius_, 0.0)
        elif isinstance(s, Box) and s.low.ndim == 0 and s.high.ndim == 0:
            row = (2, float(s.low), float(s.high))
        else:
            return None
        rows.append((start, start + size) + row)
        start += size
    return np.array(rows, dtype=float).reshape(-1, 5)


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
