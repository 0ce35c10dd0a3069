"""The linear DPAUCMaximizer's step and clip rules compared (what chose its default).

Data that ship with scikit-learn (breast cancer; digits 0-4 against 5-9) and two
``make_classification`` problems (50 and 300 features), standardised (non-private: a
diagnosis of the solver, not a private pipeline), 70/30 stratified split, class ratio
declared public, ``data_norm = 2 sqrt(d)``, ``delta = 1e-5``; with ``--data-dir`` (or
``SKDPMINIMAX_DATA``) also the reproduction's tasks: ijcnn1 (``data_norm = 2``), MNIST and
Fashion-MNIST (classes 0-4 against 5-9, ``data_norm = 40``).
Test ROC AUC %, mean over seeds. Candidates (``L`` the objective's certified
smoothness, ``E = d (z_w / 64)^2`` a step's primal noise energy, both data-free):

- ``auto``: ``NoisySGDA()`` (clip 1, step ``1 / L``; the estimator's default until
  ``scaled`` replaced it);
- ``clip/2, 4/L``: clip ``data_norm / 2``, step ``4 / L``;
- ``... /(1+E)^k``: the step divided by ``(1 + E)^k``;
- ``clip/2/(1+E)^j``: the clip divided by ``(1 + E)^j``;
- ``clip 1, 64/L/(1+E)^2``: the default clip with a larger, damped step;
- ``scaled``: ``NoisySGDA(step_size="scaled")`` (the estimator's default), clip 1 and step
  ``max(1/L, D / sqrt(T) / (1+E)^2)`` (clip 1), ``T`` the number of steps: the convex step
  ``D / (C sqrt(T))`` for a solution of norm ``D = 10 / data_norm`` (the objective's
  ``typical_solution_norm``; the exact minimisers here have ``||w|| data_norm / 2`` of 3
  to 9), damped by the noise, never below ``auto``. Since the tables in
  docs/benchmarks.md were run, the rule reads the class weights' RMS ``r = 2 sqrt(p (1 -
  p))`` too (``D / (r C sqrt(T)) / (1 + E / r^2)^2``; ``auc_class_weight_step.py``): the
  same on the balanced tasks, not on ``synthetic d=300`` (20% positives) or ijcnn1;
- ``scaled, clip scaled``: that step with ``clip_w="scaled"``, the objective's typical
  gradient norm ``data_norm / 2`` divided by ``sqrt(1 + E)``.

``ceiling``: the exact square-loss AUC minimiser (a ridge of 1e-3), without privacy.

    python benchmarks/auc_defaults.py --epsilons 0.1 0.5 1 10 inf --seeds 3 --data-dir ../shared/data
    python benchmarks/auc_defaults.py --datasets mnist fashion-mnist --candidates auto scaled
"""

import argparse
import math
import os
import time
import warnings

import numpy as np
from sklearn.datasets import load_breast_cancer, load_digits, make_classification
from sklearn.metrics import roc_auc_score

from skdpminimax import DPAUCMaximizer
from skdpminimax.datasets import load_ijcnn1, load_mnist_binary
from skdpminimax.privacy import PrivacyBudget
from skdpminimax.privacy.samplers import make_sampler
from skdpminimax.solvers import NoisySGDA
from skdpminimax.solvers._planning import primal_noise_energy

from estimator_defaults import _split  # a sibling script in benchmarks/

# name: None (NoisySGDA(), step "auto"), "scaled" (NoisySGDA(step_size="scaled")),
# "scaled+clip" (the same with clip_w="scaled") or
# (clip, c, j, k): clip (a fraction of data_norm, or "one" for 1) divided by (1 + E)^j,
# step c / L / (1 + E)^k
CANDIDATES = {
    "auto": None,
    "clip/2, 4/L": (0.5, 4.0, 0.0, 0.0),
    "clip/2, 4/L/(1+E)": (0.5, 4.0, 0.0, 1.0),
    "clip/2, 4/L/(1+E)^2": (0.5, 4.0, 0.0, 2.0),
    "clip/2/(1+E)^0.5, 4/L": (0.5, 4.0, 0.5, 0.0),
    "clip/2/(1+E), 4/L": (0.5, 4.0, 1.0, 0.0),
    "clip/2/(1+E)^0.5, 4/L/(1+E)^0.5": (0.5, 4.0, 0.5, 0.5),
    "clip 1, 64/L/(1+E)^2": ("one", 64.0, 0.0, 2.0),
    "scaled": "scaled",
    "scaled, clip scaled": "scaled+clip",
}


