"""Print the privacy-audit table of docs/privacy_audit.md (the settings of tests/test_audit.py).

Run from the repository root: ``python benchmarks/audit_table.py [--runs N]``. Each row
trains ``2 * runs`` models; the default uses each test's own number of runs.
"""

import argparse
import contextlib
import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "tests"))

import numpy as np  # noqa: E402
import test_audit as T  # noqa: E402

from skdpminimax.audit import audit_estimator  # noqa: E402


def rows():
    """(name, estimator, runs, seed, extra audit keywords) exactly as the tests use them."""
    quarter = dict(selection_fraction=0.25)
    sgd_X, sgd_y = np.zeros((40, 2)), np.arange(40) % 2
    nseg = T.NoisyExtragradient(mode="single_pass", batch_size=5, n_iter=1, step_size=1.0,
                                clip_w=1.0, clip_v=1.0, noise_allocation=1e-3)
    bilinear = dict(epsilon=T.EPSILON, delta=T.DELTA, data_norm=2.0)
    params = dict(selection_fraction=0.25, statistic="params")
    return [
        ("DP-GDA (sgda, full batch, 1 step)", T.auc(T.NoisySGDA(**T.gda())), 2000, 1, quarter),
        ("DP-SGDA (sgda, Poisson, 3 steps)", T.auc(T.NoisySGDA(**T.gda(batch_size=10, n_iter=3))),
         400, 2, dict(X=sgd_X, y=sgd_y)),
        ("DP-GDA, two-block release (joint noise)", T.BilinearRelease(
            solver=T.NoisySGDA(**T.gda(noise_allocation="equal")), **bilinear), 2000, 6, params),
        ("output_perturbation", T.op(), 500, 11, quarter),
        ("nseg (single pass, 1 iteration)", T.auc(nseg), 500, 13, quarter),
        ("nseg multi-pass, extrapolation noise 4", T.nseg_extrapolation_release(), 2000, 20,
         params),
        ("BROKEN no noise", T.auc(T.NoNoiseSGDA(**T.gda())), 100, 3, {}),
        ("BROKEN no clipping", T.auc(T.UnclippedSGDA(**T.gda(clip_w=None, clip_v=None)))
         .set_params(data_norm=4.0), 400, 4, {}),
        ("BROKEN half noise", T.auc(T.HalfNoiseSGDA(**T.gda())), 2000, 5, quarter),
        ("BROKEN blocks accounted separately", T.BilinearRelease(
            solver=T.SeparateBlocksSGDA(**T.gda(noise_allocation="equal")), **bilinear),
         2000, 6, params),
        ("BROKEN OP add/remove sensitivity", T.op(T.AddRemoveSensitivityOP), 400, 12, quarter),
        ("BROKEN OP half Lipschitz bound", T.op(estimator_class=T.HalfLipschitzAUCMaximizer),
         400, 12, quarter),
    ]


def main():
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--runs", type=int, default=None, help="runs per data set for every row")
    args = parser.parse_args()
    print(f"claimed (epsilon, delta) = ({T.EPSILON}, {T.DELTA})")
    print(f"{'setting':40s} {'runs':>5s} {'eps_lb':>7s} {'eps_lb_gdp':>10s}")
    for name, model, runs, seed, kw in rows():
        n = args.runs or runs
        # A BROKEN row measures what the audit alone sees: the estimators' checks,
        # which refuse its edited record before any release, are off (as in the tests).
        with T.estimator_checks_off() if name.startswith("BROKEN") else contextlib.nullcontext():
            r = audit_estimator(model, epsilon=T.EPSILON, delta=T.DELTA, n_runs=n,
                                random_state=seed, **kw)
        print(f"{name:40s} {n:5d} {r.epsilon_lower_bound:7.3f} {r.epsilon_lower_bound_gdp:10.3f}",
              flush=True)


if __name__ == "__main__":
    main()
