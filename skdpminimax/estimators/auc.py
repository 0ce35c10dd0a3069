"""DPAUCMaximizer: differentially private AUC maximisation."""

import warnings
from numbers import Integral, Real

import numpy as np
from sklearn.base import ClassifierMixin
from sklearn.utils._param_validation import Interval, StrOptions

from skdpminimax._compat import type_of_target
from skdpminimax.base import DEFAULT_N_SAMPLES_BUDGET, DPMinimaxEstimator, shared_parameter_docs
from skdpminimax.estimators._groups import canonical_labels, comparable_class_labels
from skdpminimax.objectives.auc import SquareLossAUC, linear_solution_norm
from skdpminimax.objectives.scorers import LinearScorer, MLPScorer
from skdpminimax.privacy.mechanisms import count_posterior_mean, noisy_counts, private_count
from skdpminimax.solvers import NoisyExtragradient, NoisySGDA, resolve_solver

__all__ = ["DPAUCMaximizer"]

# A privately estimated class ratio is clamped here: gradients scale with
# max(p, 1 - p), and a ratio of exactly 0 or 1 has no AUC. (The count's posterior mean
# is already at least one row from either end; on more than 1,000 rows the clamp
# still binds.)
_RATIO_FLOOR = 1e-3
# radius="auto": never below the earlier default (also the MLP's and the other
# solvers' radius).
_AUTO_RADIUS_FLOOR = 10.0
# Noise std above this share of the smaller released class count (the count within
# two noise steps of 0): the fit warns (a probe: 30 positives in 3,000 rows at
# epsilon = 1, std ~28; a tenth of the releases were 0, which the rule before the
# posterior mean floored to 0.001, and the MLP then predicted every row positive). A
# quarter warned in the demo (breast cancer, epsilon 0.5 and 1), whose linear fits
# lose nothing to the ratio's error.
_NOISY_CLASS_COUNT = 0.5


def _warn_if_ratio_is_noisy(n_pos, size, epsilon, share):
    """Post-processing of the released count and the public noise scale only."""
    noisy = noisy_counts((n_pos, size - n_pos), epsilon, _NOISY_CLASS_COUNT)
    if noisy is not None:
        noise = noisy[0]
        warnings.warn(
            f"The class ratio was released as {n_pos} positives and {size - n_pos} "
            f"negatives, noisy counts (std {noise:.3g}; pos_ratio_budget={share:g} of "
            "epsilon), not the data's: the smaller class's count "
            "is within two noise steps of 0, so the released ratio, and the class weights "
            "1 / p and 1 / (1 - p) with it, may be far off (a model can then predict one "
            "class). Pass pos_ratio if the class frequency is public, or raise "
            "pos_ratio_budget.", UserWarning)


