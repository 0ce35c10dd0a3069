"""
=================================================================
Private group-fair regression: worst-group error and parity gap
=================================================================

:class:`~skdpminimax.DPGroupFairRegressor` fits a linear model under differential
privacy with one of two group criteria:

* ``constraint="minimax_loss"``: minimise the mean squared error of the worst group;
* ``constraint="demographic_parity"``: minimise the overall squared error subject to
  ``|E[h | g] - E[h]| <= tolerance`` for every group (through its Lagrangian).

On scikit-learn's bundled diabetes data, with ``sex`` as the group (and removed from
the features), we plot the worst-group test MSE and the demographic-parity gap
``max_g |E[h | g] - E[h]|`` of the predictions as ``epsilon`` grows, averaged over a
few seeds; dashed: a non-private :class:`~sklearn.linear_model.LinearRegression`.

Public: the target range ``bounds`` (targets are clipped to it: the disease-progression
score is documented to lie in 25..346), ``data_norm``, the radius and the solver's
settings. The group frequencies are released privately with 5% of each budget. The
standardisation uses the training split's statistics (not private; a demo shortcut).

Runs in a few seconds.
"""

import numpy as np
from diffprivlib import BudgetAccountant
from sklearn.datasets import load_diabetes
from sklearn.linear_model import LinearRegression
from sklearn.model_selection import train_test_split
from sklearn.preprocessing import StandardScaler

from skdpminimax import DPGroupFairRegressor
from skdpminimax.metrics import demographic_parity_gap, worst_group_loss
from skdpminimax.solvers import NoisySGDA

X, y = load_diabetes(return_X_y=True)
sex = np.where(X[:, 1] > 0, "sex 2", "sex 1")  # the column is a centred 0/1 code
X = np.delete(X, 1, axis=1)
X_train, X_test, y_train, y_test, g_train, g_test = train_test_split(
    X, y, sex, test_size=0.3, random_state=0)
scaler = StandardScaler().fit(X_train)
X_train, X_test = scaler.transform(X_train), scaler.transform(X_test)


def scores(model):
    pred = model.predict(X_test)
    return (worst_group_loss(y_test, pred, sensitive_features=g_test),
            demographic_parity_gap(pred, sensitive_features=g_test, reference="overall"))


solver = NoisySGDA(batch_size=64, n_epochs=20, step_size=0.2, clip_v="auto",
                   noise_allocation=0.3, average="tail")
constraints = {"minimax_loss": {}, "demographic_parity": {"tolerance": 2.0}}
# The experiment's own ledger: its no-noise fits (epsilon = inf) are not private and
# charge (inf, delta), which would leave diffprivlib's default ledger at inf for good.
experiment_ledger = BudgetAccountant()
epsilons = [0.5, 1.0, 3.0, 10.0]
seeds = range(3)


def private_scores(epsilon, constraint):
    runs = [scores(DPGroupFairRegressor(epsilon=epsilon, delta=1e-5, constraint=constraint,
                                        bounds=(25.0, 346.0), data_norm=5.0, solver=solver,
                                        random_state=seed, accountant=experiment_ledger,
                                        **constraints[constraint])
                   .fit(X_train, y_train, sensitive_features=g_train))
            for seed in seeds]
    return np.mean(runs, axis=0)


curves = {c: np.array([private_scores(eps, c) for eps in epsilons]) for c in constraints}
baseline = scores(LinearRegression().fit(X_train, y_train))
for c, values in curves.items():
    for eps, (mse, gap) in zip(epsilons, values):
        print(f"{c:<18} epsilon={eps:<4g} worst-group MSE {mse:7.0f}  parity gap {gap:5.2f}")
    mse, gap = private_scores(np.inf, c)
    print(f"{c:<18} epsilon=inf  worst-group MSE {mse:7.0f}  parity gap {gap:5.2f}")
print(f"LinearRegression (not private): worst-group MSE {baseline[0]:.0f}  "
      f"parity gap {baseline[1]:.2f}")

try:
    import matplotlib.pyplot as plt
except ImportError:
    print("matplotlib is not installed: no plot.")
else:
    fig, axes = plt.subplots(1, 2, figsize=(8, 3.5))
    titles = ["worst-group test MSE", "demographic-parity gap"]
    for k, (ax, title) in enumerate(zip(axes, titles)):
        for i, (c, values) in enumerate(curves.items()):
            ax.plot(epsilons, values[:, k], marker="o", color=f"C{i}", label=c)
        ax.axhline(baseline[k], ls="--", lw=1, color="k", label="LinearRegression")
        ax.set_xscale("log")
        ax.set_xlabel("epsilon (delta = 1e-5)")
        ax.set_title(title)
    axes[0].set_yscale("log")
    axes[1].legend(fontsize="small")
    fig.suptitle("DPGroupFairRegressor on diabetes, groups by sex")
    fig.tight_layout()
    plt.show()
