"""What a solve's noisy gradient oracles did, compared with the calibration it returns.

A solver's :class:`~skdpminimax.privacy.NoiseCalibration` is its word: ``n_steps``
releases at multipliers ``block_noise_multipliers`` (times ``noise_ratios``), batches of
``batch_size`` drawn by ``sampler``. Every
:class:`~skdpminimax.solvers.NoisyGradientOracle` built on the estimator's data (or on
rows taken from it with ``data.take``) joins the data's :class:`RunLog`; after the
solve the estimators compare the oracles that added noise with the record
(:func:`check_run_matches_record`) and refuse a run that departs from it before
anything is released. This catches honest slips in a solver built on the library's
oracle and samplers (more steps than recorded, a larger batch, a block's noise
forgotten, a noise row reused, batches not drawn from a sampler), not a solver that
adds its noise elsewhere: such a solver's proof stays its own (docs/extending.rst).

The record itself is checked too (:func:`check_record_certifies`): its block
multipliers must combine to at least its joint one, and a record this library did not
certify (built or edited by the solver) is recertified from its fields.

**What is counted.** An oracle's releases are the noise rows it *used*: one per call
with noise (``oracle(w, v, idx)`` or ``noisy_grads(w, v, idx, row)``), or the rows a
compiled step consumed (:meth:`~skdpminimax.solvers.NoisyGradientOracle.consumed`);
rows drawn ahead and never used do not count, and more rows used than drawn (a row
reused, or noise not drawn by the oracle) is refused. An oracle whose drawn rows were
never passed back counts the rows it drew. Each release counts against every original
row the oracle's batches came from (its *pool*: the rows it indexed, traced back
through ``data.take``). The largest count over the original rows must be at most
``n_steps``: NSEG's two oracles on the same rows add up, recursive regularization's
rounds on disjoint chunks do not, a run restarted on the same rows adds up. Under a
sampler that claims no subsampling (disjoint batches, shuffled epochs) each row's
batches are counted too, against ``n_compositions``; and the rows released in
batches may not outnumber those the library's samplers handed out during the fit.
"""

import contextlib
import math
from collections import Counter
from contextvars import ContextVar

import numpy as np

from skdpminimax.privacy.calibration import certified_epsilon, record_is_issued
from skdpminimax.privacy.samplers import _Sampler, make_sampler, rows_yielded

__all__ = ["RunLog", "oracle_log", "record_oracle", "check_run_matches_record",
           "check_record_certifies"]

# A log for oracles built on data that carries none (a solver that makes its own
# SaddleData): the one of the fit running in this thread or task.
_LOG = ContextVar("skdpminimax_oracle_log", default=None)

# Relative slack on multipliers and rates: the oracle recomputes z from std / (s C).
_RTOL = 1e-9


class RunLog:
    """The oracles of one solve, over ``n_rows`` original rows (``None``: unknown)."""

    def __init__(self, n_rows=None):
        self.n_rows = None if n_rows is None else int(n_rows)
        self.oracles = []
        self.yielded_at_start = rows_yielded()  # the samplers' tally when the log opened

    def __iter__(self):
        return iter(self.oracles)

    def __len__(self):
        return len(self.oracles)

    def __bool__(self):  # an open log is a log, even before its first oracle
        return True

    def close(self):
        """Forget the oracles (they hold the rows)."""
        self.oracles = []


@contextlib.contextmanager
def oracle_log(n_rows=None):
    """Open a :class:`RunLog` for the oracles built inside the block (in this thread
    or task) on data without a log of its own; yields it."""
    log = RunLog(n_rows)
    token = _LOG.set(log)
    try:
        yield log
    finally:
        _LOG.reset(token)


def record_oracle(oracle, data):
    """Called by every oracle on construction: join ``data``'s log, else the open one.
    Returns the log (``None`` if there is none)."""
    log = getattr(data, "run_log", None)
    if log is None:
        log = _LOG.get()
    if log is not None:
        log.oracles.append(oracle)
    return log


