"""A search's folds and its choice of candidate, under the privacy charge.

IndependentFolds keeps each row's fold independent of the others; the search draws an
int cv with it and warns about splitters not known to be stable. selection_epsilon
makes the choice of the refitted candidate the exponential mechanism over the
candidates' correct validation counts (or correctly ordered pairs, for ROC AUC), charged
as one more entry.
"""

import warnings

import numpy as np
import pytest
from diffprivlib.accountant import BudgetAccountant
from diffprivlib.utils import PrivacyLeakWarning
from sklearn.model_selection import GridSearchCV, KFold, StratifiedKFold

from skdpminimax import DPAUCMaximizer, DPRobustClassifier
from skdpminimax.folds import IndependentFolds, unstable_folds_reason
from skdpminimax.search import PrivateSearchCV, charge_search, search_budgets
from skdpminimax.selection import ExponentialSelection, fold_pair_counts
from skdpminimax.solvers import NoisySGDA

GRID = {"alpha": [1e-3, 1.0]}


@pytest.fixture(scope="module")
def data(binary_data):
    return binary_data


def model(sampler="poisson"):
    return DPAUCMaximizer(epsilon=1.0, delta=1e-5, data_norm=3.0, pos_ratio=0.5,
                          solver=NoisySGDA(batch_size=16, n_iter=10, sampler=sampler))


def accuracy_search(estimator=None, cv=2, **params):
    return GridSearchCV(estimator if estimator is not None else model(), GRID, cv=cv,
                        scoring="accuracy", **params)


# ---- IndependentFolds ------------------------------------------------------------------

def test_independent_folds_partition_the_rows():
    folds = list(IndependentFolds(4, random_state=3).split(np.zeros((500, 2))))
    assert len(folds) == 4
    tests = np.concatenate([test for _, test in folds])
    assert np.array_equal(np.sort(tests), np.arange(500))  # each row tested exactly once
    for train, test in folds:
        assert np.array_equal(np.sort(np.concatenate([train, test])), np.arange(500))
    # uniform draws: each fold's size is Binomial(500, 1/4), sd ~9.7
    assert all(abs(len(test) - 125) < 45 for _, test in folds)


def test_independent_folds_seed_and_fresh_draws():
    X = np.zeros((200, 1))
    first = [test for _, test in IndependentFolds(3, random_state=0).split(X)]
    again = [test for _, test in IndependentFolds(3, random_state=0).split(X)]
    assert all(np.array_equal(a, b) for a, b in zip(first, again))
    fresh = IndependentFolds(3)
    one, two = ([test for _, test in fresh.split(X)] for _ in range(2))
    assert not all(np.array_equal(a, b) for a, b in zip(one, two))


def test_independent_folds_refuse_bad_input():
    with pytest.raises(ValueError, match="empty fold"):
        list(IndependentFolds(5, random_state=0).split(np.zeros((2, 1))))
    for bad in (1, 2.0, True):
        with pytest.raises(ValueError, match="n_splits"):
            IndependentFolds(bad)
    with pytest.raises(ValueError, match="random_state"):
        IndependentFolds(2, random_state=np.random.RandomState(0))


def test_kfold_moves_a_second_row_when_one_is_removed():
    """Why KFold is flagged under add/remove-one: without row 0, the second fold's
    training set gains row 5, which was not changed."""
    rows = np.arange(10)
    train_full = [set(rows[tr]) for tr, _ in KFold(2).split(rows)]
    train_less = [set(rows[1:][tr]) for tr, _ in KFold(2).split(rows[1:])]
    assert len(train_full[1] ^ train_less[1]) == 2
    assert unstable_folds_reason(KFold(2), add_remove=True) is not None


def test_which_splitters_are_stable():
    assert unstable_folds_reason(IndependentFolds(3), add_remove=True) is None
    assert unstable_folds_reason(IndependentFolds(3), add_remove=False) is None
    assert unstable_folds_reason(IndependentFolds(3, random_state=0), add_remove=False) is None
    assert "fixed random_state" in unstable_folds_reason(IndependentFolds(3, random_state=0),
                                                         add_remove=True)
    assert unstable_folds_reason(KFold(3, shuffle=True, random_state=0), add_remove=False) is None
    assert unstable_folds_reason(StratifiedKFold(3), add_remove=False) is not None


