"""Features in [0, 1] against the same public bounds mapped to [-1, 1], behind DPAUCMaximizer.

Scaling to ``[0, 1]`` from public bounds makes ``data_norm = sqrt(d)`` a public bound,
but puts every row in one corner of the ball; ``[-1, 1]`` (``2 x - 1``) centres the
bounds' box on the origin at no privacy cost. Breast cancer (scikit-learn; 70/30
stratified split, seed 0), the public bounds stood in for by the whole data set's
per-feature minimum and maximum, ``data_norm = sqrt(30)``, delta = 1e-5, the default
solver. Test ROC AUC %, mean (std) over seeds.

    python benchmarks/centring.py --seeds 5
"""

import argparse
import math
import time
import warnings

import numpy as np
from diffprivlib import BudgetAccountant
from sklearn.datasets import load_breast_cancer
from sklearn.metrics import roc_auc_score
from sklearn.model_selection import train_test_split

from skdpminimax import DPAUCMaximizer


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--epsilons", type=float, nargs="+", default=[0.5, 1.0, 4.0, math.inf])
    parser.add_argument("--seeds", type=int, default=5)
    args = parser.parse_args()
    warnings.simplefilter("ignore")  # fixed seeds: an experiment, not a release
    start = time.perf_counter()
    X, y = load_breast_cancer(return_X_y=True)
    low, high = X.min(axis=0), X.max(axis=0)  # stand-ins for public bounds
    X_train, X_test, y_train, y_test = train_test_split(X, y, test_size=0.3, stratify=y,
                                                        random_state=0)
    ranges = {"[0, 1]": lambda Z: (Z - low) / (high - low),
              "[-1, 1]": lambda Z: 2.0 * (Z - low) / (high - low) - 1.0}
    print("| epsilon | " + " | ".join(ranges) + " |")
    print("|---|" + "---|" * len(ranges))
    for epsilon in args.epsilons:
        cells = []
        for scale in ranges.values():
            aucs = [100.0 * roc_auc_score(y_test, DPAUCMaximizer(
                        epsilon=epsilon, delta=1e-5, data_norm=math.sqrt(X.shape[1]),
                        random_state=seed, accountant=BudgetAccountant())
                        .fit(scale(X_train), y_train).decision_function(scale(X_test)))
                    for seed in range(args.seeds)]
            cells.append(f"{np.mean(aucs):.1f} ({np.std(aucs):.1f})")
        print(f"| {epsilon:g} | " + " | ".join(cells) + " |")
    print(f"\n{time.perf_counter() - start:.0f} s")


if __name__ == "__main__":
    main()
