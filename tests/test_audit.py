"""Privacy audit: correct solvers pass it, deliberately broken ones are caught.

The broken solvers live here only (never in the library). The setting makes one
fit close to a single Gaussian mechanism, so that the attack is as strong as the
accountant assumes: rows at the origin (no gradient in the canary's direction),
a canary at the clip bound whose replacement has the opposite label (gradient
gap ``2 C`` under replace-one), one full-batch step and the last iterate released.
"""

import contextlib
import dataclasses

import numpy as np
import scipy.sparse as sp
import pytest
from sklearn.base import ClassifierMixin
from sklearn.linear_model import LogisticRegression

from privacy_reference import gdp_mu
from skdpminimax import DPAUCMaximizer
from skdpminimax.audit import audit_estimator, epsilon_lower_bound
from skdpminimax.base import DPMinimaxEstimator
from skdpminimax.objectives.base import SaddleObjective
from skdpminimax.sets import L2Ball
from skdpminimax.objectives.auc import SquareLossAUC
from skdpminimax.solvers import NoisyExtragradient, NoisySGDA, OutputPerturbation, ProjectedGDA
from skdpminimax.solvers.oracle import resolve_clip_norms

pytestmark = pytest.mark.statistical

EPSILON, DELTA = 2.0, 1e-2  # a large delta makes a finite-sample audit powerful


@pytest.fixture
def runs(request):
    """``n_runs`` of a test: its fast default, or ``--audit-runs``."""
    override = request.config.getoption("--audit-runs")
    return lambda default: default if override is None else override


def gda(**kw):
    """One full-batch step, last iterate: a single Gaussian release."""
    params = dict(batch_size=None, n_iter=1, average="last", step_size=1.0, clip_w=1.0,
                  clip_v=1.0, noise_allocation=1e-3)  # nearly all privacy to the primal block
    params.update(kw)
    return params


def auc(solver, **kw):
    return DPAUCMaximizer(epsilon=EPSILON, delta=DELTA, data_norm=2.0, pos_ratio=0.5,
                          solver=solver, **kw)


# ---- deliberately broken solvers (test-only) ------------------------------------
class NoNoiseSGDA(NoisySGDA):
    """Claims the budget, adds no noise."""

    def calibrate(self, objective, n_samples, budget):
        cal = super().calibrate(objective, n_samples, budget)
        return dataclasses.replace(cal, block_noise_multipliers=(0.0, 0.0))


class HalfNoiseSGDA(NoisySGDA):
    """Half the calibrated noise."""

    def calibrate(self, objective, n_samples, budget):
        cal = super().calibrate(objective, n_samples, budget)
        return dataclasses.replace(
            cal, block_noise_multipliers=tuple(z / 2 for z in cal.block_noise_multipliers))


class UnclippedSGDA(NoisySGDA):
    """Noise for clip norms 1, but gradients clipped only at the objective's loose
    certified bound (set ``clip_w=clip_v=None``): clipping is effectively off."""

    def calibrate(self, objective, n_samples, budget):
        cal = super().calibrate(objective, n_samples, budget)
        used = resolve_clip_norms(objective, self.clip_w, self.clip_v)
        return dataclasses.replace(cal, block_noise_multipliers=tuple(
            z * 1.0 / c for z, c in zip(cal.block_noise_multipliers, used)))


class SeparateBlocksSGDA(NoisySGDA):
    """Each block gets the single-block multiplier ``z`` (accounted separately, as the
    papers do): the joint multiplier is ``z / sqrt(2)``."""

    def calibrate(self, objective, n_samples, budget):
        cal = super().calibrate(objective, n_samples, budget)
        z = cal.noise_multiplier
        return dataclasses.replace(cal, block_noise_multipliers=(z, z))


