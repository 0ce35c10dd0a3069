"""Private choice of a search's best candidate (the exponential mechanism).

A search picks its best candidate from validation scores computed on private rows.
The choice, and the refitted model that reveals it, are a release of those rows: one
row can flip it. :class:`ExponentialSelection` makes the choice
``epsilon``-differentially private. It is a ``refit`` callable for
``GridSearchCV`` / ``RandomizedSearchCV``, installed by
:func:`~skdpminimax.search.charge_search` when given ``selection_epsilon``.

The argument. Every fit of the search is charged as a release, so the fitted models
may be taken as published; given them, candidate ``c``'s utility is a sum over the folds
of a per-fold count that one row moves by at most 1. Each row is a validation row of one
fold only (the folds come from :class:`~skdpminimax.folds.IndependentFolds` or another
splitter stable under the relation), so adding, removing or replacing one row changes
each ``u_c`` by at most 1: the exponential mechanism with sensitivity 1 is
``epsilon``-DP for either relation (not monotone under replace-one, hence
``exp(epsilon u / 2)``), and the accountant composes it with the fits.

The argument needs every fit and score to succeed: one row can make a whole fold fail
(a transform that meets a value it cannot take, say), and a failed fold counted as 0
would move the utility by the fold's size. The search therefore runs with
``error_score="raise"``, and a NaN score is refused.

The per-fold counts (``n_k`` validation rows in fold ``k``):

- ``scoring="accuracy"``: the correct predictions, ``n_k acc_ck``. One row adds,
  removes or changes one prediction.
- ``scoring="roc_auc"`` (binary targets): ``U_ck / max(n_k - 1, 1)``, with
  ``U_ck = n_k^+ n_k^- AUC_ck`` the Mann-Whitney count of correctly ordered
  (positive, negative) pairs, ties counting 1/2. Replacing one row changes only the
  pairs it is in, at most ``n_k - 1``, and each by at most 1. Adding a row to a fold of
  ``n`` rows adds ``c`` in ``[0, n]`` pairs: ``(U + c) / n - U / (n - 1)`` lies in
  ``[-U / (n (n - 1)), 1]``, and ``U <= n^2 / 4`` keeps the lower end above ``-1/2``
  for ``n >= 2`` (from ``n = 1``, ``U = 0``: at most ``c <= 1``). Removing is the
  reverse. So the utility is ``sum_k n_k^+ n_k^- AUC_ck / (n_k - 1)``, about
  ``n AUC_c p (1 - p)``: between two candidates a difference of AUC counts
  ``p (1 - p)`` times what the same difference of accuracy counts.
"""

import math
from numbers import Real

import numpy as np
from sklearn.metrics import get_scorer

from skdpminimax.privacy.mechanisms import exponential_mechanism

__all__ = ["ExponentialSelection", "OneClassFoldAUC", "SELECTION_SCORING",
           "check_selection_epsilon", "fold_pair_counts"]

# Scorers whose fold score converts into a count that one row moves by at most 1
# (module docstring).
SELECTION_SCORING = ("accuracy", "roc_auc")


def check_selection_epsilon(epsilon):
    """Refuse a choice's epsilon that is not a positive finite number."""
    if (not isinstance(epsilon, Real) or isinstance(epsilon, bool)
            or not 0 < epsilon < math.inf):
        raise ValueError(f"selection_epsilon must be a positive finite number, got {epsilon!r}.")


