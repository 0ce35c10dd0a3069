"""Reproduce the AUC tables of Yang et al. (2022, UAI), Tables 2 and 5, with rigorous accounting.

Every cell: method in {NSEG (linear), DP-SGDA (linear), DP-SGDA (MLP)}, dataset in
{ijcnn1, MNIST, Fashion-MNIST}, epsilon in {0.1, 0.5, 1, 5, 10} x delta in
{1e-4, 1e-5, 1e-6}, plus "Original" (epsilon = inf). Batch size 64, the paper's
epochs (15 linear, 10 MLP), 5 seeds; test ROC AUC in percent, mean (std).

What differs from the paper, on purpose (see docs/benchmarks.md):

* noise from a certified accountant (``dp_accounting`` PLD, Poisson sampling,
  add/remove-one, both blocks of a step accounted jointly), not autodp with the
  non-private "maximum observed gradient norm";
* per-example clipping instead of an observed bound: linear models at half the
  public row-norm bound (1 on ijcnn1, 20 on images), the MLP at 5 (primal) and 1
  (dual), each shrunk by the noise rule below;
* the class ratio ``p`` is released privately (5% of epsilon), not read off the data;
* every release of a private cell (the class ratio's count, the per-feature
  statistics below) is composed with the training in one PLD, which certifies the
  cell's whole ``(epsilon, delta)`` (the library's ``composition="pld"`` and
  ``composed_with``; "-pld" tags): the training gets nearly all of epsilon;
* rows clipped to a public ``data_norm``; where the paper read per-feature statistics
  off the training set (standardisation of the images, min-max scaling of ijcnn1),
  the linear image models and the ijcnn1 MLP release them privately (one Gaussian
  release at a share of the cell's budget, ``private_feature_stats``) and the other
  cells use public constants; the 5-vs-5 partition is fixed a priori to {0..4} vs
  {5..9} (the paper's is not published);
* learning rates converted from the paper's ``1/n_+``-scaled objective to our
  p-form: ``step = lr_paper / (n p (1-p))`` (digest C1, pitfall 8) where that
  worked (ijcnn1 linear), else a base step chosen by a few runs at epsilon = 1
  (a non-private choice, as the paper's own tuning); then ONE public rule per model
  family adapts to the noise (``adapt_to_noise``): linear steps / (1 + E), the MLP
  dual clip / sqrt(max(1, its own energy)) and MLP step * clip capped at
  0.7 / (1 + 2 sqrt(E) + E / 2), with E = d (z_w / m)^2 the primal noise energy of a
  step; the MLP's projection radius is 100 and its base step twice the converted
  rate on every data set. The rule
  and the clip choices were checked on a validation split carved from the
  training data (never the test split);
* NSEG: multi-pass (batch 64, 15 epochs = 15 n gradient evaluations), Poisson
  sampling with the add/remove PLD accountant, the noise split between the blocks by
  dimension as for DP-SGDA, and four times the update's noise on the extrapolation
  releases (the paper's sigma is equal for both; T releases of each kind composed);
* the non-private "Original" column runs with the paper's "Ori" settings (Table 4:
  its epochs and rates), linear DP-SGDA unclipped there as in the paper.

Usage::

    python benchmarks/reproduce_yang2022.py --quick            # a few minutes
    python benchmarks/reproduce_yang2022.py --data-dir DIR     # everything (hours)
    python benchmarks/reproduce_yang2022.py --methods sgda-mlp --datasets ijcnn1 \\
        --epsilons 1 --deltas 1e-6 --seeds 2

Results are appended to a JSON-lines file (``--results``), so a long run can be
resumed; the table is printed and, with ``--markdown``, written to a file.
"""

import argparse
import json
import math
import os
import subprocess
import sys
import time
import weakref
from pathlib import Path

import numpy as np
from sklearn.metrics import roc_auc_score

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

from skdpminimax import DPAUCMaximizer  # noqa: E402
from skdpminimax.datasets import PUBLIC_PIXEL_STATS, load_ijcnn1, load_mnist_binary  # noqa: E402
from skdpminimax.preprocessing import clipped_moment_sums, moment_sensitivity  # noqa: E402
from diffprivlib import BudgetAccountant  # noqa: E402

from skdpminimax.base import _own_share  # noqa: E402
from skdpminimax.privacy import (  # noqa: E402
    PrivacyBudget,
    Release,
    resolve_accountant,
    spend_release,
)
from skdpminimax.privacy.calibration import (  # noqa: E402
    _pld_fine_interval,
    _pld_interval,
    analytic_gaussian_sigma,
)
from skdpminimax.solvers import NoisySGDA  # noqa: E402

try:  # implemented in parallel; the cells are marked n/a without it
    from skdpminimax.solvers import NoisyExtragradient
except ImportError:
    NoisyExtragradient = None

DATASETS = ("ijcnn1", "mnist", "fashion-mnist")
METHODS = ("nseg", "sgda-linear", "sgda-mlp")
EPSILONS = (0.1, 0.5, 1.0, 5.0, 10.0)
DELTAS = (1e-4, 1e-5, 1e-6)
ORIGINAL = (math.inf, None)

# Yang et al. 2022, Table 5 (Table 2 = the delta=1e-6 rows); "Original" under None.
# Columns: nseg, sgda-linear, sgda-mlp for ijcnn1, mnist, fashion-mnist.
_PAPER_ROWS = {
    (None, math.inf): [92.191, 92.448, 96.609, 93.306, 93.349, 99.546, 96.552, 96.523, 98.020],
    (1e-4, 0.1): [90.231, 91.229, 94.020, 91.285, 91.962, 98.300, 95.490, 95.637, 96.312],
    (1e-4, 0.5): [90.352, 91.366, 96.108, 91.328, 92.067, 98.703, 95.533, 95.829, 97.098],
    (1e-4, 1.0): [90.358, 91.376, 96.316, 91.331, 92.073, 98.722, 95.536, 95.840, 97.143],
    (1e-4, 5.0): [90.363, 91.385, 96.326, 91.334, 92.079, 98.746, 95.539, 95.849, 97.208],
    (1e-4, 10.0): [90.363, 91.387, 96.329, 91.335, 92.080, 98.750, 95.539, 95.850, 97.219],
    (1e-5, 0.1): [90.168, 91.169, 93.274, 91.266, 91.910, 98.092, 95.468, 95.535, 95.989],
    (1e-5, 0.5): [90.349, 91.362, 96.029, 91.326, 92.063, 98.675, 95.531, 95.823, 97.031],
    (1e-5, 1.0): [90.357, 91.373, 96.209, 91.330, 92.071, 98.714, 95.535, 95.837, 97.122],
    (1e-5, 5.0): [90.363, 91.384, 96.300, 91.334, 92.079, 98.743, 95.538, 95.848, 97.200],
    (1e-5, 10.0): [90.363, 91.386, 96.301, 91.334, 92.080, 98.747, 95.539, 95.850, 97.213],
    (1e-6, 0.1): [90.106, 91.110, 92.763, 91.247, 91.858, 97.878, 95.446, 95.468, 95.692],
    (1e-6, 0.5): [90.346, 91.357, 95.840, 91.324, 92.058, 98.656, 95.530, 95.816, 96.988],
    (1e-6, 1.0): [90.355, 91.371, 96.167, 91.330, 92.070, 98.705, 95.534, 95.834, 97.102],
    (1e-6, 5.0): [90.363, 91.383, 96.294, 91.334, 92.078, 98.742, 95.538, 95.848, 97.198],
    (1e-6, 10.0): [90.363, 91.386, 96.297, 91.334, 92.080, 98.747, 95.539, 95.850, 97.213],
}