# ---- a two-block linear release (test harness for the joint accounting) ----------
class BilinearObjective(SaddleObjective):
    """``f(w, v; x, y) = y <w, x> + y <v, x>``: both blocks' gradients are ``y x``,
    so one step releases the canary in both blocks at once."""

    def __init__(self, n_features, data_norm):
        self.n_features, self.data_norm = n_features, data_norm
        self.primal_set = L2Ball(1e6)
        self.dual_set = L2Ball(1e6)

    def init_params(self, rng=None):
        return np.zeros(self.n_features), np.zeros(self.n_features)

    def per_example_values(self, w, v, data):
        return data.y * (data.X @ w + data.X @ v)

    def per_example_grads(self, w, v, data):
        g = data.y[:, None] * data.X
        return g, g.copy()

    def lipschitz(self):
        return self.data_norm, self.data_norm


class BilinearRelease(ClassifierMixin, DPMinimaxEstimator):
    """Test-only estimator around :class:`BilinearObjective`."""

    def __init__(self, epsilon=1.0, delta=1e-5, *, data_norm=None, solver="sgda",
                 accountant=None, random_state=None):
        self.epsilon, self.delta, self.data_norm = epsilon, delta, data_norm
        self.solver, self.accountant, self.random_state = solver, accountant, random_state

    def fit(self, X, y):
        return self._fit(X, y)

    def _validate_targets(self, X, y, **task_data):
        self.classes_ = np.unique(y)
        return np.where(y == self.classes_[1], 1.0, -1.0), task_data

    def _public_constants(self, targets, task_data):
        return {}

    _private_constants = lambda self, targets, task_data, budget, rng: {}  # noqa: E731

    def _make_objective(self, n_features, data_norm, constants):
        return BilinearObjective(n_features, data_norm)

    def _set_fitted(self, result, objective, constants):
        self.coef_, self.dual_coef_ = result.w.copy(), result.v.copy()


# ---- the bound itself -----------------------------------------------------------
def test_bound_on_gaussian_samples_is_below_the_gaussian_epsilon():
    """Scores of an exact Gaussian mechanism at (EPSILON, DELTA) never give a bound
    above EPSILON; a mechanism with twice the signal does."""
    mu = gdp_mu(EPSILON, DELTA)
    rng = np.random.default_rng(0)
    for _ in range(5):
        fair = epsilon_lower_bound(rng.normal(mu, 1, 2000), rng.normal(0, 1, 2000),
                                   delta=DELTA, n_selection=500)
        assert fair.epsilon_lower_bound <= EPSILON
        assert fair.epsilon_lower_bound_gdp <= EPSILON
    leaky = epsilon_lower_bound(rng.normal(2 * mu, 1, 2000), rng.normal(0, 1, 2000),
                                delta=DELTA, n_selection=500)
    assert leaky.epsilon_lower_bound > EPSILON
    assert leaky.true_positives + leaky.false_negatives == 1500


def test_non_private_model_is_exposed(runs):
    result = audit_estimator(LogisticRegression(C=1e4), epsilon=1.0, delta=1e-5,
                             n_runs=runs(60), random_state=0)
    assert result.epsilon_lower_bound > 1.0
    assert result.violates_claim
    assert result.true_positives == result.n_runs - result.n_selection
    assert result.false_positives == 0


# ---- correct solvers: the audit never exceeds the claim ---------------------------
def test_dp_gda_passes(runs):
    result = audit_estimator(auc(NoisySGDA(**gda())), epsilon=EPSILON, delta=DELTA,
                             n_runs=runs(2000), random_state=1, selection_fraction=0.25)
    assert result.neighboring_relation == "replace-one"
    assert result.epsilon_lower_bound <= EPSILON
    # Full-batch DP-GDA is exactly Gaussian: the GDP bound applies and holds too,
    # and the attack is strong (not a vacuous pass).
    assert result.epsilon_lower_bound_gdp <= EPSILON
    assert result.epsilon_lower_bound_gdp > 0.5 * EPSILON


