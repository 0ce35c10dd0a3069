"""Bad input, numerical extremes and interrupted fits, for every estimator.

Every bad input gives a clear error before any budget is spent, a failed fit leaves
the estimator exactly as it was (unfitted, or with its previous fit), and inputs (``X``,
``y``, ``sensitive_features``) are never mutated.
Estimators come from ``estimators_under_test.py``.
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
from skdpminimax import DPStandardScaler

CASES = estimators_under_test()
IDS = [case.name for case in CASES]
cases = pytest.mark.parametrize("case", CASES, ids=IDS)


def _set(X, index, value):
    X = X.astype(object if isinstance(value, str) else float)
    X[index] = value
    return X


def _with_sf(kwargs, sf):
    return {**kwargs, "sensitive_features": sf}


# Each entry: case -> (X, y, fit kwargs) with the expected error, or None (not relevant).
def _bad_inputs(case):
    X, y, kw = case.data()
    n = X.shape[0]
    out = {
        "nan": ((_set(X, (3, 1), np.nan), y, kw), ValueError, "NaN"),
        "inf": ((_set(X, (5, 0), np.inf), y, kw), ValueError, "infinity"),
        "empty": ((X[:0], y[:0], {k: v[:0] for k, v in kw.items()}), ValueError, "0 sample"),
        "one-sample": ((X[:1], y[:1], {k: v[:1] for k, v in kw.items()}), ValueError,
                       "minimum of 2"),
        "object-dtype": ((_set(X, (0, 0), "a"), y, kw), ValueError,
                         "could not convert"),
        "complex": ((X + 1j, y, kw), ValueError, "Complex"),
        "length-mismatch-y": ((X, y[:-3], kw), ValueError, "inconsistent"),
        "no-features": ((np.zeros((n, 0)), y, kw), ValueError, "feature"),
        "nan-target": ((X, np.where(np.arange(n) == 2, np.nan, y.astype(float)), kw),
                       ValueError, "NaN"),
    }
    if case.make.__name__ == "DPSaddleEstimator":  # user objectives get dense arrays
        out["sparse"] = ((sp.csr_matrix(X), y, kw), TypeError, "dense data is required")
    else:  # sparse X is accepted (as CSR) and validated like dense X
        out["sparse-nan"] = ((sp.csr_matrix(_set(X, (3, 1), np.nan)), y, kw), ValueError,
                             "NaN")
        out["sparse-inf"] = ((sp.csc_matrix(_set(X, (5, 0), np.inf)), y, kw), ValueError,
                             "infinity")
    if case.is_classifier:
        out["one-class"] = ((X, np.ones(n, dtype=int), kw), ValueError, "2 classes")
        # labels that do not sort: numpy's bare TypeError from inside the label checks
        mixed = np.array([1 if i % 2 else "a" for i in range(n)], dtype=object)
        out["mixed-type-labels"] = ((X, mixed, kw), ValueError, "comparable")
    else:
        out["string-target"] = ((X, np.array(["u"] * n), kw), ValueError, "convert|numeric")
        # numbers as strings pass scikit-learn's NaN check; "inf" / "nan" become non-finite
        for word in ("inf", "nan"):
            text = np.where(np.arange(n) == 4, word, y.astype(str))
            out[f"string-{word}-target"] = ((X, text, kw), ValueError, "NaN or infinity")
    if case.task == "binary" and case.make.__name__ == "DPAUCMaximizer":
        out["three-classes"] = ((X, np.arange(n) % 3, kw), ValueError, "binary")
    if case.groups:
        sf = kw["sensitive_features"]
        out["length-mismatch-groups"] = ((X, y, _with_sf(kw, sf[:-2])), ValueError,
                                         "sensitive_features has")
        out["nan-groups"] = ((X, y, _with_sf(kw, np.where(np.arange(n) == 1, np.nan, 0.0))),
                             ValueError, "NaN")
        if case.make.__name__ != "DPSaddleEstimator":  # a custom objective may take one group
            out["single-group"] = ((X, y, _with_sf(kw, np.full(n, "a"))), ValueError,
                                   "at least 2 groups|no training samples")
    if case.group_ratios:
        out["unseen-group"] = ((X, y, _with_sf(kw, np.where(sf == "a", "c", sf))), ValueError,
                               "not in group_ratios")
        three = np.array(["a", "b", "b", "c"] * (n // 4))
        out["unseen-group-of-three"] = ((X, y, _with_sf(kw, three)), ValueError,
                                        "not in group_ratios")
        out["empty-group"] = ((X, y, _with_sf(kw, np.full(n, "b").astype(object))),
                              ValueError, "no training samples|at least 2 groups")
    return out


BAD_CASES = [(case, name) for case in CASES for name in sorted(_bad_inputs(case))]


def _copy(value):
    if sp.issparse(value):
        return value.copy()
    return np.array(value, copy=True)


def _assert_same(a, b):
    if sp.issparse(a):  # NaN-aware: the sparse NaN cases must compare equal to themselves
        assert a.format == b.format and a.shape == b.shape
        np.testing.assert_array_equal(a.toarray(), b.toarray())
    else:
        np.testing.assert_array_equal(a, b)


@pytest.mark.parametrize("case, bad", BAD_CASES, ids=[f"{c.name}-{b}" for c, b in BAD_CASES])
def test_bad_input_fails_before_spending(case, bad):
    (X, y, kw), error, message = _bad_inputs(case)[bad]
    before = [_copy(X), _copy(y)] + [_copy(v) for v in kw.values()]
    acc = BudgetAccountant()
    model = case.factory(accountant=acc)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", UserWarning)  # e.g. "one group" of the regressor
        with pytest.raises(error, match=message):
            model.fit(X, y, **kw)
    assert acc.spent_budget == []
    for old, new in zip(before, [X, y, *kw.values()]):
        _assert_same(old, new)
    with pytest.raises(NotFittedError):
        check_is_fitted(model)


@cases
@pytest.mark.parametrize("params", [{"epsilon": 0}, {"epsilon": -1.0}, {"epsilon": np.nan},
                                    {"delta": 0}, {"delta": 1.0}, {"delta": -1e-5},
                                    {"delta": np.nan}, {"epsilon": "1"},
                                    {"epsilon": 1e7}])  # spent, then overflowed the PLD
def test_invalid_budget_fails_before_spending(case, params):
    X, y, kw = case.data()
    acc = BudgetAccountant()
    with pytest.raises((ValueError, TypeError), match="epsilon|delta"):
        case.factory(accountant=acc, **params).fit(X, y, **kw)
    assert acc.spent_budget == []


@cases
def test_exhausted_budget_fails_before_spending(case):
    X, y, kw = case.data()
    acc = BudgetAccountant(epsilon=1.5, delta=1e-4)
    case.factory(accountant=acc).fit(X, y, **kw)
    spent = list(acc.spent_budget)
    assert len(spent) == 1
    model = case.factory(accountant=acc)
    with pytest.raises(BudgetError):
        model.fit(X, y, **kw)
    assert acc.spent_budget == spent
    with pytest.raises(NotFittedError):
        check_is_fitted(model)


@cases
def test_a_refit_beyond_the_budget_says_that_it_spends_again(case):
    # Fitting a fitted estimator again is a new release: the refusal says so, and what
    # the ledger holds (diffprivlib's message said only "not permissible"). A fresh
    # estimator's refusal says that every fit spends. Nothing is spent, the first fit
    # stays in place.
    X, y, kw = case.data()
    acc = BudgetAccountant(epsilon=1.5, delta=1e-4)
    model = case.factory(accountant=acc).fit(X, y, **kw)
    coef = {k: v for k, v in vars(model).items() if k.endswith("_")}
    with pytest.raises(BudgetError, match=r"1 entry.*fitted before: fitting it again is a "
                                          r"new release and spends its \(epsilon, delta\) "
                                          r"again.*Nothing was spent"):
        model.fit(X, y, **kw)
    assert len(acc.spent_budget) == 1
    assert set(coef) == {k for k in vars(model) if k.endswith("_")}
    with pytest.raises(BudgetError, match="Every fit spends its own"):
        case.factory(accountant=acc).fit(X, y, **kw)
    assert len(acc.spent_budget) == 1


def test_a_scaler_refit_beyond_the_budget_says_that_it_spends_again():
    X = np.random.default_rng(0).uniform(-1, 1, size=(50, 3))
    acc = BudgetAccountant(epsilon=1.5, delta=1e-4)
    scaler = DPStandardScaler(epsilon=1.0, bounds=(-1, 1), accountant=acc,
                              random_state=0).fit(X)
    mean = scaler.mean_.copy()
    with pytest.raises(BudgetError, match="DPStandardScaler was fitted before.*spends"):
        scaler.fit(X)
    assert len(acc.spent_budget) == 1 and np.array_equal(scaler.mean_, mean)

@cases
def test_inputs_never_mutated(case):
    X, y, kw = case.data()
    X[0] *= 100.0  # a row beyond data_norm: clipped in a copy, not in place
    if not case.is_classifier:
        y = y.copy()
        y[1] = 1e3  # beyond the target bounds
    before = [X.copy(), y.copy()] + [v.copy() for v in kw.values()]
    case.factory().fit(X, y, **kw)
    for old, new in zip(before, [X, y, *kw.values()]):
        np.testing.assert_array_equal(old, new)


@cases
def test_reproducible_and_independent_of_global_random_state(case):
    X, y, kw = case.data()
    np.random.seed(0)
    a = case.output(case.factory(random_state=3).fit(X, y, **kw), X)
    np.random.seed(12345)
    np.random.uniform(size=7)
    b = case.output(case.factory(random_state=3).fit(X, y, **kw), X)
    c = case.output(case.factory(random_state=4).fit(X, y, **kw), X)
    np.testing.assert_array_equal(a, b)
    assert not np.array_equal(a, c)


@cases
def test_pickle_round_trip(case):
    X, y, kw = case.data()
    model = case.factory().fit(X, y, **kw)
    again = pickle.loads(pickle.dumps(model))
    np.testing.assert_array_equal(model.predict(X), again.predict(X))
    np.testing.assert_array_equal(case.output(model, X), case.output(again, X))


class _SolverCrash(RuntimeError):
    pass


def _state(model):
    """Every attribute of ``model`` (fitted or private), arrays as copies."""
    return {k: (np.array(v, copy=True) if isinstance(v, np.ndarray) else v)
            for k, v in vars(model).items()}


def _assert_same_state(before, model):
    after = vars(model)
    assert sorted(after) == sorted(before)
    for name, value in before.items():
        if isinstance(value, np.ndarray):
            np.testing.assert_array_equal(after[name], value)
        else:
            assert after[name] is value or after[name] == value, name


BAD_FOR_REFIT = ["nan", "length-mismatch-y", "nan-groups", "unseen-group"]


@pytest.mark.parametrize(
    "case, bad", [(c, b) for c, b in BAD_CASES if b in BAD_FOR_REFIT],
    ids=[f"{c.name}-{b}" for c, b in BAD_CASES if b in BAD_FOR_REFIT])
def test_bad_input_keeps_the_previous_fit(case, bad):
    """A fitted estimator given bad input raises and is left exactly as it was:
    every attribute (fitted and private) and its predictions."""
    X, y, kw = case.data()
    acc = BudgetAccountant()
    model = case.factory(accountant=acc).fit(X, y, **kw)
    before, output = _state(model), case.output(model, X)
    (Xb, yb, kwb), error, message = _bad_inputs(case)[bad]
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", UserWarning)
        with pytest.raises(error, match=message):
            model.fit(Xb, yb, **kwb)
    assert len(acc.spent_budget) == 1
    _assert_same_state(before, model)
    np.testing.assert_array_equal(case.output(model, X), output)


@cases
@pytest.mark.parametrize("refit", [False, True])
def test_interrupted_fit_is_charged_and_changes_nothing(case, refit, monkeypatch):
    """Documented: the accountant is charged before data are touched, so a crash in
    the solver has spent the budget, once; the estimator is left exactly as it was
    (unfitted, or with its previous fit; no half-set attributes)."""
    from skdpminimax.solvers import NoisySGDA

    X, y, kw = case.data()
    acc = BudgetAccountant()
    model = case.factory(accountant=acc)
    if refit:
        model.fit(X, y, **kw)
    before = _state(model)

    def crash(*args, **kwargs):
        raise _SolverCrash("boom")

    monkeypatch.setattr(NoisySGDA, "solve", crash)
    n_spent = len(acc.spent_budget)
    with pytest.raises(_SolverCrash):
        model.fit(X, y, **kw)
    assert len(acc.spent_budget) == n_spent + 1
    _assert_same_state(before, model)
    if not refit:
        with pytest.raises(NotFittedError):
            check_is_fitted(model)
    monkeypatch.undo()  # the estimator recovers: a later fit works
    case.output(model.fit(X, y, **kw), X)


def _released_numbers(model):
    """Every numeric fitted attribute, flattened."""
    parts = [np.ravel(np.asarray(value, dtype=float)) for name, value in vars(model).items()
             if name.endswith("_") and not name.startswith("_")
             and isinstance(value, (float, int, np.ndarray)) and not isinstance(value, bool)
             and np.asarray(value).dtype.kind in "fiu"]
    return np.concatenate(parts)


@cases
@pytest.mark.parametrize("scale, public_norm", [(1e-300, True), (1e150, True), (1e307, True),
                                                (1e-300, False), (1e140, False)])
def test_extreme_values_no_overflow(case, scale, public_norm):
    X, y, kw = case.data()
    X = X / np.abs(X).max() * scale  # finite, up to 1e307
    if not case.is_classifier:
        y = y / np.abs(y).max() * scale  # clipped to the public bounds
    X0, y0 = X.copy(), y.copy()
    params = {} if public_norm else {"data_norm": None}
    with warnings.catch_warnings():
        warnings.simplefilter("error", RuntimeWarning)  # no overflow / invalid value
        warnings.simplefilter("ignore", PrivacyLeakWarning)
        model = case.factory(**params).fit(X, y, **kw)
        out = case.output(model, X / scale)
    np.testing.assert_array_equal(X, X0)
    np.testing.assert_array_equal(y, y0)
    assert np.all(np.isfinite(_released_numbers(model)))
    assert np.all(np.isfinite(out))
    if public_norm:
        assert model.data_norm_ == 3.0
    else:
        assert np.isfinite(model.data_norm_) and model.data_norm_ > 0


@cases
@pytest.mark.parametrize("params, scale", [({"data_norm": None}, 1e300),
                                           ({"data_norm": 1e200}, 1.0)])
def test_unusable_norm_bound_fails_before_spending(case, params, scale):
    """A row-norm bound beyond MAX_DATA_NORM (from the data or public) would overflow
    the objectives' arithmetic: refused before anything is spent."""
    X, y, kw = case.data()
    acc = BudgetAccountant()
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", PrivacyLeakWarning)
        with pytest.raises(ValueError, match="Rescale X"):
            case.factory(accountant=acc, **params).fit(X * scale, y, **kw)
    assert acc.spent_budget == []


