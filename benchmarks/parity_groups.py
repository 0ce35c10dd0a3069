"""Demographic parity with many groups: the intercept and the fit of
``DPGroupFairRegressor(constraint="demographic_parity")`` with its defaults.

Data that ship with scikit-learn: diabetes (442 rows, standardised features, target
bounds (25, 346) public) with 2, 10 or 20 groups of equal size cut from the first
feature (age) at its quantiles, and ``make_regression`` (3,000 rows) with 3 groups
from two features. Prints, per task, epsilon and tolerance, the mean over seeds of the
training R^2, the mean prediction against the mean target (an intercept that drifts
shows here) and the largest gap ``max_a |E[h | a] - E[h]|``. ``--ratios private
public`` adds rows with the training frequencies given as public ``group_ratios``.

    python benchmarks/parity_groups.py --seeds 3
    python benchmarks/parity_groups.py --seeds 5 --epsilons 1 10 --ratios private public
"""

import argparse
import math
import warnings

import numpy as np
from diffprivlib import BudgetAccountant
from sklearn.datasets import load_diabetes, make_regression
from sklearn.metrics import r2_score
from sklearn.preprocessing import StandardScaler

from skdpminimax import DPGroupFairRegressor


def _tasks():
    X, y = load_diabetes(return_X_y=True)
    X = StandardScaler().fit_transform(X)
    for k in (2, 10, 20):
        groups = np.digitize(X[:, 0], np.quantile(X[:, 0], np.linspace(0, 1, k + 1)[1:-1]))
        yield f"diabetes, {k} age groups", X, y, groups, (25.0, 346.0), 5.0
    X, y = make_regression(n_samples=3000, n_features=10, noise=10.0, random_state=0)
    X = StandardScaler().fit_transform(X)
    groups = (X[:, 0] > 0).astype(int) + (X[:, 1] > 0.5).astype(int)
    low, high = float(np.floor(y.min())), float(np.ceil(y.max()))  # treated as public
    yield "make_regression, 3 groups", X, y, groups, (low, high), 6.0


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--seeds", type=int, default=3)
    parser.add_argument("--epsilons", type=float, nargs="+", default=[1.0, 10.0, math.inf])
    parser.add_argument("--ratios", nargs="+", default=["private"],
                        choices=["private", "public"],
                        help="group ratios released privately (the default, 5%% of epsilon) "
                             "or given as public (the training frequencies)")
    args = parser.parse_args()
    warnings.simplefilter("ignore")
    print("task | epsilon | tolerance | ratios | R^2 | mean prediction (target) | max gap")
    for name, X, y, groups, bounds, data_norm in _tasks():
        k = groups.max() + 1
        frequencies = np.bincount(groups, minlength=k) / len(groups)
        for epsilon in args.epsilons:
            for share in (0.0002, 0.01):  # of the target's range
                tolerance = share * (bounds[1] - bounds[0])
                for ratios in args.ratios:
                    rows = []
                    for seed in range(args.seeds):
                        est = DPGroupFairRegressor(
                            epsilon=epsilon, data_norm=data_norm, bounds=bounds,
                            tolerance=tolerance, constraint="demographic_parity",
                            group_ratios=frequencies if ratios == "public" else None,
                            random_state=seed, accountant=BudgetAccountant(),
                        ).fit(X, y, sensitive_features=groups)
                        pred = est.predict(X)
                        means = np.array([pred[groups == g].mean() for g in range(k)])
                        rows.append((r2_score(y, pred), pred.mean(),
                                     np.abs(means - pred.mean()).max()))
                    r2, mean, gap = np.mean(rows, axis=0)
                    print(f"{name} | {epsilon:g} | {tolerance:.3g} | {ratios} | {r2:.3f} | "
                          f"{mean:.1f} ({y.mean():.1f}) | {gap:.2f}", flush=True)


if __name__ == "__main__":
    main()
