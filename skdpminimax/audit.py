r"""Empirical privacy audit: a lower bound on epsilon from a canary attack.

:func:`audit_estimator` trains an estimator many times on two neighbouring data
sets, one holding a *canary* record and one without it (or with it replaced), and
tries to tell from each fitted model which data set it was trained on. If a test
that guesses "canary in" has true-positive rate ``TPR`` and false-positive rate
``FPR``, any ``(epsilon, delta)``-DP training satisfies
``TPR <= exp(epsilon) FPR + delta`` (and the same with the roles of the two data
sets swapped), so

.. math::

    \epsilon \ge \log\frac{\mathrm{TPR} - \delta}{\mathrm{FPR}} .

With Clopper-Pearson bounds on ``TPR`` (lower) and ``FPR`` (upper) this is a lower
bound that holds with the stated confidence (Jagielski et al. 2020, "Auditing
differentially private machine learning"; Nasr et al. 2021, "Adversary
instantiation"). The test (a direction in the space of released parameters and a
threshold) is chosen on one part of the runs and evaluated on the others, so the
confidence statement is valid. A lower bound above the claimed epsilon proves the
claim false; a lower bound below it proves nothing (the attack may be weak).

The audit works on any scikit-learn classifier or regressor, private or not.
Its result is a function of the training data and is *not* private: run it on
public or synthetic data (the default).
"""

import warnings
from dataclasses import dataclass, field

import numpy as np
import scipy.sparse as sp
from scipy.stats import beta, norm
from sklearn.base import clone, is_classifier

from skdpminimax.privacy.gdp import gdp_epsilon

__all__ = ["AuditResult", "audit_estimator", "epsilon_lower_bound"]

# Relations whose name the estimators report in ``calibration_.neighboring_relation``.
_REPLACE, _ADD_REMOVE = "replace-one", "add/remove-one"


@dataclass(frozen=True)
class AuditResult:
    """Outcome of a canary audit (see :func:`audit_estimator`).

    Attributes
    ----------
    epsilon_lower_bound : float
        Epsilon the training must have at least, with probability ``confidence``
        (0 when the attack shows nothing).
    epsilon_claimed, delta : float
        The claim audited.
    confidence : float
        Joint confidence of the two Clopper-Pearson bounds.
    n_runs : int
        Training runs per data set (``2 * n_runs`` fits in all).
    threshold : float
        Threshold on the attack statistic, chosen on the selection runs.
    direction : str
        ``"in-above"`` (guess "canary in" when the statistic exceeds the threshold)
        or ``"out-above"``.
    true_positives, false_positives, true_negatives, false_negatives : int
        Counts of the chosen test on the evaluation runs ("positive" = canary in).
    tpr_lower, fpr_upper : float
        Clopper-Pearson bounds used for the bound (of the side that gave it): a
        lower bound on the rate of ``rate_names[0]`` and an upper bound on that of
        ``rate_names[1]``.
    epsilon_lower_bound_gdp : float
        Lower bound *assuming* the training's trade-off curve is Gaussian
        (mu-GDP, Dong et al. 2022), as full-batch DP-GDA's is; tighter, but only a
        heuristic for other mechanisms (Nasr et al. 2023).
    mu_lower_bound : float
        The GDP parameter behind ``epsilon_lower_bound_gdp``.
    neighboring_relation : str
        ``"replace-one"`` or ``"add/remove-one"``.
    scores_in, scores_out : ndarray
        Attack statistic of every run trained with / without the canary.
    n_selection : int
        Runs per data set used to choose the test (the others evaluate it).
    rate_names : tuple of str
        ``("TPR", "FPR")`` when the bound came from ``TPR <= e^eps FPR + delta``,
        ``("TNR", "FNR")`` when it came from the mirrored inequality.
    """

    epsilon_lower_bound: float
    epsilon_claimed: float
    delta: float
    confidence: float
    n_runs: int
    threshold: float
    direction: str
    true_positives: int
    false_positives: int
    true_negatives: int
    false_negatives: int
    tpr_lower: float
    fpr_upper: float
    epsilon_lower_bound_gdp: float
    mu_lower_bound: float
    neighboring_relation: str = _REPLACE
    scores_in: np.ndarray = field(default=None, repr=False)
    scores_out: np.ndarray = field(default=None, repr=False)
    n_selection: int = 0
    rate_names: tuple = ("TPR", "FPR")

    @property
    def violates_claim(self):
        """Whether the audit proves the claimed epsilon false (at ``confidence``)."""
        return self.epsilon_lower_bound > self.epsilon_claimed

    def summary(self):
        """A few lines a person can read."""
        verdict = ("VIOLATED: the claimed epsilon is too small" if self.violates_claim
                   else "consistent with the claim (a lower bound cannot prove privacy)")
        return (
            f"epsilon lower bound {self.epsilon_lower_bound:.3f} at {self.confidence:.0%} "
            f"confidence vs claimed ({self.epsilon_claimed:g}, {self.delta:g}): {verdict}\n"
            f"  evaluation: TP={self.true_positives} FN={self.false_negatives} "
            f"FP={self.false_positives} TN={self.true_negatives} "
            f"({self.rate_names[0]} >= {self.tpr_lower:.3f}, "
            f"{self.rate_names[1]} <= {self.fpr_upper:.4f}); "
            f"{self.n_runs} runs per data set, {self.neighboring_relation} neighbours\n"
            f"  if the training were Gaussian (mu-GDP): mu >= {self.mu_lower_bound:.3f}, "
            f"epsilon >= {self.epsilon_lower_bound_gdp:.3f}"
        )


