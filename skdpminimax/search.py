"""Private hyperparameter search that scales out without losing the budget.

Tuning on private data is not free: every fit of every candidate on every split
(and the refit) is a private release, and the caller's
:class:`~diffprivlib.BudgetAccountant` must pay for each. In one process a shared
accountant sees every fit (clones share it). With ``n_jobs > 1`` or a cluster, fits
run on pickled copies and their spend would be lost; skdpminimax estimators refuse
to fit there (:class:`~skdpminimax.privacy.ledger.LostLedgerError`).

This module makes such searches correct:

* :func:`search_budgets` lists, without spending, one ``(epsilon, delta)`` entry per
  private fit the search will run;
* :func:`charge_search` checks the input as the fits will, spends those entries on
  the caller's accountant, in the calling process, *before* the search starts (all
  or nothing), and returns a copy of the search (:class:`PrepaidGridSearchCV`,
  :class:`PrepaidRandomizedSearchCV`) whose estimators spend on a
  :class:`~skdpminimax.privacy.ledger.PrepaidLedger` instead: nothing is counted
  twice, whichever process runs the fits. Its ``fit`` runs once: it closes the
  prepaid ledger and hands the refitted model back to the caller's accountant;
* :class:`PrivateSearchCV` wraps a ``GridSearchCV`` or ``RandomizedSearchCV`` and
  does both at every ``fit``.

One entry per fit on a training fold needs folds that one changed row changes by that
row only: an int ``cv`` is drawn as :class:`~skdpminimax.folds.IndependentFolds`, and
other splitters not known to be stable get a
:class:`~diffprivlib.utils.PrivacyLeakWarning`. The choice of the candidate to refit is
a release of the validation rows too: ``selection_epsilon`` makes it with the
exponential mechanism (:mod:`skdpminimax.selection`), charged as one more entry;
without it, a search that refits warns.

Bad input is refused before the charge: each private step of each candidate runs
its fit's own checks first, as far as they can run outside the search (see
:func:`charge_search`, "Checks before the charge").

diffprivlib's models in the searched pipeline (its ``StandardScaler``, say) are
private steps too: each of their fits is charged ``(epsilon, 0)``. They need it more
than skdpminimax's estimators: scikit-learn's ``clone`` deep-copies their accountant,
so in a plain search their spend would reach copies only, even with ``n_jobs=1``.
They are private for replace-one neighbours with the row count public; the search
warns (:class:`~diffprivlib.utils.PrivacyLeakWarning`) when they meet a
Poisson-sampled, add/remove-one skdpminimax fit, whose sum with them holds under
neither relation.

Private steps are looked for inside pipelines, feature unions, column transformers
and target transformers, which fit each child once per fit. A private step under any
other meta-estimator (a calibrated or bagged classifier, a nested search, or one
hidden in a list parameter) may be fitted several times per fit and is refused with
``TypeError``: one entry per fit would under-charge it. Before anything is spent, every
private step of every candidate is checked to hold the prepaid ledger. In one process
the fits consume the prepaid entries (no more than was charged can be spent); the
prepaid ledger can be pickled (to the workers) only while its search runs, and is
closed when the search has run; a prepaid ledger is never accepted as the ledger to
charge.

The entries are spent one per fit, so the ``BudgetAccountant`` composes them (with
its ``slack`` if set). The refit is charged one entry that covers every candidate:
the largest total epsilon and the largest total delta of one candidate's private
steps.
"""

import copy
import warnings
from contextlib import ExitStack
from numbers import Integral, Real

import numpy as np
from diffprivlib.accountant import BudgetAccountant
from diffprivlib.utils import Budget, BudgetError, PrivacyLeakWarning
from diffprivlib.validation import DiffprivlibMixin
from sklearn import get_config
from sklearn.base import BaseEstimator, MetaEstimatorMixin, clone, is_classifier
from sklearn.compose import ColumnTransformer, TransformedTargetRegressor
from sklearn.model_selection import (
    GridSearchCV,
    ParameterGrid,
    ParameterSampler,
    RandomizedSearchCV,
    check_cv,
)
from sklearn.metrics import check_scoring
from sklearn.metrics._scorer import _check_multimetric_scoring
from sklearn.pipeline import FeatureUnion, Pipeline
from sklearn.preprocessing import PolynomialFeatures
from sklearn.utils._param_validation import Interval
from sklearn.utils.metadata_routing import get_routing_for_object, process_routing
from sklearn.utils.metaestimators import _safe_split, available_if
from sklearn.utils.validation import (
    _check_method_params,
    _num_samples,
    check_consistent_length,
)

from skdpminimax._compat import requires_fit
from skdpminimax.base import DPMinimaxEstimator
from skdpminimax.folds import IndependentFolds, unstable_folds_reason
from skdpminimax.preprocessing import DPStandardScaler
from skdpminimax.privacy.budget import budget_entry, resolve_accountant
from skdpminimax.privacy.ledger import (
    MIXED_RELATIONS_ADVICE,
    LedgerGuardMixin,
    PrepaidLedger,
    fit_ledger,
    spend_all,
)
from skdpminimax.selection import (
    SELECTION_SCORING,
    ExponentialSelection,
    OneClassFoldAUC,
    check_selection_epsilon,
    fold_pair_counts,
)

__all__ = ["IndependentFolds", "PrepaidGridSearchCV", "PrepaidRandomizedSearchCV",
           "PrivateSearchCV", "charge_search", "search_budgets"]


# skdpminimax's private steps: clones share their accountant, a pickled copy refuses
# to spend (LedgerGuardMixin), and their fits check their input before the spend
# (_check_fit).
_OURS = (DPMinimaxEstimator, DPStandardScaler)


def _is_private(estimator):
    # diffprivlib's models (a private StandardScaler in a Pipeline, say) spend on their
    # accountant too, but scikit-learn's clone deep-copies it: their spend in a search
    # would reach copies only, so the search charges them like its own estimators.
    return isinstance(estimator, (*_OURS, DiffprivlibMixin))


def _children(estimator):
    """``[(parameter name, child)]`` of a container known to fit each child once per fit
    of its own, or ``None`` for any other estimator."""
    if isinstance(estimator, Pipeline):
        return list(estimator.steps)
    if isinstance(estimator, FeatureUnion):
        return list(estimator.transformer_list)
    if isinstance(estimator, ColumnTransformer):
        return ([(name, t) for name, t, _ in estimator.transformers]
                + [("remainder", estimator.remainder)])
    if isinstance(estimator, TransformedTargetRegressor):
        return [("regressor", estimator.regressor), ("transformer", estimator.transformer)]
    return None


def _private_steps(estimator, path=""):
    """``[(parameter path, estimator)]`` of every private estimator inside ``estimator``:
    skdpminimax's and diffprivlib's.

    Only containers that fit each child once (pipelines, unions, column transformers,
    target transformers) are searched: under any other meta-estimator (a calibrated
    or bagged classifier, a nested search) a private step may be fitted several times
    per fit, which one entry per fit would under-charge, so it is refused.
    """
    if _is_private(estimator):
        return [(path, estimator)]
    children = _children(estimator)
    if children is None:
        if hasattr(estimator, "get_params") and _holds_private(
                list(estimator.get_params(deep=False).values())):
            raise TypeError(
                f"A private estimator sits inside {type(estimator).__name__}, which may fit it "
                "several times per fit: its cost cannot be charged in advance. Search a "
                "Pipeline (or FeatureUnion, ColumnTransformer, TransformedTargetRegressor) "
                "of private estimators, or charge the fits yourself."
            )
        return []
    steps = []
    for name, child in children:
        steps.extend(_private_steps(child, f"{path}__{name}" if path else name))
    return steps


