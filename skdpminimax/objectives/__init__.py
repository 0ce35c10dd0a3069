"""Saddle objectives (what is optimised) and scorers (the model inside them)."""

from skdpminimax.objectives.auc import SquareLossAUC
from skdpminimax.objectives.base import RegularizedObjective, SaddleData, SaddleObjective
from skdpminimax.objectives.scorers import LinearScorer, MLPScorer

__all__ = ["SaddleData", "SaddleObjective", "RegularizedObjective", "SquareLossAUC", "LinearScorer",
           "MLPScorer"]
