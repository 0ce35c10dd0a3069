"""Peak memory and time of a fit at scale: the cases where a temporary grew with the data
or the model, or where the time went to something other than the data.

Each case runs in a fresh Python process and prints the peak of the fit's traced
allocations (``tracemalloc``, numpy's arrays included) next to the size of its input,
and the process's RSS high-water mark. Only the fit is traced: building the data is
not counted. The cases:

``sparse-auc``
    Default ``DPAUCMaximizer`` on a CSR matrix (row norms and row clipping worked on
    X-sized temporaries and kept a clipped copy of X).
``many-classes``
    ``DPRobustClassifier`` over 100 classes of sparse features (the check before the
    spend formed per-example gradients on one row per class: 100 x (classes x
    features) floats).
``scaler``
    ``DPStandardScaler`` on a dense X (three X-sized temporaries for the clipped moments).
``op-auc``
    ``DPAUCMaximizer(solver="output_perturbation")`` on a sparse X (the certified
    solve's full gradient formed an ``n x (d + 2)`` dense matrix per call).
``many-groups``
    ``DPRobustClassifier`` over 50,000 groups of two rows each, their sizes released
    privately (a time case: each count seeded its own diffprivlib ``RandomState``).
``small-auc``
    Default ``DPAUCMaximizer`` on 3,500 x 20 dense rows at epsilon = 10 (a time case:
    ``n_epochs="auto"`` calibrated every rung of its doubling ladder, a PLD noise search
    each, nearly all of the fit).

``--code DIR`` runs the cases on another checkout of the package (e.g. a ``git
worktree`` of an older commit), to compare before and after a change::

    python benchmarks/memory_scale.py
    git worktree add /tmp/old <commit> && python benchmarks/memory_scale.py --code /tmp/old
"""

import argparse
import json
import math
import os
import resource
import subprocess
import sys
import time
import tracemalloc
import warnings

import numpy as np
import scipy.sparse as sp

CASES = ("sparse-auc", "many-classes", "scaler", "op-auc", "many-groups", "small-auc")


def sparse_rows(n, d, nnz, seed):
    """``n`` CSR rows of ``nnz`` entries each, unit norm (inside the cases' ``data_norm``
    of 1.01, so no row is clipped), with a planted linear score."""
    rng = np.random.default_rng(seed)
    cols = rng.integers(0, d, size=(n, nnz))
    X = sp.csr_matrix((np.full(n * nnz, 1.0 / np.sqrt(nnz)), cols.ravel(),
                       np.arange(0, n * nnz + 1, nnz)), shape=(n, d))
    X.sum_duplicates()
    X = sp.csr_matrix(X.multiply(1.0 / np.sqrt(X.multiply(X).sum(axis=1))))
    score = X @ rng.normal(size=d)
    return X, score


