"""DPSaddleEstimator: fitting a user's SaddleObjective privately."""

import math
import numpy as np
import pytest
from diffprivlib.accountant import BudgetAccountant
from sklearn.base import clone

from skdpminimax import DPSaddleEstimator
from skdpminimax.objectives import SaddleObjective
from skdpminimax.sets import Box, L2Ball
from skdpminimax.solvers import NoisySGDA
from sklearn_checks import LEGACY_CHECKS, parametrize_with_checks_list


class CoupledMean(SaddleObjective):
    """f(w, v; x) = ||w - x||^2 / 2 + v a.w, r = -lam v^2 / 2 (saddle point in closed form).

    v* = a.xbar / (lam + ||a||^2), w* = xbar - v* a (when inside the sets).
    """

    def __init__(self, n_features, data_norm, a=None, lam=1.0, radius=10.0, v_bound=10.0):
        self.a = np.ones(n_features) if a is None else np.asarray(a, float)
        self.lam = lam
        self.data_norm = data_norm
        self.radius = radius
        self.v_bound = v_bound
        self.primal_set = L2Ball(radius)
        self.dual_set = Box(-v_bound, v_bound)

    def init_params(self, rng=None):
        return np.zeros(self.a.size), np.zeros(1)

    def per_example_values(self, w, v, data):
        return 0.5 * np.sum((w - data.X) ** 2, axis=1) + v[0] * (self.a @ w)

    def per_example_grads(self, w, v, data):
        gw = (w - data.X) + v[0] * self.a
        return gw, np.full((data.n_samples, 1), self.a @ w)

    def reg_value(self, w, v):
        return -0.5 * self.lam * float(v @ v)

    def reg_grad(self, w, v):
        return np.zeros_like(w), -self.lam * v

    def lipschitz(self):
        na = np.linalg.norm(self.a)
        return self.radius + self.data_norm + self.v_bound * na, na * self.radius

    def strong_convexity(self):
        return 1.0, self.lam

    def predict(self, w, X):
        return X @ w


def _gda(n_iter=2000):
    return NoisySGDA(batch_size=None, n_iter=n_iter, step_size=0.2, clip_w=None, clip_v=None,
                     average="last")


def test_noise_free_fit_reaches_the_closed_form_saddle_point():
    rng = np.random.default_rng(0)
    X = rng.normal(loc=1.0, size=(100, 3))
    est = DPSaddleEstimator(CoupledMean, {"a": [1.0, -2.0, 0.5], "lam": 2.0}, epsilon=np.inf,
                            data_norm=10.0, solver=_gda(), random_state=0).fit(X)
    a, xbar = np.array([1.0, -2.0, 0.5]), X.mean(axis=0)
    v_star = a @ xbar / (2.0 + a @ a)
    np.testing.assert_allclose(est.dual_coef_, [v_star], atol=1e-6)
    np.testing.assert_allclose(est.coef_, xbar - v_star * a, atol=1e-6)
    np.testing.assert_allclose(est.predict(X), X @ est.coef_)


def test_private_fit_spends_the_budget_and_is_reproducible():
    rng = np.random.default_rng(1)
    X = rng.normal(size=(200, 2))
    acc = BudgetAccountant()
    est = DPSaddleEstimator(CoupledMean, epsilon=1.0, data_norm=3.0, accountant=acc,
                            random_state=5)
    w1 = est.fit(X).coef_.copy()
    w2 = clone(est).fit(X).coef_
    np.testing.assert_array_equal(w1, w2)
    assert acc.total()[0] == pytest.approx(2.0)
    assert est.calibration_.noise_multiplier > 0 and est.n_iter_ == est.calibration_.n_steps


def test_groups_and_targets_reach_the_objective():
    seen = {}

    class Spy(CoupledMean):
        def per_example_values(self, w, v, data):
            seen["groups"], seen["y"] = data.groups, data.y
            return super().per_example_values(w, v, data)

        def per_example_grads(self, w, v, data):
            seen["groups"], seen["y"] = data.groups, data.y
            return super().per_example_grads(w, v, data)

    X = np.random.default_rng(2).normal(size=(20, 2))
    sf = np.array(["u", "v"] * 10)
    est = DPSaddleEstimator(Spy, epsilon=np.inf, data_norm=5.0, solver=_gda(3)).fit(
        X, np.arange(20.0), sensitive_features=sf)
    assert list(est.groups_) == ["u", "v"]
    assert set(np.unique(seen["groups"])) == {0, 1} and seen["y"] is not None


