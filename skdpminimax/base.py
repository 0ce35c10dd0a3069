"""The one fit pipeline every private minimax estimator shares.

``fit`` runs, in this order:

1. validate parameters and data (clear errors; nothing spent);
2. resolve the solver and check, on a provisional objective, that it can be
   calibrated for this budget (still nothing spent);
3. spend the whole ``(epsilon, delta)`` on the accountant: before any release;
4. release the size the solver plans on and the data-dependent constants the
   objective needs (class ratio, group sizes) with their declared slices of the
   budget, or take them as public;
5. build the objective, hand it to the solver with the rest of the budget;
6. map the private solution to fitted attributes.

Subclasses implement the task-specific steps (:meth:`_validate_targets`,
:meth:`_public_constants`, :meth:`_private_constants`, :meth:`_make_objective`,
:meth:`_set_fitted`). A fit interrupted after step 3 has spent its budget: the
accountant is charged before data are touched, as a ledger must be. A failed fit
leaves the estimator exactly as it was (a previous fit stays in place); a
successful one replaces every fitted attribute of the previous fit. Steps 1 and 2
run alone as a check (:meth:`DPMinimaxEstimator._check_fit`: nothing spent, nothing
changed), so that a caller charging fits in advance (:mod:`skdpminimax.search`)
refuses bad input before its charge with the fit's own checks.

**The number of examples.** A solver plans its run (sampling rate, number of
steps) from a size. Under replace-one neighbours (full batch, sampling without
replacement, disjoint batches, output perturbation) both data sets have the same
size, so the data's own ``n_samples`` is safe. Under add/remove-one (Poisson
sampling, the default of ``NoisySGDA``) the size itself tells a neighbour from the
other, so every public quantity is planned on a *public size*: a private count of
the rows (two-sided geometric mechanism, sensitivity 1, ``n_samples_budget`` times
the epsilon left after the constants' share, pure DP), a public size the user declares
(``n_samples_budget=N``), or ``len(X)`` with ``n_samples_budget="public"`` (which
warns: the plan then reveals the size). The class ratio and group counts are then
bounded by, and divided by, that size. A released size at most the batch size gives
Poisson sampling at rate 1 (still add/remove-one). Before the spend the solver's
settings are checked on a fixed size (``_PROBE_SIZE``, without a noise search), so
that whether a fit is refused does not depend on the true size either; after the
solve, the estimator checks that the run was planned on the released size (a custom
solver must plan on ``data.planning_size``, see
:class:`~skdpminimax.objectives.SaddleData`).

Sparse ``X`` (any SciPy format, used as CSR) is accepted by the built-in
estimators, whose objectives score and clip rows without densifying them (a sparse
``X`` whose dense copy is small, at most ``2**24`` entries, is fitted dense: the same
result, faster);
:class:`~skdpminimax.DPSaddleEstimator` refuses it (user objectives see dense arrays).
Values of any finite size are accepted: rows are clipped
to ``data_norm`` with an overflow-safe norm; a row-norm bound (public or taken
from the data) above ``MAX_DATA_NORM`` is refused before anything is spent, since the
objectives' scores and squared losses would overflow.
"""

import contextlib
import math
import types
import warnings
from contextvars import ContextVar
from numbers import Integral, Real

import numpy as np
import scipy.sparse as sp
from diffprivlib.accountant import BudgetAccountant
from diffprivlib.utils import PrivacyLeakWarning
from sklearn.base import BaseEstimator
from sklearn.utils._param_validation import HasMethods, Interval, Options, StrOptions
from sklearn.utils.validation import _num_samples, check_is_fitted

from skdpminimax._compat import validate_data
from skdpminimax.objectives.base import (
    SaddleData,
    check_on_the_rows,
    check_shapes_on_stand_in,
)
from skdpminimax.privacy.budget import MAX_FINITE_EPSILON, PrivacyBudget, budget_entry
from skdpminimax.privacy.calibration import (
    _PLD_DELTA_FLOOR,
    UncertifiableBudgetError,
    check_certifiable,
    composable,
    releases_epsilon,
)
from skdpminimax.privacy.composition import Release, count_event, describe_events
from skdpminimax.privacy.ledger import (
    LedgerGuardMixin,
    check_budget,
    has_fitted_attributes,
    pending_releases,
    spend,
)
from skdpminimax.privacy.mechanisms import clip_rows, private_size, row_norms
from skdpminimax.solvers import resolve_solver
from skdpminimax.solvers.run_log import (
    check_record_certifies,
    check_run_matches_record,
    oracle_log,
)

__all__ = ["DPMinimaxEstimator", "resolve_rng", "shared_parameter_docs", "warn_if_replayable"]

# Largest row-norm bound the objectives' float64 arithmetic handles (scores and their
# squares stay finite); larger data must be rescaled.
MAX_DATA_NORM = 1e150


