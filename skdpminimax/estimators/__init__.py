"""Private minimax estimators."""

from skdpminimax.estimators.auc import DPAUCMaximizer
from skdpminimax.estimators.custom import DPSaddleEstimator
from skdpminimax.estimators.fair import DPGroupFairRegressor
from skdpminimax.estimators.robust import DPRobustClassifier

__all__ = ["DPAUCMaximizer", "DPRobustClassifier", "DPGroupFairRegressor", "DPSaddleEstimator"]