def paper_auc(method, dataset, epsilon, delta):
    key = (None, math.inf) if math.isinf(epsilon) else (delta, epsilon)
    return _PAPER_ROWS[key][3 * DATASETS.index(dataset) + METHODS.index(method)]


# Paper's Table 4 (DP columns): learning rates on the 1/n_+-scaled objective,
# epochs and projection radius. Converted to the p-form below.
PAPER_HYPER = {
    ("nseg", "ijcnn1"): dict(lr=(350, 350), epochs=15, radius=100),
    ("nseg", "mnist"): dict(lr=(5, 5), epochs=15, radius=2),
    ("nseg", "fashion-mnist"): dict(lr=(5, 5), epochs=15, radius=3),
    ("sgda-linear", "ijcnn1"): dict(lr=(350, 350), epochs=15, radius=10),
    ("sgda-linear", "mnist"): dict(lr=(5, 5), epochs=15, radius=2),
    ("sgda-linear", "fashion-mnist"): dict(lr=(5, 5), epochs=15, radius=3),
    ("sgda-mlp", "ijcnn1"): dict(lr=(500, 501), epochs=10, radius=100),
    ("sgda-mlp", "mnist"): dict(lr=(100, 210), epochs=10, radius=2),
    ("sgda-mlp", "fashion-mnist"): dict(lr=(100, 210), epochs=10, radius=2),
}
# Its "Ori" columns (the non-private Original cells): rates and epochs; the projection
# radius is the DP one. MNIST and Fashion-MNIST share their settings.
_PAPER_ORI = {
    ("nseg", "ijcnn1"): ((300, 300), 1000),
    ("sgda-linear", "ijcnn1"): ((300, 300), 100),
    ("sgda-mlp", "ijcnn1"): ((3000, 3001), 10),
    ("nseg", "images"): ((11, 11), 100),
    ("sgda-linear", "images"): ((11, 11), 100),
    ("sgda-mlp", "images"): ((900, 1000), 10),
}
for (_method, _dataset), _hyper in PAPER_HYPER.items():
    _lr, _epochs = _PAPER_ORI[(_method, "ijcnn1" if _dataset == "ijcnn1" else "images")]
    _hyper.update(ori_lr=_lr, ori_epochs=_epochs)

# Our step sizes on the p-form objective, where the straight conversion
# lr / (n p (1-p)) (ijcnn1 factor ~3,500; MNIST ~15,000) did not work with clipped
# gradients. Chosen by a handful of runs at epsilon=1 (see docs/benchmarks.md).
STEP_OVERRIDES = {
    ("sgda-linear", "mnist"): (0.03, 0.03),
    ("sgda-linear", "fashion-mnist"): (0.03, 0.03),
    ("nseg", "mnist"): (0.03, 0.03),
    ("nseg", "fashion-mnist"): (0.03, 0.03),
}
# The "Original" column is not private and runs with the paper's "Ori" settings
# (Table 4: its epochs and rates, converted). The linear image models' converted rates
# are as unusable there as in the DP cells, so their base step was tuned without
# privacy on validation (10,000 training images held out): 0.12 instead of 0.03
# (docs/benchmarks.md).
ORIGINAL_STEP_OVERRIDES = {
    (method, dataset): (0.12, 0.12)
    for method in ("sgda-linear", "nseg") for dataset in ("mnist", "fashion-mnist")
}

# The Original column's batch sampler (one name, or one per method): without noise it
# carries no privacy, so it is the loader the paper's non-private runs most likely
# used, shuffled epochs (PyTorch's DataLoader; the digest), since the "-shuf" rows;
# neutral to positive on validation (docs/benchmarks.md).
ORIGINAL_SAMPLER = "shuffle"
# The tag of Original rows run over shuffled epochs ("-shuf2": whole epochs of n // m
# batches, and NSEG no longer dropping a batch of each odd epoch; "-shuf" before).
ORIGINAL_SHUFFLE_TAG = "-shuf2"


def original_sampler(method):
    """The Original column's sampler for ``method`` (``ORIGINAL_SAMPLER``)."""
    if isinstance(ORIGINAL_SAMPLER, str):
        return ORIGINAL_SAMPLER
    return ORIGINAL_SAMPLER.get(method, "poisson")

LINEAR_DUAL_CLIP_RATIO = 0.1
# The linear models' L2 penalty (DPAUCMaximizer's alpha).
LINEAR_ALPHA = 1e-4
# The linear rule's constants (module constants so that tune_yang2022_linear.py can vary
# them; on validation 0.25 / 1.0, tail averaging and powers 0.5 / 1.5 / 2 / 2.5 did not do
# better across the epsilons, docs/benchmarks.md):
# per-example gradients clipped at this fraction of the public row-norm bound,
LINEAR_CLIP_FRACTION = 0.5
# DP-SGDA releases the uniform average of its iterates,
LINEAR_AVERAGE = "uniform"
# and the steps are divided by (1 + E) ** LINEAR_STEP_DAMPING_POWER (adapt_to_noise).
LINEAR_STEP_DAMPING_POWER = 1.0
# Per data set, DP-SGDA's (schedule, average) when not ("constant", LINEAR_AVERAGE). Chosen
# without privacy on validation, as the paper chose its rates per data set
# (docs/benchmarks.md, "The linear step schedule"): on the images a linear decay
# starting at LINEAR_DECAY_PEAK times the constant rule's step, with the last iterate,
# gained 0.03-0.45 points at epsilon <= 1 (MNIST -0.11 at epsilon = 10); on ijcnn1 it
# cost 0.66 at epsilon = 0.1, so ijcnn1 keeps the constant step and the uniform average.
LINEAR_SCHEDULES = {"mnist": ("linear", "last"), "fashion-mnist": ("linear", "last")}
# Peaks 0.35 / 0.5 / 0.75 / 1 at epsilon = 0.1, MNIST: 89.46 / 89.72 / 89.68 / 89.30.
LINEAR_DECAY_PEAK = 0.5

# Public bounds on ||x||: ijcnn1 rows (LIBSVM scaling to [-1, 1]) have norm <= 2;
# standardised 28x28 images have median norm ~27 and 99th percentile ~40.
DATA_NORM = {"ijcnn1": 2.0, "mnist": 40.0, "fashion-mnist": 40.0}
CLIP = 1.0
# The MLP's per-example gradients are larger; a clip of 1 biases it too much.
CLIP_OVERRIDES = {("sgda-mlp", "ijcnn1"): 5.0, ("sgda-mlp", "mnist"): 5.0,
                  ("sgda-mlp", "fashion-mnist"): 5.0}
