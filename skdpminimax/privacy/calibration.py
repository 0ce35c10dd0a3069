"""Noise calibration with ``dp_accounting``.

A gradient-perturbation solver releases, at each of ``n_steps`` steps, several
noisy clipped sums computed on the *same* batch (e.g. the primal block ``w`` and the
dual block ``v``). Block ``b`` gets Gaussian noise of standard deviation
``z_b * s * C_b`` on its sum, where ``C_b`` is its clip norm and ``s`` the sampler's
sensitivity factor (1 under add/remove, 2 under replace-one). In whitened
coordinates the blocks together are *one* Gaussian mechanism with multiplier
``z = (sum_b z_b^-2)^-1/2``; that single event per step is what the accountant
composes. (Accounting the blocks as separate subsampled mechanisms, as the papers
do, applies amplification twice to one subsample and under-counts the loss.)

:func:`calibrate_noise_multiplier` returns the smallest joint ``z`` (to a relative
tolerance) whose certified epsilon at the target delta does not exceed the target;
:func:`split_noise_multiplier` turns it into per-block multipliers
``z_b = z / sqrt(share_b)`` with shares summing to one. Both see only public
quantities (the sampler's ``(n, m)``, the step count, the budget, block sizes and
clip norms), never the data.
"""

import collections
import functools
import logging
import math
import threading
from dataclasses import asdict, dataclass

import dp_accounting
import numpy as np
from dp_accounting import pld, rdp
from scipy import optimize

from skdpminimax.privacy.composition import describe_events
from skdpminimax.privacy.gdp import gaussian_sigma, gdp_delta
from skdpminimax.privacy.samplers import make_sampler

__all__ = [
    "NoiseCalibration",
    "calibrate_noise_multiplier",
    "certified_epsilon",
    "check_certifiable",
    "UncertifiableBudgetError",
    "split_noise_multiplier",
    "analytic_gaussian_sigma",
]

_RDP_ORDERS = tuple(
    [1 + x / 10 for x in range(1, 100)]
    + list(range(12, 64))
    + [80, 96, 128, 192, 256, 384, 512, 1024, 2048, 4096, 8192, 16384]
)
# Below this delta the PLD may certify nothing (its truncated tail mass): the smaller of
# the PLD and RDP bounds certifies there (see _certify), and check_certifiable refuses
# beforehand what the RDP bound cannot.
_PLD_DELTA_FLOOR = 1e-12
_REL_TOL = 2e-3  # relative precision of the calibrated multiplier (always on the safe side)


class UncertifiableBudgetError(ValueError):
    """No noise multiplier up to 1e7 certifies the budget for the run (its accountant's
    bound levels off above the target: a tiny epsilon over very many steps)."""


@dataclass(frozen=True)
class NoiseCalibration:
    """Record of how a solver's noise was calibrated (a fitted attribute).

    Attributes
    ----------
    noise_multiplier : float
        Joint multiplier ``z`` of one step's release (all blocks together, whitened):
        noise std over sensitivity. ``0.0`` when no noise is added (``epsilon=np.inf``).
    n_steps : int
        Number of releases the accountant composes, each of every block once: a
        solver's ``n_iter_`` can differ (NSEG releases twice per iteration, so
        ``n_steps = 2 n_iter_``; the recursive framework records one round's
        calibration, and its ``n_iter_`` counts every round's steps).
    sampler : str
        ``'full'``, ``'poisson'``, ``'without_replacement'``, ``'disjoint'`` or
        ``'shuffle'`` (the
        samplers of :mod:`skdpminimax.privacy.samplers`); ``'partition'`` for phased
        output perturbation's disjoint chunks.
    sample_rate : float
        Batch size over ``n_samples``.
    batch_size : int
        Fixed (or expected, for Poisson) batch size that sums are divided by.
    neighboring_relation : str
        ``'replace-one'`` or ``'add/remove-one'``.
    accounting : str
        The accountant that certified ``epsilon``: ``'pld'`` or ``'rdp'``
        (dp_accounting), ``'analytic-gaussian'`` for output perturbation's single
        Gaussian release.
    epsilon, delta : float
        Certified privacy of the solver's releases at this multiplier.
    block_noise_multipliers : tuple of float
        Per-block multipliers ``z_b`` (noise std on block ``b``'s sum over its
        sensitivity), filled in by the solver that splits ``z`` among its blocks.
        For the gradient solvers they combine as ``z = (sum_b z_b^-2)^-1/2``.
        Output perturbation has one sensitivity for both blocks together, so it
        reports ``(z, z)``; the phased one ``(z, 0.0)``, where 0.0 means that the
        dual is not released from the data (it releases a data-free ``v``). Empty
        for a solver that does not split (NISPP).
    n_compositions : int
        How many of the ``n_steps`` releases one example can affect, i.e. how many
        times the accountant composed the step's event (``n_steps``; by parallel
        composition 1 for disjoint batches and the number of epochs touched for
        shuffled epochs).
    noise_ratios : tuple of float
        The releases cycle through these factors on ``noise_multiplier``: release
        ``i`` has multiplier ``noise_ratios[i % k] * noise_multiplier`` (and the
        blocks' multipliers scale alike). ``(1.0,)``: every release alike. NSEG's
        ``(r, 1.0)`` puts ``r`` times the noise on its extrapolation releases.
    composed_with : tuple of str
        The other releases (the fit's counts, releases made before it) whose
        composition with this run ``epsilon`` certifies, by name
        (:func:`~skdpminimax.privacy.composition.describe_events`); ``()``: the run
        alone.
    pld_interval : float
        The PLD accountant's discretisation interval at which ``epsilon`` was
        certified (``certified_epsilon(..., pld_interval=...)`` reproduces it); ``0.0``
        when the PLD did not certify.
    """

    noise_multiplier: float
    n_steps: int
    sampler: str
    sample_rate: float
    batch_size: int
    neighboring_relation: str
    accounting: str
    epsilon: float
    delta: float
    block_noise_multipliers: tuple = ()
    n_compositions: int = 0
    noise_ratios: tuple = (1.0,)
    composed_with: tuple = ()
    pld_interval: float = 0.0

    def to_dict(self):
        """Return the fields as a ``dict`` (``dataclasses.asdict``)."""
        return asdict(self)


