"""Hyperparameter search: the budget is charged once per fit, wherever the fits run."""

import copy
import pickle
import warnings

import numpy as np
import pytest
from diffprivlib.accountant import BudgetAccountant
from diffprivlib.utils import BudgetError, PrivacyLeakWarning
from sklearn import config_context
from sklearn.base import clone
from sklearn.model_selection import GridSearchCV, GroupKFold, KFold, RandomizedSearchCV
from sklearn.pipeline import make_pipeline
from sklearn.preprocessing import FunctionTransformer

from skdpminimax import (DPAUCMaximizer, DPGroupFairRegressor, DPRobustClassifier,
                         DPStandardScaler)
from skdpminimax.privacy.ledger import LostLedgerError, PrepaidLedger
from skdpminimax.search import PrivateSearchCV, charge_search, search_budgets
from skdpminimax.solvers import NoisySGDA

GRID = {"alpha": [1e-3, 1.0]}
CV = 2


@pytest.fixture(scope="module")
def data(binary_data):
    return binary_data


# The searches below fix random_state for reproducible assertions; the warning that
# this voids the composition is tested on its own (test_fixed_seed_in_a_search_warns).
pytestmark = pytest.mark.filterwarnings("ignore:A private estimator of this search")


def model(**params):
    defaults = dict(epsilon=1.0, delta=1e-5, data_norm=3.0, pos_ratio=0.5,
                    solver=NoisySGDA(batch_size=16, n_iter=10), random_state=0)
    return DPAUCMaximizer(**{**defaults, **params})


def grid_search(estimator=None, grid=GRID, n_jobs=1, cv=CV, **params):
    return GridSearchCV(estimator if estimator is not None else model(), grid, cv=cv,
                        scoring="roc_auc", n_jobs=n_jobs, **params)


def expected_entries(grid=GRID, epsilon=1.0, delta=1e-5, refit=True):
    n_candidates = int(np.prod([len(v) for v in grid.values()]))
    return [(epsilon, delta)] * (n_candidates * CV + int(refit))


def test_search_budgets_counts_candidates_splits_and_refit(data):
    X, y = data
    budgets = search_budgets(grid_search(), X, y)
    assert [(b.epsilon, b.delta) for b in budgets] == expected_entries()
    no_refit = search_budgets(grid_search(refit=False), X, y)
    assert len(no_refit) == len(budgets) - 1


def test_search_budgets_follow_candidate_epsilons(data):
    X, y = data
    grid = {"epsilon": [0.5, 2.0], "delta": [1e-6, 1e-5]}
    budgets = [(b.epsilon, b.delta) for b in search_budgets(grid_search(grid=grid), X, y)]
    per_fit = [(e, d) for e in grid["epsilon"] for d in grid["delta"] for _ in range(CV)]
    assert sorted(budgets[:-1]) == sorted(per_fit)
    assert budgets[-1] == (2.0, 1e-5)  # the refit covers every candidate


def _record_replayed_folds(monkeypatch):
    """The folds a charged search replays (its pinned, checked folds), as a list of
    ``(train, test)`` filled while it runs: the fitted search keeps only the splitter."""
    from skdpminimax.search import _CheckedFolds

    replayed = []
    original_split = _CheckedFolds.split

    def recording_split(self, *args, **kwargs):
        replayed.clear()
        for train, test in original_split(self, *args, **kwargs):
            replayed.append((train.copy(), test.copy()))
            yield train, test

    monkeypatch.setattr(_CheckedFolds, "split", recording_split)
    return replayed


@pytest.mark.parametrize("n_jobs", [1, 2])
def test_private_search_charges_once_per_fit(data, n_jobs, monkeypatch):
    X, y = data
    ledger = BudgetAccountant()
    replayed = _record_replayed_folds(monkeypatch)
    search = PrivateSearchCV(grid_search(n_jobs=n_jobs), accountant=ledger).fit(X, y)
    assert ledger.spent_budget == expected_entries()
    assert [(b.epsilon, b.delta) for b in search.privacy_spent_] == expected_entries()
    # the fits spent on the prepaid ledger, never again on the caller's (the equality
    # above); the refit model leaves holding the caller's ledger, so a later fit of it
    # is charged there
    assert search.best_estimator_.accountant is ledger
    assert not isinstance(search.search_.best_estimator_.accountant, PrepaidLedger)
    # The int cv was drawn as IndependentFolds; the reference replays those folds.
    reference = grid_search(cv=replayed).fit(X, y)
    assert search.best_params_ == reference.best_params_
    np.testing.assert_allclose(search.cv_results_["mean_test_score"],
                               reference.cv_results_["mean_test_score"])
    np.testing.assert_allclose(search.decision_function(X), reference.decision_function(X))


def test_private_search_uses_the_estimators_shared_accountant(data):
    X, y = data
    ledger = BudgetAccountant()
    pipe = make_pipeline(FunctionTransformer(), model(accountant=ledger))
    grid = {"dpaucmaximizer__alpha": GRID["alpha"]}
    PrivateSearchCV(grid_search(pipe, grid=grid)).fit(X, y)
    assert ledger.spent_budget == expected_entries()


