"""The number of examples under add/remove-one neighbours.

Poisson-sampled solvers plan their sampling rate and number of steps on a size. Under
add/remove-one the true size distinguishes neighbours, so the estimators plan on a
private count of it (``n_samples_budget`` of epsilon), on a public size the user
declares (``n_samples_budget=N``), or on ``len(X)`` declared public
(``n_samples_budget="public"``, which warns: the plan then reveals the size);
replace-one solvers use the rows' count, which neighbours share.
"""

import dataclasses
import math
import warnings

import numpy as np
import pytest
from diffprivlib.accountant import BudgetAccountant
from diffprivlib.utils import PrivacyLeakWarning
from sklearn.datasets import make_classification

import skdpminimax.privacy
from skdpminimax import DPAUCMaximizer, DPRobustClassifier, DPStandardScaler
from skdpminimax.objectives.base import SaddleData
from skdpminimax.privacy.mechanisms import private_size
from skdpminimax.privacy.samplers import PoissonSampler, make_sampler
from skdpminimax.solvers import NoisySGDA


def _data(n, seed=0):
    rng = np.random.default_rng(seed)
    X = rng.normal(size=(n, 4))
    return X, (X[:, 0] + 0.5 * rng.normal(size=n) > 0).astype(int)


def _auc(**kw):
    params = dict(epsilon=1.0, delta=1e-5, data_norm=3.0, pos_ratio=0.5, random_state=0,
                  solver=NoisySGDA(batch_size=16, n_epochs=2))
    return DPAUCMaximizer(**{**params, **kw})


def test_private_size_is_a_two_sided_geometric_release():
    """Sensitivity 1 at epsilon: mean absolute noise 2a / (1 - a^2) with a = exp(-eps)."""
    rng = np.random.default_rng(0)
    eps = 0.2
    noise = np.array([private_size(10_000, eps, rng) for _ in range(4000)]) - 10_000
    a = math.exp(-eps)
    assert np.mean(np.abs(noise)) == pytest.approx(2 * a / (1 - a * a), rel=0.06)
    assert abs(np.mean(noise)) < 0.5  # centred
    assert private_size(3, 1e-3, np.random.default_rng(1)) >= 1  # never below one row
    assert private_size(7, math.inf, rng) == 7


def test_poisson_fit_plans_on_the_released_size():
    X, y = _data(400)
    acc = BudgetAccountant()
    m = _auc(accountant=acc).fit(X, y)
    cal = m.calibration_
    assert cal.neighboring_relation == "add/remove-one"
    assert m.planning_size_ != 400  # a noisy count (the draw for this seed)
    assert cal.sample_rate == pytest.approx(16 / m.planning_size_)
    assert m.n_iter_ == cal.n_steps == math.ceil(2 * m.planning_size_ / 16)
    # one charge of the whole budget; the solver got the rest after the size's slice
    assert acc.spent_budget == [(1.0, 1e-5)]
    assert cal.epsilon <= 1.0 * (1 - 0.01) + 1e-9


def test_neighbours_differ_only_through_the_size_noise():
    """Same seed, data sets one row apart: the released sizes differ by exactly one,
    so every planned quantity is a function of the noisy count, not of n itself."""
    X, y = _data(401)
    big = _auc().fit(X, y)
    small = _auc().fit(X[:-1], y[:-1])
    assert big.planning_size_ - small.planning_size_ == 1


def test_declared_public_size_spends_nothing_on_it():
    X, y = _data(400)
    m = _auc(n_samples_budget="public").fit(X, y)
    assert m.planning_size_ == 400
    assert m.calibration_.sample_rate == pytest.approx(16 / 400)
    assert m.n_iter_ == math.ceil(2 * 400 / 16)
    private = _auc().fit(X, y)
    # the public declaration leaves the solver the whole budget: a smaller multiplier
    # (at the planned size the private fit happened to draw, the step counts differ too)
    assert m.calibration_.epsilon > private.calibration_.epsilon


