"""Keeping the budget ledger honest when fits leave the calling process.

A diffprivlib :class:`~diffprivlib.BudgetAccountant` is a plain Python object. When
scikit-learn runs fits through joblib in other processes (``n_jobs > 1``, loky) or
on a cluster (joblib's Dask backend), the estimator, and the accountant it holds,
are *pickled*: the worker spends on its own copy and the spend is lost with it.

Two pieces make that impossible:

* :class:`LedgerGuardMixin` stamps every pickled estimator with the id of the
  process it left. A fit refuses to spend (:class:`LostLedgerError`) when its
  ledger is such a copy: a user's ``BudgetAccountant`` that came through a pickle
  (in any process: the copy is not the caller's ledger), or ``accountant=None``
  (diffprivlib's default ledger) in a process other than the one the estimator
  was stamped in.
* :class:`PrepaidLedger` is the one ledger that may travel: the caller's accountant
  was charged for every fit in advance (see :mod:`skdpminimax.search`), and the
  prepaid ledger only checks that each fit spends no more than one of the prepaid
  per-fit budgets. Nothing is counted twice, nothing is lost. It travels only while
  its search runs, and is closed when the search has run.
"""

import os
import secrets
import threading
import warnings
import weakref
from contextlib import contextmanager

from diffprivlib.accountant import Budget, BudgetAccountant
from diffprivlib.utils import BudgetError, PrivacyLeakWarning

from skdpminimax.privacy.budget import resolve_accountant

__all__ = ["LedgerGuardMixin", "LostLedgerError", "PrepaidLedger", "check_budget", "fit_ledger",
           "pending_releases", "spend", "spend_all", "spend_release"]

# diffprivlib's spend checks the budget, then appends: two threads fitting on one
# accountant could both pass the check and exceed the budget together. Every spend of
# this library goes through this lock (reentrant: a prepaid ledger's spend nests).
_SPEND_LOCK = threading.RLock()


# The neighbouring relations this library's spends on a ledger were made under (held
# weakly: a ledger's entry goes with it).
_RELATIONS = weakref.WeakKeyDictionary()

MIXED_RELATIONS_ADVICE = (
    "Their sum then holds under neither relation (under replace-one an "
    "add/remove-one (epsilon, delta) step is only (2 epsilon, (1 + e^epsilon) delta)-DP; "
    "under add/remove-one a replace-one step publishes the row count). Use one "
    "relation: DPStandardScaler in front of the default fit, or replace-one steps only "
    "(e.g. NoisySGDA(sampler='without_replacement')).")


# The releases charged on a ledger by spend_release (token -> Release), the tokens of
# those a fit has composed with, and the ledger entry each release was charged as
# (entry index -> Release), held weakly like _RELATIONS.
_CHARGED_RELEASES = weakref.WeakKeyDictionary()
_REDEEMED_RELEASES = weakref.WeakKeyDictionary()
_RELEASE_ENTRIES = weakref.WeakKeyDictionary()
# The thread each of this library's spends on a ledger came from (entry index ->
# thread ident): "pending" composes a thread's own releases, so folds fitted in
# threads on one ledger (joblib's threading backend) do not take each other's.
_ENTRY_THREADS = weakref.WeakKeyDictionary()


def has_fitted_attributes(estimator):
    """Whether ``estimator`` holds a previous fit (an attribute with a trailing
    underscore, as scikit-learn's ``check_is_fitted`` looks for)."""
    return any(k.endswith("_") and not k.startswith("__") for k in vars(estimator))