def test_estimators_in_the_grid_are_prepaid_too(data):
    X, y = data
    ledger = BudgetAccountant()
    grid = {"est": [model(accountant=ledger), model(epsilon=0.5, accountant=ledger)]}
    pipe = make_pipeline(FunctionTransformer())
    pipe.steps.append(("est", model(accountant=ledger)))
    PrivateSearchCV(grid_search(pipe, grid=grid, n_jobs=2)).fit(X, y)
    assert sorted(ledger.spent_budget) == sorted([(0.5, 1e-5)] * CV + [(1.0, 1e-5)] * (CV + 1))


def test_charge_is_all_or_nothing(data):
    X, y = data
    ledger = BudgetAccountant(epsilon=3.0, delta=1e-3)  # 5 fits of epsilon 1 do not fit
    with pytest.raises(BudgetError, match="Nothing was spent"):
        charge_search(grid_search(), X, y, accountant=ledger)
    assert ledger.spent_budget == []
    # the message gives the search's own total, then with what was spent before
    ledger = BudgetAccountant(epsilon=6.0, delta=1e-3)
    ledger.spend(2.0, 0.0)
    with pytest.raises(BudgetError, match=r"totalling \(5\.0, [^)]*\) on their own, \(7\.0"):
        charge_search(grid_search(), X, y, accountant=ledger)
    assert ledger.spent_budget == [(2.0, 0.0)]


def test_prepaid_ledger_refuses_a_fit_it_did_not_prepay(data):
    X, y = data
    prepaid = charge_search(grid_search(), X, y, accountant=BudgetAccountant())
    greedy = prepaid.estimator.set_params(epsilon=5.0)
    with pytest.raises(BudgetError, match="does not cover it"):
        greedy.fit(X, y)


def test_prepaid_ledger_is_consumed_and_closed(data):
    # In one process the prepaid entries are consumed: fits beyond them are refused,
    # and the ledger is closed once its search has run.
    X, y = data
    ledger = BudgetAccountant()
    prepaid = charge_search(grid_search(), X, y, accountant=ledger)
    for _ in range(len(ledger.spent_budget)):  # 2 x 2 fits + 1 refit, all of epsilon 1
        clone(prepaid.estimator).fit(X, y)
    with pytest.raises(BudgetError, match="does not cover it"):
        clone(prepaid.estimator).fit(X, y)
    search = PrivateSearchCV(grid_search(), accountant=ledger).fit(X, y)
    with pytest.raises(BudgetError, match="closed"):
        clone(search.search_.estimator).fit(X, y)


def test_a_prepaid_ledger_is_not_the_callers(data):
    X, y = data
    ledger = BudgetAccountant()
    prepaid = charge_search(grid_search(), X, y, accountant=ledger)
    spent = list(ledger.spent_budget)
    with pytest.raises(ValueError, match="prepaid ledger"):
        PrivateSearchCV(prepaid).fit(X, y)  # inferred from its estimators
    with pytest.raises(ValueError, match="prepaid ledger"):
        PrivateSearchCV(grid_search(), accountant=prepaid.estimator.accountant).fit(X, y)
    assert ledger.spent_budget == spent


def test_randomized_search_needs_int_random_state(data):
    X, y = data
    search = RandomizedSearchCV(model(), {"alpha": [1e-3, 1e-2, 1.0]}, n_iter=2, cv=CV)
    with pytest.raises(ValueError, match="int random_state"):
        search_budgets(search, X, y)
    search.set_params(random_state=0)
    ledger = BudgetAccountant()
    PrivateSearchCV(search, accountant=ledger).fit(X, y)
    assert ledger.spent_budget == [(1.0, 1e-5)] * (2 * CV + 1)


def test_a_refused_charge_warns_of_nothing(data):
    """The search's privacy warnings are about its outputs: a search refused for its
    budget (nothing spent) has none, and gives none; the charged one gives them."""
    X, y = data
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        with pytest.raises(BudgetError, match="Nothing was spent"):
            charge_search(grid_search(), X, y, accountant=BudgetAccountant(epsilon=3.0))
    assert [str(w.message) for w in caught] == []
    with pytest.warns(PrivacyLeakWarning, match="noise-free validation scores"):
        charge_search(grid_search(), X, y, accountant=BudgetAccountant())


def test_composed_with_in_a_charged_search_warns_of_the_sum(data):
    """Inside a charged search composed_with is not applied (a prepaid ledger holds no
    pending release): each step is charged its own epsilon, which the search says."""
    X, y = data
    ledger = BudgetAccountant()
    pipe = make_pipeline(DPStandardScaler(epsilon=0.3, bounds=(-4.0, 4.0), random_state=0),
                         model(epsilon=1.3, composed_with="pending"))
    search = GridSearchCV(pipe, {}, cv=CV, refit=False, scoring="roc_auc")
    with pytest.warns(UserWarning, match="composed_with is not applied to "
                                         "dpaucmaximizer inside a charged search"):
        PrivateSearchCV(search, accountant=ledger).fit(X, y)
    assert ledger.total()[0] == pytest.approx(CV * (0.3 + 1.3))
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        PrivateSearchCV(grid_search(refit=False), accountant=BudgetAccountant()).fit(X, y)
    assert not [w for w in caught if "composed_with" in str(w.message)]