def _pld_interval(epsilon):
    # Discretisation error of the PLD is ~ the interval; keep it well below epsilon.
    # Above epsilon = 10 it grows with epsilon (relative precision 1e-4): a fixed 1e-3
    # makes the PMFs of the tiny multipliers of huge budgets very long and slow.
    return float(np.clip(epsilon / 1000.0, 1e-4, 1e-3) * max(1.0, epsilon / 10.0))


def _pld_fine_interval(epsilon):
    """The interval of the calibration's second, finer search. Over thousands of
    compositions the pessimistic rounding of ``_pld_interval``'s 1e-3 of epsilon (at
    epsilon <= 1) adds up: at epsilon = 0.1 to 1 (14,062 Poisson steps at rate
    64 / 60,000) the coarse grid certifies only a multiplier 0.8-1.5% above the finer
    grid's. So there the fine grid has a relative precision of 1e-4 (what
    ``_pld_interval`` has from epsilon = 10 on), not below 1e-5; elsewhere (epsilon > 1,
    where the coarse grid lost at most 0.1%) it is the coarse grid. It is the coarse
    grid below epsilon = 0.01 too: runs certified there are very long or very noisy,
    and a tenfold grid on them asked for arrays of 90 GB (a test's run at epsilon =
    5e-5)."""
    coarse = _pld_interval(epsilon)
    if coarse < 1e-3 * epsilon or epsilon < 0.01:
        return coarse
    return float(max(1e-5, epsilon / 1e4))


def _check_noise_ratios(noise_ratios, n_steps):
    ratios = tuple(float(r) for r in noise_ratios)
    if not ratios or not all(math.isfinite(r) and r > 0 for r in ratios):
        raise ValueError(f"noise_ratios must be finite and > 0, got {noise_ratios}.")
    if int(n_steps) % len(ratios):
        raise ValueError(f"n_steps={n_steps} is not a multiple of len(noise_ratios)="
                         f"{len(ratios)}.")
    return ratios


def certified_epsilon(sampler, noise_multiplier, n_steps, delta, accounting="pld",
                      pld_interval=1e-4, noise_ratios=(1.0,), preceding=()):
    """Epsilon at ``delta`` of ``n_steps`` sampled Gaussian steps of joint multiplier ``z``.

    Parameters
    ----------
    sampler : sampler from :mod:`skdpminimax.privacy.samplers`
        Fixes the sampling scheme and neighbouring relation the accountant assumes.
    noise_multiplier : float
        Joint multiplier ``z`` of one step (all blocks, whitened).
    n_steps : int
        Number of steps (each releases every block once, on the same batch).
    delta : float
        The delta at which epsilon is certified.
    accounting : {'pld', 'rdp'}, default='pld'
        The accountant; one the sampler admits (``sampler.accountings``), else a
        ``ValueError``.
    pld_interval : float, default=1e-4
        PLD discretisation interval (pessimistic rounding keeps the result an upper bound).
    noise_ratios : tuple of float, default=(1.0,)
        Release ``i`` has multiplier ``noise_ratios[i % k] * z`` (``k`` the length;
        ``n_steps`` must be a multiple of it), each on its own batch.
    preceding : tuple of DpEvent, default=()
        Other releases composed with the run (PLD and add/remove-one only; see
        :mod:`skdpminimax.privacy.composition`): the epsilon is their composition's.

    Returns
    -------
    float
        The certified epsilon (``inf`` without noise, or if none is certified).
    """
    return _certify(sampler, noise_multiplier, n_steps, delta, accounting, pld_interval,
                    noise_ratios, tuple(preceding))[0]