def _holds_private(value):
    """Whether a private estimator hides anywhere in ``value``: parameters of
    estimators, and the items of lists, tuples and dicts (fail closed)."""
    if _is_private(value):
        return True
    if isinstance(value, (list, tuple)):
        return any(_holds_private(v) for v in value)
    if isinstance(value, dict):
        return any(_holds_private(v) for v in value.values())
    if hasattr(value, "get_params") and not isinstance(value, type):
        return _holds_private(list(value.get_params(deep=False).values()))
    return False


def _check_search(search):
    # Exact classes: a subclass may fit otherwise (and its prepaid copy would lose it).
    if type(search) not in _SEARCHES:
        raise TypeError(
            "Only GridSearchCV and RandomizedSearchCV (not subclasses) can be charged in "
            f"advance (their fits are known before they start); got {type(search).__name__}."
        )
    if isinstance(search, RandomizedSearchCV) and not isinstance(search.random_state, Integral):
        raise ValueError(
            "RandomizedSearchCV must have an int random_state to be charged in advance: the "
            "candidates charged must be the candidates searched."
        )


def _candidates(search):
    if isinstance(search, GridSearchCV):
        return list(ParameterGrid(search.param_grid))
    return list(ParameterSampler(search.param_distributions, search.n_iter,
                                 random_state=search.random_state))


def _candidate_estimators(search):
    """A fresh estimator for each candidate of the search, as the search will fit it."""
    for params in _candidates(search):
        yield clone(search.estimator).set_params(**params)


def _candidate_steps(search, candidates=None):
    """The private steps of each candidate, as the search will fit it (``candidates``:
    :func:`_candidate_estimators`, if already built)."""
    if candidates is None:
        candidates = _candidate_estimators(search)
    return [[step for _, step in _private_steps(candidate)] for candidate in candidates]


def _grids(search):
    grid = search.param_grid if isinstance(search, GridSearchCV) else search.param_distributions
    return [grid] if isinstance(grid, dict) else list(grid)


def _search_cv(search, y):
    """The splitter the search's ``fit`` will use."""
    return check_cv(search.cv, y, classifier=is_classifier(search.estimator))


def _fit_budgets(steps):
    """One budget per private step of a candidate: what one fit of it spends."""
    # diffprivlib's models are pure epsilon-DP (they spend (epsilon, 0)).
    return [budget_entry(step.epsilon, getattr(step, "delta", 0.0)) for step in steps]


def search_budgets(search, X, y=None, *, groups=None, selection_epsilon=None):
    """The privacy cost of a search: one entry per private fit it will run.

    Nothing is spent and no data value is read (``X``, ``y`` and ``groups`` only
    size the cross-validation splits).

    Parameters
    ----------
    search : GridSearchCV or RandomizedSearchCV
        An unfitted search over an estimator that contains skdpminimax estimators
        or diffprivlib models (each of their fits is one entry ``(epsilon, 0)``). A
        ``RandomizedSearchCV`` needs an int ``random_state``.
    X : array-like of shape (n_samples, n_features)
        Training data the search will be fitted on.
    y : array-like of shape (n_samples,), default=None
        Targets the search will be fitted on.
    groups : array-like of shape (n_samples,), default=None
        Group labels for group-aware splitters.
    selection_epsilon : float, default=None
        The private choice's budget (see :func:`charge_search`); ``None``: no choice
        is charged.

    Returns
    -------
    budgets : list of budgets
        ``PrivacyBudget`` entries (``(epsilon, 0)`` ones with the same attributes for
        diffprivlib steps): ``n_candidates x n_splits`` entries (times the number of
        private steps of each candidate), then one entry for the refit if
        ``search.refit``, then ``(selection_epsilon, 0)`` if given.
    """
    _check_search(search)
    search = _with_named_scoring(search, selection_epsilon)
    _check_selection(search, selection_epsilon)
    n_splits = _search_cv(search, y).get_n_splits(X, y, groups)
    return _budgets(search, _candidate_steps(search), n_splits, selection_epsilon)


def _budgets(search, candidate_steps, n_splits, selection_epsilon=None):
    """:func:`search_budgets` from the candidates' private steps."""
    per_candidate = [_fit_budgets(steps) for steps in candidate_steps]
    budgets = [b for fits in per_candidate for _ in range(n_splits) for b in fits]
    if search.refit and any(per_candidate):
        # The refit's candidate is unknown in advance: charge what covers every one.
        epsilon = max(sum(b.epsilon for b in fits) for fits in per_candidate)
        delta = max(sum(b.delta for b in fits) for fits in per_candidate)
        budgets.append(budget_entry(epsilon, min(delta, 1 - 1e-12)))
    if selection_epsilon is not None:
        budgets.append(budget_entry(selection_epsilon, 0.0))
    return budgets


def _with_named_scoring(search, selection_epsilon):
    """``scoring=None`` on a classifier is scikit-learn's default, its ``score``:
    accuracy. A private choice names it, so that it counts correct predictions (a
    ``score`` method the estimator overrides is then not used)."""
    if selection_epsilon is None or search.scoring is not None or not is_classifier(
            search.estimator):
        return search
    search = copy.copy(search)  # the estimators stay the caller's
    search.scoring = "accuracy"
    return search


def _scorers(estimator, scoring):
    """The scorers a search of ``estimator`` will call (scikit-learn's own resolution:
    a missing ``score`` method with ``scoring=None`` raises its ``TypeError`` here)."""
    if scoring is None or callable(scoring) or isinstance(scoring, str):
        return [check_scoring(estimator, scoring)]
    return list(_check_multimetric_scoring(estimator, scoring).values())


def _check_scoring_works(search, candidates):
    """Refuse, before the charge, a scoring every fold would fail (NaN scores for the
    whole budget): no ``score`` method with ``scoring=None``; a scorer that reads a
    classifier's output (a classification or ranking metric, ``decision_function``,
    ``predict_proba``) on an estimator that is not a classifier; a response method the
    estimator does not offer. Callable scorers of the user's are not inspected."""
    for candidate in candidates:
        name = type(candidate).__name__
        for scorer in _scorers(candidate, search.scoring):
            methods = getattr(scorer, "_response_method", None)
            func = getattr(scorer, "_score_func", None)
            if methods is None or func is None:
                continue
            methods = (methods,) if isinstance(methods, str) else tuple(methods)
            reads_classes = (methods != ("predict",) or getattr(func, "__module__", "")
                             in ("sklearn.metrics._classification", "sklearn.metrics._ranking"))
            if reads_classes and not is_classifier(candidate):
                raise ValueError(
                    f"scoring={search.scoring!r} ({func.__name__}) scores a classifier's "
                    f"output, and {name} is not a classifier: every fold would score NaN "
                    "after the budget is charged. Use a scorer for its task (or a callable "
                    "scorer; DPSaddleEstimator: pass task='classification'). Nothing was "
                    "spent.")
            if not any(hasattr(candidate, m) for m in methods):
                raise ValueError(
                    f"scoring={search.scoring!r} needs {' or '.join(methods)}, which {name} "
                    "does not offer: every fold would score NaN after the budget is "
                    "charged. Nothing was spent.")