# The MLP's dual clip (None = the primal clip). It shrinks with its OWN noise energy
# (adapt_to_noise): the scalar dual's, (z_v / m)^2, stays below 1, so the dual clip
# stays 1. Shrinking it with the primal energy
# cost MNIST 2.2 points (validation 95.8 vs 98.1); a dual clip equal to the primal one
# cost ijcnn1 at epsilon <= 1 (docs/benchmarks.md).
MLP_CLIP_V = 1.0
# Share of each step's privacy loss spent on the scalar dual (NoisySGDA noise_allocation).
MLP_DUAL_SHARE = 0.02
# The MLP's step * clip is capped by MLP_STEP_CLIP_CAP / (1 + k1 sqrt(E) + k2 E)
# (adapt_to_noise); the cap is ~ the ijcnn1 converted base product 0.143 * 5 = 0.714,
# where (k1, k2) were validated. A cap, not a divisor of the base product: a base
# product already below it (MNIST-type: 0.0067 * 5 = 0.033) is not shrunk further.
MLP_STEP_DAMPING = (2.0, 0.5)
MLP_STEP_CLIP_CAP = 0.7
# The MLP's base steps are twice the converted paper rates before the cap: MNIST
# validation at epsilon = 1, 96.5 -> 98.1. On ijcnn1 the cap binds in every cell
# (base product 1.43 > 0.7), so nothing changes there.
MLP_STEP_MULT = 2.0
# Whether the MLP's primal clip shrinks with its noise energy (divided by sqrt(max(1, E))).
# Not since "-mlp8": with step * clip capped, the shrink only biased the image models
# (their per-example gradients scale with ||x|| ~ 28): validation at epsilon = 1 / 10,
# Fashion-MNIST 96.29 / 96.78 -> 96.84 / 97.20, MNIST 98.25 / 98.95 -> 98.51 / 99.02,
# ijcnn1 (4 seeds) 95.47 / 96.38 -> 95.43 / 96.38 (docs/benchmarks.md).
MLP_SHRINK_PRIMAL_CLIP = False
# Projection radius of the MLP's weights, every data set: the paper's ijcnn1 value (it
# never binds there). The paper's 2 on images is below the norm of the noise's random
# walk under certified noise (~3 at epsilon = 1), so the projection shrank the signal:
# MNIST validation 90.9 -> 96.5 at epsilon = 1 (docs/benchmarks.md). None = the paper's.
MLP_RADIUS = 100.0
# The MLP's step schedule and released iterate, per data set: (schedule, average) of
# NoisySGDA. Chosen without privacy on the validation split, as the paper chose its
# rates per data set (docs/benchmarks.md, "The step schedule"): ijcnn1 is step-limited
# under the cap (even without noise its last iterate beats the tail average) and
# takes a linear decay with the last iterate, 0.2-0.5 points better at every epsilon
# (12 seeds; on the test split the change depended on the seed's initial weights: over
# 10 seeds +0.02 to +0.09 at epsilon = 1, +0.2 to +0.3 at 5 and 10); on the images,
# where the noise dominates, the linear decay cost 0.02-0.15 points, so they keep the
# constant step and the tail average.
MLP_SCHEDULES = {"ijcnn1": ("linear", "last")}
# A linear decay starts at this multiple of the constant schedule's (capped) step:
# at 2 both schedules have the same sum of steps. On validation 1.5 / 2 / 2.5 gave
# 95.41 / 95.49 / 94.73 at epsilon = 1 (12 seeds); 2.5 starts to diverge.
MLP_LINEAR_PEAK = 2.0
BATCH = 64
# NSEG's extrapolation noise relative to its update noise (1: the paper's equal noise).
# The update's noise accumulates in the iterate; the extrapolation's reaches it only
# through gamma times the operator's change, so more of the budget goes to the update
# (at 4 its multiplier drops by 26% at epsilon = 0.1, 9% at 1). Validation at epsilon =
# 0.1 (2 seeds; ijcnn1 4), 1 / 4 / 8: MNIST 88.49 / 89.08 / 89.10, Fashion-MNIST 94.93 /
# 95.40 / 95.42, ijcnn1 89.30 / 90.74; MNIST epsilon = 1: 91.23 / 91.41
# (docs/benchmarks.md).
NSEG_EXTRAPOLATION_NOISE = 4.0
# Share of epsilon spent on the private class ratio (the library's default). 1% / 0.2%
# gained 0.05 at most on the images at epsilon = 0.1 (validation) and would leave
# ijcnn1's ~3,900 positives a count error of ~1,400 there (docs/benchmarks.md).
POS_RATIO_BUDGET = 0.05
# Class ratios declared public (nothing spent on them), per data set. Empty: every
# private cell releases its ratio. Fashion-MNIST's 1/2 (if its training split holds
# 6,000 images of each class) gained 0.06 on validation at epsilon = 0.1; not adopted
# (docs/benchmarks.md, "Status against the targets").
DECLARED_POS_RATIO = {}


# Private per-feature standardisation. The paper standardised the images with the
# training set's (non-private) statistics and min-max scaled ijcnn1 with its training
# minima and maxima; here the cells below release their statistics privately instead.
# "-rng7" / "-rng8": the linear image models' private cells (before: the published
# global constants; the Original column keeps them). MNIST releases per-pixel means and
# stds ("moments"); Fashion-MNIST, whose pixels' stds are alike, per-pixel means only
# with the public global std ("means": per-pixel stds lost there on validation).
# "-mlp10": the ijcnn1 MLP's private cells, per-feature means and stds, rescaled to one
# common std that keeps the released total variance ("moments" with TRACE_SCALED): only
# the features' balance changes, not the rows' overall scale, for which the MLP's step
# rule was validated (docs/benchmarks.md). A share of epsilon (and of delta) pays for
# one Gaussian release; the fit gets the rest (sequential composition).
# "-rng9": ijcnn1's linear private cells centre their features (per-feature means with
# the public scale 1), only where the class ratio's count is noisy (see
# FEATURE_STATS_MIN_RATIO_NOISE): on features whose mean is far from 0 a ratio off by e
# pulls theta along the features' mean, 2 (1 + alpha) e times it, and centring removes
# that pull (docs/benchmarks.md, "The class ratio's error and centring").
FEATURE_STATS = {("sgda-linear", "mnist"): "moments", ("nseg", "mnist"): "moments",
                 ("sgda-linear", "fashion-mnist"): "means", ("nseg", "fashion-mnist"): "means",
                 ("sgda-mlp", "ijcnn1"): "moments",
                 ("sgda-linear", "ijcnn1"): "means", ("nseg", "ijcnn1"): "means"}
# Of epsilon, per data set, or per (method, data set) where that differs. ijcnn1's
# centring: 5% / 10% / 20% / 30% / 40% gave 89.40 / 90.88 / 91.34 / 91.40 / 91.37 for
# DP-SGDA (no release: 90.83) and 88.53 / 90.32 / 90.86 / 90.90 / 90.84 for NSEG
# (89.73) on validation at epsilon = 0.1 (40 seeds): the smallest share on the plateau.
FEATURE_STATS_SHARE = {"mnist": 0.2, "fashion-mnist": 0.1, "ijcnn1": 0.05,
                       ("sgda-linear", "ijcnn1"): 0.2, ("nseg", "ijcnn1"): 0.2}
FEATURE_STATS_DELTA_SHARE = 0.1  # of delta
# The public range of one feature before standardisation: [0, 1] pixels; ijcnn1 as
# scaled by LIBSVM.
FEATURE_RANGE = {"mnist": (0.0, 1.0), "fashion-mnist": (0.0, 1.0), "ijcnn1": (-1.0, 1.0)}
# The public bound on ||x|| in that range (sqrt(784) for [0, 1] pixels; 2 for ijcnn1).
RAW_NORM_BOUND = {"mnist": 28.0, "fashion-mnist": 28.0, "ijcnn1": 2.0}
# Rows clipped at this fraction of RAW_NORM_BOUND for the release (less noise, some bias).
FEATURE_STATS_CLIP = {"mnist": 0.35, "fashion-mnist": 0.5, "ijcnn1": 0.6}
# A released std is read as at least this (dead pixels, noise).
STD_FLOOR = {"mnist": 0.1, "fashion-mnist": 0.1, "ijcnn1": 0.05}
TRACE_SCALED = ("ijcnn1",)
# The release is made only where its noise is small next to what it estimates: the noise
# std of a released second moment, sqrt(2) c sigma / n, at most this (else the cell
# keeps the public scaling and spends nothing on it). On ijcnn1, whose smallest
# features' variances are ~0.02, the release gained at epsilon = 0.5 (noise ~0.01) and
# lost 1.6-2.8 points at epsilon = 0.1 (~0.03-0.05) on validation.
FEATURE_STATS_MAX_NOISE = {"ijcnn1": 0.015}
# A centring release ("means") made only where the class ratio's count is noisy: its
# noise std relative to the public guess of the positive count (public_pos_ratio), at
# least this. ijcnn1: 7.3% at epsilon = 0.1, 1.5% at 0.5. The centring gained 0.5
# (DP-SGDA) and 1.1 (NSEG) points at epsilon = 0.1 and lost 0.2-0.35 at epsilon 0.5, 1
# and 10 (validation, 20-40 seeds), where the ratio's error is small.
FEATURE_STATS_MIN_RATIO_NOISE = {("sgda-linear", "ijcnn1"): 0.03, ("nseg", "ijcnn1"): 0.03}
# The public training-split sizes (the size every neighbour is planned on).
TRAIN_ROWS = {"ijcnn1": 39992, "mnist": 60000, "fashion-mnist": 60000}


