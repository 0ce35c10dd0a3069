"""The linear AUC objective's public guess of a solution's norm, before and after.

``SquareLossAUC.typical_solution_norm()`` is the ``D`` of ``NoisySGDA(step_size="scaled")``
(the default solver's step, ``D / (r C sqrt(T)) / (1 + E / r^2)^2``, never below
``1 / L``). It was ``10 / data_norm``: scores of a few units on dense rows. On sparse
rows a rare coordinate needs a far larger weight, and the default under-trained (an
earlier review: 20,000 x 3,000 binary rows, 10 nonzeros, AUC 0.708 without noise
against 0.897 with a tuned step). It is now ``max(10, sqrt(d)) / data_norm``: the same
for ``d <= 100``, larger above; never a smaller step.

Tasks (70/30 split, class ratio declared public, ``delta = 1e-5``, the default
``DPAUCMaximizer``, test ROC AUC %, mean over seeds): binary sparse rows (20,000 x
3,000; ``k`` Zipf-distributed features per row, a label planted on all features, 10%
flipped; ``data_norm = sqrt(k)``); a one-hot table (``make_classification``, 20 columns
in 25 quantile bins: 500 columns, ``data_norm = sqrt(20)``); ``sparse_auc.py``'s
unit-norm text-like rows (20,000 x 20,000, 50 nonzeros); and ``auc_defaults.py``'s
dense tasks (``data_norm = 2 sqrt(d)``; with ``--data-dir`` ijcnn1, MNIST and
Fashion-MNIST at the reproduction's bounds).

    python benchmarks/auc_solution_norm.py --seeds 3 --data-dir ../shared/data
"""

import argparse
import math
import os
import sys
import time
import warnings
from pathlib import Path

import numpy as np
import scipy.sparse as sp
from sklearn.datasets import make_classification
from sklearn.metrics import roc_auc_score
from sklearn.model_selection import train_test_split
from sklearn.preprocessing import KBinsDiscretizer

sys.path.insert(0, str(Path(__file__).resolve().parent))
import auc_defaults  # noqa: E402  (sibling scripts)
from sparse_auc import make_sparse  # noqa: E402

from skdpminimax import DPAUCMaximizer  # noqa: E402
from skdpminimax.objectives.auc import SquareLossAUC  # noqa: E402

RULES = {
    "before": lambda d, data_norm: 10.0 / data_norm,
    "after": lambda d, data_norm: max(10.0, math.sqrt(d)) / data_norm,
}
_LIBRARY_RULE = SquareLossAUC.typical_solution_norm


def binary_sparse(k, seed=0, n=20000, d=3000):
    rng = np.random.default_rng(seed)
    p = 1.0 / (np.arange(d) + 10.0)
    cols = rng.choice(d, size=(n, k), p=p / p.sum())
    X = sp.csr_matrix((np.ones(n * k), cols.ravel(), np.arange(0, n * k + 1, k)), shape=(n, d))
    X.sum_duplicates()
    X.data[:] = 1.0
    score = X @ rng.normal(size=d)
    y = (score > np.median(score)).astype(int)
    flip = rng.random(n) < 0.1
    y[flip] = 1 - y[flip]
    return X, y


def one_hot_table(seed=3):
    X, y = make_classification(20000, 20, n_informative=10, n_redundant=4, weights=[0.7],
                               flip_y=0.05, random_state=seed)
    bins = KBinsDiscretizer(n_bins=25, encode="onehot", strategy="quantile",
                            quantile_method="averaged_inverted_cdf")
    return sp.csr_matrix(bins.fit_transform(X)), y


def split(X, y):
    """The tasks' 70/30 stratified split."""
    return train_test_split(X, y, test_size=0.3, random_state=0, stratify=y)


def sparse_tasks():
    """The sparse tasks: (name, X_train, X_test, y_train, y_test, data_norm)."""
    for k in (10, 50):
        yield (f"binary sparse, {k} per row", *split(*binary_sparse(k)), math.sqrt(k))
    yield ("one-hot table (500 columns)", *split(*one_hot_table()), math.sqrt(20))
    yield ("text-like, 20,000 columns", *split(*make_sparse(20000, 20000, 50)), 1.0)


def tasks(data_dir):
    """(name, X_train, X_test, y_train, y_test, data_norm)."""
    yield from sparse_tasks()
    yield from auc_defaults.datasets(data_dir)


def fit_auc(rule, X_train, X_test, y_train, y_test, data_norm, epsilon, seed):
    def guess(objective):
        if _LIBRARY_RULE(objective) is None:  # the MLP: no guess
            return None
        return RULES[rule](objective.n_features, objective.data_norm)

    SquareLossAUC.typical_solution_norm = guess
    try:
        model = DPAUCMaximizer(epsilon=epsilon, delta=1e-5, data_norm=data_norm,
                               pos_ratio=float(np.mean(y_train)), random_state=seed)
        model.fit(X_train, y_train)
    finally:
        SquareLossAUC.typical_solution_norm = _LIBRARY_RULE
    return 100.0 * roc_auc_score(y_test, model.decision_function(X_test))


def main(argv=None):
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--epsilons", nargs="+", type=float, default=[math.inf, 10, 1, 0.3])
    parser.add_argument("--seeds", type=int, default=3)
    parser.add_argument("--data-dir", default=os.environ.get("SKDPMINIMAX_DATA"))
    parser.add_argument("--tasks", nargs="+", default=None,
                        help="names (or leading words) of the tasks to run")
    args = parser.parse_args(argv)
    warnings.filterwarnings("ignore")
    eps_head = " | ".join(f"{e:g}" for e in args.epsilons)
    print(f"test AUC % before / after; epsilon = {eps_head}")
    print("| task | d | " + " | ".join(f"epsilon {e:g}" for e in args.epsilons) + " |")
    print("|---|---|" + "---|" * len(args.epsilons))
    start = time.perf_counter()
    for name, X_train, X_test, y_train, y_test, data_norm in tasks(args.data_dir):
        if args.tasks and not any(name.startswith(t) for t in args.tasks):
            continue
        cells = []
        for epsilon in args.epsilons:
            means = [np.mean([fit_auc(rule, X_train, X_test, y_train, y_test, data_norm,
                                      epsilon, seed) for seed in range(args.seeds)])
                     for rule in RULES]
            cells.append(" / ".join(f"{m:.1f}" for m in means))
        print(f"| {name} | {X_train.shape[1]} | " + " | ".join(cells) + " |", flush=True)
    print(f"({time.perf_counter() - start:.0f} s)")


if __name__ == "__main__":
    main()
