"""Released counts near 0: the posterior mean against the floor it replaced.

The class ratio of ``DPAUCMaximizer`` and the group frequencies of
``DPRobustClassifier`` come from counts released by the truncated geometric mechanism.
The fit now reads each count as its posterior mean under a flat prior on ``[1, n - 1]``
(every class and group is present); ``--rule floor`` restores the rule before it (the
class ratio clamped to ``[0.001, 0.999]``, group counts floored at 1), by replacing the
post-processing only: same releases, same seeds. Mean over seeds (standard error).

AUC tasks: breast cancer mapped to ``[-1, 1]`` by its per-feature range (70/30 split,
``data_norm = sqrt(30)``), and ``make_classification`` tasks (8 features, rows scaled
to norm 4, half held out) with 10% or 5% positives, centred or shifted by 1 or -1, and
1% positives (the rare-positives probe). Robust tasks: iris and wine, standardised on
the training split, ``data_norm = 2 sqrt(d)``, worst-class recall over 10 splits::

    python benchmarks/released_counts.py               # the posterior mean (the library)
    python benchmarks/released_counts.py --rule floor  # the rule before
    python benchmarks/released_counts.py --counts-only # the estimates alone, both rules

``--counts-only`` compares the two rules as estimators of the ratio ``p = k / n`` on
4,000 releases of one count per cell: mean absolute error of ``p``, and of ``log p``
plus ``log (1 - p)`` (the error that scales the class weights ``1 / p``, ``1 / (1 - p)``).
"""

import argparse
import math
import warnings

import numpy as np
from diffprivlib import BudgetAccountant
from sklearn.datasets import load_breast_cancer, load_iris, load_wine, make_classification
from sklearn.metrics import recall_score, roc_auc_score
from sklearn.model_selection import train_test_split
from sklearn.preprocessing import StandardScaler

import skdpminimax.estimators._groups as groups_module
import skdpminimax.estimators.auc as auc_module
from skdpminimax import DPAUCMaximizer, DPRobustClassifier
from skdpminimax.privacy.mechanisms import count_posterior_mean, private_counts


def _floor_rule():
    """The post-processing before the posterior mean, on the same releases."""
    auc_module.count_posterior_mean = (
        lambda released, upper, epsilon, **_: np.atleast_1d(np.asarray(released, float)))
    groups_module.count_posterior_mean = (
        lambda released, upper, epsilon, low=1, **_: np.maximum(
            np.asarray(released, float), low))


def _auc_tasks():
    X, y = load_breast_cancer(return_X_y=True)
    low, high = X.min(0), X.max(0)
    X = 2 * (X - low) / (high - low) - 1
    yield ("breast cancer [-1, 1]", math.sqrt(X.shape[1]),
           train_test_split(X, y, test_size=0.3, stratify=y, random_state=0))
    for name, n, weights, shift, seed in [("10% positives, centred", 1000, [0.9], 0.0, 1),
                                          ("10% positives, shifted +1", 1000, [0.9], 1.0, 1),
                                          ("5% positives, shifted -1", 2000, [0.95], -1.0, 2),
                                          ("1% positives", 6000, [0.99], 0.0, 0)]:
        X, y = make_classification(n_samples=n, n_features=8, weights=weights, flip_y=0.02,
                                   random_state=seed, shift=shift)
        X = X / np.linalg.norm(X, axis=1).max() * 4
        yield name, 4.0, train_test_split(X, y, test_size=0.5, stratify=y, random_state=0)


def _counts_only():
    rng = np.random.default_rng(0)
    print("| n | p | count's epsilon | abs. error of p: floor | posterior "
          "| abs. error of log p + log(1 - p): floor | posterior |")
    print("|---|---|---|---|---|---|---|")
    for n in (200, 500, 3000):
        for p in (0.01, 0.05, 0.1, 0.3, 0.5):
            for epsilon in (0.015, 0.05, 0.2):
                k = max(1, round(p * n))
                released = private_counts(np.full(4000, k), n, epsilon, rng)
                floor = np.clip(released / n, 1e-3, 1 - 1e-3)
                posterior = np.clip(count_posterior_mean(released, n, epsilon) / n,
                                    1e-3, 1 - 1e-3)
                truth = k / n

                def log_error(q, truth=truth):
                    return np.mean(np.abs(np.log(q / truth))
                                   + np.abs(np.log((1 - q) / (1 - truth))))

                print(f"| {n} | {truth:.3f} | {epsilon:g} | "
                      f"{np.mean(np.abs(floor - truth)):.4f} | "
                      f"{np.mean(np.abs(posterior - truth)):.4f} | "
                      f"{log_error(floor):.3f} | {log_error(posterior):.3f} |")


def _mean_se(values):
    return f"{np.mean(values):.1f} ({np.std(values) / math.sqrt(len(values)):.1f})"


def main(argv=None):
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--rule", choices=["posterior", "floor"], default="posterior")
    parser.add_argument("--seeds", type=int, default=20)
    parser.add_argument("--epsilons", type=float, nargs="+", default=[0.3, 1.0])
    parser.add_argument("--counts-only", action="store_true")
    args = parser.parse_args(argv)
    if args.counts_only:
        _counts_only()
        return
    warnings.simplefilter("ignore")  # fixed seeds: an experiment, not a release
    if args.rule == "floor":
        _floor_rule()
    print(f"rule: {args.rule}\n")
    print("| DPAUCMaximizer task | " + " | ".join(f"AUC % at epsilon {e:g}"
                                                  for e in args.epsilons) + " |")
    print("|---|" + "---|" * len(args.epsilons))
    for name, data_norm, (X_tr, X_te, y_tr, y_te) in _auc_tasks():
        cells = []
        for epsilon in args.epsilons:
            aucs = [100 * roc_auc_score(y_te, DPAUCMaximizer(
                epsilon=epsilon, delta=1e-5, data_norm=data_norm, random_state=seed,
                accountant=BudgetAccountant()).fit(X_tr, y_tr).decision_function(X_te))
                for seed in range(args.seeds)]
            cells.append(_mean_se(aucs))
        print(f"| {name} | " + " | ".join(cells) + " |", flush=True)
    print("\n| DPRobustClassifier task | " + " | ".join(
        f"worst-class recall % at epsilon {e:g}" for e in args.epsilons) + " |")
    print("|---|" + "---|" * len(args.epsilons))
    for name, (X, y) in [("iris", load_iris(return_X_y=True)),
                         ("wine", load_wine(return_X_y=True))]:
        cells = []
        for epsilon in args.epsilons:
            recalls = []
            for split in range(10):
                X_tr, X_te, y_tr, y_te = train_test_split(X, y, test_size=0.3, stratify=y,
                                                          random_state=split)
                scaler = StandardScaler().fit(X_tr)
                model = DPRobustClassifier(epsilon=epsilon, data_norm=2 * math.sqrt(X.shape[1]),
                                           random_state=split, accountant=BudgetAccountant())
                model.fit(scaler.transform(X_tr), y_tr)
                predicted = model.predict(scaler.transform(X_te))
                recalls.append(100 * recall_score(y_te, predicted, average=None).min())
            cells.append(_mean_se(recalls))
        print(f"| {name} | " + " | ".join(cells) + " |", flush=True)


if __name__ == "__main__":
    main()