def test_declared_groups_keep_their_codes_when_a_group_is_missing():
    """Without ``groups`` the codes index the labels present, so dropping group 1
    moved group 2 onto code 1 (its per-group constants silently misaligned, as in a
    cross-validation fold missing a rare group); declared, group 2 keeps code 2."""
    seen = {}

    class Spy(CoupledMean):
        def per_example_grads(self, w, v, data):
            seen["groups"] = data.groups
            return super().per_example_grads(w, v, data)

    X = np.random.default_rng(2).normal(size=(30, 2))
    sf = np.array([0, 2] * 15)
    fit = dict(epsilon=np.inf, data_norm=5.0, solver=_gda(3))
    est = DPSaddleEstimator(Spy, **fit).fit(X, sensitive_features=sf)
    assert list(est.groups_) == [0, 2] and set(seen["groups"]) == {0, 1}
    est = DPSaddleEstimator(Spy, groups=[0, 1, 2], **fit).fit(X, sensitive_features=sf)
    assert list(est.groups_) == [0, 1, 2]
    np.testing.assert_array_equal(seen["groups"], sf)
    # labels are matched as groups are told apart (1.0 is the group 1), in any order
    est = DPSaddleEstimator(Spy, groups=["b", "a"], **fit).fit(
        X, sensitive_features=np.array(["a", "b", "a"] * 10))
    np.testing.assert_array_equal(seen["groups"], [1, 0, 1] * 10)
    # two attributes: tuples
    pairs = np.column_stack([sf, np.arange(30) % 2])
    est = DPSaddleEstimator(Spy, groups=[(2, 1), (0, 0), (0, 1), (2, 0)], **fit).fit(
        X, sensitive_features=pairs)
    expected = [{(2, 1): 0, (0, 0): 1, (0, 1): 2, (2, 0): 3}[tuple(p)] for p in pairs]
    np.testing.assert_array_equal(seen["groups"], expected)
    # refused before any spend: an undeclared group, a label declared twice
    acc = BudgetAccountant()
    for groups, match in (([0, 1], "does not declare"), ([0, 2, 2.0], "twice"),
                          ([], "empty")):
        with pytest.raises(ValueError, match=match):
            DPSaddleEstimator(Spy, groups=groups, epsilon=1.0, data_norm=5.0,
                              accountant=acc).fit(X, sensitive_features=sf)
    assert acc.spent_budget == []


def test_not_an_objective_raises_before_spending():
    acc = BudgetAccountant()
    est = DPSaddleEstimator(lambda n_features, data_norm: object(), epsilon=1.0, data_norm=1.0,
                            accountant=acc)
    with pytest.raises(TypeError, match="must return a SaddleObjective"):
        est.fit(np.zeros((5, 2)))
    assert tuple(acc.total()) == (0.0, 0.0)
    # unfitted: a class factory's methods are offered (and raise NotFittedError); a
    # function's are known only once fitted
    from sklearn.exceptions import NotFittedError
    assert hasattr(DPSaddleEstimator(CoupledMean), "predict")
    assert not hasattr(DPSaddleEstimator(CoupledMean), "decision_function")
    with pytest.raises(NotFittedError):
        DPSaddleEstimator(CoupledMean).predict(np.zeros((2, 3)))
    assert not hasattr(DPSaddleEstimator(lambda **kw: CoupledMean(**kw)), "predict")


def _auc(n_features, data_norm):
    from skdpminimax.objectives.auc import SquareLossAUC
    return SquareLossAUC(n_features, 0.5, data_norm, 10.0, l2_reg=0.1)


def _dro(loss):
    def factory(n_features, data_norm):
        from skdpminimax.objectives.group_dro import GroupDRO
        return GroupDRO(n_features, loss, [0.5, 0.5], data_norm, 10.0, dual_reg=0.1, l2_reg=0.1)
    return factory


def _parity(n_features, data_norm):
    from skdpminimax.objectives.fairness import DemographicParityRegression
    return DemographicParityRegression(n_features, [0.5, 0.5], data_norm, 5.0, (-1.0, 1.0),
                                       l2_reg=0.1)


def _builtin_cases():
    from skdpminimax.objectives.losses import LogisticLoss, MultinomialLoss, SquaredLoss
    pm = np.array([1.0, -1.0] * 10)
    g = np.array([0, 1] * 10)
    # (factory, a valid (y, groups), [an invalid (y, groups), the error it gives])
    return [
        (_auc, (pm, None), [((np.where(pm > 0, 1e5, -1.0), None), "y in {-1, \\+1}"),
                            ((np.where(pm > 0, 1.0, 0.0), None), "y in {-1, \\+1}")]),
        (_dro(LogisticLoss()), (pm, g), [((pm * 3, g), "y in {-1, \\+1}"),
                                         ((pm, None), "group code per example"),
                                         ((pm, np.arange(20) % 3), "give 3 groups")]),
        (_dro(MultinomialLoss(3)), (np.arange(20.0) % 3, g),
         [((np.arange(20.0) % 4, g), "integer class codes"),
          ((np.arange(20.0) % 3 + 0.5, g), "integer class codes")]),
        (_dro(SquaredLoss((-1.0, 1.0))), (np.linspace(-5, 5, 20), g),
         [((np.linspace(-5, 5, 20), np.arange(20) % 3), "give 3 groups")]),
        (_parity, (np.linspace(-5, 5, 20), g), [((np.linspace(-5, 5, 20), None), "group code")]),
    ]


@pytest.mark.parametrize("case", range(5))
@pytest.mark.parametrize("solver", ["sgda", "output_perturbation"])
def test_builtin_objectives_refuse_targets_outside_their_bounds(case, solver):
    """The built-in objectives' certified bounds assume y in their domain (y in {-1, +1}
    for the AUC and logistic losses): one label of 1e5 moved an output-perturbation
    release 3.5x its calibrated sensitivity. Such y is refused before the spend."""
    factory, (y_ok, g_ok), bad = _builtin_cases()[case]
    rng = np.random.default_rng(0)
    X = rng.normal(size=(20, 3)) / 3
    fit_kw = lambda g: {} if g is None else {"sensitive_features": g}
    for (y_bad, g_bad), message in bad:
        acc = BudgetAccountant()
        est = DPSaddleEstimator(factory, epsilon=1.0, data_norm=1.0, solver=solver,
                                accountant=acc, n_samples_budget="public")
        with pytest.raises(ValueError, match=message):
            est.fit(X, y_bad, **fit_kw(g_bad))
        assert acc.spent_budget == [] and not hasattr(est, "coef_")
    acc = BudgetAccountant()
    DPSaddleEstimator(factory, epsilon=1.0, data_norm=1.0, solver=_gda(5), accountant=acc,
                      n_samples_budget="public").fit(X, y_ok, **fit_kw(g_ok))
    assert len(acc.spent_budget) == 1


