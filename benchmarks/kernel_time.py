"""A 15-epoch DP-SGDA fit on ijcnn1: the compiled kernel against the numpy loop.

``DPAUCMaximizer`` (linear scorer, epsilon 1, batch 64, 15 epochs, the size and class
ratio declared so that every fit plans the same run) with ``backend="numba"`` and
``backend="numpy"``, each fitted ``--repeats`` times after one warm-up fit per backend
(the kernel's compilation and the noise calibration, which later fits of the same
size and budget reuse); scikit-learn's ``SGDClassifier`` for 15 epochs beside it.
Wall seconds, the median of the repeats. Needs ``$SKDPMINIMAX_DATA`` (or
``--data-dir``) holding ``ijcnn1/ijcnn1.bz2``::

    python benchmarks/kernel_time.py
"""

import argparse
import statistics
import time
import warnings

from diffprivlib import BudgetAccountant
from sklearn.linear_model import SGDClassifier

from skdpminimax import DPAUCMaximizer
from skdpminimax.datasets import load_ijcnn1
from skdpminimax.solvers import NoisySGDA


def _seconds(fit):
    start = time.perf_counter()
    fit()
    return time.perf_counter() - start


def main(argv=None):
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--data-dir", default=None)
    parser.add_argument("--repeats", type=int, default=5)
    args = parser.parse_args(argv)
    warnings.simplefilter("ignore")  # fixed seeds: a timing, not a release
    X, _, y, _ = load_ijcnn1(args.data_dir)

    def private_fit(backend):
        return DPAUCMaximizer(
            epsilon=1.0, delta=1e-5, data_norm=2.0, pos_ratio=0.1, n_samples_budget=len(y),
            solver=NoisySGDA(batch_size=64, n_epochs=15, backend=backend), random_state=0,
            accountant=BudgetAccountant()).fit(X, y)

    rows, warm_up = {}, {}
    for backend in ("numba", "numpy"):
        warm_up[backend] = _seconds(lambda backend=backend: private_fit(backend))
        rows[f"DPAUCMaximizer, backend={backend!r}"] = [
            _seconds(lambda backend=backend: private_fit(backend)) for _ in range(args.repeats)]
    rows["SGDClassifier, 15 epochs (not private)"] = [
        _seconds(lambda: SGDClassifier(max_iter=15, tol=None, random_state=0).fit(X, y))
        for _ in range(args.repeats)]
    print(f"ijcnn1 training split: {X.shape[0]} rows, {X.shape[1]} features\n")
    print("| fit | median seconds |")
    print("|---|---|")
    for name, seconds in rows.items():
        print(f"| {name} | {statistics.median(seconds):.2f} |")
    print("\nwarm-up fits (the first compiles the kernel and calibrates the noise): "
          + ", ".join(f"{backend} {seconds:.2f} s" for backend, seconds in warm_up.items()))


if __name__ == "__main__":
    main()
