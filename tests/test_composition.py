"""One PLD for a fit's releases: its counts, releases made before it, and its training.

The closed forms here are written independently of the library: a Gaussian run at
sampling rate 1 is exactly ``mu``-GDP (``k`` releases of multiplier ``z``:
``mu = sqrt(k) / z``), Gaussians compose in quadrature, and the hockey-stick divergence
of a product is the mixture, over the first factor's outcome, of the second's at the
shifted threshold: a discrete Laplace count of parameter ``a`` (sensitivity 1) beside a
``mu``-GDP Gaussian has ``delta(eps) = delta_G(eps - a) / (1 + e^-a) +
e^-a delta_G(eps + a) / (1 + e^-a)``.
"""

import math
import warnings

import dp_accounting
import numpy as np
import pytest
from diffprivlib import BudgetAccountant
from diffprivlib.utils import PrivacyLeakWarning
from scipy.optimize import brentq
from sklearn.datasets import make_classification

from skdpminimax import DPAUCMaximizer, DPRobustClassifier, DPStandardScaler
from skdpminimax.privacy import (
    PrivacyBudget,
    Release,
    calibrate_noise_multiplier,
    certified_epsilon,
    count_event,
    gaussian_event,
    make_sampler,
    spend_release,
)
from skdpminimax.privacy.calibration import _calibrate_cached
from skdpminimax.solvers import NoisySGDA
from privacy_reference import gdp_delta, gdp_mu


def _count_and_gaussian_delta(epsilon, a, mu):
    r = math.exp(-a)
    return (gdp_delta(epsilon - a, mu) + r * gdp_delta(epsilon + a, mu)) / (1 + r)


def _rate_one(steps=50):
    return make_sampler("poisson", 64, 64), steps  # every example in every batch


def test_a_gaussian_release_composes_in_quadrature():
    sampler, k = _rate_one()
    epsilon, delta, z0 = 1.0, 1e-6, 10.0
    z = calibrate_noise_multiplier(sampler, k, epsilon, delta,
                                   preceding=(gaussian_event(z0),)).noise_multiplier
    mu_run = math.sqrt(gdp_mu(epsilon, delta) ** 2 - z0 ** -2)
    exact = math.sqrt(k) / mu_run
    assert exact <= z <= exact * 1.01  # the PLD is pessimistic, within its tolerance
    alone = calibrate_noise_multiplier(sampler, k, epsilon, delta).noise_multiplier
    assert alone < z  # the release is paid for


@pytest.mark.parametrize("a", [0.01, 0.1, 0.5])
def test_a_count_composes_as_its_closed_form(a):
    sampler, k = _rate_one()
    epsilon, delta = 1.0, 1e-6
    z = calibrate_noise_multiplier(sampler, k, epsilon, delta,
                                   preceding=(count_event(a),)).noise_multiplier
    mu = brentq(lambda m: _count_and_gaussian_delta(epsilon, a, m) - delta, 1e-3, 50)
    exact = math.sqrt(k) / mu
    assert exact <= z <= exact * 1.01
    # Basic composition would leave epsilon - a to the run: more noise.
    basic = calibrate_noise_multiplier(sampler, k, epsilon - a, delta).noise_multiplier
    assert z < basic


def test_certified_epsilon_with_preceding_is_the_composition():
    sampler = make_sampler("poisson", 20_000, 64)
    steps, z, delta = 3_000, 3.0, 1e-6
    events = (count_event(0.05), gaussian_event(30.0))
    ours = certified_epsilon(sampler, z, steps, delta, preceding=events)
    accountant = dp_accounting.pld.PLDAccountant(value_discretization_interval=1e-4)
    accountant.compose(dp_accounting.ComposedDpEvent([
        *events, dp_accounting.SelfComposedDpEvent(sampler.dp_event(z), steps)]))
    assert ours == pytest.approx(accountant.get_epsilon(delta), rel=1e-9)
    alone = certified_epsilon(sampler, z, steps, delta)
    assert alone < ours < alone + 0.05 + certified_epsilon(
        make_sampler("poisson", 64, 64), 30.0, 1, delta)