def check_budget(accountant, epsilon, delta, *, owner, refit=False):
    """``accountant.check(epsilon, delta)``, with a refusal that says what the ledger
    holds and that every fit spends anew (a refit of a fitted estimator included).

    Before the spend, and from the ledger's entries and the fit's parameters only (no
    data): the message reveals nothing the caller's ledger does not. A prepaid ledger's
    own refusals (a search charged in advance) are left as they are.
    """
    try:
        return accountant.check(epsilon, delta)
    except BudgetError as exc:
        if isinstance(accountant, PrepaidLedger):
            raise
        (spent_epsilon, spent_delta), entries = accountant.total(), len(accountant.spent_budget)
        again = (f" {owner} was fitted before: fitting it again is a new release and "
                 "spends its (epsilon, delta) again (a refit neither reuses nor continues "
                 "the previous fit's spend; there is no warm start)." if refit else
                 " Every fit spends its own (epsilon, delta) (a refit and each clone's fit "
                 "too).")
        raise BudgetError(
            f"{owner}.fit needs ({epsilon:g}, {delta:g}), and the accountant has spent "
            f"({spent_epsilon:g}, {spent_delta:g}) in {entries} entr"
            f"{'y' if entries == 1 else 'ies'} of its budget ({accountant.epsilon:g}, "
            f"{accountant.delta:g}).{again} Nothing was spent: raise the accountant's "
            "budget, or lower epsilon and delta.") from exc


def spend(accountant, epsilon, delta, relation=None, redeems=()):
    """``accountant.spend(epsilon, delta)``, its check and its record as one step.

    ``relation``: the neighbouring relation the spend's guarantee holds for
    (``"add/remove-one"`` or ``"replace-one"``). The first spend of the other relation
    on the same ledger warns (:class:`PrivacyLeakWarning`): on the same data, their
    sum is a guarantee under neither. A prepaid ledger is left to its search, which
    checks its candidates' relations before the charge.

    ``redeems``: the :class:`~skdpminimax.privacy.composition.Release` records the
    spending fit composes with (its ``composed_with``), whose charge counts towards
    its guarantee. Each must have been charged on this ledger
    (:func:`spend_release`) and not be redeemed already: a release composed with two
    fits would make the ledger's sum under-count. Checked, then marked, under the
    spend's lock; nothing is spent when a check fails. On a prepaid ledger they are
    not checked: its search charged every fit its whole ``epsilon`` in advance.
    """
    with _SPEND_LOCK:
        tracked = redeems and not isinstance(accountant, PrepaidLedger)
        if tracked:
            _check_redeemable(accountant, redeems)
        result = accountant.spend(epsilon, delta)
        try:
            _ENTRY_THREADS.setdefault(accountant, {})[
                len(accountant.spent_budget) - 1] = threading.get_ident()
        except TypeError:  # a ledger that cannot be referenced weakly: not tracked
            pass
        if tracked:
            _REDEEMED_RELEASES.setdefault(accountant, set()).update(r.token for r in redeems)
        mixed = relation is not None and _note_relation(accountant, relation)
    if mixed:
        warnings.warn(
            f"This accountant now holds spends under two neighbouring relations, "
            f"add/remove-one and replace-one (this fit: {relation}). If they read the same "
            f"data: {MIXED_RELATIONS_ADVICE}", PrivacyLeakWarning)
    return result


def spend_release(accountant, release):
    """Charge a :class:`~skdpminimax.privacy.composition.Release` on ``accountant``
    (its ``(epsilon, delta)``, add/remove-one), so that one later fit on this ledger
    may compose with it (``composed_with``). ``DPStandardScaler`` charges its
    ``release_`` so; use this for a release of your own whose mechanisms the record
    describes. ``accountant``: a ``BudgetAccountant`` or ``None`` (diffprivlib's
    default). Returns the ledger."""
    accountant = resolve_accountant(accountant)
    with _SPEND_LOCK:
        spend(accountant, release.epsilon, release.delta, relation=release.relation)
        try:
            _CHARGED_RELEASES.setdefault(accountant, {})[release.token] = release
            entry = len(accountant.spent_budget) - 1
            _RELEASE_ENTRIES.setdefault(accountant, {})[entry] = release
        except TypeError:  # a ledger that cannot be referenced weakly: not tracked
            pass
    return accountant