# ---- the search's folds ------------------------------------------------------------------

@pytest.mark.parametrize("cv", [2, None])
def test_an_int_cv_is_drawn_as_independent_folds(data, cv):
    X, y = data
    prepaid = charge_search(accuracy_search(cv=cv), X, y, accountant=BudgetAccountant(),
                            selection_epsilon=1.0)
    assert isinstance(prepaid.cv.splitter, IndependentFolds)
    assert prepaid.cv.splitter.n_splits == (5 if cv is None else cv)
    tests = np.sort(np.concatenate([test for _, test in prepaid.cv.split(X)]))
    assert np.array_equal(tests, np.arange(len(X)))


def test_an_unstable_splitter_warns(data):
    X, y = data
    with pytest.warns(PrivacyLeakWarning, match="KFold cuts the rows"):
        charge_search(accuracy_search(cv=KFold(2)), X, y, accountant=BudgetAccountant(),
                      selection_epsilon=1.0)
    with pytest.warns(PrivacyLeakWarning, match="StratifiedKFold is not known"):
        charge_search(accuracy_search(model("without_replacement"), cv=StratifiedKFold(2)),
                      X, y, accountant=BudgetAccountant(), selection_epsilon=1.0)
    # replace-one fits keep their positions under KFold: no warning at all
    with warnings.catch_warnings():
        warnings.simplefilter("error", PrivacyLeakWarning)
        charge_search(accuracy_search(model("without_replacement"), cv=KFold(2)), X, y,
                      accountant=BudgetAccountant(), selection_epsilon=1.0)


class _UsersSolver:
    """A solver of the user's (Poisson batches inside, add/remove-one): its relation
    cannot be read from settings it does not have."""

    def __init__(self):
        self.inner = NoisySGDA(batch_size=16, n_iter=10)

    def calibrate(self, objective, n_samples, budget):
        return self.inner.calibrate(objective, n_samples, budget)

    def solve(self, objective, data, budget, rng, *, init=None):
        return self.inner.solve(objective, data, budget, rng, init=init)


def test_a_users_solver_under_kfold_warns_as_add_remove_one(data):
    """A review: a user's add/remove-one solver was taken for replace-one, so KFold's
    shifted folds got no warning. Its relation is unknown: the check fails closed."""
    X, y = data
    users = DPAUCMaximizer(epsilon=1.0, delta=1e-5, data_norm=3.0, pos_ratio=0.5,
                           solver=_UsersSolver())
    with pytest.warns(PrivacyLeakWarning, match="KFold cuts the rows"):
        charge_search(accuracy_search(users, cv=KFold(2)), X, y,
                      accountant=BudgetAccountant(), selection_epsilon=1.0)


# ---- the choice ----------------------------------------------------------------------------

def test_a_noise_free_choice_warns_and_refit_false_does_not(data):
    X, y = data
    with pytest.warns(PrivacyLeakWarning, match="noise-free validation scores"):
        charge_search(accuracy_search(), X, y, accountant=BudgetAccountant())
    with warnings.catch_warnings():
        warnings.filterwarnings("error", "The search chooses", PrivacyLeakWarning)
        warnings.filterwarnings("ignore", "The search's scores", PrivacyLeakWarning)
        charge_search(accuracy_search(refit=False), X, y, accountant=BudgetAccountant())


@pytest.mark.parametrize("params", [dict(refit=False), dict(return_train_score=True)])
def test_kept_scores_warn_that_they_are_not_private(data, params):
    """A charged cross-validation's output is its scores: noise-free reads of the
    private rows (a reviewer found refit=False silent, and train scores undocumented)."""
    X, y = data
    with pytest.warns(PrivacyLeakWarning, match="computed without noise"):
        charge_search(accuracy_search(**params), X, y, accountant=BudgetAccountant(),
                      **({} if params.get("refit") is False else {"selection_epsilon": 1.0}))
    with warnings.catch_warnings():
        warnings.simplefilter("error", PrivacyLeakWarning)
        charge_search(accuracy_search(), X, y, accountant=BudgetAccountant(),
                      selection_epsilon=1.0)