def test_huge_rows_are_clipped_to_the_norm_bound():
    from skdpminimax.privacy.mechanisms import clip_rows

    X = np.array([[1e307, 1e307], [3.0, 4.0], [1e-300, 0.0], [0.0, 0.0]])
    out = clip_rows(X, 2.0)
    np.testing.assert_allclose(np.linalg.norm(out[:2], axis=1), [2.0, 2.0])
    np.testing.assert_array_equal(out[2:], X[2:])  # inside the ball: unchanged
    np.testing.assert_allclose(out[0], [np.sqrt(2.0), np.sqrt(2.0)])


@cases
def test_float32_input(case):
    X, y, kw = case.data()
    X32 = X.astype(np.float32)
    m32 = case.factory().fit(X32, y, **kw)
    m64 = case.factory().fit(X32.astype(np.float64), y, **kw)
    np.testing.assert_allclose(case.output(m32, X32), case.output(m64, X32))
    assert _released_numbers(m32).dtype == np.float64
    assert all(np.asarray(v).dtype != np.float32 for v in vars(m32).values()
               if isinstance(v, np.ndarray))


def _solver_configuration_errors():
    from skdpminimax import DPAUCMaximizer, DPRobustClassifier
    from skdpminimax.solvers import NoisySGDA

    small = {"batch_size": 8, "n_iter": 5}
    return {
        # the objective has no strong convexity without its regulariser
        "strongly-convex-schedule": (lambda acc: DPAUCMaximizer(
            alpha=0.0, pos_ratio=0.5, data_norm=3.0, accountant=acc,
            solver=NoisySGDA(schedule="strongly_convex", **small)), "strongly"),
        # group DRO has no compiled kernel (and numba may be absent)
        "numba-backend": (lambda acc: DPRobustClassifier(
            data_norm=3.0, accountant=acc, solver=NoisySGDA(backend="numba", **small)),
            "backend='numba' is unavailable"),
    }


