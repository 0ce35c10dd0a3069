"""The solver benchmark's slope fit and theorem exponents (benchmarks/_theory.py)."""

import numpy as np
import pytest

from benchmarks._theory import THEORY, regime_exponent, verdict
from benchmarks.solvers import auc_problem, fit_slope, game_problem
from skdpminimax.solvers import SOLVERS


def test_fit_slope_recovers_power_law_and_reports_error():
    ns = np.repeat([1e3, 1e4, 1e5], 3)
    slope, se = fit_slope(ns, 5.0 * ns**-1.7)
    assert slope == pytest.approx(-1.7) and se < 1e-10
    noisy = 5.0 * ns**-1.7 * np.exp(np.random.default_rng(0).normal(0, 0.3, ns.size))
    slope, se = fit_slope(ns, noisy)
    assert 0.01 < se < 0.5 and abs(slope + 1.7) < 4 * se


def test_every_registered_solver_has_a_theorem():
    assert set(SOLVERS) <= set(THEORY)
    for measure, *_ in THEORY.values():
        assert measure in {"gap", "primal"}


@pytest.mark.parametrize("make", [game_problem, auc_problem])
def test_output_perturbation_regime_between_statistical_and_privacy_terms(make):
    kwargs = {"n_test": 2} if make is auc_problem else {}
    objective = make(2, np.random.default_rng(0), **kwargs)[0]
    ns = [1e3, 1e4, 1e5]
    # privacy term d/(n eps)^2 dominates at tiny eps, the 1/n term at huge eps
    assert regime_exponent("output_perturbation", objective, ns, 1e-3, 1e-6) == pytest.approx(
        -2.0, abs=0.01)
    assert regime_exponent("output_perturbation", objective, ns, 1e4, 1e-6) == pytest.approx(
        -1.0, abs=0.01)
    mid = regime_exponent("output_perturbation", objective, ns, 1.0, 1e-6)
    assert -2.0 < mid < -1.0


def test_phased_bound_tends_to_its_asymptotic_exponent():
    objective = game_problem(2, np.random.default_rng(0))[0]
    far = [10.0**k for k in (14, 15, 16)]
    # 6 L D log(n)/sqrt(n) dominates: slope -1/2 + 1/ln(n)
    expected = -0.5 + 1 / np.log(1e15)
    assert regime_exponent("phased_output_perturbation", objective, far, 1.0, 1e-6) == \
        pytest.approx(expected, abs=0.02)


def test_verdict():
    assert verdict(-1.9, -2.0) == "within"
    assert verdict(-2.3, -2.0) == "faster"
    assert verdict(-1.5, -2.0) == "SLOWER"
