"""DPRobustClassifier: differentially private worst-group (group DRO) logistic regression."""

from numbers import Real

import numpy as np
from scipy.special import expit, softmax
from sklearn.base import ClassifierMixin
from sklearn.utils._param_validation import Interval, StrOptions
from sklearn.utils.multiclass import type_of_target

from skdpminimax.base import DEFAULT_N_SAMPLES_BUDGET, DPMinimaxEstimator, shared_parameter_docs
from skdpminimax.estimators._groups import (
    GroupRatiosMixin,
    canonical_labels,
    comparable_class_labels,
)
from skdpminimax.objectives.group_dro import GroupDRO
from skdpminimax.objectives.losses import LogisticLoss, MultinomialLoss

__all__ = ["DPRobustClassifier"]


@shared_parameter_docs
class DPRobustClassifier(GroupRatiosMixin, ClassifierMixin, DPMinimaxEstimator):
    r"""Differentially private logistic regression minimising the worst-group risk.

    Solves, privately,

    .. math::

        \min_{\|w\| \le R} \max_{q \in \Delta_K} \frac1n \sum_i
        \frac{q_{g_i}}{\pi_{g_i}} \ell(w; x_i, y_i)
        - \frac{\lambda}{2}\|q - q_0\|^2 + \frac{\alpha}{2}\|w\|^2

    where ``ell`` is the binary or multinomial logistic loss, ``g_i`` the group of
    example ``i``, ``pi`` the group frequencies and ``q_0`` the ``dual_center``
    (``1/K`` or ``pi``): with ``lambda = 0`` the solution
    minimises ``max_k R_k(w)``, the risk of the worst group (Yang et al. 2022,
    App. A; Sagawa et al. 2020). Without ``sensitive_features`` the groups are the
    classes: the model is then robust to label shift.

    Parameters
    ----------
    epsilon : float, default=1.0
        Privacy budget of one ``fit`` (``np.inf``: not private).
    delta : float, default=1e-5
        Privacy parameter delta in [1e-100, 1); choose it well below ``1 / n_samples``.
    data_norm : float or None, default=None
        Public bound on the L2 norm of a row of ``X``; rows are clipped to it. If
        ``None`` it is taken from the data with a :class:`PrivacyLeakWarning`.
    radius : float, default=10.0
        Radius of the L2 ball holding all coefficients and intercepts (public).
    alpha : float, default=1e-4
        L2 regularisation of the coefficients (strong convexity).
    dual_reg : float, default=0.1
        ``lambda``: pulls ``q`` towards ``dual_center`` and makes the dual strongly
        concave; ``0`` gives the exact worst-group objective.
    dual_center : {"uniform", "ratios"}, default="uniform"
        The weights ``q`` are pulled towards: uniform (a large ``dual_reg`` gives
        group-balanced risk), or the group frequencies ``pi`` (a large ``dual_reg``
        gives plain logistic regression; ``dual_reg`` then interpolates between
        empirical risk and worst-group risk).
    group_ratios : dict, array-like or None, default=None
        Public group frequencies: ``{group: ratio}``, or an array aligned with the
        sorted group labels, normalised to sum to 1 (counts may be given; frequencies
        that do not sum to 1 warn). ``None``: released privately (see Notes).
    group_ratios_budget : float, default=0.05
        Fraction of ``epsilon`` spent on the group counts when ``group_ratios`` is None.
    fit_intercept : bool, default=True
        Fit ``intercept_`` (one per output, in the ``radius`` ball with the
        coefficients); ``False``: ``intercept_`` is 0.
    solver : str or solver object, default="sgda"
        A registered solver name or an object with ``calibrate`` and ``solve``.
        ``"sgda"`` uses the group defaults (see Notes, *Clipping the dual*).
    accountant : BudgetAccountant or None, default=None
        Ledger every fit spends on (shared by all clones).
    {shared_parameters}

    Attributes
    ----------
    classes_ : ndarray of shape (n_classes,)
    coef_ : ndarray of shape (1, n_features) or (n_classes, n_features)
    intercept_ : ndarray of shape (1,) or (n_classes,)
    groups_ : ndarray of shape (n_groups,)
        Group labels (classes when no sensitive features were given).
    group_weights_ : ndarray of shape (n_groups,)
        The released dual ``q``: the solver's private weight of each group.
    group_ratios_ : ndarray of shape (n_groups,)
        Group frequencies used: public, or the posterior means of the privately
        released group counts, normalised (docs/privacy_model.md).
    calibration_ : NoiseCalibration
        Noise multiplier, steps, sampler and accountant of the solver.
    {planning_size_attribute}
    privacy_spent_ : PrivacyBudget
        ``(epsilon, delta)`` charged to the accountant by this fit.
    solver_ : solver
        The fitted solver object.
    objective_ : SaddleObjective
        The objective that was solved (the group DRO objective and its public
        constants).
    n_features_in_ : int
        Number of features seen during ``fit``.

    Notes
    -----
    **Privacy.** ``fit`` is ``(epsilon, delta)``-DP with respect to one example
    ``(x, y, g)`` under the solver's neighbouring relation (add/remove-one for
    Poisson sampling, replace-one otherwise); the class labels and the group labels
    are treated as public (as ``classes_`` in scikit-learn and diffprivlib), the size
    as in ``n_samples_budget``. Public: ``data_norm``, ``radius``, ``group_ratios`` when given.
    Otherwise the group counts are released with the truncated geometric mechanism
    using ``group_ratios_budget * epsilon`` (each count gets that slice under
    add/remove-one, half of it under replace-one, where one example moves two
    counts), and the solver gets the rest by basic composition, or, with
    ``composition="pld"`` under add/remove-one, its noise is calibrated on the
    counts' composition with its run in one PLD. The solver's
    per-example gradients are bounded by ``G_ell kappa / pi_min`` and
    ``ell_max / pi_min`` (:meth:`GroupDRO.lipschitz`) and clipped; its calibration
    is the solver's (e.g. NoisySGDA: Yang et al. 2022, Thm. 1, accounted with
    dp_accounting). Every fitted attribute is post-processing of these releases.

    **Clipping the dual.** An example's dual gradient is ``loss / pi_g`` on its
    group's coordinate. One clip norm for all groups far below ``loss / pi_min``
    (NoisySGDA's generic ``clip_v=1``) under-counts the risk of small groups, so
    ``q`` drifts towards large groups and the model towards plain logistic
    regression; one at ``loss / pi_min`` gives every coordinate the smallest
    group's noise. The default ``solver="sgda"`` is ``NoisySGDA(step_size="scaled",
    n_epochs="auto", clip_v="auto", clip_w="auto_if_quiet", noise_allocation=0.3,
    average="tail")``: the dual
    gets 30% of each step's privacy loss and **one clip per group**,
    ``c_g = ell(0) / max(pi_g, r)`` with ``ell(0)`` the loss at score 0 (``log 2``
    for two classes, the log of the number of classes otherwise) and
    ``r = z_v s_f / m`` a step's relative dual noise (multiplier, sensitivity
    factor, batch size; :meth:`GroupDRO.typical_dual_clips`), with noise
    ``z_v s_f c_g`` on coordinate ``g``. Divided by ``c`` each example's dual
    gradient has norm at most 1 and the noise is isotropic: the same Gaussian
    mechanism as one clip, whatever the ``c_g``, which come from the released or
    public ``pi`` and the calibration only (post-processing, composed adaptively).
    So every group's losses are clipped at the same ``ell(0)`` (a group rarer than
    the noise at ``ell(0) pi_g / r``), not the small groups' harder than the large
    ones', and no coordinate's noise exceeds ``ell(0)`` a step. Its step is sized
    from a public guess of the solution's norm
    (:meth:`GroupDRO.typical_solution_norm`) and shrinks with the noise; it is never
    below the certified ``1 / L``. Small data sets get more than 15 epochs (up to
    8,000 steps) where the noise is small. All of it is public.

    **Clipping the primal.** An example's primal gradient carries the weight
    ``q_g / pi_g``: on a small group it can reach ``1 / pi_min`` times the typical
    norm. The generic clip of 1 cuts that weight even without noise (3% positives,
    20,000 rows: worst-class accuracy 0.66 against 0.70 with room for it). So where a
    step's noise is quiet (``clip_w="auto_if_quiet"``: relative noise energy ``E`` at
    the typical norm at most 0.1) the clip is the typical norm times
    ``k = min(1 / pi_min, sqrt(0.01 / E))`` (at least 1), public quantities only; where
    the noise is not quiet it stays 1, and the step is the one validated at 1.

    Examples
    --------
    >>> import numpy as np
    >>> from sklearn.datasets import load_iris
    >>> from skdpminimax import DPRobustClassifier
    >>> X, y = load_iris(return_X_y=True)
    >>> clf = DPRobustClassifier(epsilon=np.inf, data_norm=10.0, random_state=0).fit(X, y)
    >>> clf.group_weights_.shape
    (3,)
    """

    __metadata_request__fit = {"sensitive_features": True}

    _parameter_constraints = {
        **DPMinimaxEstimator._parameter_constraints,
        **GroupRatiosMixin._group_parameter_constraints,
        "radius": [Interval(Real, 0, None, closed="neither")],
        "alpha": [Interval(Real, 0, None, closed="left")],
        "dual_reg": [Interval(Real, 0, None, closed="left")],
        "dual_center": [StrOptions({"uniform", "ratios"})],
        "fit_intercept": ["boolean"],
    }

    def __init__(self, epsilon=1.0, delta=1e-5, *, data_norm=None, radius=10.0, alpha=1e-4,
                 dual_reg=0.1, dual_center="uniform", group_ratios=None, group_ratios_budget=0.05, fit_intercept=True,
                 solver="sgda", accountant=None, random_state=None,
                 n_samples_budget=DEFAULT_N_SAMPLES_BUDGET, composition="pld",
                 composed_with=None):
        self.epsilon = epsilon
        self.delta = delta
        self.data_norm = data_norm
        self.radius = radius
        self.alpha = alpha
        self.dual_reg = dual_reg
        self.dual_center = dual_center
        self.group_ratios = group_ratios
        self.group_ratios_budget = group_ratios_budget
        self.fit_intercept = fit_intercept
        self.solver = solver
        self.accountant = accountant
        self.random_state = random_state
        self.n_samples_budget = n_samples_budget
        self.composition = composition
        self.composed_with = composed_with

    def fit(self, X, y, *, sensitive_features=None):
        """Fit the private worst-group classifier.

        Parameters
        ----------
        X : {array-like, sparse matrix} of shape (n_samples, n_features)
            Training rows, clipped to ``data_norm``.
        y : array-like of shape (n_samples,)
            Class labels (two or more classes).
        sensitive_features : array-like of shape (n_samples,) or (n_samples, n_attrs), default=None
            Group membership; ``None`` uses the class labels as groups.
            {group_labels}

        Returns
        -------
        self : DPRobustClassifier
            The fitted estimator.
        """
        return self._fit(X, y, sensitive_features=sensitive_features)

    # ---- pipeline hooks -----------------------------------------------------
    def _validate_targets(self, X, y, sensitive_features=None):
        with comparable_class_labels():
            kind = type_of_target(y, input_name="y")
        if kind not in ("binary", "multiclass"):
            raise ValueError(f"Unknown label type: {kind!r}; {type(self).__name__} needs binary "
                             "or multiclass labels.")
        classes, encoded = np.unique(canonical_labels(y), return_inverse=True)
        if len(classes) < 2:
            raise ValueError(f"{type(self).__name__} needs at least 2 classes; got {classes!r}.")
        self.classes_ = classes
        groups_source = y if sensitive_features is None else sensitive_features
        codes, _ = self._encode_task_groups(groups_source, X.shape[0])
        targets = np.where(encoded == 1, 1.0, -1.0) if len(classes) == 2 else encoded.astype(float)
        return targets, {"groups": codes}

    def _make_objective(self, n_features, data_norm, constants):
        n_classes = len(self.classes_)
        loss = LogisticLoss() if n_classes == 2 else MultinomialLoss(n_classes)
        return GroupDRO(n_features, loss, constants["group_ratios"], data_norm, self.radius,
                        dual_reg=self.dual_reg, l2_reg=self.alpha, dual_center=self.dual_center,
                        fit_intercept=self.fit_intercept)

    def _set_fitted(self, result, objective, constants):
        self.coef_, self.intercept_ = objective.model.coef_intercept(np.asarray(result.w))
        self.group_weights_ = np.asarray(result.v, dtype=float).copy()
        self.group_ratios_ = np.asarray(constants["group_ratios"], dtype=float)

    # ---- prediction ----------------------------------------------------------
    def decision_function(self, X):
        """Compute the scores ``X @ coef_.T + intercept_``.

        Parameters
        ----------
        X : {array-like, sparse matrix} of shape (n_samples, n_features)
            Rows to score.

        Returns
        -------
        scores : ndarray of shape (n_samples,) or (n_samples, n_classes)
            One score per row for two classes (positive for ``classes_[1]``), else
            one per class.
        """
        X = self._prediction_input(X)
        scores = X @ self.coef_.T + self.intercept_
        return scores[:, 0] if scores.shape[1] == 1 else scores

    def predict_proba(self, X):
        """Compute class probabilities (sigmoid / softmax of the scores).

        Parameters
        ----------
        X : {array-like, sparse matrix} of shape (n_samples, n_features)
            Rows to score.

        Returns
        -------
        proba : ndarray of shape (n_samples, n_classes)
            Probability of each class in ``classes_``.
        """
        scores = self.decision_function(X)
        if scores.ndim == 1:
            p = expit(scores)
            return np.column_stack([1.0 - p, p])
        return softmax(scores, axis=1)

    def predict_log_proba(self, X):
        """Compute the logarithm of :meth:`predict_proba`.

        Parameters
        ----------
        X : {array-like, sparse matrix} of shape (n_samples, n_features)
            Rows to score.

        Returns
        -------
        log_proba : ndarray of shape (n_samples, n_classes)
            Log-probability of each class in ``classes_``.
        """
        with np.errstate(divide="ignore"):
            return np.log(self.predict_proba(X))

    def predict(self, X):
        """Predict the most probable class.

        Parameters
        ----------
        X : {array-like, sparse matrix} of shape (n_samples, n_features)
            Rows to classify.

        Returns
        -------
        y_pred : ndarray of shape (n_samples,)
            Labels from ``classes_``.
        """
        scores = self.decision_function(X)
        idx = (scores > 0).astype(int) if scores.ndim == 1 else scores.argmax(axis=1)
        return self.classes_[idx]

    def score(self, X, y, sample_weight=None):
        """Accuracy of :meth:`predict` over all rows of ``(X, y)``, scikit-learn's
        classifier score, **not** the worst group's accuracy the fit targets.

        It is what ``GridSearchCV`` and ``cross_val_score`` use without ``scoring``. For
        the worst group, compute
        :func:`skdpminimax.metrics.worst_group_accuracy` (``y``, ``predict(X)``,
        ``sensitive_features=...``) on validation rows; the groups are not an input of
        prediction.

        Parameters
        ----------
        X : {array-like, sparse matrix} of shape (n_samples, n_features)
            Test rows.
        y : array-like of shape (n_samples,)
            True labels.
        sample_weight : array-like of shape (n_samples,), default=None
            Weights of the score (not of the fit, which takes none).

        Returns
        -------
        score : float
            Mean accuracy of ``predict(X)`` against ``y``.
        """
        return super().score(X, y, sample_weight=sample_weight)

    def __sklearn_tags__(self):
        tags = super().__sklearn_tags__()
        tags.classifier_tags.poor_score = True
        return tags

    def _more_tags(self):  # the same tag for scikit-learn < 1.6
        return {"poor_score": True}