def test_preceding_needs_the_pld_and_add_remove():
    events = (count_event(0.1),)
    with pytest.raises(ValueError, match="PLD accountant and add/remove-one"):
        calibrate_noise_multiplier(make_sampler("without_replacement", 1000, 50), 20, 1.0,
                                   1e-6, preceding=events)
    with pytest.raises(ValueError, match="PLD accountant and add/remove-one"):
        calibrate_noise_multiplier(make_sampler("poisson", 1000, 50), 20, 1.0, 1e-6,
                                   accounting="rdp", preceding=events)
    with pytest.raises(ValueError, match="cannot be split"):
        PrivacyBudget(1.0, 1e-6, preceding=events).split(0.1)


def test_release_records_are_checked_against_their_charge():
    sigma_z = 5.0  # one Gaussian of multiplier 5 is 0.2-GDP
    epsilon = 0.5
    delta = gdp_delta(epsilon, 1 / sigma_z)
    Release(epsilon, delta * 1.001, gaussian_multipliers=(sigma_z,))
    with pytest.raises(ValueError, match="cost more than what was charged"):
        Release(epsilon, delta * 0.5, gaussian_multipliers=(sigma_z,))
    with pytest.raises(ValueError, match="cost more than what was charged"):
        Release(0.1, 0.0, count_epsilons=(0.06, 0.06))
    with pytest.raises(ValueError, match="at least one"):
        Release(0.1, 1e-6)
    a, b = Release(0.1, 0.0, count_epsilons=(0.1,)), Release(0.1, 0.0, count_epsilons=(0.1,))
    assert a.token != b.token and a != b
    assert a.events == (count_event(0.1),)


def _auc_data(n=1500, seed=0):
    X, y = make_classification(n, 8, n_informative=5, random_state=seed)
    return X / np.linalg.norm(X, axis=1).max(), y


def _fit(ledger=None, **params):
    X, y = _auc_data()
    model = DPAUCMaximizer(epsilon=0.5, delta=1e-6, data_norm=1.0, random_state=0,
                           accountant=BudgetAccountant() if ledger is None else ledger,
                           **params)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", PrivacyLeakWarning)
        return model.fit(X, y)


def test_the_fit_composes_its_counts_with_its_training():
    """Private size and class ratio: one PLD certifies the ratio's count and the
    training at the budget less the size's share (the run is planned on the released
    size, so its count is added by basic composition), and the training gets less
    noise than with the shares added."""
    pld, basic = _fit(composition="pld"), _fit(composition="basic")
    cal = pld.calibration_
    assert basic.calibration_.composed_with == ()
    assert cal.composed_with == ("count(epsilon=0.025)",)  # the ratio's, not the size's
    assert cal.noise_multiplier < 0.98 * basic.calibration_.noise_multiplier
    # Both spend the same (epsilon, delta), once.
    for model in (pld, basic):
        assert model.accountant.spent_budget == [(0.5, 1e-6)]
    # Recomputed with dp_accounting directly: the counts at their shares and the run.
    ratio_eps = 0.05 * 0.5
    size_eps = 0.05 * (0.5 - ratio_eps)
    sampler = make_sampler("poisson", pld.planning_size_, pld.calibration_.batch_size)
    accountant = dp_accounting.pld.PLDAccountant(value_discretization_interval=1e-4)
    accountant.compose(dp_accounting.ComposedDpEvent([
        count_event(ratio_eps),
        dp_accounting.SelfComposedDpEvent(sampler.dp_event(cal.noise_multiplier),
                                          cal.n_steps)]))
    assert accountant.get_epsilon(1e-6) + size_eps <= 0.5 * (1 + 1e-9)
    # ...and at 2% less noise it would not hold: the budget is used, not wasted.
    accountant = dp_accounting.pld.PLDAccountant(value_discretization_interval=1e-4)
    accountant.compose(dp_accounting.ComposedDpEvent([
        count_event(ratio_eps),
        dp_accounting.SelfComposedDpEvent(sampler.dp_event(0.98 * cal.noise_multiplier),
                                          cal.n_steps)]))
    assert accountant.get_epsilon(1e-6) + size_eps > 0.5


