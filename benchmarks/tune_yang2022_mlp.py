"""Validation runs behind the ijcnn1 MLP rules of ``reproduce_yang2022.py`` (non-private tuning).

8,000 of the 39,992 ijcnn1 training rows are held out (stratified, seed 0) and scored
by validation ROC AUC; the test split is never read. Each argument is one JSON
candidate; keys (defaults in :func:`run`): ``eps``, ``delta``, ``step``, ``dstep``,
``clip``, ``clipv``, ``average``, ``radius``, ``slope``, ``init_scale``, ``alloc``,
``adapt`` (apply ``adapt_to_noise``), ``damp`` ((k1, k2) of the MLP step rule),
``seeds``. Example (the numbers in docs/benchmarks.md, "Diagnosis of the ijcnn1 MLP
gap")::

    python benchmarks/tune_yang2022_mlp.py '{"step": 0.143, "average": "last", "adapt": false}' \\
        '{"eps": 1, "step": 0.143, "clipv": 1, "alloc": 0.02, "seeds": [0, 1]}'
"""

import json
import math
import sys
import time
from pathlib import Path

import numpy as np
from sklearn.metrics import roc_auc_score
from sklearn.model_selection import train_test_split

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))
sys.path.insert(0, str(ROOT / "benchmarks"))

import reproduce_yang2022 as repro  # noqa: E402
from skdpminimax import DPAUCMaximizer  # noqa: E402
from skdpminimax.datasets import load_ijcnn1  # noqa: E402
from skdpminimax.objectives.scorers import MLPScorer  # noqa: E402
from skdpminimax.privacy import PrivacyBudget  # noqa: E402
from skdpminimax.solvers import NoisySGDA  # noqa: E402


class _ScaledInitMLP(MLPScorer):
    """MLPScorer with PyTorch's default init multiplied by ``init_scale`` (a lever tried)."""

    def __init__(self, hidden_units=256, negative_slope=0.01, init_scale=1.0):
        super().__init__(hidden_units, negative_slope)
        self.init_scale = init_scale

    def init_params(self, n_features, rng=None):
        return self.init_scale * super().init_params(n_features, rng)


class _Model(DPAUCMaximizer):
    def __init__(self, *, slope=0.01, init_scale=1.0, **kwargs):
        super().__init__(**kwargs)
        self.slope = slope
        self.init_scale = init_scale

    def _make_scorer(self):
        return _ScaledInitMLP(self.hidden_units, self.slope, self.init_scale)


def run(data, eps=math.inf, delta=1e-6, step=0.02, dstep=None, clip=5.0, clipv=None,
        average="tail", radius=100, slope=0.01, init_scale=1.0, alloc=0.1, adapt=True,
        damp=repro.MLP_STEP_DAMPING, seed=0):
    """Validation AUC (percent) and fit time of one candidate."""
    X_fit, X_val, y_fit, y_val = data
    solver = NoisySGDA(batch_size=repro.BATCH, n_epochs=10, step_size=step, dual_step_size=dstep,
                       clip_w=clip, clip_v=clip if clipv is None else clipv, average=average,
                       noise_allocation=alloc)
    private = math.isfinite(eps)
    model = _Model(epsilon=eps, delta=delta, data_norm=repro.DATA_NORM["ijcnn1"],
                   pos_ratio=None if private else float(y_fit.mean()), radius=radius, alpha=0.0,
                   scorer="mlp", solver=solver, random_state=seed, slope=slope,
                   init_scale=init_scale)
    if adapt:
        repro.MLP_STEP_DAMPING = tuple(damp)
        repro.adapt_to_noise("sgda-mlp", solver, model, X_fit.shape[0], X_fit.shape[1],
                             PrivacyBudget(eps, delta))
    start = time.perf_counter()
    model.fit(X_fit, y_fit)
    return 100 * roc_auc_score(y_val, model.decision_function(X_val)), time.perf_counter() - start


def main(argv):
    # $SKDPMINIMAX_DATA or ../shared/data (never downloaded); only the training split.
    X_train, _, y_train, _ = load_ijcnn1(None)
    data = train_test_split(X_train, y_train, test_size=8000, random_state=0, stratify=y_train)
    for text in argv:
        cand = json.loads(text)
        seeds = cand.pop("seeds", [0])
        res = [run(data, seed=s, **cand) for s in seeds]
        aucs = [r[0] for r in res]
        print(f"{json.dumps(cand)} val AUC {np.mean(aucs):.3f} "
              f"({' '.join(f'{a:.2f}' for a in aucs)}) {sum(r[1] for r in res):.0f}s", flush=True)


if __name__ == "__main__":
    main(sys.argv[1:])
