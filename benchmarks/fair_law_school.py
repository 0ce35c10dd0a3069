"""Group-fair regression on the law-school data (target ZFYA, groups = race) vs epsilon.

Reports worst-group test MSE, overall MSE and the demographic-parity gap
(max - min group mean prediction) of DPGroupFairRegressor (constraint
"minimax_loss" and "demographic_parity"), next to non-private Ridge, the
non-private minimax solution (epsilon=inf, long full-batch run) and fairlearn's
ExponentiatedGradient(BoundedGroupLoss) when fairlearn is importable.

    SKDPMINIMAX_DATA=/path/to/data python benchmarks/fair_law_school.py [--quick]
"""

import argparse
import sys
import time
import warnings
from pathlib import Path

import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))
sys.path.insert(0, str(Path(__file__).resolve().parent))

from _data import data_dir, load_law_school  # noqa: E402
from diffprivlib.accountant import BudgetAccountant  # noqa: E402
from sklearn.linear_model import Ridge  # noqa: E402
from sklearn.metrics import mean_squared_error  # noqa: E402
from sklearn.model_selection import train_test_split  # noqa: E402

from skdpminimax import DPGroupFairRegressor  # noqa: E402
from skdpminimax.metrics_group import demographic_parity_gap, worst_group_loss  # noqa: E402
from skdpminimax.solvers import NoisySGDA  # noqa: E402

BOUNDS = (-4.0, 4.0)  # public: ZFYA is a z-score
DATA_NORM = float(np.sqrt(3.0))  # public: LSAT/48, UGPA/4.2 and sex in [0, 1]
SOLVER = dict(batch_size=1024, n_epochs=30, step_size=1.0, dual_step_size=0.1, clip_w=2.0,
              clip_v=5.0)


def main():
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--data-dir")
    parser.add_argument("--quick", action="store_true", help="epsilon in {1, 8}, 2 seeds")
    args = parser.parse_args()
    warnings.simplefilter("ignore")

    X, y, race = load_law_school(data_dir(args.data_dir))
    X, X_test, y, y_test, g, g_test = train_test_split(X, y, race, test_size=0.2, random_state=0,
                                                       stratify=race)
    epsilons = [1.0, 8.0] if args.quick else [0.5, 1.0, 2.0, 8.0]
    seeds = range(2 if args.quick else 5)
    print(f"law school: n_train={len(y)}, n_test={len(y_test)}, groups={len(np.unique(g))}")

    def evaluate(pred):
        return (worst_group_loss(y_test, pred, sensitive_features=g_test),
                mean_squared_error(y_test, pred),
                demographic_parity_gap(pred, sensitive_features=g_test))

    def show(name, s, sd=None):
        sd = np.zeros(3) if sd is None else sd
        print(f"{name:<48} | {s[0]:.4f} +- {sd[0]:.4f} | {s[1]:.4f} +- {sd[1]:.4f} | "
              f"{s[2]:.4f} +- {sd[2]:.4f}")

    print(f"{'model':<48} | {'worst-group MSE':>16} | {'overall MSE':>16} | {'DP gap':>16}")
    show("Ridge (non-private)", evaluate(Ridge(alpha=1.0).fit(X, y).predict(X_test)))
    exact = NoisySGDA(batch_size=None, n_iter=3000, step_size=1.0, clip_w=None, clip_v=None,
                      average="last")
    accountant = BudgetAccountant()
    reference = {}
    for constraint in ("minimax_loss", "demographic_parity"):
        model = DPGroupFairRegressor(epsilon=np.inf, constraint=constraint, bounds=BOUNDS,
                                     data_norm=DATA_NORM, dual_reg=0.01, solver=exact,
                                     accountant=accountant, random_state=0)
        reference[constraint] = evaluate(model.fit(X, y, sensitive_features=g).predict(X_test))
        show(f"{constraint}, non-private (epsilon=inf, GDA)", reference[constraint])
    try:
        from fairlearn.reductions import BoundedGroupLoss, ExponentiatedGradient, SquareLoss

        eg = ExponentiatedGradient(Ridge(alpha=1.0), BoundedGroupLoss(
            SquareLoss(*BOUNDS), upper_bound=reference["minimax_loss"][0]))
        eg.fit(X, y, sensitive_features=g)
        show("fairlearn EG(BoundedGroupLoss), non-private", evaluate(eg.predict(X_test, random_state=0)))
    except ImportError:
        print("fairlearn not importable: skipped (pip install skdpminimax[benchmarks])")

    for epsilon in epsilons:
        for constraint in ("minimax_loss", "demographic_parity"):
            scores, t0 = [], time.time()
            for seed in seeds:
                model = DPGroupFairRegressor(epsilon=epsilon, constraint=constraint, bounds=BOUNDS,
                                             data_norm=DATA_NORM, dual_reg=0.01,
                                             solver=NoisySGDA(**SOLVER), accountant=accountant,
                                             random_state=seed)
                scores.append(evaluate(model.fit(X, y, sensitive_features=g).predict(X_test)))
            s = np.array(scores)
            show(f"{constraint}, epsilon={epsilon} ({(time.time() - t0) / len(s):.1f}s/fit)",
                 s.mean(axis=0), s.std(axis=0))
    print("target: at epsilon=1 worst-group MSE within 10% of the non-private minimax solution "
          f"({reference['minimax_loss'][0]:.4f})")


if __name__ == "__main__":
    main()
