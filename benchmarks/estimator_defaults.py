"""Each estimator with its default solver settings against a non-private scikit-learn fit.

A check of the defaults (``solver="sgda"``: ``NoisySGDA`` with ``step_size="scaled"``
and ``n_epochs="auto"``; ``--step-size``, ``--n-epochs`` and ``--clip-w`` replace one
setting each, ``--step-size auto --n-epochs 15`` gives the defaults before), on data
that ship with scikit-learn, standardised (non-private: a check of the solver, not a
private pipeline), 70/30 split, public bounds declared
(``data_norm`` the largest training row norm rounded up; the target's range for the
regressor), ``delta = 1e-5``; mean test score over seeds:

- ``DPAUCMaximizer``: ROC AUC on breast cancer (569 rows) and digits 0-4 vs 5-9
  (1,797); baseline ``LogisticRegression``;
- ``DPRobustClassifier`` (groups = classes): worst-class accuracy on iris (150), wine
  (178), a 3-class ``make_classification`` (3,000) and the 10 digits; baseline
  ``LogisticRegression``;
- ``DPGroupFairRegressor`` (minimax loss): worst-group R^2 (1 - the worst group's MSE /
  var(y), what it optimises) on diabetes (442; groups = sex) and a ``make_regression``
  (3,000; 3 groups from two features); baseline ``LinearRegression``.

With ``--data-dir`` (``benchmarks/_data.py``'s public scalings; ``data_norm`` the
public bound): Adult (30,162 rows) for ``DPAUCMaximizer`` and for
``DPRobustClassifier`` with the 10 race x sex groups (worst-group accuracy; group
sizes released privately), and law school (race groups, 70/30 split) for
``DPGroupFairRegressor``.

    python benchmarks/estimator_defaults.py --epsilons 0.1 0.5 1 10 inf --seeds 5 \
        --data-dir ../shared/data
    python benchmarks/estimator_defaults.py --step-size auto --n-epochs 15   # the defaults before

``--large`` runs three larger generated AUC tasks instead (200,000 and 20,000 rows,
where a step's noise is small at every epsilon).

``--held-out`` runs six other tasks instead, not used to choose any default: AUC on
a 40-feature ``make_classification`` with 15% positives, digits odd against even and
wine class 0 against the rest; worst-class
accuracy on a 5-class ``make_classification`` (8% to 40% per class) and breast
cancer; the worst group's R^2 of ``make_friedman1`` in three bands of its first
feature. ``--auto-steps`` replaces ``n_epochs="auto"``'s cap on the number of steps
(what chose the cap of 8,000).
"""

import argparse
import math
import sys
import time
import warnings
from pathlib import Path

import numpy as np
from sklearn.datasets import (load_breast_cancer, load_diabetes, load_digits, load_iris,
                              load_wine, make_classification, make_regression)
from sklearn.linear_model import LinearRegression, LogisticRegression
from sklearn.metrics import roc_auc_score
from sklearn.model_selection import train_test_split
from sklearn.preprocessing import StandardScaler

sys.path.insert(0, str(Path(__file__).resolve().parent))
from _data import load_adult, load_law_school  # noqa: E402
from skdpminimax import DPAUCMaximizer, DPGroupFairRegressor, DPRobustClassifier  # noqa: E402
from skdpminimax.metrics import worst_group_accuracy, worst_group_loss  # noqa: E402


def _split(X, y, stratify=True):
    X_train, X_test, y_train, y_test = train_test_split(
        X, y, test_size=0.3, random_state=0, stratify=y if stratify else None)
    scaler = StandardScaler().fit(X_train)
    X_train, X_test = scaler.transform(X_train), scaler.transform(X_test)
    data_norm = float(math.ceil(np.linalg.norm(X_train, axis=1).max()))
    return X_train, X_test, y_train, y_test, data_norm


def _auc(model, X, y):
    return 100.0 * roc_auc_score(y, model.decision_function(X))


def _worst_class(model, X, y):  # groups = classes
    return 100.0 * worst_group_accuracy(y, model.predict(X), sensitive_features=y)


def _worst_group_r2(groups):
    # What the minimax-loss regressor optimises: its worst group's squared error,
    # as 1 - MSE_g / var(y) (higher is better, like R^2).
    def score(model, X, y):
        mse = worst_group_loss(y, model.predict(X), sensitive_features=groups(X))
        return 100.0 * (1.0 - mse / np.var(y))
    return score