def _check_selection(search, selection_epsilon):
    """Refuse, before anything is spent, a private choice the search cannot make."""
    if selection_epsilon is None:
        return
    check_selection_epsilon(selection_epsilon)
    if search.refit is not True:
        raise ValueError("selection_epsilon chooses the candidate to refit: the search needs "
                         f"refit=True, got refit={search.refit!r}. Nothing was spent.")
    if not is_classifier(search.estimator):
        raise ValueError(
            f"selection_epsilon chooses by counts of correct predictions (scoring in "
            f"{SELECTION_SCORING}), which a regressor's scores (R^2, errors) are not: a "
            "private choice is for classifiers. Tune a regressor on public data, or search "
            "with refit=False (its scores are not covered by the charge). Nothing was spent.")
    if not (isinstance(search.scoring, str) and search.scoring in SELECTION_SCORING):
        raise ValueError(
            f"selection_epsilon needs scoring in {SELECTION_SCORING} (scores that convert "
            f"into counts one row moves by at most 1, skdpminimax.selection); got "
            f"scoring={search.scoring!r} (None means 'accuracy' for a classifier). Nothing "
            "was spent."
        )


def _selection(search, selection_epsilon, y, folds):
    """The private choice of the refit, for the search's scoring and folds."""
    pair_counts = fold_pair_counts(y, folds) if search.scoring == "roc_auc" else None
    return ExponentialSelection(selection_epsilon, [len(test) for _, test in folds],
                                np.random.default_rng(), scoring=search.scoring,
                                pair_counts=pair_counts)


def _with_private_folds(search):
    """``search`` with an int (or default) ``cv`` drawn as :class:`IndependentFolds`:
    scikit-learn's default splitters can move other rows between folds when one row
    changes, which the per-fit charge does not cover (:mod:`skdpminimax.folds`)."""
    if search.cv is not None and not isinstance(search.cv, Integral):
        return search
    # A shallow copy: the estimators (and their accountants) must stay the caller's.
    search = copy.copy(search)
    search.cv = IndependentFolds(5 if search.cv is None else search.cv)
    return search


def _raising_on_failure(search):
    """``search`` with ``error_score="raise"``: the private choice counts each fold's
    correct predictions, and one row can make a whole fold's fit or score fail (a
    transform that meets a value it cannot take, say), which no count of 0 or any other
    stand-in would keep within the mechanism's sensitivity of 1."""
    if search.error_score == "raise":
        return search
    search = copy.copy(search)  # the estimators stay the caller's, as for the folds
    search.error_score = "raise"
    return search


def _has_fixed_seed(candidate_steps):
    """Whether a private step of some candidate has a ``random_state`` other than None."""
    return any(getattr(step, "random_state", None) is not None
               for steps in candidate_steps for step in steps)


def _searched_steps(search):
    """Every private step of the search's estimator and of its grids' estimator values."""
    steps = [step for _, step in _private_steps(search.estimator)]
    for grid in _grids(search):
        for values in grid.values():
            for value in values if isinstance(values, (list, tuple, np.ndarray)) else ():
                steps.extend(step for _, step in _private_steps(value))
    return steps


def _caller_ledger(search, accountant):
    """The accountant to charge: the one given, or the one the private steps share.

    Inferred from skdpminimax's steps only, which share their accountant across clones
    and refuse a pickled copy. A diffprivlib model's accountant may be a deep copy made
    by ``clone`` (or pickling) that nothing can tell from the caller's: it is accepted
    only if it is the very ledger the skdpminimax steps hold (or, with none of them,
    diffprivlib's default ledger of this process); otherwise ``accountant=`` is needed.
    """
    if accountant is not None:
        ledger = _not_prepaid(fit_ledger(accountant))
        for step in _searched_steps(search):
            own = step.accountant if isinstance(step, _OURS) else None
            if own is not None and own is not ledger and not isinstance(own, PrepaidLedger):
                # The search would re-point the step at `ledger`: the ledger the caller
                # set on it would show no spend for fits made on its data.
                raise ValueError(
                    f"The search's {type(step).__name__} has its own accountant, not the "
                    "accountant= given to the search, which is the one charged (and the "
                    "refitted model's). Pass the same ledger to both, or leave the "
                    "estimator's accountant=None. Nothing was spent.")
        return ledger
    steps = _searched_steps(search)
    ours = [step for step in steps if isinstance(step, _OURS)]
    ledgers = {id(ledger): ledger for ledger in (step._fit_ledger() for step in ours)}
    if len(ledgers) > 1:
        raise ValueError("The private estimators of this search spend on different accountants; "
                         "pass accountant= to say which one pays for the search.")
    ledger = next(iter(ledgers.values())) if ledgers else resolve_accountant(None)
    for step in steps:
        if not isinstance(step, _OURS) and step.accountant is not ledger:
            raise ValueError(
                f"The search's {type(step).__name__} spends on an accountant that is not the "
                "one its skdpminimax estimators share (or diffprivlib's default ledger): it "
                "may be a copy made by clone or pickling. Pass accountant= to say which "
                "ledger pays for the search."
            )
    return _not_prepaid(ledger)


def _not_prepaid(ledger):
    if isinstance(ledger, PrepaidLedger):
        raise ValueError(
            "The ledger to charge is a prepaid ledger, left by an earlier charged search: "
            "charging it would charge no one. Pass accountant= (your BudgetAccountant)."
        )
    return ledger


def _prepay(value, ledger):
    """``value`` with its private steps spending on ``ledger``: estimators are cloned,
    lists and tuples (a ``steps`` value, say) rebuilt item by item, the rest kept."""
    if isinstance(value, (list, tuple)):
        return type(value)(_prepay(v, ledger) for v in value)
    if not hasattr(value, "get_params") or isinstance(value, type):
        return value
    if not _private_steps(value):
        return value
    return _point_at(clone(value), ledger)


def _point_at(estimator, ledger):
    """Set, in place, the accountant of every private step of ``estimator`` to ``ledger``."""
    # Deepest paths first, so that setting an outer step keeps the inner settings.
    for path, _ in sorted(_private_steps(estimator), key=lambda s: -s[0].count("__")):
        estimator.set_params(**{(path + "__" if path else "") + "accountant": ledger})
    return estimator


def _prepaid_grid(grid, ledger):
    return {key: ([_prepay(v, ledger) for v in values]
                  if isinstance(values, (list, tuple, np.ndarray)) else values)
            for key, values in grid.items()}


def _check_prepaid(search, ledger):
    """Every private step of every candidate spends on ``ledger`` (else nothing is spent)."""
    for candidate in _candidate_estimators(search):
        for _, step in _private_steps(candidate):
            if step.accountant is not ledger:
                raise ValueError(
                    f"A {type(step).__name__} of this search could not be given the prepaid "
                    "ledger (it hides in a grid value this search cannot rebuild); nothing "
                    "was spent. Put private estimators in the grid as estimators or lists "
                    "of estimators."
                )


