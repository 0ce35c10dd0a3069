"""DPAUCMaximizer on rare positives: the declared class ratio, and the default step.

A generated task (make_classification, 6,000 rows, 10 features, 1% positives, rows
scaled by 1/3 so that data_norm=3 holds; a stratified half for training) fitted with
the defaults at a given ``pos_ratio``, and the exact square-loss AUC minimiser
``(S+ + S-)^-1 (mu+ - mu-)`` for reference. Test ROC AUC, mean over seeds.

    python benchmarks/auc_rare_positives.py --seeds 4
"""

import argparse
import warnings

import numpy as np
from diffprivlib import BudgetAccountant
from sklearn.datasets import make_classification
from sklearn.metrics import roc_auc_score
from sklearn.model_selection import train_test_split

from skdpminimax import DPAUCMaximizer
from skdpminimax.solvers import NoisySGDA


def main(argv=None):
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--seeds", type=int, default=4)
    args = parser.parse_args(argv)
    warnings.simplefilter("ignore")
    X, y = make_classification(n_samples=6000, n_features=10, weights=[0.99], flip_y=0,
                               random_state=0)
    X = X / 3
    X_tr, X_te, y_tr, y_te = train_test_split(X, y, test_size=0.5, stratify=y, random_state=0)
    pos, neg = X_tr[y_tr == 1], X_tr[y_tr == 0]
    exact = np.linalg.solve(np.cov(pos.T) + np.cov(neg.T) + 1e-6 * np.eye(X.shape[1]),
                            pos.mean(0) - neg.mean(0))
    print(f"exact square-loss AUC minimiser: {roc_auc_score(y_te, X_te @ exact):.4f} "
          f"({int(y_tr.sum())} positives of {len(y_tr)})")
    print("| epsilon | pos_ratio | solver | test AUC | steps |")
    print("|---|---|---|---|---|")
    runs = [("default", None), ("step 0.3, 200 epochs", dict(n_epochs=200, step_size=0.3))]
    for epsilon in (1.0, 10.0, np.inf):
        for p in (0.01, 0.1, 0.5):
            for name, solver in runs:
                if solver is not None and np.isfinite(epsilon):
                    continue  # the larger step is a noise-free check only
                aucs, steps = [], 0
                for seed in range(args.seeds):
                    est = DPAUCMaximizer(epsilon=epsilon, data_norm=3.0, pos_ratio=p,
                                         random_state=seed, accountant=BudgetAccountant(),
                                         solver="sgda" if solver is None else NoisySGDA(**solver))
                    est.fit(X_tr, y_tr)
                    aucs.append(roc_auc_score(y_te, est.decision_function(X_te)))
                    steps = est.n_iter_
                print(f"| {epsilon:g} | {p:g} | {name} | {np.mean(aucs):.4f} | {steps} |",
                      flush=True)


if __name__ == "__main__":
    main()
