"""DPSaddleEstimator: fit your own saddle objective privately (bring your own objective)."""

import numpy as np
from sklearn.metrics import accuracy_score, r2_score
from sklearn.utils._param_validation import StrOptions
from sklearn.utils.metaestimators import available_if
from sklearn.utils.multiclass import check_classification_targets
from sklearn.utils.validation import _num_samples, check_is_fitted

from skdpminimax.base import DEFAULT_N_SAMPLES_BUDGET, DPMinimaxEstimator, shared_parameter_docs
from skdpminimax.estimators._groups import (
    canonical_labels,
    comparable_class_labels,
    declared_group_codes,
    encode_public_groups,
    labels_array,
)

__all__ = ["DPSaddleEstimator"]

_REQUIRED = ("init_params", "per_example_grads", "per_example_values", "lipschitz",
             "primal_set", "dual_set")


def _objective_has(method):
    """Whether the fitted objective has ``method``; before fit, whether the factory
    (when it is a class) does, so that meta-estimators that look for the method on an
    unfitted estimator (CalibratedClassifierCV, say) find it."""
    def check(self):
        if not hasattr(self, "objective_") and isinstance(self.objective_factory, type):
            return hasattr(self.objective_factory, method)
        check_is_fitted(self, "objective_")  # a function's methods: known once fitted
        return hasattr(self.objective_, method)
    return check


def _has_task(self):
    return self.task is not None


def _scores(self):
    """A regressor has no ``decision_function`` (scikit-learn's convention: its
    output is ``predict``); otherwise, whether the objective has one."""
    return self.task != "regression" and _objective_has("decision_function")(self)