def pending_releases(accountant):
    """The releases charged on ``accountant`` (:func:`spend_release`) by the calling
    thread since that thread's last other entry, in the order charged: what
    ``composed_with="pending"`` composes (in a ``Pipeline``, the ``DPStandardScaler``
    fitted just before; not one that another spend followed, a fit's or a diffprivlib
    model's). Other threads' spends through this library are passed over, so pipelines
    fitted in threads on one ledger each compose their own scaler's release; a spend
    the library did not make (a diffprivlib model's) ends the releases, whichever thread
    made it. A prepaid ledger holds none (its search charged each fit its whole
    epsilon)."""
    if isinstance(accountant, PrepaidLedger):
        return ()
    with _SPEND_LOCK:
        try:
            entries = _RELEASE_ENTRIES.get(accountant, {})
            redeemed = _REDEEMED_RELEASES.get(accountant, set())
            threads = _ENTRY_THREADS.get(accountant, {})
        except TypeError:
            return ()
        me, trailing = threading.get_ident(), []
        for entry in range(len(accountant.spent_budget) - 1, -1, -1):
            thread = threads.get(entry)
            if thread is not None and thread != me:
                continue  # another thread's spend: not this thread's sequence
            if thread is None or entry not in entries:
                break  # this thread's other entry, or a spend made outside the library
            trailing.append(entries[entry])
        return tuple(r for r in reversed(trailing) if r.token not in redeemed)


def _check_redeemable(accountant, releases):
    try:
        charged = _CHARGED_RELEASES.get(accountant, {})
        redeemed = _REDEEMED_RELEASES.get(accountant, set())
    except TypeError:
        charged, redeemed = {}, set()
    tokens = [r.token for r in releases]
    if len(set(tokens)) != len(tokens):
        raise ValueError("composed_with names the same release twice. Nothing was spent.")
    for release in releases:
        if charged.get(release.token) != release:  # by token and every field
            raise ValueError(
                "A release in composed_with was not charged on this fit's ledger as it "
                "is (charge it with skdpminimax.privacy.spend_release, or fit the "
                "DPStandardScaler with the same accountant; a record changed after its "
                "charge is not the one charged): the ledger's sum would miss it. Nothing "
                "was spent.")
        if release.token in redeemed:
            raise ValueError(
                "A release in composed_with has been composed with another fit on this "
                "ledger already; a release can be composed with one fit only (with more, "
                "the ledger's sum would under-count). Drop it from composed_with. "
                "Nothing was spent.")


def _note_relation(accountant, relation):
    """Record ``relation`` for ``accountant``; whether the ledger now first mixes two."""
    if isinstance(accountant, PrepaidLedger):
        return False
    try:
        seen = _RELATIONS.setdefault(accountant, set())
    except TypeError:  # a ledger that cannot be referenced weakly: not tracked
        return False
    first_mix = relation not in seen and len(seen) == 1
    seen.add(relation)
    return first_mix


def spend_all(accountant, entries):
    """Spend every ``(epsilon, delta)`` of ``entries`` or none: the total is checked and
    the entries recorded under one lock, so no other spend comes in between."""
    entries = list(entries)
    with _SPEND_LOCK:
        total = accountant.total(spent_budget=accountant.spent_budget + entries)
        if not Budget(accountant.epsilon, accountant.delta) >= total:
            own = accountant.total(spent_budget=entries)
            raise BudgetError(
                f"{len(entries)} entries totalling {tuple(own)} on their own, {tuple(total)} "
                f"with what the accountant has spent already, exceed its budget "
                f"({accountant.epsilon}, {accountant.delta}). Nothing was spent.")
        for epsilon, delta in entries:
            accountant.spend(epsilon, delta)

# Key of the process stamp in a pickled estimator's state. It must not end with "_"
# (a failed fit deletes trailing-underscore attributes).
_ORIGIN = "_skdpminimax_ledger_origin"

# Which process a pickled estimator left: its pid and a token drawn when this module
# loaded. The pid tells a forked worker (same token) from its parent; the token tells
# a process elsewhere that happens to have the same pid (pid 1 in two containers).
_PROCESS_TOKEN = secrets.token_hex(8)


def _process_stamp():
    return os.getpid(), _PROCESS_TOKEN


class LostLedgerError(RuntimeError):
    """A fit would spend on a copy of the caller's ledger: the spend would be lost."""


