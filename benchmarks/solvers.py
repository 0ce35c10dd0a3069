"""Solver-engine benchmark (issue 3): population strong gap and cost versus n.

For every solver registered in :data:`skdpminimax.solvers.SOLVERS` (so solvers merged
later are included), on

* ``game``: a synthetic SC-SC quadratic game whose data term is linear in the data,
  so the population objective is the objective on the single row of population
  means: its strong gap is computed exactly (certified interval, upper end shown);
* ``auc``: the square-loss AUC objective (``l2_reg=0.1``) on two Gaussian classes; its
  data term is quadratic in ``x`` per class, so the population objective is the
  objective on rows matching the population's class moments (:func:`auc_population`),

it reports, over several seeds, the strong gap, the primal part ``P(w) - Phi*`` (the only
part the convex-strongly-concave phased variant guarantees: it releases a data-free
``v``), gradient evaluations, CPU (``time.process_time``) and wall time for each ``n``
and ``epsilon``; the fitted log-log slopes (with standard errors) against ``n``; and,
next to each slope, the exponent of the solver's theorem over the same ``n`` grid with a
within-0.15 verdict (:mod:`_theory`). With ``--epsilons inf`` runs of output
perturbation in the records it also fits the privacy term ``gap(eps) - gap(inf)`` alone.

Run ``python benchmarks/solvers.py --quick`` (n in 1e3..1e4, one seed) or without
``--quick`` (n in 1e3..1e5, three seeds); ``--out`` appends JSON records and
``--summarize FILE`` prints the tables from them. No data files are needed.
"""

import argparse
import functools
import json
import math
import time

import numpy as np

from skdpminimax.metrics import duality_gap
from skdpminimax.objectives.auc import SquareLossAUC
from skdpminimax.objectives.base import SaddleData, SaddleObjective
from skdpminimax.privacy import PrivacyBudget
from skdpminimax.sets import L2Ball
from skdpminimax.solvers import SOLVERS, Extragradient

try:  # run as a script (benchmarks/ on sys.path) or imported as benchmarks.solvers
    from _theory import PRIVACY_EXPONENT, THEORY, regime_exponent, verdict
except ImportError:
    from benchmarks._theory import PRIVACY_EXPONENT, THEORY, regime_exponent, verdict


class QuadraticGame(SaddleObjective):
    """``<w, a> + w^T M v - <v, b> + mu/2 ||w||^2 - mu/2 ||v||^2`` on balls; rows ``(a, b)``."""

    certified_constants = True  # the bounds below are proved from the rows' norms and radii

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


def _auc_sample(m, rng, d):
    shift = np.ones(d) / np.sqrt(d)
    y = np.where(rng.random(m) < 0.5, 1.0, -1.0)
    X = rng.standard_normal((m, d)) * 0.5 + 0.5 * y[:, None] * shift
    norms = np.linalg.norm(X, axis=1, keepdims=True)
    X *= np.minimum(1.0, 2.0 / norms)  # public data_norm = 2
    return X, y


@functools.lru_cache(maxsize=4)
def auc_population(d=5, n_draws=4_000_000):
    """Rows whose class-conditional means and covariances equal the population's.

    The square-loss AUC data term is quadratic in ``x`` within each class and the
    objective fixes ``pos_ratio = 0.5``, so the average over these ``2 d`` rows per class
    (``mean +- sqrt(d) C^(1/2) e_j``) is the population objective. The moments come
    from ``n_draws`` draws (a fixed seed): relative error about ``1/sqrt(n_draws)``,
    far below the estimation error of any ``n <= 1e5`` run.
    """
    X, y = _auc_sample(n_draws, np.random.default_rng(2**31 - 1), d)
    rows, labels = [], []
    for label in (1.0, -1.0):
        Z = X[y == label]
        mean, root = Z.mean(axis=0), np.linalg.cholesky(np.cov(Z, rowvar=False, bias=True))
        for sign in (1.0, -1.0):
            rows.append(mean + sign * np.sqrt(d) * root.T)  # row j: mean +- sqrt(d) L[:, j]
            labels.append(np.full(d, label))
    return SaddleData(np.vstack(rows), np.concatenate(labels))


def auc_problem(n, rng, d=5, n_test=None):
    """Training sample of size ``n``; test = exact-moment population rows (``n_test=None``)
    or a held-out sample of ``n_test`` rows."""
    objective = SquareLossAUC(d, pos_ratio=0.5, data_norm=2.0, radius=2.0, l2_reg=0.1)
    train = SaddleData(*_auc_sample(n, rng, d))
    test = auc_population(d) if n_test is None else SaddleData(*_auc_sample(n_test, rng, d))
    return objective, train, test


def fit_slope(xs, ys):
    """Least-squares slope of ``log y`` on ``log x`` and its standard error."""
    x, y = np.log(np.asarray(xs, float)), np.log(np.maximum(np.asarray(ys, float), 1e-300))
    if len(set(x)) < 2:
        return float("nan"), float("nan")
    coef, res = np.polyfit(x, y, 1), None
    res = y - np.polyval(coef, x)
    dof = len(x) - 2
    se = math.sqrt(res @ res / dof / ((x - x.mean()) @ (x - x.mean()))) if dof > 0 else float("nan")
    return float(coef[0]), se