def _check_preceding(sampler, accounting, preceding):
    """Refuse releases to compose with where the accountant cannot compose them."""
    if preceding and (accounting != "pld" or sampler.neighboring_relation != "add/remove-one"):
        raise ValueError(
            "Releases composed with a run need the PLD accountant and add/remove-one "
            f"neighbours; this run is {sampler.neighboring_relation} with {accounting!r}.")


def _quiet_overflow():
    """At a huge epsilon (1e3 and more) dp_accounting overflows in numpy: the discrete
    Laplace's tail ``exp(a)``, its epsilon search dividing by a tiny mass (pld_pmf).
    The results are inf, read as more loss (on the safe side); its warnings, dozens a
    fit, are muted."""
    return np.errstate(over="ignore", divide="ignore", invalid="ignore")


def _certify(sampler, noise_multiplier, n_steps, delta, accounting, pld_interval,
             noise_ratios, preceding=()):
    """``(epsilon, accounting used)``: as :func:`certified_epsilon`, except that below
    ``_PLD_DELTA_FLOOR`` the PLD can certify nothing (``inf``: ``delta`` below the tail
    mass it truncates) at some multipliers and not at others, so there the smaller of
    the PLD and RDP bounds is taken where the sampler admits both: each is an upper
    bound on the run's epsilon, so their minimum is one, and it decreases with the noise
    as each does (the search for the multiplier needs that). Not with ``preceding``
    (the RDP accountant has no discrete Laplace): the PLD alone certifies there."""
    epsilon = _certify_with(sampler, noise_multiplier, n_steps, delta, accounting,
                            pld_interval, noise_ratios, preceding)
    if (accounting == "pld" and delta < _PLD_DELTA_FLOOR and noise_multiplier > 0
            and "rdp" in sampler.accountings and not preceding):
        by_rdp = _certify_with(sampler, noise_multiplier, n_steps, delta, "rdp",
                               pld_interval, noise_ratios)
        if by_rdp < epsilon:
            return by_rdp, "rdp"
    return epsilon, accounting


def _certify_with(sampler, noise_multiplier, n_steps, delta, accounting, pld_interval,
                  noise_ratios, preceding=()):
    ratios = _check_noise_ratios(noise_ratios, n_steps)
    _check_preceding(sampler, accounting, preceding)
    if noise_multiplier <= 0:
        return math.inf
    if accounting not in sampler.accountings:
        raise ValueError(
            f"{accounting!r} accounting is not available for the {sampler.name!r} sampler; "
            f"use one of {sampler.accountings}."
        )
    event = _composed_event(sampler, noise_multiplier, n_steps, ratios)
    if preceding:
        event = dp_accounting.ComposedDpEvent([*preceding, event])
    # dp_accounting logs (through absl) every low RDP order it drops as
    # non-convergent; dropping an order only loosens the bound, so mute that noise.
    logger = logging.getLogger("absl")
    level = logger.level
    logger.setLevel(logging.ERROR)
    try:
        if accounting == "pld":
            accountant = pld.PLDAccountant(value_discretization_interval=pld_interval)
        else:
            relation = (
                dp_accounting.NeighboringRelation.REPLACE_ONE
                if sampler.name == "without_replacement"
                else dp_accounting.NeighboringRelation.ADD_OR_REMOVE_ONE
            )
            orders = _rdp_orders(sampler, noise_multiplier, n_steps, delta, ratios)
            accountant = rdp.RdpAccountant(list(orders), neighboring_relation=relation)
        with _quiet_overflow():
            accountant.compose(event)
            return float(accountant.get_epsilon(delta))
    except ValueError as exc:
        # dp-accounting 0.5.0 (on Python 3.10) builds the PLD of a tiny multiplier at a
        # huge epsilon (1000) with rounding that breaks its own monotonicity check: no
        # bound at this z, read as too little noise (the search then tries more).
        if "non-increasing order" in str(exc):
            return math.inf
        raise
    finally:
        logger.setLevel(level)


