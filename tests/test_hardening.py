"""Bad input, numerical extremes and interrupted fits, for every estimator.

Every bad input gives a clear error before any budget is spent, and inputs are
never mutated. Estimators come from ``estimators_under_test.py``.
"""

import pickle
import warnings

import numpy as np
import pytest
import scipy.sparse as sp
from diffprivlib.accountant import BudgetAccountant
from diffprivlib.utils import BudgetError, PrivacyLeakWarning
from sklearn.exceptions import NotFittedError
from sklearn.utils.validation import check_is_fitted

from estimators_under_test import estimators_under_test

ESTIMATORS = estimators_under_test()
IDS = [name for name, _ in ESTIMATORS]


def data(n=40, d=3, seed=0):
    rng = np.random.default_rng(seed)
    X = rng.normal(size=(n, d))
    y = (X[:, 0] + 0.5 * rng.normal(size=n) > 0).astype(int)
    return X, y


def _nan():
    X, y = data()
    X[3, 1] = np.nan
    return X, y


def _inf():
    X, y = data()
    X[5, 0] = np.inf
    return X, y


def _obj():
    X, y = data()
    X = X.astype(object)
    X[0, 0] = "a"
    return X, y


BAD_INPUTS = {
    "nan": (_nan, ValueError, "NaN"),
    "inf": (_inf, ValueError, "infinity"),
    "empty": (lambda: (np.zeros((0, 3)), np.zeros(0, dtype=int)), ValueError, "0 sample"),
    "one-sample": (lambda: (np.ones((1, 3)), np.array([1])), ValueError, "minimum of 2"),
    "one-class": (lambda: (data()[0], np.ones(40, dtype=int)), ValueError, "2 classes"),
    "object-dtype": (_obj, ValueError, "could not convert"),
    "complex": (lambda: (data()[0] + 1j, data()[1]), ValueError, "Complex"),
    "length-mismatch": (lambda: (data()[0], data()[1][:-3]), ValueError, "inconsistent"),
    "sparse": (lambda: (sp.csr_matrix(data()[0]), data()[1]), TypeError, "dense data is required"),
    "no-features": (lambda: (np.zeros((40, 0)), data()[1]), ValueError, "feature"),
}


@pytest.mark.parametrize("name, factory", ESTIMATORS, ids=IDS)
@pytest.mark.parametrize("case", sorted(BAD_INPUTS))
def test_bad_input_fails_before_spending(name, factory, case):
    make, error, message = BAD_INPUTS[case]
    X, y = make()
    X0 = X.copy()
    y0 = np.array(y, copy=True)
    acc = BudgetAccountant()
    with pytest.raises(error, match=message):
        factory(accountant=acc).fit(X, y)
    assert acc.spent_budget == []
    if sp.issparse(X):
        assert (X != X0).nnz == 0
    else:
        np.testing.assert_array_equal(X, X0)
    np.testing.assert_array_equal(y, y0)


@pytest.mark.parametrize("name, factory", ESTIMATORS, ids=IDS)
@pytest.mark.parametrize("params", [{"epsilon": 0}, {"epsilon": -1.0}, {"epsilon": np.nan},
                                    {"delta": 0}, {"delta": 1.0}, {"delta": -1e-5},
                                    {"epsilon": "1"}])
def test_invalid_budget_fails_before_spending(name, factory, params):
    X, y = data()
    acc = BudgetAccountant()
    with pytest.raises((ValueError, TypeError)):
        factory(accountant=acc, **params).fit(X, y)
    assert acc.spent_budget == []


@pytest.mark.parametrize("name, factory", ESTIMATORS, ids=IDS)
def test_exhausted_budget_fails_before_spending(name, factory):
    X, y = data()
    acc = BudgetAccountant(epsilon=1.5, delta=1e-4)
    factory(accountant=acc).fit(X, y)
    spent = list(acc.spent_budget)
    assert len(spent) == 1
    with pytest.raises(BudgetError):
        factory(accountant=acc).fit(X, y)
    assert acc.spent_budget == spent


@pytest.mark.parametrize("name, factory", ESTIMATORS, ids=IDS)
def test_inputs_never_mutated(name, factory):
    X, y = data()
    X[0] *= 100.0  # a row beyond data_norm: clipped in a copy, not in place
    X0, y0 = X.copy(), y.copy()
    factory().fit(X, y)
    np.testing.assert_array_equal(X, X0)
    np.testing.assert_array_equal(y, y0)