# ---- the guard: a plain search in other processes fails loudly ---------------------

@pytest.mark.parametrize("accountant", ["user", None])
def test_plain_parallel_search_refuses_to_lose_budget(data, accountant):
    X, y = data
    ledger = BudgetAccountant() if accountant == "user" else None
    search = grid_search(model(accountant=ledger), n_jobs=2, error_score="raise")
    with pytest.raises(LostLedgerError, match="budget would be lost"):
        search.fit(X, y)
    if ledger is not None:
        assert ledger.spent_budget == []


def test_plain_in_process_search_still_shares_the_ledger(data):
    X, y = data
    ledger = BudgetAccountant()
    grid_search(model(accountant=ledger)).fit(X, y)
    assert ledger.spent_budget == expected_entries()


def test_a_pickled_copy_of_the_ledger_is_refused_until_reattached(data):
    X, y = data
    ledger = BudgetAccountant()
    for copied in (pickle.loads(pickle.dumps(model(accountant=ledger))),
                   copy.deepcopy(model(accountant=ledger))):
        with pytest.raises(LostLedgerError, match="copy of your BudgetAccountant"):
            copied.fit(X, y)
        from sklearn.base import clone
        with pytest.raises(LostLedgerError):  # clones keep the stamp
            clone(copied).fit(X, y)
        copied.set_params(accountant=ledger).fit(X, y)
    assert ledger.spent_budget == [(1.0, 1e-5)] * 2


def test_a_shallow_copy_shares_the_ledger_and_spends_on_it(data):
    X, y = data
    ledger = BudgetAccountant()
    original = model(accountant=ledger)
    shallow = copy.copy(original)
    assert shallow.accountant is ledger
    shallow.fit(X, y)
    original.fit(X, y)
    assert ledger.spent_budget == [(1.0, 1e-5)] * 2
    stamped = pickle.loads(pickle.dumps(original))
    with pytest.raises(LostLedgerError):  # a shallow copy of a pickled copy is one too
        copy.copy(stamped).fit(X, y)


def test_default_ledger_in_this_process_after_pickling_is_fine(data):
    X, y = data
    again = pickle.loads(pickle.dumps(model()))
    assert again.fit(X, y).privacy_spent_.epsilon == 1.0


# ---- a Dask cluster ----------------------------------------------------------------

def test_dask_cluster_charges_once_per_fit(data, monkeypatch):
    distributed = pytest.importorskip("dask.distributed")
    from joblib import parallel_backend

    X, y = data
    ledger = BudgetAccountant()
    replayed = _record_replayed_folds(monkeypatch)  # split in this process
    with distributed.LocalCluster(n_workers=2, threads_per_worker=1, processes=True,
                                  dashboard_address=None) as cluster, \
            distributed.Client(cluster):
        with parallel_backend("dask"):
            search = PrivateSearchCV(grid_search(), accountant=ledger).fit(X, y)
            plain = grid_search(model(accountant=BudgetAccountant()), error_score="raise")
            with pytest.raises(LostLedgerError):
                plain.fit(X, y)
    assert ledger.spent_budget == expected_entries()
    assert search.best_params_ == grid_search(cv=replayed).fit(X, y).best_params_


def test_pickling_stamps_the_copy_never_the_original(data):
    # object.__getstate__ can hand back the live __dict__; the process stamp must land
    # on the pickled copy only, or deep copies made by metadata routing would turn the
    # caller's own estimator into a "lost ledger" (regression test).
    X, y = data
    ledger = BudgetAccountant()
    est = DPAUCMaximizer(epsilon=1.0, data_norm=5.0, pos_ratio=0.5, accountant=ledger,
                         random_state=0, solver=NoisySGDA(n_epochs=1))
    pickle.dumps(est)
    copy.deepcopy(est)
    est.fit(X, y)  # the original still spends on the caller's ledger
    assert len(ledger.spent_budget) == 1
    with pytest.raises(LostLedgerError):
        pickle.loads(pickle.dumps(est)).fit(X, y)


@pytest.mark.parametrize("where", ["estimator", "grid", "pipeline"])
def test_fixed_seed_in_a_search_warns(data, where):
    """Every fit of a search with a fixed seed draws the same noise: the composed charge
    does not hold, and the search says so; with random_state=None it does not warn."""
    X, y = data
    if where == "estimator":
        search = grid_search(model(random_state=0))
    elif where == "grid":
        search = grid_search(model(random_state=None), {"alpha": [1e-3], "random_state": [None, 3]})
    else:
        search = GridSearchCV(make_pipeline(FunctionTransformer(), model(random_state=0)),
                              {"dpaucmaximizer__alpha": [1e-3, 1e-2]}, cv=CV, scoring="roc_auc")
    with pytest.warns(PrivacyLeakWarning, match="fixed random_state"):
        charge_search(search, X, y, accountant=BudgetAccountant())
    clean = GridSearchCV(model(random_state=None), GRID, cv=CV, scoring="accuracy")
    with warnings.catch_warnings():
        warnings.simplefilter("error", PrivacyLeakWarning)
        charge_search(clean, X, y, accountant=BudgetAccountant(), selection_epsilon=1.0)


