"""Cross-validation folds whose fits can each be charged as one private release.

A search charges each fit on a training fold as one ``(epsilon, delta)`` entry. That
holds only if, when one row of the data is added, removed or replaced, every training
fold changes by at most that row. scikit-learn's splitters do not promise it:
``KFold`` cuts the rows by position, so removing one row moves a row of every later
fold boundary into the neighbouring fold (a training fold then differs in two rows),
and ``StratifiedKFold`` reallocates rows between folds when a label changes.

:class:`IndependentFolds` gives each row its fold by an independent uniform draw. Under
add/remove-one the other rows keep their draws (couple the two runs on them): each
training fold gains or loses at most the changed row. Under replace-one the replaced
row keeps its position and so its fold.
"""

from numbers import Integral

import numpy as np
from sklearn.model_selection import BaseCrossValidator, KFold
from sklearn.utils.validation import _num_samples

__all__ = ["IndependentFolds", "unstable_folds_reason"]


class IndependentFolds(BaseCrossValidator):
    """K folds with each row's fold drawn independently and uniformly.

    The splitter for a private search: one row added, removed or replaced changes
    every training fold by at most that row, so each fit on a fold is one charge of
    its estimator's budget (see :mod:`skdpminimax.folds`). Fold sizes are random
    (binomial around ``n_samples / n_splits``).

    Parameters
    ----------
    n_splits : int, default=5
        Number of folds, at least 2.
    random_state : int or None, default=None
        Seed of the draws. ``None`` draws fresh entropy at every :meth:`split` (the
        private setting: under add/remove-one a fixed seed ties each position, not
        each row, to a fold, and removing a row shifts the later rows' folds). An
        int keeps the folds stable under replace-one only; use it for reproducible
        experiments.

    Examples
    --------
    >>> import numpy as np
    >>> from skdpminimax.folds import IndependentFolds
    >>> folds = list(IndependentFolds(3, random_state=0).split(np.zeros((12, 1))))
    >>> len(folds), sorted(int(i) for _, test in folds for i in test) == list(range(12))
    (3, True)
    """

    def __init__(self, n_splits=5, *, random_state=None):
        # Checked here, as scikit-learn's splitters do: a splitter has no fit.
        if not isinstance(n_splits, Integral) or isinstance(n_splits, bool) or n_splits < 2:
            raise ValueError(f"n_splits must be an int >= 2, got {n_splits!r}.")
        if random_state is not None and (not isinstance(random_state, Integral)
                                         or isinstance(random_state, bool) or random_state < 0):
            raise ValueError(f"random_state must be None or an int >= 0, got {random_state!r}.")
        self.n_splits = n_splits
        self.random_state = random_state

    def split(self, X, y=None, groups=None):
        """Generate indices to split data into training and test set.

        Parameters
        ----------
        X : array-like of shape (n_samples, n_features)
            Training data (only its number of rows is read).
        y : array-like of shape (n_samples,), default=None
            Ignored.
        groups : array-like of shape (n_samples,), default=None
            Ignored.

        Yields
        ------
        train : ndarray
            The training set indices for that split.
        test : ndarray
            The testing set indices for that split.

        Raises
        ------
        ValueError
            If a fold drew no row (too few rows for ``n_splits``).
        """
        n_samples = _num_samples(X)
        fold = np.random.default_rng(self.random_state).integers(self.n_splits, size=n_samples)
        sizes = np.bincount(fold, minlength=self.n_splits)
        if sizes.min() == 0:
            raise ValueError(f"IndependentFolds({self.n_splits}) drew an empty fold: too "
                             f"few rows for {self.n_splits} folds.")
        for k in range(self.n_splits):
            yield np.flatnonzero(fold != k), np.flatnonzero(fold == k)

    def get_n_splits(self, X=None, y=None, groups=None):
        """Return the number of splitting iterations (``n_splits``).

        Parameters
        ----------
        X : object, default=None
            Ignored; present for API consistency.
        y : object, default=None
            Ignored; present for API consistency.
        groups : object, default=None
            Ignored; present for API consistency.

        Returns
        -------
        n_splits : int
            The number of folds.
        """
        return self.n_splits

    def _iter_test_indices(self, X=None, y=None, groups=None):  # split is overridden
        raise NotImplementedError


def unstable_folds_reason(cv, add_remove):
    """Why the folds of ``cv`` may change by more than the changed row, or ``None``.

    ``add_remove``: whether some fit is private for add/remove-one neighbours (else
    replace-one, where the row count is fixed). A splitter not known to be stable is
    reported (fail closed).
    """
    cv = getattr(cv, "splitter", cv)  # the folds a prepaid search replays
    if isinstance(cv, IndependentFolds):
        if add_remove and cv.random_state is not None:
            return ("IndependentFolds has a fixed random_state: removing a row shifts the "
                    "folds of the rows after it")
        return None
    if type(cv) is KFold and not add_remove:
        return None  # folds by position, and replace-one keeps every position
    if type(cv) is KFold:
        return ("KFold cuts the rows by position: removing a row moves one row across each "
                "later fold boundary")
    return f"{type(cv).__name__} is not known to keep the other rows in their folds"