# ---- statistics: Clopper-Pearson and the two bounds ---------------------------
def _cp_lower(k, n, alpha):
    k = np.asarray(k, float)
    with np.errstate(all="ignore"):
        out = beta.ppf(alpha, k, n - k + 1)
    return np.where(k > 0, out, 0.0)


def _cp_upper(k, n, alpha):
    k = np.asarray(k, float)
    with np.errstate(all="ignore"):
        out = beta.ppf(1.0 - alpha, k + 1, n - k)
    return np.where(k < n, out, 1.0)


def _tests(scores_in, scores_out, thresholds):
    """Counts (TP, FP) of "in if score > t" for each t, plus sample sizes."""
    s_in, s_out = np.sort(scores_in), np.sort(scores_out)
    above_in = s_in.size - np.searchsorted(s_in, thresholds, side="right")
    above_out = s_out.size - np.searchsorted(s_out, thresholds, side="right")
    return above_in, above_out, s_in.size, s_out.size


def _bounds(above_in, above_out, n_in, n_out, delta, alpha, floor=True):
    """Per side and threshold: (epsilon bound, mu bound, TPR_lo, FPR_hi).

    A threshold test gives two one-sided hypothesis tests, "in if above" and "out if
    above" (equivalently "in if below"); each gives the bound from
    ``TPR <= e^eps FPR + delta`` and its mirror ``TNR <= e^eps FNR + delta``.
    With ``floor=False`` the bounds are not floored at 0 (``-inf`` where
    ``TPR_lo <= delta``), so that tests that prove nothing are still ranked: the
    selection then picks the most nearly informative one instead of the first.
    """
    below_in, below_out = n_in - above_in, n_out - above_out
    # (positives, n_pos, false positives, n_neg) for the four inequalities.
    sides = [
        (above_in, n_in, above_out, n_out),   # in-above, TPR vs FPR
        (below_out, n_out, below_in, n_in),   # in-above, TNR vs FNR
        (above_out, n_out, above_in, n_in),   # out-above, TPR vs FPR
        (below_in, n_in, below_out, n_out),   # out-above, TNR vs FNR
    ]
    eps, mus, tprs, fprs = [], [], [], []
    for pos, n_pos, neg, n_neg in sides:
        tpr_lo = _cp_lower(pos, n_pos, alpha)
        fpr_hi = _cp_upper(neg, n_neg, alpha)
        with np.errstate(all="ignore"):
            e = np.where(tpr_lo > delta, np.log(np.maximum(tpr_lo - delta, 1e-300) / fpr_hi),
                         -np.inf)
            m = np.nan_to_num(norm.ppf(tpr_lo) - norm.ppf(fpr_hi), nan=-np.inf, posinf=-np.inf)
        eps.append(np.maximum(e, 0.0) if floor else e)
        mus.append(np.maximum(m, 0.0) if floor else m)
        tprs.append(tpr_lo)
        fprs.append(fpr_hi)
    return np.array(eps), np.array(mus), np.array(tprs), np.array(fprs)