# ---- bad input is refused before the search is charged -----------------------------

def _sorted_y(y):
    return np.sort(y)  # unshuffled 2-fold: each training fold holds one class


def _nan_X(X):
    X = X.copy()
    X[4, 1] = np.nan
    return X


class _MiscountedKFold(KFold):
    def get_n_splits(self, X=None, y=None, groups=None):
        return 3


BAD_INPUT = {  # case: (search, X, y, fit parameters), the error it gets
    "nan in X": (lambda X, y: (grid_search(), _nan_X(X), y, {}), "NaN"),
    "one class in y": (lambda X, y: (grid_search(), X, np.ones_like(y), {}), "2 classes"),
    "y of the wrong length": (lambda X, y: (grid_search(), X, y[:-5], {}), "inconsistent"),
    "invalid parameter": (lambda X, y: (grid_search(model(radius=-1.0)), X, y, {}), "radius"),
    "invalid grid value": (lambda X, y: (grid_search(grid={"radius": [1.0, -1.0]}), X, y, {}),
                           "radius"),
    "a fit parameter fit does not take": (
        lambda X, y: (grid_search(), X, y, {"sample_weight": np.ones(len(y))}),
        r"\bfit\(\) got an unexpected keyword argument 'sample_weight'"),
    "one class in a training fold": (
        lambda X, y: (grid_search(cv=KFold(2)), X, _sorted_y(y), {}),
        r"split \d \(its training rows\).*2 classes"),
    "one class in a fold behind a transformer": (
        lambda X, y: (grid_search(make_pipeline(FunctionTransformer(), model()),
                                  {"dpaucmaximizer__alpha": GRID["alpha"]}, cv=KFold(2)),
                      X, _sorted_y(y), {}), r"split \d.*2 classes"),
    "splits that get_n_splits miscounts": (
        lambda X, y: (grid_search(cv=_MiscountedKFold(2)), X, y, {}), "gave 2 splits"),
    "one class behind a transformer": (
        lambda X, y: (grid_search(make_pipeline(FunctionTransformer(), model()),
                                  {"dpaucmaximizer__alpha": GRID["alpha"]}),
                      X, np.ones_like(y), {}), "2 classes"),
}


@pytest.mark.parametrize("case", BAD_INPUT)
@pytest.mark.parametrize("entry", ["PrivateSearchCV", "charge_search"])
def test_bad_input_is_refused_before_the_charge(data, case, entry):
    # Each burned the whole search's budget before (5 entries), the search failing
    # after the charge; charge_search did not look at the data at all.
    make, error = BAD_INPUT[case]
    search, X, y, params = make(*data)
    ledger = BudgetAccountant()
    with pytest.raises((ValueError, TypeError), match=error):
        if entry == "PrivateSearchCV":
            PrivateSearchCV(search, accountant=ledger).fit(X, y, **params)
        else:
            charge_search(search, X, y, accountant=ledger, **params)
    assert ledger.spent_budget == []


def test_check_fit_spends_and_changes_nothing(data):
    X, y = data
    ledger = BudgetAccountant()
    est = model(accountant=ledger).fit(X, y)
    fitted = {k: v for k, v in vars(est).items()}
    est._check_fit(X, np.where(y == 1, "b", "a"))  # passes; its classes_ are not kept
    with pytest.raises(ValueError, match="2 classes"):
        est._check_fit(X, np.ones_like(y))
    with pytest.raises(ValueError, match="2 classes"):  # X a stand-in: rows and y only
        est._check_fit(np.full((len(y), 7), np.nan), np.ones_like(y), rows_only=True)
    est._check_fit(np.full((len(y), 7), np.nan), y, rows_only=True)
    with pytest.raises(BudgetError):  # the accountant's remaining budget is checked too
        model(accountant=BudgetAccountant(epsilon=0.5))._check_fit(X, y)
    assert vars(est).keys() == fitted.keys()
    assert all(vars(est)[k] is v for k, v in fitted.items())
    assert ledger.spent_budget == [(1.0, 1e-5)]  # the fit's only


def _groups(n):
    return np.arange(n) % 2


def _robust(**params):
    return DPRobustClassifier(**{**dict(epsilon=1.0, delta=1e-5, data_norm=3.0,
                                        solver=NoisySGDA(batch_size=16, n_iter=10)), **params})