# Docstring entries every estimator has in the same words (one text each, here).
_SHARED_PARAMETER_DOCS = """    random_state : int, Generator, RandomState or None, default=None
        Seeds the single ``numpy.random.Generator`` used by the fit. The privacy
        guarantee is over secret, fresh randomness: leave it ``None`` for a release.
        A fixed seed makes fits reproducible (for experiments) and gives every fit
        with it the same noise, so such fits' budgets do not compose. The fitted
        estimator keeps this parameter (``get_params()``, pickles): whoever knows the
        seed, or holds a ``Generator`` / ``RandomState`` passed here (its state
        replays the draws), can rerun the fit on candidate data sets and see which
        reproduces the model exactly. A private fit given a ``Generator`` or
        ``RandomState`` therefore warns (``PrivacyLeakWarning``); an int does not (it
        is how experiments, the examples and the tests are made reproducible), but
        the same caveat holds: leave ``None`` for a model you release.
    n_samples_budget : float in (0, 1), int >= 1 or "public", default=0.05
        Under add/remove-one neighbours (Poisson sampling, the default) the number
        of examples is private, and the solver plans its sampling rate and number of
        steps on a released size: a private count with ``n_samples_budget`` times
        the epsilon left after the class ratio's or group counts' share (its error is
        about ``1 / (n_samples_budget * epsilon)`` rows: at the default 5% and
        epsilon = 1 about 20, a few percent of
        a few hundred rows; the earlier default, 1%, left small data sets planning on
        sizes far off, docs/benchmarks.md). An int is a public size to plan on (for
        example a published data set's size), the same whichever neighbour is fitted:
        nothing is spent and the plan does not depend on the data (a fit warns when
        ``len(X)`` is more than ten times as far from it, and refuses before the spend
        at a thousand times: a typo, whose plan would run for hours). ``"public"`` plans
        on ``len(X)``, which the released plan (``planning_size_``, ``n_iter_``)
        then reveals: the add/remove-one guarantee holds only among data sets of that
        size, so such a fit warns (``PrivacyLeakWarning``). Unused under replace-one
        solvers, where both neighbours have the same size.
    composition : {"pld", "basic"}, default="pld"
        How the fit's own releases share its ``(epsilon, delta)``. ``"pld"``: the
        class ratio or group counts (pure-DP counts) and the ``composed_with``
        releases are composed with the training in one privacy-loss distribution, and
        the training noise is calibrated so that the whole is ``(epsilon, delta)``-DP
        with the released size's share added (the run is planned on that count, so
        it is not in the PLD): a count at ``eps_c`` then costs about ``eps_c^2 / 2``,
        not ``eps_c``, and the training gets nearly all of the rest (13% less noise
        at epsilon = 0.1 with a 5% count and a 10% ``composed_with`` release; the
        privacy model's "One PLD for a fit's releases"). Where the solver's
        accountant is not the PLD under add/remove-one (sampling without replacement,
        full batches, output perturbation, the recursive framework, a delta below
        1e-12), and with ``"basic"``, the shares add up instead (basic composition):
        each release is charged its share and the training calibrated on the rest.
        ``calibration_.composed_with`` names what the training was composed with.
    composed_with : list of Release, "pending" or None, default=None
        Releases already made on the same rows and charged on ``accountant``
        (:class:`~skdpminimax.privacy.Release`, e.g. a fitted
        :class:`~skdpminimax.preprocessing.DPStandardScaler`'s ``release_``, or one
        charged with :func:`~skdpminimax.privacy.spend_release`). ``(epsilon,
        delta)`` is then the total of those releases and this fit: the fit spends
        what is left, ``(epsilon - sum epsilon_i, delta - sum delta_i)`` (the class
        ratio's, group counts' and size's shares are then shares of that), and with
        ``composition="pld"`` its training is calibrated on the composition of the
        releases with its own, which certifies the total (else the shares add). Its
        model alone is ``(epsilon, delta)``-DP in any case. A release is composed
        with one fit only (the ledger refuses a second, before any spend), and only
        by a fit under add/remove-one. ``"pending"``: the releases the calling
        thread charged on the ledger since its last other entry (in a ``Pipeline``,
        the ``DPStandardScaler`` fitted just before, also where folds are fitted in
        threads on one ledger; none on a prepaid ledger, whose
        search charges each fit its whole epsilon); with none, the fit spends
        ``(epsilon, delta)`` as without it.
"""


_PLANNING_SIZE_DOC = """    planning_size_ : int
        The size the solver planned on: ``len(X)``, or under add/remove-one the
        released count (see ``n_samples_budget``).
    privacy_shares_ : dict
        Where ``privacy_spent_`` went, as records with ``epsilon`` and ``delta``
        (``None``: nothing released for that part; the counts are pure, ``delta =
        0``): ``"n_samples"``, the size's count (``n_samples_budget``; ``None`` where
        the size is public or the relation replace-one); ``"constants"``, the class
        ratio's or group counts' release (``None`` where they were given);
        ``"training"``, the budget the solver's noise is calibrated on. Under basic
        composition they add up to ``privacy_spent_``. Where
        ``calibration_.composed_with`` is not empty (``composition="pld"``),
        ``"training"`` is the total less the size's share and certifies the
        composition of those releases with the run in one PLD, so it covers
        ``"constants"`` too. Set from the parameters alone, before the data are read:
        public.
    data_norm_ : float
        The row-norm bound the rows were clipped to: ``data_norm``, or where it was
        left ``None`` the one read off the data (with a ``PrivacyLeakWarning``).
    solver_info_ : dict
        The solver's settings as run, for audit: e.g. ``clip_w``, ``clip_v`` (a list,
        one per dual coordinate, where ``clip_v="auto"`` clips per group),
        ``step_size`` and ``dual_step_size`` where ``"auto"`` / ``"scaled"`` resolved
        them (all planned from public quantities); for output perturbation the noise
        (``sigma_w``), ``sensitivity`` and, unphased, the accuracy ``target``; phased,
        ``sigma_w`` is the last phase's (the noise on the released vector) and
        ``sigma_w_first_phase`` the first's, the largest, which moves every later
        phase's centre. Scalars only: a wrapping solver's (``"recursive"``) base
        settings are not kept.
    n_iter_ : int
        What the solver counts as an iteration, fixed in advance: a step of
        ``"sgda"`` / ``"gda"``; an extragradient pair of ``"nseg"`` (two releases,
        so ``calibration_.n_steps`` is twice it); the base solver's steps over all
        rounds of ``"recursive"``; 1 for ``"output_perturbation"``; phases times
        passes for ``"phased_output_perturbation"``.
"""
_GROUP_LABELS_DOC = """            Discrete labels (strings, integers, integer-valued floats); a continuous
            attribute is refused, and so is a column with more distinct values than half
            the rows (an identifier, or a continuous attribute as strings or dates):
            bin it with public edges first. The label set is treated as public and is
            stored in ``groups_``, so a group that only one row has reveals that row's
            value: merge rare groups first, or name the groups with a dict
            ``group_ratios``.
"""
_SHARED_DOCS = {"    {shared_parameters}\n": _SHARED_PARAMETER_DOCS,
                "    {planning_size_attribute}\n": _PLANNING_SIZE_DOC,
                "            {group_labels}\n": _GROUP_LABELS_DOC}


def shared_parameter_docs(cls):
    """Class decorator: put the shared entries where the class docstring, or its own
    ``fit``'s, has the ``{shared_parameters}`` (parameters),
    ``{planning_size_attribute}`` or ``{group_labels}`` lines."""
    fit = vars(cls).get("fit")
    for marker, text in _SHARED_DOCS.items():
        if cls.__doc__ and marker in cls.__doc__:
            cls.__doc__ = cls.__doc__.replace(marker, text)
        if fit is not None and fit.__doc__ and marker in fit.__doc__:
            fit.__doc__ = fit.__doc__.replace(marker, text)
    return cls


def resolve_rng(random_state):
    """One numpy ``Generator`` for the whole fit; never numpy's global state.

    ``None`` gives fresh OS entropy; an int seeds a new Generator; a ``RandomState``
    is used only to draw a seed; a ``Generator`` is used as is.
    """
    if isinstance(random_state, np.random.Generator):
        return random_state
    if isinstance(random_state, np.random.RandomState):
        # 128 bits: one 31-bit draw left only 2^31 noise streams to search.
        return np.random.default_rng(random_state.randint(0, 2**32, size=4, dtype=np.uint64))
    return np.random.default_rng(random_state)


