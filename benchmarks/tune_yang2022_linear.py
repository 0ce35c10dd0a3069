"""Validation runs behind the linear rules of ``reproduce_yang2022.py`` (non-private tuning).

Only the training split is read: 8,000 of the 39,992 ijcnn1 training rows, or 10,000 of
the 60,000 MNIST / Fashion-MNIST training images, are held out (stratified, seed 0) and
scored by validation ROC AUC; the test split is never read. Each argument is one JSON
candidate with keys ``dataset`` (default ``"mnist"``), ``method`` (``"sgda-linear"``,
``"nseg"``, or ``"sgda-mlp"``: any cell of the reproduction), ``eps``, ``delta`` (default 1e-6), ``seeds`` (default ``[0, 1]``) and ``set``:
module constants of the reproduction overridden for this candidate only, e.g.
``LINEAR_CLIP_FRACTION``, ``LINEAR_AVERAGE``, ``LINEAR_STEP_DAMPING_POWER``,
``LINEAR_SCHEDULES``, ``LINEAR_DECAY_PEAK``, ``NSEG_EXTRAPOLATION_NOISE``,
``POS_RATIO_BUDGET``, ``FEATURE_STATS`` (``{}``: public scaling everywhere),
``FEATURE_STATS_SHARE``, ``FEATURE_STATS_CLIP``, ``FEATURE_STATS_MAX_NOISE``. The fit is the reproduction's own cell
(``run_cell``) on the fitting rows. Examples (numbers in docs/benchmarks.md; the image
runs before ``-rng5`` had no per-data-set schedule, ``"LINEAR_SCHEDULES": {}``)::

    python benchmarks/tune_yang2022_linear.py \\
        '{"dataset": "mnist", "eps": 0.1, "set": {"LINEAR_SCHEDULES": {}}}' \\
        '{"dataset": "mnist", "eps": 0.1, "set": {"LINEAR_SCHEDULES": {}, "LINEAR_AVERAGE": "tail"}}' \\
        '{"dataset": "mnist", "eps": 0.1, "set": {"LINEAR_DECAY_PEAK": 0.75}}' \\
        '{"method": "nseg", "eps": 0.1, "set": {"NSEG_EXTRAPOLATION_NOISE": 1}}' \\
        '{"dataset": "ijcnn1", "method": "sgda-mlp", "eps": 1, "seeds": [0, 1, 2]}'
"""

import json
import sys
from pathlib import Path

import numpy as np

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))
sys.path.insert(0, str(ROOT / "benchmarks"))

import reproduce_yang2022 as repro  # noqa: E402
from tune_yang2022_mlp import validation_split  # noqa: E402


def run(candidate, splits):
    """Mean validation AUC (percent) and the per-seed AUCs of one candidate."""
    cand = dict(candidate)
    dataset = cand.get("dataset", "mnist")
    if dataset not in splits:
        splits[dataset] = validation_split(dataset)
    overrides = cand.get("set", {})
    unknown = [name for name in overrides if not hasattr(repro, name)]
    if unknown:
        raise ValueError(f"not constants of the reproduction: {unknown}")
    saved = {name: getattr(repro, name) for name in overrides}
    try:
        for name, value in overrides.items():
            setattr(repro, name, value)
        aucs = [repro.run_cell(cand.get("method", "sgda-linear"), dataset, cand["eps"],
                               cand.get("delta", 1e-6), seed, splits[dataset])["auc"]
                for seed in cand.get("seeds", [0, 1])]
    finally:
        for name, value in saved.items():
            setattr(repro, name, value)
    return float(np.mean(aucs)), aucs


def main(argv):
    splits = {}
    for text in argv:
        mean, aucs = run(json.loads(text), splits)
        print(f"{text} val AUC {mean:.3f} ({' '.join(f'{a:.2f}' for a in aucs)})", flush=True)


if __name__ == "__main__":
    main(sys.argv[1:])
