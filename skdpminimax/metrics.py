r"""Evaluation metrics: duality gaps of saddle problems, and group metrics.

**Duality gaps**: empirical strong and weak duality gaps.

For a candidate ``(w, v)`` and an objective :math:`\Phi` on some data (training data
for the empirical gap, held-out data for a plug-in estimate of the population gap),

.. math::

    P(w) = \max_{v' \in V} \Phi(w, v'), \qquad D(v) = \min_{w' \in W} \Phi(w', v),
    \qquad \mathrm{Gap}(w, v) = P(w) - D(v) \ge 0 .

The inner problems are solved inexactly, so every value is returned as a
**certified interval** (seed-001 digest, section 6.2). For a concave maximisation
of :math:`g` over a set :math:`S`, any iterate :math:`x` gives
:math:`g(x) \le \max_S g \le g(x) + \min\big(\max_{u \in S}\langle\nabla g(x), u - x\rangle,\
\|\nabla g(x)\|^2/(2\mu)\big)` (the Frank-Wolfe linearisation; the second term only
when ``g`` is ``mu``-strongly concave). The naive plug-in gap (the lower end) under-reports,
so report both ends.

- :func:`duality_gap`: the strong gap of one point;
- :func:`strong_duality_gap`: the mean gap over several outputs (e.g. fits on
  independent data sets or seeds), :math:`E[\mathrm{Gap}(w_r, v_r)]`;
- :func:`weak_duality_gap`: :math:`\max_v \frac1R\sum_r \Phi(w_r, v) - \min_w
  \frac1R \sum_r \Phi(w, v_r)`, the expectation inside the max/min. It is ``<=`` the
  strong gap and can be much smaller (seed 001, Prop. 13: 0 versus 2).

**Group metrics**: per-group loss and accuracy, worst-group values and the
demographic-parity gap (:func:`group_metric`, :func:`group_accuracy`, :func:`group_loss`,
:func:`worst_group_accuracy`, :func:`worst_group_loss`,
:func:`demographic_parity_gap`). They take ``sensitive_features`` (1-D, or 2-D for
intersections of attributes, as in fairlearn) and return plain Python / numpy values.
Like the gaps, these are evaluation tools: computed on data, they are *not* private.
"""

from dataclasses import dataclass

import numpy as np
from sklearn.metrics import accuracy_score, mean_squared_error

from skdpminimax.estimators._groups import encode_groups
from skdpminimax.solvers.certificates import linear_gap

__all__ = [
    # duality gaps
    "GapInterval",
    "duality_gap",
    "strong_duality_gap",
    "weak_duality_gap",
    # group metrics
    "group_metric",
    "group_accuracy",
    "group_loss",
    "worst_group_accuracy",
    "worst_group_loss",
    "demographic_parity_gap",
]


@dataclass(frozen=True)
class GapInterval:
    """A certified interval ``lower <= gap <= upper`` and its two halves.

    Attributes
    ----------
    lower, upper : float
        Bounds on the gap.
    primal : tuple of float
        Bounds on the primal value ``P`` (max over ``v``).
    dual : tuple of float
        Bounds on the dual value ``D`` (min over ``w``).
    """

    lower: float
    upper: float
    primal: tuple
    dual: tuple

    @property
    def width(self):
        return self.upper - self.lower


def _maximize_concave(value_grad, S, x, mu, tol, max_iter):
    """Projected gradient ascent with backtracking; returns certified ``(lo, hi)`` of ``max_S g``.

    ``value_grad(x) -> (g(x), grad g(x))``; ``mu >= 0`` is a strong-concavity modulus.
    Stops when the interval is narrower than ``tol`` or after ``max_iter`` steps (the
    interval is valid either way, only wider).
    """
    x = S.project(np.array(x, dtype=float))
    val, grad = value_grad(x)
    eta, lo, hi = 1.0, -np.inf, np.inf
    for _ in range(max_iter + 1):
        bound = linear_gap(S, -grad, x)  # max_u <grad, u - x>
        if mu > 0:
            bound = min(bound, float(grad @ grad) / (2.0 * mu))
        lo, hi = max(lo, val), min(hi, val + bound)
        if hi - lo <= tol:
            break
        while True:  # sufficient-ascent test of an ell-smooth concave g with ell = 1/eta
            x_new = S.project(x + eta * grad)
            step = x_new - x
            val_new, grad_new = value_grad(x_new)
            if val_new >= val + float(grad @ step) - float(step @ step) / (2.0 * eta) - 1e-15 * abs(val):
                break
            eta /= 2.0
            if eta < 1e-20:
                return lo, hi
        x, val, grad, eta = x_new, val_new, grad_new, 2.0 * eta
    return lo, hi


def _primal_value(objective, data, ws, tol, max_iter):
    """Bounds on ``max_v mean_r Phi(w_r, v)``."""
    def value_grad(v):
        vals, grads = zip(*((objective.value(w, v, data), objective.grad(w, v, data)[1])
                            for w in ws))
        return float(np.mean(vals)), np.mean(grads, axis=0)

    v0 = objective.init_params()[1]
    return _maximize_concave(value_grad, objective.dual_set, v0,
                             float(objective.strong_convexity()[1]), tol, max_iter)


def _dual_value(objective, data, vs, tol, max_iter):
    """Bounds on ``min_w mean_r Phi(w, v_r)`` (maximise the negation)."""
    def value_grad(w):
        vals, grads = zip(*((objective.value(w, v, data), objective.grad(w, v, data)[0])
                            for v in vs))
        return -float(np.mean(vals)), -np.mean(grads, axis=0)

    w0 = objective.init_params()[0]
    lo, hi = _maximize_concave(value_grad, objective.primal_set, w0,
                               float(objective.strong_convexity()[0]), tol, max_iter)
    return -hi, -lo


