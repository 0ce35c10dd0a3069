"""The noisy gradient oracle shared by every gradient-perturbation solver.

One call releases the primal and dual blocks of one batch:

    g_b = (clipped_sum_b(batch) + N(0, (z_b * s * C_b)^2 I)) / m + grad_b r(w, v)

with ``C_b`` the block's clip norm (for the dual block possibly one clip per
coordinate, see :func:`dual_clips`), ``s`` the sampler's sensitivity factor
(2 under replace-one, 1 under add/remove), ``z_b`` the block's share of the
calibrated joint multiplier and ``m`` the sampler's fixed normaliser. The data-free
part ``r`` is added exactly. The two blocks are one Gaussian release in whitened
coordinates, which is how the calibration accounts for them.
"""

import contextlib
import math
import threading
import warnings

import numpy as np
from threadpoolctl import threadpool_limits

from skdpminimax.objectives.base import (
    RegularizedObjective,
    SaddleObjective,
    defining_class,
    engine_clipped_sums,
    forwarded_to_base,
    is_users,
    prepare_data,
    quiet_after_the_spend,
)
from skdpminimax.privacy.mechanisms import check_coordinate_clips
from skdpminimax.solvers.run_log import record_oracle

__all__ = ["NoisyGradientOracle", "dual_clips", "resolve_clip_norms", "noise_shares",
           "GENERIC_CLIP"]

# The solvers' default per-example clip norm: the scale of standardised problems.
GENERIC_CLIP = 1.0

# Noise for up to this many calls is drawn at once (fewer Generator calls per step),
# capped at about _NOISE_FLOATS numbers so that wide models (an MLP) stay in memory.
_NOISE_CHUNK = 512
_NOISE_FLOATS = 1 << 21


# A step whose products touch fewer than this many numbers (batch x parameters) runs on
# one BLAS thread: threads cost more than they save on products this small, and on a busy
# machine far more (the MLP's step on breast cancer: 0.23 ms on one thread, 0.63 ms on
# two with the other core busy; 784 features: 4.9 against 10.2 ms; benchmarks.md).
_SMALL_STEP_ENTRIES = 1 << 24


def chunk_rows(indices, starts, stops, steps=slice(None)):
    """The rows of a chunk's batches ``indices[starts[j]:stops[j]]`` for the steps
    ``j`` in ``steps`` (a slice), concatenated (``None`` where every step uses all rows):
    what a compiled runner reports to :meth:`NoisyGradientOracle.consumed`."""
    if indices is None:
        return None
    starts, stops = np.asarray(starts)[steps], np.asarray(stops)[steps]
    if len(starts) == 0:
        return indices[:0]
    if steps == slice(None) and np.array_equal(starts[1:], stops[:-1]):  # back to back
        return indices[starts[0]:stops[-1]]
    return np.concatenate([indices[a:b] for a, b in zip(starts.tolist(), stops.tolist())])


def blas_threads_for_steps(batch_size, n_params):
    """A context for a solver's step loop: one BLAS thread where the steps are small
    (``batch_size * n_params < _SMALL_STEP_ENTRIES``), the library's default otherwise.
    Results do not depend on it (products split by output blocks). In the main thread
    only: the setting is the process's, and fits in overlapping threads (joblib's
    threading backend) would restore it out of order and leave it at one thread."""
    if (batch_size * n_params < _SMALL_STEP_ENTRIES
            and threading.current_thread() is threading.main_thread()):
        return threadpool_limits(limits=1, user_api="blas")
    return contextlib.nullcontext()


def max_example_weight(objective):
    """The objective's largest example weight (1 for one without weights, duck-typed
    objectives included): how many typical norms "auto_if_quiet" may clip at."""
    return float(getattr(objective, "max_example_weight", lambda: 1.0)())


def gradients_shrink_at_fit(objective):
    """Whether the objective's per-example gradients shrink to its residuals at a good
    fit (``gradients_shrink_at_fit()``; ``False`` for one without the method)."""
    return bool(getattr(objective, "gradients_shrink_at_fit", lambda: False)())