def _expected_failures(estimator):
    if LEGACY_CHECKS:
        return {"check_parameters_default_constructible":
                "scikit-learn < 1.6 builds the class without its required objective_factory"}
    return {}


@parametrize_with_checks_list(
    [DPSaddleEstimator(CoupledMean, epsilon=1.0, data_norm=5.0, random_state=0)],
    _expected_failures)
def test_sklearn_compatible(estimator, check):
    check(estimator)


# ---- the engine checks what a user objective returns ---------------------------------------

class _TwoRowsPerExample(CoupledMean):
    """vstack where hstack was meant: two primal rows per example, each clipped apart."""

    def per_example_grads(self, w, v, data):
        gw, gv = super().per_example_grads(w, v, data)
        return np.vstack([gw, gw]), gv


class _DuplicatingPrepare(CoupledMean):
    def prepare(self, data):
        from skdpminimax.objectives.base import SaddleData
        return SaddleData(np.vstack([data.X, data.X]), None, None)


class _HalfPrecision(CoupledMean):
    def per_example_grads(self, w, v, data):
        gw, gv = super().per_example_grads(w, v, data)
        return gw.astype(np.float16), gv


class _NoDual(CoupledMean):
    """A plain minimisation written with an empty dual block."""

    def init_params(self, rng=None):
        return np.zeros(self.a.size), np.zeros(0)

    def per_example_grads(self, w, v, data):
        return w - data.X, np.zeros((data.n_samples, 0))

    def reg_grad(self, w, v):
        return np.zeros_like(w), np.zeros(0)

    def reg_value(self, w, v):
        return 0.0


def test_an_empty_dual_block_is_refused_with_the_workaround():
    """A user probe: a dual of size 0 (a minimisation) failed inside the calibration with
    'Noise shares must be positive'; it is refused by name, before any spend, and the
    one-coordinate dual held at 0 the message names fits."""
    X = np.random.default_rng(0).normal(size=(80, 3))
    acc = BudgetAccountant()
    est = DPSaddleEstimator(_NoDual, epsilon=1.0, data_norm=3.0, random_state=0,
                            accountant=acc, solver=NoisySGDA(batch_size=16))
    with pytest.raises(ValueError, match=r"empty dual v block.*Box\(0\.0, 0\.0\)"):
        est.fit(X)
    assert acc.spent_budget == []
    held = DPSaddleEstimator(CoupledMean, {"a": np.full(3, 1e-3), "v_bound": 0.0}, epsilon=1.0,
                             data_norm=3.0, random_state=0, accountant=acc,
                             solver=NoisySGDA(batch_size=16)).fit(X)
    assert held.dual_coef_.tolist() == [0.0] and np.all(np.isfinite(held.coef_))


def test_a_factory_that_refuses_n_classes_is_told_why_it_gets_it():
    """A user probe: task="classification" passes n_classes, and a factory without it
    failed with Python's bare 'unexpected keyword argument'."""
    acc = BudgetAccountant()
    X = np.random.default_rng(0).normal(size=(60, 3))
    est = DPSaddleEstimator(CoupledMean, task="classification", epsilon=1.0, data_norm=3.0,
                            accountant=acc)
    with pytest.raises(TypeError, match=r"n_classes \(task=classification\).*'n_classes'"):
        est.fit(X, np.arange(60) % 2)
    assert acc.spent_budget == []


@pytest.mark.parametrize("objective, match", [(_TwoRowsPerExample, "one row per example"),
                                              (_DuplicatingPrepare, "number of examples")])
def test_an_objective_that_changes_the_rows_is_refused_and_nothing_released(objective, match):
    """A reviewer's audit found epsilon >= 1.009 against a claimed 1 for the two-row case:
    each row was clipped apart, so an example counted twice."""
    X = np.random.default_rng(0).normal(size=(60, 3))
    acc = BudgetAccountant()
    est = DPSaddleEstimator(objective, epsilon=1.0, data_norm=3.0, random_state=0,
                            accountant=acc, solver=NoisySGDA(batch_size=16))
    with pytest.raises(ValueError, match=match):
        est.fit(X)
    assert not hasattr(est, "coef_")
    # Refused on a two-row stand-in before the charge (it was after, inside the solver).
    assert acc.spent_budget == []