def test_dp_sgda_passes(runs):
    X = np.zeros((40, 2))
    y = np.arange(40) % 2
    solver = NoisySGDA(**gda(batch_size=10, n_iter=3))
    result = audit_estimator(auc(solver), epsilon=EPSILON, delta=DELTA, X=X, y=y,
                             n_runs=runs(400), random_state=2)
    assert result.neighboring_relation == "add/remove-one"
    assert result.epsilon_lower_bound <= EPSILON


# ---- broken solvers are caught -------------------------------------------------
@contextlib.contextmanager
def estimator_checks_off():
    """The estimators' record and run checks off: the broken solvers above edit their
    records' block multipliers, which the estimators refuse before any release
    (test_the_estimators_refuse_the_broken_solvers); the audit must catch them on its
    own, as it would a slip those checks cannot see (noise added outside the oracle).
    Also used by benchmarks/audit_table.py for its BROKEN rows."""
    import skdpminimax.base as base

    saved = base.check_record_certifies, base.check_run_matches_record
    base.check_record_certifies = base.check_run_matches_record = lambda *args: None
    try:
        yield
    finally:
        base.check_record_certifies, base.check_run_matches_record = saved


@pytest.fixture
def unchecked():
    with estimator_checks_off():
        yield


@pytest.mark.parametrize("solver", [NoNoiseSGDA, HalfNoiseSGDA, SeparateBlocksSGDA,
                                    UnclippedSGDA])
def test_the_estimators_refuse_the_broken_solvers(solver):
    clips = dict(clip_w=None, clip_v=None) if solver is UnclippedSGDA else {}
    model = auc(solver(**gda(**clips))).set_params(data_norm=4.0)
    X = np.random.default_rng(0).normal(size=(40, 2))
    with pytest.raises(RuntimeError, match="combine to"):
        model.fit(X, np.arange(40) % 2)


def test_no_noise_is_caught(runs, unchecked):
    result = audit_estimator(auc(NoNoiseSGDA(**gda())), epsilon=EPSILON, delta=DELTA,
                             n_runs=runs(100), random_state=3)
    assert result.epsilon_lower_bound > EPSILON


def test_no_clipping_is_caught(runs, unchecked):
    # Canary gradient ||x|| = data_norm = 4 where the noise assumes 1.
    solver = UnclippedSGDA(**gda(clip_w=None, clip_v=None))
    result = audit_estimator(auc(solver).set_params(data_norm=4.0), epsilon=EPSILON,
                             delta=DELTA, n_runs=runs(400), random_state=4)
    assert result.epsilon_lower_bound > EPSILON


def test_half_noise_is_caught(runs, unchecked):
    result = audit_estimator(auc(HalfNoiseSGDA(**gda())), epsilon=EPSILON, delta=DELTA,
                             n_runs=runs(2000), random_state=5, selection_fraction=0.25)
    assert result.epsilon_lower_bound > EPSILON


def test_blocks_accounted_separately_is_caught(runs, unchecked):
    """Joint multiplier sqrt(2) too small. The signal is sqrt(2) x the claimed one,
    beyond what a few thousand runs can show with the assumption-free bound; full-batch
    DP-GDA's claim is exactly a Gaussian mechanism, so its GDP bound tests the claim."""
    kw = dict(epsilon=EPSILON, delta=DELTA, data_norm=2.0)
    common = dict(epsilon=EPSILON, delta=DELTA, n_runs=runs(2000), selection_fraction=0.25,
                  statistic="params")
    fair = audit_estimator(BilinearRelease(solver=NoisySGDA(**gda(noise_allocation="equal")), **kw),
                           random_state=6, **common)
    broken = audit_estimator(
        BilinearRelease(solver=SeparateBlocksSGDA(**gda(noise_allocation="equal")), **kw),
        random_state=6, **common)
    assert fair.epsilon_lower_bound_gdp <= EPSILON
    assert broken.epsilon_lower_bound_gdp > EPSILON


class ShuffleAsAddRemoveSGDA(NoisySGDA):
    """Shuffled epochs with the add/remove-one sensitivity C where replace-one needs 2C."""

    def _make_sampler(self, n_samples):
        sampler = super()._make_sampler(n_samples)
        sampler.sensitivity_factor = 1.0
        return sampler


