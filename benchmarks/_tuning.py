"""Hyperparameter selection on a validation split carved from the training data.

Non-private tuning: every candidate fit is private, but comparing them on the
validation rows is not (a private selection would need e.g. the exponential
mechanism and more budget). The test split is never seen here.
"""

import itertools

import numpy as np
from sklearn.model_selection import train_test_split

__all__ = ["validation_split", "grid", "select"]


def validation_split(X, y, groups, fraction=0.25, random_state=0):
    """``(X_fit, X_val, y_fit, y_val, g_fit, g_val)``, stratified by group."""
    return train_test_split(X, y, groups, test_size=fraction, random_state=random_state,
                            stratify=groups)


def grid(**axes):
    """All combinations of the given axes as a list of dicts."""
    names = list(axes)
    return [dict(zip(names, values)) for values in itertools.product(*axes.values())]


def select(candidates, score, seeds=(0, 1), better=min, log=print):
    """The candidate with the best mean ``score(candidate, seed)`` (a number or a tuple)."""
    results = []
    for cand in candidates:
        values = np.array([score(cand, s) for s in seeds], dtype=float)
        mean = values.mean(axis=0)
        log(f"  validation {cand}: {np.round(mean, 4).tolist()}")
        results.append((cand, mean))
    return better(results, key=lambda r: tuple(np.atleast_1d(r[1])))[0]