def warn_if_replayable(random_state, epsilon):
    """Warn, for a private fit, when the estimator will keep the state of its noise."""
    if (isinstance(random_state, (np.random.Generator, np.random.RandomState))
            and not math.isinf(epsilon)):
        warnings.warn(
            f"random_state is a numpy {type(random_state).__name__}: the fitted estimator "
            "keeps it (get_params(), pickles), and its state replays the fit's noise, so "
            "anyone holding the model can tell its training set from a neighbour. Leave "
            "random_state=None for a model you release.",
            PrivacyLeakWarning,
        )


# Set by DPMinimaxEstimator._check_fit: "all" stops a fit before its spend, "rows"
# after its target checks (X is then a stand-in). A context variable, so that the
# estimators' own fit methods (which map fit parameters to task data) run unchanged
# and a fit in another thread is never affected.
_CHECK_ONLY = ContextVar("skdpminimax_check_only", default=None)

# A solver that plans its own length (n_iter=None) and plans fewer iterations than
# this warns: NSEG's single pass on a few hundred rows gave the MLP one step.
_FEW_ITERATIONS = 5

# The smallest delta the estimators take (see _parameter_constraints).
MIN_DELTA = 1e-100

# Size of the n-free dry run when the true size is private (add/remove-one).
_PROBE_SIZE = 10_000
# Below this epsilon (of the training share) a fit with a private size also calibrates
# its noise on the probe size before the spend: the PLD's discretisation (1e-4) left
# budgets of ~5e-5 that no multiplier up to 1e7 certifies, found only after the spend.
_SMALL_EPSILON = 1e-3
# Below this range of scores a linear model of the ball cannot fit a loss of scale 1
# (see DPMinimaxEstimator._warn_if_scores_are_tiny).
_MIN_SCORE_RANGE = 0.1

# Default share of epsilon spent on the size (each estimator's n_samples_budget).
DEFAULT_N_SAMPLES_BUDGET = 0.05


def _dry_run(solver, probe, n_samples, budget, size_is_public, n_rows):
    """The calibration that decides the solver's neighbouring relation (and names its
    accountant), after checking before any spend what can be checked without leaking
    the size.

    Where neighbours share the size (replace-one), the solver is calibrated on the
    planning size ``n_samples`` and budget: a budget it cannot meet fails here.
    Replace-one neighbours share the size, so such a run plans on the ``n_rows`` given
    whatever size was declared: that calibration is checked too. Where the user
    declared the size public and the solver is add/remove-one, only its settings are
    checked here (infinite budget); the caller runs the noise search on the budget it
    settles on, before the spend. Under add/remove-one with a private size, whether a
    fit is refused must not depend on the true size: the solver's settings and relation are checked on a fixed
    size without a noise search (infinite budget), and the calibration on the released
    size runs after the spend (where it can only fail at extreme budgets, from a
    released number).
    """
    settings_only = PrivacyBudget(np.inf, budget.delta)
    if size_is_public:
        # An add/remove-one run's noise search waits for the budget it is calibrated on
        # (one PLD with the releases, or its share): _fit_steps runs it before the spend.
        try:
            calibration = solver.calibrate(probe, n_samples, settings_only)
        except ValueError:  # the search below raises what the settings cannot run
            calibration = None
        if _relation(calibration) == "add/remove-one":
            return calibration
        calibration = solver.calibrate(probe, n_samples, budget)
        if _relation(calibration) != "add/remove-one" and n_rows != n_samples:
            solver.calibrate(probe, n_rows, budget)
        return calibration
    try:
        calibration = solver.calibrate(probe, _PROBE_SIZE, settings_only)
        probe_error = None
    except ValueError as exc:  # maybe a size this solver cannot run (single pass, rounds)
        calibration, probe_error = None, exc
    if _relation(calibration) == "add/remove-one":
        if budget.epsilon < _SMALL_EPSILON:
            # Below it the accountant's discretisation can leave no multiplier that
            # certifies the budget, at any size: checked on the fixed probe size (public),
            # so that such a budget is refused before the spend, not after it.
            solver.calibrate(probe, _PROBE_SIZE, budget)
        return calibration
    calibration = solver.calibrate(probe, n_samples, budget)
    if _relation(calibration) == "add/remove-one":  # only the fixed-size check may decide
        raise probe_error or ValueError(
            f"{type(solver).__name__} is replace-one at one size and add/remove-one at "
            "another; declare its size public (n_samples_budget=N) to fit it.")
    return calibration


def warn_if_delta_too_large(budget, size):
    """Warn when ``delta >= 1 / size``: such a guarantee allows publishing a random
    row outright. ``size`` is what the fit plans on (public, or a released count), so
    the warning reveals nothing further."""
    if math.isfinite(budget.epsilon) and budget.delta * size >= 1.0:
        warnings.warn(
            f"delta={budget.delta:g} is not below 1 / n for the n = {size} examples the fit "
            "plans on (a privately released count where the size is private): an "
            "(epsilon, delta) guarantee with delta >= 1 / n allows a mechanism that "
            "publishes a random example outright. Choose delta well below 1 / n.",
            UserWarning,
        )


def _declared_size(size_spec):
    """The public size an int ``n_samples_budget`` declares, else ``None``."""
    if isinstance(size_spec, bool):  # an Integral to the parameter check
        raise ValueError(f"n_samples_budget must be a share of epsilon in (0, 1), a public "
                         f"size (int >= 1) or 'public'; got {size_spec!r}.")
    if isinstance(size_spec, Integral):
        return int(size_spec)
    return None


def _relation(calibration):
    return getattr(calibration, "neighboring_relation", "replace-one")


def _plain_budget(share):
    """``share`` as a plain ``(epsilon, delta)`` entry (``None`` stays ``None``; a pure
    count's has ``delta = 0``): the record ``privacy_shares_`` keeps, without the
    composed events."""
    return None if share is None else budget_entry(share.epsilon, share.delta)


def _own_share(budget, releases):
    """``budget`` less what ``releases`` were charged: the fit's own spend."""
    if not releases:
        return budget
    epsilon = budget.epsilon - math.fsum(r.epsilon for r in releases)
    delta = budget.delta - math.fsum(r.delta for r in releases)
    if not (epsilon > 0 and delta > 0):
        raise ValueError(
            f"composed_with's releases were charged ({budget.epsilon - epsilon:g}, "
            f"{budget.delta - delta:g}), which leaves nothing of (epsilon, delta) = "
            f"({budget.epsilon:g}, {budget.delta:g}), the total they share with this fit. "
            "Raise epsilon and delta to the total. Nothing was spent.")
    return PrivacyBudget(epsilon, delta)


# Releases that use more than this share of epsilon on their own are not composed
# with the run (the shares add instead): the run's noise search could fail there,
# after the spend, and composing gains little.
_MAX_PRECEDING_SHARE = 0.9