class _SaddleValues:
    """Population saddle value per test set (certified solve), cached: game's is fixed."""

    def __init__(self):
        self.cache = {}

    def __call__(self, key, objective, data):
        if key not in self.cache:
            sol = Extragradient().solve_saddle(objective, data, 1e-9)
            self.cache[key] = objective.value(sol.w, sol.v, data)
        return self.cache[key]


def run(ns, epsilons, problems, seeds=(0,), delta=1e-6, solvers=None, out=None):
    """Run every (problem, solver, epsilon, n, seed); return one record per run."""
    names = sorted(SOLVERS) if solvers is None else solvers
    records, saddle = [], _SaddleValues()
    sink = open(out, "a") if out else None
    for problem in problems:
        make = game_problem if problem == "game" else auc_problem
        for name in names:
            for eps in epsilons:
                for n in ns:
                    for seed in seeds:
                        objective, data, test = make(n, np.random.default_rng(seed))
                        solver = SOLVERS[name]()
                        wall, cpu = time.perf_counter(), time.process_time()
                        try:
                            res = solver.solve(objective, data, PrivacyBudget(eps, delta),
                                               np.random.default_rng(seed + 1000))
                        except (ValueError, RuntimeError) as exc:  # e.g. needs SC-SC
                            print(f"{problem} {name} eps={eps:g} n={n} skipped: {exc}")
                            continue
                        wall, cpu = time.perf_counter() - wall, time.process_time() - cpu
                        gap = duality_gap(objective, test, res.w, res.v, tol=1e-7, max_iter=2000)
                        key = (problem,)  # both test sets are the fixed population
                        rec = {"problem": problem, "solver": name, "eps": eps, "n": n,
                               "seed": seed, "gap": gap.upper,
                               "primal": gap.primal[1] - saddle(key, objective, test),
                               "grad_evals": int(res.diagnostics["n_grad_evals"]), "wall": wall, "cpu": cpu}
                        records.append(rec)
                        print(f"{problem:5s} {name:27s} eps={eps:<4g} n={n:<7d} seed={seed} "
                              f"gap={rec['gap']:.3e} primal={rec['primal']:.3e} "
                              f"evals={rec['grad_evals']:<9d} cpu={cpu:.2f}s wall={wall:.2f}s",
                              flush=True)
                        if sink:
                            sink.write(json.dumps(rec) + "\n")
                            sink.flush()
    return records


def summarize(records, delta=1e-6):
    """Slope table (measured vs theorem) and the per-n means used in the docs."""
    groups = {}
    for r in records:
        groups.setdefault((r["problem"], r["solver"], r["eps"]), []).append(r)
    objectives = {"game": game_problem(2, np.random.default_rng(0))[0],
                  "auc": auc_problem(2, np.random.default_rng(0), n_test=2)[0]}
    print("\nSlopes of log(value) on log(n) over all seeds (+- standard error). 'measure' is what "
          "the theorem bounds; 'regime' is the slope of the theorem's bound over the same n grid; "
          "'*' = the registered configuration does not meet the theorem's conditions.")
    print(f"{'problem':7s} {'solver':27s} {'eps':>4s} {'measure':7s} {'slope':>13s} "
          f"{'regime':>6s} {'asym':>5s} {'verdict':8s} {'cpu-exp':>7s} {'wall-exp':>8s} "
          f"{'evals-exp':>9s}  theorem")
    table = []
    for (problem, name, eps), rs in sorted(groups.items()):
        ns = [r["n"] for r in rs]
        grid = sorted(set(ns))
        measure, theorem, asym, _, unmet = THEORY.get(name, ("gap", "-", float("nan"), None, ""))
        s, se = fit_slope(ns, [r[measure] for r in rs])
        cpu_exp = fit_slope(ns, [r["cpu"] for r in rs])[0]
        wall_exp = fit_slope(ns, [r["wall"] for r in rs])[0]
        evals_exp = fit_slope(ns, [r["grad_evals"] for r in rs])[0]
        if name in THEORY:
            regime = regime_exponent(name, objectives[problem], grid, eps, delta)
            ok = verdict(s, regime) + ("*" if unmet else "")
        else:
            regime, ok = float("nan"), "-"
        table.append((problem, name, eps, measure, s, se, regime, asym, ok, cpu_exp, wall_exp,
                      evals_exp))
        print(f"{problem:7s} {name:27s} {eps:4g} {measure:7s} {s:6.2f} +-{se:4.2f} "
              f"{regime:6.2f} {asym:5.2f} {ok:8s} {cpu_exp:7.2f} {wall_exp:8.2f} "
              f"{evals_exp:9.2f}  {theorem}")
    privacy_rows(records)
    unmet = {k: v[4] for k, v in THEORY.items() if v[4]}
    print("\n* conditions not met by the registered configuration:")
    for k, v in sorted(unmet.items()):
        print(f"  {k}: {v}")
    print("\nMeans over seeds (gap = population strong gap; primal = P(w) - Phi*; times in s):")
    print(f"{'problem':7s} {'solver':27s} {'eps':>4s} {'n':>7s} {'gap':>9s} {'primal':>9s} "
          f"{'evals':>10s} {'cpu':>7s} {'wall':>7s}")
    cells = {}
    for r in records:
        cells.setdefault((r["problem"], r["solver"], r["eps"], r["n"]), []).append(r)
    for (problem, name, eps, n), rs in sorted(cells.items()):
        m = {k: float(np.mean([r[k] for r in rs])) for k in ("gap", "primal", "grad_evals",
                                                             "cpu", "wall")}
        print(f"{problem:7s} {name:27s} {eps:4g} {n:7d} {m['gap']:9.2e} {m['primal']:9.2e} "
              f"{m['grad_evals']:10.3g} {m['cpu']:7.2f} {m['wall']:7.2f}")
    guide_table(records)
    return table