def resolve_clip_norms(objective, clip_w, clip_v):
    """Clip norms actually used: the user's, capped by the objective's certified bounds.

    Clipping at a certified Lipschitz bound changes nothing but makes the sensitivity
    argument independent of that bound being right; clipping below it trades bias
    for less noise. ``"auto"`` clips at the objective's ``typical_grad_norms()`` (public
    quantities only); ``"scaled"`` here at that norm times ``max_example_weight()``
    (primal), and ``"auto_if_quiet"`` at the larger of that and ``GENERIC_CLIP`` (1.0):
    upper bounds of what NoisySGDA's noise-dependent rules clip at. A block with
    neither bound cannot be made private.
    """
    g_w, g_v = objective.lipschitz()
    typical = None
    if {"auto", "scaled", "auto_if_quiet"} & {c for c in (clip_w, clip_v) if isinstance(c, str)}:
        typical = getattr(objective, "typical_grad_norms", objective.lipschitz)()
        _warn_if_no_typical_norms(objective, clip_w, clip_v)
    out = []
    for b, (name, user, bound) in enumerate((("clip_w", clip_w, g_w), ("clip_v", clip_v, g_v))):
        if isinstance(user, str) and user == "auto":
            user = typical[b]  # the objective's public typical norm (see typical_grad_norms)
        elif isinstance(user, str) and user in ("scaled", "auto_if_quiet"):
            # Primal: up to max_example_weight() typical norms (NoisySGDA's quiet rule).
            weight = max_example_weight(objective) if b == 0 else 1.0
            user = typical[b] * max(1.0, weight)
            if clip_w == "auto_if_quiet" and b == 0:
                user = max(user, GENERIC_CLIP)
        c = min(math.inf if user is None else float(user), float(bound))
        if not math.isfinite(c):
            raise ValueError(
                f"The objective has no finite gradient bound for this block; set {name}."
            )
        if c <= 0:
            if float(bound) <= 0:  # the user's clip was positive or a typical norm
                raise ValueError(
                    f"{type(objective).__name__}.lipschitz() bounds this block's per-example "
                    f"gradients by {float(bound):g}, so {name} (the smaller of the clip and "
                    "that bound) is not positive. A block whose data term has no gradient "
                    "still needs a positive bound here: declare one (any positive bound "
                    "of a zero gradient is valid).")
            raise ValueError(f"{name} must be > 0.")
        out.append(c)
    return tuple(out)


def _declares(objective, name):
    """Whether the objective's class (or a base other than SaddleObjective) defines
    ``name``; a wrapper (RegularizedObjective) answers for its base."""
    if isinstance(objective, RegularizedObjective):
        return _declares(objective.base, name)
    method = getattr(type(objective), name, None)
    return method is not None and method is not getattr(SaddleObjective, name, None)


def _warn_if_no_typical_norms(objective, clip_w, clip_v):
    """A noise-aware clip on an objective without ``typical_grad_norms`` clips at its
    certified ``lipschitz()`` bound, which can be far above what its examples reach
    (a user's objective: 335 for gradients of order 1), so the noise is of that scale."""
    if _declares(objective, "typical_grad_norms"):
        return
    names = [f"{name}={value!r}" for name, value in (("clip_w", clip_w), ("clip_v", clip_v))
             if isinstance(value, str)]
    if clip_v == "auto" and _declares(objective, "typical_dual_clips"):
        names = [n for n in names if not n.startswith("clip_v")]
    if names:
        warnings.warn(
            f"{' and '.join(names)}: {type(objective).__name__} declares no "
            "typical_grad_norms(), so the clip is its certified lipschitz() bound "
            f"{tuple(float(b) for b in objective.lipschitz())}, and the noise is of that "
            "scale. Declare typical_grad_norms() (and typical_dual_clips() for weights "
            "that divide by group sizes), or pass numeric clips.", UserWarning)


def dual_clips(objective, clip_v, resolved, noise_multiplier, sampler):
    """The dual block's clip for an oracle of this noise: per coordinate, or ``resolved``.

    With ``clip_v="auto"`` an objective that declares
    :meth:`~skdpminimax.objectives.SaddleObjective.typical_dual_clips` gets a vector of
    clips for the release's relative noise ``z_v s / m`` (capped at the certified bound,
    where clipping changes nothing); otherwise the scalar ``resolved``
    (:func:`resolve_clip_norms`). Public inputs only: any such choice leaves the
    mechanism a Gaussian one of multiplier ``z_v`` in whitened coordinates.
    """
    if not (isinstance(clip_v, str) and clip_v == "auto") or not _writes_for_vectors(objective):
        return resolved
    noise_scale = float(noise_multiplier) * sampler.sensitivity_factor / float(sampler.normalizer)
    clips = objective.typical_dual_clips(noise_scale)
    if clips is None:
        return resolved
    clips = check_coordinate_clips(clips, objective.n_dual)
    return np.minimum(clips, float(objective.lipschitz()[1]))