def test_group_counts_are_composed_too():
    X, y = _auc_data()
    groups = (X[:, 0] > 0).astype(int)
    fits = {}
    for composition in ("pld", "basic"):
        model = DPRobustClassifier(epsilon=0.5, delta=1e-6, data_norm=1.0, random_state=0,
                                   n_samples_budget=len(X), composition=composition,
                                   accountant=BudgetAccountant())
        fits[composition] = model.fit(X, y, sensitive_features=groups).calibration_
    assert fits["pld"].composed_with == ("count(epsilon=0.025)",)
    assert fits["pld"].noise_multiplier < fits["basic"].noise_multiplier


class _ForgetsPreceding(NoisySGDA):
    """Says it composes the releases before its run, and calibrates on its own."""

    def calibrate(self, objective, n_samples, budget):
        return super().calibrate(objective, n_samples,
                                 PrivacyBudget(budget.epsilon, budget.delta))


class _PlansOnTheRatio(NoisySGDA):
    """Plans its length on the objective's class ratio: the run's privacy-loss
    distribution would follow the released ratio."""

    def calibrate(self, objective, n_samples, budget):
        self.set_params(n_iter=40 if objective.p == 0.5 else 41)
        return super().calibrate(objective, n_samples, budget)


class _DoesNotCompose(NoisySGDA):
    composes_preceding = False


def test_a_solver_that_drops_the_releases_is_refused_before_the_spend():
    ledger = BudgetAccountant()
    with pytest.raises(RuntimeError, match="did not compose them"):
        _fit(ledger, solver=_ForgetsPreceding())
    assert ledger.spent_budget == []


def test_a_solver_that_drops_the_releases_is_refused_before_the_spend_at_a_public_size():
    ledger = BudgetAccountant()
    with pytest.raises(RuntimeError, match="did not compose them.*nothing spent"):
        _fit(ledger, solver=_ForgetsPreceding(), n_samples_budget=1500)
    assert ledger.spent_budget == []


@pytest.mark.parametrize("size", [1500, "public"])
def test_a_composed_fit_at_a_public_size_searches_its_noise_once(size):
    """The noise search of a composed fit runs on the joint budget only (it ran on the
    basic split too, before the spend, and that multiplier was never used): as many
    accountant searches as the same fit with the shares added."""
    searches = {}
    for composition in ("pld", "basic"):
        _calibrate_cached.cache_clear()
        model = _fit(composition=composition, n_samples_budget=size)
        searches[composition] = _calibrate_cached.cache_info().misses
        assert bool(model.calibration_.composed_with) == (composition == "pld")
    assert searches["pld"] == searches["basic"] > 0


def test_a_run_planned_on_the_released_constants_is_not_released():
    ledger = BudgetAccountant()
    with pytest.raises(RuntimeError,
                       match="differs in .* from the plan made on the public constants"):
        _fit(ledger, solver=_PlansOnTheRatio())
    assert ledger.spent_budget == [(0.5, 1e-6)]  # found after the solve: charged
    # with the shares added it is a valid (adaptive, basic) composition
    assert _fit(solver=_PlansOnTheRatio(), composition="basic").n_iter_ == 41


def test_a_solver_that_does_not_compose_gets_the_shares_added():
    model = _fit(solver=_DoesNotCompose())
    assert model.calibration_.composed_with == ()
    assert model.calibration_.noise_multiplier == pytest.approx(
        _fit(composition="basic", solver=NoisySGDA()).calibration_.noise_multiplier)


def _scaled(ledger, epsilon=0.1, delta=1e-7, **params):
    X, y = _auc_data()
    scaler = DPStandardScaler(epsilon=epsilon, delta=delta, bounds=(-1.0, 1.0),
                              n_samples_budget=len(X), accountant=ledger, random_state=0,
                              **params).fit(X)
    return scaler, scaler.transform(X) / 10.0, y