def check_run_matches_record(solver, calibration, oracles):
    """Raise ``RuntimeError`` where the noisy oracles of a run depart from ``calibration``.

    Checked for every oracle that added noise: its sampler's name is the record's and
    its batch size and rate at most the record's; each block's multiplier is at least
    the record's (times the smallest of ``noise_ratios``); it used no more noise rows
    than it drew; it released no gradient without noise and none on all rows under a
    subsampling sampler; its calls released gradients of no more rows than the
    library's samplers of its kind handed out during the fit (batches from the
    sampler, each released once); and no original row was exposed to more than ``n_steps``
    releases (see the module docstring). A record of gradient noise (``"pld"`` or
    ``"rdp"`` accounting with positive block multipliers) whose run built oracles but
    no noisy one, or one that evaluated exact gradients, is refused too. A record without
    block multipliers is checked on each noisy oracle's joint multiplier; NISPP's (it
    noises its iterates, and its one oracle is noise-free) is not checked at all.
    """
    if calibration is None or not getattr(calibration, "noise_multiplier", 0) > 0:
        return
    oracles_log, oracles = oracles, list(oracles)
    name = type(solver).__name__
    noisy = [oracle for oracle in oracles if oracle.noisy]
    recorded = tuple(float(z) for z in (getattr(calibration, "block_noise_multipliers", ())
                                         or ()))
    gradient_noise = (getattr(calibration, "accounting", None) in ("pld", "rdp")
                      and any(z > 0 for z in recorded))
    if oracles and not noisy and gradient_noise:
        raise RuntimeError(
            f"{name}'s calibration records gradient noise (block multipliers "
            f"{recorded}) but none of the {len(oracles)} gradient oracle(s) of its run added "
            f"any. {_NOTHING_RELEASED}")
    exact = [oracle for oracle in oracles if not oracle.noisy and oracle.n_grad_evals]
    if exact and gradient_noise:
        raise RuntimeError(
            f"{name}'s calibration records gradient noise, but {len(exact)} oracle(s) of its "
            f"run evaluated exact (noise-free) gradients of the private rows: build every "
            f"oracle with the calibration's block multipliers (diagnostics of exact "
            f"gradients belong outside the fit). {_NOTHING_RELEASED}")
    unnoised = sum(oracle.n_unnoised for oracle in noisy)
    if unnoised:
        raise RuntimeError(
            f"{name}'s run released {unnoised} gradient(s) without noise from an oracle "
            f"calibrated to add it (noisy_grads(..., noise=None)). {_NOTHING_RELEASED}")
    whole = sum(oracle.n_whole_data for oracle in noisy)
    if whole:
        raise RuntimeError(
            f"{name}'s run released {whole} gradient(s) of all rows (idx=None) through an "
            f"oracle whose sampler subsamples batches: every batch must come from the "
            f"oracle's sampler. {_NOTHING_RELEASED}")
    ratios = tuple(getattr(calibration, "noise_ratios", (1.0,)) or (1.0,))
    floor = min(float(r) for r in ratios)
    for oracle in noisy:
        _check_sampler(name, oracle.sampler, calibration)
        if recorded:
            _check_multipliers(name, oracle.block_multipliers, recorded, floor)
        elif getattr(calibration, "accounting", None) in ("pld", "rdp"):
            # No split recorded: the oracle's blocks together must carry the joint one.
            _check_multipliers(name, (_joint(oracle.block_multipliers),),
                               (float(calibration.noise_multiplier),), floor, "joint")
        if oracle.n_used > oracle.n_drawn:
            raise RuntimeError(
                f"{name}'s run used {oracle.n_used} noise rows from an oracle that drew "
                f"{oracle.n_drawn}: a row used twice, or noise not drawn by the oracle "
                f"(use the rows of noise_block, once each). {_NOTHING_RELEASED}")
    _check_batches_from_samplers(name, noisy, getattr(oracles_log, "yielded_at_start", None))
    _check_batches_per_row(name, calibration, noisy)
    exposure = _largest_exposure(noisy)
    n_steps = int(calibration.n_steps)
    if exposure > n_steps:
        raise RuntimeError(
            f"{name}'s run exposed a row to {exposure} noisy gradient releases where its "
            f"calibration certifies {n_steps} (n_steps): run exactly the recorded number "
            f"of steps (each release counts against every row its batches are drawn "
            f"from). {_NOTHING_RELEASED}")
    _check_ratio_levels(name, calibration, noisy, recorded, ratios, n_steps)


def _check_batches_from_samplers(name, noisy, yielded_at_start):
    """The rows an oracle's calls released gradients of must have been handed out by
    samplers of its kind (its sampler's name, whatever their batch size) since the log
    opened: batches drawn another way (``rng.choice``, a permutation of the solver's
    own) or a batch released twice are not what the calibration accounts for. Only
    where the log has a tally and the oracle's sampler counts what it yields (the
    library's samplers)."""
    if yielded_at_start is None:
        return
    released = Counter()
    for oracle in noisy:
        sampler = oracle.sampler
        # (full batches use every row whatever indices a solver passes)
        if (type(sampler).batch_chunks is _Sampler.batch_chunks and sampler.name != "full"
                and oracle.n_rows_released):
            released[sampler.name] += oracle.n_rows_released
    if not released:
        return
    now = rows_yielded()
    for sampler_name, rows in released.items():
        handed_out = now[sampler_name] - yielded_at_start[sampler_name]
        if rows > handed_out:
            raise RuntimeError(
                f"{name}'s run released noisy gradients of {rows} rows in batches, but the "
                f"{sampler_name!r} samplers handed out only {handed_out} rows during the "
                f"fit: draw every batch from the oracle's sampler (sampler.batches or "
                f"batch_chunks) and release each once; batches drawn another way "
                f"(rng.choice, a permutation) or released twice are not what the "
                f"calibration accounts for. {_NOTHING_RELEASED}")