def test_objective_mistakes_fail_on_the_stand_in_before_the_spend():
    """A user-style probe's findings: a start one coordinate short, a dual_set left None,
    an objective indexing groups none were given for, and ratios shorter than the group
    codes each failed inside the solver, after the charge. Any failure on the stand-in
    batches (zero features, every group code) is now refused first."""
    from skdpminimax.objectives.base import check_shapes_on_stand_in

    class ShortStart(CoupledMean):
        def init_params(self, rng=None):
            return np.zeros(self.a.size - 1), np.zeros(1)

    class NoDualSet(CoupledMean):
        def __init__(self, *args, **kwargs):
            super().__init__(*args, **kwargs)
            self.dual_set = None

    class PerGroup(CoupledMean):
        def __init__(self, n_features, data_norm, ratios=(0.5, 0.5)):
            super().__init__(n_features, data_norm)
            self.ratios = np.asarray(ratios)

        def per_example_grads(self, w, v, data):
            gw, gv = super().per_example_grads(w, v, data)
            return gw / self.ratios[data.groups][:, None], gv

    X = np.random.default_rng(3).normal(size=(60, 3))
    groups = np.arange(60) % 3
    cases = [(ShortStart, None, {}), (NoDualSet, None, {}),
             (PerGroup, None, {}),  # groups read, none given
             (PerGroup, {"ratios": (0.5, 0.5)}, {"sensitive_features": groups})]
    for objective, params, fit_kw in cases:
        acc = BudgetAccountant()
        with pytest.raises(ValueError, match="stand-in batch"):
            DPSaddleEstimator(objective, objective_params=params, epsilon=1.0,
                              data_norm=3.0, accountant=acc).fit(X, **fit_kw)
        assert acc.spent_budget == [], objective.__name__
    check_shapes_on_stand_in(CoupledMean(3, 3.0), 3)  # a correct objective passes
    complex_rows = type("C", (CoupledMean,), {
        "per_example_grads": lambda self, w, v, d: (np.full((d.n_samples, 3), 1j),
                                                    np.zeros((d.n_samples, 1)))})
    acc = BudgetAccountant()
    with pytest.raises(ValueError, match="real numbers"):
        DPSaddleEstimator(complex_rows, epsilon=1.0, data_norm=3.0, random_state=0,
                          accountant=acc).fit(X)
    assert acc.spent_budget == []


def test_clipped_rows_are_exact_whatever_the_objective_dtype():
    from skdpminimax.objectives.base import SaddleData
    X = np.random.default_rng(1).normal(size=(40, 3)) * 30
    objective = _HalfPrecision(3, 100.0)
    data = SaddleData(X)
    w, v = np.full(3, 5.0), np.array([2.0])
    for row in range(40):
        one = SaddleData(X[row:row + 1])
        sw, _ = objective.clipped_grad_sums(w, v, one, 1.0, 1.0)
        assert np.linalg.norm(sw) <= 1.0 + 1e-12  # float16 norms overshot by 0.07%
    complex_rows = type("C", (CoupledMean,), {
        "per_example_grads": lambda self, w, v, d: (np.full((d.n_samples, 3), 1e6j),
                                                    np.zeros((d.n_samples, 1)))})(3, 1.0)
    with pytest.raises(ValueError, match="real numbers"):
        complex_rows.clipped_grad_sums(w, v, data, 1.0, 1.0)


def test_objective_hooks_fail_before_the_spend_or_are_made_to_work():
    """A reviewer's findings: a zero typical_dual_clips was refused only in solve, after
    the spend; an integer init_params failed at the first step, after the spend."""
    X = np.random.default_rng(2).normal(size=(80, 3))

    class ZeroDualClip(CoupledMean):
        def typical_dual_clips(self, noise_scale):
            return np.zeros(1)

    class IntegerStart(CoupledMean):
        def init_params(self, rng=None):
            return np.zeros(self.a.size, dtype=int), np.zeros(1, dtype=int)

    class RMSAboveOne(CoupledMean):
        def typical_grad_rms_fraction(self):
            return 2.0

    acc = BudgetAccountant()
    with pytest.raises(ValueError, match="clips must be positive"):
        DPSaddleEstimator(ZeroDualClip, epsilon=1.0, data_norm=3.0, accountant=acc,
                          solver=NoisySGDA(batch_size=16, clip_v="auto")).fit(X)
    assert acc.spent_budget == []
    with pytest.raises(ValueError, match=r"typical_grad_rms_fraction\(\) must be in \(0, 1\]"):
        DPSaddleEstimator(RMSAboveOne, epsilon=1.0, data_norm=3.0, accountant=acc,
                          solver=NoisySGDA(batch_size=16, step_size="scaled")).fit(X)
    assert acc.spent_budget == []
    est = DPSaddleEstimator(IntegerStart, epsilon=1.0, data_norm=3.0, random_state=0,
                            accountant=acc, solver=NoisySGDA(batch_size=16)).fit(X)
    assert np.all(np.isfinite(est.coef_))


def test_an_objective_that_breaks_on_one_row_is_refused_before_the_spend():
    """A probe's finding: np.squeeze in per_example_grads passed the two-row stand-in and
    failed on one-row Poisson batches after the charge, in 28-64% of fits on 12-24 rows
    (a rate that depends on the private size). One-row stand-ins are checked too, and
    an empty batch never reaches the objective."""

    class Squeezing(CoupledMean):
        def per_example_grads(self, w, v, data):
            gw, gv = super().per_example_grads(w, v, data)
            return np.squeeze(gw), gv

    class FailsOnOneRow(CoupledMean):
        def per_example_grads(self, w, v, data):
            if data.n_samples == 1:
                raise IndexError("one row")
            return super().per_example_grads(w, v, data)

    class FailsOnEmpty(CoupledMean):
        def per_example_grads(self, w, v, data):
            if data.n_samples == 0:
                raise IndexError("no row")
            return super().per_example_grads(w, v, data)

    X = np.random.default_rng(4).normal(size=(12, 3))
    for objective, match in [(Squeezing, "one row per example"), (FailsOnOneRow, "one row")]:
        acc = BudgetAccountant()
        with pytest.raises(ValueError, match=match):
            DPSaddleEstimator(objective, epsilon=1.0, data_norm=3.0, accountant=acc,
                              solver=NoisySGDA(batch_size=2, n_iter=30)).fit(X)
        assert acc.spent_budget == []
    # Batches of expected size 1 on 12 rows: about a third are empty.
    DPSaddleEstimator(FailsOnEmpty, epsilon=1.0, data_norm=3.0, random_state=0,
                      accountant=BudgetAccountant(),
                      solver=NoisySGDA(batch_size=1, n_iter=30)).fit(X)


