"""
====================================================================
Worst-group accuracy of a private robust classifier against epsilon
====================================================================

:class:`~skdpminimax.DPRobustClassifier` minimises the risk of the *worst* group
(group distributionally robust optimisation) under differential privacy. Here the
groups are constructed from a feature of scikit-learn's bundled breast-cancer data:
tumours whose ``mean texture`` is in the top quarter form the minority group
("high texture", about 25% of the rows, with a different class balance).

For each ``epsilon`` we report the test accuracy over everyone and the accuracy of
the worst group, averaged over a few seeds; the dashed lines are a non-private
:class:`~sklearn.linear_model.LogisticRegression`.

Public: the row-norm bound ``data_norm`` (rows are clipped to it), the radius and
the solver's settings. The group frequencies are *not* given, so each fit releases
the two group counts with 5% of its budget (``group_ratios_budget``; see
:doc:`/privacy_model`). The standardisation uses the training split's statistics: a
non-private preprocessing step, acceptable in a demo, not in a deployment.

Runs in a few seconds.
"""

import numpy as np
from diffprivlib import BudgetAccountant
from sklearn.datasets import load_breast_cancer
from sklearn.linear_model import LogisticRegression
from sklearn.model_selection import train_test_split
from sklearn.preprocessing import StandardScaler

from skdpminimax import DPRobustClassifier
from skdpminimax.metrics import worst_group_accuracy
from skdpminimax.solvers import NoisySGDA

data = load_breast_cancer()
X, y = data.data, data.target
texture = X[:, list(data.feature_names).index("mean texture")]
groups = np.where(texture > np.quantile(texture, 0.75), "high texture", "low texture")
X_train, X_test, y_train, y_test, g_train, g_test = train_test_split(
    X, y, groups, test_size=0.5, random_state=0, stratify=y)
scaler = StandardScaler().fit(X_train)
X_train, X_test = scaler.transform(X_train), scaler.transform(X_test)


def scores(model):
    pred = model.predict(X_test)
    return np.mean(pred == y_test), worst_group_accuracy(y_test, pred, sensitive_features=g_test)


# The group estimators' default solver settings (dual clipped per group, 30% of the
# noise budget on the dual, tail averaging) with a larger step.
solver = NoisySGDA(batch_size=32, n_epochs=20, step_size=1.0, clip_v="auto",
                   noise_allocation=0.3, average="tail")
# The experiment's own ledger: its no-noise fits (epsilon = inf) are not private and
# charge (inf, delta), which would leave diffprivlib's default ledger at inf for good.
experiment_ledger = BudgetAccountant()
epsilons = [0.3, 1.0, 3.0, 10.0]
seeds = range(3)


def private_scores(epsilon):
    runs = [scores(DPRobustClassifier(epsilon=epsilon, delta=1e-5, data_norm=8.0,
                                      solver=solver, random_state=seed,
                                      accountant=experiment_ledger)
                   .fit(X_train, y_train, sensitive_features=g_train))
            for seed in seeds]
    return np.mean(runs, axis=0)


private = np.array([private_scores(eps) for eps in epsilons])
no_noise = private_scores(np.inf)
baseline = scores(LogisticRegression(max_iter=1000).fit(X_train, y_train))

for eps, (avg, worst) in zip(epsilons, private):
    print(f"epsilon={eps:<5g} accuracy {avg:.3f}  worst-group accuracy {worst:.3f}")
print(f"epsilon=inf   accuracy {no_noise[0]:.3f}  worst-group accuracy {no_noise[1]:.3f}")
print(f"LogisticRegression (not private): accuracy {baseline[0]:.3f}  "
      f"worst-group accuracy {baseline[1]:.3f}")

try:
    import matplotlib.pyplot as plt
except ImportError:
    print("matplotlib is not installed: no plot.")
else:
    fig, ax = plt.subplots(figsize=(5, 3.5))
    for i, label in enumerate(["average", "worst group"]):
        ax.plot(epsilons, private[:, i], marker="o", color=f"C{i}",
                label=f"DPRobustClassifier, {label}")
        ax.axhline(baseline[i], ls="--", lw=1, color=f"C{i}",
                   label=f"LogisticRegression, {label}")
    ax.set_xscale("log")
    ax.set_xlabel("epsilon (delta = 1e-5)")
    ax.set_ylabel("test accuracy")
    ax.set_title("Breast cancer, groups by mean texture")
    ax.legend(fontsize="small", loc="lower right")
    fig.tight_layout()
    plt.show()