# What is the same for every cell of a data set (the rows back in their public range,
# their clipped sums; only the noise differs) is computed once: ~2 s of each image cell.
# One entry per name, tied to the loader's array by a weak reference: name -> (ref, key,
# value).
_SAME_FOR_EVERY_CELL = {}


def _once_per_array(name, source, key, compute):
    hit = _SAME_FOR_EVERY_CELL.get(name)
    if hit is not None and hit[0]() is source and hit[1] == key:
        return hit[2]
    value = compute()
    _SAME_FOR_EVERY_CELL[name] = (weakref.ref(source), key, value)
    return value


def clipped_feature_sums(X_raw, clip, means_only, low=0.0):
    """``sum_i x_i`` (and ``sum_i x_i^2``) over the rows of ``X_raw`` clipped to
    ``[low, 1]`` and to norm ``clip``: the release before its noise (the library's
    ``clipped_moment_sums``, on features already in ``[low, 1]``, within ``[-1, 1]``)."""
    return clipped_moment_sums(np.clip(X_raw, low, 1.0), clip, with_std=not means_only)


def stats_sigma(epsilon, delta, clip, means_only=False):
    """The Gaussian noise std of the release: the analytic Gaussian's for
    ``(epsilon, delta)`` at the add/remove-one sensitivity ``c`` (means) or
    ``sqrt(2) c`` (the library's ``moment_sensitivity``)."""
    return analytic_gaussian_sigma(epsilon, delta, 1.0) * moment_sensitivity(
        clip, with_std=not means_only)


def private_feature_stats(X_raw, epsilon, delta, rng, clip, means_only=False, public_std=None,
                          sums=None, low=0.0, std_floor=0.1):
    """Per-feature mean and std of features in ``[low, 1]`` from one Gaussian release.

    The release is ``sum_i x_i`` (``means_only``) or ``(sum_i x_i, sum_i x_i^2)``, plus
    ``N(0, sigma^2 I)``, over rows clipped to ``[low, 1]`` (``low`` >= -1) and to norm
    ``clip``. Add/remove-one neighbours with the row count public (declared, as for
    the fits): a clipped row ``x`` has ``|x_j| <= 1``, so ``||x^2|| <= ||x|| <= c``, and
    it moves the release by at most ``c`` (means) or ``sqrt(2) c``; ``sigma`` is
    :func:`stats_sigma`. Without noise (``epsilon = inf``) the statistics are exact.
    Everything after the release is post-processing: dividing by the public count,
    clipping the mean to ``[low, 1]`` and the second moment to ``[0, 1]``, flooring the
    std at ``std_floor``; with ``means_only`` the std is ``public_std``.
    ``sums``: :func:`clipped_feature_sums` of ``X_raw`` if already computed.
    """
    if not -1.0 <= low < 1.0:
        raise ValueError(f"low must be in [-1, 1), got {low!r}.")
    n, d = X_raw.shape
    if sums is None:
        sums = clipped_feature_sums(X_raw, clip, means_only, low)
    if math.isfinite(epsilon):
        sums = sums + stats_sigma(epsilon, delta, clip, means_only) * rng.standard_normal(
            sums.shape)
    mean = np.clip(sums[:d] / n, low, 1.0)
    if means_only:
        return mean, np.full(d, float(public_std))
    second = np.clip(sums[d:] / n, 0.0, 1.0)
    return mean, np.sqrt(np.maximum(second - mean ** 2, std_floor ** 2))


def _stats_plan(method, dataset, epsilon, delta):
    """``(epsilon, delta, row clip)`` of the cell's release (public constants)."""
    share = FEATURE_STATS_SHARE.get((method, dataset), FEATURE_STATS_SHARE[dataset])
    return (epsilon * share, delta * FEATURE_STATS_DELTA_SHARE,
            FEATURE_STATS_CLIP[dataset] * RAW_NORM_BOUND[dataset])


def ratio_count_noise(dataset, epsilon, n):
    """The std of the released positive count's noise (two-sided geometric at
    ``POS_RATIO_BUDGET * epsilon``, about ``sqrt(2)`` over it) relative to the public
    guess ``n * public_pos_ratio``; 0 where the ratio is declared public."""
    if dataset in DECLARED_POS_RATIO:
        return 0.0
    return math.sqrt(2.0) / (POS_RATIO_BUDGET * epsilon) / (n * public_pos_ratio(dataset))


def releases_feature_stats(method, dataset, epsilon, delta, n=None):
    """Whether the private cell standardises with released statistics (FEATURE_STATS,
    FEATURE_STATS_MAX_NOISE for second moments, FEATURE_STATS_MIN_RATIO_NOISE); public
    quantities only. ``n``: the public row count (default: the training split's,
    TRAIN_ROWS)."""
    key = (method, dataset)
    if key not in FEATURE_STATS or not math.isfinite(epsilon):
        return False
    n = TRAIN_ROWS[dataset] if n is None else n
    floor = FEATURE_STATS_MIN_RATIO_NOISE.get(key)
    if floor is not None and ratio_count_noise(dataset, epsilon, n) < floor:
        return False
    limit = FEATURE_STATS_MAX_NOISE.get(dataset)
    if limit is None or FEATURE_STATS[key] != "moments":
        return True
    return stats_sigma(*_stats_plan(method, dataset, epsilon, delta)) / n <= limit


def restandardise_privately(method, dataset, X_train, X_test, epsilon, delta, seed):
    """The rows (images: standardised with the public constants by the loader, put back
    in ``[0, 1]``; ijcnn1: as loaded) standardised per feature with
    :func:`private_feature_stats` at the data set's share of the budget (ijcnn1 then
    rescaled to one common std keeping the released total variance); returns the rows
    and the release as a :class:`~skdpminimax.privacy.Release` (its share of the
    budget and its Gaussian's multiplier, noise std over sensitivity), for the fit to
    compose with."""
    if dataset in PUBLIC_PIXEL_STATS:
        centre, scale = PUBLIC_PIXEL_STATS[dataset]
    else:
        centre, scale = 0.0, 1.0
    raw_train = _once_per_array("raw", X_train, (centre, scale),
                                lambda: X_train * scale + centre)
    raw_test = X_test * scale + centre
    eps_stats, delta_stats, clip = _stats_plan(method, dataset, epsilon, delta)
    means_only = FEATURE_STATS[(method, dataset)] == "means"
    low = FEATURE_RANGE[dataset][0]
    sums = _once_per_array("sums", X_train, (centre, scale, clip, means_only, low),
                           lambda: clipped_feature_sums(raw_train, clip, means_only, low))
    mean, std = private_feature_stats(
        raw_train, eps_stats, delta_stats, np.random.default_rng([seed, 2022]), clip,
        means_only=means_only, public_std=scale, sums=sums, low=low,
        std_floor=STD_FLOOR[dataset])
    if dataset in TRACE_SCALED:
        std = std / math.sqrt(np.mean(std ** 2))  # common std sqrt(mean(std^2))
    multiplier = (stats_sigma(eps_stats, delta_stats, clip, means_only)
                  / moment_sensitivity(clip, with_std=not means_only))
    release = Release(eps_stats, delta_stats, gaussian_multipliers=(multiplier,))
    return (raw_train - mean) / std, (raw_test - mean) / std, release

