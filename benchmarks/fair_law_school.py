"""Group-fair regression on the law-school data (target ZFYA, groups = race) vs epsilon.

Reports worst-group test MSE, overall MSE and the demographic-parity gap
(max - min group mean prediction) of DPGroupFairRegressor (constraint
"minimax_loss" and "demographic_parity"), next to non-private Ridge, the
non-private exact solutions (SLSQP on the max of group MSEs / the constrained
least squares) and fairlearn's
ExponentiatedGradient(BoundedGroupLoss) when fairlearn is importable.
dual_reg (and, for parity, the dual step size) are chosen at epsilon=1 on a
validation split carved from the training data (non-private tuning, _tuning.py);
the rows "demographic_parity defaults" are the estimator with its defaults
(solver="sgda", dual_reg="auto"), untuned.

    SKDPMINIMAX_DATA=/path/to/data python benchmarks/fair_law_school.py [--quick]
"""

import argparse
import sys
import time
import warnings
from pathlib import Path

import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))
sys.path.insert(0, str(Path(__file__).resolve().parent))

from _data import data_dir, load_law_school  # noqa: E402
from _tuning import grid, select, validation_split  # noqa: E402
from diffprivlib.accountant import BudgetAccountant  # noqa: E402
from scipy.optimize import minimize  # noqa: E402
from sklearn.linear_model import Ridge  # noqa: E402
from sklearn.metrics import mean_squared_error  # noqa: E402
from sklearn.model_selection import train_test_split  # noqa: E402

from skdpminimax import DPGroupFairRegressor  # noqa: E402
from skdpminimax.metrics import demographic_parity_gap, worst_group_loss  # noqa: E402
from skdpminimax.solvers import NoisySGDA  # noqa: E402

BOUNDS = (-4.0, 4.0)  # public: ZFYA is a z-score
DATA_NORM = float(np.sqrt(3.0))  # public: LSAT/48, UGPA/4.2 and sex in [0, 1]
TOLERANCE = 0.05  # demographic-parity tolerance (units of ZFYA)
# clip_v="auto": the objectives' typical dual norms (public bounds, 1/sqrt(pi_min)).
SOLVER = dict(batch_size=1024, n_epochs=30, step_size=0.5, clip_w=2.0, clip_v="auto",
              noise_allocation=0.3, average="tail")
# Candidates: dual_reg for the estimator, the rest overrides SOLVER.
GRIDS = {"minimax_loss": grid(dual_reg=[0.3, 1.0, 3.0], dual_step_size=[0.1]),
         # Multipliers: weakly regularised and fast, so that they can enforce the
         # constraint; they oscillate, so larger batches and the average of all iterates.
         "demographic_parity": grid(dual_reg=[0.001, 0.01], dual_step_size=[3.0, 10.0, 30.0],
                                    batch_size=[4096], average=["uniform"])}
VALIDATION_SEEDS = (0, 1, 2)


def _augment(X):
    return np.column_stack([X, np.ones(len(X))])


def exact_minimax(X, y, codes):
    """Non-private reference: min_w max_k MSE_k(w) by SLSQP on the epigraph."""
    Xa, counts = _augment(X), np.bincount(codes)

    def risks(w):
        return np.bincount(codes, weights=(Xa @ w - y) ** 2) / counts

    z0 = np.r_[np.zeros(Xa.shape[1]), 10.0]
    res = minimize(lambda z: z[-1], z0, method="SLSQP",
                   constraints=[{"type": "ineq", "fun": lambda z: z[-1] - risks(z[:-1])}],
                   options={"maxiter": 1000, "ftol": 1e-12})
    return res.x[:-1]


def exact_parity(X, y, codes, tolerance):
    """Non-private reference: least squares s.t. |E[h|a] - E[h]| <= tolerance (SLSQP)."""
    Xa, counts = _augment(X), np.bincount(codes)

    def gaps(w):
        h = Xa @ w
        return np.bincount(codes, weights=h) / counts - h.mean()

    res = minimize(lambda w: np.mean((Xa @ w - y) ** 2), np.zeros(Xa.shape[1]), method="SLSQP",
                   constraints=[{"type": "ineq", "fun": lambda w: tolerance - gaps(w)},
                                {"type": "ineq", "fun": lambda w: tolerance + gaps(w)}],
                   options={"maxiter": 1000, "ftol": 1e-12})
    return res.x