@pytest.mark.parametrize("routing", [False, True])
def test_sensitive_features_reach_the_checks_as_the_search_routes_them(data, routing):
    # group_ratios without sensitive_features is refused: a check that lost the routed
    # sensitive_features would refuse this valid search.
    X, y = data
    fair = DPGroupFairRegressor(epsilon=1.0, delta=1e-5, data_norm=3.0, bounds=(0.0, 1.0),
                                group_ratios=[0.5, 0.5],
                                solver=NoisySGDA(batch_size=16, n_iter=10))
    pipe = make_pipeline(FunctionTransformer(), fair)
    grid = {"dpgroupfairregressor__alpha": [1e-3, 1.0]}
    with config_context(enable_metadata_routing=routing):
        key = "sensitive_features" if routing else "dpgroupfairregressor__sensitive_features"
        ledger = BudgetAccountant()
        search = GridSearchCV(pipe, grid, cv=CV)
        PrivateSearchCV(search, accountant=ledger).fit(X, y, **{key: _groups(len(y))})
        assert len(ledger.spent_budget) == 2 * CV + 1
        with pytest.raises(ValueError, match="sensitive_features has 50 rows"):
            PrivateSearchCV(search, accountant=ledger).fit(X, y, **{key: _groups(50)})
        assert len(ledger.spent_budget) == 2 * CV + 1
        bare = GridSearchCV(_robust(), {"alpha": [1e-3]}, cv=CV)
        with pytest.raises(ValueError, match="sensitive_features has 50 rows"):
            charge_search(bare, X, y, accountant=ledger, sensitive_features=_groups(50))
        assert len(ledger.spent_budget) == 2 * CV + 1


@pytest.mark.parametrize("routing", [False, True])
def test_private_scaler_before_a_group_estimator_gets_its_routed_fit_params(data, routing):
    # Pipeline.fit fits an earlier step with fit_transform: under metadata routing its
    # parameters sit under fit_transform, not fit, and the checks of a private scaler
    # there crashed (AttributeError: fit) before the charge. The group estimator after
    # it still gets the routed sensitive_features (group_ratios refuses a fit without).
    X, y = data
    scaler = DPStandardScaler(epsilon=0.5, delta=1e-6, bounds=(-3.0, 3.0))
    pipe = make_pipeline(scaler, _robust(group_ratios=[0.5, 0.5]))
    grid = {"dprobustclassifier__alpha": [1e-3, 1.0]}
    with config_context(enable_metadata_routing=routing):
        key = "sensitive_features" if routing else "dprobustclassifier__sensitive_features"
        ledger = BudgetAccountant()
        with pytest.raises(ValueError, match="sensitive_features has 50 rows"):
            PrivateSearchCV(GridSearchCV(pipe, grid, cv=CV), accountant=ledger).fit(
                X, y, **{key: _groups(50)})
        assert ledger.spent_budget == []
        fitted = PrivateSearchCV(GridSearchCV(pipe, grid, cv=CV), accountant=ledger).fit(
            X, y, **{key: _groups(len(y))})
    per_fit = [(0.5, 1e-6), (1.0, 1e-5)]  # the scaler's, then the classifier's
    assert ledger.spent_budget[:-1] == per_fit * (2 * CV)
    assert ledger.spent_budget[-1] == pytest.approx((1.5, 1e-5 + 1e-6))  # the refit
    assert fitted.search_.best_params_["dprobustclassifier__alpha"] in (1e-3, 1.0)
    assert fitted.predict(X).shape == (len(y),)


def test_fold_checks_slice_the_fit_parameters_as_the_search_does(data):
    # Group 1 only in the first half of the rows: split 0 trains without it, and the
    # declared group_ratios (two groups) refuse that fold before the charge.
    X, y = data
    sensitive = np.r_[np.arange(30) % 2, np.zeros(30, dtype=int)]
    robust = _robust(group_ratios=[0.5, 0.5])
    ledger = BudgetAccountant()
    with pytest.raises(ValueError, match="split 0 .*1 groups"):
        charge_search(GridSearchCV(robust, {"alpha": [1e-3]}, cv=KFold(2)), X, y,
                      accountant=ledger, sensitive_features=sensitive)
    assert ledger.spent_budget == []
    balanced = np.arange(60) % 2  # both groups in every training fold: charged, fitted
    prepaid = charge_search(GridSearchCV(robust, {"alpha": [1e-3]}, cv=KFold(2)), X, y,
                            accountant=ledger, sensitive_features=balanced)
    prepaid.fit(X, y, sensitive_features=balanced)
    assert len(ledger.spent_budget) == 2 + 1


@pytest.mark.parametrize("routing", [False, True])
def test_group_splitters_get_their_groups_in_the_fold_checks(data, routing):
    X, y = data
    groups = np.repeat([0, 1], 30)  # GroupKFold(2) trains on one half: one class
    ledger = BudgetAccountant()
    with config_context(enable_metadata_routing=routing):
        search = grid_search(cv=GroupKFold(2))
        with pytest.raises(ValueError, match="split .*2 classes"):
            PrivateSearchCV(search, accountant=ledger).fit(X, _sorted_y(y), groups=groups)
        assert ledger.spent_budget == []
        PrivateSearchCV(search, accountant=ledger).fit(X, y, groups=np.arange(60) % 2)
        assert ledger.spent_budget == expected_entries()