def test_stand_in_checks_the_per_step_methods_too():
    """A review's finding: an overridden clipped_grad_sums or reg_grad of the wrong
    shape was only met by the solver, after the charge (or broadcast silently)."""

    class BadSums(CoupledMean):
        exact_clipped_sums = True  # vouched for, so the engine runs it

        def clipped_grad_sums(self, w, v, data, clip_w, clip_v):
            sw, sv = super().clipped_grad_sums(w, v, data, clip_w, clip_v)
            return sw[None, :], sv

    class BadReg(CoupledMean):
        def reg_grad(self, w, v):
            return 0.0, -self.lam * v

    X = np.random.default_rng(5).normal(size=(40, 3))
    for objective, what in [(BadSums, "clipped_grad_sums"), (BadReg, "reg_grad")]:
        acc = BudgetAccountant()
        with pytest.raises(ValueError, match=what):
            DPSaddleEstimator(objective, epsilon=1.0, data_norm=3.0, accountant=acc).fit(X)
        assert acc.spent_budget == []


class UnclippedSums(CoupledMean):
    """A "fast path" that forgets the clip and does not declare exact_clipped_sums."""

    def clipped_grad_sums(self, w, v, data, clip_w, clip_v):
        gw, gv = self.per_example_grads(w, v, data)
        return 100.0 * gw.sum(axis=0), 100.0 * gv.sum(axis=0)


class NaNOnLargeRows(CoupledMean):
    """A vouched override whose arithmetic gives NaN on rows with a large first
    feature, away from the start point only (the checks before the spend pass)."""

    exact_clipped_sums = True

    def clipped_grad_sums(self, w, v, data, clip_w, clip_v):
        sw, sv = super().clipped_grad_sums(w, v, data, clip_w, clip_v)
        if np.any(w != 0) and np.any(data.X[:, 0] > 5.0):
            return np.full_like(sw, np.nan), sv
        return sw, sv


def _private_fit(objective, X, **params):
    acc = BudgetAccountant()
    est = DPSaddleEstimator(objective, epsilon=1.0, delta=1e-5, data_norm=10.0,
                            accountant=acc, random_state=3,
                            solver=NoisySGDA(batch_size=20, n_iter=30), **params)
    return est.fit(X), acc


def test_an_override_that_does_not_vouch_for_its_clip_is_not_run():
    """A privacy review: the engine ran any override of clipped_grad_sums, so one that
    forgot the clip set the sensitivity. Unvouched, the engine clips itself: the fit
    is the one without the override, with a warning."""
    X = np.random.default_rng(6).normal(size=(100, 3))
    with pytest.warns(UserWarning, match="exact_clipped_sums"):
        fitted, _ = _private_fit(UnclippedSums, X)
    reference, _ = _private_fit(CoupledMean, X)
    np.testing.assert_array_equal(fitted.coef_, reference.coef_)
    np.testing.assert_array_equal(fitted.dual_coef_, reference.dual_coef_)


class NaNOnPositiveRows(CoupledMean):
    """Gradients NaN (not an exception) on the rows with a positive first feature."""

    def per_example_grads(self, w, v, data):
        gw, gv = super().per_example_grads(w, v, data)
        return np.where(data.X[:, :1] > 0, np.nan, gw), gv


def test_non_finite_gradients_on_the_rows_are_refused_before_the_spend():
    """A review: the check on the rows caught exceptions only, so an objective whose
    gradients were NaN on a third of the rows was fitted on the others silently."""
    X = np.random.default_rng(8).normal(size=(100, 3))
    ledger = BudgetAccountant()
    with pytest.raises(ValueError, match="not finite"):
        DPSaddleEstimator(NaNOnPositiveRows, epsilon=1.0, data_norm=10.0,
                          accountant=ledger).fit(X)
    assert ledger.spent_budget == []
    DPSaddleEstimator(NaNOnPositiveRows, epsilon=1.0, data_norm=10.0,
                      accountant=ledger).fit(-np.abs(X))  # no such row: fits
    assert len(ledger.spent_budget) == 1


class ExpLoss(SaddleObjective):
    """Exponential loss: honest, finite at the start, overflowing in numpy on an extreme
    row once the iterate moves."""

    def __init__(self, n_features, data_norm):
        self.d = n_features
        self.primal_set, self.dual_set = L2Ball(5.0), Box(0.0, 0.0)

    def init_params(self, rng=None):
        return np.zeros(self.d), np.zeros(1)

    def per_example_values(self, w, v, data):
        return np.exp(-data.y * (data.X @ w))

    def per_example_grads(self, w, v, data):
        e = np.exp(-data.y * (data.X @ w))
        return -(data.y * e)[:, None] * data.X, np.zeros((data.n_samples, 1))

    def lipschitz(self):
        return np.inf, 1.0


def test_a_users_objective_says_nothing_after_the_spend():
    """A side-channel review: numpy's overflow warnings from a user's objective on one
    extreme row appeared after the spend only when that row was there (the oracle
    counts the row as zero, yet the warning told). A user's objective now runs
    silenced inside the solver; a neighbour with the row fits without a word."""
    import warnings

    rng = np.random.default_rng(0)
    X = rng.normal(size=(300, 2))
    y = np.where(X[:, 0] > 0, 1.0, -1.0)
    X, y = np.vstack([X, [[-1000.0, 0.0]]]), np.append(y, 1.0)
    est = DPSaddleEstimator(ExpLoss, epsilon=1.0, delta=1e-6, data_norm=1000.0,
                            solver=NoisySGDA(clip_w=1.0, step_size=1.0, n_iter=200),
                            n_samples_budget=300, accountant=BudgetAccountant())
    with warnings.catch_warnings(record=True) as heard:  # (as errors, the oracle
        warnings.simplefilter("always")                 # would catch them)
        est.fit(X, y)
    assert np.all(np.isfinite(est.coef_))
    assert not [w for w in heard if issubclass(w.category, RuntimeWarning)]


