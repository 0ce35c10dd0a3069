"""Validation runs behind the MLP rules of ``reproduce_yang2022.py`` (non-private tuning).

Only the training split is read: 8,000 of the 39,992 ijcnn1 training rows, or 10,000
of the 60,000 MNIST / Fashion-MNIST training images, are held out (stratified, seed
0) and scored by validation ROC AUC; the test split is never read. Each argument is
one JSON candidate; keys (defaults in :func:`run`): ``dataset``, ``eps``, ``delta``,
``step`` (None: the paper's rate converted on the fitting rows, as the reproduction
does), ``step_mult`` (multiplies both steps; default the reproduction's
``MLP_STEP_MULT`` for converted steps, 1 for a given ``step``), ``dstep``, ``clip``,
``clipv``, ``schedule``, ``average``, ``radius``, ``slope``, ``init_scale``, ``alloc``,
``adapt`` (apply ``adapt_to_noise``), ``damp`` ((k1, k2) of the MLP step rule), ``cap`` (its
numerator), ``shrink`` (also shrink the primal clip with the noise, the rule until
``-mlp8``), ``seeds``. Unset keys follow the reproduction's current configuration
(``clipv``: the dual clip before the noise rule, None = the primal clip; ``schedule``
and ``average``: the data set's, ``sgda_schedule``; a ``"linear"`` schedule starts at
``MLP_LINEAR_PEAK`` times the capped step when ``adapt`` is on). Examples (the numbers
in docs/benchmarks.md)::

    python benchmarks/tune_yang2022_mlp.py '{"step": 0.143, "average": "last", "adapt": false}' \\
        '{"eps": 1, "step": 0.143, "clipv": 1, "alloc": 0.02, "seeds": [0, 1]}'
    python benchmarks/tune_yang2022_mlp.py '{"dataset": "mnist", "eps": 1}'
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
from skdpminimax.objectives.scorers import MLPScorer  # noqa: E402
from skdpminimax.privacy import PrivacyBudget  # noqa: E402
from skdpminimax.solvers import NoisySGDA  # noqa: E402


class _Model(DPAUCMaximizer):
    """DPAUCMaximizer with the leaky-ReLU slope as a parameter (a lever tried)."""

    def __init__(self, *, slope=0.01, **kwargs):
        super().__init__(**kwargs)
        self.slope = slope

    def _make_scorer(self):
        return MLPScorer(self.hidden_units, self.slope, self.init_scale)


def run(data, dataset="ijcnn1", eps=math.inf, delta=1e-6, step=None, step_mult=None, dstep=None,
        clip=None, clipv=repro.MLP_CLIP_V, schedule=None, average=None, radius=None, slope=0.01,
        init_scale=1.0, alloc=repro.MLP_DUAL_SHARE, adapt=True, damp=repro.MLP_STEP_DAMPING,
        cap=repro.MLP_STEP_CLIP_CAP, shrink=repro.MLP_SHRINK_PRIMAL_CLIP, seed=0):
    """Validation AUC (percent) and fit time of one candidate."""
    X_fit, X_val, y_fit, y_val = data
    if step is None:  # the reproduction's base steps on the fitting rows
        step, dstep = repro.converted_steps("sgda-mlp", dataset, X_fit.shape[0],
                                            repro.public_pos_ratio(dataset))
        step_mult = repro.MLP_STEP_MULT if step_mult is None else step_mult
    step_mult = 1.0 if step_mult is None else step_mult
    step, dstep = step * step_mult, None if dstep is None else dstep * step_mult
    clip = repro.CLIP_OVERRIDES[("sgda-mlp", dataset)] if clip is None else clip
    if radius is None:
        radius = repro.MLP_RADIUS or repro.PAPER_HYPER[("sgda-mlp", dataset)]["radius"]
    default_schedule, default_average = repro.sgda_schedule("sgda-mlp", dataset)
    solver = NoisySGDA(batch_size=repro.BATCH, n_epochs=10, step_size=step, dual_step_size=dstep,
                       clip_w=clip, clip_v=clip if clipv is None else clipv,
                       schedule=schedule or default_schedule,
                       average=average or default_average, noise_allocation=alloc)
    private = math.isfinite(eps)
    model = _Model(epsilon=eps, delta=delta, data_norm=repro.DATA_NORM[dataset],
                   pos_ratio=None if private else float(y_fit.mean()), radius=radius, alpha=0.0,
                   scorer="mlp", solver=solver, random_state=seed, slope=slope,
                   init_scale=init_scale, n_samples_budget=len(X_fit))
    if adapt:
        repro.adapt_to_noise("sgda-mlp", solver, model, X_fit.shape[0], X_fit.shape[1],
                             PrivacyBudget(eps, delta), damping=tuple(damp), cap=cap,
                             shrink_clip=shrink)
    start = time.perf_counter()
    model.fit(X_fit, y_fit)
    auc = 100 * roc_auc_score(y_val, model.decision_function(X_val))
    return auc, time.perf_counter() - start, solver.get_params()


def validation_split(dataset):
    """The held-out part of the TRAINING split (stratified, seed 0); test never read."""
    # $SKDPMINIMAX_DATA or ../shared/data (never downloaded); the reproduction's loader.
    X_train, _, y_train, _ = repro.load(dataset, None)
    held_out = 8000 if dataset == "ijcnn1" else 10000
    return train_test_split(X_train, y_train, test_size=held_out, random_state=0,
                            stratify=y_train)


def main(argv):
    splits = {}
    for text in argv:
        cand = json.loads(text)
        seeds = cand.pop("seeds", [0])
        dataset = cand.setdefault("dataset", "ijcnn1")
        if dataset not in splits:
            splits[dataset] = validation_split(dataset)
        res = [run(splits[dataset], seed=s, **cand) for s in seeds]
        aucs = [r[0] for r in res]
        used = res[0][2]
        print(f"{json.dumps(cand)} val AUC {np.mean(aucs):.3f} "
              f"({' '.join(f'{a:.2f}' for a in aucs)}) {sum(r[1] for r in res):.0f}s "
              f"[{used['schedule']} / {used['average']}, step {used['step_size']:.4g} "
              f"dual step {used['dual_step_size'] or used['step_size']:.4g} "
              f"clip {used['clip_w']:.3g} / {used['clip_v']:.3g}]", flush=True)


if __name__ == "__main__":
    main(sys.argv[1:])
