"""Solver-engine benchmark (issue 3): population strong gap and cost versus n.

For every solver registered in :data:`skdpminimax.solvers.SOLVERS` (so solvers merged
later are included), on

* ``game``: a synthetic SC-SC quadratic game whose data term is linear in the data,
  so the population objective is the objective on the single row of population
  means: its strong gap is computed exactly (certified interval, upper end shown);
* ``auc``: the square-loss AUC objective (``l2_reg=0.1``) on two Gaussian classes,
  with the population gap estimated on a held-out sample (plug-in, conservative),

it reports the strong gap, the primal part ``P(w) - Phi*`` (the only part the
convex-strongly-concave phased variant guarantees: it releases a data-free ``v``), gradient evaluations and wall time for each ``n`` and
``epsilon``, the fitted log-log slopes of gap and time against ``n``, and the
theoretical slope where the theory states one (SC-SC output perturbation, seed 004
Thm. 4.4: gap ``1/(mu n) + d log(1/delta)/(mu n^2 eps^2)``, i.e. between -1 and -2;
phased C-SC, Cor. 4.9: primal part ``~ 1/sqrt(n) + sqrt(d)/(n eps)`` up to logs).

Run ``python benchmarks/solvers.py --quick`` (n in 1e3..1e4) or without ``--quick``
(n in 1e3..1e5). No data files are needed.
"""

import argparse
import time

import numpy as np

from skdpminimax.metrics import duality_gap
from skdpminimax.objectives.auc import SquareLossAUC
from skdpminimax.objectives.base import SaddleData, SaddleObjective
from skdpminimax.privacy import PrivacyBudget
from skdpminimax.sets import L2Ball
from skdpminimax.solvers import SOLVERS, Extragradient


class QuadraticGame(SaddleObjective):
    """``<w, a> + w^T M v - <v, b> + mu/2 ||w||^2 - mu/2 ||v||^2`` on balls; rows ``(a, b)``."""

    def __init__(self, M, mu=1.0, radius=3.0):
        self.M, self.mu, self.radius = np.asarray(M, float), float(mu), float(radius)
        self.dw, self.dv = self.M.shape
        self.primal_set, self.dual_set = L2Ball(radius), L2Ball(radius)

    def init_params(self, rng=None):
        return np.zeros(self.dw), np.zeros(self.dv)

    def per_example_values(self, w, v, data):
        a, b = data.X[:, : self.dw], data.X[:, self.dw:]
        return a @ w + w @ self.M @ v - b @ v

    def per_example_grads(self, w, v, data):
        a, b = data.X[:, : self.dw], data.X[:, self.dw:]
        return a + self.M @ v, -b + self.M.T @ w

    def reg_value(self, w, v):
        return 0.5 * self.mu * (float(w @ w) - float(v @ v))

    def reg_grad(self, w, v):
        return self.mu * w, -self.mu * v

    def lipschitz(self):
        g = 1.0 + np.linalg.norm(self.M, 2) * self.radius  # rows have ||a||, ||b|| <= 1
        return g, g

    def smoothness(self):
        return float(np.linalg.norm(self.M, 2)) + self.mu

    def strong_convexity(self):
        return self.mu, self.mu


def game_problem(n, rng, d=5):
    M = np.random.default_rng(123).standard_normal((d, d)) / np.sqrt(d)
    ma, mb = np.random.default_rng(7).uniform(-1, 1, (2, d))
    mean = 0.5 * np.r_[ma / np.linalg.norm(ma), mb / np.linalg.norm(mb)]
    # symmetric bounded noise: ||row block|| <= 0.5 + 0.5, population mean exactly `mean`
    X = mean + 0.5 * rng.choice([-1.0, 1.0], size=(n, 2 * d)) / np.sqrt(d)
    objective = QuadraticGame(M)
    return objective, SaddleData(X), SaddleData(mean[None, :])