def test_which_clipped_sums_the_engine_runs():
    from skdpminimax.objectives import engine_clipped_sums
    from skdpminimax.objectives.base import RegularizedObjective

    class Vouched(UnclippedSums):
        exact_clipped_sums = True

    class RegularizedUnclipped(RegularizedObjective):
        def clipped_grad_sums(self, w, v, data, clip_w, clip_v):
            return UnclippedSums.clipped_grad_sums(self, w, v, data, clip_w, clip_v)

    plain, unclipped = CoupledMean(2, 1.0), UnclippedSums(2, 1.0)
    assert engine_clipped_sums(plain) == plain.clipped_grad_sums
    assert engine_clipped_sums(plain.regularized(0.1)).__self__.base is plain
    vouched = Vouched(2, 1.0).regularized(0.1)  # forwarded to a vouched override
    assert engine_clipped_sums(vouched) == vouched.clipped_grad_sums
    for objective in (unclipped, unclipped.regularized(0.1),
                      RegularizedUnclipped(plain, 0.1, 0.1)):  # an override of the wrapper
        with pytest.warns(UserWarning, match="exact_clipped_sums"):
            sums = engine_clipped_sums(objective)
        assert sums.func is SaddleObjective.clipped_grad_sums and sums.args == (objective,)


def test_a_non_finite_batch_sum_falls_back_to_its_rows_after_the_spend():
    """A review's distinguisher: a NaN from one row made the fit raise after its spend
    on a neighbour holding that row, and fit on the data without it. Each row is now
    summed on its own and a row that is not finite adds zero: both fit."""
    X = np.random.default_rng(7).normal(size=(100, 3))
    neighbour = X.copy()
    neighbour[-1, 0] = 9.0  # replace one row by one the override fails on
    for data in (X, neighbour):
        est, acc = _private_fit(NaNOnLargeRows, data)
        assert np.all(np.isfinite(est.coef_)) and acc.spent_budget == [(1.0, 1e-5)]


# ---- task="classification" / "regression": what scikit-learn takes it for ------------------

class SoftmaxRegression(SaddleObjective):
    """Multinomial logistic regression with an inert dual (f = cross-entropy, r = -v^2/2):
    a user's classification objective, on class codes 0..K-1."""

    def __init__(self, n_features, data_norm, n_classes, radius=10.0):
        self.k, self.d = n_classes, n_features
        self.kappa = math.sqrt(data_norm**2 + 1.0)
        self.primal_set = L2Ball(radius)
        self.dual_set = Box(-1.0, 1.0)

    def check_data(self, y, groups):
        if not np.all(np.isin(y, np.arange(self.k))):
            raise ValueError("SoftmaxRegression needs class codes 0..K-1.")

    def init_params(self, rng=None):
        return np.zeros(self.k * (self.d + 1)), np.zeros(1)

    def _scores(self, w, X):
        W = w.reshape(self.k, self.d + 1)
        return X @ W[:, :-1].T + W[:, -1]

    def per_example_values(self, w, v, data):
        Z = self._scores(w, data.X)
        Z = Z - Z.max(axis=1, keepdims=True)
        logp = Z - np.log(np.exp(Z).sum(axis=1, keepdims=True))
        return -logp[np.arange(data.n_samples), data.y.astype(int)]

    def per_example_grads(self, w, v, data):
        Z = self._scores(w, data.X)
        P = np.exp(Z - Z.max(axis=1, keepdims=True))
        P /= P.sum(axis=1, keepdims=True)
        P[np.arange(data.n_samples), data.y.astype(int)] -= 1.0
        Xt = np.column_stack([data.X, np.ones(data.n_samples)])
        gw = (P[:, :, None] * Xt[:, None, :]).reshape(data.n_samples, -1)
        return gw, np.zeros((data.n_samples, 1))

    def reg_value(self, w, v):
        return -0.5 * float(v @ v)

    def reg_grad(self, w, v):
        return np.zeros_like(w), -v

    def lipschitz(self):
        return math.sqrt(2.0) * self.kappa, 1.0

    def decision_function(self, w, X):
        Z = self._scores(w, X)
        return Z[:, 1] - Z[:, 0] if self.k == 2 else Z

    def predict(self, w, X):
        return np.argmax(self._scores(w, X), axis=1)


def _classifier(**kwargs):
    return DPSaddleEstimator(SoftmaxRegression, epsilon=np.inf, data_norm=10.0,
                             task="classification", random_state=0, **kwargs)


