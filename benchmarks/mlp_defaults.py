"""DPAUCMaximizer(scorer="mlp") with its default solver and candidate rules, across data.

What chose the MLP's default (``solver="sgda"`` with ``scorer="mlp"``:
``NoisySGDA(step_size="scaled", clip_w=5.0, schedule="linear", average="last",
n_epochs="auto")``; before the run-length comparison, 15 epochs), on
data that ship with scikit-learn and generated nonlinear problems, standardised
(non-private: a check of the solver, not a private pipeline), 70/30 stratified split,
class ratio declared public, ``data_norm`` the largest training row norm rounded up,
``delta = 1e-5``; with ``--data-dir`` also ijcnn1 (``data_norm = 2``) and Adult (public
scaling). ``--held-out`` runs six other data sets instead, not used to set the rule.
Test ROC AUC %, mean over seeds; baseline: scikit-learn's ``MLPClassifier`` (256
units, non-private).

Candidates (``E = d (z_w / 64)^2`` a step's primal noise energy relative to the clip,
``T`` the steps; the prototypes calibrate, data-free, on the whole budget and the
training size, the fit on the released size):

- ``default``: the estimator's default; ``before``: the default before it,
  ``NoisySGDA(average="last")`` (step 0.1, clip 1, constant); ``linear default``: the
  linear scorer's default; ``default 15``: the default with 15 epochs (the default
  before ``n_epochs="auto"``);
- ``cap C [lin]``: clip ``C``, ``step * clip = 0.7 / (1 + 2 sqrt(E) + E / 2)`` (the
  Yang et al. reproduction's cap), constant with the tail average, or (``lin``) a
  linear decay from twice it with the last iterate;
- ``walk C rho``: clip ``C``, mean ``step * clip = min(0.7, rho / sqrt(E T))``, linear
  decay from twice it, last iterate;
- ``mix C a rho``: the same with ``min(0.7, a / sqrt(E), rho / sqrt(E T))`` (``mix 5
  0.3 20`` is the default's rule);
- ``typ k c0``: clip ``k`` times the typical score-gradient norm at the initial weights
  for a row of norm ``data_norm / 2``, ``step * clip = c0 / (1 + 2 sqrt(E) + E / 2)``,
  linear decay from twice it.

    python benchmarks/mlp_defaults.py --epsilons 0.1 0.5 1 10 inf --seeds 3 \
        --data-dir ../shared/data --candidates "linear default" before default
    python benchmarks/mlp_defaults.py --held-out --epsilons 0.1 0.5 1 10 inf --seeds 3 \
        --candidates "linear default" before default
"""

import argparse
import math
import sys
import time
import warnings
from pathlib import Path

import numpy as np
from sklearn.datasets import load_breast_cancer, load_digits, make_classification, make_moons
from sklearn.metrics import roc_auc_score
from sklearn.neural_network import MLPClassifier

sys.path.insert(0, str(Path(__file__).resolve().parent))
from _data import load_adult  # noqa: E402
from estimator_defaults import _split  # noqa: E402
from skdpminimax import DPAUCMaximizer  # noqa: E402
from skdpminimax.datasets import load_ijcnn1  # noqa: E402
from skdpminimax.privacy import PrivacyBudget  # noqa: E402
from skdpminimax.privacy.samplers import make_sampler  # noqa: E402
from skdpminimax.solvers import NoisySGDA  # noqa: E402
from skdpminimax.solvers._planning import primal_noise_energy  # noqa: E402


def moons(n, n_noise, seed):
    X, y = make_moons(n, noise=0.25, random_state=seed)
    rng = np.random.default_rng(seed)
    return np.hstack([X, rng.normal(size=(n, n_noise))]), y


def held_out_datasets():
    """Data sets not used to set the rule's constants (checked after)."""
    from sklearn.datasets import load_wine, make_circles, make_gaussian_quantiles, make_hastie_10_2
    X, y = make_hastie_10_2(12000, random_state=0)
    yield ("hastie 10.2", *_split(X, (y > 0).astype(int)))
    X, y = make_gaussian_quantiles(n_samples=6000, n_features=8, n_classes=2, random_state=0)
    yield ("gaussian quantiles d=8", *_split(X, y))
    X, y = make_circles(8000, noise=0.1, factor=0.5, random_state=0)
    X = np.hstack([X, np.random.default_rng(0).normal(size=(8000, 18))])
    yield ("circles + 18 noise", *_split(X, y))
    X, y = make_classification(20000, 100, n_informative=15, n_clusters_per_class=3,
                               weights=[0.9], random_state=2)
    yield ("clusters d=100, 10% positive", *_split(X, y))
    X, y = load_digits(return_X_y=True)
    yield ("digits odd vs even", *_split(X, y % 2))
    X, y = load_wine(return_X_y=True)
    yield ("wine class 0 vs rest", *_split(X, (y == 0).astype(int)))


