"""Without-replacement RDP accounting: the orders evaluated, their cost and the bound.

``certified_epsilon`` evaluates the without-replacement RDP bound (replace-one) only at
the orders within a factor 8 of the best order of the same run under Poisson sampling
(``calibration._rdp_orders``). Any set of orders gives a valid bound; this script checks
that the window also gives the same bound as every order, and times both, on a grid of
data sizes, batch sizes, run lengths, noise multipliers and one or two kinds of release.
It then times a whole fit that calibrates such a run (``DPRobustClassifier`` on wine
with a without-replacement sampler).

Run ``python benchmarks/wor_rdp_orders.py`` (about 2 minutes). No data files are needed.
"""

import itertools
import time
import warnings

from sklearn.datasets import load_wine
from sklearn.preprocessing import StandardScaler

import skdpminimax.privacy.calibration as calibration
from skdpminimax import DPRobustClassifier
from skdpminimax.privacy.samplers import make_sampler
from skdpminimax.solvers import NoisyExtragradient, NoisySGDA


def _every_order(*args):
    return calibration._RDP_ORDERS


def compare_bounds():
    """Windowed against every order on the grid; returns the largest ratio and times."""
    windowed_orders = calibration._rdp_orders
    worst, times = 1.0, {"window": 0.0, "every": 0.0}
    grid = itertools.product([178, 5000], [16, 64], [1, 30], [0.6, 1.0, 3.0, 10.0],
                             [(1.0,), (1.0, 2.0)])
    print("| n | batch | steps | z | kinds | epsilon (every order) | epsilon (window) |")
    print("|---|---|---|---|---|---|---|")
    try:
        for n, m, epochs, z, ratios in grid:
            sampler = make_sampler("without_replacement", n, m)
            steps = max(2, int(epochs * n / m)) // 2 * 2
            found = {}
            for name, orders in (("window", windowed_orders), ("every", _every_order)):
                calibration._rdp_orders = orders
                start = time.perf_counter()
                found[name] = calibration.certified_epsilon(sampler, z, steps, 1e-5, "rdp",
                                                            noise_ratios=ratios)
                times[name] += time.perf_counter() - start
            worst = max(worst, found["window"] / found["every"])
            print(f"| {n} | {m} | {steps} | {z} | {len(ratios)} | {found['every']:.6g} | "
                  f"{found['window']:.6g} |")
    finally:
        calibration._rdp_orders = windowed_orders
    return worst, times


def time_fits():
    X, y = load_wine(return_X_y=True)
    X = StandardScaler().fit_transform(X)
    for solver in (NoisyExtragradient(mode="multi_pass", sampler="without_replacement"),
                   NoisySGDA(sampler="without_replacement")):
        for name, orders in (("window", calibration._rdp_orders), ("every", _every_order)):
            saved = calibration._rdp_orders
            calibration._rdp_orders = orders
            calibration._calibrate_cached.cache_clear()
            try:
                start = time.perf_counter()
                with warnings.catch_warnings():
                    warnings.simplefilter("ignore")
                    DPRobustClassifier(epsilon=1.0, data_norm=5.0, solver=solver,
                                       random_state=0).fit(X, y)
                print(f"{type(solver).__name__} ({name} orders): "
                      f"{time.perf_counter() - start:.1f} s")
            finally:
                calibration._rdp_orders = saved


if __name__ == "__main__":
    worst, times = compare_bounds()
    print(f"\nlargest ratio window / every order: {worst:.12f}")
    print(f"accountant time: window {times['window']:.1f} s, every order {times['every']:.1f} s")
    time_fits()