def test_a_declared_size_gives_neighbours_the_same_plan():
    """An int n_samples_budget is planned on whichever neighbour is fitted: the released
    plan cannot tell them apart (with 'public', planning_size_ did: a reviewer's audit
    of a canary row reported a violation)."""
    X, y = _data(401)
    acc = BudgetAccountant()
    fits = [_auc(n_samples_budget=400, accountant=acc).fit(X[:n], y[:n]) for n in (400, 401)]
    assert [m.planning_size_ for m in fits] == [400, 400]
    assert fits[0].n_iter_ == fits[1].n_iter_ == math.ceil(2 * 400 / 16)
    assert fits[0].calibration_ == fits[1].calibration_
    assert fits[0].calibration_.sample_rate == pytest.approx(16 / 400)
    assert acc.spent_budget == [(1.0, 1e-5)] * 2  # nothing spent on the size
    public = [_auc(n_samples_budget="public").fit(X[:n], y[:n]) for n in (400, 401)]
    assert [m.planning_size_ for m in public] == [400, 401]


def test_public_len_warns_only_where_the_size_is_private():
    X, y = _data(400)
    with pytest.warns(PrivacyLeakWarning, match="planning_size_"):
        _auc(n_samples_budget="public").fit(X, y)
    with warnings.catch_warnings():
        warnings.simplefilter("error", PrivacyLeakWarning)
        _auc(n_samples_budget=400).fit(X, y)
        _auc(n_samples_budget="public", epsilon=np.inf).fit(X, y)
        # its own ledger: a replace-one fit on the ledger of the add/remove-one fits
        # above would warn that the ledger mixes relations (not this test's warning)
        _auc(n_samples_budget="public", accountant=BudgetAccountant(),
             solver=NoisySGDA(batch_size=16, n_epochs=2, sampler="without_replacement",
                              accounting="rdp")).fit(X, y)


@pytest.mark.parametrize("bad", [0, -3, 1.0, 1.5, True, "len"])
def test_a_bad_size_declaration_is_refused_before_spending(bad):
    X, y = _data(100)
    acc = BudgetAccountant()
    with pytest.raises(ValueError, match="n_samples_budget"):
        _auc(n_samples_budget=bad, accountant=acc).fit(X, y)
    assert acc.spent_budget == []


@pytest.mark.parametrize("solver", [NoisySGDA(batch_size=None, n_iter=20),
                                    NoisySGDA(batch_size=16, n_epochs=2,
                                              sampler="without_replacement",
                                              accounting="rdp")])
def test_replace_one_solvers_use_the_rows_and_spend_nothing_on_them(solver):
    X, y = _data(400)
    m = _auc(solver=solver).fit(X, y)
    assert m.calibration_.neighboring_relation == "replace-one"
    assert m.planning_size_ == 400
    assert m.calibration_.epsilon == pytest.approx(1.0, rel=1e-3)  # no slice taken


def test_group_counts_are_bounded_by_the_released_size():
    X, y = _data(400)
    groups = np.where(np.arange(400) % 4 == 0, "a", "b")
    m = DPRobustClassifier(epsilon=1.0, data_norm=3.0, random_state=0,
                           solver=NoisySGDA(batch_size=16, n_epochs=2)).fit(
        X, y, sensitive_features=groups)
    assert m.calibration_.neighboring_relation == "add/remove-one"
    assert m.planning_size_ != 400
    assert m.group_ratios_.sum() == pytest.approx(1.0)


def test_poisson_sampler_over_rows_keeps_the_planned_rate_and_steps():
    planned = make_sampler("poisson", 1000, 50)
    drawn = planned.over_rows(600)
    assert isinstance(drawn, PoissonSampler)
    assert drawn.sample_rate == planned.sample_rate == 0.05
    assert drawn.key() == planned.key()
    idx = np.concatenate(list(drawn.batches(np.random.default_rng(0), 400)))
    assert idx.max() < 600  # rows that exist
    assert len(idx) / 400 == pytest.approx(0.05 * 600, rel=0.05)  # q * rows per step
    with pytest.raises(ValueError, match="planned on"):
        make_sampler("without_replacement", 1000, 50).over_rows(600)