def _check_composes(solver, probe, budget, n_samples):
    """Before the spend: the solver says it composed ``budget.preceding`` (a dry run
    without noise search, on the public size ``n_samples``): a solver that ignored them
    would calibrate on the total alone."""
    settings = PrivacyBudget(np.inf, budget.delta, preceding=budget.preceding)
    _check_composed(solver, solver.calibrate(probe, n_samples, settings), budget, spent=False)


def _check_composed(solver, calibration, budget, spent=True):
    """Refuse a run whose calibration did not compose ``budget.preceding``."""
    if not budget.preceding:
        return
    if getattr(calibration, "composed_with", None) != describe_events(budget.preceding):
        raise RuntimeError(
            f"{type(solver).__name__} says it composes the releases before its run "
            "(composes_preceding) but its calibration did not compose them: its noise "
            "would cover its run alone. Nothing was released"
            + ("; the budget of this fit is spent." if spent else ", nothing spent."))


# What fixes a run's privacy-loss distribution (steps, rate, joint multiplier, ...).
# The split of the joint multiplier among the blocks may follow their clips without
# changing it.
_PLD_FIELDS = ("n_steps", "sample_rate", "noise_multiplier", "batch_size",
               "n_compositions", "noise_ratios")


def _differing_fields(calibration, expected, fields=_PLD_FIELDS):
    """The ``fields`` in which ``calibration`` differs from ``expected`` (a refusal
    names them)."""
    return [f for f in fields if getattr(calibration, f, None) != getattr(expected, f, None)]


def _same_run(calibration, expected, fields=_PLD_FIELDS):
    return not _differing_fields(calibration, expected, fields)


def _certifiable_plan_size(solver, objective, size, budget):
    """``size`` (a released count), or, where no multiplier certifies a run planned on
    it, the first of the probe size ``_PROBE_SIZE`` (if larger) and ``size / 2^k``
    whose run one does.

    At a tiny epsilon the released size can be huge (its noise has scale ``1 /
    epsilon``), and the run's steps grow with it until the accountant's bound levels
    off above the target: the fit failed after its spend. A plan on a smaller size
    samples at a higher rate, which the calibration accounts for. The released size
    can as well be tiny (clamped to 1 row): a run of full batches, which no multiplier
    certifies at such an epsilon either (the PLD's discretisation; a review found 4 of
    6 seeds failing after the spend at epsilon 5e-5 on 40 rows). A plan on the probe
    size samples at a lower rate; below ``_SMALL_EPSILON`` that size was certified
    before the spend (``_dry_run``). Either plan is computed from the released count
    alone, so it is post-processing: no privacy cost, no new leak.
    """
    halves = [size >> k for k in range(1, max(int(size), 1).bit_length())]
    for planned in [size] + ([_PROBE_SIZE] if size < _PROBE_SIZE else []) + halves:
        try:
            solver.calibrate(objective, planned, budget)
        except UncertifiableBudgetError as exc:
            error = exc
            continue
        if planned != size:
            warnings.warn(
                f"No noise multiplier certifies a run planned on the released size ({size}) "
                f"at this budget; the run is planned on {planned} rows instead (another "
                "sampling rate, accounted for). At such a budget the model is mostly noise: "
                "declare the size (n_samples_budget=N) or raise epsilon.", UserWarning)
        return planned
    raise error


def _check_planned_on(solver, objective, size, budget, calibration):
    """Refuse (nothing released) a run that was not planned on the released size: a
    solver that read the true number of rows would leak it (see SaddleData)."""
    expected = solver.calibrate(objective, size, budget)
    # Every field, the per-block multipliers too: a solver whose noise or length
    # followed the true number of rows would show in one of them.
    differing = _differing_fields(calibration, expected,
                                  _PLD_FIELDS + ("block_noise_multipliers",))
    if differing:
        raise RuntimeError(
            f"{type(solver).__name__}'s calibration differs in {', '.join(differing)} from "
            "calibrate(objective, data.planning_size, budget): its run was not planned on "
            "the public size (released or declared; under add/remove-one the true number "
            "of rows is private), or its solve rebuilt the calibration. Nothing was "
            "released; the budget of this fit is spent."
        )


def _check_covers_budget(solver, calibration, budget):
    """Refuse (nothing released) a run whose own record claims more than the budget it
    was given, or none at all: a user's solver that calibrated on the whole budget
    instead of its training share, or on a budget of its own. The record is the
    solver's word; that its run drew the noise the record states is the solver's
    proof (docs/extending.rst)."""
    if not budget.is_private:
        return
    if calibration is None:
        raise RuntimeError(
            f"{type(solver).__name__} returned no calibration for a private budget: "
            "nothing certifies its noise. Nothing was released; the budget of this fit "
            "is spent.")
    epsilon, delta = float(calibration.epsilon), float(calibration.delta)
    if not (epsilon <= budget.epsilon * (1 + 1e-9) and delta <= budget.delta * (1 + 1e-9)):
        raise RuntimeError(
            f"{type(solver).__name__}'s calibration certifies ({epsilon:.6g}, {delta:.3g}), "
            f"more than the ({budget.epsilon:.6g}, {budget.delta:.3g}) it was given "
            "(calibrate on the budget passed to solve, which is the fit's training share). "
            "Nothing was released; the budget of this fit is spent.")


def _check_kept_plan(solver, calibration, planned):
    """Refuse (nothing released) a composed run whose plan followed the released
    constants instead of ``planned``, the one made on the public constants (its PLD
    composition with their counts assumes it fixed)."""
    differing = _differing_fields(calibration, planned)
    if differing:
        raise RuntimeError(
            f"{type(solver).__name__}'s run differs in {', '.join(differing)} from the plan "
            "made on the public constants before the solve (fix_plan), which the run's "
            "composition with the released counts in one PLD assumes fixed: plan on public "
            "quantities only (the released constants or the rows' count must not change "
            "it), or use composition='basic'. Nothing was released; the budget of this fit "
            "is spent.")


# Sparse X whose dense copy has at most this many entries (32 MB) is fitted dense: the
# same batches, noise and result (to rounding), several times faster (row slicing of
# CSR batches and no compiled kernel cost 2-10x on one-hot data of 50 columns). Decided
# from the shape alone, not from the number of stored entries (which would decide,
# unpaid, between refusals and runners). Under add/remove-one the row count is private
# too, but here it chooses only a runner: the same batches and noise, and results equal
# to rounding; what it changes is the fit's time, a side channel outside the
# guarantee (docs/privacy_model.md). No refusal follows it (see sparse_input below).
# The limit was 2^24 entries, and a 5,000 x 3,000 CSR at 1% density (1.7 MB) took
# 344 MB to fit (a scale probe).
_DENSIFY_MAX_ENTRIES = 1 << 22


# Below this epsilon a pure-DP count's geometric noise (std ~1.4 / epsilon) exceeds a
# million: the count is noise, and a size released so is a run's length (a fuzzing
# review: DPSaddleEstimator's 15 epochs of a size released at 1e-9 ran for hours,
# after the spend). Far below it the geometric draws leave int64.
MIN_COUNT_EPSILON = 1e-6


