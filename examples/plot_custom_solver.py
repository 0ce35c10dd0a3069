"""
=================================================================
Bring your own solver: private optimistic gradient descent-ascent
=================================================================

Every estimator takes ``solver=``: any object with ``calibrate`` and ``solve``. Here
we write one the library does not ship, **optimistic gradient descent-ascent**
(OGDA), from the library's parts only. OGDA steps with ``2 g_t - g_{t-1}``, which
damps the rotation of simultaneous steps around a saddle point, at one gradient
release per step (extragradient needs two).

Its privacy is DP-SGDA's: each step releases one clipped, noised batch gradient
through :class:`~skdpminimax.solvers.NoisyGradientOracle`, on a Poisson batch from
:func:`~skdpminimax.privacy.make_sampler`; the optimistic combination is
post-processing of those releases. So the calibration is the one of ``n_steps``
Poisson-subsampled Gaussian releases, certified by the PLD accountant
(:func:`~skdpminimax.privacy.calibrate_noise_multiplier`), under add/remove-one
neighbours with sensitivity ``C`` per block. The joint multiplier is split between the
primal and dual blocks (:func:`~skdpminimax.privacy.split_noise_multiplier`).

After the solve the estimators check the run against the calibration it returns
(the number of noise rows, the sampler, each block's multiplier): the last cell shows
a slip being refused. Runs in about ten seconds on scikit-learn's bundled
breast-cancer data.
"""

import dataclasses
import math

import numpy as np
from diffprivlib import BudgetAccountant
from sklearn.datasets import load_breast_cancer
from sklearn.metrics import roc_auc_score
from sklearn.model_selection import train_test_split
from sklearn.preprocessing import StandardScaler

from skdpminimax import DPAUCMaximizer
from skdpminimax.privacy import calibrate_noise_multiplier, make_sampler, split_noise_multiplier
from skdpminimax.solvers import NoisyGradientOracle, PrivateSolver, SolverResult
from skdpminimax.solvers.oracle import noise_shares, resolve_clip_norms


class PrivateOGDA(PrivateSolver):
    """Private optimistic GDA: ``w <- P(w - eta (2 g_t - g_{t-1}))``, the dual alike
    with ascent, on Poisson batches; releases the uniform average of the iterates."""

    # The budget's preceding releases (the fit's released size) are composed with the
    # steps in one PLD by the calibration below: say so to the estimators.
    composes_preceding = True

    def __init__(self, batch_size=32, n_epochs=10, step_size=0.05, clip=1.0):
        self.batch_size = batch_size
        self.n_epochs = n_epochs
        self.step_size = step_size
        self.clip = clip

    def _plan(self, objective, n_samples):
        # Public quantities only: the size the estimator plans on, the settings and
        # the objective's certified gradient bounds (which cap the clips).
        sampler = make_sampler("poisson", n_samples, min(self.batch_size, n_samples))
        n_steps = max(1, math.ceil(self.n_epochs * n_samples / sampler.batch_size))
        clips = resolve_clip_norms(objective, self.clip, self.clip)
        return sampler, n_steps, clips

    def calibrate(self, objective, n_samples, budget):
        sampler, n_steps, clips = self._plan(objective, n_samples)
        calibration = calibrate_noise_multiplier(
            sampler, n_steps, budget.epsilon, budget.delta, accounting="pld",
            preceding=budget.preceding)
        # Split the joint multiplier so that the blocks' noise energy is smallest.
        shares = noise_shares("dimension", (objective.n_primal, objective.n_dual), clips)
        return dataclasses.replace(calibration, block_noise_multipliers=split_noise_multiplier(
            calibration.noise_multiplier, shares))

    def solve(self, objective, data, budget, rng, *, init=None):
        # Plan on data.planning_size (a public or released size), draw from the rows.
        calibration = self.calibrate(objective, data.planning_size, budget)
        sampler, n_steps, clips = self._plan(objective, data.planning_size)
        sampler = sampler.over_rows(data.n_samples)
        oracle = NoisyGradientOracle(objective, data, sampler,
                                     calibration.block_noise_multipliers, *clips, rng)
        w, v = objective.init_params(rng) if init is None else init
        w, v = objective.primal_set.project(w), objective.dual_set.project(v)
        last_w, last_v = np.zeros_like(w), np.zeros_like(v)
        sum_w, sum_v = np.zeros_like(w), np.zeros_like(v)
        eta = self.step_size
        for idx in sampler.batches(rng, n_steps):
            g_w, g_v = oracle(w, v, idx)  # one release: clipped, noised batch mean
            w = objective.primal_set.project(w - eta * (2 * g_w - last_w))
            v = objective.dual_set.project(v + eta * (2 * g_v - last_v))
            last_w, last_v = g_w, g_v
            sum_w += w
            sum_v += v
        return SolverResult(w=sum_w / n_steps, v=sum_v / n_steps, n_iter=n_steps,
                            calibration=calibration, info={"step_size": eta},
                            diagnostics={"n_grad_evals": oracle.n_grad_evals})