def sgda_schedule(method, dataset):
    """``(schedule, average)`` of DP-SGDA (``"sgda-mlp"`` or ``"sgda-linear"``) on
    ``dataset``: the family's per-data-set choice, else its constant-step default."""
    if method == "sgda-mlp":
        return MLP_SCHEDULES.get(dataset, ("constant", "tail"))
    return LINEAR_SCHEDULES.get(dataset, ("constant", LINEAR_AVERAGE))


def decay_peak(method):
    """The multiple of the noise rule's step at which a linear decay starts."""
    return MLP_LINEAR_PEAK if method == "sgda-mlp" else LINEAR_DECAY_PEAK


def public_pos_ratio(dataset):
    """The public class ratio the rate conversion uses: 1/2 for the 5-vs-5 image tasks,
    for ijcnn1 the ratio documented with the data set (9.7%)."""
    return 0.097 if dataset == "ijcnn1" else 0.5


def converted_steps(method, dataset, n, p, original=False):
    """The paper's learning rates on our p-form objective: ``lr / (n p (1-p))`` (its
    "Ori" rates for the non-private column when ``original``)."""
    overrides = ORIGINAL_STEP_OVERRIDES if original else STEP_OVERRIDES
    if (method, dataset) in overrides:
        return overrides[(method, dataset)]
    lr_w, lr_v = PAPER_HYPER[(method, dataset)]["ori_lr" if original else "lr"]
    factor = n * p * (1.0 - p)
    return lr_w / factor, lr_v / factor


# The paper's 5-vs-5 partition is not published. We fix one a priori: the first five
# classes {0..4} positive (--positive-classes to change it). The spread of the best
# linear square-loss AUC over all 126 partitions is 89.5-98.1 (MNIST) and ~91-99
# (Fashion-MNIST), far wider than any DP effect: see docs/benchmarks.md.
POSITIVE_CLASSES = (0, 1, 2, 3, 4)
# Bump when a hyper-parameter or the split changes: results logged under another tag
# are ignored (the JSON-lines log stays resumable for the current configuration).
CONFIG_TAG = "v3"
# The MLP's rules changed after the linear table was started: its own suffix.
# "-mlp7" has the rules of "-mlp6"; it reran the MLP table end to end because two library
# changes (chunked batch and noise draws, the calibration search) had altered the random
# stream after some "-mlp6" rows were logged.
# "-mlp8": the primal clip no longer shrinks with the noise (MLP_SHRINK_PRIMAL_CLIP).
# "-mlp9": ijcnn1 takes the linear step decay and its last iterate (MLP_SCHEDULES); the
# image models' configuration, and so their rows, are those of "-mlp8".
MLP_TAG = "-mlp8"


# The linear table was rerun when NoisySGDA began drawing batches and noise a chunk of
# steps at a time (same distributions, another random stream; the numba kernel): rng2;
# and again with the Original column's own step (ORIGINAL_STEP_OVERRIDES), a dual
# clip of a tenth of the primal one and NSEG's noise split by dimension: rng4.
# "-rng5": linear DP-SGDA on the images takes the linear step decay and its last
# iterate (LINEAR_SCHEDULES); NSEG and ijcnn1 keep their "-rng4" rows.
LINEAR_TAG = "-rng4"
# The (method, data set) pairs whose rows carry a newer tag than their family's.
CELL_TAGS = {("sgda-mlp", "ijcnn1"): "-mlp9", ("sgda-linear", "mnist"): "-rng5",
             ("sgda-linear", "fashion-mnist"): "-rng5"}
# The same for the private cells only. "-rng6": NSEG with four times the noise on its
# extrapolation releases (NSEG_EXTRAPOLATION_NOISE); without noise nothing changes, so
# its Original rows keep their tag.
PRIVATE_CELL_TAGS = {("nseg", dataset): "-rng6"
                     for dataset in ("ijcnn1", "mnist", "fashion-mnist")}
# "-rng7" / "-rng8" / "-mlp10": the private cells that standardise with privately
# released per-feature statistics (FEATURE_STATS, releases_feature_stats); their Original
# rows, and ijcnn1's private cells where the release is not made (the MLP at epsilon =
# 0.1, the linear models at epsilon >= 0.5), keep their tags.
FEATURE_STATS_TAGS = {"mnist": "-rng7", "fashion-mnist": "-rng8", "ijcnn1": "-mlp10",
                      ("sgda-linear", "ijcnn1"): "-rng9", ("nseg", "ijcnn1"): "-rng9"}
# "-chunk": NSEG draws its batches and noise a chunk of iterations at a time (the
# compiled kernel's order, from 3290d15): another random stream for every NSEG row.
METHOD_SUFFIX = {"nseg": "-chunk"}


# How a private cell's releases (the class ratio's count, the feature statistics) share
# its budget with the training: "pld", composed with it in one PLD (the library's
# default), whose rows carry COMPOSITION_TAG; "basic", the shares added (every row
# logged before the tag).
COMPOSITION = "pld"
COMPOSITION_TAG = "-pld"
# The (method, data set) pairs still run with the shares added: the image MLP, whose
# cells release the class ratio's count only (5% of epsilon) and whose 150 private
# fits (~1 min each) were not rerun with the composition (docs/benchmarks.md).
BASIC_COMPOSITION_CELLS = {("sgda-mlp", "mnist"), ("sgda-mlp", "fashion-mnist")}


def composition(method, dataset):
    """How the cell's releases share its budget (COMPOSITION, BASIC_COMPOSITION_CELLS)."""
    return "basic" if (method, dataset) in BASIC_COMPOSITION_CELLS else COMPOSITION


# The Original column moved from the DP cells' epochs and rates to the paper's "Ori"
# ones (Table 4) after the tables above had been run: its own suffix ("-ori": Ori
# epochs and rates; "-ori2": also no clipping, for linear DP-SGDA only).
ORIGINAL_TAGS = {"nseg": "-ori", "sgda-linear": "-ori2", "sgda-mlp": "-ori"}


# "-fine": the library's calibration searches a second, finer PLD grid where its first
# one is loose (0.01 <= epsilon <= 1; calibration._pld_fine_interval): 0.6-1.5% less noise over
# the cells' thousands of steps, so every private cell at those epsilons was rerun.
FINE_GRID_TAG = "-fine"


def calibrated_on_finer_grid(epsilon):
    """Whether the library's noise search refines on a finer PLD grid at ``epsilon``."""
    return _pld_fine_interval(epsilon) < _pld_interval(epsilon)


def config_tag(method, epsilon=1.0, dataset=None, delta=None):
    """The configuration a row was produced under (``delta``: the private cell's)."""
    key = (method, dataset)
    tag = CELL_TAGS.get(key, MLP_TAG if method == "sgda-mlp" else LINEAR_TAG)
    suffix = METHOD_SUFFIX.get(method, "")
    if math.isinf(epsilon):
        shuffled = ORIGINAL_SHUFFLE_TAG if original_sampler(method) == "shuffle" else ""
        return CONFIG_TAG + tag + ORIGINAL_TAGS[method] + shuffled + suffix
    joint = COMPOSITION_TAG if composition(method, dataset) == "pld" else ""
    joint += FINE_GRID_TAG if calibrated_on_finer_grid(epsilon) else ""
    if delta is not None and releases_feature_stats(method, dataset, epsilon, delta):
        stats_tag = FEATURE_STATS_TAGS.get(key, FEATURE_STATS_TAGS[dataset])
        return CONFIG_TAG + stats_tag + joint + suffix
    return CONFIG_TAG + PRIVATE_CELL_TAGS.get(key, tag) + joint + suffix


