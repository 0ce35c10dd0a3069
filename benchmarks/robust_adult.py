"""Worst-group and average test accuracy on Adult vs epsilon.

DPRobustClassifier (private group DRO, groups = race x sex or race, group sizes
released privately) next to non-private LogisticRegression and diffprivlib's
LogisticRegression at the same epsilon.

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
from diffprivlib.accountant import BudgetAccountant  # noqa: E402
from sklearn.linear_model import LogisticRegression  # noqa: E402

from skdpminimax import DPRobustClassifier  # noqa: E402
from skdpminimax.metrics_group import worst_group_accuracy  # noqa: E402
from skdpminimax.solvers import NoisySGDA  # noqa: E402

# Solver settings (fixed before the runs; clip_v is large because an example's dual
# gradient is loss / pi_g: clipping it at 1 would under-count small groups' risks).
SOLVER = dict(batch_size=2048, n_epochs=30, step_size=2.0, dual_step_size=0.05, clip_w=3.0,
              clip_v=10.0)


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

    def evaluate(model):
        pred = model.predict(X_test)
        return worst_group_accuracy(y_test, pred, sensitive_features=g_test), np.mean(pred == y_test)

    lr = evaluate(LogisticRegression(max_iter=2000).fit(X, y))
    print(f"{'LogisticRegression (non-private)':<36} worst {lr[0]:.4f}  avg {lr[1]:.4f}")
    print(f"{'epsilon':>7} | {'model':<28} | {'worst-group acc':>17} | {'avg acc':>17} | time/fit")
    accountant = BudgetAccountant()  # a ledger for the benchmark only
    for epsilon in epsilons:
        for name in ("DPRobustClassifier", "diffprivlib LogisticRegression"):
            scores, t0 = [], time.time()
            for seed in seeds:
                if name == "DPRobustClassifier":
                    model = DPRobustClassifier(epsilon=epsilon, data_norm=data_norm, dual_reg=1.0,
                                               alpha=1e-5, solver=NoisySGDA(**SOLVER),
                                               accountant=accountant, random_state=seed)
                    model.fit(X, y, sensitive_features=g)
                else:
                    model = diffprivlib_logistic_regression(
                        epsilon=epsilon, data_norm=data_norm, accountant=accountant,
                        random_state=seed).fit(X, y)
                scores.append(evaluate(model))
            s = np.array(scores)
            per_fit = (time.time() - t0) / len(s)
            print(f"{epsilon:>7} | {name:<28} | {s[:, 0].mean():.4f} +- {s[:, 0].std():.4f} | "
                  f"{s[:, 1].mean():.4f} +- {s[:, 1].std():.4f} | {per_fit:.1f}s")


if __name__ == "__main__":
    main()
