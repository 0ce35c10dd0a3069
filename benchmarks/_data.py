"""Loaders for the benchmark data (numpy only; never downloads).

The directory comes from ``--data-dir``, else ``$SKDPMINIMAX_DATA``, else
``../shared/data`` relative to the repository root.
"""

import csv
import os
from pathlib import Path

import numpy as np

__all__ = ["data_dir", "load_adult", "load_law_school"]

_REPO = Path(__file__).resolve().parents[1]


def data_dir(option=None):
    path = Path(option or os.environ.get("SKDPMINIMAX_DATA") or _REPO.parent / "shared" / "data")
    if not path.is_dir():
        raise SystemExit(f"Benchmark data directory {path} not found; pass --data-dir.")
    return path


_ADULT_COLUMNS = ["age", "workclass", "fnlwgt", "education", "education-num", "marital-status",
                  "occupation", "relationship", "race", "sex", "capital-gain", "capital-loss",
                  "hours-per-week", "native-country", "income"]
# Public scalings of the numeric columns (from adult.names ranges), so no statistic of
# the training data enters the features; every row then has norm <= sqrt(n_columns).
_ADULT_NUMERIC = {"age": lambda v: v / 90.0, "education-num": lambda v: v / 16.0,
                  "hours-per-week": lambda v: v / 99.0,
                  "capital-gain": lambda v: np.log1p(v) / np.log1p(99999.0),
                  "capital-loss": lambda v: np.log1p(v) / np.log1p(4356.0)}
_ADULT_CATEGORICAL = ["workclass", "education", "marital-status", "occupation", "relationship",
                      "native-country"]


def _read_adult(path):
    rows = []
    with open(path) as fh:
        for line in fh:
            parts = [p.strip() for p in line.strip().split(",")]
            if len(parts) != len(_ADULT_COLUMNS) or "?" in parts:
                continue
            rows.append(parts)
    return np.array(rows, dtype=object)


def load_adult(directory):
    """``(X_train, y_train, race_sex_train, X_test, y_test, race_sex_test, data_norm)``.

    Rows with missing values are dropped; categories come from the training file
    (the same lists adult.names publishes). ``data_norm`` is the public bound
    ``sqrt(n_numeric + n_categorical)``.
    """
    train, test = _read_adult(directory / "adult.data"), _read_adult(directory / "adult.test")
    col = {name: i for i, name in enumerate(_ADULT_COLUMNS)}
    cats = {c: sorted(set(train[:, col[c]])) for c in _ADULT_CATEGORICAL}

    def features(rows):
        blocks = [f(rows[:, col[c]].astype(float))[:, None] for c, f in _ADULT_NUMERIC.items()]
        for c in _ADULT_CATEGORICAL:
            blocks.append((rows[:, col[c]][:, None] == np.array(cats[c])[None, :]).astype(float))
        X = np.hstack(blocks)
        y = np.array([r.startswith(">50K") for r in rows[:, col["income"]]], dtype=int)
        groups = np.array([f"{r}|{s}" for r, s in zip(rows[:, col["race"]], rows[:, col["sex"]])])
        return X, y, groups

    data_norm = float(np.sqrt(len(_ADULT_NUMERIC) + len(_ADULT_CATEGORICAL)))
    return (*features(train), *features(test), data_norm)


def load_law_school(directory):
    """``(X, y, race)`` with X = (LSAT/48, UGPA/4.2, sex), target ZFYA (clipped later)."""
    with open(directory / "law-school" / "law_data.csv") as fh:
        rows = list(csv.DictReader(fh))
    X = np.array([[float(r["LSAT"]) / 48.0, float(r["UGPA"]) / 4.2, float(r["sex"]) - 1.0]
                  for r in rows])
    y = np.array([float(r["ZFYA"]) for r in rows])
    race = np.array([r["race"] for r in rows])
    return X, y, race


def diffprivlib_logistic_regression(**params):
    """diffprivlib's LogisticRegression under scikit-learn >= 1.8.

    diffprivlib 0.6.6 passes ``multi_class='ovr'`` to scikit-learn's constructor,
    which 1.8 removed; the argument is dropped while constructing (fit is unaffected:
    diffprivlib fits one-vs-rest itself).
    """
    from diffprivlib.models import LogisticRegression
    from sklearn.linear_model import LogisticRegression as SkLogisticRegression

    original = SkLogisticRegression.__init__

    def init(self, *args, multi_class=None, **kwargs):
        original(self, *args, **kwargs)

    SkLogisticRegression.__init__ = init
    try:
        return LogisticRegression(**params)
    finally:
        SkLogisticRegression.__init__ = original