def _writes_for_vectors(objective):
    """Whether the objective's ``clipped_grad_sums`` was written with its
    ``typical_dual_clips`` in view: defined in the same class or a base class of the
    one that declares the clips. A subclass that overrides ``clipped_grad_sums`` under
    an inherited ``typical_dual_clips`` (written for one scalar, say) keeps the
    scalar clip, with a warning: a vector it does not index by coordinate would clip
    the wrong rows."""
    objective = forwarded_to_base(objective, "typical_dual_clips", "clipped_grad_sums")
    declares = defining_class(objective, "typical_dual_clips")
    clips = defining_class(objective, "clipped_grad_sums")
    if declares is SaddleObjective or issubclass(declares, clips):
        return True
    warnings.warn(
        f"{type(objective).__name__} overrides clipped_grad_sums below the "
        f"typical_dual_clips it inherits from {declares.__name__}; its dual keeps one "
        "scalar clip. Define typical_dual_clips next to clipped_grad_sums (and accept a "
        "vector there) to clip per coordinate.", UserWarning, stacklevel=3)
    return False


def noise_shares(allocation, dims, clips):
    """How a step's joint privacy loss is split between the blocks.

    ``"dimension"`` gives block ``b`` a share proportional to ``C_b sqrt(d_b)``,
    which minimises the total noise energy ``sum_b d_b sigma_b^2`` for the joint
    multiplier (a scalar dual block then takes more noise and the primal less);
    ``"equal"`` gives every block the same multiplier; a float in (0, 1) is the dual
    block's share. Public inputs only.
    """
    if allocation == "equal":
        return (0.5, 0.5)
    if allocation == "dimension":
        weights = np.array([c * math.sqrt(d) for d, c in zip(dims, clips)])
        return tuple(weights / weights.sum())
    share_v = float(allocation)
    if not 0 < share_v < 1:
        raise ValueError(f"A numeric noise allocation is the dual share in (0, 1), got {share_v}.")
    return (1.0 - share_v, share_v)


