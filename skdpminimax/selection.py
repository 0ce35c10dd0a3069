"""Private choice of a search's best candidate (the exponential mechanism).

A search picks its best candidate from validation scores computed on private rows.
The choice, and the refitted model that reveals it, are a release of those rows: one
row can flip it. :class:`ExponentialSelection` makes the choice
``epsilon``-differentially private. It is a ``refit`` callable for
``GridSearchCV`` / ``RandomizedSearchCV``, installed by
:func:`~skdpminimax.search.charge_search` when given ``selection_epsilon``.

The argument. Every fit of the search is charged as a release, so the fitted models
may be taken as published; given them, candidate ``c``'s utility is its number of
correct validation predictions, summed over the folds, ``u_c = sum_k n_k acc_ck``.
Each row is a validation row of one fold only (the folds come from
:class:`~skdpminimax.folds.IndependentFolds` or another splitter stable under the
relation), so adding, removing or replacing one row changes each ``u_c`` by at most 1:
the exponential mechanism with sensitivity 1 is ``epsilon``-DP for either relation
(not monotone under replace-one, hence ``exp(epsilon u / 2)``), and the accountant
composes it with the fits.
"""

import math
from numbers import Real

import numpy as np
from diffprivlib.mechanisms import Exponential

__all__ = ["ExponentialSelection", "SELECTION_SCORING", "check_selection_epsilon"]

# Scorers whose fold score is the mean of a per-row value in [0, 1], so that
# fold size * score counts the fold's rows and one row moves the sum by at most 1.
SELECTION_SCORING = ("accuracy",)


def check_selection_epsilon(epsilon):
    """Refuse a choice's epsilon that is not a positive finite number."""
    if (not isinstance(epsilon, Real) or isinstance(epsilon, bool)
            or not 0 < epsilon < math.inf):
        raise ValueError(f"selection_epsilon must be a positive finite number, got {epsilon!r}.")


class ExponentialSelection:
    """``refit`` callable: the exponential mechanism over the candidates' correct counts.

    Parameters
    ----------
    epsilon : float
        Privacy loss of the choice (pure epsilon-DP).
    test_sizes : sequence of int
        Number of validation rows of each fold, in the search's split order.
    rng : numpy.random.Generator
        Source of the mechanism's randomness.
    """

    def __init__(self, epsilon, test_sizes, rng):
        check_selection_epsilon(epsilon)
        self.epsilon = float(epsilon)
        self.test_sizes = np.asarray(test_sizes, dtype=float)
        self.rng = rng

    def utilities(self, cv_results):
        """Each candidate's correct validation predictions, summed over the folds."""
        scores = np.column_stack([np.asarray(cv_results[f"split{k}_test_score"], dtype=float)
                                  for k in range(len(self.test_sizes))])
        # A failed fit (error_score=nan) counts no correct prediction.
        return np.rint(np.nan_to_num(scores, nan=0.0) * self.test_sizes).sum(axis=1)

    def __call__(self, cv_results):
        mechanism = Exponential(epsilon=self.epsilon, sensitivity=1.0,
                                utility=[float(u) for u in self.utilities(cv_results)],
                                random_state=np.random.RandomState(self.rng.integers(2**32)))
        return int(mechanism.randomise())

    def __repr__(self):
        return f"ExponentialSelection(epsilon={self.epsilon!r}, n_splits={len(self.test_sizes)})"
