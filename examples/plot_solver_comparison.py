"""
Comparing the private solvers
=============================

Six of the registered solvers fit the same private AUC problem on scikit-learn's bundled
breast-cancer data at ``epsilon = 1``: test ROC AUC (mean over a few seeds) against
the number of per-example gradient evaluations the solver used, its cost. The
numbers feed the "which solver when" table of the solvers page.

Runs in about twenty seconds.
"""

import time

import numpy as np
from diffprivlib import BudgetAccountant
from sklearn.datasets import load_breast_cancer
from sklearn.metrics import roc_auc_score
from sklearn.model_selection import train_test_split
from sklearn.preprocessing import StandardScaler

from skdpminimax import DPAUCMaximizer
from skdpminimax.solvers import (
    NoisyExtragradient,
    NoisyInexactProximalPoint,
    NoisySGDA,
    RecursiveRegularization,
)

X, y = load_breast_cancer(return_X_y=True)
X_train, X_test, y_train, y_test = train_test_split(X, y, test_size=0.3, random_state=0,
                                                    stratify=y)
scaler = StandardScaler().fit(X_train)  # non-private preprocessing: fine for a demo
X_train, X_test = scaler.transform(X_train), scaler.transform(X_test)

solvers = {
    "DP-SGDA": lambda: NoisySGDA(batch_size=32, n_epochs=15, step_size=0.1),
    "DP-GDA": lambda: NoisySGDA(batch_size=None, n_iter=100, step_size=0.1),
    "NSEG": lambda: NoisyExtragradient(),
    "NSEG multi-pass": lambda: NoisyExtragradient(mode="multi_pass"),
    "NISPP": lambda: NoisyInexactProximalPoint(),
    "Recursive (SGDA)": lambda: RecursiveRegularization(),
}


class CountingSolver:
    """Any object with ``calibrate`` and ``solve`` is a solver: this one records the
    cost of the wrapped solver (gradient evaluations are a non-private diagnostic,
    ``result.diagnostics``: the fitted model keeps nothing of it)."""

    def __init__(self, solver, log):
        self.solver, self.log = solver, log

    def calibrate(self, objective, n_samples, budget):
        return self.solver.calibrate(objective, n_samples, budget)

    def solve(self, objective, data, budget, rng, *, init=None):
        result = self.solver.solve(objective, data, budget, rng, init=init)
        self.log.append(result.diagnostics["n_grad_evals"])
        return result


seeds = range(2)
rows = []
for name, make in solvers.items():
    aucs, evals, start = [], [], time.perf_counter()
    for seed in seeds:
        solver = CountingSolver(make(), evals)
        # Each fit is its own experiment, on its own ledger: the solvers differ in their
        # neighbouring relation (Poisson DP-SGDA is add/remove-one, the others
        # replace-one), and one ledger summing them would hold under neither (it warns).
        model = DPAUCMaximizer(epsilon=1.0, delta=1e-5, data_norm=8.0,
                               solver=solver, random_state=seed,
                               accountant=BudgetAccountant())
        model.fit(X_train, y_train)
        aucs.append(roc_auc_score(y_test, model.decision_function(X_test)))
    seconds = (time.perf_counter() - start) / len(seeds)
    rows.append((name, np.mean(aucs), np.std(aucs), np.mean(evals), seconds))
    print(f"{name:18s} AUC {np.mean(aucs):.3f} ({np.std(aucs):.3f})  "
          f"gradient evaluations {np.mean(evals):9.0f}  {seconds:.2f} s per fit")

import matplotlib.pyplot as plt  # noqa: E402

fig, ax = plt.subplots(figsize=(5.5, 3.5))
for i, (name, auc, std, n_evals, _) in enumerate(rows):
    ax.errorbar(n_evals, auc, yerr=std, marker="o", color=f"C{i}", label=name, capsize=3)
ax.set_xscale("log")
ax.set_xlabel("per-example gradient evaluations")
ax.set_ylabel("test ROC AUC")
ax.set_title("Solvers at epsilon = 1 (breast cancer)")
ax.legend(fontsize=7)
fig.tight_layout()
plt.show()
