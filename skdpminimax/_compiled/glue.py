"""Python side of the compiled kernels: eligibility checks and argument packing."""

import numpy as np
import scipy.sparse as sp

from skdpminimax.objectives.auc import SquareLossAUC
from skdpminimax.objectives.scorers import LinearScorer
from skdpminimax.sets import Box, L2Ball, ProductSet, Reals

__all__ = ["flat_set", "has_linear_auc_kernel", "linear_auc_runner", "linear_auc_nseg_runner"]


def flat_set(the_set, dim):
    """The ``(k, 5)`` flat encoding of ``the_set`` in dimension ``dim`` (see
    :mod:`skdpminimax._compiled.kernels`), or ``None`` when it has none."""
    if isinstance(the_set, ProductSet):
        if the_set.dim != dim:
            return None
        parts = the_set.parts
    else:
        parts = [(dim, the_set)]
    rows, start = [], 0
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


def has_linear_auc_kernel(objective):
    """Whether ``objective`` is a linear-scorer :class:`SquareLossAUC` whose sets the
    kernel can project on (data-free: decided before any budget is spent)."""
    if type(objective) is not SquareLossAUC or type(objective.scorer) is not LinearScorer:
        return False
    n_w = objective.n_theta + 2
    return (flat_set(objective.primal_set, n_w) is not None
            and flat_set(objective.dual_set, 1) is not None)


def _linear_auc_arrays(objective, oracle):
    """The kernels' arguments that stay fixed through a run, or ``None`` when
    ``objective`` has no kernel (or ``X`` is sparse)."""
    if not has_linear_auc_kernel(objective) or sp.issparse(oracle.data.X):
        return None  # sparse X: the numpy loop (the estimators refuse backend="numba")
    n_w = objective.n_theta + 2
    data = oracle.data  # prepared: aux = (s, s * y, ||x||^2)
    return dict(
        X=np.ascontiguousarray(data.X, dtype=float),
        y=np.ascontiguousarray(data.y, dtype=float),
        aux=np.ascontiguousarray(data.aux, dtype=float),
        all_rows=np.arange(data.n_samples),
        consts=np.array([objective.p, objective.l2_reg, oracle.clip_w,
                         float(np.asarray(oracle.clip_v).reshape(())),
                         oracle.inv_normalizer]),
        flat_w=flat_set(objective.primal_set, n_w), flat_v=flat_set(objective.dual_set, 1),
        no_noise=np.empty((0, n_w + 1)),
    )


def linear_auc_runner(objective, oracle):
    """Chunk runner (see :func:`skdpminimax._compiled.sgda_kernel`) for a linear-scorer
    :class:`SquareLossAUC`, or ``None`` for any other objective."""
    a = _linear_auc_arrays(objective, oracle)
    if a is None:
        return None
    from skdpminimax._compiled.kernels import linear_auc_sgda_chunk

    def run(w, v, sum_w, sum_v, indices, starts, stops, noise, etas_w, etas_v, first_averaged):
        linear_auc_sgda_chunk(w, v, sum_w, sum_v, a["X"], a["y"], a["aux"],
                              a["all_rows"] if indices is None else indices, starts, stops,
                              a["no_noise"] if noise is None else noise,
                              np.asarray(etas_w, float), np.asarray(etas_v, float),
                              first_averaged, a["consts"], a["flat_w"], a["flat_v"])
        oracle.n_grad_evals += int(np.sum(stops - starts))

    return run


def linear_auc_nseg_runner(objective, update, extrapolation, gamma):
    """Chunk runner (see :func:`skdpminimax._compiled.nseg_kernel`) for a linear-scorer
    :class:`SquareLossAUC`, or ``None`` for any other objective."""
    a = _linear_auc_arrays(objective, update)
    if a is None:
        return None
    from skdpminimax._compiled.kernels import linear_auc_nseg_chunk

    def run(w, v, sum_w, sum_v, indices, starts, stops, noise_ext, noise_upd):
        linear_auc_nseg_chunk(w, v, sum_w, sum_v, a["X"], a["y"], a["aux"],
                              a["all_rows"] if indices is None else indices, starts, stops,
                              a["no_noise"] if noise_ext is None else noise_ext,
                              a["no_noise"] if noise_upd is None else noise_upd,
                              float(gamma), a["consts"], a["flat_w"], a["flat_v"])
        sizes = stops - starts
        extrapolation.n_grad_evals += int(np.sum(sizes[0::2]))
        update.n_grad_evals += int(np.sum(sizes[1::2]))

    return run
