"""Raw features against a private scaler in front of DPAUCMaximizer.

A clipped first-order fit needs features near the origin: on raw features (all
positive, norms in the thousands) every per-example gradient is clipped, the clip
drops the objective's class weights, and the update follows the majority class's mean
direction. This script measures what that costs and what a private
``diffprivlib.models.StandardScaler`` (public per-feature bounds, its own epsilon, the
same ``BudgetAccountant``) recovers, next to a non-private ``StandardScaler`` fitted on
the training rows (a reference, not a private pipeline). diffprivlib's scaler is
differentially private for replace-one neighbours with the row count public, so behind
it the fit uses a replace-one solver, ``NoisySGDA(step_size="scaled", n_epochs="auto",
sampler="without_replacement")``; the other columns use the default (Poisson,
add/remove-one). skdpminimax's ``DPStandardScaler`` (one Gaussian release of the
clipped first and second moments, add/remove-one with a privately released size) sits
in front of that default fit; in the "composed" columns the fit composes the scaler's
release with its own in one PLD (``composed_with="pending"``, its epsilon and delta
raised to the same total as the column beside: the scaler's plus the estimator's).

Data: breast cancer (ships with scikit-learn; 70/30 stratified split), a generated
task with five features of scale 10 around 100 and 30% positives, and scikit-learn's
digits (64 pixels in the documented range [0, 16], digits 0-4 against 5-9). The "public" bounds
are the whole data set's per-feature range widened by 20% (breast cancer; a stand-in
for domain knowledge) or the generating range (40, 160); ``data_norm`` is the bound's
norm on raw rows and ``2 sqrt(d)`` on scaled rows; delta = 1e-5; default solver.
Test ROC AUC %, mean (std) over seeds.

    python benchmarks/private_preprocessing.py --seeds 5
"""

import argparse
import math
import time
import warnings

import numpy as np
from diffprivlib import BudgetAccountant
from diffprivlib.models import StandardScaler as DiffprivlibScaler
from sklearn.datasets import load_breast_cancer, load_digits, make_classification
from sklearn.linear_model import LogisticRegression
from sklearn.metrics import roc_auc_score
from sklearn.model_selection import train_test_split
from sklearn.pipeline import make_pipeline
from sklearn.preprocessing import StandardScaler

from skdpminimax import DPAUCMaximizer, DPStandardScaler
from skdpminimax.solvers import NoisySGDA


def datasets():
    """(name, X, y, (low, high)) with public per-feature bounds."""
    X, y = load_breast_cancer(return_X_y=True)
    span = X.max(0) - X.min(0)
    yield "breast cancer", X, y, (np.maximum(0.0, X.min(0) - 0.2 * span), X.max(0) + 0.2 * span)
    X, y = make_classification(3000, 5, n_informative=3, n_redundant=0, weights=[0.7],
                               class_sep=1.5, random_state=0)
    yield "offset features", 10.0 * X + 100.0, y, (np.full(5, 40.0), np.full(5, 160.0))
    # 64 pixels in [0, 16] (the documented range: public): where a per-feature split of
    # epsilon grows with the dimension
    X, y = load_digits(return_X_y=True)
    yield "digits 0-4 vs 5-9", X, (y >= 5).astype(int), (np.zeros(64), np.full(64, 16.0))


def _auc(model, X_test, y_test):
    return 100.0 * roc_auc_score(y_test, model.decision_function(X_test))


def run(X_train, X_test, y_train, y_test, bounds, epsilon, scaler, seed):
    """Test AUC of one pipeline; scaler: None (raw), "public", or ("diffprivlib",
    "skdpminimax" or "composed", its epsilon)."""
    d = X_train.shape[1]
    ledger = BudgetAccountant()
    solver, fit_budget, composed_with = "sgda", (epsilon, 1e-5), None
    if scaler is None:
        data_norm = float(np.linalg.norm(np.maximum(np.abs(bounds[0]), np.abs(bounds[1]))))
        steps = []
    elif scaler == "public":
        data_norm, steps = 2.0 * math.sqrt(d), [StandardScaler()]
    else:
        data_norm = 2.0 * math.sqrt(d)
        library, scaler_epsilon = scaler
        if library == "diffprivlib":
            steps = [DiffprivlibScaler(epsilon=scaler_epsilon, bounds=bounds, accountant=ledger,
                                       random_state=seed)]
            # diffprivlib's scaler is DP for replace-one neighbours with the row count
            # public: behind it the fit must be replace-one too (fixed-size batches
            # without replacement) for the accountant's sum to be one guarantee.
            solver = NoisySGDA(step_size="scaled", n_epochs="auto",
                               sampler="without_replacement")
        else:  # add/remove-one, like the default fit
            steps = [DPStandardScaler(epsilon=scaler_epsilon, bounds=bounds, accountant=ledger,
                                      random_state=seed)]
            if library == "composed":  # the same total, one PLD for both
                fit_budget = (epsilon + scaler_epsilon, 1e-5 + steps[0].delta)
                composed_with = "pending"
    model = make_pipeline(*steps, DPAUCMaximizer(epsilon=fit_budget[0], delta=fit_budget[1],
                                                 data_norm=data_norm, accountant=ledger,
                                                 solver=solver, random_state=seed,
                                                 composed_with=composed_with))
    return _auc(model.fit(X_train, y_train), X_test, y_test), ledger.total()[0]


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--epsilons", type=float, nargs="+", default=[0.5, 1.0, 5.0, math.inf])
    parser.add_argument("--scaler-epsilons", type=float, nargs="+", default=[0.1, 0.5])
    parser.add_argument("--seeds", type=int, default=5)
    args = parser.parse_args()
    warnings.simplefilter("ignore")  # fixed seeds and declared bounds: known here

    start = time.perf_counter()
    libraries = ("diffprivlib", "skdpminimax", "composed")
    scalers = [None, "public"] + [(library, e) for library in libraries
                                  for e in args.scaler_epsilons]
    names = ["raw"] + ["StandardScaler (not private)"] + [
        f"{library} DP scaler eps {e:g}" if library != "composed"
        else f"skdpminimax DP scaler eps {e:g}, composed" for library in libraries
        for e in args.scaler_epsilons]
    print("| data set | estimator epsilon | " + " | ".join(names) + " |")
    print("|---|---|" + "---|" * len(names))
    for name, X, y, bounds in datasets():
        X_train, X_test, y_train, y_test = train_test_split(
            X, y, test_size=0.3, stratify=y, random_state=0)
        baseline = _auc(make_pipeline(StandardScaler(), LogisticRegression(max_iter=5000))
                        .fit(X_train, y_train), X_test, y_test)
        for epsilon in args.epsilons:
            cells = []
            for scaler in scalers:
                aucs = [run(X_train, X_test, y_train, y_test, bounds, epsilon, scaler, seed)[0]
                        for seed in range(args.seeds)]
                cells.append(f"{np.mean(aucs):.1f} ({np.std(aucs):.1f})")
            print(f"| {name} | {epsilon:g} | " + " | ".join(cells) + " |")
        print(f"| {name} | LogisticRegression (not private) | {baseline:.1f} |"
              + " |" * (len(names) - 1))
    print(f"\n{time.perf_counter() - start:.0f} s")


if __name__ == "__main__":
    main()