def datasets(data_dir=None):
    """(name, X_train, X_test, y_train, y_test, data_norm)."""
    X, y = load_breast_cancer(return_X_y=True)
    yield ("breast cancer", *_split(X, y))
    X, y = load_digits(return_X_y=True)
    yield ("digits 0-4 vs 5-9", *_split(X, y < 5))
    X, y = make_classification(20000, 20, n_informative=10, n_clusters_per_class=4,
                               random_state=0)
    yield ("clusters d=20", *_split(X, y))
    X, y = moons(10000, 8, 0)
    yield ("moons + 8 noise", *_split(X, y))
    if data_dir is None:
        return
    yield ("ijcnn1", *load_ijcnn1(data_dir), 2.0)
    Xa, ya, _, Xa_test, ya_test, _, norm_a = load_adult(Path(data_dir) / "adult")
    yield ("adult", Xa, Xa_test, ya, ya_test, norm_a)


def _noise_plan(model, X_train, y_train, epsilon, clip, n_epochs=15):
    """``(E, T)``: a step's primal noise energy per unit clip and the number of steps.

    A one-step probe gives the public n_primal; z_w is calibrated (data-free) on the
    whole budget and the training size at the run length the fit will use."""
    n_train = X_train.shape[0]
    objective = model(NoisySGDA(n_iter=1, clip_w=clip)).fit(X_train, y_train).objective_
    calibration = NoisySGDA(clip_w=clip, n_epochs=n_epochs).calibrate(
        objective, n_train, PrivacyBudget(epsilon, 1e-5))
    energy = 0.0 if math.isinf(epsilon) else primal_noise_energy(
        calibration, objective.n_primal, make_sampler("poisson", n_train, 64))
    return energy, calibration.n_steps


def _capped(energy, c0=0.7):
    """The Yang et al. reproduction's cap on step * clip."""
    return c0 / (1.0 + 2.0 * math.sqrt(energy) + energy / 2.0)


def _linear_decay(product, clip, n_epochs=15):
    """Linear decay from twice the mean step ``product / clip``, last iterate."""
    return NoisySGDA(clip_w=clip, step_size=2.0 * product / clip, schedule="linear",
                     average="last", n_epochs=n_epochs)


def _cap_solver(model, X_train, y_train, epsilon, clip, schedule, n_epochs):
    energy, _ = _noise_plan(model, X_train, y_train, epsilon, clip, n_epochs)
    if schedule == "linear":
        return _linear_decay(_capped(energy), clip, n_epochs)
    return NoisySGDA(clip_w=clip, step_size=_capped(energy) / clip, average="tail",
                     n_epochs=n_epochs)


def typical_score_grad(n_features, data_norm, hidden_units=256):
    """sqrt(E ||grad_theta h||^2) at the public initial weights, for a row of norm
    data_norm / 2 in a random direction (data-free)."""
    from skdpminimax.objectives.scorers import MLPScorer
    scorer = MLPScorer(hidden_units)
    W1, b1, w2 = scorer._unpack(scorer.init_params(n_features), n_features)
    r2 = (data_norm / 2.0) ** 2
    first = float(w2 @ w2) * (r2 + 1.0) / 2.0
    hidden = (float(np.sum(W1 * W1)) * r2 / n_features + float(b1 @ b1)) / 2.0
    return math.sqrt(first + hidden)


def _typ_solver(model, X_train, y_train, epsilon, data_norm, k, c0):
    clip = k * typical_score_grad(X_train.shape[1], data_norm)
    energy, _ = _noise_plan(model, X_train, y_train, epsilon, clip)
    return _linear_decay(_capped(energy, c0), clip)