def load(dataset, data_dir, positive_classes=POSITIVE_CLASSES):
    if dataset == "ijcnn1":
        return load_ijcnn1(data_dir, random_state=0)
    return load_mnist_binary(data_dir, dataset, positive_classes=positive_classes)


def make_solver(method, steps, epochs, clip, clip_v=None, dataset=None):
    step_w, step_v = steps
    common = dict(batch_size=BATCH, n_epochs=epochs, step_size=step_w, dual_step_size=step_v,
                  clip_w=clip, clip_v=clip if clip_v is None else clip_v)
    if method == "nseg":
        if NoisyExtragradient is None:
            return None
        # The paper ran NSEG over 15 epochs of batch-64 mini-batches: multi-pass mode.
        # Poisson sampling is the sampler the add/remove PLD accountant assumes (as for
        # DP-SGDA). The noise is split between the blocks by dimension, as for DP-SGDA
        # (the paper's single sigma is one multiplier for both; on validation the split
        # with the small dual clip below gained 0.4 to 3.2 points at epsilon = 0.1).
        # An "epoch" is n gradient evaluations: T = ceil(15 n / (2 * 64)) iterations of two
        # releases each, the same gradient (and privacy) budget as DP-SGDA's 15 epochs.
        # One step size for both blocks (NSEG has one; the paper's are equal too).
        common.pop("dual_step_size")
        return NoisyExtragradient(mode="multi_pass", sampler="poisson",
                                  noise_allocation="dimension",
                                  extrapolation_noise=NSEG_EXTRAPOLATION_NOISE,
                                  accounting="pld", **common)
    # The data set's schedule and released iterate (MLP_SCHEDULES / LINEAR_SCHEDULES;
    # the tail and uniform averages are post-processing that damp the noise).
    schedule, average = sgda_schedule(method, dataset)
    if method == "sgda-mlp":
        # MLP_DUAL_SHARE of each step's privacy loss to the scalar dual (validation,
        # docs/benchmarks.md).
        return NoisySGDA(**common, schedule=schedule, average=average,
                         noise_allocation=MLP_DUAL_SHARE)
    return NoisySGDA(**common, schedule=schedule, average=average)


def training_budget(solver, model, probe, n_samples, budget):
    """The budget ``model``'s fit hands ``solver`` (size declared public): the rest
    after its releases' shares, or with ``composition="pld"`` the whole budget with
    the releases to compose with. The library's own steps (``_own_share``,
    ``_split_budget``, ``_preceding_events``) on a data-free dry run."""
    releases = model._composed_releases(resolve_accountant(model.accountant))
    constants, rest = model._split_budget(_own_share(budget, releases))
    dry_run = solver.calibrate(probe, n_samples, PrivacyBudget(math.inf, budget.delta))
    preceding = model._preceding_events(solver, dry_run, budget, releases, constants)
    if preceding is None:
        return rest
    return PrivacyBudget(budget.epsilon, budget.delta, preceding=preceding)


def noise_energies(solver, model, n_samples, n_features, budget):
    """``(d (z_w s / m)^2, d_v (z_v s / m)^2)``: the noise energy of one step relative to
    the clipped gradient's, primal and dual (``d`` / ``d_v`` the block dimensions,
    ``z_w`` / ``z_v`` their noise multipliers, ``s = 1`` the Poisson sensitivity factor,
    ``m`` the batch size). Public: the calibration is data-free (a dry run on the
    public class ratio 1/2)."""
    if not budget.is_private:
        return 0.0, 0.0
    probe = model._make_objective(n_features, model.data_norm, {"pos_ratio": 0.5})
    train_budget = training_budget(solver, model, probe, n_samples, budget)
    z_w, z_v = solver.calibrate(probe, n_samples, train_budget).block_noise_multipliers
    return probe.n_primal * (z_w / BATCH) ** 2, probe.n_dual * (z_v / BATCH) ** 2


def mlp_step_clip_cap(energy, damping=MLP_STEP_DAMPING, cap=MLP_STEP_CLIP_CAP):
    """Largest MLP step * clip at primal noise energy ``E``:
    ``cap / (1 + k1 sqrt(E) + k2 E)`` with ``damping = (k1, k2)``."""
    k1, k2 = damping
    return cap / (1.0 + k1 * math.sqrt(energy) + k2 * energy)


def adapt_to_noise(method, solver, model, n_samples, n_features, budget, *,
                   damping=MLP_STEP_DAMPING, cap=MLP_STEP_CLIP_CAP,
                   shrink_clip=MLP_SHRINK_PRIMAL_CLIP):
    """One rule per model family, on public quantities only, the same for every cell.

    Linear: step sizes divided by ``1 + E`` (E the primal part of :func:`noise_energies`;
    to the power ``LINEAR_STEP_DAMPING_POWER``, which is 1): no change
    without noise, ~6x smaller at epsilon = 0.1 on 784-d images; a linear schedule
    (the images' DP-SGDA, ``LINEAR_SCHEDULES``) starts at ``LINEAR_DECAY_PEAK`` (0.5)
    times that step. MLP (6,144 primal
    parameters on ijcnn1, E ~ 0.4 at epsilon = 10, ~1.3 at 1, ~40 at 0.1; ~2e5 on
    images, E ~ 10 to 40 at epsilon >= 1): the step shrunk so that step * clip is at
    most :func:`mlp_step_clip_cap` (``0.7 / (1 + 2 sqrt(E) + E / 2)``; validation,
    docs/benchmarks.md), on average over the run: a linear schedule starts at
    ``MLP_LINEAR_PEAK`` (2) times that step, which gives the same sum of steps; the
    dual clip divided by the square root of max(1, its own noise energy), which stays
    below 1 here, so it is kept. With ``shrink_clip`` (the rule
    until ``-mlp8``) the primal clip is divided by ``sqrt(max(1, E))`` too, which keeps
    the noise norm ``sqrt(d) z_w C / m`` of the mean at most the base clip. ``damping``,
    ``cap`` and ``shrink_clip`` override the MLP rule's constants (validation runs).
    """
    energy, dual_energy = noise_energies(solver, model, n_samples, n_features, budget)
    params = solver.get_params()
    # the primal step, and the dual one when it is set apart
    steps = {name: params[name] for name in ("step_size", "dual_step_size")
             if params.get(name) is not None}
    if method == "sgda-mlp":
        # Clips: optionally cap a block's noise norm of a step at its base clip (no
        # change while its energy <= 1; the scalar dual's never exceeds 1 here).
        # Steps: with clipped gradients the largest move of a step is step * clip, and
        # the noise's random walk scales with it too; that product is capped at
        # K / (1 + k1 sqrt(E) + k2 E): ~ the noise-to-clip norm ratio while E is
        # small, faster when the noise dominates (ijcnn1 epsilon = 0.1: E ~ 17-40).
        shrink = math.sqrt(max(1.0, energy)) if shrink_clip else 1.0
        clip_w = params["clip_w"] / shrink
        clip_v = params["clip_v"] / math.sqrt(max(1.0, dual_energy))
        step_factor = min(1.0, mlp_step_clip_cap(energy, damping, cap) / (params["step_size"] * clip_w))
        solver.set_params(clip_w=clip_w, clip_v=clip_v)
        steps = {name: step * step_factor for name, step in steps.items()}
    else:
        divisor = (1.0 + energy) ** LINEAR_STEP_DAMPING_POWER
        steps = {name: step / divisor for name, step in steps.items()}
    if params.get("schedule") == "linear":
        # the rule sets the mean step; a linear decay starts at a multiple of it
        steps = {name: step * decay_peak(method) for name, step in steps.items()}
    solver.set_params(**steps)
    return energy