def test_shuffled_epochs_pass_and_a_halved_sensitivity_is_caught(runs, unchecked):
    """One epoch of two shuffled batches: the canary is in one, a single Gaussian
    release for it (the claim). The released sum also carries the other batch's
    noise, so the fair run shows mu / sqrt(2); at the add/remove sensitivity C the run
    shows sqrt(2) times the claim, which the GDP bound (exact: the release is
    Gaussian) tells apart."""
    X = np.zeros((40, 2))
    y = np.arange(40) % 2
    kw = dict(epsilon=EPSILON, delta=DELTA, data_norm=2.0)
    common = dict(epsilon=EPSILON, delta=DELTA, X=X, y=y, n_runs=runs(2000),
                  selection_fraction=0.25, statistic="params")
    params = gda(batch_size=20, n_iter=2, sampler="shuffle", noise_allocation="equal")
    fair = audit_estimator(BilinearRelease(solver=NoisySGDA(**params), **kw),
                           random_state=14, **common)
    broken = audit_estimator(BilinearRelease(solver=ShuffleAsAddRemoveSGDA(**params), **kw),
                             random_state=14, **common)
    assert fair.neighboring_relation == "replace-one"
    assert fair.epsilon_lower_bound_gdp <= EPSILON
    assert broken.epsilon_lower_bound_gdp > EPSILON


def test_inputs_not_mutated_and_reproducible():
    X = np.zeros((10, 2))
    y = np.arange(10) % 2
    X0, y0 = X.copy(), y.copy()
    a = audit_estimator(auc(NoisySGDA(**gda())), epsilon=EPSILON, delta=DELTA, X=X, y=y,
                        n_runs=20, random_state=7)
    b = audit_estimator(auc(NoisySGDA(**gda())), epsilon=EPSILON, delta=DELTA, X=X, y=y,
                        n_runs=20, random_state=7)
    np.testing.assert_array_equal(X, X0)
    np.testing.assert_array_equal(y, y0)
    np.testing.assert_array_equal(a.scores_in, b.scores_in)
    assert "lower bound" in a.summary()
    # sparse X is audited as the same data dense (and left as it was)
    Xs = sp.csr_matrix(X)
    c = audit_estimator(auc(NoisySGDA(**gda())), epsilon=EPSILON, delta=DELTA, X=Xs, y=y,
                        n_runs=20, random_state=7)
    np.testing.assert_array_equal(c.scores_in, a.scores_in)
    assert sp.issparse(Xs) and Xs.nnz == 0


@pytest.mark.parametrize("kwargs", [{"epsilon": 0}, {"epsilon": 1, "delta": 1.5},
                                    {"epsilon": 1, "n_runs": 2},
                                    {"epsilon": 1, "neighboring": "swap"}])
def test_bad_arguments(kwargs):
    with pytest.raises(ValueError):
        audit_estimator(LogisticRegression(), **kwargs)


# ---- output perturbation: one Gaussian release of a certified solution ------------
# Rows at the origin give no curvature; a strongly convex, small-radius problem keeps
# the exact saddle point's move close to the stability bound the noise is scaled to
# (about 0.9 of it: tight enough for a powerful test at a few ms per fit).
OP_ESTIMATOR = dict(data_norm=1.0, radius=0.004, alpha=30.0)


def op(solver_class=OutputPerturbation, estimator_class=DPAUCMaximizer):
    solver = solver_class(accuracy_ratio=0.05, base_solver=ProjectedGDA())
    return estimator_class(epsilon=EPSILON, delta=DELTA, pos_ratio=0.5, solver=solver,
                           **OP_ESTIMATOR)


class AddRemoveSensitivityOP(OutputPerturbation):
    """Sensitivity for add/remove-one neighbours (one gradient term, ``G / n``) while
    the release is audited under replace-one (``2 G / n``): half the noise."""

    def _sensitivity(self, objective, n_samples):
        return 0.5 * super()._sensitivity(objective, n_samples)


