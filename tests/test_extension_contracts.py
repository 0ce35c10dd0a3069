"""Contracts of the extension points, from a review by a researcher bringing their own
objective, base solver and solver objects (each test failed before its fix)."""

import types
import warnings

import numpy as np
import pytest
from diffprivlib.accountant import BudgetAccountant

from skdpminimax import DPSaddleEstimator
from skdpminimax.objectives import SaddleData
from skdpminimax.solvers import (
    Extragradient,
    NoisySGDA,
    OutputPerturbation,
    register_solver,
)
from skdpminimax.solvers.base import SOLVERS
from skdpminimax.solvers.output_perturbation import certified_solve
from test_custom_objective import CoupledMean


class _Certified(CoupledMean):
    certified_constants = True


class _BatchMeanRows(CoupledMean):
    """The slip: the batch's mean gradient returned on every row."""

    def per_example_grads(self, w, v, data):
        gw, gv = super().per_example_grads(w, v, data)
        return (np.repeat(gw.mean(0, keepdims=True), len(gw), 0),
                np.repeat(gv.mean(0, keepdims=True), len(gv), 0))


class _BatchScaledSums(CoupledMean):
    """An exact-clip override that scales by the batch size: not a sum of rows."""

    exact_clipped_sums = True

    def clipped_grad_sums(self, w, v, data, clip_w, clip_v):
        sw, sv = super().clipped_grad_sums(w, v, data, clip_w, clip_v)
        return sw * data.n_samples, sv


@pytest.mark.parametrize("objective", [_BatchMeanRows, _BatchScaledSums])
def test_an_objective_whose_rows_depend_on_each_other_is_refused_before_the_spend(objective):
    X = np.random.default_rng(0).normal(size=(50, 2))
    acc = BudgetAccountant()
    est = DPSaddleEstimator(objective, epsilon=1.0, data_norm=3.0, accountant=acc,
                            random_state=0)
    with pytest.raises(ValueError, match="alone") as info:
        est.fit(X)
    assert "Nothing was spent" in str(info.value)
    assert acc.total()[0] == 0.0
    # the honest objective fits
    DPSaddleEstimator(CoupledMean, epsilon=1.0, data_norm=3.0, random_state=0).fit(X)


@pytest.mark.parametrize("evals", [None, float("nan"), "many", -3])
def test_a_base_solvers_point_is_kept_whatever_its_work_count(evals):
    """n_grad_evals is an optional diagnostic: an unreadable one must not discard the
    point (it used to: the engine fell back to its own solver)."""
    rng = np.random.default_rng(0)
    objective = _Certified(2, 3.0)
    data = SaddleData(rng.normal(size=(40, 2)))
    exact = Extragradient().solve_saddle(objective, data, 1e-10)

    class Exact:
        def solve_saddle(self, objective, data, tol, *, init=None, rng=None):
            return types.SimpleNamespace(w=exact.w, v=exact.v, n_grad_evals=evals)

    w, v, diagnostics = certified_solve(Exact(), objective, data, 1e-12, None, rng)
    np.testing.assert_array_equal(w, exact.w)
    np.testing.assert_array_equal(v, exact.v)
    assert diagnostics["n_grad_evals"] == data.n_samples  # the engine's certificate only
    assert not diagnostics["a_priori_fallback"]


def test_register_solver_refuses_to_replace_a_name_silently():
    with pytest.raises(ValueError, match="already registered"):
        register_solver("sgda", OutputPerturbation)
    with pytest.raises(TypeError, match="callable"):
        register_solver("mine", OutputPerturbation())
    assert SOLVERS["sgda"] is NoisySGDA
    register_solver("sgda", NoisySGDA, replace=True)  # explicit: allowed
    assert SOLVERS["sgda"] is NoisySGDA


def test_a_solver_object_that_is_not_an_estimator_is_copied_for_each_fit():
    class Counting:
        """A private solver by composition (not a BaseEstimator)."""

        def __init__(self):
            self.inner = NoisySGDA(n_epochs=1)
            self.n_solves = 0

        def __getattr__(self, name):  # the inner solver's attributes (backend, ...)
            if "inner" not in self.__dict__:  # while copy builds the object
                raise AttributeError(name)
            return getattr(self.__dict__["inner"], name)

        def calibrate(self, *args, **kwargs):
            return self.inner.calibrate(*args, **kwargs)

        def solve(self, *args, **kwargs):
            self.n_solves += 1
            return self.inner.solve(*args, **kwargs)

    mine = Counting()
    X = np.random.default_rng(1).normal(size=(60, 2))
    est = DPSaddleEstimator(CoupledMean, epsilon=1.0, data_norm=3.0, solver=mine,
                            random_state=0).fit(X)
    assert est.solver_ is not mine and mine.n_solves == 0
    assert est.solver_.n_solves == 1


def test_the_scaled_step_warning_does_not_call_a_fallback_certified():
    X = np.random.default_rng(2).normal(size=(60, 2))
    est = DPSaddleEstimator(CoupledMean, epsilon=1.0, data_norm=3.0,
                            solver=NoisySGDA(n_epochs=1, step_size="scaled"), random_state=0)
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        est.fit(X)
    messages = [str(w.message) for w in caught if "typical_solution_norm" in str(w.message)]
    assert messages and "unknown" in messages[0] and "certified" not in messages[0]


