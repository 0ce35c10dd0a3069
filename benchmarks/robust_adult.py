"""Worst-group and average test accuracy on Adult vs epsilon.

DPRobustClassifier (private group DRO, groups = race x sex or race, group sizes
released privately) next to non-private LogisticRegression and diffprivlib's
LogisticRegression at the same epsilon. The DRO's dual_reg / dual_center / alpha
are chosen at epsilon=1 on a validation split carved from the training data
(non-private tuning, see _tuning.py); the test split is used only for the table.

    SKDPMINIMAX_DATA=/path/to/data python benchmarks/robust_adult.py [--quick] [--groups race]
"""

import argparse
import sys
import time
import warnings
from pathlib import Path

import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))
sys.path.insert(0, str(Path(__file__).resolve().parent))

from _data import data_dir, diffprivlib_logistic_regression, load_adult  # noqa: E402
from _tuning import grid, select, validation_split  # noqa: E402
from diffprivlib.accountant import BudgetAccountant  # noqa: E402
from sklearn.linear_model import LogisticRegression  # noqa: E402

from skdpminimax import DPRobustClassifier  # noqa: E402
from skdpminimax.metrics import group_accuracy  # noqa: E402
from skdpminimax.solvers import NoisySGDA  # noqa: E402

# Solver settings (picked on the validation split): clip_v="auto" clips an example's
# dual gradient loss / pi_g at log(2) / sqrt(pi_min); the dual gets 30% of the noise.
SOLVER = dict(batch_size=4096, n_epochs=60, step_size=4.0, dual_step_size=0.05, clip_w=3.0,
              clip_v="auto", noise_allocation=0.3, average="tail")
GRID = grid(dual_reg=[0.3, 1.0, 3.0], dual_center=["uniform", "ratios"], alpha=[1e-5, 1e-3])


def worst(y_true, pred, groups):
    acc = group_accuracy(y_true, pred, sensitive_features=groups)
    name = min(acc, key=acc.get)
    return acc[name], name


def main():
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--data-dir")
    parser.add_argument("--quick", action="store_true", help="epsilon in {1, 8}, 2 seeds")
    parser.add_argument("--groups", choices=["race_sex", "race"], default="race_sex")
    args = parser.parse_args()
    warnings.simplefilter("ignore")

    X, y, g, X_test, y_test, g_test, data_norm = load_adult(data_dir(args.data_dir) / "adult")
    if args.groups == "race":
        g, g_test = (np.array([s.split("|")[0] for s in a]) for a in (g, g_test))
    epsilons = [1.0, 8.0] if args.quick else [0.5, 1.0, 2.0, 8.0]
    seeds = range(2 if args.quick else 5)
    print(f"Adult: n_train={len(y)}, n_test={len(y_test)}, groups={args.groups} "
          f"({len(np.unique(g))}), data_norm={data_norm:.3f}")

    def dro(epsilon, params, seed, accountant=None):
        return DPRobustClassifier(epsilon=epsilon, data_norm=data_norm, **params,
                                  solver=NoisySGDA(**SOLVER), accountant=accountant,
                                  random_state=seed,
                                  n_samples_budget="public")  # Adult's split sizes: public

    # ---- non-private tuning on a validation split of the training data ----------
    X_fit, X_val, y_fit, y_val, g_fit, g_val = validation_split(X, y, g)
    lr_val = worst(y_val, LogisticRegression(max_iter=2000).fit(X_fit, y_fit).predict(X_val),
                   g_val)
    print(f"validation ({len(y_val)} rows): LogisticRegression worst-group acc "
          f"{lr_val[0]:.4f} ({lr_val[1]})")

    def val_score(params, seed):
        model = dro(1.0, params, seed).fit(X_fit, y_fit, sensitive_features=g_fit)
        return worst(y_val, model.predict(X_val), g_val)[0]

    best = select(GRID, val_score, better=max)
    print(f"selected at epsilon=1 on validation: {best}")

    def evaluate(model):
        pred = model.predict(X_test)
        acc, name = worst(y_test, pred, g_test)
        return acc, np.mean(pred == y_test), name

    lr = evaluate(LogisticRegression(max_iter=2000).fit(X, y))
    print(f"{'LogisticRegression (non-private)':<36} worst {lr[0]:.4f} ({lr[2]})  avg {lr[1]:.4f}")
    free = evaluate(dro(np.inf, best, 0).fit(X, y, sensitive_features=g))
    print(f"{'DPRobustClassifier, epsilon=inf':<36} worst {free[0]:.4f} ({free[2]})  "
          f"avg {free[1]:.4f}")
    print(f"{'epsilon':>7} | {'model':<30} | {'worst-group acc':>17} | {'avg acc':>17} | "
          "worst group (count) | time/fit")
    accountant = BudgetAccountant()  # a ledger for the benchmark only
    for epsilon in epsilons:
        for name in ("DPRobustClassifier", "diffprivlib LogisticRegression"):
            scores, names, t0 = [], [], time.time()
            for seed in seeds:
                if name == "DPRobustClassifier":
                    model = dro(epsilon, best, seed, accountant)
                    model.fit(X, y, sensitive_features=g)
                else:
                    model = diffprivlib_logistic_regression(
                        epsilon=epsilon, data_norm=data_norm, accountant=accountant,
                        random_state=seed).fit(X, y)
                acc, avg, group = evaluate(model)
                scores.append((acc, avg))
                names.append(group)
            s = np.array(scores)
            per_fit = (time.time() - t0) / len(s)
            common = max(set(names), key=names.count)
            print(f"{epsilon:>7} | {name:<30} | {s[:, 0].mean():.4f} +- {s[:, 0].std():.4f} | "
                  f"{s[:, 1].mean():.4f} +- {s[:, 1].std():.4f} | {common} "
                  f"({names.count(common)}/{len(names)}) | {per_fit:.1f}s")


if __name__ == "__main__":
    main()