def _make_auc(epsilon, seed, data_norm, y_train):
    return DPAUCMaximizer(epsilon=epsilon, delta=1e-5, data_norm=data_norm,
                          pos_ratio=float(np.mean(y_train)), random_state=seed)


def _make_robust(epsilon, seed, data_norm, y_train):
    # groups = classes, their frequencies declared public
    labels, counts = np.unique(y_train, return_counts=True)
    return DPRobustClassifier(epsilon=epsilon, delta=1e-5, data_norm=data_norm,
                              group_ratios=dict(zip(labels, counts / counts.sum())),
                              random_state=seed)


def tasks(data_dir=None):
    """(estimator, data, split, make(epsilon, seed, data_norm, y_train), score, baseline,
    groups(X) or None)."""
    X, y = load_breast_cancer(return_X_y=True)
    cancer = _split(X, y)
    X, y = load_digits(return_X_y=True)
    digits = _split(X, (y < 5).astype(int))

    for name, split in (("breast cancer", cancer), ("digits 0-4 vs 5-9", digits)):
        yield ("DPAUCMaximizer", name, split, _make_auc, _auc, LogisticRegression(max_iter=5000),
               None)

    for name, loader in (("iris", load_iris), ("wine", load_wine)):
        X, y = loader(return_X_y=True)
        yield ("DPRobustClassifier", name, _split(X, y), _make_robust, _worst_class,
               LogisticRegression(max_iter=5000), None)

    X, y = make_classification(n_samples=3000, n_features=20, n_informative=8, n_classes=3,
                               n_clusters_per_class=1, flip_y=0.05, random_state=0)
    yield ("DPRobustClassifier", "synthetic 3 classes", _split(X, y), _make_robust, _worst_class,
           LogisticRegression(max_iter=5000), None)
    X, y = load_digits(return_X_y=True)
    yield ("DPRobustClassifier", "digits 10 classes", _split(X, y), _make_robust, _worst_class,
           LogisticRegression(max_iter=5000), None)

    X, y = load_diabetes(return_X_y=True)
    diabetes = _split(X, y, stratify=False)

    def make_fair(epsilon, seed, data_norm, y_train):
        return DPGroupFairRegressor(epsilon=epsilon, delta=1e-5, data_norm=data_norm,
                                    bounds=(25.0, 346.0), random_state=seed)

    def sex(X):  # column 1 of the diabetes data, standardised
        return (X[:, 1] > 0).astype(int)

    yield ("DPGroupFairRegressor", "diabetes", diabetes, make_fair, _worst_group_r2(sex),
           LinearRegression(), sex)

    X, y = make_regression(n_samples=3000, n_features=20, n_informative=10, noise=30.0,
                           random_state=0)
    synth = _split(X, y, stratify=False)
    y_low, y_high = float(np.floor(synth[2].min())), float(np.ceil(synth[2].max()))

    def make_fair_synth(epsilon, seed, data_norm, y_train):
        return DPGroupFairRegressor(epsilon=epsilon, delta=1e-5, data_norm=data_norm,
                                    bounds=(y_low, y_high), random_state=seed)

    def first_sign(X):
        return (X[:, 0] > 0).astype(int) + (X[:, 1] > 1).astype(int)

    yield ("DPGroupFairRegressor", "synthetic 3 groups", synth, make_fair_synth,
           _worst_group_r2(first_sign),
           LinearRegression(), first_sign)

    if data_dir is None:
        return
    # Public scalings (benchmarks/_data.py), so data_norm is the public bound.
    Xa, ya, ga, Xa_test, ya_test, ga_test, norm_a = load_adult(data_dir / "adult")
    codes = {g: i for i, g in enumerate(sorted(set(ga)))}
    adult = (Xa, Xa_test, ya, ya_test, norm_a)
    yield ("DPAUCMaximizer", "adult", adult, _make_auc, _auc, LogisticRegression(max_iter=5000),
           None)

    def race_sex(X):  # the groups travel with the rows: look them up by position
        return np.array([codes[g] for g in (ga if X is Xa else ga_test)])

    def make_robust_adult(epsilon, seed, data_norm, y_train):
        return DPRobustClassifier(epsilon=epsilon, delta=1e-5, data_norm=data_norm,
                                  random_state=seed)

    def worst_group(model, X, y):
        return 100.0 * worst_group_accuracy(y, model.predict(X), sensitive_features=race_sex(X))

    yield ("DPRobustClassifier", "adult race x sex", adult, make_robust_adult, worst_group,
           LogisticRegression(max_iter=5000), race_sex)

    Xl, yl, rl = load_law_school(data_dir)
    race_codes = {g: i for i, g in enumerate(sorted(set(rl)))}
    idx_train, idx_test = train_test_split(np.arange(len(yl)), test_size=0.3, random_state=0)
    law = (Xl[idx_train], Xl[idx_test], yl[idx_train], yl[idx_test], float(np.sqrt(3.0)))
    race_train = np.array([race_codes[g] for g in rl[idx_train]])
    race_test = np.array([race_codes[g] for g in rl[idx_test]])

    def race(X):
        return race_train if len(X) == len(race_train) else race_test

    def make_fair_law(epsilon, seed, data_norm, y_train):
        return DPGroupFairRegressor(epsilon=epsilon, delta=1e-5, data_norm=data_norm,
                                    bounds=(-4.0, 4.0), random_state=seed)

    yield ("DPGroupFairRegressor", "law school (race)", law, make_fair_law, _worst_group_r2(race),
           LinearRegression(), race)