class HalfLipschitzAUC(SquareLossAUC):
    """A per-example gradient bound missing the factor 2 of ``d/dh (h - a)^2``."""

    certified_constants = True  # a false claim on purpose: the audit must catch it

    def lipschitz(self):
        return tuple(0.5 * g for g in super().lipschitz())


class HalfLipschitzAUCMaximizer(DPAUCMaximizer):
    """Test-only: the AUC estimator with the too-small Lipschitz bound above."""

    def _make_objective(self, n_features, data_norm, constants):
        real = super()._make_objective(n_features, data_norm, constants)
        real.__class__ = HalfLipschitzAUC
        return real


def test_output_perturbation_passes(runs):
    result = audit_estimator(op(), epsilon=EPSILON, delta=DELTA, n_runs=runs(500),
                             random_state=11, selection_fraction=0.25)
    assert result.neighboring_relation == "replace-one"
    assert result.epsilon_lower_bound <= EPSILON
    # The release is exactly one Gaussian mechanism, so the GDP bound applies, holds,
    # and is not vacuous (0.7 to 1.2 over seeds at 500 runs).
    assert result.epsilon_lower_bound_gdp <= EPSILON
    assert result.epsilon_lower_bound_gdp > 0.25 * EPSILON


@pytest.mark.parametrize("broken", ["add-remove-sensitivity", "half-lipschitz"])
def test_output_perturbation_too_little_noise_is_caught(runs, broken):
    model = (op(AddRemoveSensitivityOP) if broken == "add-remove-sensitivity"
             else op(estimator_class=HalfLipschitzAUCMaximizer))
    result = audit_estimator(model, epsilon=EPSILON, delta=DELTA, n_runs=runs(400),
                             random_state=12, selection_fraction=0.25)
    assert result.epsilon_lower_bound_gdp > EPSILON


# ---- NSEG single pass: each example in one batch, one release per batch ------------
def test_nseg_single_pass_passes(runs):
    solver = NoisyExtragradient(mode="single_pass", batch_size=5, n_iter=1, step_size=1.0,
                                clip_w=1.0, clip_v=1.0, noise_allocation=1e-3)
    result = audit_estimator(auc(solver), epsilon=EPSILON, delta=DELTA, n_runs=runs(500),
                             random_state=13, selection_fraction=0.25)
    assert result.epsilon_lower_bound <= EPSILON


# ---- fixes found in review: pipelines, discrete statistics, labels, size ---------------
def test_pipeline_runs_get_fresh_seeds_and_ledgers():
    """The private step of a Pipeline gets a fresh seed and an unlimited ledger in every
    run, and the audit takes its neighbouring relation from that step."""
    from diffprivlib.accountant import BudgetAccountant
    from sklearn.pipeline import make_pipeline
    from sklearn.preprocessing import FunctionTransformer

    from skdpminimax.audit import _relation_of, _with

    ledger = BudgetAccountant(epsilon=1.0)
    pipe = make_pipeline(FunctionTransformer(), DPAUCMaximizer(
        epsilon=1.0, data_norm=1.0, pos_ratio=0.5, random_state=0, accountant=ledger,
        solver=NoisySGDA(batch_size=4, n_iter=5)))
    a, b = _with(pipe, 11), _with(pipe, 12)
    step_a, step_b = a.steps[-1][1], b.steps[-1][1]
    assert (step_a.random_state, step_b.random_state) == (11, 12)
    assert step_a.accountant is not ledger and step_a.accountant is not step_b.accountant
    rng = np.random.default_rng(0)
    X, y = rng.normal(size=(20, 2)) / 4, np.arange(20) % 2
    a.fit(X, y)
    assert _relation_of(a, "auto") == "add/remove-one"
    assert ledger.spent_budget == []
    result = audit_estimator(pipe, epsilon=1.0, n_runs=8, X=X, y=y, random_state=0)
    assert result.neighboring_relation == "add/remove-one" and ledger.spent_budget == []