# %%
# Fit it like any solver
# ----------------------
# The class ratio is public here (the data set's description gives 357 benign and 212
# malignant tumours), the rows' norm bound is declared; the number of rows is released
# by the fit. ``PrivateOGDA`` derives from ``PrivateSolver``, a scikit-learn estimator,
# so ``solver__step_size`` is a grid-search parameter.

X, y = load_breast_cancer(return_X_y=True)
PUBLIC_POS_RATIO = 357 / 569  # from the data set's documentation, not from y
X_train, X_test, y_train, y_test = train_test_split(X, y, test_size=0.3, random_state=0,
                                                    stratify=y)
scaler = StandardScaler().fit(X_train)  # non-private preprocessing: fine for a demo
X_train, X_test = scaler.transform(X_train), scaler.transform(X_test)

epsilons = [0.3, 1.0, 3.0, 10.0]
seeds = range(3)
curves = {"PrivateOGDA": lambda: PrivateOGDA(), "sgda (default)": lambda: "sgda"}
results = {}
for name, make in curves.items():
    means = []
    for epsilon in epsilons:
        aucs = []
        for seed in seeds:
            model = DPAUCMaximizer(epsilon=epsilon, delta=1e-5, data_norm=8.0,
                                   pos_ratio=PUBLIC_POS_RATIO, solver=make(),
                                   random_state=seed,
                                   accountant=BudgetAccountant())
            model.fit(X_train, y_train)
            aucs.append(roc_auc_score(y_test, model.decision_function(X_test)))
        means.append(np.mean(aucs))
        print(f"{name:15s} epsilon {epsilon:5.1f}: test AUC {np.mean(aucs):.3f} "
              f"(noise multiplier {model.calibration_.noise_multiplier:.3f}, "
              f"{model.n_iter_} steps)")
    results[name] = means

# %%
# A slip is refused before anything is released
# ----------------------------------------------
# A solver whose run does not match its record (here: twice the steps its calibration
# accounts for) would be released as if it did. The estimators compare the oracle's
# noise rows, sampler and multipliers with the calibration after the solve and refuse
# the run; the budget is spent, nothing is fitted.


class TwiceTheSteps(PrivateOGDA):
    def solve(self, objective, data, budget, rng, *, init=None):
        first = super().solve(objective, data, budget, rng, init=init)
        return super().solve(objective, data, budget, rng, init=(first.w, first.v))


ledger = BudgetAccountant()
model = DPAUCMaximizer(epsilon=1.0, delta=1e-5, data_norm=8.0, pos_ratio=PUBLIC_POS_RATIO,
                       solver=TwiceTheSteps(), random_state=0, accountant=ledger)
try:
    model.fit(X_train, y_train)
except RuntimeError as error:
    print("refused:", str(error).split(". ")[0])
print("spent:", ledger.total(), "fitted:", hasattr(model, "coef_"))

# %%
# The privacy-utility curves
# --------------------------

try:
    import matplotlib.pyplot as plt
except ImportError:  # the example still runs without matplotlib
    plt = None
if plt is not None:
    fig, ax = plt.subplots(figsize=(5.5, 3.5))
    for name, means in results.items():
        ax.plot(epsilons, means, marker="o", label=name)
    ax.set_xscale("log")
    ax.set_xlabel("epsilon (delta = 1e-5)")
    ax.set_ylabel("test ROC AUC (mean of 3 seeds)")
    ax.set_title("A solver written from the library's parts")
    ax.legend()
    fig.tight_layout()
    plt.show()
