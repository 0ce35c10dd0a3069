"""What the paper's noise calibration would give this implementation (a diagnostic).

Yang et al. (2022) calibrated their noise with autodp on one block's cost and set the
sensitivity to "the maximum gradient norms of AUC loss w.r.t. w and v" observed in a
noise-free run (docs/benchmarks.md, "What is rigorous here and not in the paper"). That
is not differential privacy (a data-dependent bound, one block counted for two). This
script asks how much of the gap in the cells we miss is the price of doing it rigorously:

1. A noise-free run at the paper's private settings (batch 64, Poisson sampling, 15
   epochs linear / 10 MLP, no clipping, the reproduction's step without noise, halved
   while the run diverges) records
   the largest per-example gradient norm of each block (``G_example``) and the largest
   norm of a step's mean gradient (``G_batch``), the two readings of "maximum gradient
   norms".
2. The reproduction's own cell (``reproduce_yang2022.run_cell``: same clips, step rule,
   schedule, class-ratio release) is rerun with the noise the paper's recipe gives
   instead of ours. The paper's recipe puts the one-mechanism multiplier ``z`` of T
   Poisson steps at the training budget (our joint multiplier: it certifies the whole
   step, both blocks, as one Gaussian) on *each* block, with sensitivity ``G_b``: noise
   std ``z G_b / m`` on block b's mean gradient (add/remove-one; replace-one doubles it).
   In the solver that is the block multiplier ``z G_b / C_b`` at our clip ``C_b``; the
   step rule sees that noise, as it sees ours.

Variants: ``ours`` (the logged configuration), ``one-block`` (each block at ``z``, the
clips as sensitivities: only the two-block under-count), ``example`` (``G_example``) and
``batch`` (``G_batch``). NSEG (``--methods nseg``) takes the paper's single sigma on the
combined sensitivity ``sqrt(G_w^2 + G_v^2)`` for both blocks (its accounting counted
both; ``one-block`` then means the clips' combined norm), with the bounds of linear
DP-SGDA's noise-free run (the same objective and sets). The test split is read, as in the reproduction: this chooses
nothing, it prices the paper's shortcuts. Example (numbers in docs/benchmarks.md)::

    python benchmarks/yang2022_paper_accounting.py --datasets mnist fashion-mnist \\
        --epsilons 0.1 --deltas 1e-6 --seeds 5
"""

import argparse
import dataclasses
import json
import math
import sys
import time
from contextlib import contextmanager
from pathlib import Path

import numpy as np

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))
sys.path.insert(0, str(ROOT / "benchmarks"))

import reproduce_yang2022 as repro  # noqa: E402
from _data import data_dir as resolve_data_dir  # noqa: E402
from skdpminimax import DPAUCMaximizer  # noqa: E402
from skdpminimax.objectives.base import SaddleData  # noqa: E402
from skdpminimax.solvers import NoisyExtragradient, NoisySGDA  # noqa: E402

VARIANTS = ("ours", "one-block", "example", "batch")


def noise_free_steps(method, dataset, n, clip):
    """The reproduction's steps with no noise (its rule at E = 0), constant."""
    steps = repro.converted_steps(method, dataset, n, repro.public_pos_ratio(dataset))
    if method == "sgda-mlp":
        steps = tuple(repro.MLP_STEP_MULT * s for s in steps)
        factor = min(1.0, repro.mlp_step_clip_cap(0.0) / (steps[0] * clip))
        return tuple(s * factor for s in steps)
    return tuple(s / clip for s in steps)