def run_cell(method, dataset, epsilon, delta, seed, data):
    """One fit; returns a dict with the test AUC (percent), noise multipliers and time."""
    X_train, X_test, y_train, y_test = data
    n, p_emp = X_train.shape[0], float(y_train.mean())
    hyper = PAPER_HYPER[(method, dataset)]
    p_public = public_pos_ratio(dataset)
    original = math.isinf(epsilon)
    ledger, releases = BudgetAccountant(), []  # the cell's ledger: its total is the cell's
    if releases_feature_stats(method, dataset, epsilon, delta, n):
        X_train, X_test, release = restandardise_privately(
            method, dataset, X_train, X_test, epsilon, delta, seed)
        spend_release(ledger, release)
        releases.append(release)
    # The Original column: the paper's "Ori" epochs and rates (Table 4).
    steps = converted_steps(method, dataset, n, p_public, original)
    epochs = hyper["ori_epochs" if original else "epochs"]
    if method == "sgda-mlp":
        clip = CLIP_OVERRIDES.get((method, dataset), CLIP)
        if not original:  # the Original column keeps the paper's "Ori" rates as they are
            steps = tuple(MLP_STEP_MULT * step for step in steps)
        clip_v = MLP_CLIP_V
    else:
        # Linear models: clip at half the public row-norm bound, keeping clip * step
        # (the largest move of one step) at its value for clip 1. Unchanged on ijcnn1
        # (data_norm 2); on images (rows ~28) a clip of 1 clipped every gradient and
        # biased the Original cells by ~1 point (validation, docs/benchmarks.md).
        clip = LINEAR_CLIP_FRACTION * DATA_NORM[dataset]
        steps = tuple(step / clip for step in steps)
        # Private cells: the dual gradient -2 s y h is small next to the primal one, and
        # a dual clip of a tenth of the primal leaves nearly all of a step's privacy
        # loss to the primal block (validation, docs/benchmarks.md). Without noise there
        # is nothing to gain from clipping it harder.
        clip_v = None if original else clip * LINEAR_DUAL_CLIP_RATIO
    solver = make_solver(method, steps, epochs, clip, clip_v, dataset)
    if original and solver is not None:
        solver.set_params(sampler=original_sampler(method))
    if original and method == "sgda-linear":
        # Without noise, clipping buys nothing and biases the steps (the paper did not
        # clip): the clips are lifted to the objective's certified Lipschitz bounds, the
        # steps stay (validation, docs/benchmarks.md). Not for NSEG, whose extragradient
        # steps diverge unclipped at this step size (images: AUC 63-72), nor the MLP,
        # which has no such bound.
        solver.set_params(clip_w=None, clip_v=None)
    radius = hyper["radius"]
    if method == "sgda-mlp" and MLP_RADIUS is not None:
        radius = MLP_RADIUS
    if solver is None:
        return None
    model = DPAUCMaximizer(
        epsilon=epsilon,
        delta=1e-6 if delta is None else delta,
        data_norm=DATA_NORM[dataset],
        pos_ratio=p_emp if original else DECLARED_POS_RATIO.get(dataset),
        pos_ratio_budget=POS_RATIO_BUDGET,
        radius=radius,
        alpha=0.0 if method == "sgda-mlp" else LINEAR_ALPHA,
        scorer="mlp" if method == "sgda-mlp" else "linear",
        hidden_units=256,
        solver=solver,
        # The benchmark splits' sizes are published: declared as the public size every
        # neighbour is planned on (nothing spent; the plan does not read len(X)).
        n_samples_budget=len(X_train),
        random_state=seed,
        # The cell's (epsilon, delta) is the total of the releases and the fit, whose
        # training is calibrated on their composition (one PLD).
        composition=composition(method, dataset),
        composed_with=releases or None,
        accountant=ledger,
    )
    energy = adapt_to_noise(method, solver, model, n, X_train.shape[1],
                             PrivacyBudget(epsilon, model.delta))
    start = time.perf_counter()
    model.fit(X_train, y_train)
    seconds = time.perf_counter() - start
    auc = 100.0 * roc_auc_score(y_test, model.decision_function(X_test))
    cal = model.calibration_
    return {
        "method": method, "dataset": dataset, "epsilon": epsilon, "delta": delta,
        "seed": seed,
        "fit_budget": [model.privacy_spent_.epsilon, model.privacy_spent_.delta],
        "auc": auc, "seconds": seconds, "n_iter": int(model.n_iter_),
        "z": float(cal.noise_multiplier),
        "z_blocks": [float(z) for z in (cal.block_noise_multipliers or (0.0, 0.0))],
        "step_size": [solver.get_params()["step_size"],
                      solver.get_params().get("dual_step_size", solver.get_params()["step_size"])],
        "clip": solver.get_params()["clip_w"], "noise_energy": energy,
        "config": config_tag(method, epsilon, dataset, delta),
    }


def code_version():
    """The commit of the checkout that runs this script (``-dirty`` if modified), or None."""
    try:
        out = subprocess.run(["git", "describe", "--always", "--dirty", "--abbrev=12"],
                             cwd=ROOT, capture_output=True, text=True, check=True)
    except (OSError, subprocess.CalledProcessError):
        return None
    return out.stdout.strip() or None


def cells(methods, datasets, epsilons, deltas, original):
    for dataset in datasets:
        for method in methods:
            if original:
                yield method, dataset, math.inf, None
            for delta in deltas:
                for epsilon in epsilons:
                    yield method, dataset, epsilon, delta


def _key(r):
    return (r["method"], r["dataset"], float(r["epsilon"]), r["delta"], int(r["seed"]))


def load_results(path):
    done = {}
    if path.exists():
        for line in path.read_text().splitlines():
            if line.strip():
                r = json.loads(line)
                if r.get("config", "v1") != config_tag(r["method"], float(r["epsilon"]),
                                                      r["dataset"], r["delta"]):
                    continue
                r["epsilon"] = float(r["epsilon"])
                done[_key(r)] = r
    return done


def summarise(results, methods, datasets, epsilons, deltas, original, seeds):
    """Markdown table: ours mean (std) | paper | difference | noise multiplier."""
    lines = ["| dataset | method | delta | epsilon | ours AUC % mean (std) | paper | ours - paper "
             "| z (joint) | z_w / z_v | seeds |",
             "|---|---|---|---|---|---|---|---|---|---|"]
    summary = []
    for method, dataset, epsilon, delta in cells(methods, datasets, epsilons, deltas, original):
        rows = [results.get((method, dataset, float(epsilon), delta, s)) for s in seeds]
        rows = [r for r in rows if r is not None]
        paper = paper_auc(method, dataset, epsilon, delta)
        eps_txt = "Original" if math.isinf(epsilon) else f"{epsilon:g}"
        delta_txt = "-" if delta is None else f"{delta:g}"
        if method == "nseg" and NoisyExtragradient is None:
            lines.append(f"| {dataset} | {method} | {delta_txt} | {eps_txt} | n/a (NSEG not "
                         f"available) | {paper:.3f} | | | | 0 |")
            continue
        if not rows:
            lines.append(f"| {dataset} | {method} | {delta_txt} | {eps_txt} | not run | "
                         f"{paper:.3f} | | | | 0 |")
            continue
        aucs = np.array([r["auc"] for r in rows])
        mean, std = aucs.mean(), aucs.std()
        z, zb = rows[0]["z"], rows[0]["z_blocks"]
        lines.append(f"| {dataset} | {method} | {delta_txt} | {eps_txt} | {mean:.3f} ({std:.3f}) | "
                     f"{paper:.3f} | {mean - paper:+.3f} | {z:.3f} | {zb[0]:.3f} / {zb[1]:.3f} "
                     f"| {len(rows)} |")
        summary.append(dict(method=method, dataset=dataset, epsilon=epsilon, delta=delta,
                            mean=mean, std=std, paper=paper))
    return "\n".join(lines), summary


