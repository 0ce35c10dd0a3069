"""DPAUCMaximizer on ijcnn1: test AUC, noise multipliers and fit time vs epsilon.

Protocol (Yang et al. 2022, seed 003): the 49,990 rows of LIBSVM's ijcnn1 training file
split 80/20 at random (fixed split), delta = 1e-6, batch 64, 15 epochs, 5 seeds. Next
to it, in the same run, scikit-learn's SGDClassifier(loss="log_loss", max_iter=15,
tol=None) for scale and speed.

Privacy set-up, all public: ijcnn1's features come scaled to [-1, 1] by the LIBSVM
maintainers; rows are clipped to the declared ``data_norm=2``; the class ratio is
estimated privately with 5% of each epsilon (the default).

Usage::

    python benchmarks/auc_ijcnn1.py --data-dir ../shared/data   # or SKDPMINIMAX_DATA=...
    python benchmarks/auc_ijcnn1.py --backend numpy              # without the numba kernel
"""

import argparse
import time
import warnings

import numpy as np
from sklearn.linear_model import SGDClassifier
from sklearn.metrics import roc_auc_score

from skdpminimax import DPAUCMaximizer
from skdpminimax._compiled import numba_available
from skdpminimax.datasets import default_data_dir, load_ijcnn1
from skdpminimax.solvers import NoisySGDA

EPSILONS = [0.1, 0.5, 1.0, 5.0, 10.0]


# Step size and clip norms chosen on a validation split of the training rows (20%
# held out, 20 seeds; the test split was not used): docs/benchmarks.md. The dual
# gradient -2 s y h is small next to its certified bound, so a small dual clip costs
# little bias and leaves almost all of each step's privacy loss to the primal block.
STEP_SIZE, CLIP_W, CLIP_V = 0.05, 1.5, 0.1


def make_model(epsilon, seed, step_size, backend, clip_w=CLIP_W, clip_v=CLIP_V):
    return DPAUCMaximizer(
        epsilon=epsilon, delta=1e-6, data_norm=2.0, random_state=seed,
        n_samples_budget="public",  # ijcnn1's split sizes are published
        solver=NoisySGDA(batch_size=64, n_epochs=15, step_size=step_size, clip_w=clip_w,
                         clip_v=clip_v, backend=backend),
    )


def run(data_dir, epsilons, seeds, step_size, backend="auto", clip_w=CLIP_W, clip_v=CLIP_V):
    X_train, X_test, y_train, y_test = load_ijcnn1(data_dir)
    print(f"ijcnn1: {X_train.shape[0]} train / {X_test.shape[0]} test rows, "
          f"{X_train.shape[1]} features; delta=1e-6, batch 64, 15 epochs, {len(seeds)} seeds")
    # One-off cost of a process: loading (or, the first time on a machine, compiling)
    # the numba kernel. Timed apart on a no-noise fit of 500 rows (no calibration).
    t0 = time.perf_counter()
    make_model(np.inf, 0, step_size, backend).fit(X_train[:500], y_train[:500])
    runner = "numba kernel" if backend != "numpy" and numba_available() else "numpy loop"
    print(f"steps taken by: {runner}; one-off load before the first fit: "
          f"{time.perf_counter() - t0:.2f} s")

    sgd_auc, sgd_time, sgd_cpu = [], [], []
    for seed in seeds:
        t0, c0 = time.perf_counter(), time.process_time()
        sgd = SGDClassifier(loss="log_loss", max_iter=15, tol=None, random_state=seed)
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            sgd.fit(X_train, y_train)
        sgd_time.append(time.perf_counter() - t0)
        sgd_cpu.append(time.process_time() - c0)
        sgd_auc.append(roc_auc_score(y_test, sgd.decision_function(X_test)))

    header = (f"{'model':<28}{'epsilon':>8}{'AUC mean':>10}{'AUC std':>9}{'z joint':>9}"
              f"{'z_w':>8}{'z_v':>8}{'fit s':>8}{'cpu s':>8}{'calib s':>9}{'x SGD':>7}")
    print(header)
    print("-" * len(header))
    t_sgd, c_sgd = float(np.median(sgd_time)), float(np.median(sgd_cpu))
    print(f"{'SGDClassifier(log_loss)':<28}{'-':>8}{np.mean(sgd_auc):>10.4f}"
          f"{np.std(sgd_auc):>9.4f}{'':>9}{'':>8}{'':>8}{t_sgd:>8.3f}{c_sgd:>8.3f}{'':>9}"
          f"{1.0:>7.1f}")

    for epsilon in epsilons:
        aucs, times, cpus = [], [], []
        calib = 0.0
        for i, seed in enumerate(seeds):
            model = make_model(epsilon, seed, step_size, backend, clip_w, clip_v)
            t0, c0 = time.perf_counter(), time.process_time()
            model.fit(X_train, y_train)
            elapsed, cpu = time.perf_counter() - t0, time.process_time() - c0
            if i == 0 and len(seeds) > 1:
                calib = elapsed  # first fit pays the (cached) calibration; timed apart
            else:
                times.append(elapsed)
                cpus.append(cpu)
            aucs.append(roc_auc_score(y_test, model.decision_function(X_test)))
        cal = model.calibration_
        z_w, z_v = cal.block_noise_multipliers or (0.0, 0.0)
        t_fit, c_fit = float(np.median(times)), float(np.median(cpus))
        calib = max(calib - t_fit, 0.0)
        print(f"{'DPAUCMaximizer (DP-SGDA)':<28}{epsilon:>8g}{np.mean(aucs):>10.4f}"
              f"{np.std(aucs):>9.4f}{cal.noise_multiplier:>9.3f}{z_w:>8.3f}{z_v:>8.3f}"
              f"{t_fit:>8.3f}{c_fit:>8.3f}{calib:>9.2f}{c_fit / c_sgd:>7.1f}")
    print("fit s / cpu s: wall and CPU time, median over seeds 2..k (calibration cached); "
          "calib s: extra wall time of the first fit (the dp-accounting calibration); "
          "x SGD: CPU time over SGDClassifier's.")


def main(argv=None):
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--data-dir", default=default_data_dir(),
                        help="folder holding ijcnn1/ijcnn1.bz2 (env SKDPMINIMAX_DATA)")
    parser.add_argument("--epsilons", type=float, nargs="+", default=EPSILONS)
    parser.add_argument("--seeds", type=int, default=5)
    parser.add_argument("--step-size", default=str(STEP_SIZE),
                        help='NoisySGDA step size (a number or "auto")')
    parser.add_argument("--clip-w", type=float, default=CLIP_W, help="primal clip norm")
    parser.add_argument("--clip-v", type=float, default=CLIP_V, help="dual clip norm")
    parser.add_argument("--backend", default="auto", choices=["auto", "numpy", "numba"],
                        help="NoisySGDA backend: the compiled kernel or the numpy loop")
    args = parser.parse_args(argv)
    step = args.step_size if args.step_size == "auto" else float(args.step_size)
    run(args.data_dir, args.epsilons, list(range(args.seeds)), step, args.backend,
        args.clip_w, args.clip_v)


if __name__ == "__main__":
    main()
