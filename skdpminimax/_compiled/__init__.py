"""Optional compiled (numba) step kernels for the hottest solver loops.

A kernel runs a chunk of :class:`~skdpminimax.solvers.NoisySGDA` steps or of
:class:`~skdpminimax.solvers.NoisyExtragradient` iterations for one objective family
without returning to Python between steps. It is a second
implementation of code that exists in numpy (the objective's clipped gradient sums,
the oracle's noise and regulariser arithmetic, the sets' projections) and is tested
to agree with it step for step on the same batches and the same noise draws
(tests/test_compiled.py). It changes nothing about privacy: batches, noise and clip
norms come from the same sampler, oracle and calibration as the numpy path, which
the kernel only consumes.

numba is optional (``pip install "skdpminimax[fast]"``). Without it, or for an
objective that has no kernel, solvers run their numpy loop.
"""

import functools

__all__ = ["kernel_unavailable", "nseg_kernel", "numba_available", "sgda_kernel"]


@functools.lru_cache(maxsize=None)
def numba_available():
    """Whether numba imports (checked once; an installed but broken numba, e.g. one
    built for another numpy, counts as absent and the numpy loops run)."""
    try:
        import numba  # noqa: F401
    except Exception:  # noqa: BLE001 - any failure to import means "not available"
        return False
    return True


def sgda_kernel(objective, oracle):
    """A compiled NoisySGDA chunk runner for ``objective``, or ``None`` if there is none.

    The runner is called as ``run(w, v, sum_w, sum_v, indices, starts, stops, noise,
    etas_w, etas_v, first_averaged)`` and updates ``w, v, sum_w, sum_v`` in place;
    the arguments mean what they mean in ``NoisySGDA.solve``.
    """
    if kernel_unavailable(objective) is not None:  # one eligibility decision
        return None
    from skdpminimax._compiled.glue import linear_auc_runner

    return linear_auc_runner(objective, oracle)


def nseg_kernel(objective, update, extrapolation, gamma):
    """A compiled NoisyExtragradient chunk runner for ``objective``, or ``None``.

    ``update`` and ``extrapolation`` are the run's two oracles (the same object when
    both releases have the same noise), ``gamma`` its step. The runner is called as
    ``run(w, v, sum_w, sum_v, indices, starts, stops, noise_ext, noise_upd)`` on the
    ``2 k`` batches of ``k`` iterations (extrapolation on the even ones) and their
    noise rows (``None`` without noise); it updates ``w, v, sum_w, sum_v`` in place
    and counts the oracles' gradient evaluations.
    """
    if kernel_unavailable(objective) is not None:
        return None
    from skdpminimax._compiled.glue import linear_auc_nseg_runner

    return linear_auc_nseg_runner(objective, update, extrapolation, gamma)


def kernel_unavailable(objective):
    """Why :func:`sgda_kernel` and :func:`nseg_kernel` would return ``None`` for
    ``objective`` (a sentence), or ``None`` if it has kernels. Data-free, so solvers
    check it before any spend."""
    if not numba_available():
        return "numba is not installed (pip install 'skdpminimax[fast]')"
    from skdpminimax._compiled.glue import has_linear_auc_kernel

    if not has_linear_auc_kernel(objective):
        return f"{type(objective).__name__} has no compiled kernel"
    return None