def held_out_tasks():
    """Tasks not used to choose any default (checked after the choice), same format."""
    from sklearn.datasets import make_friedman1

    X, y = make_classification(12000, 40, n_informative=12, weights=[0.85], flip_y=0.03,
                               random_state=4)
    yield ("DPAUCMaximizer", "synthetic d=40, 15% positive", _split(X, y), _make_auc, _auc,
           LogisticRegression(max_iter=5000), None)
    X, y = load_digits(return_X_y=True)
    yield ("DPAUCMaximizer", "digits odd vs even", _split(X, y % 2), _make_auc, _auc,
           LogisticRegression(max_iter=5000), None)
    X, y = load_wine(return_X_y=True)
    yield ("DPAUCMaximizer", "wine class 0 vs rest", _split(X, (y == 0).astype(int)), _make_auc,
           _auc, LogisticRegression(max_iter=5000), None)

    X, y = make_classification(n_samples=4000, n_features=30, n_informative=10, n_classes=5,
                               n_clusters_per_class=1, weights=[0.4, 0.25, 0.15, 0.12, 0.08],
                               flip_y=0.02, random_state=3)
    yield ("DPRobustClassifier", "synthetic 5 classes", _split(X, y), _make_robust, _worst_class,
           LogisticRegression(max_iter=5000), None)
    X, y = load_breast_cancer(return_X_y=True)
    yield ("DPRobustClassifier", "breast cancer", _split(X, y), _make_robust, _worst_class,
           LogisticRegression(max_iter=5000), None)

    X, y = make_friedman1(n_samples=3000, n_features=10, noise=1.0, random_state=0)
    friedman = _split(X, y, stratify=False)

    def make_fair(epsilon, seed, data_norm, y_train):
        return DPGroupFairRegressor(epsilon=epsilon, delta=1e-5, data_norm=data_norm,
                                    bounds=(-5.0, 35.0), random_state=seed)

    def thirds(X):  # standardised first feature in three bands
        return np.digitize(X[:, 0], [-0.5, 0.5])

    yield ("DPGroupFairRegressor", "friedman1 (3 bands)", friedman, make_fair,
           _worst_group_r2(thirds), LinearRegression(), thirds)


