"""DPRobustClassifier on a rare class (the groups are the classes): worst-class accuracy.

``make_classification`` with 3% positives (``--n-features`` features, 5 informative,
1% label noise), 2,000 or 20,000 training rows (``--rows``; 30% held out, stratified),
standardised, ``data_norm=8``, the default solver with ``--clip-w`` replacing its primal
clip; mean over 3 seeds. Beside it, two references: the same private estimator held at
``q = pi`` (``dual_center="ratios"``, ``dual_reg=1e6``: private empirical risk
minimisation with the same solver and budget) and scikit-learn's non-private
``LogisticRegression``::

    python benchmarks/robust_imbalance.py                 # the default, clip_w="auto_if_quiet"
    python benchmarks/robust_imbalance.py --clip-w 1.0    # the generic clip (the default before)
    python benchmarks/robust_imbalance.py --n-features 20 --rows 4200 --epsilons 0.5 1 2 4 inf
"""

import argparse
import warnings

import numpy as np
from diffprivlib import BudgetAccountant
from sklearn.datasets import make_classification
from sklearn.linear_model import LogisticRegression
from sklearn.model_selection import train_test_split
from sklearn.preprocessing import StandardScaler

from skdpminimax import DPRobustClassifier
from skdpminimax.estimators._groups import GROUP_SGDA_DEFAULTS
from skdpminimax.solvers import NoisySGDA


def _worst_class_accuracy(pred, y):
    return min(np.mean(pred[y == k] == k) for k in (0, 1))


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--clip-w", default=None, help="a number or a rule name")
    parser.add_argument("--seeds", type=int, default=3)
    parser.add_argument("--n-features", type=int, default=10)
    parser.add_argument("--rows", type=int, nargs="+", default=[2000, 20000])
    parser.add_argument("--epsilons", type=float, nargs="+", default=[1.0, 3.0, 10.0, np.inf])
    args = parser.parse_args()
    warnings.simplefilter("ignore")
    settings = dict(GROUP_SGDA_DEFAULTS)
    if args.clip_w is not None:
        try:
            settings["clip_w"] = float(args.clip_w)
        except ValueError:
            settings["clip_w"] = args.clip_w
    print(f"clip_w={settings['clip_w']!r}, {args.n_features} features")
    print("| training rows (positives) | epsilon | worst-class accuracy | private ERM, q = pi "
          "| non-private LR | clip_w used (last seed) |")
    print("|---|---|---|---|---|---|")
    for n in args.rows:
        X, y = make_classification(n_samples=int(n / 0.7), n_features=args.n_features,
                                   n_informative=5, weights=[0.97, 0.03], flip_y=0.01,
                                   random_state=0)
        X_tr, X_te, y_tr, y_te = train_test_split(X, y, test_size=0.3, random_state=0,
                                                  stratify=y)
        scaler = StandardScaler().fit(X_tr)
        X_tr, X_te = scaler.transform(X_tr), scaler.transform(X_te)
        reference = _worst_class_accuracy(LogisticRegression().fit(X_tr, y_tr).predict(X_te),
                                          y_te)
        for eps in args.epsilons:
            worst, erm = [], []
            for seed in range(args.seeds):
                common = dict(epsilon=eps, data_norm=8.0, random_state=seed)
                est = DPRobustClassifier(**common, solver=NoisySGDA(**settings),
                                         accountant=BudgetAccountant()).fit(X_tr, y_tr)
                worst.append(_worst_class_accuracy(est.predict(X_te), y_te))
                plain = DPRobustClassifier(**common, dual_center="ratios", dual_reg=1e6,
                                           solver=NoisySGDA(**settings),
                                           accountant=BudgetAccountant()).fit(X_tr, y_tr)
                erm.append(_worst_class_accuracy(plain.predict(X_te), y_te))
            print(f"| {len(y_tr)} ({int(y_tr.sum())}) | {eps:g} | {np.mean(worst):.3f} | "
                  f"{np.mean(erm):.3f} | {reference:.3f} | {est.solver_info_['clip_w']:.3g} |")


if __name__ == "__main__":
    main()
