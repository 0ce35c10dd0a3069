"""The privacy layer: budgets, samplers, noise calibration and shared mechanisms."""

from skdpminimax.privacy.budget import (
    PrivacyBudget,
    PureBudget,
    check_epsilon_delta,
    resolve_accountant,
)
from skdpminimax.privacy.calibration import (
    NoiseCalibration,
    analytic_gaussian_sigma,
    calibrate_noise_multiplier,
    certified_epsilon,
    split_noise_multiplier,
)
from skdpminimax.privacy.composition import Release, count_event, gaussian_event
from skdpminimax.privacy.gdp import gdp_delta, gdp_epsilon
from skdpminimax.privacy.ledger import LostLedgerError, PrepaidLedger, spend_release
from skdpminimax.privacy.mechanisms import clip_rows, clipped_sum, private_count
from skdpminimax.privacy.samplers import (
    DisjointBatches,
    FullBatch,
    PoissonSampler,
    ShuffledEpochs,
    WithoutReplacementSampler,
    make_sampler,
)

__all__ = [
    "PrivacyBudget",
    "PureBudget",
    "check_epsilon_delta",
    "resolve_accountant",
    "NoiseCalibration",
    "analytic_gaussian_sigma",
    "calibrate_noise_multiplier",
    "certified_epsilon",
    "split_noise_multiplier",
    "Release",
    "count_event",
    "gaussian_event",
    "spend_release",
    "gdp_delta",
    "gdp_epsilon",
    "LostLedgerError",
    "PrepaidLedger",
    "clip_rows",
    "clipped_sum",
    "private_count",
    "DisjointBatches",
    "ShuffledEpochs",
    "FullBatch",
    "PoissonSampler",
    "WithoutReplacementSampler",
    "make_sampler",
]