def _check_batches_per_row(name, calibration, noisy):
    """Under a sampler that claims no subsampling (disjoint batches, shuffled epochs)
    the accountant composes one release per batch an example can be in
    (``n_compositions``), not one per step: no original row may have been in more of
    the run's noisy batches. Each call of ``batches`` / ``batch_chunks`` starts a
    fresh permutation, so a run that draws its steps in several calls can put a row in
    far more batches than its record composes."""
    # (0, the field's default, or missing: a record built by hand; its steps then)
    allowed = getattr(calibration, "n_compositions", 0) or calibration.n_steps
    largest = _largest_batch_count(noisy)
    if largest is not None and largest > int(allowed):
        raise RuntimeError(
            f"{name}'s run put a row in {largest} noisy batches where its calibration "
            f"composes {int(allowed)} release(s) per example (n_compositions; the "
            f"{calibration.sampler!r} sampler claims no subsampling): draw all the steps "
            f"from one call of the sampler's batches or batch_chunks, as each call starts "
            f"a fresh permutation. {_NOTHING_RELEASED}")


def _largest_batch_count(noisy):
    """The most noisy batches any original row was in, over the oracles that count
    them (``None`` if none does)."""
    counted = [oracle.batch_counts for oracle in noisy
               if getattr(oracle, "batch_counts", None) is not None]
    return _largest_total(counted) if counted else None


def _level(oracle, calibration, recorded):
    """An oracle's noise relative to the record's ratio-1 noise: the smallest block
    ratio (or the joint one where no split is recorded)."""
    if recorded:
        return min(float(np.min(z)) / z_rec if z_rec > 0 else np.inf
                   for z, z_rec in zip(oracle.block_multipliers, recorded))
    return _joint(oracle.block_multipliers) / float(calibration.noise_multiplier)


def _check_ratio_levels(name, calibration, noisy, recorded, ratios, n_steps):
    """A record whose releases cycle through ``noise_ratios`` (NSEG's ``(r, 1)``)
    certifies ``n_steps / k`` releases at each ratio. Below each level ``r`` a row may
    be exposed to at most the releases the record has below it: with the total at
    most ``n_steps`` the run's multipliers, sorted, then dominate the record's, and
    the composition is at least as private. (Releases all at the smallest ratio pass
    the floor check alone.)"""
    if len(set(ratios)) < 2:
        return
    per_ratio = n_steps // len(ratios)
    levels = {id(oracle): _level(oracle, calibration, recorded) for oracle in noisy}
    for r in sorted(set(ratios))[1:]:
        below = [oracle for oracle in noisy if levels[id(oracle)] < r * (1 - _RTOL)]
        allowed = per_ratio * sum(1 for q in ratios if q < r)
        exposure = _largest_exposure(below)
        if exposure > allowed:
            raise RuntimeError(
                f"{name}'s run exposed a row to {exposure} releases with less than {r:g} "
                f"times the recorded noise, where its calibration's noise_ratios {ratios} "
                f"allow {allowed}: release each ratio's share with its own multiplier. "
                f"{_NOTHING_RELEASED}")


def _largest_exposure(noisy):
    """The most releases any original row was exposed to: each oracle's releases
    counted against every row of its pool."""
    return _largest_total([(oracle.pool, oracle.n_releases) for oracle in noisy])


def _largest_total(entries):
    """The largest sum over the original rows of ``(rows, amounts)`` entries: ``rows``
    positions among the original rows, each listed once per entry, with an amount
    each (an array, or one number for all), or ``None`` for rows of unknown origin,
    counted on their own, against no other run."""
    unknown = max((int(np.max(amounts, initial=0)) for rows, amounts in entries
                   if rows is None), default=0)
    traced = [(rows, amounts) for rows, amounts in entries if rows is not None and rows.size]
    if not traced:
        return unknown
    totals = np.zeros(max(int(rows.max()) for rows, _ in traced) + 1, dtype=np.int32)
    for rows, amounts in traced:
        totals[rows] += amounts  # each row once per entry
    return int(max(totals.max(), unknown))


_NOTHING_RELEASED = ("Nothing was released; the budget of this fit is spent. The run must "
                     "draw the batches and the noise its calibration records "
                     "(docs/extending.rst).")