def releases_epsilon(events, delta, epsilon):
    """Epsilon at ``delta`` of ``events`` (add/remove-one) alone, by the PLD at the
    discretisation of a calibration for ``epsilon``: what releases to be composed with
    a run use of that budget before the run adds any."""
    accountant = pld.PLDAccountant(value_discretization_interval=_pld_interval(epsilon))
    with _quiet_overflow():
        accountant.compose(dp_accounting.ComposedDpEvent(list(events)))
        return float(accountant.get_epsilon(delta))


def composable(events, epsilon):
    """Whether ``events`` can be composed in a calibration for ``epsilon``: a Gaussian
    whose multiplier is below the noise search's floor (``_MAX_PLD_POINTS``) has a
    PLD grid too large for memory (a scaler released at a huge epsilon)."""
    floor = _smallest_multiplier("pld", _pld_interval(epsilon))
    return all(e.noise_multiplier >= floor for e in events
               if isinstance(e, dp_accounting.GaussianDpEvent))


def check_certifiable(epsilon, delta):
    """Refuse, from ``(epsilon, delta)`` alone and before anything is spent, a budget
    the accountants are not trusted to certify: with ``delta`` below
    ``_PLD_DELTA_FLOOR`` the PLD may certify nothing, so the RDP bound must be able to:
    its value at infinite noise, ``min_a log(1 - 1/a) - log(delta a) / (a - 1)`` over
    the accountant's orders, must be below ``epsilon``. Conservative: the PLD alone
    may certify some such budgets at enormous noise. For the subsampled-Gaussian
    accountants only (the analytic Gaussian mechanism has no such floor)."""
    if not math.isfinite(epsilon) or delta >= _PLD_DELTA_FLOOR:
        return
    floor = min(math.log1p(-1.0 / a) - math.log(delta * a) / (a - 1.0)
                for a in _RDP_ORDERS if a > 1.01)
    if floor >= epsilon:
        raise ValueError(
            f"delta={delta:g} is too small for epsilon={epsilon:g} (the share the noise is "
            "calibrated on): no noise multiplier "
            f"certifies it (the RDP accountant's bound with infinite noise is {floor:.3g}). "
            "Use a larger delta (1e-6 to 1e-10 is usual) or a larger epsilon.")


def _composed_event(sampler, noise_multiplier, n_steps, ratios):
    """The run as one ``DpEvent``: what an example can affect, composed."""
    # An example affects at most releases_per_example(n_steps) releases (n_steps,
    # or by parallel composition 1 for disjoint batches and one per epoch for
    # shuffled epochs): compose that many. When
    # it can affect every release, each kind is composed as often as it occurs;
    # otherwise it is charged as if all it affects were the least noisy kind.
    k = sampler.releases_per_example(n_steps)
    if len(ratios) > 1 and k == n_steps:
        per_kind = n_steps // len(ratios)
        return dp_accounting.ComposedDpEvent([
            dp_accounting.SelfComposedDpEvent(sampler.dp_event(r * noise_multiplier), per_kind)
            for r in ratios
        ])
    return dp_accounting.SelfComposedDpEvent(sampler.dp_event(min(ratios) * noise_multiplier), k)


# Orders up to which dp_accounting's sampling-without-replacement RDP bound keeps
# falling with the noise (see _rdp_orders).
_WOR_RELIABLE_ORDER = 256
_POISSON_FIRST_ORDERS_UP_TO = 4096


def _rdp_orders(sampler, noise_multiplier, n_steps, delta, ratios):
    """RDP orders to evaluate. Any set of orders gives a valid bound (the accountant
    takes the best of them); fewer can only loosen it.

    The without-replacement bound costs ~order^2 operations per order in
    ``dp_accounting`` (seconds per call with the orders up to 4096), so it is
    evaluated within a factor 8 of the best order of the same run under Poisson
    sampling at the same rate (closed forms, fast), where its own best order usually
    lies, and, where that window reaches beyond ``_WOR_RELIABLE_ORDER``, at every
    order up to it (``benchmarks/wor_rdp_orders.py`` checks the bound against every
    order's). Above about that order
    ``dp_accounting``'s without-replacement bound stops falling with the noise (it
    levels off near ``q`` per step: 0.107 at ``q = 64 / 569`` for any sigma from 30 on,
    against four times the Poisson bound below it), so where much noise or a tiny
    delta puts the Poisson optimum high, the window alone held only useless orders:
    epsilon rose with the noise and no multiplier certified epsilon = 0.05 on 569 rows.
    """
    if sampler.name != "without_replacement":
        return _RDP_ORDERS
    best = _poisson_best_order(sampler, noise_multiplier, n_steps, delta, ratios)
    window = {a for a in _RDP_ORDERS if best / 8 <= a <= best * 8}
    if best * 8 > _WOR_RELIABLE_ORDER:  # the window reaches where the bound levels off
        window |= {a for a in _RDP_ORDERS if a <= _WOR_RELIABLE_ORDER}
    return tuple(sorted(window))