def test_saddle_data_planning_size():
    X = np.zeros((5, 2))
    assert SaddleData(X).planning_size == 5
    assert SaddleData(X, public_size=9).planning_size == 9


@pytest.mark.parametrize("cls", ["DPAUCMaximizer", "DPRobustClassifier",
                                 "DPGroupFairRegressor", "DPSaddleEstimator"])
def test_shared_parameters_are_documented(cls):
    import skdpminimax

    doc = getattr(skdpminimax, cls).__doc__
    assert "{shared_parameters}" not in doc
    for name in ("n_samples_budget :", "random_state :"):
        assert doc.count(name) == 1


class _RefusesOneSize(NoisySGDA):
    """A Poisson solver whose calibration fails at exactly one size (as a PLD search can
    at an extreme epsilon): a dry run on the true size would turn that into an
    n-dependent, noise-free output (refused before the spend, or charged)."""

    def calibrate(self, objective, n_samples, budget):
        if n_samples == 401:
            raise ValueError("cannot calibrate at this size")
        return super().calibrate(objective, n_samples, budget)


def test_dry_run_does_not_depend_on_the_private_size():
    X, y = _data(401)
    acc = BudgetAccountant()
    m = _auc(accountant=acc, solver=_RefusesOneSize(batch_size=16, n_epochs=2)).fit(X, y)
    assert acc.spent_budget == [(1.0, 1e-5)] and m.planning_size_ != 401
    # declared public, the true size decides, before anything is spent
    acc = BudgetAccountant()
    with pytest.raises(ValueError, match="cannot calibrate"):
        _auc(accountant=acc, n_samples_budget="public",
             solver=_RefusesOneSize(batch_size=16, n_epochs=2)).fit(X, y)
    assert acc.spent_budget == []


class _PlansOnTheRows(NoisySGDA):
    """A custom solver that ignores data.planning_size (reads the true number of rows)."""

    def solve(self, objective, data, budget, rng, *, init=None):
        rows_only = SaddleData(data.X, data.y, data.groups, data.aux)
        return super().solve(objective, rows_only, budget, rng, init=init)


def test_a_run_not_planned_on_the_released_size_is_refused():
    X, y = _data(400)
    acc = BudgetAccountant()
    model = _auc(accountant=acc, solver=_PlansOnTheRows(batch_size=16, n_epochs=2))
    with pytest.raises(RuntimeError, match="planning_size"):
        model.fit(X, y)
    assert len(acc.spent_budget) == 1 and not hasattr(model, "coef_")
    # declared public, planning on the rows is what is asked
    _auc(n_samples_budget="public", solver=_PlansOnTheRows(batch_size=16, n_epochs=2)).fit(X, y)


class _NoiseFromTheRows(NoisySGDA):
    """Steps planned on the released size, noise multiplier calibrated on the rows."""

    def solve(self, objective, data, budget, rng, *, init=None):
        result = super().solve(objective, data, budget, rng, init=init)
        on_rows = self.calibrate(objective, data.n_samples, budget)
        calibration = dataclasses.replace(
            result.calibration, noise_multiplier=on_rows.noise_multiplier,
            block_noise_multipliers=on_rows.block_noise_multipliers)
        return dataclasses.replace(result, calibration=calibration)


def test_noise_not_calibrated_on_the_released_size_is_refused():
    # Same steps and rate as planned, only the multipliers follow the true size: the
    # check compares every field of the calibration, not just the run's length. The
    # edited record is not one the library issued, and its multiplier (planned on 400
    # rows, not the released size) is recertified first: above the budget here.
    X, y = _data(400)
    model = _auc(solver=_NoiseFromTheRows(batch_size=16, n_iter=50))
    with pytest.raises(RuntimeError, match="planning_size|over 50 steps certifies"):
        model.fit(X, y)
    assert not hasattr(model, "coef_")


