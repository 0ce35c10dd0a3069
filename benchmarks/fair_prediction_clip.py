"""``DPGroupFairRegressor(clip_predictions=...)``: test R^2 with and without clipping
the predictions to the public target bounds.

Diabetes (ships with scikit-learn; 442 rows, rows scaled to norm <= 1, bounds (25, 346)
public, the second feature's sign as the group), 70/30 splits over seeds, each solver,
constraint and epsilon; the same fitted model scored both ways (clipping is applied in
``predict`` only, so the two columns share the fit and its noise).

    python benchmarks/fair_prediction_clip.py --seeds 5
"""

import argparse
import warnings

import numpy as np
from sklearn.datasets import load_diabetes
from sklearn.metrics import r2_score
from sklearn.model_selection import train_test_split

from skdpminimax import DPGroupFairRegressor


def main(argv=None):
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--seeds", type=int, default=5)
    parser.add_argument("--epsilons", nargs="+", type=float, default=[0.1, 1.0, 10.0])
    parser.add_argument("--solvers", nargs="+", default=["sgda", "output_perturbation"])
    args = parser.parse_args(argv)
    X, y = load_diabetes(return_X_y=True)
    groups = (X[:, 1] > 0).astype(int)
    X = X / np.linalg.norm(X, axis=1).max()  # a fixed rescaling: the benchmark's public bound
    print("| solver | constraint | epsilon | R^2 clipped | R^2 unclipped |")
    print("|---|---|---|---|---|")
    for solver in args.solvers:
        for constraint in ("minimax_loss", "demographic_parity"):
            for eps in args.epsilons:
                scores = {True: [], False: []}
                for seed in range(args.seeds):
                    split = train_test_split(X, y, groups, test_size=0.3, random_state=seed)
                    X_tr, X_te, y_tr, y_te, g_tr, _ = split
                    est = DPGroupFairRegressor(epsilon=eps, bounds=(25, 346), data_norm=1.0,
                                               constraint=constraint, tolerance=10.0,
                                               solver=solver, random_state=seed)
                    with warnings.catch_warnings():
                        warnings.simplefilter("ignore")
                        est.fit(X_tr, y_tr, sensitive_features=g_tr)
                    for clip in (True, False):
                        est.set_params(clip_predictions=clip)
                        scores[clip].append(r2_score(y_te, est.predict(X_te)))
                print(f"| {solver} | {constraint} | {eps:g} | {np.mean(scores[True]):.3f} | "
                      f"{np.mean(scores[False]):.3f} |", flush=True)


if __name__ == "__main__":
    main()