def test_the_choice_is_charged_one_more_entry(data):
    X, y = data
    ledger = BudgetAccountant()
    search = PrivateSearchCV(accuracy_search(), accountant=ledger, selection_epsilon=0.25)
    search.fit(X, y)
    assert ledger.spent_budget == [(1.0, 1e-5)] * 5 + [(0.25, 0)]
    budgets = search_budgets(accuracy_search(), X, y, selection_epsilon=0.25)
    assert [(b.epsilon, b.delta) for b in budgets] == ledger.spent_budget
    assert isinstance(search.search_.refit, ExponentialSelection)
    assert not hasattr(search, "best_score_")  # a callable refit sets none
    assert search.best_params_ in [{"alpha": a} for a in GRID["alpha"]]
    assert search.predict(X).shape == (len(X),)


@pytest.mark.parametrize("change, match", [
    (dict(refit=False), "refit=True"),
    (dict(scoring="balanced_accuracy"), "scoring"),
])
def test_a_choice_the_search_cannot_make_is_refused_before_the_charge(data, change, match):
    X, y = data
    ledger = BudgetAccountant()
    search = GridSearchCV(model(), GRID, cv=2, **{"scoring": "accuracy", **change})
    with pytest.raises(ValueError, match=match):
        PrivateSearchCV(search, accountant=ledger, selection_epsilon=1.0).fit(X, y)
    with pytest.raises(ValueError, match=match):
        search_budgets(search, X, y, selection_epsilon=1.0)
    assert ledger.spent_budget == []


def test_a_private_choice_between_regressors_is_refused_as_such():
    """A user probe: the refusal read 'None means accuracy for a classifier' without
    saying that no regressor's score can be chosen privately."""
    from sklearn.datasets import make_regression

    from skdpminimax import DPGroupFairRegressor

    X, y = make_regression(n_samples=120, n_features=3, random_state=0)
    ledger = BudgetAccountant()
    for scoring in (None, "accuracy", "r2"):
        search = GridSearchCV(DPGroupFairRegressor(epsilon=1.0, data_norm=5.0,
                                                   bounds=(-300, 300)),
                              {"alpha": [1e-3, 1e-1]}, cv=2, scoring=scoring)
        with pytest.raises(ValueError, match="a private choice is for classifiers"):
            PrivateSearchCV(search, accountant=ledger, selection_epsilon=1.0).fit(
                X, y, sensitive_features=np.arange(120) % 2)
    assert ledger.spent_budget == []


@pytest.mark.parametrize("epsilon", [0.0, -1.0, np.inf, np.nan, True, "1"])
def test_a_bad_selection_epsilon_is_refused_before_the_charge(data, epsilon):
    X, y = data
    ledger = BudgetAccountant()
    with pytest.raises((ValueError, TypeError)):
        charge_search(accuracy_search(), X, y, accountant=ledger, selection_epsilon=epsilon)
    with pytest.raises((ValueError, TypeError)):
        PrivateSearchCV(accuracy_search(), accountant=ledger,
                        selection_epsilon=epsilon).fit(X, y)
    assert ledger.spent_budget == []


def test_utilities_count_correct_validation_rows():
    results = {"split0_test_score": np.array([0.5, 1.0, 0.0]),
               "split1_test_score": np.array([0.25, 0.875, 0.75])}
    selection = ExponentialSelection(1.0, [4, 8], np.random.default_rng(0))
    np.testing.assert_array_equal(selection.utilities(results), [2 + 2, 4 + 7, 0 + 6])
    # a failed fit or score has no count: one row can fail a whole fold
    results["split0_test_score"][2] = np.nan
    with pytest.raises(ValueError, match="failed"):
        selection.utilities(results)