@pytest.mark.parametrize("solver", ["sgda", NoisySGDA(clip_w="scaled", step_size="scaled",
                                                      n_epochs="auto")])
def test_solver_info_records_the_settings_and_is_the_same_for_neighbours(solver):
    # The resolved clip and steps are audit records (solver_info_); planned from public
    # quantities, they are equal on neighbouring data sets of the same declared size.
    X, y = _data(400)
    X_big = np.vstack([X, 10.0 * np.ones((1, X.shape[1]))])
    y_big = np.append(y, 1)
    infos = [_auc(n_samples_budget="public", solver=solver).fit(Xs, ys).solver_info_
             for Xs, ys in ((X, y), (X_big[1:], y_big[1:]))]
    assert set(infos[0]) >= {"clip_w", "clip_v", "step_size", "dual_step_size"}
    assert all(np.isfinite(infos[0][key]) and infos[0][key] > 0
               for key in ("clip_w", "clip_v", "step_size", "dual_step_size"))
    assert infos[0] == infos[1]


def test_default_share_of_the_size_release_is_five_percent(monkeypatch):
    # The count gets 5% of the solver's epsilon by default (1% planned small data sets
    # on sizes far off; docs/benchmarks.md, "The private size's share").
    import skdpminimax.base as base

    seen = []

    def spy(n_samples, epsilon, rng):
        seen.append(epsilon)
        return private_size(n_samples, epsilon, rng)

    monkeypatch.setattr(base, "private_size", spy)
    X, y = _data(400)
    DPAUCMaximizer(epsilon=2.0, delta=1e-5, data_norm=3.0, pos_ratio=0.5,
                   random_state=0).fit(X, y)
    assert seen == [pytest.approx(0.05 * 2.0)]
    assert DPAUCMaximizer().get_params()["n_samples_budget"] == 0.05


def test_a_delta_not_below_one_over_n_warns():
    """A user-style probe: delta = 0.5 on 398 rows fitted silently."""
    X, y = _data(100)
    with pytest.warns(UserWarning, match="not below 1 / n"):
        _auc(delta=0.02, n_samples_budget=100).fit(X, y)
    with warnings.catch_warnings():
        warnings.filterwarnings("error", ".*not below 1 / n")
        _auc(delta=1e-3, n_samples_budget=100).fit(X, y)
        _auc(delta=0.5, epsilon=np.inf).fit(X, y)


def test_a_declared_size_under_replace_one_is_checked_on_the_rows_run():
    """A probe's finding: with n_samples_budget=N and a replace-one solver the dry run
    planned on N while the run plans on len(X); single-pass NSEG valid for N = 5,000
    but not for 1,000 rows failed after the charge. Both sizes are now checked first."""
    from skdpminimax.solvers import NoisyExtragradient

    rng = np.random.default_rng(0)
    X = rng.normal(size=(1000, 3))
    y = (X[:, 0] > 0).astype(int)
    ledger = BudgetAccountant()
    est = DPAUCMaximizer(epsilon=1.0, delta=1e-6, data_norm=3.0, pos_ratio=0.5,
                         accountant=ledger, n_samples_budget=5000,
                         solver=NoisyExtragradient(mode="single_pass", batch_size=100,
                                                   n_iter=20))
    with pytest.raises(ValueError, match="at most"):
        est.fit(X, y)
    assert ledger.spent_budget == []