class PrepaidLedger(BudgetAccountant):
    """A ledger whose fits were paid for, in advance, on the caller's accountant.

    Made by :func:`skdpminimax.search.charge_search` after it has spent one entry
    per fit of a search on the caller's accountant. Estimators of that search spend
    on this ledger instead, in whichever process they run: a spend is accepted if
    what is left of one of the prepaid entries covers it, consumes that much of it,
    and is recorded locally (in the worker's copy) without being charged again. In
    one process every clone shares the ledger (``deepcopy`` returns it), so the fits
    there spend at most what was charged.

    The search's fit runs inside :meth:`running`: only then may the ledger be
    pickled (to the search's workers), and when it ends the ledger is closed, after
    which every spend is refused. A copy made before the search ran (which would
    hold every entry) is thus impossible, and a copy made after it is closed.

    Parameters
    ----------
    prepaid : iterable of (float, float), default=()
        The ``(epsilon, delta)`` budgets of single fits that were charged.
    payer : BudgetAccountant, default=None
        The accountant that was charged: the refitted model of the search is handed
        back to it (not pickled with the ledger).

    Notes
    -----
    **Privacy.** The prepaid ledger adds no accounting of its own: the guarantee is
    the composition, by the caller's ``BudgetAccountant``, of the entries
    :func:`~skdpminimax.search.charge_search` spent (one per fit). A fit whose
    ``(epsilon, delta)`` exceeds what is left of every prepaid entry, or that comes
    after the ledger was closed, is refused with :class:`~diffprivlib.utils.BudgetError`
    before it touches the data.

    A worker's copy, made while the search ran, cannot learn that the search has
    ended: it stays open in the worker, holding every entry, until the worker drops
    it. scikit-learn's searches drop the estimators fitted in workers; code that keeps
    them (a scorer or callback that stores the estimator, say) could spend the
    prepaid entries again there, uncharged.
    """

    def __init__(self, prepaid=(), *, payer=None):
        super().__init__()  # no ceiling of its own: the caller's ledger enforced it
        entries = [(float(e), float(d)) for e, d in prepaid]
        self.prepaid = tuple(sorted(set(entries)))
        self.payer = payer
        # What is left of each prepaid entry: a fit consumes (part of) one, so in one
        # process the search's fits together spend at most what was charged (the
        # refit's entry, a sum over the candidate's private steps, serves several).
        self._remaining = sorted([e, d] for e, d in entries)
        self.closed = False
        self._running = False

    def _covering(self, epsilon, delta):
        """Index of the smallest remaining entry that covers ``(epsilon, delta)``."""
        tol = 1e-12
        for i, (e, d) in enumerate(self._remaining):
            if epsilon <= e + tol and delta <= d + tol:
                return i
        return None

    def check(self, epsilon, delta):
        """Accept ``(epsilon, delta)`` if what is left of a prepaid entry covers it."""
        super().check(epsilon, delta)
        if self.closed:
            raise BudgetError(
                "This prepaid ledger is closed: the search it was charged for has run. Fit "
                "with your own accountant (set_params(accountant=...)) to be charged again."
            )
        if self._covering(epsilon, delta) is not None:
            return True
        raise BudgetError(
            f"A fit asks for ({epsilon}, {delta}) but what is left of this search's prepaid "
            f"entries does not cover it (prepaid per fit: {list(self.prepaid)}); charge the "
            "search again with the budgets it uses."
        )

    def spend(self, epsilon, delta):
        """Record ``(epsilon, delta)`` and consume it from a covering prepaid entry."""
        with _SPEND_LOCK:
            super().spend(epsilon, delta)  # checks first
            entry = self._remaining[self._covering(epsilon, delta)]
            entry[0] -= epsilon
            entry[1] -= delta
            self._remaining.sort()
        return self

    def close(self):
        """Refuse every later spend (the search has run)."""
        self.closed = True

    @contextmanager
    def running(self):
        """The search's fit: the ledger may travel to its workers, and is closed after.

        Raises
        ------
        BudgetError
            If the ledger is closed already (its search has run).
        """
        if self.closed:
            raise BudgetError(
                "This prepaid search has run and its prepaid ledger is closed: charge the "
                "search again (charge_search or PrivateSearchCV) to fit it again."
            )
        self._running = True
        try:
            yield self
        finally:
            self._running = False
            self.close()

    def __getstate__(self):
        # A pickled copy holds every entry left and is consumed apart from this ledger:
        # it may be made only for the search's workers, while the search runs (or once
        # closed, when a copy can spend nothing).
        if not (self._running or self.closed):
            raise TypeError(
                "A prepaid ledger can be pickled only while its search runs: a copy made "
                "before would hold every prepaid entry and could be fitted apart from this "
                "one, uncharged. Fit the prepaid search in the process that charged it."
            )
        state = dict(self.__dict__)
        state["payer"] = None  # the caller's ledger stays with the caller
        return state

    def __deepcopy__(self, memo):
        # scikit-learn's clone deep-copies a diffprivlib model's accountant: in one
        # process every clone must share this ledger, so that its entries are consumed
        # once and closing it reaches them all. (Pickling, to a worker, still copies.)
        return self

    def __repr__(self):
        return f"PrepaidLedger(prepaid={list(self.prepaid)}, n_spent={len(self.spent_budget)})"