@shared_parameter_docs
class DPAUCMaximizer(ClassifierMixin, DPMinimaxEstimator):
    r"""Differentially private AUC maximisation (square-loss saddle formulation).

    Solves, privately,

    .. math::

        \min_{\theta, a, b} \max_{\alpha} \frac1n \sum_i
        (1-p)(h_i-a)^2 [y_i=1] + p(h_i-b)^2 [y_i=-1]
        + 2(1+\alpha)(p h_i [y_i=-1] - (1-p) h_i [y_i=1])
        - p(1-p)\alpha^2 + \frac{\lambda}{2}\|(\theta, a, b)\|^2

    with ``h_i = h(theta; x_i)`` (linear, ``theta @ x_i``, or a two-layer MLP), whose
    solution in ``theta`` minimises the pairwise square-loss surrogate of ``1 - AUC``
    (Ying et al. 2016; Yang et al. 2022).

    Parameters
    ----------
    epsilon : float, default=1.0
        Privacy budget of one ``fit`` (``np.inf``: not private).
    delta : float, default=1e-5
        Privacy parameter delta, in [1e-100, 1). Choose it well below ``1 / n_samples``.
    data_norm : float or None, default=None
        Public bound on the L2 norm of a row of ``X``; rows are clipped to it. If
        ``None`` it is taken from the data with a :class:`PrivacyLeakWarning`.
    pos_ratio : float or None, default=None
        Public fraction of positive examples ``p``. If ``None``, ``p`` is estimated
        privately with ``pos_ratio_budget * epsilon`` of the budget.
    pos_ratio_budget : float, default=0.05
        Fraction of ``epsilon`` spent on the class ratio when ``pos_ratio`` is None.
        Its count gets geometric noise of std about ``sqrt(2) / (pos_ratio_budget *
        epsilon)``; when that is above half the smaller released class count
        the fit warns (with 30 positives in 3,000 rows at ``epsilon=1`` a tenth of
        the releases are 0). The ratio used is the count's posterior mean under a
        flat prior on ``[1, size - 1]`` (both classes are present): the released
        ratio far from 0 and 1, about one noise scale inside where the release is
        at the edge (post-processing). On features whose mean is
        far from 0 the fit is sensitive to the ratio's error: for a linear scorer a
        ratio off by ``e`` adds ``2 (1 + alpha) e`` times the features' mean to the
        expected gradient in ``theta`` (``alpha`` the dual variable of the formula
        above), a pull along a direction that does not separate the classes.
        Centre the features (on public values, or with
        :class:`~skdpminimax.preprocessing.DPStandardScaler`) where the ratio's
        noise is not small: on ijcnn1 at ``epsilon=0.1`` a ratio 17% too high cost
        2.3 AUC points on the raw features and none on exactly centred ones
        (docs/benchmarks.md).
    radius : float or "auto", default="auto"
        Radius of the L2 ball holding ``theta`` (a public constant; with
        ``data_norm`` it bounds the scores and the gradients). ``"auto"``: for the
        linear scorer under ``NoisySGDA`` or ``NoisyExtragradient`` (the default
        solver among them), ``max(10, sqrt(d) / max(1, data_norm))``, the step
        rule's guess of a solution's norm on rows of norm up to 1, so that the ball
        holds the sparse solutions the step is sized for: 10 (the earlier default)
        unless ``d > 100`` and ``data_norm < sqrt(d) / 10``, as on unit-norm sparse
        rows (text-like rows of 20,000 columns: test AUC 83.4 -> 86.7 without
        noise, 78.2 -> 81.5 at epsilon 10; docs/benchmarks.md). It does not grow as
        ``1 / data_norm`` (under noise a small ball regularises rows of a small
        scale). 10 for the MLP and for the other solvers (output perturbation's
        noise grows with the ball). With
        ``scorer="mlp"`` the initial weights alone have a norm near
        ``init_scale * sqrt(hidden_units / 3)`` (about 9.3 for 256 units at
        ``init_scale=1``, close to the default)
        and the noise's random walk adds to it, so choose a radius well above that
        (the Yang et al. reproduction uses 100): a ball that binds projects the
        signal away with the noise (docs/benchmarks.md, MNIST MLP diagnosis).
    alpha : float, default=1e-4
        L2 regularisation ``lambda`` of the primal block (makes it strongly convex
        for the linear scorer).
    scorer : {"linear", "mlp"}, default="linear"
        The score ``h(theta; x)``: ``theta @ x``, or the two-layer leaky-ReLU MLP of
        Yang et al. (2022) (:class:`~skdpminimax.objectives.scorers.MLPScorer`).
        The MLP has no public gradient bound: the solver's clip norms make it
        private and must be finite. The MLP objective is nonconvex-strongly-concave.
    hidden_units : int, default=256
        Width of the MLP's hidden layer (``scorer="mlp"`` only).
    init_scale : float, default=1.0
        Multiplies the MLP's initial weights, PyTorch's default ``nn.Linear`` init
        (``scorer="mlp"`` only; data-independent, so it costs no privacy). On the Yang
        et al. validation splits 0.5 gained up to 0.18 points at epsilon >= 0.5 and
        lost up to 1.5 at epsilon = 0.1, so the reproduction keeps 1
        (docs/benchmarks.md).
    solver : str or solver object, default="sgda"
        A registered solver name (see :data:`skdpminimax.solvers.SOLVERS`) or an
        object with ``calibrate`` and ``solve``. The default name ``"sgda"`` means
        ``NoisySGDA(step_size="scaled", n_epochs="auto", clip_w="auto_if_quiet")``
        for the linear scorer (steps sized from the public ``data_norm`` and the
        noise, and up to 8,000 of them on small data where the noise is small; the
        certified ``1 / L`` of ``step_size="auto"`` under-fits; the examples'
        gradients clipped at ``data_norm / 2`` where a step's noise is negligible,
        at the smaller of 1 and ``data_norm / 2`` otherwise: on large data clip 1
        cost up to 4.4 AUC points at every
        epsilon, docs/benchmarks.md) and
        ``NoisySGDA(step_size="scaled", clip_w=5.0, schedule="linear",
        average="last", n_epochs="auto")`` with ``scorer="mlp"``: a linearly decaying
        step whose product with the clip is sized from the noise (see ``NoisySGDA``),
        the same noise-aware run length, and the
        last iterate (averaging iterates of a nonconvex model is meaningless; the
        nonconvex theory, Yang et al. 2022, Thms. 3-5, and the paper's experiments
        use it). The clip 5 is about the per-example gradient norm of the 256-unit
        MLP at its initial weights on standardised rows. The earlier default
        (step 0.1, clip 1) lost up to 9 points on larger data (docs/benchmarks.md).
    accountant : BudgetAccountant or None, default=None
        Ledger every fit spends on; ``None`` uses diffprivlib's default accountant.
        One accountant is shared by all clones (grid search, cross-validation).
    {shared_parameters}

    Attributes
    ----------
    classes_ : ndarray of shape (2,)
        Class labels; ``classes_[1]`` is the positive class.
    coef_ : ndarray of shape (1, n_features)
        The private scorer ``theta`` (``scorer="linear"`` only).
    scorer_params_ : ndarray of shape (n_params,)
        The private scorer parameters ``theta`` (for the MLP, the flat
        ``(W_1, b_1, w_2)``; see :class:`~skdpminimax.objectives.scorers.MLPScorer`).
    intercept_ : ndarray of shape (1,)
        ``-(a + b) / 2``: thresholds the score half way between the private class
        means ``a`` and ``b`` of the scores.
    class_score_means_ : ndarray of shape (2,)
        The private ``(b, a)``: mean score of the negative and positive class.
    pos_ratio_ : float
        The class ratio used: public, or the posterior mean of the privately
        released positives' count over the size (see ``pos_ratio_budget``).
    calibration_ : NoiseCalibration
        Noise multiplier, steps, sampler and accountant of the solver.
    {planning_size_attribute}
    privacy_spent_ : PrivacyBudget
        ``(epsilon, delta)`` charged to the accountant by this fit.
    solver_ : solver
        The fitted solver object.
    objective_ : SquareLossAUC
        The objective that was solved (public constants: ``data_norm``, the class
        ratio used, the scorer).
    dual_coef_ : ndarray of shape (1,)
        The released dual variable ``alpha`` of the formula above.
    n_features_in_ : int
        Number of features seen during ``fit``.

    Notes
    -----
    **Privacy.** ``fit`` is ``(epsilon, delta)``-DP with respect to one example
    (the neighbouring relation is the solver's: add/remove-one with Poisson
    sampling, replace-one otherwise; the size as in ``n_samples_budget``). Public:
    ``data_norm``, ``radius``, ``pos_ratio`` when given, and all hyperparameters. The
    class ratio,
    when not given, is released with the truncated geometric mechanism
    (``pos_ratio_budget * epsilon``, pure DP) and the solver gets the rest; the two
    compose by basic composition, or, with ``composition="pld"`` under add/remove-one
    (the default), in one PLD on which the solver's noise is calibrated. Every fitted
    attribute is a post-processing of these releases, except ``classes_``: the two class labels are treated as public
    (as in scikit-learn and diffprivlib), and they are the labels present in ``y``.

    Examples
    --------
    >>> from sklearn.datasets import load_breast_cancer
    >>> from sklearn.pipeline import make_pipeline
    >>> from sklearn.preprocessing import StandardScaler
    >>> from skdpminimax import DPAUCMaximizer
    >>> X, y = load_breast_cancer(return_X_y=True)
    >>> model = make_pipeline(StandardScaler(), DPAUCMaximizer(
    ...     epsilon=1.0, data_norm=6.0, pos_ratio=0.6, random_state=0))
    >>> model.fit(X, y).score(X, y) > 0.8
    True
    """

    # the class ratio's release is one count (private_count)
    _constants_are_one_count = True

    _parameter_constraints = {
        **DPMinimaxEstimator._parameter_constraints,
        "pos_ratio": [Interval(Real, 0, 1, closed="neither"), None],
        "pos_ratio_budget": [Interval(Real, 0, 1, closed="neither")],
        "radius": [Interval(Real, 0, None, closed="neither"), StrOptions({"auto"})],
        "alpha": [Interval(Real, 0, None, closed="left")],
        "scorer": [StrOptions({"linear", "mlp"})],
        "hidden_units": [Interval(Integral, 1, None, closed="left")],
        "init_scale": [Interval(Real, 0, None, closed="neither")],
    }

    def __init__(
        self,
        epsilon=1.0,
        delta=1e-5,
        *,
        data_norm=None,
        pos_ratio=None,
        pos_ratio_budget=0.05,
        radius="auto",
        alpha=1e-4,
        scorer="linear",
        hidden_units=256,
        init_scale=1.0,
        solver="sgda",
        accountant=None,
        random_state=None,
        n_samples_budget=DEFAULT_N_SAMPLES_BUDGET, composition="pld", composed_with=None,
    ):
        self.epsilon = epsilon
        self.delta = delta
        self.data_norm = data_norm
        self.pos_ratio = pos_ratio
        self.pos_ratio_budget = pos_ratio_budget
        self.radius = radius
        self.alpha = alpha
        self.scorer = scorer
        self.hidden_units = hidden_units
        self.init_scale = init_scale
        self.solver = solver
        self.accountant = accountant
        self.random_state = random_state
        self.n_samples_budget = n_samples_budget
        self.composition = composition
        self.composed_with = composed_with

    def fit(self, X, y):
        """Fit the private AUC maximiser.

        Parameters
        ----------
        X : {array-like, sparse matrix} of shape (n_samples, n_features)
            Training rows, clipped to ``data_norm``.
        y : array-like of shape (n_samples,)
            Binary labels; the greater label (``classes_[1]``) is positive.

        Returns
        -------
        self : DPAUCMaximizer
            The fitted estimator.
        """
        return self._fit(X, y)

    # ---- pipeline hooks -----------------------------------------------------
    def _validate_targets(self, X, y, **task_data):
        with comparable_class_labels():
            kind = type_of_target(y, input_name="y", raise_unknown=True)
        if kind != "binary":
            raise ValueError(
                "Only binary classification is supported. The type of the target "
                f"is {kind}: DPAUCMaximizer needs exactly two classes in y."
            )
        classes, encoded = np.unique(canonical_labels(y), return_inverse=True)
        if len(classes) != 2:
            raise ValueError(
                f"DPAUCMaximizer needs 2 classes in y; got only {classes.tolist()}."
            )
        self.classes_ = classes
        return np.where(encoded == 1, 1.0, -1.0), task_data

    def _split_budget(self, budget):
        if self.pos_ratio is not None:
            return None, budget
        return budget.split(self.pos_ratio_budget)

    def _public_constants(self, targets, task_data):
        return {"pos_ratio": 0.5 if self.pos_ratio is None else float(self.pos_ratio)}

    def _private_constants(self, targets, task_data, budget, rng):
        if self.pos_ratio is not None:
            return {"pos_ratio": float(self.pos_ratio)}
        size = task_data["size"]  # public: the rows' count, or a private release of it
        n_pos = private_count(np.count_nonzero(targets > 0), size, budget.epsilon, rng)
        _warn_if_ratio_is_noisy(n_pos, size, budget.epsilon, self.pos_ratio_budget)
        # Both classes are present (checked before the spend): the count's posterior
        # mean on [1, size - 1], so a release at 0 or size means about one noise scale
        # from the edge, not 0.001 (a thousand-fold class weight). Post-processing.
        n_pos = count_posterior_mean(n_pos, size, budget.epsilon)[0]
        return {"pos_ratio": float(np.clip(n_pos / size, _RATIO_FLOOR, 1.0 - _RATIO_FLOOR))}

    def _resolve_solver(self):
        # The default solver name (see `solver`): the noise-aware "scaled" step; for
        # the nonconvex MLP with a linear decay and the last iterate, for the linear
        # scorer with the noise-aware run length and, where the noise is negligible,
        # a clip at the typical gradient (clip 1 biased large-data fits by up to 4.4
        # AUC points whatever the epsilon).
        if isinstance(self.solver, str) and self.solver == "sgda":
            if self.scorer == "mlp":
                return NoisySGDA(step_size="scaled", clip_w=5.0, schedule="linear",
                                 average="last", n_epochs="auto")
            return NoisySGDA(step_size="scaled", n_epochs="auto", clip_w="auto_if_quiet")
        return resolve_solver(self.solver)

    def _radius(self, n_features, data_norm):
        """The ball's radius: ``radius``, or for ``"auto"`` (see the parameter)."""
        if self.radius != "auto":
            return float(self.radius)
        # Only the clipping gradient solvers, whose noise the clips set: output
        # perturbation's noise grows with the ball. And with sqrt(d) on rows of norm
        # up to 1, never as 1 / data_norm: under noise a ball larger than the data's
        # scale needs lets the noise walk (a review: features scaled by 1e-3, AUC 0.97
        # -> 0.62 at epsilon 1 with a radius that grew as 1 / data_norm).
        gradient_solver = isinstance(self._resolve_solver(), (NoisySGDA, NoisyExtragradient))
        if self.scorer == "mlp" or not gradient_solver or not data_norm > 0:
            return _AUTO_RADIUS_FLOOR
        return max(_AUTO_RADIUS_FLOOR, linear_solution_norm(n_features, max(1.0, data_norm)))

    def _linear_score_range(self, norm):
        # The MLP's scores are not bounded by radius * data_norm.
        if self.scorer != "linear":
            return None
        return self._radius(getattr(self, "n_features_in_", 1), norm) * norm

    def _make_scorer(self):
        if self.scorer == "mlp":
            return MLPScorer(hidden_units=self.hidden_units, init_scale=self.init_scale)
        return LinearScorer()

    def _make_objective(self, n_features, data_norm, constants):
        return SquareLossAUC(
            n_features,
            pos_ratio=constants["pos_ratio"],
            data_norm=data_norm,
            radius=self._radius(n_features, data_norm),
            l2_reg=self.alpha,
            scorer=self._make_scorer(),
        )

    def _set_fitted(self, result, objective, constants):
        theta, a, b = objective.split(result.w)
        self.scorer_params_ = theta.copy()
        if self.scorer == "linear":
            self.coef_ = theta.reshape(1, -1).copy()
        self.intercept_ = np.array([-(a + b) / 2.0])
        self.class_score_means_ = np.array([b, a])
        self.dual_coef_ = np.asarray(result.v).copy()
        self.pos_ratio_ = constants["pos_ratio"]

    # ---- prediction ----------------------------------------------------------
    def decision_function(self, X):
        """Score rows: ``h(scorer_params_; X) + intercept_``, higher for positives.

        Parameters
        ----------
        X : {array-like, sparse matrix} of shape (n_samples, n_features)
            Rows to score.

        Returns
        -------
        scores : ndarray of shape (n_samples,)
            The ranking the fit optimises, positive above the midpoint of the
            class means.
        """
        X = self._prediction_input(X)
        return self.objective_.scorer.scores(self.scorer_params_, X) + self.intercept_[0]

    def predict(self, X):
        """Class labels: positive where the score exceeds the midpoint of the class means.

        The midpoint ignores the class frequencies (a balanced-error operating point):
        on rare positives it predicts the positive class more often than it occurs.
        For another operating point wrap the estimator in scikit-learn's
        ``FixedThresholdClassifier`` (scikit-learn >= 1.5) with a public threshold
        on ``decision_function``.

        Parameters
        ----------
        X : {array-like, sparse matrix} of shape (n_samples, n_features)
            Rows to classify.

        Returns
        -------
        y_pred : ndarray of shape (n_samples,)
            Labels from ``classes_``.
        """
        positive = self.decision_function(X) > 0
        return self.classes_[positive.astype(int)]

    def score(self, X, y, sample_weight=None):
        """Accuracy of :meth:`predict` on ``(X, y)``, scikit-learn's classifier score,
        **not** the AUC the fit maximises.

        It is what ``GridSearchCV`` and ``cross_val_score`` use without ``scoring``:
        accuracy at the midpoint of the class means (see :meth:`predict`), which on
        rare positives can be low for a model that ranks well. To tune or compare the
        ranking, pass ``scoring="roc_auc"`` (it reads :meth:`decision_function`), or
        compute ``roc_auc_score(y, model.decision_function(X))``.

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
        tags.classifier_tags.multi_class = False
        tags.classifier_tags.poor_score = True
        return tags

    def _more_tags(self):  # the same tags for scikit-learn < 1.6
        return {"binary_only": True, "poor_score": True}