def test_a_declared_size_far_from_the_rows_warns():
    """A user-style probe: n_samples_budget=10**9 on 569 rows planned 234 million steps
    with no hint but the delta warning."""
    rng = np.random.default_rng(1)
    X = rng.normal(size=(100, 3))
    y = (X[:, 0] > 0).astype(int)
    with pytest.warns(UserWarning, match="more than ten times") as record:
        DPAUCMaximizer(epsilon=1.0, data_norm=3.0, pos_ratio=0.5, n_samples_budget=10**4,
                       accountant=BudgetAccountant()).fit(X, y)
    # the message says what the declaration does, not how many rows were given
    assert not any("100 " in str(w.message) for w in record)
    with warnings.catch_warnings():
        warnings.simplefilter("error", UserWarning)
        DPAUCMaximizer(epsilon=1.0, delta=1e-4, data_norm=3.0, pos_ratio=0.5,
                       n_samples_budget=500, accountant=BudgetAccountant()).fit(X, y)
        # replace-one plans on len(X) whatever is declared: nothing to warn about
        DPAUCMaximizer(epsilon=1.0, delta=1e-5, data_norm=3.0, pos_ratio=0.5,
                       n_samples_budget=10**4, accountant=BudgetAccountant(),
                       solver=NoisySGDA(sampler="without_replacement")).fit(X, y)


def test_a_declared_size_far_from_the_rows_warns_before_the_noise_search(monkeypatch):
    """A review: n_samples_budget=10**9 on 200 rows ran the noise search over 23 billion
    planned steps (minutes, then a MemoryError or a hang at larger sizes) before the
    warning that the size is most likely a typo."""
    rng = np.random.default_rng(1)
    X = rng.normal(size=(100, 3))
    y = (X[:, 0] > 0).astype(int)
    searched = []
    calibrate = NoisySGDA.calibrate

    def spy(self, objective, n_samples, budget):
        searched.append(budget.epsilon)
        return calibrate(self, objective, n_samples, budget)

    monkeypatch.setattr(NoisySGDA, "calibrate", spy)
    ledger = BudgetAccountant()
    with warnings.catch_warnings():
        warnings.simplefilter("error", UserWarning)
        with pytest.raises(UserWarning, match="more than ten times"):
            DPAUCMaximizer(epsilon=1.0, data_norm=3.0, pos_ratio=0.5, n_samples_budget=10**4,
                           accountant=ledger).fit(X, y)
    assert searched and all(np.isinf(e) for e in searched)  # the settings only
    assert ledger.spent_budget == []


@pytest.mark.parametrize("declared", [10**6, 10**9, 1])
def test_a_declared_size_a_thousand_times_off_is_refused_before_the_spend(declared):
    """A review: n_samples_budget=10**9 on 500 rows only warned, then planned 234
    million steps (hours, 4.8 GB) after the spend; an interrupted fit stayed charged.
    The estimator refuses it before the spend, and the message does not print the
    row count."""
    rng = np.random.default_rng(1)
    n = 137 if declared > 1 else 5000
    X = rng.normal(size=(n, 3))
    y = (X[:, 0] > 0).astype(int)
    ledger = BudgetAccountant()
    for est in (DPAUCMaximizer(epsilon=1.0, data_norm=3.0, pos_ratio=0.5,
                               n_samples_budget=declared, accountant=ledger),
                DPRobustClassifier(epsilon=1.0, data_norm=3.0, group_ratios=[0.5, 0.5],
                                   n_samples_budget=declared, accountant=ledger)):
        with pytest.raises(ValueError, match="a typo") as info:
            est.fit(X, y)
        assert str(n) not in str(info.value)
        assert not hasattr(est, "coef_")
    # The scaler declares its size the same way (a review found it only warned).
    scaler = DPStandardScaler(epsilon=1.0, bounds=(-5, 5), n_samples_budget=declared,
                              accountant=ledger)
    with pytest.raises(ValueError, match="a typo"):
        scaler.fit(X)
    assert not hasattr(scaler, "mean_")
    assert ledger.spent_budget == []