def _check_count_epsilon(name, epsilon):
    """Refuse, before the spend, a private count at an epsilon (``name``'s share) whose
    geometric noise would swamp any count (or overflow) after it."""
    if epsilon < MIN_COUNT_EPSILON:
        raise ValueError(
            f"{name} leaves epsilon {epsilon:g} for a private count, below "
            f"{MIN_COUNT_EPSILON:g}: its noise (std {1.41 / max(epsilon, 1e-300):.2g}) would "
            "swamp any count. Raise the share or the budget, or declare the value public "
            "(n_samples_budget=<int>, group_ratios, pos_ratio). Nothing was spent.")


def _own_copies(*arrays):
    """Fresh copies of a user objective's labels (``None`` stays ``None``): its
    ``prepare`` may write into ``data.y`` as into ``data.X``, and each use (the check
    on the rows, then the run) must see the caller's values, which it must not
    change."""
    return tuple(None if a is None else np.array(a, copy=True) for a in arrays)


def _dense_if_small(X):
    if sp.issparse(X) and X.shape[0] * X.shape[1] <= _DENSIFY_MAX_ENTRIES:
        return X.toarray()
    return X


def warn_about_public_size(size_spec, epsilon, *, add_remove, uses, revealed_by):
    """Warn where ``n_samples_budget="public"`` (``size_spec``) takes ``len(X)`` as
    public under add/remove-one neighbours, which ``revealed_by`` then reveals (a
    :class:`PrivacyLeakWarning` at finite ``epsilon``). A declared size far from the
    rows given is :func:`check_declared_size`'s."""
    if add_remove and size_spec == "public" and math.isfinite(epsilon):
        warnings.warn(
            f"n_samples_budget='public' {uses} len(X), which {revealed_by} reveals: under "
            "add/remove-one neighbours the guarantee then holds only among data sets of "
            "this size. Pass the public size as an int (n_samples_budget=N, e.g. a "
            "published data set's size) to plan every neighbour on it, or leave the size "
            "private.", PrivacyLeakWarning)


# A declared size this many times as far from the rows given is refused: the plan's
# steps grow with the declared size (10**9 for 500 rows: 234 million steps, hours and
# GBs, after the spend). Ten times as far warns.
_TYPO_REFUSAL_FACTOR = 1000
_TYPO_WARNING_FACTOR = 10


def check_declared_size(declared, n_samples, use):
    """A declared size (``declared``, an int, or ``None``) far from the ``n_samples``
    rows given is most likely a typo (``10**9`` for ``10**3``: millions of steps on
    nearly empty batches). More than ``_TYPO_REFUSAL_FACTOR`` times as far is refused
    (call it before the spend: a plan on it runs for hours); more than ten times
    warns (:class:`UserWarning`); folds of a search, a fraction of the declared size,
    stay within that. Both messages say what the declaration does (``use``) and not
    the row count: whoever reads the log need not learn it. The estimators call it
    before their noise search, which on such a size can take minutes."""
    if _size_is_off(declared, n_samples, _TYPO_REFUSAL_FACTOR):
        raise ValueError(
            f"n_samples_budget={declared} declares a public size more than "
            f"{_TYPO_REFUSAL_FACTOR} times as far from the number of rows given (a typo?): "
            f"{use}. Declare the size of the data set you fit. Nothing was spent.")
    if _size_is_off(declared, n_samples, _TYPO_WARNING_FACTOR):
        warnings.warn(
            f"n_samples_budget={declared} declares a public size more than ten times as "
            f"far from the number of rows given: {use}. Declare the size of the data set "
            "you fit.", UserWarning)


def _size_is_off(declared, n_samples, factor):
    """Whether a declared size (an int, or ``None``: nothing declared) is more than
    ``factor`` times as far from the ``n_samples`` rows given."""
    return declared is not None and not declared / factor <= n_samples <= factor * declared


@contextlib.contextmanager
def all_or_nothing(estimator):
    """A fit that is all or nothing for ``estimator`` (its ``vars``).

    The body starts from a clean slate: no fitted attribute (trailing underscore) of a
    previous fit survives a successful one. Unless the body sets ``outcome.keep =
    True`` (the handle it is given), the estimator is restored exactly as it was,
    previous fit included: after bad input, a budget error, a crash in the solver, or
    a check that stops before the spend. Only the accountant keeps a trace: a fit that
    failed after its spend has been charged.
    """
    before = dict(vars(estimator))
    for name in [k for k in before if k.endswith("_") and not k.startswith("__")]:
        delattr(estimator, name)
    outcome = types.SimpleNamespace(keep=False)
    try:
        yield outcome
    finally:
        if not outcome.keep:
            vars(estimator).clear()
            vars(estimator).update(before)