def test_a_scaler_release_is_composed_once_and_the_ledger_sums_to_the_total():
    ledger = BudgetAccountant()
    scaler, Xs, y = _scaled(ledger)
    release = scaler.release_
    assert release.epsilon == 0.1 and release.delta == 1e-7
    assert release.gaussian_multipliers == pytest.approx((scaler.noise_std_
                                                           / scaler.sensitivity_,))
    model = DPAUCMaximizer(epsilon=0.6, delta=1.1e-6, data_norm=1.0, random_state=0,
                           n_samples_budget=len(Xs), accountant=ledger,
                           composed_with=[release]).fit(Xs, y)
    total_eps, total_delta = ledger.total()
    assert total_eps == pytest.approx(0.6) and total_delta == pytest.approx(1.1e-6)
    assert model.privacy_spent_.epsilon == pytest.approx(0.5)
    assert model.calibration_.composed_with[0].startswith("gaussian(z=")
    # The run's noise is below a fit that spends (0.5, 1e-6) on its own.
    alone = DPAUCMaximizer(epsilon=0.5, delta=1e-6, data_norm=1.0, random_state=0,
                           n_samples_budget=len(Xs), accountant=BudgetAccountant()).fit(Xs, y)
    assert model.calibration_.noise_multiplier < 0.95 * alone.calibration_.noise_multiplier
    # A second fit composing the same release is refused before it spends.
    before = list(ledger.spent_budget)
    with pytest.raises(ValueError, match="composed with one fit only"):
        DPAUCMaximizer(epsilon=0.6, delta=1.1e-6, data_norm=1.0, random_state=0,
                       n_samples_budget=len(Xs), accountant=ledger,
                       composed_with=[release]).fit(Xs, y)
    assert ledger.spent_budget == before


def test_basic_composition_with_a_release_spends_the_rest():
    ledger = BudgetAccountant()
    scaler, Xs, y = _scaled(ledger)
    model = DPAUCMaximizer(epsilon=0.6, delta=1.1e-6, data_norm=1.0, random_state=0,
                           n_samples_budget=len(Xs), accountant=ledger, composition="basic",
                           composed_with=[scaler.release_]).fit(Xs, y)
    alone = DPAUCMaximizer(epsilon=0.5, delta=1e-6, data_norm=1.0, random_state=0,
                           n_samples_budget=len(Xs), accountant=BudgetAccountant(),
                           composition="basic").fit(Xs, y)
    assert model.calibration_.noise_multiplier == pytest.approx(
        alone.calibration_.noise_multiplier)
    assert ledger.total()[0] == pytest.approx(0.6)


@pytest.mark.parametrize("case", ["other ledger", "too small", "replace-one", "not a release",
                                  "no privacy", "twice"])
def test_bad_composed_with_is_refused_before_any_spend(case):
    ledger = BudgetAccountant()
    scaler, Xs, y = _scaled(ledger)
    release = scaler.release_
    params = dict(epsilon=0.6, delta=1.1e-6, composed_with=[release], accountant=ledger)
    if case == "other ledger":
        params["accountant"] = BudgetAccountant()
        match = "not charged on this fit's ledger"
    elif case == "too small":
        params["epsilon"] = 0.1
        match = "leaves nothing"
    elif case == "replace-one":
        params["solver"] = NoisySGDA(sampler="without_replacement")
        match = "replace-one"
    elif case == "not a release":
        params["composed_with"] = [(0.1, 1e-7)]
        match = "Release records"
    elif case == "no privacy":
        params["epsilon"] = np.inf
        match = "finite epsilon"
    else:
        params["composed_with"] = [release, release]
        match = "twice"
    spent = list(params["accountant"].spent_budget)
    model = DPAUCMaximizer(data_norm=1.0, random_state=0, n_samples_budget=len(Xs), **params)
    with pytest.raises((ValueError, TypeError), match=match):
        model.fit(Xs, y)
    assert params["accountant"].spent_budget == spent
    assert not hasattr(model, "coef_")


def test_a_release_of_your_own_is_charged_with_spend_release():
    ledger = BudgetAccountant()
    release = Release(0.05, 0.0, count_epsilons=(0.05,))
    assert spend_release(ledger, release) is ledger
    assert ledger.spent_budget == [(0.05, 0.0)]
    X, y = _auc_data()
    model = DPAUCMaximizer(epsilon=0.55, delta=1e-6, data_norm=1.0, random_state=0,
                           n_samples_budget=len(X), accountant=ledger,
                           composed_with=[release]).fit(X, y)
    assert model.calibration_.composed_with[0] == "count(epsilon=0.05)"
    assert ledger.total()[0] == pytest.approx(0.55)