@pytest.mark.parametrize("n_rows", [40, 300])
def test_a_budget_no_multiplier_certifies_is_refused_before_the_spend(n_rows):
    """A probe: at epsilon 5e-5 (delta 1e-6) with the size private, the calibration on
    the released size failed after the spend (the PLD's discretisation certifies no
    multiplier up to 1e7). Below 1e-3 the fixed probe size is calibrated first. At
    1e-5 not even 15 epochs certify: refused. At 5e-5 they do, and the doubling
    ladder's longer runs do not: a run no multiplier certifies is one too noisy to
    choose (it refused the fit, when the ladder was walked rung by rung)."""
    X, y = make_classification(n_rows, 5, random_state=0)
    ledger = BudgetAccountant()
    with pytest.raises(ValueError, match="No noise multiplier"):
        DPAUCMaximizer(epsilon=1e-5, delta=1e-6, data_norm=3.0, accountant=ledger,
                       random_state=0).fit(X, y)
    assert ledger.spent_budget == []
    # small budgets that can be certified fit (and are charged), whatever the released
    # size: seeds 0, 2 and 3 release a size clamped to 1 row, whose full batches no
    # multiplier certifies (they failed after the spend; now planned on the probe size)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        for epsilon, seed in ((5e-5, 0), (5e-5, 2), (5e-5, 3), (2e-4, 0)):
            model = DPAUCMaximizer(epsilon=epsilon, delta=1e-6, data_norm=3.0,
                                   accountant=ledger, random_state=seed).fit(X, y)
            assert np.all(np.isfinite(model.coef_))
    assert model.calibration_.n_steps >= 15 * model.planning_size_ / 64
    assert ledger.spent_budget == [(5e-5, 1e-6)] * 3 + [(2e-4, 1e-6)]


@pytest.mark.parametrize("epsilon", [3e-5, 5e-5])
def test_a_huge_released_size_does_not_fail_the_fit_after_its_spend(epsilon):
    """A review: at epsilon 1e-6 the probe size certifies, but the released size (noise
    of scale 1 / epsilon) can reach millions, whose run no multiplier certifies: the
    fit failed after its spend for some seeds. The run is now planned on the largest
    half of the released size that certifies, and the fit's calibration holds there.
    (The size's count at 1e-6 x 5% is now refused, below 1e-6: at 3e-5 and 5e-5 it is
    released at about 1.4e-6 and 2.4e-6, noise std ~1e6 and ~6e5.)"""
    X, y = make_classification(569, 5, random_state=0)
    for seed in range(3):
        ledger = BudgetAccountant()
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            model = DPAUCMaximizer(epsilon=epsilon, delta=1e-5, data_norm=3.0,
                                   accountant=ledger, random_state=seed).fit(X, y)
        assert ledger.spent_budget == [(epsilon, 1e-5)]
        cal = model.calibration_
        sampler = make_sampler("poisson", model.planning_size_, cal.batch_size)
        assert cal.sample_rate == pytest.approx(sampler.sample_rate)
        assert np.all(np.isfinite(model.coef_))


class _CertifiesUpTo:
    """A solver stand-in whose calibration certifies runs planned on at most ``limit``."""

    def __init__(self, limit):
        self.limit, self.asked = limit, []

    def calibrate(self, objective, n_samples, budget):
        from skdpminimax.privacy.calibration import UncertifiableBudgetError

        self.asked.append(n_samples)
        if n_samples > self.limit:
            raise UncertifiableBudgetError("No noise multiplier up to 1e7")


class _CertifiesFrom(_CertifiesUpTo):
    """Certifies runs planned on at least ``limit`` (a tiny size runs full batches)."""

    def calibrate(self, objective, n_samples, budget):
        from skdpminimax.privacy.calibration import UncertifiableBudgetError

        self.asked.append(n_samples)
        if n_samples < self.limit:
            raise UncertifiableBudgetError("No noise multiplier up to 1e7")