@pytest.mark.parametrize("name", sorted(_solver_configuration_errors()))
def test_solver_configuration_errors_come_before_spending(name):
    """A solver setting the objective cannot run is refused by the calibration dry run,
    before the accountant is charged."""
    make, message = _solver_configuration_errors()[name]
    rng = np.random.default_rng(0)
    X, y = rng.normal(size=(40, 3)), np.arange(40) % 2
    acc = BudgetAccountant()
    with pytest.raises(ValueError, match=message):
        make(acc).fit(X, y)
    assert acc.spent_budget == []


def test_a_negative_zero_in_a_label_is_not_published():
    """np.unique keeps whichever of 0.0 and -0.0 sorts first: classes_ and groups_
    would show how one row stores its zero (a privacy review's finding)."""
    from skdpminimax import DPAUCMaximizer, DPRobustClassifier

    rng = np.random.default_rng(0)
    X = rng.normal(size=(200, 3))
    y = (X[:, 0] > 0).astype(float)
    groups = (X[:, 1] > 0).astype(float)
    y_neg, groups_neg = y.copy(), groups.copy()
    y_neg[np.flatnonzero(y == 0)[0]] = -0.0
    groups_neg[np.flatnonzero(groups == 0)[0]] = -0.0
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", PrivacyLeakWarning)
        auc = DPAUCMaximizer(data_norm=4.0, random_state=0).fit(X, y_neg)
        robust = DPRobustClassifier(data_norm=4.0, random_state=0).fit(
            X, y_neg, sensitive_features=groups_neg)
    for labels in (auc.classes_, robust.classes_, np.asarray(robust.groups_, dtype=float)):
        assert not np.signbit(labels).any()