def test_a_fold_that_fails_because_of_one_row_stops_the_private_choice():
    """A reviewer's case: log of a zero count fails every fit of one candidate on the
    folds that hold that row. Counted as 0 the candidate's utility fell from 94 to 0
    (sensitivity 1 assumed); the search now raises instead (error_score='raise')."""
    from sklearn.pipeline import Pipeline
    from sklearn.preprocessing import FunctionTransformer
    rng = np.random.default_rng(0)
    X = rng.poisson(3.0, size=(150, 3)).astype(float) + 1.0
    y = (X[:, 0] + rng.normal(size=150) > 4).astype(int)
    pipe = Pipeline([("f", FunctionTransformer(np.sqrt)),
                     ("clf", DPAUCMaximizer(epsilon=1.0, data_norm=6.0, pos_ratio=0.5,
                                            solver=NoisySGDA(batch_size=32, n_epochs=2)))])
    grid = GridSearchCV(pipe, {"f": [FunctionTransformer(np.sqrt), FunctionTransformer(np.log)]},
                        cv=3, scoring="accuracy")
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        search = PrivateSearchCV(grid, accountant=BudgetAccountant(),
                                 selection_epsilon=1.0).fit(X, y)
        assert search.search_.error_score == "raise"
        assert grid.error_score != "raise"  # the caller's search is left as it was
        X[0, 1] = 0.0
        with pytest.raises(ValueError):
            PrivateSearchCV(grid, accountant=BudgetAccountant(), selection_epsilon=1.0).fit(X, y)


def test_the_choice_follows_the_exponential_mechanism():
    """Frequencies of the chosen index against exp(epsilon u / 2) / Z, computed here."""
    results = {"split0_test_score": np.array([0.5, 0.6, 0.8]),
               "split1_test_score": np.array([0.5, 0.7, 0.6])}
    sizes = [10, 10]
    epsilon = 0.4
    utilities = np.array([10.0, 13.0, 14.0])
    expected = np.exp(epsilon * utilities / 2)
    expected /= expected.sum()
    selection = ExponentialSelection(epsilon, sizes, np.random.default_rng(7))
    draws = np.array([selection(results) for _ in range(6000)])
    freq = np.bincount(draws, minlength=3) / len(draws)
    # binomial sd <= 0.0065: five sd
    np.testing.assert_allclose(freq, expected, atol=0.033)
    # a large epsilon picks the best candidate
    sharp = ExponentialSelection(1e3, sizes, np.random.default_rng(0))
    assert {sharp(results) for _ in range(50)} == {2}


def test_one_row_moves_each_utility_by_at_most_one(data):
    """Given fitted fold models, removing one row (the other rows keep their folds)
    changes every candidate's count by at most 1: the mechanism's sensitivity."""
    X, y = data
    rng = np.random.default_rng(0)
    fold = rng.integers(3, size=len(X))
    models = [[DPRobustClassifier(epsilon=1.0, data_norm=3.0, alpha=a, random_state=k)
               .fit(X[fold != k], y[fold != k]) for k in range(3)] for a in (1e-3, 1.0)]

    def utilities(keep):
        sizes = [int(np.sum(keep & (fold == k))) for k in range(3)]
        results = {f"split{k}_test_score": np.array(
            [m[k].score(X[keep & (fold == k)], y[keep & (fold == k)]) for m in models])
            for k in range(3)}
        return ExponentialSelection(1.0, sizes, rng).utilities(results)

    everyone = np.ones(len(X), bool)
    full = utilities(everyone)
    for removed in range(0, len(X), 7):
        keep = everyone.copy()
        keep[removed] = False
        assert np.max(np.abs(utilities(keep) - full)) <= 1


# ---- the choice by ROC AUC -------------------------------------------------------------

def _pairs_in_order(scores, labels):
    """Mann-Whitney count, computed pair by pair: positive above negative 1, tie 1/2."""
    pos, neg = scores[labels == 1], scores[labels != 1]
    diff = pos[:, None] - neg[None, :]
    return float(np.sum(diff > 0) + 0.5 * np.sum(diff == 0))