def _poisson_best_order(sampler, noise_multiplier, n_steps, delta, ratios):
    """The best RDP order of the run under Poisson sampling at ``sampler``'s rate. The
    orders above ``_POISSON_FIRST_ORDERS_UP_TO`` cost most of the evaluation (a term
    per unit of order), so they are evaluated only where the best of the others is
    the largest of them."""
    proxy = make_sampler("poisson", sampler.n_samples, sampler.batch_size)
    event = _composed_event(proxy, noise_multiplier, n_steps, ratios)
    first = [a for a in _RDP_ORDERS if a <= _POISSON_FIRST_ORDERS_UP_TO]
    for orders in (first, list(_RDP_ORDERS)):
        accountant = rdp.RdpAccountant(orders)
        accountant.compose(event)
        _, best = accountant.get_epsilon_and_optimal_order(delta)
        if best < orders[-1]:
            break
    return best


def _gdp_guess(sampler, n_steps, epsilon, delta):
    """Where to start looking: the multiplier at which the Gaussian-DP central limit
    approximation of the composition (Dong, Roth & Su 2022, Thm. 3.1 / Cor. 5.4) meets
    the target. Only a starting point; the accountant decides."""
    k = sampler.releases_per_example(n_steps)
    q = sampler.sample_rate if k > 1 and sampler.subsampled else 1.0

    hi = 1.0
    while gdp_delta(epsilon, hi) < delta and hi < 1e3:
        hi *= 2.0
    if gdp_delta(epsilon, hi) < delta:
        return 1.0
    mu = optimize.brentq(lambda m: gdp_delta(epsilon, m) - delta, 1e-12, hi)
    if q >= 1.0:
        return math.sqrt(k) / mu  # k Gaussian releases: exactly sqrt(k)/z-GDP
    return 1.0 / math.sqrt(math.log1p(mu * mu / (q * q * k)))


# The PLD of a Gaussian of multiplier z spans about 1 / z^2 + 16 / z in privacy loss;
# the accountant stores that span in steps of its interval. Below the z at which that
# is this many points (a few seconds an evaluation) the search does not look: three
# Poisson steps at rate 1e-3 and epsilon = 2 went down to z = 7e-4, 1e9 points, 8 GB
# and a MemoryError (after the spend where the size is released). It returns that z
# if it certifies: a noise too small to matter, where any smaller z would do as well.
_MAX_PLD_POINTS = 1_000_000


def _smallest_multiplier(accounting, interval):
    """The smallest z the noise search evaluates (see ``_MAX_PLD_POINTS``)."""
    if accounting != "pld":
        return 1e-6
    u = -8.0 + math.sqrt(64.0 + _MAX_PLD_POINTS * interval)  # u = 1 / z
    return max(1e-6, 1.0 / u)


def _search_multiplier(epsilon_of, epsilon, guess, smallest=1e-6, factor=1.1):
    """Smallest z (within ``_REL_TOL``) with ``epsilon_of(z) <= epsilon``; returns that z.

    ``epsilon_of`` is decreasing. A bracket is grown geometrically around ``guess``,
    then shrunk by regula falsi on ``log epsilon`` against ``log z`` (nearly linear,
    so a few evaluations suffice) with the Illinois rule, steps kept at least a
    fraction of the tolerance inside the bracket, and a bisection whenever a step did
    not halve the bracket (so never slower than bisection by more than 2x). The
    returned end always certifies. No z below ``smallest`` is evaluated: if
    ``smallest`` certifies, it is returned. ``factor``: the bracket's first step
    from ``guess`` (a refinement that starts close takes a small one).
    """
    def excess(z):  # > 0: too little noise
        e = epsilon_of(z)
        return math.inf if e == math.inf else math.log(max(e, 1e-300) / epsilon)

    z = max(float(guess), smallest)
    f = excess(z)
    if f <= 0:
        hi, f_hi = z, f
        while True:
            if z <= smallest:
                return hi
            z = max(z / factor, smallest)
            if z < 1e-6:
                return hi
            f = excess(z)
            if f > 0:
                lo, f_lo = z, f
                break
            hi, f_hi, factor = z, f, factor * factor
    else:
        lo, f_lo = z, f
        while True:
            z *= factor
            if z > 1e7:
                floor = epsilon * math.exp(f_lo) if math.isfinite(f_lo) else math.inf
                raise UncertifiableBudgetError(
                    "No noise multiplier up to 1e7 meets the target epsilon "
                    f"(the accountant's bound there: epsilon = {floor:.3g}).")
            f = excess(z)
            if f <= 0:
                hi, f_hi = z, f
                break
            lo, f_lo, factor = z, f, factor * factor

    min_step = 0.45 * math.log1p(_REL_TOL)
    kept = None  # which end survived the last step (Illinois: halve its value if again)
    width = math.inf
    while hi / lo > 1.0 + _REL_TOL:
        u_lo, u_hi = math.log(lo), math.log(hi)
        slow = u_hi - u_lo > 0.5 * width  # the last interpolation did not halve the bracket
        width = u_hi - u_lo
        if math.isfinite(f_lo) and f_lo > f_hi and not slow:
            u = u_hi - f_hi * (u_hi - u_lo) / (f_hi - f_lo)
        else:
            u = 0.5 * (u_lo + u_hi)  # bisection: guaranteed progress
        step = min(min_step, 0.5 * (u_hi - u_lo))
        z = math.exp(min(max(u, u_lo + step), u_hi - step))
        f = excess(z)
        if f <= 0:
            hi, f_hi = z, f
            if kept == "lo":
                f_lo *= 0.5
            kept = "lo"
        else:
            lo, f_lo = z, f
            if kept == "hi":
                f_hi *= 0.5
            kept = "hi"
    return hi


