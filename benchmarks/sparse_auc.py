"""Linear DPAUCMaximizer on a large sparse data set (CSR), where a dense copy would not fit.

A generated text-like problem: ``n`` rows, ``d`` features, ``nnz`` nonzeros per row
drawn with Zipf-like frequencies (TF-IDF-like positive values, rows scaled to unit
norm); a planted linear score on the 1,000 most frequent features decides the label
(10% flipped). The estimator's default solver, ``data_norm = 1``, class ratio
declared public, ``delta = 1e-5``. Prints fit time, peak memory of the process (RSS
high-water mark), steps, and test ROC AUC against scikit-learn's non-private
``LogisticRegression`` (also on the CSR matrix).

    python benchmarks/sparse_auc.py --n 50000 --d 100000 --nnz 50
"""

import argparse
import resource
import time
import warnings

import numpy as np
import scipy.sparse as sp
from sklearn.linear_model import LogisticRegression
from sklearn.metrics import roc_auc_score

from skdpminimax import DPAUCMaximizer


def make_sparse(n, d, nnz, seed=0):
    rng = np.random.default_rng(seed)
    # Zipf-like feature frequencies (as words in text): feature j drawn with
    # probability proportional to 1 / (j + 10)
    weights = 1.0 / (np.arange(d) + 10.0)
    cols = rng.choice(d, size=(n, nnz), p=weights / weights.sum())
    vals = rng.exponential(size=(n, nnz))
    X = sp.csr_matrix((vals.ravel(), cols.ravel(), np.arange(0, n * nnz + 1, nnz)), shape=(n, d))
    X.sum_duplicates()
    X = sp.csr_matrix(X.multiply(1.0 / np.sqrt(X.multiply(X).sum(axis=1))))
    w = np.zeros(d)
    w[:1000] = rng.normal(size=1000)  # the 1,000 most frequent features decide
    score = X @ w
    y = (score > np.median(score)).astype(int)
    flip = rng.random(n) < 0.1
    y[flip] = 1 - y[flip]
    return X, y


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--n", type=int, default=50000)
    parser.add_argument("--d", type=int, default=100000)
    parser.add_argument("--nnz", type=int, default=50)
    parser.add_argument("--epsilons", type=float, nargs="+", default=[1.0, 10.0, float("inf")])
    args = parser.parse_args()
    warnings.filterwarnings("ignore")
    X, y = make_sparse(args.n, args.d, args.nnz)
    split = int(0.8 * args.n)
    X_train, X_test, y_train, y_test = X[:split], X[split:], y[:split], y[split:]
    dense_gb = split * args.d * 8 / 1e9
    print(f"n_train = {split}, d = {args.d}, nnz / row ~ {X.nnz / args.n:.0f}; "
          f"a dense float64 copy would take {dense_gb:.1f} GB")
    start = time.perf_counter()
    lr = LogisticRegression(max_iter=1000).fit(X_train, y_train)
    print(f"LogisticRegression (non-private): AUC "
          f"{100 * roc_auc_score(y_test, lr.decision_function(X_test)):.2f}, "
          f"{time.perf_counter() - start:.1f} s")
    for epsilon in args.epsilons:
        start = time.perf_counter()
        model = DPAUCMaximizer(epsilon=epsilon, delta=1e-5, data_norm=1.0,
                               pos_ratio=float(y_train.mean()), random_state=0,
                               n_samples_budget="public").fit(X_train, y_train)
        seconds = time.perf_counter() - start
        auc = 100 * roc_auc_score(y_test, model.decision_function(X_test))
        peak = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1e6  # KB -> GB (Linux)
        print(f"DPAUCMaximizer epsilon = {epsilon:g}: AUC {auc:.2f}, {seconds:.1f} s, "
              f"{model.n_iter_} steps, peak RSS {peak:.2f} GB")


if __name__ == "__main__":
    main()