class ExponentialSelection:
    """``refit`` callable: the exponential mechanism over the candidates' fold counts.

    Parameters
    ----------
    epsilon : float
        Privacy loss of the choice (pure epsilon-DP).
    test_sizes : sequence of int
        Number of validation rows of each fold, in the search's split order.
    rng : numpy.random.Generator
        Source of the mechanism's randomness.
    scoring : {"accuracy", "roc_auc"}, default="accuracy"
        The search's scoring; fixes how a fold's score becomes a count (module
        docstring).
    pair_counts : sequence of int, default=None
        ``n_k^+ n_k^-`` of each fold (its pairs of validation rows of different
        classes); needed for ``scoring="roc_auc"``. See :func:`fold_pair_counts`.
    """

    def __init__(self, epsilon, test_sizes, rng, *, scoring="accuracy", pair_counts=None):
        check_selection_epsilon(epsilon)
        if scoring not in SELECTION_SCORING:
            raise ValueError(f"scoring must be one of {SELECTION_SCORING}, got {scoring!r}.")
        if scoring == "roc_auc" and (pair_counts is None
                                     or len(pair_counts) != len(test_sizes)):
            raise ValueError("scoring='roc_auc' needs pair_counts, one per fold.")
        self.epsilon = float(epsilon)
        self.test_sizes = np.asarray(test_sizes, dtype=float)
        self.rng = rng
        self.scoring = scoring
        self.pair_counts = None if pair_counts is None else np.asarray(pair_counts, dtype=float)

    def utilities(self, cv_results):
        """Each candidate's per-fold counts (module docstring), summed over the folds."""
        if self.test_sizes is None:
            raise RuntimeError("This selection has chosen already and kept no fold sizes: "
                               "charge the search again.")
        scores = np.column_stack([np.asarray(cv_results[f"split{k}_test_score"], dtype=float)
                                  for k in range(len(self.test_sizes))])
        if self.scoring == "roc_auc":
            # A fold without pairs (one class among its validation rows) counts U = 0
            # whatever its score (NaN, or 0 from OneClassFoldAUC): that is its count.
            scores = np.where(self.pair_counts == 0, 0.0, scores)
        # One row can make a whole fold fail: no stand-in for a failed fit or score keeps
        # the sensitivity at 1 (the search runs with error_score="raise" for this).
        if not np.all(np.isfinite(scores)):
            raise ValueError("A fit or score of the search failed (a NaN validation score): "
                             "the private choice cannot count it. Nothing is chosen.")
        if self.scoring == "accuracy":
            return np.rint(scores * self.test_sizes).sum(axis=1)
        # U = AUC n+ n- is a multiple of 1/2 (ties count half): undo the float rounding.
        pairs = np.rint(2.0 * scores * self.pair_counts) / 2.0
        return (pairs / np.maximum(self.test_sizes - 1.0, 1.0)).sum(axis=1)

    def __call__(self, cv_results):
        """Return the index of the chosen candidate (the search's ``best_index_``).

        Parameters
        ----------
        cv_results : dict
            The search's ``cv_results_``: ``split<k>_test_score`` of every fold.

        Returns
        -------
        int
            A candidate drawn by the exponential mechanism on :meth:`utilities`.
        """
        return exponential_mechanism(self.utilities(cv_results), self.epsilon, self.rng)

    def forget(self):
        """Drop the folds' sizes and pair counts (exact counts of the private rows) and
        the generator once the choice is made; the selection can choose no more. The
        choice's epsilon rests on its draw being secret: a generator kept in a pickle
        of the fitted search would let anyone replay it (a review replayed 12 of 12)."""
        self.n_splits = len(self.test_sizes)
        self.test_sizes = self.pair_counts = self.rng = None

    def __repr__(self):
        n_splits = len(self.test_sizes) if self.test_sizes is not None else self.n_splits
        return (f"ExponentialSelection(epsilon={self.epsilon!r}, scoring={self.scoring!r}, "
                f"n_splits={n_splits})")


class OneClassFoldAUC:
    """The ``"roc_auc"`` scorer, except that a validation fold with one class scores 0.

    Such a fold has no (positive, negative) pair, so its count ``U`` is 0 whatever the
    model; scikit-learn gives it NaN (older releases raise), which would stop a private
    choice after the search is charged, and whether a fold has one class depends on
    the private rows. The private choice therefore scores it 0, its exact count.
    """

    def __call__(self, estimator, X, y, **kwargs):
        """Return the fold's AUC, or 0 if ``y`` has one class.

        Parameters
        ----------
        estimator : estimator
            The fitted candidate.
        X : array-like of shape (n_samples, n_features)
            The validation rows.
        y : array-like of shape (n_samples,)
            Their binary labels.
        **kwargs : dict
            Passed to scikit-learn's ``"roc_auc"`` scorer.

        Returns
        -------
        float
            The ROC AUC of the estimator's scores.
        """
        if np.unique(np.asarray(y)).size < 2:
            return 0.0
        return get_scorer("roc_auc")(estimator, X, y, **kwargs)

    def __repr__(self):
        return "OneClassFoldAUC()"


def fold_pair_counts(y, folds):
    """``n_k^+ n_k^-`` of each fold's validation rows, for ``scoring="roc_auc"``.

    Parameters
    ----------
    y : array-like of shape (n_samples,)
        Binary targets (two distinct values).
    folds : sequence of (train, test) index arrays
        The search's folds; only the validation indices are read.

    Returns
    -------
    list of int
        ``n_k^+ n_k^-`` per fold, in the order of ``folds``.
    """
    y = np.asarray(y)
    classes = np.unique(y)
    if y.ndim != 1 or len(classes) != 2:
        raise ValueError("scoring='roc_auc' for a private choice needs binary targets; got "
                         f"{len(classes)} distinct values. Nothing was spent.")
    counts = []
    for _, test in folds:
        positives = int(np.sum(y[test] == classes[1]))
        counts.append(positives * (len(test) - positives))
    return counts