@functools.lru_cache(maxsize=256)
def _calibrate_cached(sampler_key, n_steps, epsilon, delta, accounting, noise_ratios=(1.0,),
                      preceding=()):
    """``(z, certified epsilon at z, accounting, PLD interval)`` for a sampler described
    by its key: a search on the coarse grid of ``_pld_interval``, then one from its
    answer on a finer grid (``_refine_on_finer_grid``)."""
    name, n, m = sampler_key
    sampler = make_sampler(name, n, m)
    interval = _pld_interval(epsilon)

    # Memoised: the search has already evaluated the z it returns, and each
    # accountant call composes the whole run.
    @functools.lru_cache(maxsize=None)
    def certify(z):
        return _certify(sampler, z, n_steps, delta, accounting, interval, noise_ratios,
                        preceding)

    try:
        z = _search_multiplier(lambda z: certify(z)[0], epsilon,
                               _gdp_guess(sampler, n_steps, epsilon, delta),
                               _smallest_multiplier(accounting, interval))
    except ValueError as exc:  # say for which budget and run
        hint = ("; dp_accounting's bound for sampling without replacement levels off at "
                "small epsilon: the default Poisson sampler (add/remove-one, PLD) or full "
                "batches (batch_size=None) certify smaller ones" if name == "without_replacement"
                else "")
        raise type(exc)(f"{exc} (epsilon={epsilon:g}, delta={delta:g}, {n_steps} releases, "
                        f"{name} sampling; a larger delta or epsilon, or fewer steps, "
                        f"helps{hint})") from exc
    certified, used = certify(z)
    if used != "pld":
        return z, certified, used, 0.0
    z, certified, interval = _refine_on_finer_grid(
        sampler, n_steps, epsilon, delta, noise_ratios, preceding, z, interval,
        lambda zz: certify(zz)[0])
    return z, certified, used, interval


def _predicted_fine_epsilon(coarse_epsilon, half_epsilon, interval, fine):
    """The epsilon the PLD would certify on the grid ``fine``, from the ones it certifies
    on ``interval`` and on half of it: an excess ``c interval^2`` over the exact
    epsilon (connect-the-dots) gives ``coarse - (coarse - half) (1 - (fine /
    interval)^2) / (1 - 1/4)``."""
    return (coarse_epsilon
            - (coarse_epsilon - half_epsilon) * (1.0 - (fine / interval) ** 2) / 0.75)


