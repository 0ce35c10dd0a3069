"""The estimators every hardening test runs on: add new estimators here.

Each entry is a :class:`Case`: ``case.factory(**params)`` returns a fresh estimator
with a public ``data_norm`` (and public target ``bounds``), small fast solvers and
a fixed ``random_state``; ``case.data()`` gives a matching ``(X, y, fit_kwargs)``
(``fit_kwargs`` holds ``sensitive_features`` where the case uses groups).
"""

from dataclasses import dataclass, field

import numpy as np

from skdpminimax import DPAUCMaximizer, DPGroupFairRegressor, DPRobustClassifier, DPSaddleEstimator
from skdpminimax.objectives import SaddleObjective
from skdpminimax.sets import Box, L2Ball
from skdpminimax.solvers import NoisySGDA

N_SAMPLES, N_FEATURES = 40, 3


def _solver(**kw):
    return NoisySGDA(**{"batch_size": 8, "n_iter": 20, **kw})


class LabelledMean(SaddleObjective):
    """A small user objective: ``f(w, v; x, y) = ||w - y x||^2 / 2 + v a.w - lam v^2 / 2``
    with ``y`` clipped to ``[-1, 1]`` (so its gradient bound is public)."""

    def __init__(self, n_features, data_norm, lam=1.0, radius=5.0, v_bound=2.0):
        self.n_features, self.data_norm, self.lam = n_features, data_norm, lam
        self.radius, self.v_bound = radius, v_bound
        self.a = np.ones(n_features) / np.sqrt(n_features)
        self.primal_set, self.dual_set = L2Ball(radius), Box(-v_bound, v_bound)

    def init_params(self, rng=None):
        return np.zeros(self.n_features), np.zeros(1)

    def _target(self, data):
        y = np.zeros(data.n_samples) if data.y is None else np.asarray(data.y, float)
        return np.clip(y, -1.0, 1.0)[:, None] * data.X

    def per_example_values(self, w, v, data):
        return 0.5 * np.sum((w - self._target(data)) ** 2, axis=1) + v[0] * (self.a @ w)

    def per_example_grads(self, w, v, data):
        return w - self._target(data) + v[0] * self.a, np.full((data.n_samples, 1), self.a @ w)

    def reg_value(self, w, v):
        return -0.5 * self.lam * float(v @ v)

    def reg_grad(self, w, v):
        return np.zeros_like(w), -self.lam * v

    def lipschitz(self):
        return self.radius + self.data_norm + self.v_bound, self.radius

    def strong_convexity(self):
        return 1.0, self.lam

    def predict(self, w, X):
        return X @ w

    def decision_function(self, w, X):
        return X @ w


@dataclass(frozen=True)
class Case:
    """One estimator configuration under test."""

    name: str
    make: type
    params: dict = field(default_factory=dict)
    task: str = "binary"  # "binary", "multiclass" or "regression"
    groups: bool = False  # fit takes sensitive_features
    group_ratios: bool = False  # public group_ratios (dict by group label)

    def factory(self, **params):
        defaults = dict(epsilon=1.0, delta=1e-5, data_norm=3.0, solver=_solver(), random_state=0)
        return self.make(**{**defaults, **self.params, **params})

    @property
    def is_classifier(self):
        return self.task in ("binary", "multiclass")

    def data(self, n=N_SAMPLES, d=N_FEATURES, seed=0):
        rng = np.random.default_rng(seed)
        X = rng.normal(size=(n, d))
        score = X[:, 0] + 0.5 * rng.normal(size=n)
        if self.task == "binary":
            y = (score > 0).astype(int)
        elif self.task == "multiclass":
            y = np.digitize(score, [-0.5, 0.5])
        else:
            y = np.clip(score, -2.0, 2.0)
        kwargs = {}
        if self.groups:
            kwargs["sensitive_features"] = np.where(np.arange(n) % 3 == 0, "a", "b")
        return X, y, kwargs

    def output(self, model, X):
        """What a fitted model releases about ``X`` (scores where available)."""
        if hasattr(model, "decision_function"):
            return np.asarray(model.decision_function(X))
        return np.asarray(model.predict(X))


_FAIR = dict(bounds=(-2.0, 2.0), solver=_solver(clip_v=5.0))
_PUBLIC_GROUPS = {"a": 1 / 3, "b": 2 / 3}

CASES = [
    Case("AUC", DPAUCMaximizer, dict(pos_ratio=0.5)),
    # Spends a slice of the budget on the class ratio: the budget checks must cover it.
    Case("AUC-private-ratio", DPAUCMaximizer, dict(pos_ratio=None)),
    Case("AUC-mlp", DPAUCMaximizer,
         dict(pos_ratio=0.5, scorer="mlp", hidden_units=4, solver=_solver(average="last"))),
    Case("Robust-binary", DPRobustClassifier),
    Case("Robust-multiclass", DPRobustClassifier, task="multiclass"),
    Case("Robust-groups", DPRobustClassifier, groups=True),
    Case("Robust-multiclass-public-groups", DPRobustClassifier,
         dict(group_ratios=_PUBLIC_GROUPS), task="multiclass", groups=True, group_ratios=True),
    Case("Fair-minimax", DPGroupFairRegressor, dict(constraint="minimax_loss", **_FAIR),
         task="regression", groups=True),
    Case("Fair-parity-public-groups", DPGroupFairRegressor,
         dict(constraint="demographic_parity", group_ratios=_PUBLIC_GROUPS, **_FAIR),
         task="regression", groups=True, group_ratios=True),
    Case("Saddle-custom", DPSaddleEstimator, dict(objective_factory=LabelledMean),
         task="regression"),
    Case("Saddle-custom-groups", DPSaddleEstimator, dict(objective_factory=LabelledMean),
         task="regression", groups=True),
]


def estimators_under_test():
    """``[Case, ...]`` for ``pytest.mark.parametrize`` (ids: ``case.name``)."""
    return list(CASES)