def test_discrete_statistic_uses_raw_rates():
    """Randomized response at epsilon = 1 (a 0/1 statistic): a normal fit would choose a
    threshold where a 0/1 score has no mass and find nothing; raw rates find it."""
    rng = np.random.default_rng(0)
    p = np.e / (1 + np.e)
    n = 4000
    s_in, s_out = (rng.random(n) < p).astype(float), (rng.random(n) < 1 - p).astype(float)
    result = epsilon_lower_bound(s_in, s_out, delta=1e-5)
    assert 0.6 < result.epsilon_lower_bound <= 1.0


def test_a_weak_shift_is_tested_by_a_non_trivial_threshold():
    """When no test is predicted to prove anything, the selection used to fall on
    the trivial test (everything "in", TPR = FPR = 1), hiding a visible shift. The
    Gaussian separation now picks the threshold; more runs get a positive bound, and
    the bound stays valid (no shift: a positive bound at most 5% of the time)."""
    rng = np.random.default_rng(0)
    trivial = informative = 0
    for _ in range(30):
        result = epsilon_lower_bound(rng.normal(0.4, 1, 200), rng.normal(0, 1, 200),
                                     delta=1e-5)
        positives = result.true_positives + result.false_positives
        trivial += positives in (0, 200)
        informative += result.epsilon_lower_bound > 0
    assert trivial == 0
    assert informative >= 3
    null = [epsilon_lower_bound(rng.normal(0, 1, 100), rng.normal(0, 1, 100),
                                delta=1e-5).epsilon_lower_bound > 0 for _ in range(200)]
    assert np.mean(null) <= 0.05


def test_rate_names_follow_the_side_of_the_bound():
    """Out-runs spread, in-runs a point: the bound comes from the mirrored inequality
    and the summary names those rates."""
    rng = np.random.default_rng(1)
    s_in = np.zeros(400)
    s_out = rng.normal(size=400)
    result = epsilon_lower_bound(s_in, s_out, delta=1e-5)
    names = result.rate_names
    assert names in (("TPR", "FPR"), ("TNR", "FNR"))
    assert f"{names[0]} >=" in result.summary() and f"{names[1]} <=" in result.summary()


def test_size_is_not_an_oracle_under_add_remove(runs):
    """n_iter_ used to be ceil(epochs * n / batch): a released function of n, which tells
    add/remove-one neighbours apart exactly. Planned on a private size it does not."""
    rng = np.random.default_rng(0)
    X = rng.normal(size=(128, 2))
    X /= 2 * np.linalg.norm(X, axis=1, keepdims=True)
    y = np.arange(128) % 2
    est = DPAUCMaximizer(epsilon=1.0, delta=1e-5, data_norm=1.0, pos_ratio=0.5)
    result = audit_estimator(est, epsilon=1.0, n_runs=runs(100), X=X, y=y,
                             random_state=0, neighboring="add-remove")
    assert not result.violates_claim


# ---- NSEG multi-pass: two releases an iteration, the extrapolation with r x the noise ---
def nseg_extrapolation_release():
    """Full-batch NSEG, 8 iterations, ``extrapolation_noise=4``, on the two-block release."""
    solver = NoisyExtragradient(mode="multi_pass", batch_size=None, n_iter=8, step_size=1.0,
                                clip_w=1.0, clip_v=1.0, noise_allocation="equal",
                                extrapolation_noise=4.0)
    return BilinearRelease(solver=solver, epsilon=EPSILON, delta=DELTA, data_norm=2.0)


def test_nseg_extrapolation_noise_passes(runs):
    """The accountant composes T releases of each kind (a Gaussian transcript under
    full batches), so the GDP bound applies. The released average of the extrapolated
    points carries about half of the transcript's information here, so the attack
    reaches about half the claim."""
    result = audit_estimator(nseg_extrapolation_release(), epsilon=EPSILON, delta=DELTA,
                             n_runs=runs(2000), selection_fraction=0.25,
                             statistic="params", random_state=20)
    assert result.neighboring_relation == "replace-one"
    assert result.epsilon_lower_bound <= EPSILON
    assert result.epsilon_lower_bound_gdp <= EPSILON
    assert result.epsilon_lower_bound_gdp > 0.25 * EPSILON  # the attack is not vacuous