def _refine_on_finer_grid(sampler, n_steps, epsilon, delta, noise_ratios, preceding, z,
                          interval, coarse_epsilon_of):
    """``(z, certified epsilon, interval)``: the coarse search's ``z`` lowered where the
    PLD at ``_pld_fine_interval`` certifies less noise (``coarse_epsilon_of``: the
    coarse grid's certified epsilon, memoised, so ``z``'s costs nothing). Any interval
    gives an upper bound (pessimistic rounding), so the smaller multiplier is kept.

    The fine grid costs ten times the coarse one's points, so it is not evaluated to
    learn whether it would help: the epsilon at ``z`` on half the coarse interval
    predicts it, since the connect-the-dots PLD's excess over the exact epsilon grows
    with the square of the interval (:func:`_predicted_fine_epsilon`; measured within
    3e-4 relative from 130 to 14,062 steps, epsilon 0.05 to 1,
    ``benchmarks/calibration_grid.py``). Only where the predicted slack exceeds twice
    the search's tolerance (in practice epsilon <= 1 over thousands of
    steps) is the fine grid evaluated, first at the multiplier the prediction points
    to. A prediction only chooses where to look: every multiplier returned is
    certified on the grid recorded with it."""
    certified = coarse_epsilon_of(z)
    fine = _pld_fine_interval(epsilon)
    if fine >= interval or z < _smallest_multiplier("pld", fine):
        return z, certified, interval

    @functools.lru_cache(maxsize=None)
    def certify(zz, grid=fine):
        return _certify_with(sampler, zz, n_steps, delta, "pld", grid, noise_ratios,
                             preceding)

    def target_from(at_z):
        """Where the coarse grid's local slope of log epsilon in log z (one cheap
        evaluation) puts the target, from ``at_z``, the fine grid's epsilon at ``z``."""
        below = coarse_epsilon_of(0.99 * z)
        slope = (math.log(below / certified) / math.log(0.99)
                 if 0.0 < below < math.inf and certified > 0.0 else 0.0)
        return z * (epsilon / at_z) ** (1.0 / slope) if 0.0 > slope > -1e3 else z

    try:  # a refinement never fails a calibration: on any error the first answer stands
        predicted = _predicted_fine_epsilon(certified, certify(z, interval / 2.0),
                                            interval, fine)
        if not 0.0 < predicted < epsilon * (1.0 - 2.0 * _REL_TOL):
            return z, certified, interval  # no slack worth a fine evaluation
        # The predicted target (plus the search's tolerance), if the fine grid
        # certifies it: one fine evaluation, a second at epsilon = 1 over 14,062 steps.
        refined = target_from(predicted) * (1.0 + _REL_TOL)
        if refined < z and certify(refined) <= epsilon:
            return refined, certify(refined), fine
        # The prediction missed: search from the fine grid's own epsilon at z.
        at_z = certify(z)
        if not 0.0 < at_z <= certified:  # not tighter here (rounding)
            return z, certified, interval
        if at_z > epsilon * (1.0 - 2.0 * _REL_TOL):
            return z, at_z, fine
        guess = target_from(at_z)
        refined = _search_multiplier(certify, epsilon, guess,
                                     _smallest_multiplier("pld", fine), factor=1.01)
        if refined < z and certify(refined) <= epsilon:
            return refined, certify(refined), fine
        return z, at_z, fine
    except (ValueError, ArithmeticError, MemoryError):
        return z, certified, interval


def calibrate_noise_multiplier(sampler, n_steps, epsilon, delta, accounting="pld",
                               noise_ratios=(1.0,), preceding=()):
    """Smallest joint noise multiplier whose certified epsilon is ``<= epsilon``.

    Parameters
    ----------
    sampler : sampler from :mod:`skdpminimax.privacy.samplers`
        Fixes the sampling scheme and neighbouring relation the accountant assumes.
    n_steps : int
        Number of steps (each releases every block once, on the same batch).
    epsilon, delta : float
        Target budget. ``epsilon=np.inf`` gives multiplier 0 (no noise).
    accounting : {'pld', 'rdp'}, default='pld'
        PLD is the tighter; samplers that only admit RDP (without replacement) use it.
        Below ``delta = 1e-12`` (where the PLD's truncated tail mass can exceed delta, and
        at about 1e-15 it certifies nothing) the smaller of the PLD and RDP bounds
        certifies; the returned calibration's ``accounting`` names the one that did.
    noise_ratios : tuple of float, default=(1.0,)
        Release ``i`` has multiplier ``noise_ratios[i % k] * z`` (see
        :func:`certified_epsilon`); the returned ``z`` is the multiplier of ratio 1.
    preceding : tuple of DpEvent, default=()
        Other releases that ``(epsilon, delta)`` covers with the run (see
        :mod:`skdpminimax.privacy.composition`): ``z`` is the smallest at which their
        composition with the run is ``(epsilon, delta)``-DP. PLD and add/remove-one
        only.

    Returns
    -------
    NoiseCalibration
        The multiplier and the accounting record of the run.
    """
    # The estimators pass a checked PrivacyBudget; this is public API too.
    if isinstance(n_steps, bool) or int(n_steps) != n_steps or n_steps < 1:
        raise ValueError(f"n_steps must be an integer >= 1, got {n_steps!r}.")
    n_steps = int(n_steps)
    if not (epsilon > 0):  # NaN too
        raise ValueError(f"epsilon must be > 0 (np.inf: no noise), got {epsilon!r}.")
    if not (0 < delta < 1):
        raise ValueError(f"delta must be in (0, 1), got {delta!r}.")
    noise_ratios = _check_noise_ratios(noise_ratios, n_steps)
    sampler.releases_per_example(n_steps)  # raises if the sampler cannot serve n_steps
    if accounting not in sampler.accountings:
        accounting = sampler.accountings[0]
    preceding = tuple(preceding)
    _check_preceding(sampler, accounting, preceding)
    if math.isinf(epsilon):
        z, certified, interval = 0.0, math.inf, 0.0
    else:
        z, certified, accounting, interval = _calibrate_cached(
            sampler.key(), n_steps, float(epsilon), float(delta), accounting, noise_ratios,
            preceding)
        if certified > epsilon:  # cannot happen by construction; never release if it does
            raise RuntimeError("Noise calibration failed to certify the target epsilon.")
    return issued(NoiseCalibration(
        noise_multiplier=float(z),
        n_steps=n_steps,
        sampler=sampler.name,
        sample_rate=float(sampler.sample_rate),
        batch_size=int(sampler.batch_size),
        neighboring_relation=sampler.neighboring_relation,
        accounting=accounting,
        epsilon=float(certified),
        delta=float(delta),
        n_compositions=sampler.releases_per_example(n_steps),
        noise_ratios=noise_ratios,
        composed_with=describe_events(preceding),
        pld_interval=float(interval),
    ))