def charge_search(search, X, y=None, *, groups=None, accountant=None, selection_epsilon=None,
                  **params):
    """Charge a search's whole privacy cost now; return it ready to run anywhere.

    Checks, for every private step of every candidate, what its fit checks before
    spending (see Notes); then spends, on the caller's accountant and in the calling
    process, one entry per private fit of the search (see :func:`search_budgets`).
    If the entries do not all fit in the remaining budget, nothing is spent and
    :class:`~diffprivlib.utils.BudgetError` is raised. Returns an unfitted copy of
    ``search`` whose private estimators spend on a
    :class:`~skdpminimax.privacy.ledger.PrepaidLedger`, so the fits, in this process,
    in joblib workers (``n_jobs``) or on a Dask cluster, are not charged again.

    Parameters
    ----------
    search : GridSearchCV or RandomizedSearchCV
        The search to charge (not modified).
    X : {array-like, sparse matrix} of shape (n_samples, n_features)
        Training data the search will be fitted on (checked, see Notes).
    y : array-like of shape (n_samples,), default=None
        Targets the search will be fitted on.
    groups : array-like of shape (n_samples,), default=None
        Group labels for group-aware splitters.
    accountant : BudgetAccountant, default=None
        The ledger to charge. ``None``: the accountant the search's private
        estimators share (diffprivlib's default one if they have none).
    selection_epsilon : float, default=None
        Choose the candidate to refit privately, with the exponential mechanism over
        the candidates' correct validation predictions or correctly ordered pairs
        (:class:`~skdpminimax.selection.ExponentialSelection`), charged one more entry
        ``(selection_epsilon, 0)``. Needs ``refit=True`` and ``scoring='accuracy'``
        (or ``'roc_auc'`` with binary ``y``); the search then runs with
        ``error_score='raise'`` (a failed fold would count nothing, and one row can
        make a fold fail).
        ``None``: the search chooses by its noise-free scores, with a
        :class:`~diffprivlib.utils.PrivacyLeakWarning` when it refits.
    **params : dict
        The other parameters the search's ``fit`` will get (for example
        ``sensitive_features``), routed as the search routes them and checked.

    Returns
    -------
    prepaid_search : PrepaidGridSearchCV or PrepaidRandomizedSearchCV
        The ``GridSearchCV`` or ``RandomizedSearchCV`` with the same parameters (an
        int or default ``cv`` becomes :class:`IndependentFolds`; with
        ``selection_epsilon``, ``refit`` is the private choice). Fit
        it **once**, in this process, on the same data: its fit closes the prepaid
        ledger (a second fit, or a fit of a copy, is refused) and hands
        ``best_estimator_`` back to the charged accountant. Prefer
        :class:`PrivateSearchCV`, which charges at every ``fit``.

    Raises
    ------
    ValueError or TypeError
        If a check fails (nothing spent).

    Notes
    -----
    **Checks before the charge.** ``X``, ``y`` and ``groups`` must have the same
    number of rows. The scoring must be able to score every candidate: a missing
    ``score`` method with ``scoring=None``, or a scorer of a classifier's output
    (``"roc_auc"``, ``"accuracy"``, any ``predict_proba`` or ``decision_function``
    scorer) on an estimator that is not a classifier, would charge the budget for NaN
    scores (callable scorers are not inspected). For each candidate, each skdpminimax step reached through
    pipelines runs its fit's own checks (``DPMinimaxEstimator._check_fit``), on
    the full data as the refit gets it and on each training fold as the search
    slices it (rows of ``X``, ``y`` and of the sample-aligned fit parameters):
    parameters, targets and the fit parameters routed to it (``sensitive_features``).
    Where no earlier step transforms ``X``, also ``X`` itself (NaN, sparse input a
    step refuses, its norm bound) and the calibration dry run on each size. So a fold
    with one class, or without one of the declared groups, is refused here. The folds
    are drawn as the search draws them (``groups`` and routed split parameters
    included); when the splitter draws other folds at each call (it shuffles without a
    fixed ``random_state``), the prepaid search replays the checked folds in place of
    its ``cv``. A splitter whose ``get_n_splits`` disagrees with its ``split`` is
    refused. Where earlier pipeline steps transform ``X`` they are fitted (clones, on
    the full data and on each fold, as the search will) and the private step checks
    what they output. Not covered, so their fits fail after the charge: ``X`` after
    an earlier private step, or after earlier steps that fail here (only its row count
    is checked then), a step under a ``TransformedTargetRegressor``, ``FeatureUnion`` or
    ``ColumnTransformer`` (its parameters only) and diffprivlib steps (their
    ``_validate_params`` only: diffprivlib checks its own parameters and data at
    fit). A candidate that fails its checks is refused even with
    ``error_score=np.nan``, which would have charged its failing fits for nothing.

    **Privacy.** Each fit of a skdpminimax estimator is ``(epsilon, delta)``-DP
    for its own neighbouring relation, and every fit of the search (each candidate
    on each split, and the refit) is charged as one entry, so the caller's
    accountant composes them (sequential composition, or its advanced composition
    with ``slack``). One entry per fit on a training fold holds only if one row
    added, removed or replaced changes each training fold by at most that row:
    an int (or default) ``cv`` is therefore drawn as :class:`IndependentFolds`
    (each row's fold an independent draw), and any other splitter that is not known
    to be stable for the fits' relation (``KFold`` is, for replace-one only) gets a
    :class:`~diffprivlib.utils.PrivacyLeakWarning`.

    The charge covers the *fits*. The validation scores (``cv_results_``,
    ``best_score_``) are computed without noise on held-out private rows and carry
    no DP guarantee; nor does a choice of ``best_params_`` made from them, nor the
    refitted model, which reveals that choice (the search warns). With
    ``selection_epsilon`` the choice is made by the exponential mechanism, and the
    refitted model is covered by the charge: the fits (published, as far as the
    accounting goes), then the choice given them, whose utility moves by at most 1
    with one row (:mod:`skdpminimax.selection`), then the refit. The scores stay
    noise-free: publish the model, not ``cv_results_``. Like a fit's own checks, a
    refusal before the charge depends on the data (whether ``y`` has two classes,
    say) and is not private either.

    Composition needs independent noise in every fit: with ``random_state=None``
    (the default) each fit draws fresh entropy. A fixed ``random_state`` on a private
    estimator gives every fit the same noise; the search then warns
    (:class:`~diffprivlib.utils.PrivacyLeakWarning`) that the charge does not hold.

    **Where the prepaid ledger goes.** The prepaid search's fit pickles the ledger to
    its workers (only then may it be pickled) and closes it when the search has run.
    A worker's copy cannot learn that: scikit-learn drops the estimators fitted in
    workers, but code that keeps one (a scorer that stores it, say) could fit it again
    there on the entries the copy still holds, uncharged.
    """
    if groups is not None:
        params = {**params, "groups": groups}
    return _charge_search(search, X, y, accountant, params, selection_epsilon)