def build(case, scale):
    """The estimator and its fit's arguments for ``case`` (``scale`` multiplies the rows)."""
    from skdpminimax import DPAUCMaximizer, DPRobustClassifier, DPStandardScaler

    if case == "sparse-auc":
        X, score = sparse_rows(int(20_000 * scale), 100_000, 500, 0)
        y = (score > np.median(score)).astype(int)
        return DPAUCMaximizer(epsilon=1.0, data_norm=1.01, pos_ratio=0.5, random_state=0), X, (y,), {}
    if case == "many-classes":
        X, score = sparse_rows(int(2_000 * scale), 20_000, 50, 1)
        y = np.arange(X.shape[0]) % 100
        return DPRobustClassifier(epsilon=1.0, data_norm=1.01, random_state=0), X, (y,), {}
    if case == "scaler":
        rng = np.random.default_rng(2)
        X = rng.uniform(-1.0, 1.0, size=(int(2_000 * scale), 5_000))
        return DPStandardScaler(epsilon=1.0, bounds=(-1.0, 1.0), random_state=0), X, (), {}
    if case == "op-auc":
        X, score = sparse_rows(int(5_000 * scale), 5_000, 20, 3)
        y = (score > np.median(score)).astype(int)
        model = DPAUCMaximizer(epsilon=1.0, data_norm=1.01, pos_ratio=0.5, alpha=1.0,
                               solver="output_perturbation", random_state=0)
        return model, X, (y,), {}
    if case == "many-groups":
        rng = np.random.default_rng(4)
        n = int(100_000 * scale)
        X = rng.normal(size=(n, 10)) / np.sqrt(10.0)
        y = (X[:, 0] + 0.3 * rng.normal(size=n) > 0).astype(int)
        groups = np.arange(n) % max(2, n // 2)
        model = DPRobustClassifier(epsilon=1.0, data_norm=3.0, random_state=0)
        return model, X, (y,), {"sensitive_features": groups}
    if case == "small-auc":
        rng = np.random.default_rng(5)
        n = int(3_500 * scale)
        X = rng.normal(size=(n, 20))
        y = (X[:, :3].sum(axis=1) + rng.normal(size=n) > 1.5).astype(int)
        return DPAUCMaximizer(epsilon=10.0, data_norm=9.0, random_state=0), X, (y,), {}
    raise ValueError(case)


def input_bytes(X):
    if sp.issparse(X):
        return X.data.nbytes + X.indices.nbytes + X.indptr.nbytes
    return X.nbytes


def run_case(case, scale, trace=True):
    """Fit one case in this process; print one JSON line. ``trace=False``: time the fit
    without tracemalloc, which slows pure-Python loops several-fold (peak not measured)."""
    import skdpminimax

    warnings.simplefilter("ignore")
    model, X, args, kwargs = build(case, scale)
    if trace:
        tracemalloc.start()
    start = time.perf_counter()
    model.fit(X, *args, **kwargs)
    seconds = time.perf_counter() - start
    peak = math.nan
    if trace:
        _, peak = tracemalloc.get_traced_memory()
        tracemalloc.stop()
    print(json.dumps({
        "case": case, "shape": list(X.shape), "input_mb": round(input_bytes(X) / 1e6, 1),
        "fit_peak_mb": round(peak / 1e6, 1) if trace else None,
        "max_rss_mb": round(resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1e3, 1),
        "fit_seconds": round(seconds, 1),
        "package": os.path.dirname(os.path.dirname(skdpminimax.__file__))}))


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--cases", nargs="+", choices=CASES, default=list(CASES))
    parser.add_argument("--scale", type=float, default=1.0, help="multiplies every case's rows")
    parser.add_argument("--code", default=None,
                        help="directory holding the skdpminimax package to measure (default: installed)")
    parser.add_argument("--time-only", action="store_true",
                        help="time the fits without tracemalloc (no peak is measured)")
    parser.add_argument("--one", choices=CASES, help=argparse.SUPPRESS)
    args = parser.parse_args()
    if args.one:
        run_case(args.one, args.scale, trace=not args.time_only)
        return
    env = dict(os.environ)
    if args.code:
        env["PYTHONPATH"] = os.path.abspath(args.code) + os.pathsep + env.get("PYTHONPATH", "")
    print(f"{'case':<14}{'shape':>18}{'input MB':>10}{'fit peak MB':>13}{'max RSS MB':>12}{'fit s':>8}")
    for case in args.cases:
        out = subprocess.run([sys.executable, os.path.abspath(__file__), "--one", case,
                              "--scale", str(args.scale)]
                             + (["--time-only"] if args.time_only else []),
                             env=env, capture_output=True, text=True, check=True)
        r = json.loads(out.stdout.strip().splitlines()[-1])
        shape = "x".join(str(s) for s in r["shape"])
        print(f"{case:<14}{shape:>18}{r['input_mb']:>10}{str(r['fit_peak_mb'] if r['fit_peak_mb'] is not None else '-'):>13}"
              f"{r['max_rss_mb']:>12}{r['fit_seconds']:>8}", flush=True)
    print(f"package: {r['package']}")


if __name__ == "__main__":
    main()