def test_a_classification_task_is_a_classifier_with_its_labels_and_scorers():
    """A user-style probe: a classification objective could not be scored with
    scoring="roc_auc" (scikit-learn took the estimator for a regressor: NaN scores in
    cross_val_score, and GridSearchCV chose among NaNs). With task="classification" it is
    a classifier: classes_, labels of any type, accuracy as score, string scorers."""
    from sklearn.base import is_classifier, is_regressor
    from sklearn.datasets import make_classification
    from sklearn.model_selection import cross_val_score

    X, y = make_classification(n_samples=300, n_features=4, random_state=0)
    labels = np.array(["neg", "pos"])[y]
    est = _classifier(accountant=BudgetAccountant()).fit(X, labels)
    assert is_classifier(est) and not is_classifier(_classifier().set_params(task=None))
    assert list(est.classes_) == ["neg", "pos"]
    assert est.objective_.k == 2  # the factory was told the number of classes
    assert set(est.predict(X)) <= {"neg", "pos"}
    assert est.score(X, labels) == np.mean(est.predict(X) == labels) > 0.8
    aucs = cross_val_score(_classifier(accountant=BudgetAccountant()), X, labels,
                           scoring="roc_auc", cv=3)
    assert np.all(aucs > 0.85)
    # one class only: refused before the spend
    acc = BudgetAccountant()
    with pytest.raises(ValueError, match="at least 2 classes"):
        _classifier(accountant=acc).set_params(epsilon=1.0).fit(X, np.zeros(300))
    assert acc.spent_budget == []
    # predict must return codes: a review's objective returned +-1 (-1 wrapped to the
    # last class) and probabilities (truncated to class 0), silently
    class SignPredict(SoftmaxRegression):
        def predict(self, w, X):
            return np.where(self.decision_function(w, X) > 0, 1.0, -1.0)

    est = DPSaddleEstimator(SignPredict, epsilon=np.inf, data_norm=10.0, task="classification",
                            random_state=0, accountant=BudgetAccountant()).fit(X, labels)
    with pytest.raises(ValueError, match="class codes 0..1"):
        est.predict(X)
    reg = DPSaddleEstimator(CoupledMean, epsilon=1.0, data_norm=5.0, task="regression")
    assert is_regressor(reg) and not hasattr(DPSaddleEstimator(CoupledMean), "score")


@pytest.mark.parametrize("task", ["classification", "regression", None])
def test_a_task_requires_y_in_the_tags_and_in_the_error(task):
    # A classifier or regressor needs y, as scikit-learn's do: the tags said y was
    # optional for every task (get_tags(...).target_tags.required False), so checks and
    # meta-estimators took a classifier for one that fits without targets.
    from sklearn.utils.estimator_checks import check_requires_y_none

    est = DPSaddleEstimator(SoftmaxRegression if task == "classification" else CoupledMean,
                            epsilon=np.inf, data_norm=10.0, task=task, random_state=0)
    try:
        from sklearn.utils import get_tags
    except ImportError:  # scikit-learn < 1.6: the old tags
        assert est._get_tags()["requires_y"] is (task is not None)
    else:
        assert get_tags(est).target_tags.required is (task is not None)
    if task is not None:
        acc = BudgetAccountant()
        with pytest.raises(ValueError, match="requires y to be passed, but the target y is None"):
            est.set_params(epsilon=1.0, accountant=acc).fit(np.zeros((10, 2)))
        assert acc.spent_budget == []
        check_requires_y_none(type(est).__name__, est.set_params(accountant=BudgetAccountant()))

@parametrize_with_checks_list([_classifier()], _expected_failures)
def test_sklearn_compatible_as_a_classifier(estimator, check):
    check(estimator)


def _regressor():
    from estimators_under_test import LabelledMean
    return DPSaddleEstimator(LabelledMean, epsilon=1.0, data_norm=5.0, task="regression",
                             random_state=0)


@parametrize_with_checks_list([_regressor()], _expected_failures)
def test_sklearn_compatible_as_a_regressor(estimator, check):
    """A review: as a regressor it failed check_regressors_no_decision_function (the
    objective's decision_function was exposed) and check_regressors_train (no
    poor_score tag, which the built-in estimators set)."""
    check(estimator)


def test_a_user_objective_writing_into_its_rows_leaves_the_callers_X_alone():
    """A review: clip_rows stopped copying X where no row is clipped, and a user
    objective whose prepare normalised rows in place rewrote the caller's X. User
    objectives get a copy; the built-in ones a read-only view (they only read it)."""
    from skdpminimax.privacy.mechanisms import clip_rows

    class InPlace(CoupledMean):
        def prepare(self, data):
            data.X /= 2.0  # in place
            return data

    X = np.random.default_rng(0).normal(size=(50, 3)) / 3
    before = X.copy()
    DPSaddleEstimator(InPlace, epsilon=1.0, data_norm=5.0, solver=_gda(5), random_state=0,
                      accountant=BudgetAccountant(), n_samples_budget="public").fit(X)
    np.testing.assert_array_equal(X, before)
    view = clip_rows(X, 5.0)
    assert np.shares_memory(view, X) and not view.flags.writeable
    assert not np.shares_memory(clip_rows(X, 5.0, copy=True), X)


def test_a_user_objective_writing_into_its_targets_leaves_the_callers_y_alone():
    """A review: y reached the objective as the caller's own array, so a prepare that
    halved data.y in place quartered the caller's y (it ran in the check on the rows,
    then in the run) and the model trained on targets transformed twice."""
    from estimators_under_test import LabelledMean

    class HalvesInPlace(LabelledMean):
        def prepare(self, data):
            data.y *= 0.5
            return data

    class HalvesACopy(LabelledMean):
        def prepare(self, data):
            data.y = 0.5 * data.y
            return data

    rng = np.random.default_rng(0)
    X = rng.normal(size=(80, 3)) / 3
    y = rng.uniform(-1.0, 1.0, size=80)
    before = y.copy()
    fits = [DPSaddleEstimator(factory, epsilon=1.0, data_norm=2.0, task="regression",
                              solver=_gda(5), random_state=0, n_samples_budget="public",
                              accountant=BudgetAccountant()).fit(X, y)
            for factory in (HalvesInPlace, HalvesACopy)]
    np.testing.assert_array_equal(y, before)
    np.testing.assert_array_equal(fits[0].coef_, fits[1].coef_)  # prepared once