class DPMinimaxEstimator(LedgerGuardMixin, BaseEstimator):
    """Base class: parameters shared by every estimator and the fit pipeline.

    Shared parameters: ``epsilon``, ``delta``, ``data_norm``, ``solver``,
    ``accountant``, ``random_state`` (meanings as in diffprivlib). Clones share
    the accountant; a fit refuses to spend on a pickled copy of it (see
    :mod:`skdpminimax.privacy.ledger` and :mod:`skdpminimax.search`).
    """

    # Sparse X (converted to CSR) for the built-in objectives, whose linear algebra
    # handles it; DPSaddleEstimator's user objectives get dense arrays.
    _accept_sparse = "csr"
    # Whether the objective is the user's. The built-in objectives only read data.X and
    # evaluate on every row the bounds allow; a user's may write into X or y (a prepare
    # that normalises rows in place), so it gets copies (clip_rows, _own_copies), and
    # may fail on a real row, so it is first run on the rows themselves
    # (check_on_the_rows).
    _user_objective = False

    _parameter_constraints = {
        "n_samples_budget": [Interval(Real, 0, 1, closed="neither"),
                             Interval(Integral, 1, None, closed="left"), StrOptions({"public"})],
        "composition": [StrOptions({"pld", "basic"})],
        "composed_with": [list, tuple, StrOptions({"pending"}), None],
        # np.inf is no privacy; a larger finite epsilon protects nothing and the
        # accountant cannot calibrate it (MAX_FINITE_EPSILON).
        "epsilon": [Interval(Real, 0, MAX_FINITE_EPSILON, closed="right"),
                    Options(Real, {np.inf})],
        # Below 1e-100 no accountant here is reliable (the PLD truncates, the RDP orders
        # run out, splits of delta reach subnormal floats: fits failed after the spend
        # at 1e-310), and no guarantee needs it: refused with the parameters.
        "delta": [Interval(Real, MIN_DELTA, 1, closed="left")],
        "data_norm": [Interval(Real, 0, None, closed="neither"), None],
        "solver": [str, HasMethods(["solve", "calibrate"])],
        "accountant": [BudgetAccountant, None],
        "random_state": ["random_state", np.random.Generator],
    }

    # ---- scikit-learn plumbing ----------------------------------------------
    def __sklearn_tags__(self):
        tags = super().__sklearn_tags__()
        tags.non_deterministic = False
        tags.input_tags.sparse = bool(self._accept_sparse)
        return tags

    # ---- the pipeline --------------------------------------------------------
    def _fit(self, X, y, **task_data):
        # Read before all_or_nothing sets a previous fit aside: a refused spend then
        # says that a refit spends again (as DPStandardScaler.fit).
        refit = has_fitted_attributes(self)
        with all_or_nothing(self) as outcome:
            outcome.keep = self._fit_steps(X, y, refit=refit, **task_data) is not None
        return self

    def _check_fit(self, X, y=None, *, rows_only=False, **fit_params):
        """Raise what ``fit(X, y, **fit_params)`` would raise before its spend.

        Runs ``fit`` itself up to its spend (steps 1 and 2: parameters, data, targets
        and task data, the accountant's remaining budget, the calibration dry run) and
        stops there: nothing is spent and the estimator is left exactly as it was.
        Callers that charge fits in advance (:mod:`skdpminimax.search`) run it so that
        bad input fails before their charge.

        Parameters
        ----------
        X : {array-like, sparse matrix} of shape (n_samples, n_features)
            The data the fit would get.
        y : array-like of shape (n_samples,), default=None
            The targets the fit would get.
        rows_only : bool, default=False
            ``True`` when the fit would get another ``X`` with the same rows (earlier
            steps of a pipeline transform it): only the parameters, the number of
            rows, ``y`` and ``fit_params`` are checked, not the values or width of
            ``X``, its norm bound or the calibration (which depends on the width).
        **fit_params : dict
            The keyword arguments of ``fit`` (for example ``sensitive_features``).

        Returns
        -------
        self : DPMinimaxEstimator
            Unchanged.
        """
        if rows_only:
            # A stand-in with X's rows: targets and task data are checked against it.
            X = np.zeros((_num_samples(X), 1))
        token = _CHECK_ONLY.set("rows" if rows_only else "all")
        try:
            self.fit(X, y, **fit_params)
        finally:
            _CHECK_ONLY.reset(token)
        return self

    def _fit_steps(self, X, y, *, refit=False, **task_data):
        """Steps 1 to 6; ``None`` (nothing spent, nothing to keep) for a check.
        ``refit``: the estimator held a previous fit (for the budget's refusal)."""
        self._validate_params()
        X, y = validate_data(self, X, y, dtype=np.float64, y_numeric=False,
                             ensure_min_samples=2, accept_sparse=self._accept_sparse)
        targets, task_data = self._validate_targets(X, y, **task_data)
        if _CHECK_ONLY.get() == "rows":  # X is a stand-in: nothing more to check
            return None
        sparse_input = sp.issparse(X)
        X = _dense_if_small(X)
        budget = PrivacyBudget(self.epsilon, self.delta)
        accountant = self._fit_ledger()  # refuses a pickled copy of the caller's ledger
        releases = self._composed_releases(accountant)
        own = _own_share(budget, releases)  # what this fit spends on its ledger
        check_budget(accountant, own.epsilon, own.delta, owner=type(self).__name__,
                     refit=refit)
        solver = self._resolve_solver()
        # On the input's kind, not on whether it was densified: that follows the row
        # count, private under add/remove-one (a review: 4,096 rows fitted, 4,097 refused).
        if sparse_input and getattr(solver, "backend", None) == "numba":
            raise ValueError("backend='numba' needs dense X; sparse X runs the numpy loop "
                             "(backend='auto' or 'numpy').")
        data_norm = self._resolve_data_norm(X)
        self._warn_if_scores_are_tiny(data_norm)
        constants_budget, train_budget = self._split_budget(own)

        # Dry run on public constants: a solver that cannot be calibrated for this
        # budget fails here, before anything is spent.
        n_samples = X.shape[0]
        probe = self._make_objective(X.shape[1], data_norm, self._public_constants(targets, task_data))
        # The domain the objective's bounds are proved on (y in {-1, +1}, say).
        if hasattr(probe, "check_data"):  # on copies: a check must not edit the data
            probe.check_data(*(None if a is None else np.array(a, copy=True)
                               for a in (targets, task_data.get("groups"))))
        # The objective on stand-in batches (check_shapes_on_stand_in), so that a user
        # objective's failure or wrong shape is refused here rather than in the solver.
        check_shapes_on_stand_in(probe, X.shape[1], targets, task_data.get("groups"))
        if self._user_objective:  # also on the rows themselves, before the spend
            check_on_the_rows(probe, SaddleData(clip_rows(X, data_norm, copy=True),
                                                *_own_copies(targets, task_data.get("groups"))))
        # (a subclass without the parameter gets its default: a private size)
        size_spec = getattr(self, "n_samples_budget", DEFAULT_N_SAMPLES_BUDGET)
        declared = _declared_size(size_spec)
        size_is_public = size_spec == "public" or declared is not None
        # Private constants are released under the solver's neighbouring relation
        # (replace-one doubles a histogram's L1 sensitivity); unknown means replace-one.
        dry_run = _dry_run(solver, probe, declared or n_samples, train_budget,
                           size_is_public, n_samples)
        relation = _relation(dry_run)
        size_budget = None
        add_remove = relation == "add/remove-one"
        if releases and not add_remove:
            raise ValueError(
                f"composed_with holds add/remove-one releases, and {type(solver).__name__} "
                "is replace-one here: their charges would add up under neither relation. "
                "Use an add/remove-one solver (the default NoisySGDA) or drop composed_with. "
                "Nothing was spent.")
        if add_remove and not size_is_public:
            # The size is private under add/remove-one: plan on a released one.
            size_budget, train_budget = train_budget.split(size_spec)
        for name, share in (("n_samples_budget", size_budget),
                            ("the constants' share (pos_ratio_budget, group_ratios_budget)",
                             constants_budget)):
            if share is not None:
                _check_count_epsilon(name, share.epsilon)
        preceding = self._preceding_events(solver, dry_run, budget, releases, constants_budget)
        if preceding is not None:
            # One PLD for the releases and the training: the training is calibrated so
            # that their composition is (epsilon, delta)-DP with the size's count, the
            # one release not in it, added (basic composition): the run is planned on
            # the released size, so its privacy-loss distribution depends on that
            # count's outcome, which a PLD composition cannot follow.
            joint_epsilon = budget.epsilon - (0.0 if size_budget is None else size_budget.epsilon)
            train_budget = PrivacyBudget(joint_epsilon, budget.delta, preceding=preceding)
            if not size_is_public:
                _check_composes(solver, probe, train_budget, _PROBE_SIZE)
        if add_remove:  # before the noise search, which a typo (10**9) makes slow
            check_declared_size(
                declared, n_samples,
                f"the run is planned on {declared} (its sampling rate and number of steps)")
        searched = None
        if size_is_public and add_remove:
            # The noise search on the public size, before the spend: a budget the solver
            # cannot meet fails here; a composed run keeps this plan (fix_plan below).
            searched = solver.calibrate(probe, declared or n_samples, train_budget)
            _check_composed(solver, searched, train_budget, spent=False)
        if getattr(dry_run, "accounting", None) in ("pld", "rdp"):
            # A budget no multiplier certifies (a tiny delta) would fail only after the
            # spend, once the released size is known: refused here, from the share the
            # noise is calibrated on and the solver's accountant alone.
            check_certifiable(train_budget.epsilon, train_budget.delta)
        task_data = {**task_data, "neighboring_relation": relation}
        if _CHECK_ONLY.get():  # _check_fit: every check passed; stop before the spend
            return None
        warn_about_public_size(
            size_spec, budget.epsilon, add_remove=add_remove, uses="plans on",
            revealed_by="the released plan (planning_size_, n_iter_)")
        warn_if_replayable(self.random_state, budget.epsilon)
        # check and record under one lock
        spend(accountant, own.epsilon, own.delta, relation=relation, redeems=releases)
        rng = resolve_rng(self.random_state)
        if size_budget is not None:
            size = private_size(n_samples, size_budget.epsilon, rng)
        else:  # a declared size is planned on only where the size is private
            size = declared if add_remove and declared is not None else n_samples
        planned_apart = size_budget is not None or (add_remove and declared is not None)
        task_data["size"] = size
        warn_if_delta_too_large(budget, size)
        constants = self._private_constants(targets, task_data, constants_budget, rng)
        objective = self._make_objective(X.shape[1], data_norm, constants)
        plan_size = size
        if size_budget is not None:  # (a composed run is planned on the public constants)
            plan_size = _certifiable_plan_size(
                solver, probe if train_budget.preceding else objective, size, train_budget)
        labels = (targets, task_data.get("groups"))
        data = SaddleData(clip_rows(X, data_norm, copy=self._user_objective),
                          *(_own_copies(*labels) if self._user_objective else labels),
                          public_size=plan_size if planned_apart else None)
        plans_its_length = getattr(solver, "n_iter", 0) is None
        planned = None
        if train_budget.preceding:
            # The run's PLD is composed with the constants' counts, so it must not follow
            # their released values: its length is planned on the public constants.
            planned = (searched if searched is not None
                       else solver.calibrate(probe, data.planning_size, train_budget))
            solver.fix_plan(planned)
        with oracle_log(data.n_samples) as oracles:  # what the run's gradient oracles did
            data.run_log = oracles  # followed through data.take, into a solver's threads too
            try:
                result = solver.solve(objective, data, train_budget, rng)
                _check_covers_budget(solver, result.calibration, train_budget)
                if train_budget.is_private:
                    check_record_certifies(solver, result.calibration, train_budget)
                    check_run_matches_record(solver, result.calibration, oracles)
            finally:
                # The data refer to the log, whose oracles hold the data: break the
                # cycle so that the fit's copy of the rows is freed with the fit.
                data.run_log = None
                oracles.close()
        _check_composed(solver, result.calibration, train_budget)
        if planned is not None:
            _check_kept_plan(solver, result.calibration, planned)
        if planned_apart:
            _check_planned_on(solver, objective, plan_size, train_budget, result.calibration)
        if not (np.all(np.isfinite(result.w)) and np.all(np.isfinite(result.v))):
            # A run that diverged (a step far too large on an unbounded set, the MLP's)
            # must not become a NaN model. Post-processing of the private run: raising
            # reveals no more than the NaN model would; the fit stays charged.
            raise FloatingPointError(
                f"{type(solver).__name__} diverged: the released parameters are not finite "
                "(a step size too large for the objective, or an objective whose gradients "
                "are not finite at some point of its sets?). The fit is charged; nothing "
                "was fitted. Lower step_size or use the solver's default step; check the "
                "objective's gradients where they are not clipped (output perturbation).")

        if plans_its_length and result.n_iter < _FEW_ITERATIONS:
            # Planned from public quantities (epochs, batch, planning size): no leak.
            single_pass = getattr(solver, "mode", None) == "single_pass"
            how = ("a single pass over the data: n / (2 batch_size) iterations for NSEG, "
                   "n / batch_size for NISPP" if single_pass
                   else "epochs times n / batch_size")
            remedy = ("solver='sgda', a smaller batch_size" if single_pass
                      else "a smaller batch_size, more epochs")
            warnings.warn(
                f"{type(solver).__name__} planned only {int(result.n_iter)} iteration(s) for "
                f"{int(data.planning_size)} examples ({how}): the model is barely trained. "
                f"Use {remedy}, or set n_iter.", UserWarning)
        self.solver_ = solver
        self.objective_ = objective
        self.data_norm_ = data_norm
        self.n_iter_ = int(result.n_iter)
        self.calibration_ = result.calibration
        self.privacy_spent_ = own
        # Parameters only (the split is planned before the data are read): public.
        self.privacy_shares_ = {
            "n_samples": _plain_budget(size_budget),
            "constants": _plain_budget(constants_budget),
            "training": _plain_budget(train_budget),
        }
        self.planning_size_ = int(data.planning_size)
        # Settings only (the iterates in result.info are not settings): scalars, and the
        # per-coordinate clips as a list.
        self.solver_info_ = {
            key: value.tolist() if isinstance(value, np.ndarray) else value
            for key, value in result.info.items()
            if isinstance(value, (str, int, float, np.number))
            or (key.startswith("clip") and isinstance(value, np.ndarray))
        }
        self._set_fitted(result, objective, constants)
        return self

    def _resolve_solver(self):
        """A fresh solver from ``self.solver`` (estimators may pick task defaults)."""
        return resolve_solver(self.solver)

    def set_params(self, **params):
        """Set parameters; ``solver__*`` needs a solver object, not a name.

        A name (the default ``"sgda"``) has no parameters of its own: the error names
        the object it stands for, whose settings can then be tuned.

        Parameters
        ----------
        **params : dict
            Estimator parameters, and ``solver__<name>`` for a solver object's.

        Returns
        -------
        self : estimator instance
            The estimator.
        """
        nested = sorted(key for key in params if key.startswith("solver__"))
        solver = params.get("solver", getattr(self, "solver", None))
        if nested and isinstance(solver, str):
            try:
                stands_for = f", here {self._resolve_solver()!r}"
            except (ValueError, TypeError):
                stands_for = ""
            raise ValueError(
                f"{nested[0]} cannot be set: solver={solver!r} is a name, resolved at fit "
                f"into a solver object{stands_for}. Pass that object as solver=... to tune "
                "its settings.")
        return super().set_params(**params)

    def _prediction_input(self, X, fitted_attribute=None):
        """``X`` checked for a prediction method: the estimator fitted (on
        ``fitted_attribute`` if given), then the fit's feature count, float64, sparse
        as at fit."""
        check_is_fitted(self, fitted_attribute)
        return validate_data(self, X, dtype=np.float64, reset=False,
                             accept_sparse=self._accept_sparse)

    def _resolve_data_norm(self, X):
        if self.data_norm is not None:
            return self._check_data_norm(float(self.data_norm), "data_norm")
        if math.isfinite(self.epsilon):  # without noise there is no guarantee to lose
            warnings.warn(
                "data_norm has not been specified and will be calculated on the data "
                "provided. This will result in additional privacy leakage. To ensure "
                "differential privacy and no additional privacy leakage, specify `data_norm` "
                "at initialisation: a bound on the rows' L2 norm known without the data "
                "(e.g. sqrt(n_features) times a public bound on each scaled feature); rows "
                "beyond it are clipped to it.",
                PrivacyLeakWarning,
            )
        norm = float(row_norms(X).max())
        return self._check_data_norm(norm if norm > 0 else 1.0, "The largest row norm of X")

    def _linear_score_range(self, norm):
        """The largest score a model of the estimator's set gives on rows of norm
        ``norm``, where the model is linear in the rows (``radius * norm``); ``None``
        where unknown (no ``radius``; a nonlinear scorer overrides this)."""
        radius = getattr(self, "radius", None)
        return None if radius is None else radius * norm

    def _warn_if_scores_are_tiny(self, norm):
        """Warn where no model of the set can move a score by ``_MIN_SCORE_RANGE``
        (:meth:`_linear_score_range`) over rows of norm ``norm`` (features at 1e-6,
        say): the losses' scale is about 1, so no model fits, even without noise.
        ``radius`` and a declared ``data_norm`` are public."""
        reach = self._linear_score_range(norm)
        if reach is not None and reach < _MIN_SCORE_RANGE:
            warnings.warn(
                f"radius * data_norm = {reach:.3g}: a linear model of norm at most "
                f"radius ({reach / norm:g}) moves a score by at most that over rows of norm "
                f"{norm:.3g}, while the loss works on scores of about 1, so no model can "
                "fit, even without noise. Rescale the features to norms about 1 (public "
                "constants, or DPStandardScaler) or raise radius.", UserWarning)

    @staticmethod
    def _check_data_norm(norm, what):
        if norm > MAX_DATA_NORM:
            raise ValueError(
                f"{what} is {norm:.3g}, beyond {MAX_DATA_NORM:g}: scores and squared losses "
                "would overflow float64. Rescale X (e.g. StandardScaler) or set a smaller "
                "public data_norm (larger rows are clipped to it)."
            )
        return norm

    def _split_budget(self, budget):
        """``(slice for data-dependent constants or None, rest for the solver)``."""
        return None, budget

    # True where the constants are released as one add/remove-one count at the share's
    # whole epsilon (a class ratio's count; a histogram in which a row falls in one bin).
    _constants_are_one_count = False

    def _constants_events(self, constants_budget):
        """The ``DpEvent`` objects (add/remove-one) of the release of the constants at
        ``constants_budget`` (one :func:`~skdpminimax.privacy.composition.count_event`
        where ``_constants_are_one_count``), or ``None`` where they cannot be composed
        in a PLD; ``()`` when nothing is released."""
        if constants_budget is None:
            return ()
        return (count_event(constants_budget.epsilon),) if self._constants_are_one_count else None

    def _composed_releases(self, accountant):
        """``composed_with`` checked: a tuple of :class:`Release` (nothing spent yet);
        ``"pending"``: the ledger's releases charged since its last other entry."""
        spec = getattr(self, "composed_with", None)
        if isinstance(spec, str):
            releases = pending_releases(accountant)
            return releases if releases and not math.isinf(self.epsilon) else ()
        releases = tuple(spec or ())
        if releases and getattr(accountant, "slack", 0) > 0:
            raise ValueError(
                "composed_with with an accountant of slack > 0: the fit's entry would be "
                "the total less the earlier releases' charges, which bounds the pair (the "
                "releases and this fit) but not this fit alone, and a ledger with slack "
                "composes its entries by advanced composition as if each held alone. Use "
                "an accountant with slack=0, or drop composed_with. Nothing was spent.")
        if not all(isinstance(r, Release) for r in releases):
            raise TypeError("composed_with must hold skdpminimax.privacy.Release records "
                            "(e.g. a fitted DPStandardScaler's release_).")
        if releases and math.isinf(self.epsilon):
            raise ValueError("composed_with needs a finite epsilon: the total it shares with "
                             "the releases.")
        return releases

    def _preceding_events(self, solver, dry_run, budget, releases, constants_budget):
        """What the training composes with in one PLD (the releases before the fit, the
        constants' counts), or ``None`` where the shares add up instead (see
        ``composition``). Not the size's count: the run is planned on its outcome.
        ``None`` too for a release whose Gaussian is too weak for the PLD's grid
        (``composable``), or releases that take more than ``_MAX_PRECEDING_SHARE`` of
        epsilon on their own."""
        if (getattr(self, "composition", "basic") != "pld" or not budget.is_private
                or not getattr(solver, "composes_preceding", False)
                or _relation(dry_run) != "add/remove-one"
                or getattr(dry_run, "accounting", None) != "pld"
                or budget.delta < _PLD_DELTA_FLOOR):
            return None
        constants = self._constants_events(constants_budget)
        if constants is None:
            return None
        events = tuple(e for r in releases for e in r.events) + tuple(constants)
        if not events or not composable(events, budget.epsilon):  # almost no noise
            return None
        if releases_epsilon(events, budget.delta, budget.epsilon) > (
                _MAX_PRECEDING_SHARE * budget.epsilon):
            return None  # they leave the run too little for its noise search
        return events

    # ---- task hooks ----------------------------------------------------------
    def _validate_targets(self, X, y, **task_data):
        """Check and encode ``y`` (and task data); return ``(targets, task_data)``."""
        raise NotImplementedError

    def _public_constants(self, targets, task_data):
        """Constants for the calibration dry run, from public information only."""
        raise NotImplementedError

    def _private_constants(self, targets, task_data, budget, rng):
        """Constants the objective needs: public ones, or private releases."""
        raise NotImplementedError

    def _make_objective(self, n_features, data_norm, constants):
        raise NotImplementedError

    def _set_fitted(self, result, objective, constants):
        raise NotImplementedError
