"""Fit time of the MLP scorer's DP-SGDA step (forward pass shared within a step).

Times ``DPAUCMaximizer(scorer="mlp")`` (256 hidden units, the default solver) on
MNIST-shaped random data (784 features, 6,000 rows, batch 64) and on standardised
breast cancer at epsilon = inf (8,000 steps, the "auto" run length without noise).
Prints steps, seconds and seconds per step, best of ``--repeats``::

    python benchmarks/mlp_step_time.py --repeats 3
"""

import argparse
import time
import warnings

import numpy as np
from diffprivlib import BudgetAccountant
from sklearn.datasets import load_breast_cancer
from sklearn.preprocessing import StandardScaler

from skdpminimax import DPAUCMaximizer
from skdpminimax.solvers import NoisySGDA


def timed_fit(X, y, epsilon, solver=None):
    kw = {} if solver is None else {"solver": solver}
    est = DPAUCMaximizer(scorer="mlp", epsilon=epsilon, delta=1e-6, data_norm=30.0,
                         pos_ratio=float(np.mean(y)), random_state=0,
                         accountant=BudgetAccountant(), n_samples_budget=len(X), **kw)
    start = time.perf_counter()
    est.fit(X, y)
    return est.n_iter_, time.perf_counter() - start


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--repeats", type=int, default=3)
    args = parser.parse_args()
    warnings.simplefilter("ignore")
    rng = np.random.default_rng(0)
    X_img = rng.normal(size=(6000, 784))
    y_img = (X_img[:, :10].sum(axis=1) > 0).astype(int)
    X_bc, y_bc = load_breast_cancer(return_X_y=True)
    X_bc = StandardScaler().fit_transform(X_bc)
    cases = {
        "784 features, 6,000 rows, epsilon 1, 5 epochs":
            (X_img, y_img, 1.0, NoisySGDA(batch_size=64, n_epochs=5, clip_w=5.0,
                                          step_size=0.01, average="last")),
        "breast cancer, epsilon inf (auto: 8,000 steps)": (X_bc, y_bc, np.inf, None),
    }
    for name, (X, y, eps, solver) in cases.items():
        runs = [timed_fit(X, y, eps, solver) for _ in range(args.repeats)]
        steps, best = runs[0][0], min(t for _, t in runs)
        print(f"{name}: {steps} steps, {best:.2f} s, {1e3 * best / steps:.2f} ms a step")


if __name__ == "__main__":
    main()
