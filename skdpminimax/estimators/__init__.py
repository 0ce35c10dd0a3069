"""Private minimax estimators."""

from skdpminimax.estimators.auc import DPAUCMaximizer

__all__ = ["DPAUCMaximizer"]