def datasets(data_dir=None):
    """(name, X_train, X_test, y_train, y_test, data_norm)."""
    for name, X, y in _sklearn_datasets():
        # estimator_defaults' split and scaling; the row bound here is 2 sqrt(d)
        yield (name, *_split(X, y)[:4], 2.0 * math.sqrt(X.shape[1]))
    if data_dir:
        yield ("ijcnn1", *load_ijcnn1(data_dir), 2.0)
        for name in ("mnist", "fashion-mnist"):  # the reproduction's tasks and row bound
            yield (name, *load_mnist_binary(data_dir, name, positive_classes=(0, 1, 2, 3, 4)), 40.0)


def _sklearn_datasets():
    X, y = load_breast_cancer(return_X_y=True)
    yield "breast cancer", X, y
    X, y = load_digits(return_X_y=True)
    yield "digits 0-4 vs 5-9", X, (y < 5).astype(int)
    X, y = make_classification(20000, 50, n_informative=10, random_state=0)
    yield "synthetic d=50", X, y
    X, y = make_classification(20000, 300, n_informative=20, weights=[0.8], random_state=1)
    yield "synthetic d=300", X, y


def ceiling(X_train, y_train, X_test, y_test):
    pos = y_train == 1
    diff = X_train[pos].mean(0) - X_train[~pos].mean(0)
    S = np.cov(X_train[pos].T) + np.cov(X_train[~pos].T) + np.outer(diff, diff)
    w = np.linalg.solve(S + 1e-3 * np.eye(len(S)), diff)
    return 100.0 * roc_auc_score(y_test, X_test @ w)


def fit_auc(X_train, y_train, X_test, y_test, data_norm, epsilon, seed, candidate):
    def model(solver):
        return DPAUCMaximizer(epsilon=epsilon, delta=1e-5, data_norm=data_norm,
                              pos_ratio=float(y_train.mean()), solver=solver,
                              random_state=seed)

    if candidate is None:
        solver = NoisySGDA()
    elif candidate == "scaled":
        solver = NoisySGDA(step_size="scaled")
    elif candidate == "scaled+clip":
        solver = NoisySGDA(step_size="scaled", clip_w="scaled")
    else:
        clip_rule, c, j, k = candidate
        clip = 1.0 if clip_rule == "one" else clip_rule * data_norm
        # A one-step probe gives the public constants L and d (no data values); z_w is
        # calibrated (data-free) on the whole budget, a little below the fit's own (it
        # spends a share of epsilon on the sample count): the rule only needs its scale.
        probe = model(NoisySGDA(n_iter=1)).fit(X_train, y_train)
        objective = probe.objective_
        n_train = X_train.shape[0]
        calibration = NoisySGDA(clip_w=clip).calibrate(
            objective, n_train, PrivacyBudget(epsilon, 1e-5))
        energy = primal_noise_energy(calibration, objective.n_primal,
                                     make_sampler("poisson", n_train, 64))
        step = c / objective.smoothness() / (1.0 + energy) ** k
        clip /= (1.0 + energy) ** j
        solver = NoisySGDA(clip_w=clip, step_size=step)
    fitted = model(solver).fit(X_train, y_train)
    return 100.0 * roc_auc_score(y_test, fitted.decision_function(X_test))


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--epsilons", type=float, nargs="+", default=[0.1, 1.0, 10.0, math.inf])
    parser.add_argument("--seeds", type=int, default=3)
    parser.add_argument("--data-dir", default=os.environ.get("SKDPMINIMAX_DATA") or None,
                        help="adds ijcnn1, MNIST and Fashion-MNIST (default: "
                             "$SKDPMINIMAX_DATA; none: skipped)")
    parser.add_argument("--candidates", nargs="+", default=list(CANDIDATES),
                        choices=list(CANDIDATES), metavar="NAME",
                        help="the columns to run (default: all)")
    parser.add_argument("--datasets", nargs="+", default=None,
                        help="only these data sets (names as printed)")
    args = parser.parse_args()
    candidates = {name: CANDIDATES[name] for name in args.candidates}
    warnings.filterwarnings("ignore")  # PrivacyLeakWarning etc.: a diagnosis, not a release
    start = time.perf_counter()
    print("| data set | epsilon | ceiling | " + " | ".join(candidates) + " |")
    print("|---|---|---|" + "---|" * len(candidates))
    for name, X_train, X_test, y_train, y_test, data_norm in datasets(args.data_dir):
        if args.datasets and name not in args.datasets:
            continue
        top = ceiling(X_train, y_train, X_test, y_test)
        for epsilon in args.epsilons:
            means = [np.mean([fit_auc(X_train, y_train, X_test, y_test, data_norm, epsilon,
                                      seed, candidate)
                              for seed in range(args.seeds)])
                     for candidate in candidates.values()]
            print(f"| {name} | {epsilon:g} | {top:.2f} | "
                  + " | ".join(f"{m:.2f}" for m in means) + " |", flush=True)
    print(f"\n{time.perf_counter() - start:.0f} s")


if __name__ == "__main__":
    main()
