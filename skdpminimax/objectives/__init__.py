"""Saddle objectives (what is optimised) and scorers (the model inside them)."""

from skdpminimax.objectives.auc import SquareLossAUC
from skdpminimax.objectives.base import (
    RegularizedObjective,
    SaddleData,
    SaddleObjective,
    certifies_constants,
    engine_clipped_sums,
)
from skdpminimax.objectives.fairness import DemographicParityRegression
from skdpminimax.objectives.group_dro import GroupDRO
from skdpminimax.objectives.losses import LogisticLoss, MultinomialLoss, SquaredLoss
from skdpminimax.objectives.scorers import LinearScorer, MLPScorer

__all__ = [
    "SaddleData",
    "SaddleObjective",
    "RegularizedObjective",
    "certifies_constants",
    "engine_clipped_sums",
    "SquareLossAUC",
    "GroupDRO",
    "DemographicParityRegression",
    "LogisticLoss",
    "MultinomialLoss",
    "SquaredLoss",
    "LinearScorer",
    "MLPScorer",
]