def test_auto_statistic_audits_a_model_without_predict_by_its_parameters():
    """A review: statistic="auto" raised AttributeError on a DPSaddleEstimator whose
    objective has no predict (task=None); it audits the released parameters then."""
    import warnings

    from skdpminimax import DPSaddleEstimator
    from test_custom_objective import CoupledMean

    class NoPredict(CoupledMean):
        predict = property(lambda self: (_ for _ in ()).throw(AttributeError("predict")))

    est = DPSaddleEstimator(NoPredict, epsilon=1.0, data_norm=3.0)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        result = audit_estimator(est, epsilon=1.0, delta=1e-2, n_runs=40, random_state=0)
    assert 0.0 <= result.epsilon_lower_bound <= 1.0


def _unit_target_objective():
    from test_custom_objective import CoupledMean

    class UnitTarget(CoupledMean):
        """A regression objective whose domain is y in [0, 1] (its check_data)."""

        def check_data(self, y, groups):
            if y is not None and not np.all((0.0 <= y) & (y <= 1.0)):
                raise ValueError("UnitTarget needs targets in [0, 1].")

    return UnitTarget


def test_a_regression_canary_stays_in_the_objective_s_domain():
    """The default canary's label lay far outside the data's, which an objective with a
    check_data domain refuses: the audit failed in its first fit. It now falls back to
    the data's extremes, which the pre-spend check takes."""
    import warnings

    from skdpminimax import DPSaddleEstimator

    rng = np.random.default_rng(0)
    X = rng.normal(size=(12, 2))
    y = rng.uniform(0.1, 0.9, size=12)
    est = DPSaddleEstimator(_unit_target_objective(), epsilon=1.0, data_norm=3.0,
                            task="regression")
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        result = audit_estimator(est, epsilon=1.0, delta=1e-2, n_runs=40, X=X, y=y,
                                 random_state=0)
    assert 0.0 <= result.epsilon_lower_bound <= 1.0
    # a target outside the domain in the data themselves: refused with the fix named
    with pytest.raises(ValueError, match="Pass canary="):
        audit_estimator(est, epsilon=1.0, delta=1e-2, n_runs=40, X=X,
                        y=np.append(y[:-1], 2.0), random_state=0)


def test_a_replace_one_audit_of_an_estimator_that_ignores_the_label_is_refused():
    """A review: replace-one neighbours differ in the canary's label only, and an
    objective that does not read y released the same model for both; the audit reported
    "consistent with the claim" at TPR = FPR = 1, having tested nothing."""
    import warnings

    from estimators_under_test import LabelledMean
    from skdpminimax import DPSaddleEstimator
    from test_custom_objective import CoupledMean  # ignores y

    rng = np.random.default_rng(0)
    X, y = rng.normal(size=(12, 2)) / 2, rng.uniform(-0.9, 0.9, size=12)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        with pytest.raises(ValueError, match="does not read that label"):
            audit_estimator(DPSaddleEstimator(CoupledMean, epsilon=1.0, data_norm=3.0,
                                              task="regression", solver="gda"),
                            epsilon=1.0, delta=1e-2, n_runs=8, X=X, y=y, random_state=0)
        # an objective that reads y (clipped to [-1, 1]) is audited
        result = audit_estimator(DPSaddleEstimator(LabelledMean, epsilon=1.0, data_norm=3.0,
                                                   task="regression", solver="gda"),
                                 epsilon=1.0, delta=1e-2, n_runs=8, X=X, y=y,
                                 canary=(np.array([1.0, 0.0]), 1.0, -1.0), random_state=0)
    assert result.neighboring_relation == "replace-one"