def test_a_classification_task_offers_its_objectives_methods_before_fit():
    """A probe: CalibratedClassifierCV refused the estimator (it looks for
    decision_function on the unfitted estimator, which was gated on objective_), and
    "roc_auc_ovr" scored NaN (predict_proba was never forwarded, each fold's budget spent
    for nothing)."""
    from sklearn.calibration import CalibratedClassifierCV
    from sklearn.datasets import make_classification
    from sklearn.exceptions import NotFittedError
    from sklearn.model_selection import cross_val_score

    class WithProba(SoftmaxRegression):
        def predict_proba(self, w, X):
            Z = self._scores(w, X)
            P = np.exp(Z - Z.max(axis=1, keepdims=True))
            return P / P.sum(axis=1, keepdims=True)

    X, y = make_classification(n_samples=300, n_features=5, n_informative=3, n_classes=3,
                               random_state=0)
    est = DPSaddleEstimator(WithProba, epsilon=np.inf, data_norm=10.0, task="classification",
                            random_state=0, accountant=BudgetAccountant())
    assert hasattr(est, "decision_function") and hasattr(est, "predict_proba")
    with pytest.raises(NotFittedError):
        est.predict_proba(X)
    aucs = cross_val_score(est, X, y, scoring="roc_auc_ovr", cv=3, error_score="raise")
    assert np.all(aucs > 0.7)
    proba = est.fit(X, y).predict_proba(X)
    assert proba.shape == (300, 3) and np.allclose(proba.sum(axis=1), 1.0)
    binary = (y > 0).astype(int)
    calibrated = CalibratedClassifierCV(_classifier(accountant=BudgetAccountant()), cv=3)
    assert calibrated.fit(X, binary).predict_proba(X).shape == (300, 2)
    # a factory that is a function: its methods are known only once fitted
    unknown = DPSaddleEstimator(lambda **kw: WithProba(**kw), task="classification")
    assert not hasattr(unknown, "predict_proba")


def test_a_zero_gradient_bound_is_explained_before_the_spend():
    """A user probe: an objective whose dual data term has no gradient declared
    lipschitz() = (G, 0) and got 'clip_v must be > 0' without having set clip_v."""

    class NoDualGradient(CoupledMean):
        def lipschitz(self):
            return super().lipschitz()[0], 0.0

    X = np.random.default_rng(3).normal(size=(60, 3))
    acc = BudgetAccountant()
    with pytest.raises(ValueError, match=r"lipschitz\(\) bounds this block's per-example "
                                         r"gradients by 0, so clip_v"):
        DPSaddleEstimator(NoDualGradient, epsilon=1.0, data_norm=3.0, accountant=acc,
                          solver=NoisySGDA(batch_size=16)).fit(X)
    assert acc.spent_budget == []


class RefusesLargeFirstFeature(CoupledMean):
    """A user objective that raises on rows the stand-in batches (zero features) never
    show: a first feature above 2.5."""

    def per_example_grads(self, w, v, data):
        if np.any(data.X[:, 0] > 2.5):
            raise ValueError("feature 0 out of the range this objective accepts")
        return super().per_example_grads(w, v, data)


def test_an_objective_that_fails_on_a_training_row_is_refused_before_the_spend():
    """A privacy review: whether the fit raised, after the spend, told D from D plus a
    canary row the objective refuses. It is now refused before anything is spent."""
    X = np.clip(np.random.default_rng(3).normal(size=(200, 2)), -2.0, 2.0)
    canary = np.array([[2.9, 0.0]])
    ledger = BudgetAccountant()
    est = DPSaddleEstimator(RefusesLargeFirstFeature, epsilon=1.0, data_norm=3.0,
                            accountant=ledger, random_state=0)
    with pytest.raises(ValueError, match="fails on the training rows at its start point"):
        est.fit(np.vstack([X, canary]))
    assert ledger.spent_budget == [] and not hasattr(est, "coef_")
    est.fit(X)  # the same objective on rows it accepts
    assert ledger.spent_budget == [(1.0, 1e-5)]


def test_a_row_the_objective_raises_on_during_the_fit_counts_as_zero():
    """The oracle's fallback (a row can fail at a point reached later in the fit): the
    batch is evaluated again row by row and the failing row adds nothing, the others
    their clipped gradients; nothing raises after the spend."""
    from skdpminimax.objectives.base import SaddleData
    from skdpminimax.privacy.samplers import make_sampler
    from skdpminimax.solvers.oracle import NoisyGradientOracle

    X = np.clip(np.random.default_rng(3).normal(size=(50, 2)), -2.0, 2.0)
    objective = RefusesLargeFirstFeature(2, 3.0)
    w, v = np.array([0.3, -0.2]), np.array([0.1])

    def grads(rows):
        oracle = NoisyGradientOracle(objective, SaddleData(rows), make_sampler("full", 51),
                                     (0.0, 0.0), 1.0, 1.0, np.random.default_rng(0))
        return oracle.noisy_grads(w, v, None, None)

    with_canary = grads(np.vstack([X, [[2.9, 0.0]]]))
    alone = grads(X)  # the same sums over the same normaliser (51)
    for block_with, block_alone in zip(with_canary, alone):
        np.testing.assert_allclose(block_with, block_alone)