def main():
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--data-dir")
    parser.add_argument("--quick", action="store_true", help="epsilon in {1, 8}, 2 seeds")
    args = parser.parse_args()
    warnings.simplefilter("ignore")

    X, y, race = load_law_school(data_dir(args.data_dir))
    X, X_test, y, y_test, g, g_test = train_test_split(X, y, race, test_size=0.2, random_state=0,
                                                       stratify=race)
    y = np.clip(y, *BOUNDS)
    codes = np.unique(g, return_inverse=True)[1]
    epsilons = [1.0, 8.0] if args.quick else [0.5, 1.0, 2.0, 8.0]
    seeds = range(2 if args.quick else 5)
    print(f"law school: n_train={len(y)}, n_test={len(y_test)}, groups={len(np.unique(g))}")

    def evaluate(predict):
        pred = predict(X_test)
        return (worst_group_loss(y_test, pred, sensitive_features=g_test),
                mean_squared_error(y_test, pred),
                demographic_parity_gap(pred, sensitive_features=g_test),
                worst_group_loss(y, predict(X), sensitive_features=g))

    def show(name, s, sd=None):
        sd = np.zeros(4) if sd is None else sd
        print(f"{name:<46} | " + " | ".join(f"{m:.4f} +- {e:.4f}" for m, e in zip(s, sd)))

    print(f"{'model':<46} | {'test worst-group MSE':>16} | {'test MSE':>16} | "
          f"{'test DP gap':>16} | {'train worst-grp MSE':>16}")
    show("Ridge (non-private)", evaluate(Ridge(alpha=1.0).fit(X, y).predict))
    w_minimax = exact_minimax(X, y, codes)
    show("minimax loss, non-private exact (SLSQP)", evaluate(lambda A: _augment(A) @ w_minimax))
    w_parity = exact_parity(X, y, codes, TOLERANCE)
    show(f"parity <= {TOLERANCE}, non-private exact (SLSQP)",
         evaluate(lambda A: _augment(A) @ w_parity))
    try:
        from fairlearn.reductions import BoundedGroupLoss, ExponentiatedGradient, SquareLoss

        bound = float(np.max(np.bincount(codes, weights=(_augment(X) @ w_minimax - y) ** 2)
                             / np.bincount(codes)))
        eg = ExponentiatedGradient(Ridge(alpha=1.0), BoundedGroupLoss(
            SquareLoss(*BOUNDS), upper_bound=1.05 * bound))
        eg.fit(X, y, sensitive_features=g)
        show("fairlearn EG(BoundedGroupLoss), non-private",
             evaluate(lambda A: eg.predict(A, random_state=0)))
    except ImportError:
        print("fairlearn not importable: skipped (pip install skdpminimax[benchmarks])")

    def model(epsilon, constraint, params, seed, accountant=None):
        # params None: the estimator's defaults (solver="sgda", dual_reg="auto")
        solver = ("sgda" if params is None else
                  NoisySGDA(**{**SOLVER, **{k: v for k, v in params.items() if k != "dual_reg"}}))
        return DPGroupFairRegressor(epsilon=epsilon, constraint=constraint, bounds=BOUNDS,
                                    data_norm=DATA_NORM,
                                    dual_reg="auto" if params is None else params["dual_reg"],
                                    tolerance=TOLERANCE, multiplier_bound=20.0, solver=solver,
                                    accountant=accountant, random_state=seed,
                                    n_samples_budget="public")  # split sizes: public

    # ---- non-private tuning on a validation split of the training data ----------
    X_fit, X_val, y_fit, y_val, g_fit, g_val = validation_split(X, y, g)

    def val_score(constraint):
        def score(params, seed):
            pred = model(1.0, constraint, params, seed).fit(
                X_fit, y_fit, sensitive_features=g_fit).predict(X_val)
            if constraint == "minimax_loss":
                return worst_group_loss(y_val, pred, sensitive_features=g_val)
            # feasible first (gap within tolerance), then the smaller MSE
            gap = demographic_parity_gap(pred, sensitive_features=g_val)
            return (max(gap - TOLERANCE, 0.0), mean_squared_error(y_val, pred))
        return score

    best = {}
    for constraint, candidates in GRIDS.items():
        best[constraint] = select(candidates, val_score(constraint), seeds=VALIDATION_SEEDS)
        print(f"selected for {constraint} at epsilon=1 on validation: {best[constraint]}")

    accountant = BudgetAccountant()  # a ledger for the benchmark only
    for epsilon in epsilons:
        runs = [(c, best[c], "") for c in ("minimax_loss", "demographic_parity")]
        runs.append(("demographic_parity", None, " defaults"))
        for constraint, params, label in runs:
            scores, t0 = [], time.time()
            for seed in seeds:
                fitted = model(epsilon, constraint, params, seed, accountant).fit(
                    X, y, sensitive_features=g)
                scores.append(evaluate(fitted.predict))
            s = np.array(scores)
            show(f"{constraint}{label}, eps={epsilon} ({(time.time() - t0) / len(s):.1f}s/fit)",
                 s.mean(axis=0), s.std(axis=0))


if __name__ == "__main__":
    main()
