"""Fit time of output perturbation's certified solve (DPRobustClassifier).

A generated 3-class task (``make_classification``, 20 features, rows scaled into
``data_norm = 3``), ``DPRobustClassifier(solver="output_perturbation")`` at
epsilon = 1, delta = 1e-5, the classes as groups, one seed. The solve runs to the
certified accuracy ``accuracy_ratio^2 Q_stab`` (which shrinks as ``1 / n^2``); its
time is all after the charge. Prints rows, wall seconds, the target and the
worst-class training accuracy.

    python benchmarks/output_perturbation_time.py --sizes 3000 10000 30000
"""

import argparse
import time
import warnings

import numpy as np
from diffprivlib import BudgetAccountant
from sklearn.datasets import make_classification

from skdpminimax import DPRobustClassifier


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--sizes", type=int, nargs="+", default=[3000, 10000, 30000])
    args = parser.parse_args()
    warnings.filterwarnings("ignore")  # PrivacyLeakWarning (public bounds declared here)
    print("| rows | fit s | target | worst-class training accuracy |")
    print("|---|---|---|---|")
    for n in args.sizes:
        X, y = make_classification(n_samples=n, n_features=20, n_informative=8, n_classes=3,
                                   random_state=0)
        X = X / np.sqrt(20)
        est = DPRobustClassifier(epsilon=1.0, delta=1e-5, data_norm=3.0,
                                 solver="output_perturbation", random_state=0,
                                 accountant=BudgetAccountant())
        start = time.perf_counter()
        est.fit(X, y)
        seconds = time.perf_counter() - start
        pred = est.predict(X)
        worst = min(np.mean(pred[y == c] == c) for c in np.unique(y))
        print(f"| {n} | {seconds:.1f} | {est.solver_info_['target']:.3g} | {worst:.3f} |",
              flush=True)


if __name__ == "__main__":
    main()