@shared_parameter_docs
class DPSaddleEstimator(DPMinimaxEstimator):
    r"""Differentially private solution of a user-defined saddle problem.

    Fits, with any registered solver,

    .. math::

        \min_{w \in W} \max_{v \in V} \frac1n \sum_i f(w, v; x_i, y_i, g_i) + r(w, v)

    for a :class:`~skdpminimax.objectives.SaddleObjective` you write: implement
    ``init_params``, ``per_example_values``, ``per_example_grads`` and ``lipschitz``
    (bounds from public quantities only: ``data_norm`` and your sets' radii), set
    ``primal_set`` and ``dual_set``, and put data-free terms in ``reg_value`` /
    ``reg_grad``. Give the objective a ``predict(w, X)`` method to get
    :meth:`predict` (and ``decision_function(w, X)`` for :meth:`decision_function`,
    ``predict_proba(w, X)`` for :meth:`predict_proba`).

    Parameters
    ----------
    objective_factory : callable
        Called as ``objective_factory(n_features=..., data_norm=..., **objective_params)``
        (and ``n_classes=...`` with ``task="classification"``) and returning a
        ``SaddleObjective``; a ``SaddleObjective`` subclass whose ``__init__`` takes
        these keywords is such a callable.
    objective_params : dict or None, default=None
        Extra keyword arguments of ``objective_factory`` (public constants, e.g.
        radii, label bounds, regularisation). They must not be computed from the
        training data, or the fit is not private.
    epsilon : float, default=1.0
        Privacy budget of one ``fit`` (``np.inf``: not private).
    delta : float, default=1e-5
        Privacy parameter delta in [1e-100, 1); choose it well below ``1 / n_samples``.
    data_norm : float or None, default=None
        Public bound on the row norm of ``X`` (rows clipped); ``None``: from the data
        with a :class:`PrivacyLeakWarning`.
    solver : str or solver object, default="sgda"
        A registered name or a solver object. ``"sgda"`` is ``NoisySGDA()`` itself:
        the certified ``1 / L`` step and 15 epochs, unlike the built-in estimators'
        tuned defaults, since an objective of yours declares no solution scale.
        Where it defines ``typical_solution_norm()``, pass
        ``NoisySGDA(step_size="scaled", n_epochs="auto")`` to size the steps from it.
    accountant : BudgetAccountant or None, default=None
        Ledger every fit spends on; ``None`` uses diffprivlib's default accountant.
        One accountant is shared by all clones (grid search, cross-validation).
    {shared_parameters}
    task : {"classification", "regression"} or None, default=None
        What scikit-learn should take the estimator for. ``"classification"``: a
        classifier. ``classes_`` holds the sorted labels of ``y`` (any type); the
        factory is also given ``n_classes=K``, the objective receives class codes
        ``0..K-1`` as ``data.y`` and its ``predict`` returns codes, which
        :meth:`predict` maps back to labels; ``score`` is the
        accuracy, and string scorers such as ``"roc_auc"`` work, with
        ``decision_function`` positive for ``classes_[1]`` (binary). One class only is
        refused before anything is spent. ``"regression"``: a regressor; ``y`` reaches
        the objective as numbers, as with ``None``, ``score`` is R^2, and there is no
        ``decision_function`` (a regressor's output is :meth:`predict`, as
        scikit-learn expects; call the objective's own on ``coef_``). ``None``:
        neither, and no ``score`` (pass a callable scorer to searches).
    groups : array-like or None, default=None
        Public group labels, in the order of the codes the objective receives as
        ``data.groups`` (tuples for several attributes). ``None``: the sorted labels
        present in the fit's ``sensitive_features``, so a group missing from a fit
        (a rare group in a cross-validation fold) shifts the codes of the groups
        after it; declare ``groups`` when the objective's per-group constants (ratios
        in ``objective_params``, say) are indexed by group. A label outside
        ``groups`` is refused before anything is spent.

    Attributes
    ----------
    {planning_size_attribute}
    coef_ : ndarray
        The released primal point ``w``.
    dual_coef_ : ndarray
        The released dual point ``v``.
    objective_ : SaddleObjective
        The objective that was solved.
    groups_ : ndarray
        Group labels, when ``sensitive_features`` were given: ``groups`` if declared,
        else the sorted labels of the fit's ``sensitive_features``; ``groups_[k]`` is
        the group of code ``k`` in ``data.groups``.
    classes_ : ndarray
        The sorted labels of ``y`` (``task="classification"`` only).
    calibration_ : NoiseCalibration
        Noise multiplier, steps, sampler, neighbouring relation and accountant of the
        solver's run.
    privacy_spent_ : PrivacyBudget
        ``(epsilon, delta)`` charged to the accountant by this fit (see
        ``n_samples_budget`` for the size's share).
    solver_ : solver
        The fitted solver object (a copy of ``solver``).

    Notes
    -----
    **Privacy.** The solver's guarantee carries over (``(epsilon, delta)``-DP with
    respect to one example under its neighbouring relation) *provided* the
    objective is honest: its per-example gradients are what the solver clips, and
    ``objective_params`` and anything else the objective reads besides the
    per-example data it is handed must be public. What else it rests on depends on
    the solver. ``"sgda"``, ``"gda"``, ``"nseg"`` and ``"nseg_multipass"`` clip every
    block, so ``lipschitz()`` only caps their clip norms and no declared constant can
    break their privacy. ``"nispp"`` rests on ``smoothness()`` (and, if the objective
    sets ``certified_constants = True`` and the clip norms are at ``lipschitz()``, on
    ``lipschitz()`` and ``strong_convexity()`` too); ``"recursive"`` inherits its base
    solver's. The output-perturbation solvers clip nothing: they rest on all three
    and refuse an objective that does not set ``certified_constants``
    (:class:`~skdpminimax.objectives.SaddleObjective`). The objective's
    ``check_data(y, groups)`` runs before anything is spent: the built-in objectives
    refuse a ``y`` (or group codes) outside the domain their bounds are proved on
    (``y`` in ``{-1, +1}`` for ``SquareLossAUC`` and logistic losses). Group labels and,
    with ``task="classification"``, the class labels are treated as public (as
    ``classes_`` in scikit-learn and diffprivlib): ``classes_``, the number of classes
    the objective is built for and the model's shape follow the labels present in
    ``y``, so a label held by one example alone is published; map rare labels to
    public classes first. The size is handled as in :mod:`skdpminimax.base`
    (``n_samples_budget``).

    Examples
    --------
    See ``examples/plot_custom_objective.py``.
    """

    __metadata_request__fit = {"sensitive_features": True}

    _accept_sparse = False  # user objectives see dense arrays
    _user_objective = True  # copied rows (the caller's X stays untouched), checked

    _parameter_constraints = {
        **DPMinimaxEstimator._parameter_constraints,
        "objective_factory": [callable],
        "objective_params": [dict, None],
        "task": [StrOptions({"classification", "regression"}), None],
        "groups": ["array-like", None],
    }

    def __init__(self, objective_factory, objective_params=None, epsilon=1.0, delta=1e-5, *,
                 data_norm=None, solver="sgda", accountant=None, random_state=None,
                 n_samples_budget=DEFAULT_N_SAMPLES_BUDGET, composition="pld",
                 composed_with=None, task=None, groups=None):
        self.task = task
        self.groups = groups
        self.objective_factory = objective_factory
        self.objective_params = objective_params
        self.epsilon = epsilon
        self.delta = delta
        self.data_norm = data_norm
        self.solver = solver
        self.accountant = accountant
        self.random_state = random_state
        self.n_samples_budget = n_samples_budget
        self.composition = composition
        self.composed_with = composed_with

    def fit(self, X, y=None, *, sensitive_features=None):
        """Solve the objective privately on ``(X, y, sensitive_features)``.

        Parameters
        ----------
        X : array-like of shape (n_samples, n_features)
            Training rows (dense), clipped to ``data_norm``.
        y : array-like of shape (n_samples,), default=None
            Passed to the objective as ``data.y``, converted to float64 (``None``
            if not given; class codes ``0..K-1`` for ``task="classification"``),
            after the objective's ``check_data``.
        sensitive_features : array-like of shape (n_samples,) or (n_samples, n_attrs), default=None
            Passed to the objective as integer codes ``data.groups`` (several
            attributes: one code per combination, as in the group estimators).

        Returns
        -------
        self : DPSaddleEstimator
            The fitted estimator.
        """
        y_given = y is not None
        if y is None:  # the shared pipeline validates (X, y) together
            y = np.zeros(_num_samples(X))
        return self._fit(X, y, sensitive_features=sensitive_features, y_given=y_given)

    # ---- pipeline hooks -----------------------------------------------------
    def _validate_targets(self, X, y, sensitive_features=None, y_given=True):
        codes = None
        if sensitive_features is not None:
            codes, labels = encode_public_groups(sensitive_features, X.shape[0])
            if self.groups is not None:
                codes, labels = declared_group_codes(codes, labels, self.groups)
            self.groups_ = labels_array(labels)
        if not y_given:
            if self.task is not None:
                raise ValueError(f"{type(self).__name__}(task={self.task!r}) requires y to be "
                                 "passed, but the target y is None. Nothing was spent.")
            return None, {"groups": codes}
        if self.task == "classification":
            with comparable_class_labels():  # (None among strings, say)
                check_classification_targets(y)
                # codes 0..K-1
                classes, y = np.unique(canonical_labels(y), return_inverse=True)
            if classes.size < 2:
                raise ValueError(f"{type(self).__name__}(task='classification') needs at "
                                 f"least 2 classes in y; got only class {classes[0]!r}.")
            self.classes_ = classes
            y = y.reshape(-1)
        # Checked here, before anything is spent: a y the objective cannot use would
        # otherwise fail inside the solver, after the budget is charged.
        try:
            y = np.asarray(y, dtype=np.float64)
        except (TypeError, ValueError) as exc:
            raise ValueError(f"{type(self).__name__} hands y to the objective as numbers; "
                             f"could not convert y to float: {exc}") from exc
        # scikit-learn's check looks for float NaN only; strings like "nan" or "inf"
        # become non-finite numbers here.
        if not np.all(np.isfinite(y)):
            raise ValueError(f"{type(self).__name__}: y contains NaN or infinity after its "
                             "conversion to float. Nothing was spent.")
        return y, {"groups": codes}

    def _public_constants(self, targets, task_data):
        return {}

    def _private_constants(self, targets, task_data, budget, rng):
        return {}

    def _make_objective(self, n_features, data_norm, constants):
        params = dict(self.objective_params or {})
        if self.task == "classification":  # the number of classes is public (classes_)
            params["n_classes"] = len(self.classes_)
        try:
            objective = self.objective_factory(n_features=n_features, data_norm=data_norm,
                                               **params)
        except TypeError as exc:
            if "unexpected keyword argument" not in str(exc):
                raise
            raise TypeError(
                f"objective_factory was called with n_features, data_norm"
                f"{', n_classes (task=classification)' if 'n_classes' in params else ''} and "
                f"objective_params {sorted(self.objective_params or {})}, and refused one: "
                f"{exc}. Accept them as keyword arguments. Nothing was spent.") from exc
        missing = [name for name in _REQUIRED if not hasattr(objective, name)]
        if missing:
            raise TypeError(
                f"objective_factory must return a SaddleObjective; {type(objective).__name__} "
                f"lacks {missing}."
            )
        return objective

    def _set_fitted(self, result, objective, constants):
        self.coef_ = np.asarray(result.w, dtype=float).copy()
        self.dual_coef_ = np.asarray(result.v, dtype=float).copy()

    # ---- optional prediction, delegated to the objective -----------------------
    @available_if(_objective_has("predict"))
    def predict(self, X):
        """Predict with ``objective_.predict(coef_, X)``.

        Parameters
        ----------
        X : array-like of shape (n_samples, n_features)
            Rows to predict.

        Returns
        -------
        y_pred : ndarray of shape (n_samples,)
            The objective's predictions; with ``task="classification"`` its class
            codes mapped to ``classes_``.
        """
        X = self._prediction_input(X, "objective_")
        pred = self.objective_.predict(self.coef_, X)
        if self.task == "classification":
            codes = np.asarray(pred)
            valid = np.isfinite(codes) & (codes == np.round(codes))
            valid &= (codes >= 0) & (codes < len(self.classes_))
            if not np.all(valid):
                raise ValueError(
                    "With task='classification' the objective's predict must return class "
                    f"codes 0..{len(self.classes_) - 1} (got e.g. {codes[~valid][0]!r}); "
                    "predict maps them to classes_.")
            return self.classes_[codes.astype(np.intp)]
        return pred

    @available_if(_scores)
    def decision_function(self, X):
        """Score rows with ``objective_.decision_function(coef_, X)``.

        Parameters
        ----------
        X : array-like of shape (n_samples, n_features)
            Rows to score.

        Returns
        -------
        scores : ndarray
            What the objective's ``decision_function`` returns, except for
            ``task="classification"`` with two classes, where scikit-learn expects one
            score per row (positive towards ``classes_[1]``): two columns, one per
            class, become their difference ``scores[:, 1] - scores[:, 0]`` (a K-class
            objective fitted on binary data), which ranks as the argmax does.
        """
        X = self._prediction_input(X, "objective_")
        scores = self.objective_.decision_function(self.coef_, X)
        if (self.task == "classification" and len(self.classes_) == 2
                and np.ndim(scores) == 2 and np.shape(scores)[1] == 2):
            scores = np.asarray(scores)
            return scores[:, 1] - scores[:, 0]
        return scores

    @available_if(_objective_has("predict_proba"))
    def predict_proba(self, X):
        """Compute class probabilities with ``objective_.predict_proba(coef_, X)``.

        Parameters
        ----------
        X : array-like of shape (n_samples, n_features)
            Rows to score.

        Returns
        -------
        proba : ndarray of shape (n_samples, n_classes)
            One column per class of ``classes_`` (for ``task="classification"``,
            which scorers such as ``"roc_auc_ovr"`` and ``"neg_log_loss"`` need).
        """
        X = self._prediction_input(X, "objective_")
        return self.objective_.predict_proba(self.coef_, X)

    @available_if(_has_task)
    def score(self, X, y, sample_weight=None):
        """Accuracy (``task="classification"``) or R^2 (``task="regression"``) of
        :meth:`predict` on ``(X, y)``.

        Parameters
        ----------
        X : array-like of shape (n_samples, n_features)
            Test rows.
        y : array-like of shape (n_samples,)
            True labels or targets.
        sample_weight : array-like of shape (n_samples,), default=None
            Weights of the score (not of the fit).

        Returns
        -------
        score : float
            Accuracy or R^2.
        """
        metric = accuracy_score if self.task == "classification" else r2_score
        return float(metric(y, self.predict(X), sample_weight=sample_weight))

    @property
    def _estimator_type(self):  # scikit-learn < 1.6 reads this; later ones the tags
        return {"classification": "classifier", "regression": "regressor"}.get(self.task)

    def __sklearn_tags__(self):
        tags = super().__sklearn_tags__()
        # poor_score as for the built-in estimators: a private fit need not reach the
        # scores scikit-learn's checks expect of a non-private one
        if self.task == "classification":
            from sklearn.utils import ClassifierTags
            tags.estimator_type = "classifier"
            tags.classifier_tags = ClassifierTags(poor_score=True)
        elif self.task == "regression":
            from sklearn.utils import RegressorTags
            tags.estimator_type = "regressor"
            tags.regressor_tags = RegressorTags(poor_score=True)
        # A task needs y (fit refuses y=None before anything is spent), as scikit-learn's
        # classifiers and regressors do; without one, y is optional.
        tags.target_tags.required = self.task is not None
        return tags

    def _more_tags(self):  # the same tags for scikit-learn < 1.6
        return {"requires_y": self.task is not None, "poor_score": self.task is not None}