def test_a_regularized_objective_keeps_the_base_predictions():
    """A factory returning base.regularized(...) lost predict: score raised."""
    import copy
    import pickle

    def factory(n_features, data_norm):
        return CoupledMean(n_features, data_norm).regularized(0.1)

    X = np.random.default_rng(3).normal(size=(60, 2))
    est = DPSaddleEstimator(factory, epsilon=1.0, data_norm=3.0, random_state=0).fit(X)
    np.testing.assert_allclose(est.predict(X), X @ est.coef_)
    for twin in (copy.deepcopy(est.objective_), pickle.loads(pickle.dumps(est.objective_))):
        np.testing.assert_allclose(twin.predict(est.coef_, X), X @ est.coef_)
    assert not hasattr(est.objective_, "predict_proba")  # the base has none


def test_a_binary_classifier_gives_one_score_per_row_from_two_columns():
    """A K-class objective fitted on binary data scores (n, 2): scikit-learn's binary
    scorers need one column, positive towards classes_[1]."""
    from sklearn.datasets import make_classification
    from sklearn.metrics import roc_auc_score

    from test_custom_objective import SoftmaxRegression

    class AllColumns(SoftmaxRegression):
        def decision_function(self, w, X):
            return self._scores(w, X)

    X, y = make_classification(n_samples=200, n_features=4, random_state=0)
    labels = np.array(["neg", "pos"])[y]
    est = DPSaddleEstimator(AllColumns, epsilon=np.inf, data_norm=10.0,
                            task="classification", random_state=0).fit(X, labels)
    scores = est.decision_function(X)
    full = est.objective_.decision_function(est.coef_, X)
    assert scores.shape == (200,)
    np.testing.assert_allclose(scores, full[:, 1] - full[:, 0])
    np.testing.assert_array_equal(est.predict(X), est.classes_[(scores > 0).astype(int)])
    assert roc_auc_score(labels == "pos", scores) > 0.85


class _DataTermSmoothness(CoupledMean):
    """The misreading a review found: smoothness() of the data term alone, beside a
    regulariser ``c / 2 ||w||^2`` declared in reg_curvature()."""

    c = 10.0
    certified_constants = True

    def reg_value(self, w, v):
        return super().reg_value(w, v) + 0.5 * self.c * float(w @ w)

    def reg_grad(self, w, v):
        gw, gv = super().reg_grad(w, v)
        return gw + self.c * w, gv

    def reg_curvature(self):
        return self.c, 1.0

    def smoothness(self):
        return 2.0

    def strong_convexity(self):
        return 0.0, 1.0


@pytest.mark.parametrize("solver", ["nispp", "output_perturbation"])
def test_a_smoothness_below_the_regularisers_curvature_is_refused_before_the_spend(solver):
    """A review: NISPP planned its inner solve from smoothness() alone while iterating
    reg_grad too; with c = 10 the inner solve diverged and neighbouring data sets' released
    points were 9.9 apart against a sensitivity of 0.073 (the audit: epsilon >= 3.3 for a
    claimed 2). smoothness() bounds the whole gradient map: one below reg_curvature() is
    refused by the solvers whose privacy rests on it (a clipping solver only reads a
    step from it)."""
    X = np.random.default_rng(0).normal(size=(60, 2)) / 2
    acc = BudgetAccountant()
    with pytest.raises(ValueError, match=r"below its reg_curvature\(\) = 10"):
        DPSaddleEstimator(_DataTermSmoothness, epsilon=1.0, data_norm=2.0, accountant=acc,
                          solver=solver, random_state=0).fit(X)
    assert acc.spent_budget == []


class _SmoothCertified(_Certified):
    certified_constants = True  # declared where the methods it covers are

    def smoothness(self):  # the Jacobian [[I, a], [-a^T, lam]]
        return 1.0 + self.lam + float(np.linalg.norm(self.a))


class _UnderstatedCertified(_SmoothCertified):
    certified_constants = True

    def lipschitz(self):
        return tuple(b / 100.0 for b in super().lipschitz())


@pytest.mark.parametrize("solver", ["output_perturbation", "nispp"])
def test_a_certified_bound_a_training_row_exceeds_is_refused_before_the_spend(solver):
    """A review: certified_constants with lipschitz() ten times too low fitted and
    charged under output perturbation and NISPP, whose noise rests on it. The check
    reads the rows at the start point only (there the gradients are far below the worst
    case: a hundredfold understatement is caught here), and fires only where the bound
    is false."""
    X = np.random.default_rng(0).normal(size=(60, 2))
    acc = BudgetAccountant()
    with pytest.raises(ValueError, match=r"primal gradient at the start point exceeds"):
        DPSaddleEstimator(_UnderstatedCertified, epsilon=1.0, data_norm=3.0, accountant=acc,
                          solver=solver, random_state=0).fit(X)
    assert acc.spent_budget == []
    # the true bound passes
    DPSaddleEstimator(_SmoothCertified, epsilon=1.0, data_norm=3.0,
                      accountant=BudgetAccountant(), solver=solver, random_state=0).fit(X)