def _charge_search(search, X, y, accountant, params, selection_epsilon=None):
    """:func:`charge_search` with the search's ``fit`` parameters (``groups`` among them)."""
    _check_search(search)
    search = _with_named_scoring(search, selection_epsilon)
    _check_selection(search, selection_epsilon)
    search = _with_private_folds(search)
    if selection_epsilon is not None:
        search = _raising_on_failure(search)
    groups = params.get("groups")
    check_consistent_length(X, y, groups)  # as the search will, before it splits
    fit_params = _estimator_fit_params(search, params)
    # Built once: the budgets, the refusals and the warnings read the same candidates.
    candidates = list(_candidate_estimators(search))
    candidate_steps = _candidate_steps(search, candidates)
    _refuse_non_private_candidates(search, candidates, candidate_steps)
    _check_scoring_works(search, candidates)
    cv = _search_cv(search, y)  # resolved once: the count, the checks and the folds
    n_splits = cv.get_n_splits(X, y, groups)
    budgets = _budgets(search, candidate_steps, n_splits, selection_epsilon)
    ledger = _caller_ledger(search, accountant)
    # The warnings are about the search's outputs: given once the charge has been made
    # (a search refused before it, for its input or its budget, has no outputs).
    notices = []
    composing = sorted({name for candidate in candidates for name, step in
                        _private_steps(candidate)
                        if getattr(step, "composed_with", None) is not None})
    if composing:
        notices.append((
            f"composed_with is not applied to {', '.join(composing)} inside a charged "
            "search: each private step of a fit is charged its own (epsilon, delta), a "
            "DPStandardScaler's on top of the estimator's whole total. The search's fits "
            "are private as charged (more than the pipeline's total); for that total, "
            "cross-validate it with one accountant in one process (cross_validate with "
            "n_jobs=1).", UserWarning))
    if _has_fixed_seed(candidate_steps):
        notices.append((
            "A private estimator of this search has a fixed random_state: every fit of the "
            "search (each candidate on each split, and the refit) draws the same noise, so "
            "the fits' budgets do not compose as charged (two fits' outputs can cancel their "
            "noise). Leave random_state=None for a private search; fix it only for "
            "reproducible experiments.",
            PrivacyLeakWarning,
        ))
    learned = sorted({name for candidate in candidates
                      for name in _non_private_fitted_steps(candidate)})
    if learned:
        notices.append((
            f"The search's candidates fit {', '.join(learned)} on the private rows without "
            "noise: the released model (best_estimator_, and every fold's model) holds what "
            "it learned from them (means, scales, categories, components), which the charge "
            "does not cover. Use public constants (a FunctionTransformer), "
            "skdpminimax.DPStandardScaler, or diffprivlib's transformers with public bounds "
            "where the guarantee must cover preprocessing.",
            PrivacyLeakWarning,
        ))
    if _mixes_relations(candidate_steps):
        notices.append((
            "This search composes steps that are private for different neighbouring "
            "relations: replace-one with the row count public (diffprivlib models, which "
            "publish it; DPStandardScaler(neighbouring='replace_one'); skdpminimax fits "
            "with a replace-one solver) and add/remove-one (Poisson-sampled skdpminimax "
            "fits, DPStandardScaler's default), charged together. " + MIXED_RELATIONS_ADVICE,
            PrivacyLeakWarning,
        ))
    # unknown (None) counts as add/remove-one: KFold is then reported (fail closed)
    add_remove = any(_relation_of_step(step) != "replace-one"
                     for steps in candidate_steps for step in steps)
    unstable = unstable_folds_reason(cv, add_remove)
    if unstable is not None and any(candidate_steps):
        notices.append((
            f"The search's folds may change by more than one row when one row of the data "
            f"changes ({unstable}), so a fit on a training fold is not covered by the one "
            "entry it is charged. Give the search an int cv, or cv=IndependentFolds(k) "
            "(skdpminimax.folds).",
            PrivacyLeakWarning,
        ))
    if search.refit and selection_epsilon is None and any(candidate_steps):
        notices.append((
            "The search chooses its best candidate by noise-free validation scores on the "
            "private rows: best_params_, and the refitted model that reveals them, are not "
            "covered by the charge (one row can flip the choice). Pass selection_epsilon "
            "(with scoring='accuracy' or 'roc_auc') to choose privately, tune on public "
            "data, or use refit=False.",
            PrivacyLeakWarning,
        ))
    if (not search.refit or getattr(search, "return_train_score", False)) and any(
            candidate_steps):
        notices.append((
            "The search's scores (cv_results_, best_score_, best_index_, and the training "
            "scores with return_train_score=True) are computed without noise on the private "
            "rows and are not covered by the charge: use them to choose, do not publish "
            "them. Only the fitted models are private.",
            PrivacyLeakWarning,
        ))
    folds, pinned = _checked_folds(search, cv, X, y, params, n_splits)
    selection = None if selection_epsilon is None else _selection(
        search, selection_epsilon, y, folds)
    if selection is not None and search.scoring == "roc_auc":
        search = copy.copy(search)  # the estimators stay the caller's
        search.scoring = OneClassFoldAUC()  # a one-class fold: 0 pairs, not an error
    charged = _charge(search, budgets, ledger, (X, y, fit_params), folds, pinned, selection)
    for message, category in notices:
        warnings.warn(message, category)
    return charged


def _refuse_non_private_candidates(search, candidates, candidate_steps):
    """A candidate without a private step fits the private rows without noise: its
    folds' models and, if chosen, its refit are not private, and nothing would be
    charged for them. Refused before the charge."""
    bare = [i for i, steps in enumerate(candidate_steps) if not steps]
    if bare:
        params = _candidates(search)[bare[0]]
        raise TypeError(
            f"{len(bare)} of the search's {len(candidate_steps)} candidates hold no private "
            f"estimator (the first: {params!r}); their fits on the private rows would not be "
            "private, and a private choice could pick one and refit it. Search only "
            "candidates built on skdpminimax estimators or diffprivlib models."
        )
    # The model a search scores and refits is the last step: a private scaler before a
    # plain scikit-learn classifier leaves the classifier fitted without noise.
    for params, candidate in zip(_candidates(search), candidates):
        final = _final_step(candidate)
        if not _is_private(final):
            raise TypeError(
                f"The candidate {params!r} ends in {type(final).__name__}, which is not "
                "private: it is fitted on the private rows without noise (the charge covers "
                "only its private steps), and it is what the search scores and refits. End "
                "every candidate in a skdpminimax estimator or a diffprivlib model."
            )


def _non_private_fitted_steps(estimator):
    """Class names of the non-private steps in ``estimator`` that learn from the data
    they are fitted on (scikit-learn's ``requires_fit`` tag; ``PolynomialFeatures``
    learns only the width). Stateless transformers (``FunctionTransformer``,
    ``Normalizer``) are not listed."""
    if estimator is None or isinstance(estimator, str) or _is_private(estimator):
        return []
    children = _children(estimator)
    if children is not None:
        return [name for _, child in children for name in _non_private_fitted_steps(child)]
    if isinstance(estimator, PolynomialFeatures):
        return []
    try:
        learns = requires_fit(estimator)
    except Exception:  # noqa: BLE001 - an estimator without tags: assume it learns
        learns = True
    return [type(estimator).__name__] if learns else []


def _final_step(estimator):
    """The estimator a (possibly nested) pipeline ends in (a target transformer's
    regressor: the transformer only maps y)."""
    while isinstance(estimator, (Pipeline, TransformedTargetRegressor)):
        estimator = (estimator.steps[-1][1] if isinstance(estimator, Pipeline)
                     else estimator.regressor)
    return estimator


