"""
Checking the privacy guarantee with a canary audit
==================================================

Train DPAUCMaximizer many times with and without a worst-case canary record and
try to tell the two apart. The Clopper-Pearson lower bound on epsilon must stay
below the claimed epsilon; a non-private model and a broken solver (no noise)
are exposed. The estimators themselves refuse a solver whose run, through the
library's noisy gradient oracle, departs from the calibration it returns; the broken
solver here computes its step without that oracle, which only an audit of the
released models can see. Runs in a few seconds.
"""

import numpy as np
from sklearn.linear_model import LogisticRegression

from skdpminimax import DPAUCMaximizer
from skdpminimax.audit import audit_estimator
from skdpminimax.solvers import NoisySGDA, SolverResult

EPSILON, DELTA = 2.0, 1e-2
# One full-batch step released as is: the fit is a single Gaussian mechanism, so
# the attack is as strong as the accountant assumes.
SOLVER = dict(batch_size=None, n_iter=1, average="last", step_size=1.0, noise_allocation=1e-3)


class NoNoiseSGDA(NoisySGDA):
    """A broken solver, for illustration only: claims DP-GDA's calibration, but takes
    its one full-batch step from clipped gradients it sums itself, and forgets the
    noise. No gradient oracle is built, so the estimators' run check has nothing to
    compare with the record."""

    def solve(self, objective, data, budget, rng, *, init=None):
        record = self.calibrate(objective, data.planning_size, budget)
        w, v = objective.init_params(rng)
        data = objective.prepare(data)
        sum_w, sum_v = objective.clipped_grad_sums(w, v, data, self.clip_w, self.clip_v)
        reg_w, reg_v = objective.reg_grad(w, v)
        w = objective.primal_set.project(w - (sum_w / data.n_samples + reg_w))
        v = objective.dual_set.project(v + (sum_v / data.n_samples + reg_v))
        return SolverResult(w=w, v=v, n_iter=1, calibration=record)


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