def _interval(primal, dual):
    # The gap is >= 0; rounding at an exact saddle point can put either end a few ulps
    # below 0 (upper -1e-17 under lower 0 in a review): both are floats, lower <= upper.
    lower = max(float(primal[0] - dual[1]), 0.0)
    upper = max(float(primal[1] - dual[0]), lower)
    return GapInterval(lower=lower, upper=upper, primal=primal, dual=dual)


def _check_convex_concave(objective):
    # The interval's bounds (linear-gap and strong-concavity bounds on each inner
    # optimum) hold only for a convex-concave objective.
    mu_w, mu_v = (float(m) for m in objective.strong_convexity())
    if mu_w < 0 or mu_v < 0:
        raise ValueError(
            "Certified duality gaps need a convex-concave objective; "
            f"{type(objective).__name__}.strong_convexity() = {(mu_w, mu_v)} does not claim "
            "it (e.g. the MLP scorer is nonconvex in its weights; -inf, the default, "
            "means unknown: override strong_convexity() with 0 for a convex-concave one)."
        )


def _as_points(points, objective=None):
    out = [(np.asarray(w, dtype=float), np.asarray(v, dtype=float)) for w, v in points]
    if objective is not None:
        shapes = tuple(np.shape(p) for p in objective.init_params())
        for w, v in out:
            if (w.shape, v.shape) != shapes:
                raise ValueError(f"Points must have the objective's shapes {shapes} (w, v), "
                                 f"got {(w.shape, v.shape)}.")
    return out


def _checked_data(objective, data):
    """``data`` prepared, after the objective's own domain check (labels in {-1, +1} for
    the AUC objective, say): a gap on data outside it certifies the wrong problem."""
    if hasattr(objective, "check_data"):  # y=None too, as the estimators check it
        objective.check_data(data.y, data.groups)
    return objective.prepare(data)


def duality_gap(objective, data, w, v, *, tol=1e-8, max_iter=10_000):
    """Certified interval on the strong duality gap ``P(w) - D(v)`` of one point.

    Parameters
    ----------
    objective : SaddleObjective
        Use the unregularised objective of the task (not a solver's phase objective).
    data : SaddleData
        Training data (empirical gap) or held-out data (population plug-in; it
        over-estimates the population gap in expectation).
    w, v : ndarray
        The primal and dual point.
    tol : float, default=1e-8
        Target width of each inner interval.
    max_iter : int, default=10000
        Inner iterations per value; the interval stays valid if it is reached.

    Returns
    -------
    GapInterval
        Certified lower and upper bounds on the gap.
    """
    _check_convex_concave(objective)
    ((w, v),) = _as_points([(w, v)], objective)
    data = _checked_data(objective, data)
    primal = _primal_value(objective, data, [w], tol, max_iter)
    dual = _dual_value(objective, data, [v], tol, max_iter)
    return _interval(primal, dual)


def strong_duality_gap(objective, data, points, *, tol=1e-8, max_iter=10_000):
    """Mean strong gap over outputs ``[(w_r, v_r)]``: ``(1/R) sum_r Gap(w_r, v_r)`` (interval)."""
    gaps = [duality_gap(objective, data, w, v, tol=tol, max_iter=max_iter)
            for w, v in _as_points(points, objective)]
    mean = lambda xs: float(np.mean(xs))  # noqa: E731
    return GapInterval(
        lower=mean([g.lower for g in gaps]), upper=mean([g.upper for g in gaps]),
        primal=(mean([g.primal[0] for g in gaps]), mean([g.primal[1] for g in gaps])),
        dual=(mean([g.dual[0] for g in gaps]), mean([g.dual[1] for g in gaps])),
    )


def weak_duality_gap(objective, data, points, *, tol=1e-8, max_iter=10_000):
    """Weak gap ``max_v (1/R) sum_r Phi(w_r, v) - min_w (1/R) sum_r Phi(w, v_r)`` (interval).

    ``points`` are outputs of one algorithm on independent data sets (and seeds);
    the expectation over them sits inside the max and the min. This is not the gap
    at the averaged point, which is smaller still unless ``Phi`` is bilinear.
    """
    _check_convex_concave(objective)
    points = _as_points(points, objective)
    data = _checked_data(objective, data)
    primal = _primal_value(objective, data, [w for w, _ in points], tol, max_iter)
    dual = _dual_value(objective, data, [v for _, v in points], tol, max_iter)
    return _interval(primal, dual)


# ---- group metrics ------------------------------------------------------------

def group_metric(metric, y_true, y_pred, *, sensitive_features):
    """``{group: metric(y_true[g], y_pred[g])}`` for every group present.

    Parameters
    ----------
    metric : callable ``(y_true, y_pred) -> float``
        The metric computed on each group's rows.
    y_true, y_pred : array-like of shape (n_samples, ...)
        True and predicted values.
    sensitive_features : array-like of shape (n_samples,) or (n_samples, n_attrs)
        Group membership (several attributes: one group per combination).

    Returns
    -------
    values : dict
        ``{group label: metric value}``.
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
    ``max_a |E[h | a] - E[h]|``, the quantity :class:`~skdpminimax.estimators.DPGroupFairRegressor` bounds.
    """
    y_pred = np.asarray(y_pred, dtype=float)
    means = np.array(list(group_metric(lambda _, p: p.mean(), y_pred, y_pred,
                                       sensitive_features=sensitive_features).values()))
    if reference == "max_min":
        return float(means.max() - means.min())
    if reference == "overall":
        return float(np.max(np.abs(means - y_pred.mean())))
    raise ValueError(f"reference must be 'max_min' or 'overall', got {reference!r}.")