def test_replace_one_scaler_has_no_release():
    ledger = BudgetAccountant()
    scaler, _, _ = _scaled(ledger, neighbouring="replace_one")
    assert scaler.release_ is None


def test_the_noise_search_stops_where_the_pld_grid_would_not_fit_in_memory():
    """Three Poisson steps at rate 1e-3 certify epsilon = 2 at delta = 1e-2 with almost
    no noise; the search went down to z = 7e-4, whose PLD grid needed 8 GB."""
    from skdpminimax.privacy.calibration import _smallest_multiplier
    sampler = make_sampler("poisson", 10_000, 10)
    calibration = calibrate_noise_multiplier(sampler, 3, 2.0, 1e-2)
    assert calibration.noise_multiplier == pytest.approx(_smallest_multiplier("pld", 1e-3))
    assert certified_epsilon(sampler, calibration.noise_multiplier, 3, 1e-2) <= 2.0


def test_releases_that_leave_little_room_are_added_not_composed():
    ledger = BudgetAccountant()
    release = Release(0.45, 0.0, count_epsilons=(0.45,))
    spend_release(ledger, release)
    X, y = _auc_data()
    model = DPAUCMaximizer(epsilon=0.5, delta=1e-6, data_norm=1.0, random_state=0,
                           n_samples_budget=len(X), accountant=ledger,
                           composed_with=[release]).fit(X, y)
    assert model.calibration_.composed_with == ()  # the shares add: 0.05 for the fit
    assert model.calibration_.epsilon <= 0.05 * 0.95 * (1 + 1e-9)
    assert ledger.total()[0] == pytest.approx(0.5)


def test_pending_composes_the_scaler_fitted_just_before_in_a_pipeline():
    from sklearn.base import clone
    from sklearn.pipeline import make_pipeline
    ledger = BudgetAccountant()
    X, y = _auc_data()
    pipe = make_pipeline(
        DPStandardScaler(epsilon=0.1, delta=1e-7, bounds=(-1.0, 1.0), n_samples_budget=len(X),
                         accountant=ledger, random_state=0),
        DPAUCMaximizer(epsilon=0.6, delta=1.1e-6, data_norm=10.0, n_samples_budget=len(X),
                       accountant=ledger, random_state=0, composed_with="pending"))
    pipe.fit(X, y)
    model = pipe[-1]
    assert ledger.total()[0] == pytest.approx(0.6)
    assert model.privacy_spent_.epsilon == pytest.approx(0.5)
    assert model.calibration_.composed_with[0].startswith("gaussian(z=")
    # Refitted (a clone, as cross-validation does), it composes the new release only.
    clone(pipe).fit(X, y)
    assert ledger.total()[0] == pytest.approx(1.2)
    # Nothing pending: the fit spends its whole budget itself.
    alone = clone(model).set_params(accountant=ledger).fit(X, y)
    assert alone.calibration_.composed_with == ("count(epsilon=0.03)",)
    assert ledger.total()[0] == pytest.approx(1.8)


def test_a_release_with_almost_no_noise_is_added_not_composed():
    """A scaler at a huge epsilon has a Gaussian whose PLD grid would not fit in
    memory: the fit spends the rest of its budget on its own (basic composition)."""
    ledger = BudgetAccountant()
    scaler, Xs, y = _scaled(ledger, epsilon=1e4)
    assert scaler.release_.gaussian_multipliers[0] < 0.01
    model = DPAUCMaximizer(epsilon=1e4 + 1.0, delta=2e-6, data_norm=1.0, random_state=0,
                           n_samples_budget=len(Xs), accountant=ledger,
                           composed_with=[scaler.release_]).fit(Xs, y)
    assert all(not name.startswith("gaussian") for name in model.calibration_.composed_with)
    assert ledger.total()[0] == pytest.approx(1e4 + 1.0)


def test_a_gaussian_too_weak_for_the_pld_grid_is_not_composable():
    from skdpminimax.privacy.calibration import composable
    assert composable((gaussian_event(1.0), count_event(0.1)), 0.1)
    assert not composable((gaussian_event(1e-3),), 0.1)
    assert composable((count_event(50.0),), 0.1)  # counts have a two-point loss


