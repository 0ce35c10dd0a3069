"""Each estimator with its default solver settings against a non-private scikit-learn fit.

A diagnosis of the defaults (``solver="sgda"``, i.e. ``NoisySGDA`` with step
``"auto"`` = ``1 / L``, ``L`` the certified smoothness), on data that ship with
scikit-learn, standardised (non-private: a diagnosis of the solver, not a private
pipeline), 70/30 stratified split, public bounds declared (``data_norm`` the largest
training row norm rounded up; targets' range for the regressor), ``delta = 1e-5``;
mean test score over seeds:

- ``DPAUCMaximizer``: ROC AUC on breast cancer (569 rows) and digits 0-4 vs 5-9
  (1,797); baseline ``LogisticRegression``;
- ``DPRobustClassifier`` (groups = classes): worst-class accuracy on iris (150) and wine
  (178); baseline ``LogisticRegression``;
- ``DPGroupFairRegressor`` (groups = sex): R^2 on diabetes (442); baseline
  ``LinearRegression``.

    python benchmarks/estimator_defaults.py --epsilons 1 10 inf --seeds 3
    python benchmarks/estimator_defaults.py --step-size 1.0   # the defaults, but this step
"""

import argparse
import math
import time
import warnings

import numpy as np
from sklearn.datasets import load_breast_cancer, load_diabetes, load_digits, load_iris, load_wine
from sklearn.linear_model import LinearRegression, LogisticRegression
from sklearn.metrics import confusion_matrix, r2_score, roc_auc_score
from sklearn.model_selection import train_test_split
from sklearn.preprocessing import StandardScaler

from skdpminimax import DPAUCMaximizer, DPGroupFairRegressor, DPRobustClassifier


def worst_class_accuracy(y_true, y_pred):
    cm = confusion_matrix(y_true, y_pred)
    return float(np.min(np.diag(cm) / cm.sum(axis=1)))


def _split(X, y, stratify=True):
    X_train, X_test, y_train, y_test = train_test_split(
        X, y, test_size=0.3, random_state=0, stratify=y if stratify else None)
    scaler = StandardScaler().fit(X_train)
    X_train, X_test = scaler.transform(X_train), scaler.transform(X_test)
    data_norm = float(math.ceil(np.linalg.norm(X_train, axis=1).max()))
    return X_train, X_test, y_train, y_test, data_norm


def tasks():
    """(estimator, data, split, make(epsilon, seed, data_norm, y_train), score, baseline,
    groups(X) or None)."""
    def auc(model, X, y):
        return 100.0 * roc_auc_score(y, model.decision_function(X))

    def worst(model, X, y):
        return 100.0 * worst_class_accuracy(y, model.predict(X))

    def r2(model, X, y):
        return 100.0 * r2_score(y, model.predict(X))

    X, y = load_breast_cancer(return_X_y=True)
    cancer = _split(X, y)
    X, y = load_digits(return_X_y=True)
    digits = _split(X, (y < 5).astype(int))

    def make_auc(epsilon, seed, data_norm, y_train):
        return DPAUCMaximizer(epsilon=epsilon, delta=1e-5, data_norm=data_norm,
                              pos_ratio=float(np.mean(y_train)), random_state=seed)

    for name, split in (("breast cancer", cancer), ("digits 0-4 vs 5-9", digits)):
        yield ("DPAUCMaximizer", name, split, make_auc, auc, LogisticRegression(max_iter=5000),
               None)

    def make_robust(epsilon, seed, data_norm, y_train):
        labels, counts = np.unique(y_train, return_counts=True)
        return DPRobustClassifier(epsilon=epsilon, delta=1e-5, data_norm=data_norm,
                                  group_ratios=dict(zip(labels, counts / counts.sum())),
                                  random_state=seed)

    for name, loader in (("iris", load_iris), ("wine", load_wine)):
        X, y = loader(return_X_y=True)
        yield ("DPRobustClassifier", name, _split(X, y), make_robust, worst,
               LogisticRegression(max_iter=5000), None)

    X, y = load_diabetes(return_X_y=True)
    diabetes = _split(X, y, stratify=False)

    def make_fair(epsilon, seed, data_norm, y_train):
        return DPGroupFairRegressor(epsilon=epsilon, delta=1e-5, data_norm=data_norm,
                                    bounds=(25.0, 346.0), random_state=seed)

    def sex(X):  # column 1 of the diabetes data, standardised
        return (X[:, 1] > 0).astype(int)

    yield "DPGroupFairRegressor", "diabetes", diabetes, make_fair, r2, LinearRegression(), sex


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--epsilons", type=float, nargs="+", default=[1.0, 10.0, math.inf])
    parser.add_argument("--seeds", type=int, default=3)
    parser.add_argument("--step-size", type=float, default=None,
                        help="replace the default solver's step 'auto' by this value")
    args = parser.parse_args()
    warnings.filterwarnings("ignore")  # PrivacyLeakWarning etc.: a diagnosis, not a release
    start = time.perf_counter()
    eps_cols = " | ".join(f"epsilon = {e:g}" for e in args.epsilons)
    print(f"| estimator | data | score | non-private baseline | {eps_cols} | n_iter_ |")
    print("|---|---|---|---|" + "---|" * len(args.epsilons) + "---|")
    for estimator, data, split, make, score, baseline, groups in tasks():
        X_train, X_test, y_train, y_test, data_norm = split
        base = score(baseline.fit(X_train, y_train), X_test, y_test)
        cells, n_iter = [], None
        for epsilon in args.epsilons:
            scores = []
            for seed in range(args.seeds):
                model = make(epsilon, seed, data_norm, y_train)
                if args.step_size is not None:
                    # the estimator's own default solver, with only the step replaced
                    model.set_params(solver=model._resolve_solver().set_params(
                        step_size=args.step_size))
                kwargs = {} if groups is None else {"sensitive_features": groups(X_train)}
                model.fit(X_train, y_train, **kwargs)
                scores.append(score(model, X_test, y_test))
                n_iter = model.n_iter_
            cells.append(f"{np.mean(scores):.1f}")
        metric = {"DPAUCMaximizer": "AUC %", "DPRobustClassifier": "worst-class accuracy %",
                  "DPGroupFairRegressor": "R^2 %"}[estimator]
        print(f"| {estimator} | {data} | {metric} | {base:.1f} | " + " | ".join(cells)
              + f" | {n_iter} |", flush=True)
    print(f"\n{time.perf_counter() - start:.0f} s")


if __name__ == "__main__":
    main()
