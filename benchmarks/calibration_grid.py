"""The noise calibration's PLD grids: time, multiplier, and the finer grid's prediction.

For Poisson-sampled runs (rows, batch, steps) and budgets (epsilon, delta), prints

* the calibration with the finer-grid refinement (the library's default) and with the
  coarse grid alone: the multiplier ``z``, the grid that certified it and the time of
  a fresh calibration (the cache cleared);
* at the refined ``z``: the epsilon that ``dp_accounting`` certifies on the coarse
  grid, on half of it and on the fine grid, and the fine grid's epsilon predicted from
  the first two (the connect-the-dots excess is quadratic in the interval), which is
  what the refinement's gate reads.

Usage::

    python benchmarks/calibration_grid.py            # the image runs' sampler and two others
    python benchmarks/calibration_grid.py --runs 60000,64,14062 --epsilons 1

No data are read. The times are those of one process on an otherwise idle core.
"""

import argparse
import contextlib
import time

from skdpminimax.privacy import calibration
from skdpminimax.privacy.samplers import make_sampler

DEFAULT_RUNS = ("60000,64,14062", "39992,64,9373", "3500,64,8000")


@contextlib.contextmanager
def coarse_grid_only():
    """The refinement disabled: its fine grid made the coarse one."""
    fine = calibration._pld_fine_interval
    calibration._pld_fine_interval = calibration._pld_interval
    try:
        yield
    finally:
        calibration._pld_fine_interval = fine


def timed_calibration(sampler, steps, epsilon, delta):
    calibration._calibrate_cached.cache_clear()
    start = time.perf_counter()
    cal = calibration.calibrate_noise_multiplier(sampler, steps, epsilon, delta)
    return cal, time.perf_counter() - start


def grid_prediction(sampler, z, steps, epsilon, delta):
    """``(coarse, half, fine, predicted fine)`` epsilons at ``z``."""
    coarse = calibration._pld_interval(epsilon)
    fine = calibration._pld_fine_interval(epsilon)
    e1, e2, e10 = (calibration._certify_with(sampler, z, steps, delta, "pld", grid, (1.0,))
                   for grid in (coarse, coarse / 2.0, fine))
    return e1, e2, e10, calibration._predicted_fine_epsilon(e1, e2, coarse, fine)


def main(argv=None):
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--runs", nargs="+", default=list(DEFAULT_RUNS),
                        help="rows,batch,steps of a Poisson-sampled run")
    parser.add_argument("--epsilons", nargs="+", type=float, default=[0.1, 0.5, 1.0])
    parser.add_argument("--deltas", nargs="+", type=float, default=[1e-4, 1e-5, 1e-6])
    args = parser.parse_args(argv)
    print("rows  batch  steps  epsilon  delta  | z refined (grid, s) | z coarse (s) | "
          "eps at z: coarse / half / fine / predicted")
    for run in args.runs:
        n, batch, steps = (int(v) for v in run.split(","))
        sampler = make_sampler("poisson", n, batch)
        for epsilon in args.epsilons:
            for delta in args.deltas:
                refined, t_refined = timed_calibration(sampler, steps, epsilon, delta)
                with coarse_grid_only():
                    coarse, t_coarse = timed_calibration(sampler, steps, epsilon, delta)
                z = refined.noise_multiplier
                e1, e2, e10, predicted = grid_prediction(sampler, z, steps, epsilon, delta)
                print(f"{n} {batch} {steps} {epsilon:g} {delta:g} | {z:.5f} "
                      f"({refined.pld_interval:g}, {t_refined:.2f}) | "
                      f"{coarse.noise_multiplier:.5f} ({t_coarse:.2f}) | {e1:.5f} / "
                      f"{e2:.5f} / {e10:.5f} / {predicted:.5f}", flush=True)


if __name__ == "__main__":
    main()