def test_auc_utilities_are_ordered_pairs_over_fold_size_minus_one():
    rng = np.random.default_rng(4)
    y = rng.choice([-1, 1], size=60)
    folds = [(None, np.arange(0, 25)), (None, np.arange(25, 60))]
    scores = [np.round(rng.normal(size=60), 1), rng.normal(size=60)]  # the first with ties
    from sklearn.metrics import roc_auc_score
    results = {f"split{k}_test_score": np.array([roc_auc_score(y[test], s[test])
                                                 for s in scores])
               for k, (_, test) in enumerate(folds)}
    selection = ExponentialSelection(1.0, [25, 35], rng, scoring="roc_auc",
                                     pair_counts=fold_pair_counts(y, folds))
    expected = [sum(_pairs_in_order(s[test], y[test]) / (len(test) - 1) for _, test in folds)
                for s in scores]
    np.testing.assert_allclose(selection.utilities(results), expected, rtol=1e-12)


def test_one_row_moves_each_auc_utility_by_at_most_one(data):
    """Fitted fold models fixed; remove a row, or replace it by a row of the other class
    (its fold kept): every candidate's AUC utility moves by at most 1."""
    from sklearn.metrics import roc_auc_score
    X, y = data
    rng = np.random.default_rng(1)
    fold = rng.integers(3, size=len(X))
    models = [[DPAUCMaximizer(epsilon=1.0, data_norm=3.0, pos_ratio=0.5, alpha=a,
                              random_state=k).fit(X[fold != k], y[fold != k])
               for k in range(3)] for a in (1e-3, 1.0)]
    margins = [[m.decision_function(X) for m in candidate] for candidate in models]

    def utilities(keep, labels):
        folds = [(None, np.flatnonzero(keep & (fold == k))) for k in range(3)]
        results = {f"split{k}_test_score": np.array(
            [roc_auc_score(labels[test], m[k][test]) for m in margins])
            for k, (_, test) in enumerate(folds)}
        return ExponentialSelection(1.0, [len(t) for _, t in folds], rng, scoring="roc_auc",
                                    pair_counts=fold_pair_counts(labels, folds)
                                    ).utilities(results)

    everyone = np.ones(len(X), bool)
    full = utilities(everyone, y)
    largest = 0.0
    for row in range(0, len(X), 5):
        keep = everyone.copy()
        keep[row] = False
        flipped = y.copy()
        flipped[row] = y.max() if y[row] == y.min() else y.min()
        for moved in (utilities(keep, y), utilities(everyone, flipped)):
            largest = max(largest, np.max(np.abs(moved - full)))
    assert largest <= 1.0
    assert largest > 0.1  # the rows do move it: the bound is not met vacuously


def test_a_search_chooses_by_auc_privately(data):
    X, y = data
    ledger = BudgetAccountant()
    grid = GridSearchCV(model(), GRID, cv=2, scoring="roc_auc")
    prepaid = charge_search(grid, X, y, accountant=ledger, selection_epsilon=0.5)
    assert ledger.spent_budget == [(1.0, 1e-5)] * 5 + [(0.5, 0)]
    selection = prepaid.refit
    assert isinstance(selection, ExponentialSelection) and selection.scoring == "roc_auc"
    assert selection.pair_counts.sum() <= np.sum(y == 1) * np.sum(y != 1)
    prepaid.fit(X, y)
    assert prepaid.best_params_ in [{"alpha": a} for a in GRID["alpha"]]
    assert selection.pair_counts is None  # dropped once the choice is made


def test_auc_choice_refuses_targets_that_are_not_binary_before_the_charge(data):
    X, y = data
    ledger = BudgetAccountant()
    three = np.where(np.arange(len(y)) % 3 == 0, 2, y)
    grid = GridSearchCV(DPRobustClassifier(epsilon=1.0, data_norm=3.0), GRID, cv=2,
                        scoring="roc_auc")
    with pytest.raises(ValueError, match="binary targets"):
        PrivateSearchCV(grid, accountant=ledger, selection_epsilon=0.5).fit(X, three)
    assert ledger.spent_budget == []
    with pytest.raises(ValueError, match="pair_counts"):
        ExponentialSelection(1.0, [3, 3], np.random.default_rng(0), scoring="roc_auc")