def test_the_plan_size_is_the_largest_half_of_the_released_size_that_certifies():
    from skdpminimax.base import _certifiable_plan_size
    from skdpminimax.privacy import PrivacyBudget

    budget = PrivacyBudget(1e-6, 1e-5)
    assert _certifiable_plan_size(_CertifiesUpTo(10**6), None, 5000, budget) == 5000
    solver = _CertifiesUpTo(1000)
    with pytest.warns(UserWarning, match="planned on 625 rows instead"):
        assert _certifiable_plan_size(solver, None, 5000, budget) == 625
    # below the probe size it is tried first (a tiny released size: full batches)
    assert solver.asked == [5000, 10_000, 2500, 1250, 625]
    solver = _CertifiesFrom(10_000)
    with pytest.warns(UserWarning, match="planned on 10000 rows instead"):
        assert _certifiable_plan_size(solver, None, 3, budget) == 10_000
    assert solver.asked == [3, 10_000]
    with pytest.raises(ValueError, match="No noise multiplier"):
        _certifiable_plan_size(_CertifiesUpTo(0), None, 4, budget)


def test_a_count_of_vanishing_epsilon_is_refused_before_the_spend():
    """A fuzzing review: n_samples_budget=1e-9 left the size's count epsilon 1e-9 (noise
    std ~1.4e9); DPSaddleEstimator planned 15 epochs of the released size and ran for
    hours after its spend. A count below epsilon 1e-6 is refused, for every estimator."""
    from skdpminimax import DPSaddleEstimator, DPStandardScaler

    from test_custom_objective import CoupledMean

    X, y = make_classification(60, 3, n_informative=2, n_redundant=0, random_state=0)
    ledger = BudgetAccountant()
    for model in (DPSaddleEstimator(CoupledMean, data_norm=3.0, n_samples_budget=1e-9,
                                    accountant=ledger),
                  DPAUCMaximizer(data_norm=3.0, n_samples_budget=5e-7, accountant=ledger),
                  DPStandardScaler(epsilon=1e-5, bounds=(-5, 5), n_samples_budget=0.05,
                                   accountant=ledger)):
        with pytest.raises(ValueError, match="private count, below 1e-06.*Nothing was spent"):
            model.fit(X, y)
    assert ledger.spent_budget == []
    DPAUCMaximizer(data_norm=3.0, n_samples_budget=2e-6, accountant=ledger,
                   random_state=0).fit(X, y)  # a count at 2e-6 is released
    assert ledger.spent_budget == [(1.0, 1e-5)]


def _spy_on_releases(monkeypatch):
    """The epsilons the size's and the class ratio's mechanisms are actually called with."""
    import skdpminimax.base as base
    import skdpminimax.estimators.auc as auc

    seen = {"n_samples": [], "constants": []}

    def size_spy(n_samples, epsilon, rng):
        seen["n_samples"].append(epsilon)
        return private_size(n_samples, epsilon, rng)

    real_count = auc.private_count

    def count_spy(count, size, epsilon, rng):
        seen["constants"].append(epsilon)
        return real_count(count, size, epsilon, rng)

    monkeypatch.setattr(base, "private_size", size_spy)
    monkeypatch.setattr(auc, "private_count", count_spy)
    return seen


