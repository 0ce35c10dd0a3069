"""skdpminimax: differentially private minimax learning as scikit-learn estimators."""

from skdpminimax._version import __version__
from skdpminimax.estimators import (
    DPAUCMaximizer,
    DPGroupFairRegressor,
    DPRobustClassifier,
    DPSaddleEstimator,
)
from skdpminimax.preprocessing import DPStandardScaler
from skdpminimax.privacy import PrivacyBudget

__all__ = [
    "__version__",
    "DPAUCMaximizer",
    "DPRobustClassifier",
    "DPGroupFairRegressor",
    "DPSaddleEstimator",
    "DPStandardScaler",
    "PrivacyBudget",
]