def guide_table(records, eps=1.0, ns=(10_000, 100_000)):
    """Markdown rows for the docs' "which solver when" table (means over seeds)."""
    cells = {}
    for r in records:
        if r["eps"] == eps and r["n"] in ns:
            cells.setdefault((r["problem"], r["solver"], r["n"]), []).append(r)
    lo, hi = ns
    print(f"\n| problem | solver | gap n={lo:.0e} | gap n={hi:.0e} | primal n={hi:.0e} | "
          f"grad evals n={hi:.0e} | CPU s n={hi:.0e} | wall s n={hi:.0e} |")
    print("|---|---|---|---|---|---|---|---|")
    for problem, name in sorted({k[:2] for k in cells}):
        if (problem, name, lo) not in cells or (problem, name, hi) not in cells:
            continue
        mean = {n: {k: np.mean([r[k] for r in cells[(problem, name, n)]])
                    for k in ("gap", "primal", "grad_evals", "cpu", "wall")} for n in ns}
        print(f"| {problem} | {name} | {mean[lo]['gap']:.2e} | {mean[hi]['gap']:.2e} | "
              f"{mean[hi]['primal']:.2e} | {mean[hi]['grad_evals']:.2g} | {mean[hi]['cpu']:.2f} | "
              f"{mean[hi]['wall']:.2f} |")


def privacy_rows(records):
    """Slope of the privacy part: mean gap(eps) - mean gap(inf) at each n.

    Differences of means, not of paired runs: near the crossover a single noisy run
    can land closer to the population saddle than the noise-free one.
    """
    means = {}
    for r in records:
        if r["solver"] in PRIVACY_EXPONENT:
            means.setdefault((r["problem"], r["solver"], r["eps"], r["n"]), []).append(r["gap"])
    means = {k: float(np.mean(v)) for k, v in means.items()}
    groups = {}
    for (problem, name, eps, n), gap in sorted(means.items()):
        base = means.get((problem, name, np.inf, n))
        if eps < np.inf and base is not None:
            groups.setdefault((problem, name, eps), []).append((n, gap - base))
    if groups:
        print("\nPrivacy term alone, mean gap(eps) - mean gap(inf) per n "
              "(theorem's exponent of that term):")
    for (problem, name, eps), pairs in sorted(groups.items()):
        kept = [(n, d) for n, d in pairs if d > 0]
        ns, diffs = zip(*kept)
        s, se = fit_slope(ns, diffs)
        theory = PRIVACY_EXPONENT[name]
        print(f"{problem:7s} {name:27s} {eps:4g} privacy {s:6.2f} +-{se:4.2f} {theory:6.2f} "
              f"{'':5s} {verdict(s, theory):8s} (n points: {len(kept)} of {len(pairs)}; "
              f"share of the gap at n={max(ns)}: "
              f"{diffs[-1] / means[(problem, name, eps, max(ns))]:.2f})")


def main(argv=None):
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--quick", action="store_true",
                        help="n in {1e3, 3e3, 1e4}, one seed")
    parser.add_argument("--problems", nargs="+", default=["game", "auc"])
    parser.add_argument("--epsilons", nargs="+", type=float, default=[0.5, 1.0, 4.0])
    parser.add_argument("--solvers", nargs="+", default=None,
                        help="registered names (default: all of SOLVERS)")
    parser.add_argument("--ns", nargs="+", type=int, default=None)
    parser.add_argument("--seeds", type=int, default=None, help="number of seeds (default 3)")
    parser.add_argument("--out", default=None, help="append one JSON record per run here")
    parser.add_argument("--summarize", default=None,
                        help="only print the tables from a file written by --out")
    args = parser.parse_args(argv)
    if args.summarize:
        with open(args.summarize) as fh:
            return summarize([json.loads(line) for line in fh if line.strip()])
    ns = [1000, 3000, 10_000] if args.quick else [1000, 3000, 10_000, 30_000, 100_000]
    seeds = range(args.seeds or (1 if args.quick else 3))
    records = run(args.ns or ns, args.epsilons, args.problems, seeds, solvers=args.solvers,
                  out=args.out)
    return summarize(records)


if __name__ == "__main__":
    main()