def _relation_of_step(step):
    """``"add/remove-one"``, ``"replace-one"`` or ``None`` (unknown): the neighbouring
    relation a private step's guarantee holds for, read from its settings (a heuristic
    for the library's solvers). diffprivlib's models are replace-one with the size
    public; the scaler says which; an estimator is add/remove-one when its solver
    samples Poisson batches, unknown with a solver of the user's."""
    if isinstance(step, DPStandardScaler):
        return step._relation
    if not isinstance(step, DPMinimaxEstimator):
        return "replace-one"
    try:
        solver = step._resolve_solver()
    except (TypeError, ValueError):
        return None  # the fit will refuse it; no warning to give here
    if not type(solver).__module__.startswith("skdpminimax."):
        # A user's solver: read from its settings, it is unknown (the folds' check
        # then fails closed, as for add/remove-one).
        return None
    # Single-pass NSEG takes disjoint batches whatever its sampler says (replace-one).
    poisson = (getattr(solver, "sampler", None) == "poisson"
               and getattr(solver, "batch_size", None) is not None
               and getattr(solver, "mode", None) != "single_pass")
    return "add/remove-one" if poisson else "replace-one"


def _mixes_relations(candidate_steps):
    """Whether a candidate holds private steps of both relations (a heuristic read from
    the solvers' settings)."""
    return any({"add/remove-one", "replace-one"} <= {_relation_of_step(step) for step in steps}
               for steps in candidate_steps)


def _split_params(search, groups, params):
    """The parameters ``search.fit(X, y, **params)`` passes to its splitter's split."""
    if _routing_enabled():
        return dict(process_routing(search, "fit", **params).splitter.split)
    return {"groups": groups}


def _checked_folds(search, cv, X, y, params, n_splits):
    """The search's cross-validation folds, drawn as its fit will draw them, and the
    splitter that replays them to the search, so that the folds it fits are the folds
    that were checked (and, for a private choice, whose sizes its sensitivity rests
    on)."""
    # A copy: drawing must not advance the RandomState of the caller's splitter.
    cv = copy.deepcopy(cv)
    split_params = _split_params(search, params.get("groups"), params)
    folds = list(cv.split(X, y, **split_params))
    if len(folds) != n_splits:  # the search itself refuses this, after the charge
        raise ValueError(f"The search's cv gave {len(folds)} splits where its get_n_splits "
                         f"said {n_splits}. Nothing was spent.")
    # Always replayed: a splitter that shuffles without a fixed seed draws other folds
    # at every call, and two draws that agree (by chance, on tiny data) do not make the
    # search's own draw agree; it would run unchecked folds after the charge (a review).
    return folds, _CheckedFolds(folds, cv)


class _CheckedFolds:
    """Folds drawn and checked before the charge, replayed to the search in place of a
    splitter that would draw new (unchecked) ones. Routes metadata as that splitter."""

    def __init__(self, folds, splitter):
        self.folds = folds
        self.splitter = splitter

    def split(self, X=None, y=None, groups=None):
        for train, test in self.folds:
            yield train.copy(), test.copy()

    def get_n_splits(self, X=None, y=None, groups=None):
        return len(self.folds)

    def get_metadata_routing(self):
        return get_routing_for_object(self.splitter)

    def __repr__(self):
        return f"CheckedFolds({self.splitter!r}, n_splits={len(self.folds)})"


def _check_folds(search, X, y, fit_params, folds):
    """The fits' checks on each training fold, as the search slices X, y and the fit
    parameters for it: a fold with one class fails here, not after the charge."""
    for k, (train, _) in enumerate(folds):
        X_train, y_train = _safe_split(search.estimator, X, y, train)
        fold_params = _check_method_params(X, params=fit_params, indices=train)
        try:
            _check_fits(search, X_train, y_train, fold_params)
        except (ValueError, TypeError) as error:
            raise type(error)(f"Cross-validation split {k} (its training rows): "
                              f"{error}") from error


def _charge(search, budgets, ledger, fit_input, folds, pinned, selection=None):
    """Spend ``budgets`` on ``ledger`` (all or nothing), once the fits' checks passed on
    ``fit_input = (X, y, fit parameters)`` and on each training fold of ``folds``; return
    the prepaid search (replaying ``folds`` through the splitter ``pinned`` in place of
    its cv, and choosing its refit with ``selection``, when given)."""
    entries = [(b.epsilon, b.delta) for b in budgets]
    total = ledger.total(spent_budget=ledger.spent_budget + entries)
    if not Budget(ledger.epsilon, ledger.delta) >= total:
        own = ledger.total(spent_budget=entries)  # the search alone, for the message
        raise BudgetError(
            f"The search needs {len(entries)} entries totalling {tuple(own)} on their own, "
            f"{tuple(total)} with what the accountant has spent already: above its budget "
            f"({ledger.epsilon}, {ledger.delta}). Nothing was spent."
        )
    prepaid = PrepaidLedger(entries, payer=ledger)
    grid_name = "param_grid" if isinstance(search, GridSearchCV) else "param_distributions"
    grids = [_prepaid_grid(g, prepaid) for g in _grids(search)]
    original = getattr(search, grid_name)
    prepaid_search = _PREPAID[type(search)](**clone(search).get_params(deep=False))
    prepaid_search.set_params(**{
        "estimator": _prepay(search.estimator, prepaid),
        grid_name: grids[0] if isinstance(original, dict) else grids,
        "cv": pinned,
    })
    if selection is not None:
        prepaid_search.set_params(refit=selection)
    _check_prepaid(prepaid_search, prepaid)
    # The fits' own checks, on the prepaid candidates (whose ledger covers each fit).
    _check_fits(prepaid_search, *fit_input)
    _check_folds(prepaid_search, *fit_input, folds)
    spend_all(ledger, entries)  # re-checked with the spend: another fit may have spent
    # The shape the checks passed on (the number of rows is what the charged folds
    # index): a fit on other data is refused before it opens the ledger.
    prepaid_search._charged_shape = _shape(fit_input[0])
    return prepaid_search


def _shape(X):
    """``(rows, columns)`` of ``X``; columns ``None`` where it has no second axis."""
    shape = getattr(X, "shape", None) or np.shape(np.asarray(X, dtype=object))
    return (int(shape[0]), int(shape[1]) if len(shape) > 1 else None)


def _routing_enabled():
    return get_config().get("enable_metadata_routing", False)


def _estimator_fit_params(search, params):
    """The parameters ``search.fit(X, y, **params)`` passes to its estimator's fit."""
    if _routing_enabled():
        return dict(process_routing(search, "fit", **params).estimator.fit)
    return {key: value for key, value in params.items() if key != "groups"}


def _step_method(pipeline, name, method):
    """The method ``pipeline.<method>(X, y, ...)`` fits its step ``name`` with, as
    Pipeline calls it: ``fit`` for the last step of a ``fit``; ``fit_transform`` (or
    ``fit``, where the step has none) for an earlier step, and for the last step of a
    ``fit_transform`` (a pipeline that is itself an earlier step of another)."""
    if method == "fit" and name == pipeline.steps[-1][0]:
        return "fit"
    return "fit_transform" if hasattr(pipeline.named_steps[name], "fit_transform") else "fit"


def _step_fit_params(pipeline, name, params, method="fit"):
    """``(step method, parameters)``: the method ``pipeline.<method>(X, y, **params)``
    fits its step ``name`` with (see :func:`_step_method`) and the parameters it passes
    to it, wherever the step sits. A transformer's ``fit_transform`` passes them on to
    its ``fit``."""
    step_method = _step_method(pipeline, name, method)
    if _routing_enabled():
        # Routed under the step's own method: an earlier step's parameters sit under
        # fit_transform (where it has one), not fit.
        return step_method, dict(process_routing(pipeline, method, **params)[name][step_method])
    unrouted = [key for key in params if "__" not in key]
    if unrouted:  # Pipeline.fit refuses them, in every fit
        raise ValueError(f"Pipeline.fit does not accept the {unrouted[0]} parameter; pass "
                         "parameters to a pipeline's steps as stepname__parameter.")
    # Unrouted, a step's fit, fit_transform and fit_predict get the same parameters.
    return step_method, {key.split("__", 1)[1]: value for key, value in params.items()
                         if key.split("__", 1)[0] == name}