def test_a_release_pends_until_the_next_fit_on_its_ledger():
    """A scaler whose pipeline's fit did not compose it is not picked up by a later
    pipeline's "pending": that later fit would be charged for it."""
    ledger = BudgetAccountant()
    _scaled(ledger)  # followed by a plain fit
    X, y = _auc_data()
    DPAUCMaximizer(epsilon=0.5, delta=1e-6, data_norm=1.0, random_state=0,
                   n_samples_budget=len(X), accountant=ledger).fit(X, y)
    scaler, Xs, _ = _scaled(ledger)
    model = DPAUCMaximizer(epsilon=0.6, delta=1.1e-6, data_norm=1.0, random_state=0,
                           n_samples_budget=len(X), accountant=ledger,
                           composed_with="pending").fit(Xs, y)
    assert sum(name.startswith("gaussian") for name in model.calibration_.composed_with) == 1
    assert model.privacy_spent_.epsilon == pytest.approx(0.5)
    assert ledger.total()[0] == pytest.approx(0.1 + 0.5 + 0.1 + 0.5)


def test_cross_validation_composes_each_folds_scaler_with_its_fit():
    from sklearn.model_selection import cross_val_score
    from sklearn.pipeline import make_pipeline
    ledger = BudgetAccountant()
    X, y = _auc_data(n=900)
    pipe = make_pipeline(
        DPStandardScaler(epsilon=0.1, delta=1e-7, bounds=(-1.0, 1.0), n_samples_budget=600,
                         accountant=ledger, random_state=0),
        DPAUCMaximizer(epsilon=0.6, delta=1.1e-6, data_norm=10.0, n_samples_budget=600,
                       accountant=ledger, random_state=0, composed_with="pending"))
    scores = cross_val_score(pipe, X, y, cv=3, scoring="roc_auc")
    assert np.all(scores > 0.6)
    # three scalers (0.1 each) and three fits (0.5 each): the three totals of 0.6
    assert sorted(e for e, _ in ledger.spent_budget) == pytest.approx([0.1] * 3 + [0.5] * 3)
    assert ledger.total()[0] == pytest.approx(1.8)


def test_group_dro_with_per_group_dual_clips_composes_its_counts():
    """The per-group dual clips follow the released group counts, and so may the split
    of the joint multiplier between the blocks: that split does not change the run's
    privacy-loss distribution, so the fit is released."""
    X, y = _auc_data(n=3000)
    groups = np.where(X[:, 0] > 0.2, 1, 0)  # unbalanced groups
    model = DPRobustClassifier(epsilon=0.3, delta=1e-6, data_norm=1.0, random_state=0,
                               n_samples_budget=len(X), accountant=BudgetAccountant(),
                               solver=NoisySGDA(clip_v="auto"))
    model.fit(X, y, sensitive_features=groups)
    assert model.calibration_.composed_with == ("count(epsilon=0.015)",)


@pytest.mark.parametrize("n_samples_budget", [1000, 0.05])
def test_a_run_whose_default_length_follows_the_ratio_is_planned_on_the_public_one(
        n_samples_budget):
    """Found by a review: with radius * data_norm < 1 the default solver's dual clip,
    and so its noise split and n_epochs="auto"'s length, follow the released class
    ratio; the composed fit failed after its spend. Its length is now fixed from the
    public constants before the solve."""
    rng = np.random.default_rng(0)
    X = rng.normal(size=(1000, 10))
    X /= np.linalg.norm(X, axis=1, keepdims=True)
    y = (rng.random(1000) < 0.3).astype(int)
    steps = {}
    for composition in ("basic", "pld"):
        ledger = BudgetAccountant()
        model = DPAUCMaximizer(epsilon=0.5, delta=1e-6, data_norm=1.0, radius=0.5,
                               n_samples_budget=n_samples_budget, accountant=ledger,
                               random_state=0, composition=composition)
        with warnings.catch_warnings():
            warnings.simplefilter("ignore", PrivacyLeakWarning)
            model.fit(X, y)
        steps[composition] = model.calibration_.n_steps
        assert ledger.spent_budget == [(0.5, 1e-6)]
    assert model.calibration_.composed_with == ("count(epsilon=0.025)",)
    assert model.solver_.n_iter == steps["pld"]  # fixed before the solve