@pytest.mark.parametrize("n_jobs", [1, 2])
def test_unseeded_shuffled_folds_are_the_checked_ones(data, n_jobs, monkeypatch):
    # KFold(shuffle=True) without a seed draws new folds at every split: the search
    # would have run folds that were never checked. The prepaid search replays the
    # checked folds; a seeded splitter is left as it is.
    X, y = data
    ledger = BudgetAccountant()
    splitter = KFold(2, shuffle=True)
    prepaid = charge_search(grid_search(cv=splitter, n_jobs=n_jobs), X, y,
                            accountant=ledger)
    pinned = prepaid.cv
    checked = list(pinned.split(X, y))
    assert len(checked) == 2
    assert not np.array_equal(checked[0][0], np.arange(30))  # shuffled
    replayed = _record_replayed_folds(monkeypatch)
    prepaid.fit(X, y)
    assert ledger.spent_budget == expected_entries()
    assert len(replayed) == 2 and all(
        np.array_equal(train, fold[0]) and np.array_equal(test, fold[1])
        for (train, test), fold in zip(replayed, checked))
    assert prepaid.cv_results_["split0_test_score"].shape == (2,)
    # Run, the search keeps the splitter, not the folds' indices (a privacy review)
    assert repr(prepaid.cv) == repr(splitter)
    # a seeded splitter's folds are replayed too (its own draws would be the same)
    seeded = KFold(2, shuffle=True, random_state=0)
    kept = charge_search(grid_search(cv=seeded), X, y, accountant=ledger).cv
    assert all(np.array_equal(a[0], b[0]) and np.array_equal(a[1], b[1])
               for a, b in zip(kept.split(X, y), seeded.split(X, y)))


class _CoincidesTwice(KFold):
    """An unseeded splitter whose first two draws happen to agree (on tiny data they
    can), and whose third does not."""

    def __init__(self, n_splits=2):
        super().__init__(n_splits, shuffle=True, random_state=None)
        self.draws = 0

    def split(self, X, y=None, groups=None):
        self.draws += 1
        rng = np.random.default_rng(0 if self.draws <= 2 else self.draws)
        order = rng.permutation(len(X))
        for test in np.array_split(order, self.n_splits):
            yield np.setdiff1d(order, test), np.sort(test)


def test_a_private_selection_always_replays_the_checked_folds(data, monkeypatch):
    """A review: folds were pinned only when two draws differed, so a splitter whose
    two draws coincided drew a third at the search's fit, whose sizes were not those
    the selection's sensitivity was computed for."""
    X, y = data
    splitter = _CoincidesTwice()
    search = GridSearchCV(model(random_state=None), GRID, cv=splitter, scoring="accuracy")
    prepaid = charge_search(search, X, y, accountant=BudgetAccountant(),
                            selection_epsilon=1.0)
    checked = list(prepaid.cv.split(X, y))
    replayed = _record_replayed_folds(monkeypatch)
    prepaid.fit(X, y)
    assert len(replayed) == 2 and all(
        np.array_equal(train, fold[0]) and np.array_equal(test, fold[1])
        for (train, test), fold in zip(replayed, checked))
    # without a private selection too (a later review: the unchecked third draw ran
    # after the charge; see test_a_search_fits_the_folds_it_checked_even_when...)
    kept = charge_search(GridSearchCV(model(random_state=None), GRID, cv=_CoincidesTwice(),
                                      scoring="accuracy"),
                         X, y, accountant=BudgetAccountant()).cv
    assert not isinstance(kept, _CoincidesTwice)


def test_drawing_the_folds_leaves_the_callers_random_state_alone(data):
    X, y = data
    rng = np.random.RandomState(0)
    state = rng.get_state()[1].copy()
    charge_search(grid_search(cv=KFold(2, shuffle=True, random_state=rng)), X, y,
                  accountant=BudgetAccountant())
    np.testing.assert_array_equal(rng.get_state()[1], state)


# ---- charge_search: the prepaid search closes its ledger ---------------------------

@pytest.mark.parametrize("n_jobs", [1, 2])
def test_a_charged_search_closes_its_ledger_and_hands_the_model_back(data, n_jobs):
    # With n_jobs=2 the workers consumed copies of the prepaid ledger and the
    # parent's copy kept 4 of the 5 entries: the refitted model could be fitted 4
    # more times, uncharged (regression test).
    X, y = data
    ledger = BudgetAccountant()
    prepaid = charge_search(grid_search(n_jobs=n_jobs), X, y, accountant=ledger)
    assert isinstance(prepaid, GridSearchCV)
    prepaid.fit(X, y)
    assert ledger.spent_budget == expected_entries()
    assert prepaid.best_estimator_.accountant is ledger
    clone(prepaid.best_estimator_).fit(X, y)  # charged to the caller
    assert ledger.spent_budget == expected_entries() + [(1.0, 1e-5)]
    with pytest.raises(BudgetError, match="closed"):
        clone(prepaid.estimator).fit(X, y)
    with pytest.raises(BudgetError, match="has run"):
        prepaid.fit(X, y)
    with pytest.raises(BudgetError, match="has run"):
        clone(prepaid).fit(X, y)
    assert len(ledger.spent_budget) == len(expected_entries()) + 1