def test_auc_choice_counts_a_one_class_validation_fold_as_zero_pairs():
    """A probe's finding: a validation fold with one class scored NaN (older
    scikit-learn: an error) and stopped the choice after the whole search was charged,
    with a probability that depends on the private rows. Its count is 0 pairs."""
    rng = np.random.default_rng(0)
    X = rng.normal(size=(60, 3))
    y = np.zeros(60, int)
    y[:6] = 1
    X[y == 1] += 1.0
    for seed in range(50):  # folds where some validation fold has no positive
        folds = list(IndependentFolds(5, random_state=seed).split(X))
        pairs = fold_pair_counts(y, folds)
        if 0 in pairs and all(len(np.unique(y[train])) == 2 for train, _ in folds):
            break
    assert 0 in pairs
    ledger = BudgetAccountant()
    grid = GridSearchCV(model(), GRID, cv=IndependentFolds(5, random_state=seed),
                        scoring="roc_auc")
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", PrivacyLeakWarning)
        search = PrivateSearchCV(grid, accountant=ledger, selection_epsilon=0.5).fit(X, y)
    assert ledger.spent_budget == [(1.0, 1e-5)] * 11 + [(0.5, 0)]
    zero = int(np.flatnonzero(np.asarray(pairs) == 0)[0])
    assert np.all(search.cv_results_[f"split{zero}_test_score"] == 0.0)
    # The mechanism counts such a fold as 0 even from a NaN score.
    selection = ExponentialSelection(1.0, [len(t) for _, t in folds], rng,
                                     scoring="roc_auc", pair_counts=pairs)
    results = {f"split{k}_test_score": np.array([np.nan if pairs[k] == 0 else 0.5] * 2)
               for k in range(5)}
    expected = sum(p * 0.5 / (len(t) - 1) for p, (_, t) in zip(pairs, folds))
    np.testing.assert_allclose(selection.utilities(results), [expected] * 2)


def test_a_candidate_without_a_private_step_is_refused_before_the_charge(data):
    """A probe's finding: a grid over [private estimator, LogisticRegression] was charged
    for the private one only and could choose and refit the non-private one."""
    from sklearn.linear_model import LogisticRegression
    from sklearn.pipeline import Pipeline

    X, y = data
    ledger = BudgetAccountant()
    grid = GridSearchCV(Pipeline([("clf", model())]),
                        {"clf": [model(), LogisticRegression()]}, cv=2, scoring="accuracy")
    with pytest.raises(TypeError, match="hold no private estimator"):
        PrivateSearchCV(grid, accountant=ledger, selection_epsilon=0.5).fit(X, y)
    assert ledger.spent_budget == []


def test_default_scoring_of_a_classifier_search_is_the_accuracy_choice(data):
    """A user-style probe: scoring=None (scikit-learn's default, accuracy for a
    classifier) was refused with selection_epsilon."""
    X, y = data
    ledger = BudgetAccountant()
    grid = GridSearchCV(model(), GRID, cv=2)
    search = PrivateSearchCV(grid, accountant=ledger, selection_epsilon=0.5).fit(X, y)
    assert search.search_.refit.scoring == "accuracy"
    assert ledger.spent_budget[-1] == (0.5, 0)
    assert search.best_params_ in [{"alpha": a} for a in GRID["alpha"]]
    from skdpminimax import DPGroupFairRegressor
    regression = GridSearchCV(DPGroupFairRegressor(epsilon=1.0, data_norm=3.0), GRID, cv=2)
    with pytest.raises(ValueError, match="scoring"):
        PrivateSearchCV(regression, accountant=ledger, selection_epsilon=0.5).fit(
            X, X[:, 0])
    assert len(ledger.spent_budget) == 6  # the classifier search only


def test_a_fitted_private_search_keeps_no_generator_of_its_choice(data):
    """A review: the exponential mechanism's generator stayed on the fitted search, so
    its pickle let anyone replay the draw the choice's epsilon rests on."""
    import pickle

    X, y = data
    wrapper = PrivateSearchCV(accuracy_search(), accountant=BudgetAccountant(),
                              selection_epsilon=1.0).fit(X, y)
    assert wrapper.search_.refit.rng is None
    assert b"PCG64" not in pickle.dumps(wrapper) and b"MT19937" not in pickle.dumps(wrapper)
