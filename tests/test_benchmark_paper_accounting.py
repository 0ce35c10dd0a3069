"""The Yang 2022 diagnostic's noise swap (benchmarks/yang2022_paper_accounting.py)."""

import math

import pytest

from benchmarks.yang2022_paper_accounting import paper_noise
from skdpminimax.objectives import SquareLossAUC
from skdpminimax.privacy import PrivacyBudget
from skdpminimax.solvers import NoisyExtragradient, NoisySGDA

BUDGET = PrivacyBudget(1.0, 1e-5)
BOUNDS = {"example": (40.0, 3.0), "batch": (4.0, 0.25)}


def _objective():
    return SquareLossAUC(5, 0.5, data_norm=1.0, radius=1.0)


@pytest.mark.parametrize("variant", ["one-block", "example", "batch"])
def test_sgda_blocks_get_the_step_multiplier_times_the_observed_bound(variant):
    solver = NoisySGDA(clip_w=2.0, clip_v=0.5, batch_size=10, n_epochs=2)
    ours = solver.calibrate(_objective(), 1000, BUDGET)
    with paper_noise("sgda-linear", variant, BOUNDS):
        cal = solver.calibrate(_objective(), 1000, BUDGET)
    sens = (2.0, 0.5) if variant == "one-block" else BOUNDS[variant]
    z = ours.noise_multiplier
    assert cal.noise_multiplier == z
    assert cal.block_noise_multipliers == pytest.approx((z * sens[0] / 2.0, z * sens[1] / 0.5))
    # one block's cost: each block at the step's multiplier, below the joint split's
    if variant == "one-block":
        assert all(b < o for b, o in zip(cal.block_noise_multipliers,
                                         ours.block_noise_multipliers))
    # the solver's own calibration is back after the block
    assert solver.calibrate(_objective(), 1000, BUDGET) == ours


def test_nseg_blocks_share_the_combined_bound():
    solver = NoisyExtragradient(mode="multi_pass", sampler="poisson", clip_w=2.0, clip_v=0.5,
                                batch_size=10, n_epochs=2)
    ours = solver.calibrate(_objective(), 1000, BUDGET)
    with paper_noise("nseg", "batch", BOUNDS):
        cal = solver.calibrate(_objective(), 1000, BUDGET)
    joint = ours.noise_multiplier * math.hypot(*BOUNDS["batch"])
    assert cal.block_noise_multipliers == pytest.approx((joint / 2.0, joint / 0.5))
    assert cal.noise_ratios == ours.noise_ratios
    assert solver.calibrate(_objective(), 1000, BUDGET) == ours


def test_ours_changes_nothing():
    solver = NoisySGDA(clip_w=2.0, clip_v=0.5, batch_size=10, n_epochs=2)
    ours = solver.calibrate(_objective(), 1000, BUDGET)
    with paper_noise("sgda-linear", "ours", BOUNDS):
        assert solver.calibrate(_objective(), 1000, BUDGET) == ours
