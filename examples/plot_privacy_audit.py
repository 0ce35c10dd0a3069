"""
Checking the privacy guarantee with a canary audit
==================================================

Train DPAUCMaximizer many times with and without a worst-case canary record and
try to tell the two apart. The Clopper-Pearson lower bound on epsilon must stay
below the claimed epsilon; a non-private model and a broken solver (no noise)
are exposed. Runs in a few seconds.
"""

import dataclasses

import numpy as np
from sklearn.linear_model import LogisticRegression

from skdpminimax import DPAUCMaximizer
from skdpminimax.audit import audit_estimator
from skdpminimax.solvers import NoisySGDA

EPSILON, DELTA = 2.0, 1e-2
# One full-batch step released as is: the fit is a single Gaussian mechanism, so
# the attack is as strong as the accountant assumes.
SOLVER = dict(batch_size=None, n_iter=1, average="last", step_size=1.0, noise_allocation=1e-3)


class NoNoiseSGDA(NoisySGDA):
    """A broken solver, for illustration only: claims the budget, adds no noise."""

    def calibrate(self, objective, n_samples, budget):
        cal = super().calibrate(objective, n_samples, budget)
        return dataclasses.replace(cal, block_noise_multipliers=(0.0, 0.0))


def model(solver):
    return DPAUCMaximizer(epsilon=EPSILON, delta=DELTA, data_norm=2.0, pos_ratio=0.5,
                          solver=solver)


results = {
    "DP-GDA (correct)": audit_estimator(model(NoisySGDA(**SOLVER)), epsilon=EPSILON,
                                        delta=DELTA, n_runs=1000, random_state=0,
                                        selection_fraction=0.25),
    "DP-GDA without noise (broken)": audit_estimator(model(NoNoiseSGDA(**SOLVER)),
                                                     epsilon=EPSILON, delta=DELTA,
                                                     n_runs=100, random_state=0),
    "LogisticRegression (not private)": audit_estimator(LogisticRegression(C=1e4),
                                                        epsilon=EPSILON, delta=DELTA,
                                                        n_runs=60, random_state=0),
}
for name, result in results.items():
    print(f"== {name}\n{result.summary()}\n")

try:
    import matplotlib.pyplot as plt
except ImportError:  # the example needs no plotting library
    plt = None
if plt is not None:
    res = results["DP-GDA (correct)"]
    bins = np.linspace(min(res.scores_in.min(), res.scores_out.min()),
                       max(res.scores_in.max(), res.scores_out.max()), 60)
    plt.hist(res.scores_out, bins, alpha=0.5, label="trained without the canary")
    plt.hist(res.scores_in, bins, alpha=0.5, label="trained with the canary")
    plt.axvline(res.threshold, color="k", ls="--", label="chosen threshold")
    plt.xlabel("attack statistic")
    plt.legend()
    plt.title(f"epsilon >= {res.epsilon_lower_bound:.2f} (claimed {EPSILON})")
    plt.show()