def _route(candidate, path, fit_params, X, y):
    """``(fit parameters, X)`` as the private step at ``path`` of ``candidate`` would
    receive them from ``candidate.fit(X, y, **fit_params)``, in one walk down the path;
    ``None`` when a container other than a pipeline lies on the way (a target
    transformer changes y; unions and column transformers route otherwise).

    Where earlier pipeline steps transform X, they are fitted (clones) and applied to a
    copy of X; the X returned is ``None`` where that cannot be replayed before the
    charge (an earlier private step would spend; an earlier step fails here, perhaps
    for want of its fit parameters). Nothing is released: the result only feeds the
    private step's own checks (NaN that a scaler passes through, a width its
    calibration depends on)."""
    estimator, X_step, method = candidate, X, "fit"  # the search calls the candidate's fit
    for name in path.split("__") if path else ():
        if not isinstance(estimator, Pipeline):
            return None
        names = [step_name for step_name, _ in estimator.steps]
        earlier = [step for _, step in estimator.steps[:names.index(name)]
                   if step not in (None, "passthrough")]
        if earlier and getattr(estimator, "transform_input", None):
            return None  # earlier steps transform some of the parameters too
        method, fit_params = _step_fit_params(estimator, name, fit_params, method)
        if earlier and X_step is not None:
            X_step = _replay(earlier, X_step, y, copy=X_step is X)
        estimator = estimator.named_steps[name]
    return fit_params, X_step


def _replay(steps, X, y, copy):
    """``X`` through clones of the non-private ``steps``, fitted on it; ``None`` where a
    step is private (it would spend) or fails."""
    if any(_is_private(step) or _holds_private([step]) for step in steps):
        return None
    if copy:  # a transformer with copy=False would rewrite the caller's X in place
        X = X.copy() if hasattr(X, "copy") else np.array(X, copy=True)
    try:
        for step in steps:
            X = clone(step).fit_transform(X, y)
    except Exception:  # noqa: BLE001 - the old rows-only check, as before
        return None
    return X


def _check_fits(search, X, y, fit_params):
    """Run, for every private step of every candidate, what its fit checks before its
    spend, on the full data (see charge_search's Notes for what is covered)."""
    for candidate in _candidate_estimators(search):
        for path, step in _private_steps(candidate):
            route = (_route(candidate, path, fit_params, X, y)
                     if isinstance(step, _OURS) else None)
            if route is not None:
                step_params, X_step = route
                if X_step is None:  # could not replay the earlier steps: rows only
                    step._check_fit(X, y, rows_only=True, **step_params)
                else:
                    step._check_fit(X_step, y, **step_params)
            elif hasattr(step, "_validate_params"):
                step._validate_params()


def _prepaid_ledgers(search):
    """The prepaid ledgers the private steps of ``search`` spend on."""
    ledgers = (step.accountant for step in _searched_steps(search))
    return list({id(led): led for led in ledgers if isinstance(led, PrepaidLedger)}.values())


def _hand_back(estimator):
    """Point every private step of a model leaving its search at the charged ledger."""
    for path, step in _private_steps(estimator):
        if isinstance(step.accountant, PrepaidLedger) and step.accountant.payer is not None:
            estimator.set_params(**{(path + "__" if path else "") + "accountant":
                                    step.accountant.payer})
    return estimator


class _PrepaidSearchMixin:
    """The fit of a charged search: run on the prepaid ledger, then close it."""

    def fit(self, X, y=None, **params):
        """Run the prepaid search once; close its prepaid ledger.

        The ledger may travel to the workers during this fit only, and refuses every
        spend after it; ``best_estimator_`` then spends on the charged accountant.

        Parameters
        ----------
        X : {array-like, sparse matrix} of shape (n_samples, n_features)
            Training data (the data charged for).
        y : array-like of shape (n_samples,), default=None
            Targets.
        **params : dict
            Passed to the search's ``fit`` (for example ``groups``).

        Returns
        -------
        self : object
            The fitted search.

        Raises
        ------
        BudgetError
            If the search has run already (charge it again).
        ValueError
            If ``X`` (or ``y``'s length) differs in shape from the data it was charged
            for (nothing is spent; the search can still be fitted on those).
        """
        charged = getattr(self, "_charged_shape", None)
        if charged is not None and (_shape(X) != charged
                                    or (y is not None and _num_samples(y) != charged[0])):
            # Refused before the ledger opens: the search can still be fitted on the
            # data it was charged for (its replayed folds index those rows).
            raise ValueError(
                f"This search was charged for data of shape {charged} (rows, columns) and "
                f"is fitted on X of shape {_shape(X)}"
                f"{'' if y is None else f' and {_num_samples(y)} targets'}: fit it on the "
                "data passed to charge_search. Nothing was spent and the charge is still "
                "available.")
        with ExitStack() as stack:
            for ledger in _prepaid_ledgers(self):
                stack.enter_context(ledger.running())
            super().fit(X, y, **params)
        if hasattr(self, "best_estimator_"):
            # The refit model leaves the search: a later fit of it must be charged to
            # the caller's ledger, not refused by (or hidden in) the prepaid one.
            _hand_back(self.best_estimator_)
        _forget_the_rows(self)
        return self


def _forget_the_rows(search):
    """Drop what a run search holds about the rows beyond its results: the charged
    shape (the exact row count), the replayed folds (their indices) and the private
    choice's fold sizes and class-pair counts. A closed search cannot run again, so
    none of them is needed. (``cv_results_`` and ``best_score_`` stay: scores without
    noise, documented as not for publication.)"""
    vars(search).pop("_charged_shape", None)
    if isinstance(search.cv, _CheckedFolds):
        search.cv = search.cv.splitter
    if isinstance(search.refit, ExponentialSelection):
        search.refit.forget()


class PrepaidGridSearchCV(_PrepaidSearchMixin, GridSearchCV):
    """A ``GridSearchCV`` charged in advance by :func:`charge_search`.

    Its private estimators spend on a
    :class:`~skdpminimax.privacy.ledger.PrepaidLedger`; its :meth:`fit` runs once
    and closes that ledger. Parameters and attributes as for ``GridSearchCV``.
    """


class PrepaidRandomizedSearchCV(_PrepaidSearchMixin, RandomizedSearchCV):
    """A ``RandomizedSearchCV`` charged in advance by :func:`charge_search`.

    Its private estimators spend on a
    :class:`~skdpminimax.privacy.ledger.PrepaidLedger`; its :meth:`fit` runs once
    and closes that ledger. Parameters and attributes as for ``RandomizedSearchCV``.
    """


_PREPAID = {GridSearchCV: PrepaidGridSearchCV, RandomizedSearchCV: PrepaidRandomizedSearchCV,
            PrepaidGridSearchCV: PrepaidGridSearchCV,
            PrepaidRandomizedSearchCV: PrepaidRandomizedSearchCV}
_SEARCHES = tuple(_PREPAID)