def test_a_changed_copy_of_a_charged_release_is_refused():
    """Found by a review: the ledger matched a release by its token only, so a copy
    claiming more than was charged passed, and the ledger under-counted."""
    import dataclasses
    ledger = BudgetAccountant()
    scaler, Xs, y = _scaled(ledger)
    inflated = dataclasses.replace(scaler.release_, epsilon=0.5)
    assert inflated.token != scaler.release_.token  # not a constructor argument
    object.__setattr__(inflated, "token", scaler.release_.token)  # forced: still refused
    model = DPAUCMaximizer(epsilon=0.6, delta=1.1e-6, data_norm=1.0, random_state=0,
                           n_samples_budget=len(Xs), accountant=ledger,
                           composed_with=[inflated])
    with pytest.raises(ValueError, match="not charged on this fit's ledger as it is"):
        model.fit(Xs, y)
    assert ledger.spent_budget == [(0.1, 1e-7)]
    with pytest.raises(TypeError):
        Release(0.1, 0.0, count_epsilons=(0.1,), token="chosen")


def test_a_diffprivlib_spend_ends_the_pending_releases():
    """Found by a review: only this library's spends ended them, so a fit on other
    data after a diffprivlib model's spend composed the earlier scaler's release."""
    from diffprivlib.models import GaussianNB
    from skdpminimax.privacy.ledger import pending_releases
    ledger = BudgetAccountant()
    _scaled(ledger)
    assert len(pending_releases(ledger)) == 1
    X, y = _auc_data()
    GaussianNB(epsilon=0.3, bounds=(-1.0, 1.0), accountant=ledger).fit(X, y)
    assert pending_releases(ledger) == ()
    model = DPAUCMaximizer(epsilon=1.0, delta=1e-6, data_norm=1.0, random_state=0,
                           n_samples_budget=len(X), accountant=ledger,
                           composed_with="pending").fit(X, y)
    assert model.privacy_spent_.epsilon == 1.0
    assert all(not name.startswith("gaussian") for name in model.calibration_.composed_with)


def test_pipelines_fitted_in_threads_each_compose_their_own_release():
    """Found by a review: under joblib's threading backend two folds' scalers were
    charged before either fit, and the first fit composed both releases (the second
    then had nothing left). "pending" now takes the calling thread's releases only."""
    import threading
    from sklearn.pipeline import make_pipeline
    ledger = BudgetAccountant()
    X, y = _auc_data()
    pipes = [make_pipeline(
        DPStandardScaler(epsilon=0.1, delta=1e-7, bounds=(-1.0, 1.0), n_samples_budget=len(X),
                         accountant=ledger, random_state=seed),
        DPAUCMaximizer(epsilon=0.6, delta=1.1e-6, data_norm=10.0, n_samples_budget=len(X),
                       accountant=ledger, random_state=seed, composed_with="pending"))
        for seed in (0, 1)]
    both_scaled, first_fitted, errors = threading.Barrier(2), threading.Event(), []

    def fold(k):  # both scalers are charged, then fold 0 fits, then fold 1
        try:
            pipes[k][0].fit(X)
            both_scaled.wait(timeout=60)
            if k == 1:
                first_fitted.wait(timeout=60)
            pipes[k][1].fit(pipes[k][0].transform(X), y)
        except Exception as exc:  # reported below: a thread's error is not raised
            errors.append(exc)
        finally:
            if k == 0:
                first_fitted.set()

    threads = [threading.Thread(target=fold, args=(k,)) for k in (0, 1)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join(timeout=120)
    assert not errors
    for pipe in pipes:
        model = pipe[-1]
        assert model.privacy_spent_.epsilon == pytest.approx(0.5)
        gaussians = [c for c in model.calibration_.composed_with if c.startswith("gaussian")]
        assert len(gaussians) == 1
    assert ledger.total()[0] == pytest.approx(1.2)