def test_a_labels_stored_form_in_an_object_y_is_not_published():
    """np.unique keeps whichever equal label sorts first: in an object y, one row
    holding numpy's str_("a") changed classes_ (type, repr, pickle), as -0.0
    did (a side-channel review). Class labels are canonical, as group labels are."""
    import pickle

    from skdpminimax import DPAUCMaximizer, DPRobustClassifier, DPSaddleEstimator
    from test_custom_objective import SoftmaxRegression

    rng = np.random.default_rng(0)
    X = rng.normal(size=(101, 3))
    # (an object array of numbers is no classification target to scikit-learn)
    for plain, stored in (("a", np.str_("a")), ("b", np.str_("b"))):
        other = "c"
        y = np.array([plain] * 51 + [other] * 50, dtype=object)
        y_stored = y.copy()
        y_stored[0] = stored
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            for make in (lambda: DPAUCMaximizer(data_norm=4.0, random_state=0),
                         lambda: DPRobustClassifier(data_norm=4.0, random_state=0),
                         lambda: DPSaddleEstimator(SoftmaxRegression, data_norm=4.0,
                                                   task="classification", random_state=0)):
                a, b = make().fit(X, y).classes_, make().fit(X, y_stored).classes_
                assert pickle.dumps(a) == pickle.dumps(b)
                assert type(a[0]) is type(plain)