def auc_problem(n, rng, d=5, n_test=20_000):
    shift = np.ones(d) / np.sqrt(d)

    def sample(m):
        y = np.where(rng.random(m) < 0.5, 1.0, -1.0)
        X = rng.standard_normal((m, d)) * 0.5 + 0.5 * y[:, None] * shift
        norms = np.linalg.norm(X, axis=1, keepdims=True)
        X *= np.minimum(1.0, 2.0 / norms)  # public data_norm = 2
        return SaddleData(X, y)

    objective = SquareLossAUC(d, pos_ratio=0.5, data_norm=2.0, radius=2.0, l2_reg=0.1)
    return objective, sample(n), sample(n_test)


# Theoretical slope in n of what each solver's theory bounds (others: none stated here).
THEORY = {
    "output_perturbation": "gap -1..-2 (T4.4)",
    "phased_output_perturbation": "primal -1/2..-1 (C4.9)",
}


def slope(xs, ys):
    xs, ys = np.log(np.asarray(xs, float)), np.log(np.maximum(np.asarray(ys, float), 1e-300))
    return float(np.polyfit(xs, ys, 1)[0])


def saddle_value(objective, data):
    """Population saddle value (certified solve of the SC-SC population objective)."""
    sol = Extragradient().solve_saddle(objective, data, 1e-9)
    return objective.value(sol.w, sol.v, data)


def run(ns, epsilons, problems, seed=0, delta=1e-6, solvers=None):
    rows = []
    names = sorted(SOLVERS) if solvers is None else solvers
    for problem in problems:
        make = game_problem if problem == "game" else auc_problem
        for name in names:
            for eps in epsilons:
                gaps, primal, times, evals = [], [], [], []
                for n in ns:
                    rng = np.random.default_rng(seed)
                    objective, data, test = make(n, rng)
                    solver = SOLVERS[name]()
                    t0 = time.perf_counter()
                    try:
                        res = solver.solve(objective, data, PrivacyBudget(eps, delta),
                                           np.random.default_rng(seed + 1))
                    except (ValueError, RuntimeError) as exc:  # e.g. needs SC-SC
                        print(f"{problem:5s} {name:28s} eps={eps:<4g} n={n:<7d} skipped: {exc}")
                        break
                    times.append(time.perf_counter() - t0)
                    evals.append(res.n_grad_evals)
                    gap = duality_gap(objective, test, res.w, res.v, tol=1e-7, max_iter=2000)
                    gaps.append(gap.upper)
                    primal.append(gap.primal[1] - saddle_value(objective, test))
                    print(f"{problem:5s} {name:28s} eps={eps:<4g} n={n:<7d} gap={gaps[-1]:.3e} "
                          f"primal={primal[-1]:.3e} "
                          f"grad_evals={evals[-1]:<10d} time={times[-1]:.2f}s", flush=True)
                if len(gaps) == len(ns):
                    rows.append((problem, name, eps, slope(ns, gaps), slope(ns, primal),
                                 slope(ns, times), slope(ns, evals)))
    print("\nproblem solver                       eps   gap-slope  primal-slope  "
          "theory                   time-exp  evals-exp")
    for problem, name, eps, gs, ps, ts, es in rows:
        print(f"{problem:7s} {name:28s} {eps:<5g} {gs:9.2f}  {ps:12.2f}  "
              f"{THEORY.get(name, '-'):23s}  {ts:8.2f}  {es:9.2f}")
    return rows


def main(argv=None):
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--quick", action="store_true", help="n in {1e3, 3e3, 1e4}")
    parser.add_argument("--problems", nargs="+", default=["game", "auc"])
    parser.add_argument("--epsilons", nargs="+", type=float, default=[0.5, 1.0, 4.0])
    parser.add_argument("--solvers", nargs="+", default=None,
                        help="registered names (default: all of SOLVERS)")
    parser.add_argument("--ns", nargs="+", type=int, default=None)
    parser.add_argument("--seed", type=int, default=0)
    args = parser.parse_args(argv)
    ns = [1000, 3000, 10_000] if args.quick else [1000, 3000, 10_000, 30_000, 100_000]
    run(args.ns or ns, args.epsilons, args.problems, args.seed, solvers=args.solvers)


if __name__ == "__main__":
    main()