def observed_gradient_bounds(method, dataset, data, seed=0):
    """Largest per-example and mean-gradient norms of each block over a noise-free run.

    Returns ``{"example": (G_w, G_v), "batch": (G_w, G_v), "n_steps": T, "step": s}``:
    plain simultaneous SGDA as the paper ran it (unclipped, a constant step), Poisson
    batches of expected size 64 (the mean is the sum over 64), the paper's epochs,
    projection onto the objective's sets. The step is the reproduction's without
    noise, halved while the run diverges (non-finite, or a mean-gradient norm over the
    last tenth of the steps above 10 times that over the first tenth; a stochastic
    gradient's norm does not vanish, so a converging run stays near its start's):
    unclipped, the MLP diverges at its step on ijcnn1."""
    X_train, _, y_train, _ = data
    n, d = X_train.shape
    model = DPAUCMaximizer(data_norm=repro.DATA_NORM[dataset], radius=_radius(method, dataset),
                           alpha=0.0 if method == "sgda-mlp" else 1e-4,
                           scorer="mlp" if method == "sgda-mlp" else "linear", hidden_units=256,
                           random_state=seed)
    objective = model._make_objective(d, model.data_norm, {"pos_ratio": float(y_train.mean())})
    norms = np.sqrt(np.einsum("ij,ij->i", X_train, X_train))
    X = X_train * np.minimum(1.0, model.data_norm / np.maximum(norms, 1e-300))[:, None]
    y = np.where(y_train > 0, 1.0, -1.0)
    full = objective.prepare(SaddleData(X, y))
    clip = repro.CLIP_OVERRIDES.get((method, dataset), repro.CLIP)
    if method != "sgda-mlp":
        clip = repro.LINEAR_CLIP_FRACTION * repro.DATA_NORM[dataset]
    steps = noise_free_steps(method, dataset, n, clip)
    epochs = repro.PAPER_HYPER[(method, dataset)]["epochs"]
    n_steps = math.ceil(epochs * n / repro.BATCH)
    for halvings in range(20):
        factor = 0.5 ** halvings
        run = _noise_free_run(objective, full, [s * factor for s in steps], n_steps, seed)
        tenth = max(1, n_steps // 10)
        if np.all(np.isfinite(run["mean_w"])) and (
                np.mean(run["mean_w"][-tenth:]) < 10.0 * np.mean(run["mean_w"][:tenth])):
            break
    return {"example": (float(np.max(run["ex_w"])), float(np.max(run["ex_v"]))),
            "batch": (float(np.max(run["mean_w"])), float(np.max(run["mean_v"]))),
            "n_steps": n_steps, "step": steps[0] * factor}


def _noise_free_run(objective, full, steps, n_steps, seed):
    """Per-step largest per-example norms and mean-gradient norms of each block."""
    rng = np.random.default_rng(seed)
    n = full.n_samples
    q = repro.BATCH / n
    eta_w, eta_v = steps
    w, v = objective.init_params(rng)
    run = {key: np.zeros(n_steps) for key in ("ex_w", "ex_v", "mean_w", "mean_v")}
    with np.errstate(all="ignore"):
        for t in range(n_steps):
            idx = np.flatnonzero(rng.random(n) < q)
            if idx.size == 0:
                continue
            gw, gv = objective.per_example_grads(w, v, full.take(idx))
            run["ex_w"][t] = np.sqrt(np.max(np.einsum("ij,ij->i", gw, gw)))
            run["ex_v"][t] = np.max(np.abs(gv))
            sw, sv = gw.sum(axis=0) / repro.BATCH, gv.sum(axis=0) / repro.BATCH
            run["mean_w"][t] = np.linalg.norm(sw)
            run["mean_v"][t] = np.linalg.norm(sv)
            if not np.isfinite(run["mean_w"][t]):
                run["mean_w"][t:] = np.inf
                break
            rw, rv = objective.reg_grad(w, v)
            w = objective.primal_set.project(w - eta_w * (sw + rw))
            v = objective.dual_set.project(v + eta_v * (sv - rv))
    return run


def _radius(method, dataset):
    if method == "sgda-mlp" and repro.MLP_RADIUS is not None:
        return repro.MLP_RADIUS
    return repro.PAPER_HYPER[(method, dataset)]["radius"]


@contextmanager
def paper_noise(method, variant, bounds):
    """Within the block, the solver's block multipliers follow the paper's recipe.

    DP-SGDA: block b at ``z G_b / C_b`` (``G_b = C_b`` for ``"one-block"``). NSEG (the
    paper's single sigma on the combined sensitivity, which counts both blocks): every
    block at ``z sqrt(G_w^2 + G_v^2) / C_b``; its releases keep our extrapolation ratio.
    ``z`` is our accountant's multiplier of a step (one Gaussian for the whole step)."""
    if variant == "ours":
        yield
        return
    cls = NoisyExtragradient if method == "nseg" else NoisySGDA
    real = cls.calibrate

    def calibrate(self, objective, n_samples, budget):
        cal = real(self, objective, n_samples, budget)
        z = cal.noise_multiplier
        if z == 0.0:
            return cal
        clips = (self.clip_w, self.clip_v)
        sens = clips if variant == "one-block" else bounds[variant]
        if method == "nseg":
            sens = (math.hypot(*sens),) * 2
        blocks = tuple(z * g / c for g, c in zip(sens, clips))
        return dataclasses.replace(cal, block_noise_multipliers=blocks)

    cls.calibrate = calibrate
    try:
        yield
    finally:
        cls.calibrate = real


def main(argv=None):
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--methods", nargs="+", default=["sgda-linear"],
                        choices=["sgda-linear", "nseg", "sgda-mlp"])
    parser.add_argument("--datasets", nargs="+", default=["mnist", "fashion-mnist"],
                        choices=list(repro.DATASETS))
    parser.add_argument("--epsilons", nargs="+", type=float, default=[0.1])
    parser.add_argument("--deltas", nargs="+", type=float, default=[1e-6])
    parser.add_argument("--variants", nargs="+", default=list(VARIANTS), choices=VARIANTS)
    parser.add_argument("--seeds", type=int, default=5)
    parser.add_argument("--data-dir", default=None)
    parser.add_argument("--results", default=None, help="append one JSON line per fit")
    args = parser.parse_args(argv)
    data_dir = resolve_data_dir(args.data_dir)
    out = open(args.results, "a") if args.results else None
    print("| method | data | eps | delta | G_example (w, v) | G_batch (w, v) | variant | "
          "z_w | AUC % (std) | paper | diff |")
    print("|---|---|---|---|---|---|---|---|---|---|---|")
    for dataset in args.datasets:
        data = repro.load(dataset, data_dir)
        for method in args.methods:
            start = time.perf_counter()
            # NSEG's objective and sets are linear DP-SGDA's: the same noise-free run
            bounds = observed_gradient_bounds(
                "sgda-linear" if method == "nseg" else method, dataset, data)
            print(f"<!-- {method} {dataset}: noise-free run of {bounds['n_steps']} steps at "
                  f"step {bounds['step']:.3g} in "
                  f"{time.perf_counter() - start:.0f} s -->", flush=True)
            for eps in args.epsilons:
                for delta in args.deltas:
                    paper = repro.paper_auc(method, dataset, eps, delta)
                    for variant in args.variants:
                        rows = []
                        with paper_noise(method, variant, bounds):
                            for seed in range(args.seeds):
                                rows.append(repro.run_cell(method, dataset, eps, delta, seed, data))
                        aucs = np.array([r["auc"] for r in rows])
                        z_w = rows[0]["z_blocks"][0]
                        ge, gb = bounds["example"], bounds["batch"]
                        diff = "" if paper is None else f"{aucs.mean() - paper:+.2f}"
                        print(f"| {method} | {dataset} | {eps:g} | {delta:g} | "
                              f"{ge[0]:.3g}, {ge[1]:.3g} | {gb[0]:.3g}, {gb[1]:.3g} | {variant} | "
                              f"{z_w:.3g} | {aucs.mean():.2f} ({aucs.std():.2f}) | "
                              f"{'' if paper is None else f'{paper:.2f}'} | {diff} |", flush=True)
                        if out is not None:
                            for r in rows:
                                out.write(json.dumps({**r, "variant": variant,
                                                      "G_example": ge, "G_batch": gb}) + "\n")
                            out.flush()
    if out is not None:
        out.close()


if __name__ == "__main__":
    main()