@pytest.mark.parametrize("name, factory", ESTIMATORS, ids=IDS)
def test_reproducible_and_independent_of_global_random_state(name, factory):
    X, y = data()
    np.random.seed(0)
    a = factory(random_state=3).fit(X, y).decision_function(X)
    np.random.seed(12345)
    np.random.uniform(size=7)
    b = factory(random_state=3).fit(X, y).decision_function(X)
    c = factory(random_state=4).fit(X, y).decision_function(X)
    np.testing.assert_array_equal(a, b)
    assert not np.array_equal(a, c)


@pytest.mark.parametrize("name, factory", ESTIMATORS, ids=IDS)
def test_pickle_round_trip(name, factory):
    X, y = data()
    model = factory().fit(X, y)
    again = pickle.loads(pickle.dumps(model))
    np.testing.assert_array_equal(model.predict(X), again.predict(X))
    np.testing.assert_array_equal(model.decision_function(X), again.decision_function(X))


class _SolverCrash(RuntimeError):
    pass


@pytest.mark.parametrize("name, factory", ESTIMATORS, ids=IDS)
@pytest.mark.parametrize("refit", [False, True])
def test_interrupted_fit_is_charged_and_unfitted(name, factory, refit, monkeypatch):
    """Documented: the accountant is charged before data are touched, so a crash in
    the solver has spent the budget; the estimator is left unfitted (no half-set
    fitted attributes), even when it had been fitted before."""
    from skdpminimax.solvers import NoisySGDA

    X, y = data()
    acc = BudgetAccountant()
    model = factory(accountant=acc)
    if refit:
        model.fit(X, y)

    def crash(*args, **kwargs):
        raise _SolverCrash("boom")

    monkeypatch.setattr(NoisySGDA, "solve", crash)
    n_spent = len(acc.spent_budget)
    with pytest.raises(_SolverCrash):
        model.fit(X, y)
    assert len(acc.spent_budget) == n_spent + 1
    with pytest.raises(NotFittedError):
        check_is_fitted(model)


@pytest.mark.parametrize("name, factory", ESTIMATORS, ids=IDS)
@pytest.mark.parametrize("scale", [1e-300, 1e150, 1e300, 1e307])
@pytest.mark.parametrize("public_norm", [True, False])
def test_extreme_values_no_overflow(name, factory, scale, public_norm):
    X, y = data()
    X = X / np.abs(X).max() * scale  # finite, up to 1e307
    X0 = X.copy()
    params = {} if public_norm else {"data_norm": None}
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", PrivacyLeakWarning)
        model = factory(**params).fit(X, y)
    np.testing.assert_array_equal(X, X0)
    assert np.all(np.isfinite(model.coef_)) and np.all(np.isfinite(model.intercept_))
    assert np.all(np.isfinite(model.decision_function(X / scale)))
    if public_norm:
        assert model.data_norm_ == 3.0
    else:
        assert np.isfinite(model.data_norm_) and model.data_norm_ > 0


def test_huge_rows_are_clipped_to_the_norm_bound():
    from skdpminimax.privacy.mechanisms import clip_rows

    X = np.array([[1e307, 1e307], [3.0, 4.0], [1e-300, 0.0], [0.0, 0.0]])
    out = clip_rows(X, 2.0)
    np.testing.assert_allclose(np.linalg.norm(out[:2], axis=1), [2.0, 2.0])
    np.testing.assert_array_equal(out[2:], X[2:])  # inside the ball: unchanged
    np.testing.assert_allclose(out[0], [np.sqrt(2.0), np.sqrt(2.0)])


@pytest.mark.parametrize("name, factory", ESTIMATORS, ids=IDS)
def test_float32_input(name, factory):
    X, y = data()
    m32 = factory().fit(X.astype(np.float32), y)
    m64 = factory().fit(X.astype(np.float32).astype(np.float64), y)
    np.testing.assert_allclose(m32.decision_function(X.astype(np.float32)),
                               m64.decision_function(X.astype(np.float32)))
    assert m32.coef_.dtype == np.float64