@pytest.mark.parametrize("composition", ["basic", "pld"])
def test_privacy_shares_record_what_each_release_was_given(monkeypatch, composition):
    # privacy_shares_ says where privacy_spent_ went: checked against the epsilons the
    # mechanisms were called with and the run's calibration, not against the split's
    # own arithmetic.
    seen = _spy_on_releases(monkeypatch)
    X, y = _data(400)
    model = _auc(epsilon=2.0, pos_ratio=None, composition=composition).fit(X, y)
    shares, spent = model.privacy_shares_, model.privacy_spent_
    assert set(shares) == {"n_samples", "constants", "training"}
    assert seen["n_samples"] == [pytest.approx(shares["n_samples"].epsilon)]
    assert seen["constants"] == [pytest.approx(shares["constants"].epsilon)]
    assert shares["n_samples"].delta == shares["constants"].delta == 0.0
    assert shares["training"].delta == spent.delta
    # the records are of public types (their repr names a class a user can import)
    for share in shares.values():
        assert getattr(skdpminimax.privacy, type(share).__name__) is type(share)
    # the run certifies (within the search's tolerance) the training share
    assert model.calibration_.epsilon <= shares["training"].epsilon * (1 + 1e-6)
    assert model.calibration_.epsilon >= 0.9 * shares["training"].epsilon
    if composition == "basic":  # the shares add up to the spend
        assert model.calibration_.composed_with == ()
        assert sum(s.epsilon for s in shares.values()) == pytest.approx(spent.epsilon)
    else:  # the class ratio's count is inside the training's PLD
        assert len(model.calibration_.composed_with) == 1
        assert shares["training"].epsilon == pytest.approx(
            spent.epsilon - shares["n_samples"].epsilon)


def test_privacy_shares_are_none_where_nothing_is_released(monkeypatch):
    seen = _spy_on_releases(monkeypatch)
    X, y = _data(400)
    model = _auc(n_samples_budget=400, pos_ratio=0.5).fit(X, y)
    assert seen == {"n_samples": [], "constants": []}
    assert model.privacy_shares_["n_samples"] is None
    assert model.privacy_shares_["constants"] is None
    assert model.privacy_shares_["training"] == model.privacy_spent_


def test_privacy_shares_without_noise_hold_one_delta():
    """A docs review: at epsilon = inf the size's and the constants' shares were
    (inf, delta) each, three deltas against the one spent. The counts are exact there
    and spend no delta."""
    X, y = _data(400)
    model = DPAUCMaximizer(epsilon=np.inf, delta=1e-6, data_norm=3.0, random_state=0,
                           accountant=BudgetAccountant()).fit(X, y)
    shares = model.privacy_shares_
    for name in ("n_samples", "constants"):
        assert shares[name] is not None and shares[name].delta == 0
    total = sum(share.delta for share in shares.values() if share is not None)
    assert total == model.privacy_spent_.delta == 1e-6


class _CalibratesOnTwiceTheBudget(NoisySGDA):
    """A user's solver that calibrates its noise on twice the budget it is given."""

    def solve(self, objective, data, budget, rng, *, init=None):
        doubled = skdpminimax.privacy.PrivacyBudget(2 * budget.epsilon, budget.delta)
        return super().solve(objective, data, doubled, rng, init=init)


class _RecordsNoCalibration(NoisySGDA):
    def solve(self, objective, data, budget, rng, *, init=None):
        return dataclasses.replace(super().solve(objective, data, budget, rng, init=init),
                                   calibration=None)


@pytest.mark.parametrize("solver, message", [(_CalibratesOnTwiceTheBudget, "more than"),
                                             (_RecordsNoCalibration, "no calibration")])
@pytest.mark.parametrize("size", ["public", 400, None])
def test_a_run_whose_record_claims_more_than_its_budget_is_not_released(solver, message,
                                                                        size):
    """A review of the extension path: a solver that calibrated on twice its budget (or
    on the fit's whole budget instead of its training share) was released with a
    calibration_ of epsilon 2 for a fit of epsilon 1, whatever the size's handling; so
    was one that returned no calibration."""
    X, y = _data(400)
    acc = BudgetAccountant()
    kwargs = {} if size is None else {"n_samples_budget": size}
    model = _auc(accountant=acc, composition="basic", pos_ratio=None,
                 solver=solver(batch_size=16, n_epochs=2), **kwargs)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", PrivacyLeakWarning)
        with pytest.raises(RuntimeError, match=message):
            model.fit(X, y)
    assert len(acc.spent_budget) == 1 and not hasattr(model, "coef_")
