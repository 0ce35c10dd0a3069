"""Group metrics: per-group loss and accuracy, worst-group values, demographic parity gap.

Every function takes ``sensitive_features`` (1-D, or 2-D for intersections of
attributes, as in fairlearn) and returns plain Python / numpy values. These are
evaluation tools: computed on data they are *not* private.
"""

import numpy as np
from sklearn.metrics import accuracy_score, mean_squared_error

from skdpminimax.estimators._groups import encode_groups

__all__ = [
    "group_metric",
    "group_accuracy",
    "group_loss",
    "worst_group_accuracy",
    "worst_group_loss",
    "demographic_parity_gap",
]


def group_metric(metric, y_true, y_pred, *, sensitive_features):
    """``{group: metric(y_true[g], y_pred[g])}`` for every group present.

    Parameters
    ----------
    metric : callable ``(y_true, y_pred) -> float``
    y_true, y_pred : array-like of shape (n_samples, ...)
    sensitive_features : array-like of shape (n_samples,) or (n_samples, n_attrs)

    Returns
    -------
    values : dict
    """
    y_true, y_pred = np.asarray(y_true), np.asarray(y_pred)
    if y_true.shape[0] != y_pred.shape[0]:
        raise ValueError(f"y_true has {y_true.shape[0]} rows, y_pred {y_pred.shape[0]}.")
    codes, labels = encode_groups(sensitive_features, y_true.shape[0])
    return {label: float(metric(y_true[codes == k], y_pred[codes == k]))
            for k, label in enumerate(labels)}


def group_accuracy(y_true, y_pred, *, sensitive_features):
    """Accuracy of each group."""
    return group_metric(accuracy_score, y_true, y_pred, sensitive_features=sensitive_features)


def group_loss(y_true, y_pred, *, sensitive_features, loss=mean_squared_error):
    """Mean loss of each group (default: mean squared error)."""
    return group_metric(loss, y_true, y_pred, sensitive_features=sensitive_features)


def worst_group_accuracy(y_true, y_pred, *, sensitive_features):
    """Smallest per-group accuracy."""
    return min(group_accuracy(y_true, y_pred, sensitive_features=sensitive_features).values())


def worst_group_loss(y_true, y_pred, *, sensitive_features, loss=mean_squared_error):
    """Largest per-group mean loss."""
    return max(group_loss(y_true, y_pred, sensitive_features=sensitive_features,
                          loss=loss).values())


def demographic_parity_gap(y_pred, *, sensitive_features, reference="max_min"):
    """Demographic parity gap of predictions (scores or 0/1 decisions).

    ``reference="max_min"``: ``max_a E[h | a] - min_a E[h | a]`` (fairlearn's
    ``demographic_parity_difference`` for 0/1 decisions); ``"overall"``:
    ``max_a |E[h | a] - E[h]|``, the quantity :class:`DPGroupFairRegressor` bounds.
    """
    y_pred = np.asarray(y_pred, dtype=float)
    means = np.array(list(group_metric(lambda _, p: p.mean(), y_pred, y_pred,
                                       sensitive_features=sensitive_features).values()))
    if reference == "max_min":
        return float(means.max() - means.min())
    if reference == "overall":
        return float(np.max(np.abs(means - y_pred.mean())))
    raise ValueError(f"reference must be 'max_min' or 'overall', got {reference!r}.")
