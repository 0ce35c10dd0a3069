"""The linear DPAUCMaximizer's default step with and without the class weights' RMS.

The AUC objective weighs a positive ``1 - p`` and a negative ``p``: its per-example
gradients have RMS ``r = 2 sqrt(p (1 - p))`` of the balanced case's, and its mean
gradient and curvature shrink by ``p (1 - p)``. ``step_size="scaled"`` sizes its
convex step ``D / (G sqrt(T))`` with ``G = r C`` and measures the noise against it
(``(1 + E / r^2)^2``); "r = 1" is the rule before, which sized every task as if it were
balanced. Both columns are the estimator's default solver (``solver="sgda"``); "r = 1"
forces the objective's ``typical_grad_rms_fraction`` to 1 for the run (a diagnosis
only). The class ratio is declared public (the training ratio) so that only the step
differs. Test ROC AUC %, mean over seeds; ``ceiling`` is the exact square-loss AUC
minimiser without privacy.

Tasks: ``auc_defaults.py``'s (breast cancer, digits 0-4 vs 5-9, two generated sets;
ijcnn1 with ``--data-dir`` or ``SKDPMINIMAX_DATA``) and three generated rare-positive
sets (1% of 6,000 rows, 5% of 20,000, 0.2% of 60,000; a stratified half for training).

    python benchmarks/auc_class_weight_step.py --seeds 3 --data-dir ../shared/data
"""

import argparse
import contextlib
import math
import os
import time
import warnings
from unittest import mock

import numpy as np
from diffprivlib import BudgetAccountant
from sklearn.datasets import make_classification
from sklearn.metrics import roc_auc_score
from sklearn.model_selection import train_test_split

from skdpminimax import DPAUCMaximizer
from skdpminimax.objectives import SquareLossAUC

from auc_defaults import ceiling, datasets  # a sibling script in benchmarks/


def rare_datasets():
    """(name, X_train, X_test, y_train, y_test, data_norm)."""
    for n, d, share in ((6000, 10, 0.01), (20000, 20, 0.05), (60000, 10, 0.002)):
        X, y = make_classification(n_samples=n, n_features=d, weights=[1 - share],
                                   flip_y=0, random_state=0)
        X_tr, X_te, y_tr, y_te = train_test_split(X / 3, y, test_size=0.5, stratify=y,
                                                  random_state=0)
        norm = float(np.ceil(np.linalg.norm(X_tr, axis=1).max()))
        yield f"rare {share:g}, {n // 2} rows, d={d}", X_tr, X_te, y_tr, y_te, norm


def fit_auc(X_tr, y_tr, X_te, y_te, data_norm, epsilon, seed):
    est = DPAUCMaximizer(epsilon=epsilon, delta=1e-5, data_norm=data_norm,
                         pos_ratio=float(y_tr.mean()), random_state=seed,
                         accountant=BudgetAccountant())
    est.fit(X_tr, y_tr)
    return 100.0 * roc_auc_score(y_te, est.decision_function(X_te))


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--epsilons", type=float, nargs="+",
                        default=[0.1, 0.5, 1.0, 10.0, math.inf])
    parser.add_argument("--seeds", type=int, default=3)
    parser.add_argument("--data-dir", default=os.environ.get("SKDPMINIMAX_DATA") or None,
                        help="adds ijcnn1, MNIST and Fashion-MNIST (default: "
                             "$SKDPMINIMAX_DATA; none: skipped)")
    parser.add_argument("--datasets", nargs="+", default=None,
                        help="only these data sets (names as printed)")
    args = parser.parse_args()
    warnings.filterwarnings("ignore")  # PrivacyLeakWarning etc.: a diagnosis, not a release
    start = time.perf_counter()
    print("| data set | p | r | epsilon | ceiling | r = 1 (before) | r = 2 sqrt(p (1 - p)) |")
    print("|---|---|---|---|---|---|---|")
    tasks = list(datasets(args.data_dir)) + list(rare_datasets())
    for name, X_tr, X_te, y_tr, y_te, data_norm in tasks:
        if args.datasets and name not in args.datasets:
            continue
        if name in ("mnist", "fashion-mnist"):
            continue  # p ~ 1/2: r = 1 to 1e-4, nothing to compare
        p = float(y_tr.mean())
        top = ceiling(X_tr, y_tr, X_te, y_te)
        for epsilon in args.epsilons:
            means = []
            for forced in (True, False):
                with mock.patch.object(SquareLossAUC, "typical_grad_rms_fraction",
                                       lambda self: 1.0) if forced else contextlib.nullcontext():
                    means.append(np.mean([fit_auc(X_tr, y_tr, X_te, y_te, data_norm, epsilon, s)
                                          for s in range(args.seeds)]))
            print(f"| {name} | {p:.3f} | {2 * math.sqrt(p * (1 - p)):.2f} | {epsilon:g} | "
                  f"{top:.2f} | {means[0]:.2f} | {means[1]:.2f} |", flush=True)
    print(f"\n{time.perf_counter() - start:.0f} s")


if __name__ == "__main__":
    main()