# The accounting fields of records this process certified (calibrate_noise_multiplier):
# a solver's record that matches one needs no recomputation (record_is_issued; output
# perturbation's Gaussian records are not recomputed at all). Bounded: a record that
# fell out is recomputed.
_ISSUED = collections.OrderedDict()
_ISSUED_MAX = 4096
_ISSUED_LOCK = threading.Lock()


def _accounting_key(calibration):
    """The fields that decide what a record certifies (not the block split, which
    solvers fill in afterwards and the run log checks against the joint multiplier)."""
    c = calibration
    return (float(c.noise_multiplier), int(c.n_steps), str(c.sampler), float(c.sample_rate),
            int(c.batch_size), str(c.neighboring_relation), str(c.accounting),
            float(c.epsilon), float(c.delta), int(c.n_compositions),
            tuple(float(r) for r in c.noise_ratios), tuple(c.composed_with),
            float(c.pld_interval))


def issued(calibration):
    """Mark ``calibration`` as certified by this library; returns it."""
    key = _accounting_key(calibration)
    with _ISSUED_LOCK:
        _ISSUED[key] = True
        _ISSUED.move_to_end(key)
        while len(_ISSUED) > _ISSUED_MAX:
            _ISSUED.popitem(last=False)
    return calibration


def record_is_issued(calibration):
    """Whether a record's accounting fields are those of one this library certified."""
    try:
        key = _accounting_key(calibration)
    except (AttributeError, TypeError, ValueError):
        return False
    with _ISSUED_LOCK:
        return key in _ISSUED


def split_noise_multiplier(noise_multiplier, shares):
    """Per-block multipliers ``z_b = z / sqrt(share_b)`` for a joint multiplier ``z``.

    With ``sum(shares) == 1`` the blocks' whitened releases together have multiplier
    exactly ``z``: ``sum_b z_b^-2 = z^-2``. A larger share means less noise on that
    block and more on the others.
    """
    shares = np.asarray(shares, dtype=float)
    if np.any(shares <= 0) or not math.isclose(shares.sum(), 1.0, rel_tol=1e-9):
        raise ValueError(f"Noise shares must be positive and sum to 1, got {shares.tolist()}.")
    return tuple(float(noise_multiplier / math.sqrt(s)) for s in shares)


def analytic_gaussian_sigma(epsilon, delta, sensitivity):
    """Noise std of the analytic Gaussian mechanism (Balle & Wang 2018).

    The smallest std at which one Gaussian release of L2 sensitivity
    ``sensitivity`` is (epsilon, delta)-DP, valid for any ``epsilon > 0`` (unlike
    the classical ``sqrt(2 log(1.25/delta))`` bound, which needs ``epsilon < 1``).
    Computed in log space (:func:`~skdpminimax.privacy.gdp.gaussian_sigma`) and
    checked to certify: diffprivlib's ``GaussianAnalytic`` under-noises at large
    epsilon and small delta (e.g. epsilon = 25, delta = 1e-6: sigma 0.249 where 0.257
    is needed, 3.4 times the delta).
    """
    return gaussian_sigma(epsilon, delta, sensitivity)
