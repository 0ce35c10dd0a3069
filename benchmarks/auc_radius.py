"""DPAUCMaximizer's ball radius: the earlier fixed ``radius=10`` against ``radius="auto"``.

``"auto"`` is ``max(10, sqrt(d) / max(1, data_norm))`` for the linear scorer under the
clipping gradient solvers: the default step's guess of a solution's norm on rows of norm
up to 1, so the ball holds the sparse solutions the step is sized for. It differs from
10 only where ``d > 100`` and ``data_norm < sqrt(d) / 10``, and never grows as
``1 / data_norm``. Tasks (70/30 split, class ratio
declared public, ``delta = 1e-5``, the default solver, test ROC AUC %, mean over seeds,
the fitted coefficients' norm in brackets): ``auc_solution_norm.py``'s binary sparse
rows and one-hot table, ``sparse_auc.py``'s unit-norm text-like rows (20,000 x
20,000, 50 nonzeros), two dense tasks with rows scaled to unit norm (breast cancer;
20,000 generated rows of 300 features), and breast cancer standardised and scaled by
1e-3 (rows of a small scale).

    python benchmarks/auc_radius.py --seeds 3
"""

import argparse
import math
import sys
import time
import warnings
from pathlib import Path

import numpy as np
from sklearn.datasets import load_breast_cancer, make_classification
from sklearn.metrics import roc_auc_score
from sklearn.preprocessing import Normalizer, StandardScaler

sys.path.insert(0, str(Path(__file__).resolve().parent))
from auc_solution_norm import sparse_tasks, split  # noqa: E402  (a sibling script)

from skdpminimax import DPAUCMaximizer  # noqa: E402

RADII = (10.0, "auto")


def tasks():
    """(name, X_train, X_test, y_train, y_test, data_norm)."""
    yield from sparse_tasks()
    X, y = load_breast_cancer(return_X_y=True)
    unit = Normalizer().fit_transform(StandardScaler().fit_transform(X))
    yield ("breast cancer, unit rows", *split(unit, y), 1.0)
    X, y = make_classification(20000, 300, n_informative=30, random_state=1)
    yield ("300 dense features, unit rows", *split(Normalizer().fit_transform(X), y), 1.0)
    # rows of a small scale: the ball must not grow as 1 / data_norm (a review)
    X, y = load_breast_cancer(return_X_y=True)
    small = StandardScaler().fit_transform(X) * 1e-3
    yield ("breast cancer, scaled by 1e-3", *split(small, y),
           float(np.ceil(np.linalg.norm(small, axis=1).max() * 1e3) / 1e3))


def main(argv=None):
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--epsilons", nargs="+", type=float, default=[math.inf, 10, 1, 0.3])
    parser.add_argument("--seeds", type=int, default=3)
    args = parser.parse_args(argv)
    warnings.filterwarnings("ignore")
    print("test AUC % (coefficient norm), radius 10 / auto")
    print("| task | auto radius | " + " | ".join(f"epsilon {e:g}" for e in args.epsilons) + " |")
    print("|---|---|" + "---|" * len(args.epsilons))
    start = time.perf_counter()
    for name, X_train, X_test, y_train, y_test, data_norm in tasks():
        cells, auto_radius = [], None
        for epsilon in args.epsilons:
            parts = []
            for radius in RADII:
                aucs, norms = [], []
                for seed in range(args.seeds):
                    model = DPAUCMaximizer(epsilon=epsilon, delta=1e-5, data_norm=data_norm,
                                           pos_ratio=float(np.mean(y_train)), radius=radius,
                                           random_state=seed).fit(X_train, y_train)
                    aucs.append(100.0 * roc_auc_score(y_test, model.decision_function(X_test)))
                    norms.append(np.linalg.norm(model.coef_))
                    if radius == "auto":
                        auto_radius = model.objective_.radius
                parts.append(f"{np.mean(aucs):.2f} ({np.mean(norms):.0f})")
            cells.append(" / ".join(parts))
        print(f"| {name} | {auto_radius:.1f} | " + " | ".join(cells) + " |", flush=True)
    print(f"({time.perf_counter() - start:.0f} s)")


if __name__ == "__main__":
    main()
