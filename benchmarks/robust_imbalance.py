"""DPRobustClassifier on a rare class (the groups are the classes): worst-class accuracy.

``make_classification`` with 3% positives (10 features, 5 informative, 1% label noise),
2,000 or 20,000 training rows (30% held out, stratified), standardised, ``data_norm=8``,
the default solver with ``--clip-w`` replacing its primal clip; mean over 3 seeds::

    python benchmarks/robust_imbalance.py                 # the default, clip_w="auto_if_quiet"
    python benchmarks/robust_imbalance.py --clip-w 1.0    # the generic clip (the default before)
"""

import argparse
import warnings

import numpy as np
from diffprivlib import BudgetAccountant
from sklearn.datasets import make_classification
from sklearn.model_selection import train_test_split
from sklearn.preprocessing import StandardScaler

from skdpminimax import DPRobustClassifier
from skdpminimax.estimators._groups import GROUP_SGDA_DEFAULTS
from skdpminimax.solvers import NoisySGDA


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--clip-w", default=None, help="a number or a rule name")
    parser.add_argument("--seeds", type=int, default=3)
    args = parser.parse_args()
    warnings.simplefilter("ignore")
    settings = dict(GROUP_SGDA_DEFAULTS)
    if args.clip_w is not None:
        try:
            settings["clip_w"] = float(args.clip_w)
        except ValueError:
            settings["clip_w"] = args.clip_w
    print(f"clip_w={settings['clip_w']!r}")
    print("| training rows | epsilon | worst-class accuracy | clip_w used (last seed) |")
    print("|---|---|---|---|")
    for n in (2000, 20000):
        X, y = make_classification(n_samples=int(n / 0.7), n_features=10, n_informative=5,
                                   weights=[0.97, 0.03], flip_y=0.01, random_state=0)
        X_tr, X_te, y_tr, y_te = train_test_split(X, y, test_size=0.3, random_state=0,
                                                  stratify=y)
        scaler = StandardScaler().fit(X_tr)
        X_tr, X_te = scaler.transform(X_tr), scaler.transform(X_te)
        for eps in (1.0, 3.0, 10.0, np.inf):
            worst = []
            for seed in range(args.seeds):
                est = DPRobustClassifier(epsilon=eps, data_norm=8.0, random_state=seed,
                                         solver=NoisySGDA(**settings),
                                         accountant=BudgetAccountant()).fit(X_tr, y_tr)
                pred = est.predict(X_te)
                worst.append(min(np.mean(pred[y_te == k] == k) for k in (0, 1)))
            print(f"| {n} | {eps:g} | {np.mean(worst):.3f} | {est.solver_info_['clip_w']:.3g} |")


if __name__ == "__main__":
    main()