def _predicted_counts(sel_in, sel_out, thresholds, n_in, n_out):
    """Counts the evaluation runs are expected to give at each threshold.

    A normal fit of the selection runs predicts the tails far better than their
    raw counts (the bound lives in the tails); a statistic that does not vary
    (a noiseless release) uses the raw rates. Only the choice of the test depends
    on this, so it affects power, never validity.
    """
    # A statistic with few distinct values (a 0/1 prediction, a count) has no
    # normal tails: the fit would pick thresholds where it has no mass.
    pooled = np.concatenate([sel_in, sel_out])
    discrete = np.unique(pooled).size <= max(10, pooled.size // 10)
    rates = []
    for s in (sel_in, sel_out):
        sd = s.std()
        if sd > 1e-12 * (1.0 + np.abs(s).max()) and not discrete:
            rates.append(norm.sf(thresholds, loc=s.mean(), scale=sd))
        else:
            rates.append(_tests(s, s, thresholds)[0] / s.size)
    return rates[0] * n_in, rates[1] * n_out, n_in, n_out


def _candidate_thresholds(scores):
    s = np.unique(scores)
    if s.size == 1:
        return np.array([s[0] - 1.0, s[0]])
    mids = 0.5 * (s[1:] + s[:-1])
    # Beyond the observed range too: a normal fit may put the best test there.
    pad = 3.0 * scores.std()
    grid = np.linspace(s[0] - pad, s[-1] + pad, 257)
    return np.unique(np.concatenate([[s[0] - 1.0], mids, grid]))


def epsilon_lower_bound(scores_in, scores_out, *, delta, confidence=0.95, n_selection=None,
                        epsilon_claimed=np.nan, n_runs=None, neighboring_relation=_REPLACE):
    """Audit bound from attack statistics of runs with (``scores_in``) / without the canary.

    The first ``n_selection`` runs of each sample choose the test (threshold and
    side) that maximises the bound predicted for the evaluation runs from a normal
    fit of the selection runs (raw rates for a statistic that does not vary), or,
    where no test is predicted to give a positive bound, the one of largest Gaussian
    separation ``Phi^-1(TPR_lo) - Phi^-1(FPR_hi)``; the remaining runs evaluate it with
    Clopper-Pearson bounds, each one-sided at ``(1 - confidence) / 2`` so that both
    hold together with probability ``confidence``.

    Parameters
    ----------
    scores_in, scores_out : array-like of shape (n_runs,)
        Attack statistic (any orientation) of independent runs.
    delta : float
        Claimed delta.
    confidence : float, default=0.95
        Probability with which the bound holds.
    n_selection : int or None, default=None
        Runs per sample used for selection; ``None`` uses half.
    epsilon_claimed : float, default=nan
        The claim the bound is compared with (kept in the result, for
        ``violates_claim``).
    n_runs : int or None, default=None
        Runs per data set to record in the result; ``None``: the number of scores.
    neighboring_relation : {"replace-one", "add/remove-one"}, default="replace-one"
        The relation of the two data sets, recorded in the result.

    Returns
    -------
    AuditResult
        The bounds, the test chosen and its counts.
    """
    scores_in = np.asarray(scores_in, float).ravel()
    scores_out = np.asarray(scores_out, float).ravel()
    n = min(scores_in.size, scores_out.size)
    if n < 4:
        raise ValueError(f"An audit needs at least 4 runs per data set, got {n}.")
    if not 0 < confidence < 1:
        raise ValueError(f"confidence must be in (0, 1), got {confidence}.")
    k = n // 2 if n_selection is None else int(n_selection)
    if not 1 <= k < n:
        raise ValueError(f"n_selection must be in [1, {n - 1}], got {k}.")
    alpha = (1.0 - confidence) / 2.0
    sel_in, sel_out = scores_in[:k], scores_out[:k]
    ev_in, ev_out = scores_in[k:n], scores_out[k:n]

    thresholds = _candidate_thresholds(np.concatenate([sel_in, sel_out]))
    counts = _predicted_counts(sel_in, sel_out, thresholds, ev_in.size, ev_out.size)
    eps_sel, mu_sel, _, _ = _bounds(*counts, delta, alpha, floor=False)
    gdp_side, gdp_idx = np.unravel_index(np.argmax(mu_sel), mu_sel.shape)
    if eps_sel.max() > 0:
        side, t_idx = np.unravel_index(np.argmax(eps_sel), eps_sel.shape)
    else:
        # No test is predicted to prove anything. The raw epsilon ratio then
        # favours the trivial test (everything "in": TPR = FPR = 1), which would
        # hide a real shift; the Gaussian separation ranks the tests by how
        # nearly informative they are.
        side, t_idx = gdp_side, gdp_idx

    def evaluate(side, t):
        counts = _tests(ev_in, ev_out, np.array([t]))
        eps, mu, tpr, fpr = _bounds(*counts, delta, alpha)
        return counts, float(eps[side, 0]), float(mu[side, 0]), float(tpr[side, 0]), float(fpr[side, 0])

    threshold = float(thresholds[t_idx])
    (above_in, above_out, n_in, n_out), eps, _, tpr, fpr = evaluate(side, threshold)
    _, _, mu, _, _ = evaluate(gdp_side, float(thresholds[gdp_idx]))
    in_above = side < 2
    tp = int(above_in[0]) if in_above else int(n_in - above_in[0])
    fp = int(above_out[0]) if in_above else int(n_out - above_out[0])
    return AuditResult(
        epsilon_lower_bound=eps,
        epsilon_claimed=float(epsilon_claimed),
        delta=float(delta),
        confidence=float(confidence),
        n_runs=int(n if n_runs is None else n_runs),
        threshold=threshold,
        direction="in-above" if in_above else "out-above",
        true_positives=tp,
        false_negatives=int(n_in - tp),
        false_positives=fp,
        true_negatives=int(n_out - fp),
        tpr_lower=tpr,
        fpr_upper=fpr,
        epsilon_lower_bound_gdp=gdp_epsilon(mu, delta=delta),
        mu_lower_bound=mu,
        neighboring_relation=neighboring_relation,
        scores_in=scores_in,
        scores_out=scores_out,
        n_selection=k,
        rate_names=("TPR", "FPR") if side % 2 == 0 else ("TNR", "FNR"),
    )


# ---- data sets and canary --------------------------------------------------------
def _default_data(estimator, n_samples=10, n_features=2):
    """Rows at the origin: they pull no linear model in any direction, so the
    canary's influence is all the signal there is (the worst case for privacy)."""
    X = np.zeros((n_samples, n_features))
    if is_classifier(estimator):
        y = np.arange(n_samples) % 2
    else:
        y = np.zeros(n_samples)
    return X, y


def _canary_norm(estimator, X):
    norm_bound = estimator.get_params().get("data_norm")
    if norm_bound is not None:
        return float(norm_bound)
    row_max = float(np.linalg.norm(X, axis=1).max()) if X.size else 0.0
    return row_max if row_max > 0 else 1.0


def _default_canary(estimator, X, y):
    """A row at the norm bound in the direction the data use least, labelled against
    the data there; and the label of its replacement (the opposite label)."""
    _, _, vt = np.linalg.svd(X, full_matrices=True)
    u = vt[-1]
    x_c = _canary_norm(estimator, X) * u
    proj = X @ u
    if is_classifier(estimator):
        labels, counts = np.unique(y, return_counts=True)
        if labels.size < 2:
            raise ValueError("The audit data need at least two classes.")
        means = np.array([proj[y == c].mean() for c in labels])
        # Against the data: the class least associated with this direction (ties:
        # the rarer class, whose rows weigh least).
        order = np.lexsort((counts, means))
        y_c, y_alt = labels[order[0]], labels[order[-1]]
    else:
        y = np.asarray(y, float)
        spread = float(np.ptp(y)) if y.size else 0.0
        corr = float(np.sign(proj @ (y - y.mean()))) or 1.0
        far = y.mean() - corr * 2.0 * (spread + 1.0)
        # Far outside the data's labels where the estimator takes them (the clip
        # bounds the gradient anyway); else the data's own extremes, for an objective
        # whose domain (check_data) ends at them.
        against, toward = (y.min(), y.max()) if corr > 0 else (y.max(), y.min())
        y_c, y_alt = _accepted_label_pair(
            estimator, X, y, x_c, [(far, 2.0 * y.mean() - far), (against, toward)])
    return x_c, y_c, y_alt


def _accepted_label_pair(estimator, X, y, x_c, pairs):
    """The first ``(label, replacement)`` of ``pairs`` that the estimator's pre-spend
    check (``_check_fit``: nothing spent, nothing changed) takes with the canary row;
    the first pair for an estimator without that check. Raises with the check's
    message when it takes none."""
    if not hasattr(estimator, "_check_fit"):
        return pairs[0]
    X_in = np.vstack([X, x_c])
    refusal = None
    for y_c, y_alt in pairs:
        try:
            for label in (y_c, y_alt):
                clone(estimator)._check_fit(X_in, np.append(y, label))
        except ValueError as exc:
            refusal = refusal or exc
            continue
        return y_c, y_alt
    raise ValueError(
        f"The default canary's labels ({pairs[0][0]:g}, or the data's extremes "
        f"{pairs[-1][0]:g} / {pairs[-1][1]:g}) are refused by {type(estimator).__name__}: "
        f"{refusal}. Pass canary=(x, y, y_replacement) with labels in its domain."
    ) from refusal


# ---- the attack statistic ------------------------------------------------------
def _released_vector(est):
    """Every numeric fitted attribute, flattened (what a model release exposes)."""
    parts = []
    for name in sorted(vars(est)):
        if not name.endswith("_") or name.startswith("_"):
            continue
        value = getattr(est, name)
        if isinstance(value, (bool, np.bool_)):
            continue
        if isinstance(value, (int, float, np.number)):
            parts.append(np.array([float(value)]))
        elif isinstance(value, np.ndarray) and value.dtype.kind in "fiu":
            parts.append(value.astype(float).ravel())
    return np.concatenate(parts) if parts else np.zeros(0)


def _canary_score(est, x_c, y_c, y_alt):
    """Score of the canary's label at the canary, minus the same at the origin
    (for a linear model: the parameters' projection on the canary)."""
    rows = np.vstack([x_c, np.zeros_like(x_c)])
    if is_classifier(est):
        classes = list(est.classes_)
        if hasattr(est, "decision_function"):
            d = np.asarray(est.decision_function(rows), float)
            if d.ndim == 1:
                sign = 1.0 if classes.index(y_c) == 1 else -1.0
                return sign * (d[0] - d[1])
            j = classes.index(y_c)
            return d[0, j] - d[1, j]
        if hasattr(est, "predict_proba"):
            p = est.predict_proba(rows)[:, classes.index(y_c)]
            return float(p[0] - p[1])
        return float(est.predict(rows[:1])[0] == y_c)
    p = np.asarray(est.predict(rows), float).ravel()
    return float(np.sign(y_c - y_alt) * (p[0] - p[1]))


def _features(est, x_c, y_c, y_alt, statistic):
    if callable(statistic):
        return np.atleast_1d(np.asarray(statistic(est, x_c, y_c), float)).ravel()
    parts = []
    # "auto" scores only a model that predicts (a DPSaddleEstimator with task=None and
    # an objective without predict has parameters only)
    scores = statistic == "score" or (statistic == "auto" and any(
        hasattr(est, m) for m in ("decision_function", "predict_proba", "predict")))
    if scores:
        parts.append(np.array([_canary_score(est, x_c, y_c, y_alt)]))
    if statistic in ("auto", "params"):
        parts.append(_released_vector(est))
    return np.concatenate(parts)


def _linear_direction(feat_in, feat_out):
    """Diagonal Fisher discriminant: per-feature mean gap over pooled variance.

    Chosen on selection runs only; features that never vary and never differ get
    weight 0, features that never vary but differ dominate (a noiseless release).
    """
    gap = feat_in.mean(axis=0) - feat_out.mean(axis=0)
    var = 0.5 * (feat_in.var(axis=0) + feat_out.var(axis=0))
    scale = np.maximum(np.abs(feat_in).max(axis=0), np.abs(feat_out).max(axis=0))
    floor = 1e-12 * (1.0 + scale**2)
    return np.where(np.abs(gap) > 1e-12 * (1.0 + scale), gap / np.maximum(var, floor), 0.0)


# ---- the audit ------------------------------------------------------------------
def _nested_keys(est, name):
    """Parameter keys of ``est`` (nested steps of a Pipeline included) called ``name``."""
    return [k for k in est.get_params(deep=True) if k == name or k.endswith("__" + name)]


def _with(estimator, seed):
    est = clone(estimator)
    # Every step's seed (a Pipeline's too): fresh randomness in every run.
    est.set_params(**{k: int(seed) for k in _nested_keys(est, "random_state")})
    ledgers = _nested_keys(est, "accountant")
    if ledgers:
        # A fresh, unlimited ledger per run: audit fits spend on nobody's budget.
        from diffprivlib.accountant import BudgetAccountant

        est.set_params(**{k: BudgetAccountant() for k in ledgers})
    return est


def _relation_of(fitted, neighboring):
    if neighboring != "auto":
        return {"replace": _REPLACE, "add-remove": _ADD_REMOVE,
                _REPLACE: _REPLACE, _ADD_REMOVE: _ADD_REMOVE}[neighboring]
    # The estimator itself, or the private step of a Pipeline (or other meta-estimator).
    candidates = [fitted] + [v for v in fitted.get_params(deep=True).values()
                             if hasattr(v, "calibration_")]
    relations = {c.calibration_.neighboring_relation for c in candidates
                 if hasattr(getattr(c, "calibration_", None), "neighboring_relation")}
    if len(relations) > 1:
        raise ValueError(f"The estimator's private steps use different neighbouring relations "
                         f"{sorted(relations)}; pass neighboring= to say which to audit.")
    return relations.pop() if relations else _REPLACE


def audit_estimator(estimator, *, epsilon, delta=1e-5, n_runs=200, X=None, y=None, canary=None,
                    random_state=None, confidence=0.95, neighboring="auto", statistic="auto",
                    selection_fraction=0.5):
    """Lower-bound the epsilon of ``estimator.fit`` with a canary membership attack.

    Trains ``n_runs`` clones on ``D_in = D + {canary}`` and ``n_runs`` on the
    neighbouring ``D_out`` (``D`` + the canary with its replacement label under
    replace-one, ``D`` alone under add/remove-one), then tests which data set each
    model came from (see the module docstring).

    Parameters
    ----------
    estimator : scikit-learn classifier or regressor
        Fitted as ``estimator.fit(X, y)``, with no other fit parameter: an estimator
        that takes ``sensitive_features`` is audited with its default for it
        (``DPGroupFairRegressor``: one group; ``DPRobustClassifier``: the classes).
        Cloned for every run; ``random_state`` (if a parameter) gets a fresh seed
        per run and ``accountant`` (if a parameter) a fresh unlimited ledger.
    epsilon : float
        The claimed epsilon (only compared with, never set on the estimator).
    delta : float, default=1e-5
        The claimed delta (enters the bound).
    n_runs : int, default=200
        Training runs per data set (``2 * n_runs`` fits).
    X, y : array-like (``X`` also sparse) or None, default=None
        The data set ``D`` (a sparse ``X`` is audited as the same data dense).
        ``None``: ten rows at the origin with labels 0/1 (or 0 for regressors), where
        the canary's influence is all the signal.
    canary : tuple or None, default=None
        ``(x, y)`` or ``(x, y, y_replacement)``. ``None``: a row at the
        ``data_norm`` bound (or the largest row norm) in the direction the data
        use least, labelled against the data there, so that its clipped gradient is
        at the clip bound; its replacement has the opposite label. A regressor's
        label lies far outside the data's, or at the data's extremes where the
        estimator's pre-spend check refuses that (an objective's ``check_data``
        domain).
    random_state : int, Generator or None, default=None
        Seeds the per-run seeds and the run order.
    confidence : float, default=0.95
        Joint confidence of the Clopper-Pearson bounds.
    neighboring : {"auto", "replace", "add-remove"}, default="auto"
        ``"auto"`` uses the relation a fitted estimator reports in
        ``calibration_.neighboring_relation``, else replace-one.
    statistic : {"auto", "score", "params"} or callable, default="auto"
        Attack features of a fitted model: ``"score"`` is the canary's score
        (decision_function, predict_proba or predict) minus the same at the
        origin, ``"params"`` every numeric fitted attribute, ``"auto"`` both; a
        callable ``f(fitted, x_canary, y_canary)`` returns a number or a vector.
        Vectors are reduced to one number by a diagonal Fisher discriminant
        learned on the selection runs.
    selection_fraction : float, default=0.5
        Fraction of the runs that choose the discriminant and threshold.

    Returns
    -------
    AuditResult
        ``epsilon_lower_bound`` holds with probability ``confidence``.

    Notes
    -----
    The result depends on the data and is not private. Each fit is timed by the
    estimator itself; small data sets make thousands of runs cheap.
    """
    if not (epsilon > 0):
        raise ValueError(f"epsilon must be > 0, got {epsilon}.")
    if not 0 < delta < 1:
        raise ValueError(f"delta must be in (0, 1), got {delta}.")
    if int(n_runs) < 8:
        raise ValueError(f"n_runs must be >= 8, got {n_runs}.")
    if not 0 < selection_fraction < 1:
        raise ValueError(f"selection_fraction must be in (0, 1), got {selection_fraction}.")
    if neighboring not in ("auto", "replace", "add-remove", _REPLACE, _ADD_REMOVE):
        raise ValueError(f"Unknown neighboring relation {neighboring!r}.")
    if not (callable(statistic) or statistic in ("auto", "score", "params")):
        raise ValueError(f"Unknown statistic {statistic!r}.")
    n_runs = int(n_runs)
    rng = np.random.default_rng(random_state)

    if X is None:
        X, y = _default_data(estimator)
    # a dense copy (audits train on small data many times): the caller's data are
    # never touched, and sparse X is audited as the same data dense
    X = X.toarray().astype(float) if sp.issparse(X) else np.array(X, dtype=float)
    y = np.array(y)
    if canary is None:
        x_c, y_c, y_alt = _default_canary(estimator, X, y)
    else:
        x_c, y_c = np.asarray(canary[0], float).ravel(), canary[1]
        y_alt = canary[2] if len(canary) > 2 else _default_canary(estimator, X, y)[2]
    X_in, y_in = np.vstack([X, x_c]), np.append(y, y_c)

    def fit_features(X_fit, y_fit, seed, quiet=True):
        est = _with(estimator, seed)
        with warnings.catch_warnings():
            if quiet:
                warnings.simplefilter("ignore")
            est.fit(X_fit, y_fit)
        return est

    seeds = rng.integers(0, 2**31 - 1, size=2 * n_runs)
    first = fit_features(X_in, y_in, seeds[0], quiet=False)  # warnings shown once
    relation = _relation_of(first, neighboring)
    if relation == _REPLACE:
        X_out, y_out = X_in, np.append(y, y_alt)
        # Replace-one neighbours differ in the canary's label only: an estimator that
        # does not read it (a user objective without labels, a label clipped to the
        # same value) releases the same model from the same seed, and the audit would
        # test nothing while reporting "consistent with the claim". One more fit says.
        twin = fit_features(X_out, y_out, seeds[0])
        if np.array_equal(_released_vector(twin), _released_vector(first)):
            raise ValueError(
                "The neighbouring data sets differ only in the canary's label "
                f"({y_c!r} against {y_alt!r}), and the estimator releases the same model "
                "for both from the same seed: it does not read that label, so the audit "
                "would test nothing. Pass a canary whose replacement changes what the "
                "estimator reads, or audit add/remove-one (neighboring='add-remove') if "
                "its guarantee holds for it.")
    else:
        X_out, y_out = X, y

    # The remaining runs in a random order, in and out interleaved: any drift over
    # the session (a first compile, a warm cache) cannot line up with the answer.
    feats = {0: _features(first, x_c, y_c, y_alt, statistic)}
    for i in rng.permutation(np.arange(1, 2 * n_runs)):
        X_fit, y_fit = (X_in, y_in) if i < n_runs else (X_out, y_out)
        feats[i] = _features(fit_features(X_fit, y_fit, seeds[i]), x_c, y_c, y_alt, statistic)
    feats_in = np.array([feats[i] for i in range(n_runs)])
    feats_out = np.array([feats[i] for i in range(n_runs, 2 * n_runs)])
    if feats_in.shape[1] != feats_out.shape[1]:
        raise ValueError("The attack statistic has different sizes with and without the canary.")
    if not (np.all(np.isfinite(feats_in)) and np.all(np.isfinite(feats_out))):
        raise ValueError("A fitted model released non-finite values; cannot audit it.")

    k = min(n_runs - 1, max(1, int(round(selection_fraction * n_runs))))
    direction = _linear_direction(feats_in[:k], feats_out[:k])
    return epsilon_lower_bound(
        feats_in @ direction, feats_out @ direction, delta=delta, confidence=confidence,
        n_selection=k, epsilon_claimed=epsilon, n_runs=n_runs, neighboring_relation=relation,
    )