def _search_has(attr):
    return lambda self: hasattr(self.search_ if hasattr(self, "search_") else self.search, attr)


class PrivateSearchCV(LedgerGuardMixin, MetaEstimatorMixin, BaseEstimator):
    """A hyperparameter search whose whole privacy cost is charged before it starts.

    Wraps a ``GridSearchCV`` or ``RandomizedSearchCV`` over skdpminimax estimators
    (or pipelines of them and of diffprivlib's models, whose fits it charges too).
    Each :meth:`fit` checks the input as the fits will, charges the accountant, in
    the calling process, one entry per private fit of the search
    (:func:`charge_search`), then runs the search with the estimators spending on a
    prepaid ledger, which is closed when the search has run. The search may use
    ``n_jobs > 1`` or joblib's Dask backend: the budget is neither lost in the
    workers nor counted twice.

    Parameters
    ----------
    search : GridSearchCV or RandomizedSearchCV
        The search to run (cloned at fit).
    accountant : BudgetAccountant, default=None
        The ledger to charge. ``None``: the accountant the search's private
        estimators share (diffprivlib's default one if they have none).
    selection_epsilon : float, default=None
        Budget of a private choice of the candidate to refit (the exponential
        mechanism; needs ``refit=True`` and ``scoring`` ``'accuracy'`` or ``'roc_auc'``;
        the search then runs with ``error_score='raise'``),
        charged as one
        more entry ``(selection_epsilon, 0)``. ``None``: the choice is made on
        noise-free scores and is not private (the search warns when it refits).

    Attributes
    ----------
    search_ : PrepaidGridSearchCV or PrepaidRandomizedSearchCV
        The fitted search (its estimators hold the closed prepaid ledger).
    best_estimator_ : estimator
        The refitted best estimator (if ``search.refit``); it spends on the charged
        accountant, so fitting it again is charged.
    best_params_ : dict
        Parameters of the best candidate.
    best_score_ : float
        Its mean cross-validated score (noise-free; absent with ``selection_epsilon``,
        as for any callable ``refit``).
    cv_results_ : dict
        The search's results. Its scores are computed on the private rows without
        noise, and are not private: publish ``best_estimator_``, not the wrapper,
        whose ``search_`` holds them too (``search_.cv_results_``, with
        ``best_score_``). The fitted search keeps no row count, fold indices, fold
        class counts or the private choice's generator (dropped after the run).
    privacy_spent_ : list of budgets
        The entries charged to the accountant by the last fit, one per private fit:
        ``PrivacyBudget``, or an ``(epsilon, 0)`` entry with the same ``epsilon`` and
        ``delta`` attributes for a diffprivlib step.

    See Also
    --------
    search_budgets : The cost of a search, without spending.

    Notes
    -----
    **Privacy.** See :func:`charge_search`. Tuning on the private data costs the
    budget of every fit, and of the choice (``selection_epsilon``) if the refitted
    model is to be published; tuning on public or synthetic data instead costs
    nothing (see the user guide, "Tuning hyperparameters"). An int ``cv`` is drawn
    as :class:`IndependentFolds`.

    Examples
    --------
    >>> from diffprivlib import BudgetAccountant
    >>> from sklearn.datasets import load_breast_cancer
    >>> from sklearn.model_selection import GridSearchCV
    >>> from skdpminimax import DPAUCMaximizer
    >>> from skdpminimax.search import PrivateSearchCV
    >>> X, y = load_breast_cancer(return_X_y=True)
    >>> X = X / X.max(axis=0)
    >>> ledger = BudgetAccountant()
    >>> grid = GridSearchCV(DPAUCMaximizer(epsilon=1.0, delta=1e-6, data_norm=6.0),
    ...                     {"alpha": [1e-3, 1e-1]}, cv=2, scoring="accuracy", n_jobs=2)
    >>> search = PrivateSearchCV(grid, accountant=ledger, selection_epsilon=0.5).fit(X, y)
    >>> len(ledger.spent_budget)  # 2 candidates x 2 folds + 1 refit + 1 choice
    6
    """

    _parameter_constraints = {
        "search": [GridSearchCV, RandomizedSearchCV],
        "accountant": [BudgetAccountant, None],
        "selection_epsilon": [Interval(Real, 0, None, closed="neither"), None],
    }

    def __init__(self, search, *, accountant=None, selection_epsilon=None):
        self.search = search
        self.accountant = accountant
        self.selection_epsilon = selection_epsilon

    def fit(self, X, y=None, **params):
        """Check the input, charge the search's whole cost, then run it.

        Parameters
        ----------
        X : array-like of shape (n_samples, n_features)
            Training data.
        y : array-like of shape (n_samples,), default=None
            Targets.
        **params : dict
            Passed to the search's ``fit`` (for example ``groups``, or
            ``sensitive_features`` routed to the estimators).

        Returns
        -------
        self : PrivateSearchCV
            The fitted wrapper.

        Raises
        ------
        ValueError or TypeError
            If the input or a candidate's parameters fail the fits' checks: nothing
            is spent (see :func:`charge_search`).
        BudgetError
            If the accountant cannot pay for the whole search: nothing is spent.
        """
        self._validate_params()
        ledger = self._fit_ledger()  # refuses a pickled copy (or a foreign default ledger)
        if self.accountant is None:
            ledger = _caller_ledger(self.search, None)
        before = len(ledger.spent_budget)
        # Checks, then spends.
        prepaid = _charge_search(self.search, X, y, ledger, params, self.selection_epsilon)
        self.privacy_spent_ = [budget_entry(e, d) for e, d in ledger.spent_budget[before:]]
        # Closes the prepaid ledger and hands best_estimator_ back to `ledger`.
        self.search_ = prepaid.fit(X, y, **params)
        for name in ("best_estimator_", "best_params_", "best_score_", "best_index_",
                     "cv_results_", "classes_", "n_features_in_", "feature_names_in_"):
            if hasattr(self.search_, name):
                setattr(self, name, getattr(self.search_, name))
        return self

    @available_if(_search_has("predict"))
    def predict(self, X):
        """Predict with the best estimator.

        Parameters
        ----------
        X : array-like of shape (n_samples, n_features)
            Rows to predict.

        Returns
        -------
        y_pred : ndarray of shape (n_samples,)
            The best estimator's predictions.
        """
        return self.search_.predict(X)

    @available_if(_search_has("decision_function"))
    def decision_function(self, X):
        """Compute the decision function of the best estimator.

        Parameters
        ----------
        X : array-like of shape (n_samples, n_features)
            Rows to score.

        Returns
        -------
        scores : ndarray
            The best estimator's ``decision_function``.
        """
        return self.search_.decision_function(X)

    @available_if(_search_has("predict_proba"))
    def predict_proba(self, X):
        """Compute class probabilities with the best estimator.

        Parameters
        ----------
        X : array-like of shape (n_samples, n_features)
            Rows to score.

        Returns
        -------
        proba : ndarray of shape (n_samples, n_classes)
            The best estimator's ``predict_proba``.
        """
        return self.search_.predict_proba(X)

    def score(self, X, y=None):
        """Score the best estimator with the search's scorer.

        Parameters
        ----------
        X : array-like of shape (n_samples, n_features)
            Test rows.
        y : array-like of shape (n_samples,), default=None
            True labels or targets.

        Returns
        -------
        score : float
            The search's scorer of the best estimator on ``(X, y)``.
        """
        return self.search_.score(X, y)