def fit_ledger(accountant, origin_pid=None):
    """The ledger a fit may spend on, or :class:`LostLedgerError`.

    Parameters
    ----------
    accountant : BudgetAccountant or None
        The estimator's ``accountant`` parameter.
    origin_pid : tuple or None
        The process stamp left by pickling (pid and a per-process token) (``None``
        if the estimator was never pickled, or its accountant was set again since).

    Returns
    -------
    BudgetAccountant
        The accountant to check and spend on.
    """
    if origin_pid is None or isinstance(accountant, PrepaidLedger):
        return resolve_accountant(accountant)
    tuning = ("To tune with n_jobs > 1 or on a cluster, wrap the search in "
              "skdpminimax.search.PrivateSearchCV (or charge it with charge_search): it charges "
              "your accountant in this process for every fit before the search starts.")
    if accountant is not None:
        raise LostLedgerError(
            "This estimator's accountant is a copy of your BudgetAccountant made by pickling "
            "(a joblib worker, a Dask worker or deepcopy): spending on it would not reach your "
            f"ledger and the budget would be lost. {tuning} To fit this copy anyway, attach "
            "the ledger again with set_params(accountant=...).")
    if origin_pid != _process_stamp():
        raise LostLedgerError(
            f"This estimator (or the one it was cloned from) was pickled in process "
            f"{origin_pid} and is being fitted in process {_process_stamp()} with "
            "accountant=None: the spend would go to this process's default accountant, "
            "not necessarily the caller's, and in a worker the budget would be lost. To "
            "refit a model loaded from disk, name the ledger that pays: "
            "set_params(accountant=your BudgetAccountant, or "
            "BudgetAccountant.load_default() for this process's default). " + tuning)
    return resolve_accountant(None)


class LedgerGuardMixin:
    """Share the ``accountant`` across clones; refuse to spend on a pickled copy.

    For estimators with an ``accountant`` parameter. ``clone`` keeps the very same
    accountant object (one ledger for every candidate, fold and refit in this
    process); pickling stamps the state with the process id so that
    :meth:`_fit_ledger` can tell a copy from the caller's ledger.
    ``set_params(accountant=...)`` removes the stamp: the ledger set is the caller's.
    """

    def __sklearn_clone__(self):
        # clone() deep-copies parameters, which would split a user's ledger into
        # copies; the accountant is shared on purpose, so every clone spends on it.
        new = super().__sklearn_clone__()
        new.accountant = self.accountant
        if _ORIGIN in self.__dict__:
            new.__dict__[_ORIGIN] = self.__dict__[_ORIGIN]
        return new

    def __copy__(self):
        # A shallow copy holds the very same accountant object: nothing to stamp
        # (copy.copy would otherwise go through __getstate__ and be refused as a
        # pickled copy). A stamp already there stays: a copy of a copy is one too.
        new = type(self).__new__(type(self))
        new.__dict__.update(self.__dict__)
        return new

    def __getstate__(self):
        # A copy: object.__getstate__ may return the live __dict__, and the stamp
        # belongs on the pickled copy only, never on the original.
        state = dict(super().__getstate__())
        state.setdefault(_ORIGIN, _process_stamp())  # the first process it left
        return state

    def set_params(self, **params):
        """Set parameters; setting ``accountant`` re-attaches the caller's ledger."""
        if "accountant" in params:
            self.__dict__.pop(_ORIGIN, None)
        return super().set_params(**params)

    def _fit_ledger(self):
        return fit_ledger(self.accountant, self.__dict__.get(_ORIGIN))
