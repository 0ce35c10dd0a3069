"""Certified non-private base solvers: accuracy contract and certificate soundness."""

import numpy as np
import pytest

from skdpminimax.solvers import (
    CertificationError,
    Extragradient,
    ProjectedGDA,
    SVRGExtragradient,
)
from skdpminimax.solvers.certificates import certify
from objectives_for_tests_op import (
    BilinearGame,
    decoupled_boundary_game,
    decoupled_solution,
    make_game_data,
)


def _distance(w, v, ws, vs):
    return float(np.sqrt(np.sum((w - ws) ** 2) + np.sum((v - vs) ** 2)))


@pytest.fixture(scope="module")
def game():
    rng = np.random.default_rng(0)
    objective = BilinearGame(rng.standard_normal((5, 3)))
    data = make_game_data(600, 5, 3, rng)
    return objective, data


@pytest.mark.parametrize("solver, lam", [(ProjectedGDA(), 1.0), (Extragradient(), 0.2),
                                         (SVRGExtragradient(), 0.2)])
@pytest.mark.parametrize("tol", [1e-3, 1e-7])
def test_reaches_known_saddle_within_certified_tol(game, solver, lam, tol):
    objective, data = game
    reg = objective.regularized(lam)
    ws, vs = objective.unconstrained_saddle(data, lam, lam)
    assert np.linalg.norm(ws) < 10 and np.linalg.norm(vs) < 10  # interior: closed form holds
    sol = solver.solve_saddle(reg, data, tol, rng=1)
    true = _distance(sol.w, sol.v, ws, vs)
    assert sol.distance_bound <= tol
    assert true <= sol.distance_bound * (1 + 1e-9) + 1e-12


@pytest.mark.parametrize("solver", [ProjectedGDA(), Extragradient(), SVRGExtragradient()])
def test_boundary_saddle_certified(solver):
    rng = np.random.default_rng(3)
    objective = decoupled_boundary_game(4, 3)
    data = make_game_data(300, 4, 3, rng, shift=2.0)
    ws, vs = decoupled_solution(objective, data)
    assert np.isclose(np.linalg.norm(vs), 0.05)  # the dual solution is on the sphere
    sol = solver.solve_saddle(objective, data, 1e-5, rng=0)
    assert _distance(sol.w, sol.v, ws, vs) <= sol.distance_bound <= 1e-5


def test_certificate_upper_bounds_true_distance_at_random_points(game):
    objective, data = game
    rng = np.random.default_rng(5)
    for lam in (0.05, 1.0):
        reg = objective.regularized(lam)
        ws, vs = objective.unconstrained_saddle(data, lam, lam)
        for scale in (1e-6, 1e-3, 1.0, 5.0):
            w = reg.primal_set.project(ws + scale * rng.standard_normal(5))
            v = reg.dual_set.project(vs + scale * rng.standard_normal(3))
            cert = certify(reg, data, w, v)
            mu = reg.strong_convexity()
            weighted = mu[0] * np.sum((w - ws) ** 2) + mu[1] * np.sum((v - vs) ** 2)
            assert weighted <= cert.weighted * (1 + 1e-9)
            assert _distance(w, v, ws, vs) <= cert.distance * (1 + 1e-9)
    # and on a constrained problem whose saddle point is on the boundary
    boundary = decoupled_boundary_game(4, 3)
    bdata = make_game_data(200, 4, 3, rng, shift=2.0)
    ws, vs = decoupled_solution(boundary, bdata)
    for _ in range(50):
        w = boundary.primal_set.project(ws + 0.01 * rng.standard_normal(4))
        v = boundary.dual_set.project(vs + 0.01 * rng.standard_normal(3))
        cert = certify(boundary, bdata, w, v)
        assert np.linalg.norm(w - ws) <= cert.primal_distance * (1 + 1e-9)
        assert np.linalg.norm(v - vs) <= cert.dual_distance * (1 + 1e-9)


def test_raises_instead_of_returning_uncertified_point(game):
    objective, data = game
    with pytest.raises(CertificationError, match="max_iter"):
        ProjectedGDA(max_iter=1, check_every=1).solve_saddle(objective.regularized(0.01), data, 1e-10)


def test_needs_strong_convexity(game):
    objective, data = game
    with pytest.raises(ValueError, match="strongly"):
        Extragradient().solve_saddle(objective, data, 1e-3)
    with pytest.raises(ValueError, match="tol"):
        Extragradient().solve_saddle(objective.regularized(1.0), data, 0.0)


def test_diverging_step_is_halved_until_certified(game):
    objective, data = game
    reg = objective.regularized(0.5)
    ws, vs = objective.unconstrained_saddle(data, 0.5, 0.5)
    sol = ProjectedGDA(step_size=50.0).solve_saddle(reg, data, 1e-6)
    assert _distance(sol.w, sol.v, ws, vs) <= sol.distance_bound <= 1e-6


@pytest.mark.parametrize("solver", [Extragradient(), SVRGExtragradient()])
def test_ill_conditioned_auc_with_non_monotone_certificate(solver):
    # Regression: the certificate first rises (348 -> 700) before it falls; a step rule
    # that halves on that transient stalled forever. kappa = ell / mu_w ~ 4e5 here.
    from sklearn.datasets import make_classification

    from skdpminimax.objectives.auc import SquareLossAUC
    from skdpminimax.objectives.base import SaddleData
    from skdpminimax.privacy.mechanisms import clip_rows

    X, y = make_classification(n_samples=1000, n_features=10, random_state=0)
    objective = SquareLossAUC(10, 0.5, 5.0, 10.0, l2_reg=1e-4)
    data = SaddleData(clip_rows(X, 5.0), np.where(y == 1, 1.0, -1.0))
    sol = solver.solve_saddle(objective, data, 1e-3, rng=0)
    assert sol.distance_bound <= 1e-3
    assert certify(objective, objective.prepare(data), sol.w, sol.v).distance <= 1e-3
