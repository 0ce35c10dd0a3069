"""Privacy budgets and the ledger they are spent on.

A :class:`PrivacyBudget` is an ``(epsilon, delta)`` pair. Within one ``fit`` it is
split by basic composition (a slice for a private statistic such as the class ratio,
the rest for the solver), or handed to the solver whole with the other releases it
must be composed with (``preceding``, :mod:`skdpminimax.privacy.composition`);
across fits it is spent on a diffprivlib :class:`~diffprivlib.BudgetAccountant`,
which composes the entries.
"""

from dataclasses import dataclass
from numbers import Real

import numpy as np
from diffprivlib.accountant import BudgetAccountant

__all__ = ["PrivacyBudget", "PureBudget", "check_epsilon_delta", "resolve_accountant"]


# Above this a finite epsilon protects nothing, and the accountant's PLD grid (whose
# interval grows with epsilon to keep its PMFs short) needs GBs from about 1e6 (single-pass
# NSEG on 20,000 rows: 2.6 GB) and overflows near 7e6: refused before any spend rather
# than failing after it. np.inf asks for no privacy.
MAX_FINITE_EPSILON = 1e5


def check_epsilon_delta(epsilon, delta):
    """Validate a target ``(epsilon, delta)``; raise a clear error otherwise.

    ``epsilon`` must be a positive real number, at most ``MAX_FINITE_EPSILON`` (1e5)
    unless it is ``np.inf`` (no privacy), and ``delta`` must lie in the open
    interval (0, 1).
    """
    if isinstance(epsilon, bool) or not isinstance(epsilon, Real) or np.isnan(epsilon):
        raise TypeError(f"epsilon must be a positive real number, got {epsilon!r}.")
    if isinstance(delta, bool) or not isinstance(delta, Real) or np.isnan(delta):
        raise TypeError(f"delta must be a real number in (0, 1), got {delta!r}.")
    if epsilon <= 0:
        raise ValueError(f"epsilon must be > 0 (np.inf for no privacy), got {epsilon}.")
    if MAX_FINITE_EPSILON < epsilon < np.inf:
        raise ValueError(f"A finite epsilon must be at most {MAX_FINITE_EPSILON:g} (it "
                         f"protects nothing above; np.inf for no privacy), got {epsilon}.")
    if not 0 < delta < 1:
        raise ValueError(f"delta must be in the open interval (0, 1), got {delta}.")


@dataclass(frozen=True)
class PrivacyBudget:
    """An ``(epsilon, delta)`` differential-privacy budget.

    Parameters
    ----------
    epsilon : float
        Privacy loss bound, > 0. ``np.inf`` means the computation is not private.
    delta : float
        Failure probability, in (0, 1).
    preceding : tuple of dp_accounting DpEvent, default=()
        Releases (add/remove-one) that ``(epsilon, delta)`` covers *together with* the
        computation the budget is handed to: that computation must calibrate its noise
        on their composition with its own releases (one PLD), and a solver that
        cannot must not take such a budget (``composes_preceding``).
    """

    epsilon: float
    delta: float
    preceding: tuple = ()

    def __post_init__(self):
        check_epsilon_delta(self.epsilon, self.delta)

    @property
    def is_private(self):
        """Whether this budget asks for a finite epsilon."""
        return bool(np.isfinite(self.epsilon))

    def split(self, fraction):
        """Split off ``fraction`` of epsilon as a pure-DP slice (basic composition).

        Returns ``(slice, rest)`` where ``slice = (fraction * epsilon, 0)`` and
        ``rest = ((1 - fraction) * epsilon, delta)``; their sum is this budget.
        """
        if not 0 < fraction < 1:
            raise ValueError(f"fraction must be in (0, 1), got {fraction}.")
        if self.preceding:  # the slice would not be covered by the composed releases
            raise ValueError("A budget composed with preceding releases cannot be split.")
        if not self.is_private:  # a count at epsilon = inf is exact; still no delta
            return PureBudget(np.inf), self
        first = fraction * self.epsilon
        return PureBudget(first), PrivacyBudget(self.epsilon - first, self.delta)


def budget_entry(epsilon, delta):
    """``PrivacyBudget(epsilon, delta)``, or a pure epsilon-DP entry when ``delta == 0``."""
    return PureBudget(float(epsilon)) if delta == 0 else PrivacyBudget(epsilon, delta)


@dataclass(frozen=True)
class PureBudget:
    """A pure ``epsilon``-DP slice (``delta = 0``): the budget of a counting query.

    What :meth:`PrivacyBudget.split` gives the released counts (a data set's size,
    the class ratio, the group counts), and the record ``privacy_shares_`` keeps of
    them.

    Parameters
    ----------
    epsilon : float
        The slice's epsilon (``inf``: not private).
    delta : float, default=0.0
        Always 0.
    """

    epsilon: float
    delta: float = 0.0

    @property
    def is_private(self):
        return bool(np.isfinite(self.epsilon))


def resolve_accountant(accountant):
    """Return the ledger to spend on: the user's, or diffprivlib's default one."""
    return BudgetAccountant.load_default(accountant)