def test_a_prepaid_ledger_travels_only_while_its_search_runs(data):
    # A copy made before the fit would hold every prepaid entry, to be spent apart
    # from the charged search; after the fit the copies are closed.
    X, y = data
    prepaid = charge_search(grid_search(), X, y, accountant=BudgetAccountant())
    with pytest.raises(TypeError, match="only while its search runs"):
        pickle.dumps(prepaid)
    prepaid.fit(X, y)
    again = pickle.loads(pickle.dumps(prepaid))
    with pytest.raises(BudgetError, match="closed"):
        clone(again.estimator).fit(X, y)


def test_charge_search_keeps_the_search_class(data):
    X, y = data
    randomized = RandomizedSearchCV(model(), {"alpha": [1e-3, 1.0]}, n_iter=2, cv=CV,
                                    random_state=0)
    prepaid = charge_search(randomized, X, y, accountant=BudgetAccountant())
    assert isinstance(prepaid, RandomizedSearchCV)
    assert prepaid.get_params(deep=False).keys() == randomized.get_params(deep=False).keys()

    class MySearch(GridSearchCV):  # may fit otherwise: not charged in advance
        pass

    with pytest.raises(TypeError, match="not subclasses"):
        charge_search(MySearch(model(), GRID), X, y, accountant=BudgetAccountant())


def test_a_pickled_copy_from_another_process_with_the_same_pid_is_refused(data, monkeypatch):
    """The stamp holds a per-process token as well as the pid: a worker elsewhere with the
    caller's pid (pid 1 in two containers) must not spend on its own default ledger."""
    from skdpminimax.privacy import ledger as ledger_module
    X, y = data
    copied = pickle.loads(pickle.dumps(model()))
    monkeypatch.setattr(ledger_module, "_PROCESS_TOKEN", "another-process")
    with pytest.raises(LostLedgerError, match="pickled in process"):
        copied.fit(X, y)


def test_spends_from_threads_never_exceed_the_budget():
    """A probe's finding: diffprivlib's spend checks, then records; fits in threads on one
    accountant could all pass the check (5 spends of epsilon 1 on an epsilon-4 ledger in
    3 of 30 trials). The library's spends hold a lock over both."""
    import sys
    import threading

    from diffprivlib.utils import BudgetError

    from skdpminimax.privacy.ledger import spend, spend_all

    interval = sys.getswitchinterval()
    sys.setswitchinterval(1e-6)
    try:
        for _ in range(100):  # unlocked: over budget in about 1 trial of 30
            ledger = BudgetAccountant(epsilon=4.0, delta=1e-3)
            barrier = threading.Barrier(8)

            def work(k):
                barrier.wait()
                try:
                    if k % 2:
                        spend(ledger, 1.0, 1e-5)
                    else:
                        spend_all(ledger, [(1.0, 1e-5)])
                except BudgetError:
                    pass

            threads = [threading.Thread(target=work, args=(k,)) for k in range(8)]
            for t in threads:
                t.start()
            for t in threads:
                t.join()
            assert len(ledger.spent_budget) == 4
    finally:
        sys.setswitchinterval(interval)


def test_a_prepaid_search_fitted_on_other_data_is_refused_and_keeps_its_charge(data):
    """A user-style probe: fitting a charged search on 300 of the rows it was charged
    for raised a raw IndexError from the replayed folds, after its ledger had opened,
    and the whole charge was lost (the correct fit was then refused as closed)."""
    X, y = data
    accountant = BudgetAccountant()
    search = GridSearchCV(DPAUCMaximizer(epsilon=0.5, data_norm=6.0, accountant=accountant,
                                         random_state=0),
                          {"alpha": [1e-4, 1e-2]}, cv=3)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", PrivacyLeakWarning)
        prepaid = charge_search(search, X, y, accountant=accountant)
    spent = list(accountant.spent_budget)
    for other, targets in ((X[:-10], y[:-10]), (X[:, :-1], y), (X, y[:-1])):
        with pytest.raises(ValueError, match="charged for data of shape"):
            prepaid.fit(other, targets)
    assert accountant.spent_budget == spent
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", PrivacyLeakWarning)
        prepaid.fit(X, y)  # the charge is still there
    assert hasattr(prepaid, "best_estimator_")
    assert accountant.spent_budget == spent


def test_an_estimator_with_another_accountant_than_the_search_is_refused(data):
    """A practitioner probe: the search re-pointed the estimator's own ledger A at the
    search's B, so A showed no spend for fits on its data, silently."""
    X, y = data
    own, given = BudgetAccountant(), BudgetAccountant()
    with pytest.raises(ValueError, match="has its own accountant"):
        PrivateSearchCV(grid_search(model(accountant=own)), accountant=given).fit(X, y)
    assert own.spent_budget == [] and given.spent_budget == []
    # the same ledger on both, or none on the estimator: charged as before
    PrivateSearchCV(grid_search(model(accountant=given)), accountant=given).fit(X, y)
    assert given.spent_budget == expected_entries()
    fresh = BudgetAccountant()
    PrivateSearchCV(grid_search(model()), accountant=fresh).fit(X, y)
    assert fresh.spent_budget == expected_entries()