class NoisyGradientOracle:
    """Noisy clipped mean gradients ``(g_w, g_v)`` of a batch (see module docstring).

    Parameters
    ----------
    objective : SaddleObjective
        The objective whose per-example gradients are clipped.
    data : SaddleData
        The (prepared) training data.
    sampler : sampler from :mod:`skdpminimax.privacy.samplers`
        Its normaliser divides the sums and its sensitivity factor scales the noise.
    block_multipliers : (float, float)
        ``(z_w, z_v)`` from :func:`~skdpminimax.privacy.split_noise_multiplier`
        (zeros mean no noise).
    clip_w : float
        Per-example clip norm of the primal block.
    clip_v : float or ndarray
        Per-example clip norm of the dual block, or one clip per dual coordinate
        (:func:`dual_clips`): the noise is then ``z_v s c_j`` on coordinate ``j``.
    rng : numpy.random.Generator
        Source of the noise.

    Attributes
    ----------
    n_drawn, n_used : int
        Noise rows drawn (by :meth:`noise_block` or a call of the oracle) and used (one
        per call with noise, or as reported by :meth:`consumed`).
    n_releases : int
        ``n_used``, or ``n_drawn`` for an oracle whose rows were never passed back.
        The estimators compare it, the rows it exposed, the sampler and
        ``block_multipliers`` with the solver's calibration after the solve
        (``skdpminimax.solvers.run_log``).
    n_rows_released : int
        Rows of the batches its calls released noisy gradients of (``idx`` not
        ``None``; a compiled step's batches are not counted). The estimators compare it
        with the rows the samplers yielded during the fit.
    n_unnoised, n_whole_data : int
        Calls of :meth:`noisy_grads` on an oracle that adds noise without a noise row,
        and on all rows (``idx=None``) under a subsampling sampler: releases the
        calibration does not cover (the estimators refuse them).
    """

    def __init__(self, objective, data, sampler, block_multipliers, clip_w, clip_v, rng):
        self.objective = objective
        self.clipped_sums = engine_clipped_sums(objective)
        self._users = is_users(objective)  # silenced while it runs (see noisy_grads)
        with quiet_after_the_spend(objective):
            self.data = prepare_data(objective, data)
        self.clip_w = clip_w
        self.clip_v = clip_v
        self.inv_normalizer = 1.0 / float(sampler.normalizer)
        z_w, z_v = block_multipliers
        self.sampler = sampler
        self.block_multipliers = (float(z_w), float(z_v))
        self.std_w = z_w * sampler.sensitivity_factor * clip_w
        self.std_v = z_v * sampler.sensitivity_factor * np.asarray(clip_v, dtype=float)
        self._noisy = bool(self.std_w > 0 or np.any(self.std_v > 0))  # read every call
        self.rng = rng
        self.n_grad_evals = 0
        self._n_handed_out = 0  # noise rows handed out by __call__ (its chunk position)
        self._noise = None
        self.n_drawn = self.n_used = self.n_unnoised = self.n_whole_data = 0
        self.n_rows_released = 0
        log = record_oracle(self, data)  # not kept: the log refers to the oracle
        self._row_ids = getattr(data, "row_ids", None)
        # Only rows from the estimator's data (or taken from it) trace back to its rows;
        # rows a solver assembled itself are counted on their own (never by whether
        # their number matches the data's, which is private under add/remove-one).
        self._traced = log is not None and getattr(data, "run_log", None) is not None
        self._pool = None  # which of its rows its noisy batches came from (a mask)
        # Under a sampler that claims no subsampling (disjoint batches, shuffled epochs)
        # the accountant composes one release per batch an example is in
        # (n_compositions), not per step: count each row's batches.
        self._counts_batches = (not getattr(sampler, "subsampled", True)
                                and getattr(sampler, "name", None) != "full")
        self._batches_of_row = None

    @property
    def n_releases(self):
        return self.n_used if self.n_used else self.n_drawn

    @property
    def pool(self):
        """Positions, among the data the estimator handed over, of the rows its noisy
        releases were drawn from (all of its rows if it never reported its batches);
        ``None`` where their origin is not known."""
        if not self._traced:
            return None
        if self._pool is None:
            self._mark(None)
        own = np.flatnonzero(self._pool)
        return own if self._row_ids is None else np.asarray(self._row_ids)[own]

    def _mark(self, idx):
        """Add the rows ``idx`` of this oracle's data (``None``: all) to its pool, a
        mask over its own rows (mapped to the original rows only when read)."""
        if not self._traced:
            return
        if self._pool is None:
            self._pool = np.zeros(self.data.n_samples, dtype=bool)
        if idx is None:
            self._pool[:] = True
        else:
            self._pool[idx] = True

    @property
    def batch_counts(self):
        """``(rows, counts)`` for a sampler that claims no subsampling: the rows that
        were in its noisy batches, as positions among the data the estimator handed over
        (as :attr:`pool`; ``None`` where their origin is not known), and how many
        batches each was in. ``None`` for other samplers."""
        if not self._counts_batches:
            return None
        if self._batches_of_row is None:
            return (None if not self._traced else np.zeros(0, dtype=np.intp),
                    np.zeros(0, dtype=np.int32))
        own = np.flatnonzero(self._batches_of_row)
        counts = self._batches_of_row[own]
        if not self._traced:
            return None, counts
        return (own if self._row_ids is None else np.asarray(self._row_ids)[own]), counts

    def _count_batch(self, idx, times=1):
        """Add ``times`` batches of the rows ``idx`` (``None``: all) to the rows' counts."""
        if not self._counts_batches:
            return
        if self._batches_of_row is None:
            self._batches_of_row = np.zeros(self.data.n_samples, dtype=np.int32)
        if idx is None:
            self._batches_of_row += times
        else:
            np.add.at(self._batches_of_row, np.asarray(idx), 1)

    def consumed(self, n_calls, indices=None):
        """Report ``n_calls`` noise rows used by a step that does not call the oracle
        (a compiled kernel), on the batches' rows ``indices`` (``None``: all), each
        row as often as it was in one of them (:func:`chunk_rows`)."""
        if self._noisy:
            self.n_used += int(n_calls)
            self._mark(indices)
            self._count_batch(indices, times=int(n_calls))

    @property
    def noisy(self):
        """Whether calls add noise (``False`` for an infinite budget)."""
        return self._noisy

    def max_chunk(self, dim_w, dim_v):
        """Most calls whose noise is drawn at once (memory stays near ``_NOISE_FLOATS``)."""
        return max(1, min(_NOISE_CHUNK, _NOISE_FLOATS // (dim_w + dim_v)))

    def noise_block(self, n_calls, dim_w, dim_v):
        """Noise of the next ``n_calls`` releases, shape ``(n_calls, dim_w + dim_v)``.

        Row ``j`` is what call ``j`` adds to ``(g_w, g_v)`` concatenated: the noise
        of the clipped *sum* divided by the normaliser. ``None`` without noise.
        """
        if not self.noisy:
            return None
        return self._draw(n_calls, dim_w, dim_v)

    def _draw(self, n_calls, dim_w, dim_v):
        self.n_drawn += int(n_calls)
        std = np.concatenate([np.full(dim_w, self.std_w), np.broadcast_to(self.std_v, (dim_v,))])
        return self.rng.standard_normal((n_calls, dim_w + dim_v)) * (std * self.inv_normalizer)

    def noisy_grads(self, w, v, idx, noise):
        """Noisy gradients at ``(w, v)`` on rows ``idx`` (``None`` = all rows) with the
        given noise row (from :meth:`noise_block`; ``None`` without noise). A user's
        objective runs silenced (:func:`quiet_after_the_spend`)."""
        if self._users:
            with quiet_after_the_spend(self.objective):
                return self._noisy_grads(w, v, idx, noise)
        return self._noisy_grads(w, v, idx, noise)

    def _noisy_grads(self, w, v, idx, noise):
        batch = self.data.take(idx)
        if batch.n_samples:
            try:
                sw, sv = self._checked_sums(w, v, batch)
            except Exception:  # noqa: BLE001 -- whether a fit fails must not be an output
                sw, sv = self._sums_of_rows_that_evaluate(w, v, batch)
        else:  # an empty Poisson batch: its sums are zero, whatever the objective does
            sw, sv = np.zeros(np.size(w)), np.zeros(np.size(v))
        g_w = sw * self.inv_normalizer  # new arrays: the objective's are left untouched
        g_v = sv * self.inv_normalizer
        if noise is not None:
            g_w += noise[: sw.size]
            g_v += noise[sw.size :]
            if self._noisy:
                self.n_used += 1
                self._mark(idx)
                self._count_batch(idx)
                if idx is not None:
                    self.n_rows_released += batch.n_samples
        elif self._noisy:
            self.n_unnoised += 1
        if idx is None and self._noisy and getattr(self.sampler, "name", None) != "full":
            self.n_whole_data += 1
        self.n_grad_evals += batch.n_samples
        rw, rv = self.objective.reg_grad(w, v)
        g_w += rw
        g_v += rv
        return g_w, g_v

    def _checked_sums(self, w, v, batch):
        """The batch's clipped sums as float blocks of the parameters' shapes; raises
        where a block has another shape or, under noise, is not finite (an override's
        slip), for the row-by-row fallback to sort out. Without noise a non-finite sum
        passes: the run diverged, and the estimator refuses its result."""
        sw, sv = self.clipped_sums(w, v, batch, self.clip_w, self.clip_v)
        sw = np.asarray(sw, dtype=float).reshape(np.shape(w))
        sv = np.asarray(sv, dtype=float).reshape(np.shape(v))
        if self.noisy and not (np.all(np.isfinite(sw)) and np.all(np.isfinite(sv))):
            raise FloatingPointError("clipped sums not finite")
        return sw, sv

    def _sums_of_rows_that_evaluate(self, w, v, batch):
        """The batch's clipped sums, row by row, a row the objective raises on (or
        whose clipped gradient is not finite) counting as zero, as a row with a NaN
        gradient does. After the spend an exception would be an output that one row
        decides (a user objective that refuses a value the stand-in batches did not
        hold); each row still adds at most its clip."""
        sw, sv = np.zeros(np.size(w)), np.zeros(np.size(v))
        for i in range(batch.n_samples):
            try:
                rw, rv = self._checked_sums(w, v, batch.take(np.array([i])))
            except Exception:  # noqa: BLE001 -- a row that fails in any way adds 0
                continue
            sw += rw.ravel()
            sv += rv.ravel()
        return sw, sv

    def __call__(self, w, v, idx):
        """Noisy gradients at ``(w, v)`` on rows ``idx``, drawing the noise as needed."""
        noise = None
        if self.noisy:
            chunk = self.max_chunk(w.size, v.size)
            k = self._n_handed_out % chunk
            if k == 0:  # drawn ahead; a row counts as used once it is added
                self._noise = self._draw(chunk, w.size, v.size)
            noise = self._noise[k]
            self._n_handed_out += 1
        return self.noisy_grads(w, v, idx, noise)