def test_a_score_range_too_small_to_fit_warns():
    """A review: features at 1e-6 with a matching data_norm (5e-6) fitted nothing even
    without noise (DPGroupFairRegressor R^2 -0.001 against 0.98 at scale 1; the robust
    classifier predicted one class), silently: a model of norm radius moves a score by
    at most radius * data_norm = 5e-5. Public constants, so a warning leaks nothing."""
    from sklearn.datasets import make_classification, make_regression

    from skdpminimax import DPAUCMaximizer, DPGroupFairRegressor, DPRobustClassifier

    X, y = make_classification(200, 5, random_state=0)
    Xr, yr = make_regression(200, 5, noise=1.0, random_state=0)
    groups = np.arange(200) % 2
    cases = [(DPAUCMaximizer, X, y, {}), (DPRobustClassifier, X, y, {}),
             (DPGroupFairRegressor, Xr, yr, {"sensitive_features": groups})]
    for cls, X_, y_, fit_kw in cases:
        extra = {"bounds": (-300.0, 300.0)} if cls is DPGroupFairRegressor else {}
        with pytest.warns(UserWarning, match=r"radius \* data_norm = 5e-05"):
            cls(epsilon=np.inf, data_norm=5e-6, accountant=BudgetAccountant(),
                **extra).fit(X_ * 1e-6, y_, **fit_kw)
        with warnings.catch_warnings(record=True) as record:
            warnings.simplefilter("always")
            cls(epsilon=np.inf, data_norm=5.0, accountant=BudgetAccountant(),
                **extra).fit(X_, y_, **fit_kw)
        assert not any("radius * data_norm" in str(w.message) for w in record)


