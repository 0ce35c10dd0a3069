"""The solver interface every private saddle-point algorithm meets.

A solver is a scikit-learn ``BaseEstimator`` (so ``solver__batch_size`` works in a
grid search) with two methods:

``calibrate(objective, n_samples, budget) -> NoiseCalibration``
    Data-free: it sees the objective's public constants, a size and the budget,
    never the data. Tests call it directly.

``solve(objective, data, budget, rng, *, init=None) -> SolverResult``
    Runs the private algorithm; its releases are ``budget``-DP by the calibration.
    It plans on ``data.planning_size`` (under add/remove-one the true number of
    rows is private; estimators pass a released or declared size) and draws from
    the ``data.n_samples`` rows present.

Any object with these two methods can be passed as ``solver=`` (bring your own
algorithm).
"""

import copy
from abc import ABC, abstractmethod
from dataclasses import dataclass, field

import numpy as np
from sklearn.base import BaseEstimator, clone

__all__ = ["PrivateSolver", "SolverResult", "register_solver", "resolve_solver", "SOLVERS",
           "fresh_copy"]


@dataclass
class SolverResult:
    """What a solver releases, and apart from it, what the run cost.

    Everything but ``diagnostics`` is private: released points, post-processing of
    releases, or public quantities (parameters, ``n_samples``, the objective's
    constants). ``diagnostics`` is **not** private: counters of the work done that
    may depend on the data (e.g. gradient evaluations under Poisson sampling sum the
    realised batch sizes, which track the private number of rows). It is for
    benchmarking only; the estimators keep nothing of it.

    Attributes
    ----------
    w, v : ndarray
        The released primal and dual points (averaged or last iterate).
    n_iter : int
        Iterations run (fixed in advance for private solvers).
    calibration : NoiseCalibration or None
        How the noise was calibrated.
    info : dict
        Solver-specific private extras (e.g. last iterates, phase records, settings
        resolved from public quantities).
    diagnostics : dict
        Not private. ``"n_grad_evals"``: per-example gradient evaluations used; other
        solver-specific counters (e.g. NISPP's ``"inner_iterations"``).
    """

    w: np.ndarray
    v: np.ndarray
    n_iter: int
    calibration: object = None
    info: dict = field(default_factory=dict)
    diagnostics: dict = field(default_factory=dict)


class PrivateSolver(BaseEstimator, ABC):
    """Base class of private saddle-point solvers (see the module docstring)."""

    # Whether calibrate and solve compose the budget's ``preceding`` releases with
    # their own (PrivacyBudget.preceding). Estimators hand such a budget only to a
    # solver that says so, and check its calibration's ``composed_with``.
    composes_preceding = False

    def fix_plan(self, calibration):
        """Fix the run's length to ``calibration``'s, planned on public constants.

        A composed run's privacy-loss distribution must not follow the released
        constants (class ratio, group counts): estimators plan it on the public ones
        and call this before ``solve``. A solver whose plan never reads them may keep
        this no-op; one whose plan can (``NoisySGDA(n_epochs="auto")``) sets its
        length here. Returns ``self``.
        """
        return self

    @abstractmethod
    def calibrate(self, objective, n_samples, budget):
        """Noise calibration for ``n_samples`` examples and ``budget`` (data-free)."""

    @abstractmethod
    def solve(self, objective, data, budget, rng, *, init=None):
        """Return a :class:`SolverResult` that is ``budget``-DP."""


SOLVERS = {}


def register_solver(name, factory, *, replace=False):
    """Make ``solver=name`` build ``factory()`` (a fresh, unfitted solver).

    Parameters
    ----------
    name : str
        The name estimators accept as ``solver=name``.
    factory : callable
        Called with no argument for every fit; returns a solver object (``calibrate``
        and ``solve``).
    replace : bool, default=False
        Allow replacing a name already registered (the built-in ``"sgda"`` is
        :class:`~skdpminimax.estimators.DPSaddleEstimator`'s default); without it that is refused.
    """
    if not isinstance(name, str) or not name:
        raise TypeError(f"A solver's name must be a non-empty string, got {name!r}.")
    if not callable(factory):
        raise TypeError(
            f"register_solver({name!r}, factory): factory must be callable (a class or a "
            f"function returning a fresh solver), got {type(factory).__name__}.")
    if name in SOLVERS and not replace:
        raise ValueError(
            f"A solver named {name!r} is already registered; pass replace=True to replace "
            "it (every estimator that resolves this name then builds your solver), or "
            "choose another name.")
    SOLVERS[name] = factory


def fresh_copy(solver):
    """An unused copy of ``solver``: ``clone`` for scikit-learn estimators, else a deep copy.

    Frameworks that run a subroutine once per round or phase take a fresh copy each
    time, so that no state of the subroutine carries one chunk's data to the next.
    """
    return clone(solver) if isinstance(solver, BaseEstimator) else copy.deepcopy(solver)


def resolve_solver(solver):
    """A fresh solver from a registered name, or a fresh copy of a solver object
    (:func:`fresh_copy`)."""
    if isinstance(solver, str):
        try:
            return SOLVERS[solver]()
        except KeyError:
            raise ValueError(
                f"Unknown solver {solver!r}; choose from {sorted(SOLVERS)} or pass a solver object."
            ) from None
    if not (hasattr(solver, "solve") and hasattr(solver, "calibrate")):
        raise TypeError(
            "solver must be a registered name or an object with calibrate() and solve(), "
            f"got {type(solver).__name__}."
        )
    # Each fit gets its own copy: repeated fits (and the user's object) share no state.
    return fresh_copy(solver)