def _walk_solver(model, X_train, y_train, epsilon, clip, rho, per_step=None):
    # step * clip = min(0.7, rho / sqrt(E T)): the run's accumulated noise, of norm
    # step * clip * sqrt(E T), at most rho; without noise the cap 0.7. With per_step,
    # also a step's noise, step * clip * sqrt(E), at most per_step.
    energy, n_steps = _noise_plan(model, X_train, y_train, epsilon, clip)
    product = 0.7
    if energy > 0:
        product = min(product, rho / math.sqrt(energy * n_steps))
        if per_step is not None:
            product = min(product, per_step / math.sqrt(energy))
    return _linear_decay(product, clip)


def fit_auc(split, epsilon, seed, candidate):
    X_train, X_test, y_train, y_test, data_norm = split

    def model(solver="sgda", scorer="mlp"):
        return DPAUCMaximizer(epsilon=epsilon, delta=1e-5, data_norm=data_norm, scorer=scorer,
                              pos_ratio=float(np.mean(y_train)), solver=solver,
                              random_state=seed)

    if candidate == "linear default":
        fitted = model(scorer="linear").fit(X_train, y_train)
    elif candidate == "default":
        fitted = model().fit(X_train, y_train)
    elif candidate == "default 15":  # the default before n_epochs="auto"
        fitted = model(NoisySGDA(step_size="scaled", clip_w=5.0, schedule="linear",
                                 average="last")).fit(X_train, y_train)
    elif candidate == "before":  # the default until the rule: step 0.1, clip 1
        fitted = model(NoisySGDA(average="last")).fit(X_train, y_train)
    elif candidate.startswith("walk"):
        _, clip, rho = candidate.split()
        solver = _walk_solver(model, X_train, y_train, epsilon, float(clip), float(rho))
        fitted = model(solver).fit(X_train, y_train)
    elif candidate.startswith("mix"):
        _, clip, per_step, rho = candidate.split()
        solver = _walk_solver(model, X_train, y_train, epsilon, float(clip), float(rho),
                              per_step=float(per_step))
        fitted = model(solver).fit(X_train, y_train)
    elif candidate.startswith("typ"):
        _, k, c0 = candidate.split()
        solver = _typ_solver(model, X_train, y_train, epsilon, data_norm, float(k), float(c0))
        fitted = model(solver).fit(X_train, y_train)
    else:
        parts = candidate.split()
        clip = float(parts[1])
        schedule = "linear" if "lin" in parts else "constant"
        n_epochs = "auto" if "auto" in parts else 15
        solver = _cap_solver(model, X_train, y_train, epsilon, clip, schedule, n_epochs)
        fitted = model(solver).fit(X_train, y_train)
    return 100.0 * roc_auc_score(y_test, fitted.decision_function(X_test))


def baseline(split, seed):
    X_train, X_test, y_train, y_test, _ = split
    mlp = MLPClassifier((256,), max_iter=300, early_stopping=True, random_state=seed)
    return 100.0 * roc_auc_score(y_test, mlp.fit(X_train, y_train).predict_proba(X_test)[:, 1])


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--epsilons", type=float, nargs="+", default=[1.0, 10.0, math.inf])
    parser.add_argument("--seeds", type=int, default=3)
    parser.add_argument("--data-dir", default=None,
                        help="adds ijcnn1 and Adult from this directory")
    parser.add_argument("--candidates", nargs="+",
                        default=["linear default", "before", "default"])
    parser.add_argument("--only", nargs="+", default=None, help="data names to run")
    parser.add_argument("--held-out", action="store_true",
                        help="run the data sets not used to set the rule instead")
    args = parser.parse_args()
    warnings.filterwarnings("ignore")  # PrivacyLeakWarning etc.: a diagnosis, not a release
    start = time.perf_counter()
    print("| data set | MLPClassifier | epsilon | " + " | ".join(args.candidates) + " |")
    print("|---|---|---|" + "---|" * len(args.candidates))
    for name, *split in (held_out_datasets() if args.held_out else datasets(args.data_dir)):
        if args.only and name not in args.only:
            continue
        top = np.mean([baseline(split, seed) for seed in range(args.seeds)])
        for epsilon in args.epsilons:
            means = [np.mean([fit_auc(split, epsilon, seed, c) for seed in range(args.seeds)])
                     for c in args.candidates]
            print(f"| {name} | {top:.2f} | {epsilon:g} | "
                  + " | ".join(f"{m:.2f}" for m in means) + " |", flush=True)
    print(f"\n{time.perf_counter() - start:.0f} s")


if __name__ == "__main__":
    main()