def test_the_auto_radius_grows_with_the_dimension_not_with_a_small_scale():
    """DPAUCMaximizer's radius="auto" is max(10, sqrt(d) / max(1, data_norm)) under the
    clipping gradient solvers: unit-norm rows of 400 columns get 20; rows scaled down
    keep 10, since under noise a ball grown as 1 / data_norm let the noise walk (a
    review: features scaled by 1e-3, AUC 0.967 -> 0.619 at epsilon 1); output
    perturbation keeps 10 (its noise grows with the ball)."""
    from sklearn.datasets import make_classification
    from sklearn.metrics import roc_auc_score

    from skdpminimax import DPAUCMaximizer

    X, y = make_classification(300, 5, random_state=0)
    aucs = {}
    for radius in (10.0, "auto"):
        model = DPAUCMaximizer(epsilon=1.0, data_norm=5e-3, pos_ratio=0.5, radius=radius,
                               random_state=0, accountant=BudgetAccountant())
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            model.fit(X * 1e-3, y)
        assert model.objective_.radius == 10.0
        aucs[radius] = roc_auc_score(y, model.decision_function(X))
    assert aucs["auto"] == aucs[10.0] > 0.8
    wide = np.random.default_rng(0).normal(size=(60, 400))
    wide /= np.linalg.norm(wide, axis=1, keepdims=True)
    labels = np.arange(60) % 2
    for solver, expected in (("sgda", 20.0), ("output_perturbation", 10.0)):
        model = DPAUCMaximizer(epsilon=np.inf, data_norm=1.0, pos_ratio=0.5, solver=solver,
                               accountant=BudgetAccountant())
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            model.fit(wide, labels)
        assert model.objective_.radius == pytest.approx(expected)


@cases
def test_a_tiny_public_norm_plans_finite_steps_without_overflow(case):
    """A robustness review: data_norm=1e-200 (rows scaled to it) made the default
    solver's "scaled" step overflow in float64 after the spend (RuntimeWarning). The
    step is now planned in Python floats and capped by the curvature; the fit stays
    finite."""
    X, y, kw = case.data()
    X = X / np.linalg.norm(X, axis=1).max() * 1e-200
    with warnings.catch_warnings():
        warnings.simplefilter("error", RuntimeWarning)
        warnings.simplefilter("ignore", UserWarning)  # the score-range warning
        model = case.factory(data_norm=1e-200, solver="sgda").fit(X, y, **kw)
        out = case.output(model, X)
    assert np.all(np.isfinite(_released_numbers(model)))
    assert np.all(np.isfinite(out))
