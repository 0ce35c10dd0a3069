"""``DPGroupFairRegressor``'s primal clip as epsilon grows: the squared loss's rule
(``gradients_shrink_at_fit``: the clip grows with the noise) against the jump to the
typical norm that the other losses keep (``--rule jump``, the rule before).

Tasks (all ship with scikit-learn or are generated): ``make_regression(6000, 20,
n_informative=10, noise=20)`` with one group and with three groups of 70/20/10%
(bounds +-600), and diabetes with the sex feature as the group (bounds (0, 400));
features standardised with the training split's statistics (a stand-in for public
scales), ``data_norm = 2 sqrt(d)``, delta = 1e-6, 70/30 splits. Prints the worst
group's test MSE (mean and std over seeds) and the clip used.

    python benchmarks/fair_quiet_clip.py               # the current rule
    python benchmarks/fair_quiet_clip.py --rule jump   # the jump, for comparison
"""

import argparse
import warnings

import numpy as np
from sklearn.datasets import load_diabetes, make_regression
from sklearn.metrics import mean_squared_error
from sklearn.model_selection import train_test_split
from sklearn.preprocessing import StandardScaler

import skdpminimax.solvers.sgda as sgda
from skdpminimax import DPGroupFairRegressor

TASKS = ("one group", "three groups", "diabetes")


def _task(name):
    if name == "diabetes":
        X, y = load_diabetes(return_X_y=True)
        groups, bounds = (X[:, 1] > 0).astype(int), (0.0, 400.0)
    else:
        X, y = make_regression(6000, 20, n_informative=10, noise=20, random_state=7)
        groups = (np.zeros(len(y), dtype=int) if name == "one group" else
                  np.random.default_rng(0).choice(3, size=len(y), p=[0.7, 0.2, 0.1]))
        bounds = (-600.0, 600.0)
    Xtr, Xte, ytr, yte, gtr, gte = train_test_split(X, y, groups, test_size=0.3,
                                                    random_state=0)
    scaler = StandardScaler().fit(Xtr)
    return scaler.transform(Xtr), scaler.transform(Xte), ytr, yte, gtr, gte, bounds


def main(argv=None):
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--rule", choices=["shrink", "jump"], default="shrink")
    parser.add_argument("--seeds", type=int, default=2)
    parser.add_argument("--epsilons", nargs="+", type=float,
                        default=[1.0, 2.0, 3.0, 4.0, 10.0, np.inf])
    parser.add_argument("--tasks", nargs="+", choices=TASKS, default=list(TASKS))
    args = parser.parse_args(argv)
    if args.rule == "jump":  # every objective as if its gradients kept their scale
        sgda.gradients_shrink_at_fit = lambda objective: False
    warnings.simplefilter("ignore")
    print("| task | epsilon | worst-group test MSE | clip_w |\n|---|---|---|---|")
    for name in args.tasks:
        Xtr, Xte, ytr, yte, gtr, gte, bounds = _task(name)
        for epsilon in args.epsilons:
            mse = []
            for seed in range(args.seeds):
                model = DPGroupFairRegressor(
                    epsilon=epsilon, delta=1e-6, bounds=bounds,
                    data_norm=2.0 * Xtr.shape[1] ** 0.5, random_state=seed).fit(
                        Xtr, ytr, sensitive_features=None if name == "one group" else gtr)
                pred = model.predict(Xte)
                mse.append(max(mean_squared_error(yte[gte == g], pred[gte == g])
                               for g in np.unique(gte)))
            print(f"| {name} | {epsilon:g} | {np.mean(mse):.1f} +- {np.std(mse):.1f} | "
                  f"{model.solver_info_['clip_w']:.3g} |", flush=True)


if __name__ == "__main__":
    main()