def shortfalls(summary):
    """Markdown table of the private cells below the paper: the smallest epsilon (same
    method, data set and delta, among the cells run) at which our mean reaches the
    paper's number for that cell, and both sides' loss from epsilon = 10 to the cell.

    A certified method pays for small epsilon with noise; a paper whose AUC barely moves
    from epsilon = 10 to 0.1 added far less noise than a certified calibration asks for.
    """
    by_cell = {(s["method"], s["dataset"], s["delta"], s["epsilon"]): s for s in summary}
    lines = ["| dataset | method | delta | epsilon | ours - paper | ours reaches the paper's "
             "number at epsilon | paper's loss from epsilon = 10 | ours |",
             "|---|---|---|---|---|---|---|---|"]
    for s in summary:
        if math.isinf(s["epsilon"]) or s["mean"] >= s["paper"]:
            continue
        method, dataset, delta = s["method"], s["dataset"], s["delta"]
        reach = [e for (m, d, dl, e), t in by_cell.items()
                 if (m, d, dl) == (method, dataset, delta) and math.isfinite(e)
                 and t["mean"] >= s["paper"]]
        top = by_cell.get((method, dataset, delta, 10.0))
        paper_loss = paper_auc(method, dataset, 10.0, delta) - s["paper"]
        ours_loss = f"{top['mean'] - s['mean']:.2f}" if top else "not run"
        reach_txt = f"{min(reach):g}" if reach else "none run"
        lines.append(f"| {dataset} | {method} | {delta:g} | {s['epsilon']:g} | "
                     f"{s['mean'] - s['paper']:+.3f} | {reach_txt} | {paper_loss:.2f} | "
                     f"{ours_loss} |")
    return "\n".join(lines)


def plot(summary, path):
    """AUC vs epsilon, ours vs paper, one panel per dataset (delta = 1e-6)."""
    try:
        import matplotlib

        matplotlib.use("Agg")
        import matplotlib.pyplot as plt
    except ImportError:
        print("matplotlib is not installed: skipping the plot.")
        return None
    datasets = [d for d in DATASETS if any(s["dataset"] == d for s in summary)]
    fig, axes = plt.subplots(1, len(datasets), figsize=(4.5 * len(datasets), 3.6), squeeze=False)
    for ax, dataset in zip(axes[0], datasets):
        for i, method in enumerate(METHODS):
            pts = sorted((s["epsilon"], s["mean"], s["std"], s["paper"]) for s in summary
                         if s["dataset"] == dataset and s["method"] == method
                         and s["delta"] == 1e-6)
            if not pts:
                continue
            e, m, sd, pp = map(np.array, zip(*pts))
            color = f"C{i}"
            ax.errorbar(e, m, yerr=sd, marker="o", color=color, label=f"{method} (ours)")
            ax.plot(e, pp, ls="--", marker="x", color=color, label=f"{method} (paper)")
        ax.set_xscale("log")
        ax.set_xlabel("epsilon (delta = 1e-6)")
        ax.set_ylabel("test AUC (%)")
        ax.set_title(dataset)
        ax.legend(fontsize=7)
    fig.tight_layout()
    path.parent.mkdir(parents=True, exist_ok=True)
    fig.savefig(path, dpi=120)
    print(f"plot written to {path}")
    return path


def main(argv=None):
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--data-dir", default=os.environ.get("SKDPMINIMAX_DATA",
                                                              str(ROOT.parent / "shared" / "data")))
    parser.add_argument("--quick", action="store_true",
                        help="delta=1e-6, eps in {0.1, 1, 10} and Original, 2 seeds, linear "
                             "methods (the MLP only with --datasets ijcnn1): about a minute")
    parser.add_argument("--methods", nargs="+", choices=METHODS, default=list(METHODS))
    parser.add_argument("--datasets", nargs="+", choices=DATASETS, default=list(DATASETS))
    parser.add_argument("--epsilons", nargs="+", type=float, default=list(EPSILONS))
    parser.add_argument("--deltas", nargs="+", type=float, default=list(DELTAS))
    parser.add_argument("--no-original", action="store_true")
    parser.add_argument("--original-only", action="store_true",
                        help="only the non-private Original column")
    parser.add_argument("--seeds", type=int, default=5)
    parser.add_argument("--results", default=str(ROOT / "benchmarks" / "results_yang2022.jsonl"))
    parser.add_argument("--positive-classes", nargs=5, type=int, default=list(POSITIVE_CLASSES),
                        help="positive group of the MNIST-type 5-vs-5 tasks (default 0 1 2 3 4)")
    parser.add_argument("--markdown", default=None, help="write the table to this file")
    parser.add_argument("--plot", default=None, help="write the AUC-vs-epsilon plot here")
    parser.add_argument("--report-only", action="store_true",
                        help="run nothing: table and plot from the logged cells only")
    args = parser.parse_args(argv)

    if args.quick:
        args.methods = [m for m in args.methods if m != "sgda-mlp" or args.datasets == ["ijcnn1"]]
        args.epsilons = [0.1, 1.0, 10.0]
        args.deltas = [1e-6]
        args.seeds = min(args.seeds, 2)
    global CONFIG_TAG
    if tuple(args.positive_classes) != POSITIVE_CLASSES:
        CONFIG_TAG += "-pos" + "".join(map(str, sorted(args.positive_classes)))
    original = not args.no_original
    if args.original_only:
        args.epsilons, original = [], True
    seeds = list(range(args.seeds))
    results_path = Path(args.results)
    results = load_results(results_path)
    data_cache = {}
    version = None if args.report_only else code_version()
    start = time.perf_counter()
    for method, dataset, epsilon, delta in cells(args.methods, args.datasets, args.epsilons,
                                                  args.deltas, original):
        if method == "nseg" and NoisyExtragradient is None:
            continue
        for seed in seeds:
            key = (method, dataset, float(epsilon), delta, seed)
            if key in results or args.report_only:
                continue
            if dataset not in data_cache:
                data_cache[dataset] = load(dataset, args.data_dir, args.positive_classes)
            r = run_cell(method, dataset, epsilon, delta, seed, data_cache[dataset])
            r["code"] = version
            results[key] = r
            with results_path.open("a") as f:
                f.write(json.dumps(r) + "\n")
            print(f"{method:12s} {dataset:14s} eps={epsilon:<5g} delta={delta} seed={seed} "
                  f"AUC={r['auc']:.3f} z={r['z']:.3f} ({r['seconds']:.1f}s)", flush=True)
    table, summary = summarise(results, args.methods, args.datasets, args.epsilons, args.deltas,
                               original, seeds)
    below = shortfalls(summary)
    print(table)
    print("\nCells below the paper:\n" + below)
    print(f"total wall time of new runs: {time.perf_counter() - start:.0f}s")
    if args.markdown:
        Path(args.markdown).write_text(table + "\n\nCells below the paper:\n\n" + below + "\n")
    if args.plot:
        plot(summary, Path(args.plot))


if __name__ == "__main__":
    main()