def large_tasks():
    """Larger generated data (``--large``): where a step's noise is small at every
    epsilon, so a clip below the gradients is pure bias (what chose the linear AUC
    objective's ``clip_w="auto_if_quiet"``, and checks it). Same format."""
    for name, n, d, informative, weights, seed in (
            ("200k x 20, 10% positive", 200_000, 20, 5, [0.9], 0),
            ("20k x 30, 10% positive", 20_000, 30, 8, [0.9], 1),
            ("20k x 30, balanced", 20_000, 30, 8, None, 2)):
        X, y = make_classification(n, d, n_informative=informative, weights=weights,
                                   random_state=seed)
        yield ("DPAUCMaximizer", name, _split(X, y), _make_auc, _auc,
               LogisticRegression(max_iter=5000), None)


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--epsilons", type=float, nargs="+", default=[1.0, 10.0, math.inf])
    parser.add_argument("--seeds", type=int, default=3)
    parser.add_argument("--step-size", default=None,
                        type=lambda v: v if v in ("auto", "scaled") else float(v),
                        help="replace the default solver's step ('scaled') by this one")
    parser.add_argument("--data-dir", type=Path, default=None,
                        help="adds Adult and law school (benchmarks/_data.py) from this directory")
    parser.add_argument("--only", nargs="+", default=None, help="data names to run")
    parser.add_argument("--clip-w", default=None,
                        type=lambda v: v if v in ("auto", "scaled", "auto_if_quiet") else float(v),
                        help="replace the default solver's clip_w by this one")
    parser.add_argument("--n-epochs", default=None,
                        type=lambda v: v if v == "auto" else float(v),
                        help="replace the default solver's n_epochs by this one")
    parser.add_argument("--n-samples-budget", default=None,
                        type=lambda v: v if v == "public" else float(v),
                        help="replace the estimators' n_samples_budget (share of epsilon "
                             "for the private count, or 'public')")
    parser.add_argument("--held-out", action="store_true",
                        help="run the tasks not used to choose any default instead")
    parser.add_argument("--large", action="store_true",
                        help="run the larger generated AUC tasks instead")
    parser.add_argument("--auto-steps", type=int, default=None,
                        help="diagnosis: replace n_epochs='auto''s cap on the number of "
                             "steps (a private constant of skdpminimax.solvers.sgda)")
    args = parser.parse_args()
    if args.auto_steps is not None:
        import skdpminimax.solvers.sgda as sgda
        sgda._AUTO_TARGET_STEPS = args.auto_steps
    warnings.filterwarnings("ignore")  # PrivacyLeakWarning etc.: a diagnosis, not a release
    start = time.perf_counter()
    eps_cols = " | ".join(f"epsilon = {e:g}" for e in args.epsilons)
    print(f"| estimator | data | score | non-private baseline | {eps_cols} | n_iter_ per epsilon |")
    print("|---|---|---|---|" + "---|" * len(args.epsilons) + "---|")
    for estimator, data, split, make, score, baseline, groups in (
            large_tasks() if args.large else
            held_out_tasks() if args.held_out else tasks(args.data_dir)):
        if args.only and data not in args.only:
            continue
        X_train, X_test, y_train, y_test, data_norm = split
        base = score(baseline.fit(X_train, y_train), X_test, y_test)
        cells, n_iters = [], []
        for epsilon in args.epsilons:
            scores = []
            for seed in range(args.seeds):
                model = make(epsilon, seed, data_norm, y_train)
                if any(v is not None for v in (args.step_size, args.n_epochs, args.clip_w)):
                    # the estimator's own default solver, with only these replaced
                    solver = model._resolve_solver()
                    if args.step_size is not None:
                        solver.set_params(step_size=args.step_size)
                    if args.n_epochs is not None:
                        solver.set_params(n_epochs=args.n_epochs)
                    if args.clip_w is not None:
                        solver.set_params(clip_w=args.clip_w)
                    model.set_params(solver=solver)
                if args.n_samples_budget is not None:
                    model.set_params(n_samples_budget=args.n_samples_budget)
                kwargs = {} if groups is None else {"sensitive_features": groups(X_train)}
                model.fit(X_train, y_train, **kwargs)
                scores.append(score(model, X_test, y_test))
                n_iter = model.n_iter_  # the last seed's: the planning size is a private count
            cells.append(f"{np.mean(scores):.1f}")
            n_iters.append(str(n_iter))
        metric = {"DPAUCMaximizer": "AUC %", "DPRobustClassifier": "worst-group accuracy %",
                  "DPGroupFairRegressor": "worst-group R^2 %"}[estimator]
        print(f"| {estimator} | {data} | {metric} | {base:.1f} | " + " | ".join(cells)
              + f" | {' / '.join(n_iters)} |", flush=True)
    print(f"\n{time.perf_counter() - start:.0f} s")


if __name__ == "__main__":
    main()