def test_a_run_search_keeps_no_row_count_fold_indices_or_fold_counts(data):
    """A privacy review: a fitted PrivateSearchCV held the exact row count (the charged
    shape), the replayed folds' indices and the private choice's fold sizes and class
    pair counts, which its pickle would publish with the model."""
    X, y = data
    search = PrivateSearchCV(grid_search(cv=KFold(2, shuffle=True)),
                             accountant=BudgetAccountant(), selection_epsilon=1.0).fit(X, y)
    fitted = search.search_
    assert not hasattr(fitted, "_charged_shape")
    assert isinstance(fitted.cv, KFold)
    assert fitted.refit.test_sizes is None and fitted.refit.pair_counts is None
    assert "n_splits=2" in repr(fitted.refit)
    with pytest.raises(RuntimeError, match="chosen already"):
        fitted.refit(fitted.cv_results_)
    assert search.predict(X).shape == (len(X),)


class _AgreesTwiceThenDrifts:
    """An unseeded splitter as a privacy review scripted it: its first two draws agree
    (what happens by chance on tiny data), its third gives a training fold of one
    class. Only a search that replays its checked draw never meets the third. The
    count is shared by copies, as the entropy of an unseeded splitter is."""

    calls = [0]

    def get_n_splits(self, X=None, y=None, groups=None):
        return 2

    def split(self, X, y=None, groups=None):
        self.calls[0] += 1
        order = np.argsort(y, kind="stable") if self.calls[0] > 2 else np.arange(len(y))
        half = len(y) // 2
        yield order[half:], order[:half]
        yield order[:half], order[half:]


def test_a_search_fits_the_folds_it_checked_even_when_two_draws_agree(data):
    X, y = data
    ledger = BudgetAccountant()
    _AgreesTwiceThenDrifts.calls[0] = 0
    search = PrivateSearchCV(grid_search(cv=_AgreesTwiceThenDrifts()), accountant=ledger)
    search.fit(X, y)  # the third draw would fail fits: "needs 2 classes"
    assert np.all(np.isfinite(search.cv_results_["mean_test_score"]))
    assert ledger.spent_budget == expected_entries()


def test_composed_with_is_refused_on_an_accountant_with_slack(data):
    """The fit's entry under composed_with bounds the pair only; advanced composition
    (slack > 0) treats entries as bounds on their own (a privacy review)."""
    from skdpminimax import DPStandardScaler

    X, y = data
    ledger = BudgetAccountant(slack=1e-6)
    scaler = DPStandardScaler(epsilon=0.5, bounds=(-5.0, 5.0), accountant=ledger,
                              random_state=0).fit(X)
    est = model(epsilon=1.5, delta=2e-5, accountant=ledger, composed_with=[scaler.release_])
    with pytest.raises(ValueError, match="slack"):
        est.fit(scaler.transform(X), y)
    assert len(ledger.spent_budget) == 1  # the scaler's only


def test_single_pass_nseg_is_read_as_replace_one_whatever_its_sampler():
    """A privacy review: the search's relation heuristic read single-pass NSEG with
    sampler='poisson' as add/remove-one (it takes disjoint batches: replace-one)."""
    from skdpminimax import PrivacyBudget
    from skdpminimax.search import _relation_of_step
    from skdpminimax.solvers import NoisyExtragradient

    single = model(solver=NoisyExtragradient(sampler="poisson", batch_size=8))
    multi = model(solver=NoisyExtragradient(mode="multi_pass", sampler="poisson"))
    assert _relation_of_step(single) == "replace-one"
    assert _relation_of_step(multi) == "add/remove-one"
    calibration = single._resolve_solver().calibrate(
        single._make_objective(2, 3.0, {"pos_ratio": 0.5}), 200, PrivacyBudget(1.0, 1e-5))
    assert calibration.neighboring_relation == "replace-one"


@pytest.mark.parametrize("scoring, error", [
    (None, TypeError),            # no score method (task=None)
    ("roc_auc", ValueError),      # reads a classifier's output
    ("accuracy", ValueError),     # a classification metric
    ({"auc": "roc_auc", "r2": "r2"}, ValueError),
])
def test_a_scoring_every_fold_would_fail_is_refused_before_the_charge(data, scoring, error):
    """A search whose scorer cannot score the candidates charged the whole budget and
    then scored NaN (or raised in fit, for a missing score method)."""
    from test_custom_objective import CoupledMean

    from skdpminimax import DPSaddleEstimator

    X, y = data
    acc = BudgetAccountant()
    search = GridSearchCV(DPSaddleEstimator(CoupledMean, data_norm=3.0),
                          {"epsilon": [0.5, 1.0]}, scoring=scoring, cv=2)
    with pytest.raises(error, match="score"):
        charge_search(search, X, y, accountant=acc)
    with pytest.raises(error, match="score"):
        PrivateSearchCV(search, accountant=acc).fit(X, y)
    assert acc.spent_budget == []
    # a regression scorer scores it: charged
    charge_search(GridSearchCV(DPSaddleEstimator(CoupledMean, data_norm=3.0),
                               {"epsilon": [0.5, 1.0]}, scoring="r2", cv=2), X, y,
                  accountant=acc)
    assert len(acc.spent_budget) == 5