def _check_sampler(name, sampler, calibration):
    recorded = getattr(calibration, "sampler", None)
    if sampler.name != recorded:
        raise RuntimeError(
            f"{name}'s run drew batches with the {sampler.name!r} sampler, its calibration "
            f"accounts for {recorded!r}. {_NOTHING_RELEASED}")
    if sampler.name == "full":  # every row, whatever the number present
        return
    batch = int(getattr(calibration, "batch_size", sampler.batch_size))
    rate = float(getattr(calibration, "sample_rate", sampler.sample_rate))
    # Smaller batches at the recorded multiplier are more private, larger ones less.
    if sampler.batch_size > batch or sampler.sample_rate > rate * (1 + _RTOL):
        raise RuntimeError(
            f"{name}'s run drew batches of {sampler.batch_size} (rate "
            f"{sampler.sample_rate:.6g}), its calibration accounts for {batch} (rate "
            f"{rate:.6g}). {_NOTHING_RELEASED}")


def _joint(blocks):
    """``(sum_b z_b^-2)^-1/2``: the multiplier of the blocks' joint release (0 if a
    block has no noise)."""
    blocks = [float(b) for b in blocks]
    return 0.0 if not blocks or min(blocks) <= 0 else sum(b ** -2.0 for b in blocks) ** -0.5


def _check_multipliers(name, used, recorded, floor, names=("primal", "dual")):
    names = (names,) if isinstance(names, str) else names
    for block, (z_run, z_rec) in enumerate(zip(used, recorded)):
        z_run = float(np.min(z_run))
        if z_run < z_rec * floor * (1 - _RTOL):
            which = names[block]
            raise RuntimeError(
                f"{name}'s run noised the {which} block at multiplier {z_run:.6g}, its "
                f"calibration certifies {z_rec * floor:.6g}: release every block through "
                f"an oracle built with the calibration's block multipliers. "
                f"{_NOTHING_RELEASED}")


def check_record_certifies(solver, calibration, budget):
    """Raise ``RuntimeError`` where a gradient-noise record (``"pld"`` / ``"rdp"``)
    does not certify the budget it was handed.

    Its block multipliers must combine (``(sum_b z_b^-2)^-1/2``) to at least its joint
    multiplier, which is what the accountant composed. A record that this library did
    not issue (:func:`~skdpminimax.privacy.calibration.record_is_issued`: one a solver
    built or edited itself) is recertified: its sampler rebuilt from ``sampler``,
    ``batch_size`` and ``sample_rate``, its epsilon recomputed at its multiplier, steps,
    ratios, delta and the budget's ``preceding`` releases, and refused above the
    budget's. Other accountings (output perturbation's Gaussian release) are the
    solver's own proof.
    """
    if not budget.is_private or calibration is None:
        return
    if getattr(calibration, "accounting", None) not in ("pld", "rdp"):
        return
    name = type(solver).__name__
    z = float(calibration.noise_multiplier)
    blocks = [float(b) for b in (getattr(calibration, "block_noise_multipliers", ()) or ())]
    if blocks and len(blocks) != 2:
        raise RuntimeError(
            f"{name}'s calibration has {len(blocks)} block multiplier(s) {tuple(blocks)}: "
            f"the oracle releases two blocks (primal, dual), one multiplier each "
            f"(split_noise_multiplier). {_NOTHING_RELEASED}")
    if blocks:
        # A block without noise (z_b = 0) leaves the whole release unprotected.
        joint = _joint(blocks)
        if joint < z * (1 - _RTOL):
            raise RuntimeError(
                f"{name}'s calibration splits its joint multiplier {z:.6g} into block "
                f"multipliers {tuple(blocks)}, which combine to {joint:.6g}: less noise than "
                f"the accountant composed (split_noise_multiplier gives a valid split). "
                f"{_NOTHING_RELEASED}")
    if record_is_issued(calibration):
        return
    try:
        batch = int(calibration.batch_size)
        n_samples = max(batch, int(round(batch / float(calibration.sample_rate))))
        sampler = make_sampler(str(calibration.sampler), n_samples, batch)
        epsilon = certified_epsilon(
            sampler, z, int(calibration.n_steps), float(budget.delta),
            accounting=str(calibration.accounting),
            pld_interval=float(getattr(calibration, "pld_interval", 0.0) or 1e-4),
            noise_ratios=tuple(getattr(calibration, "noise_ratios", (1.0,)) or (1.0,)),
            preceding=tuple(getattr(budget, "preceding", ()) or ()))
    except (ValueError, TypeError, ZeroDivisionError) as error:
        raise RuntimeError(
            f"{name}'s calibration cannot be recertified from its fields ({error}). "
            f"{_NOTHING_RELEASED}") from None
    if not epsilon <= budget.epsilon * (1 + _RTOL):
        raise RuntimeError(
            f"{name}'s calibration claims epsilon {float(calibration.epsilon):.6g}, but its "
            f"multiplier {z:.6g} over {int(calibration.n_steps)} steps certifies "
            f"{epsilon:.6g} at delta {float(budget.delta):.3g}, more than the "
            f"{budget.epsilon:.6g} it was given. {_NOTHING_RELEASED}")
