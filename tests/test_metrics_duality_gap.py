"""Certified duality-gap diagnostics (seed 001 digest, section 6)."""

import itertools

import numpy as np
import pytest

from skdpminimax.metrics import duality_gap, strong_duality_gap, weak_duality_gap
from skdpminimax.objectives.base import SaddleData
from skdpminimax.sets import Box
from objectives_for_tests_op import BilinearGame, make_game_data


def _box_game():
    """``f(w, theta; x) = w theta`` on ``[-1, 1]^2`` (the loss ignores x): seed 001, Prop. 13."""
    objective = BilinearGame(np.ones((1, 1)), primal_set=Box(-1, 1), dual_set=Box(-1, 1))
    return objective, SaddleData(np.zeros((6, 2)))


def test_gap_of_box_game_is_abs_w_plus_abs_theta():
    objective, data = _box_game()
    for w, t in [(0.3, -0.7), (0.0, 0.0), (-1.0, 0.25)]:
        gap = duality_gap(objective, data, np.array([w]), np.array([t]))
        exact = abs(w) + abs(t)
        assert gap.lower - 1e-9 <= exact <= gap.upper + 1e-9
        assert gap.width < 1e-6


def test_weak_gap_zero_strong_gap_two_exact_enumeration():
    # The mode algorithm's output (w, theta) is uniform on {-1, +1}^2: enumerate it.
    objective, data = _box_game()
    points = [(np.array([a]), np.array([b])) for a, b in itertools.product([-1.0, 1.0], repeat=2)]
    strong = strong_duality_gap(objective, data, points)
    weak = weak_duality_gap(objective, data, points)
    assert strong.lower - 1e-9 <= 2.0 <= strong.upper + 1e-9 and strong.width < 1e-6
    assert weak.lower - 1e-9 <= 0.0 <= weak.upper + 1e-9 and weak.upper < 1e-6
    # The gap at the averaged point is not the weak gap in general; here both vanish.
    assert duality_gap(objective, data, np.zeros(1), np.zeros(1)).upper < 1e-6


def test_weak_vs_strong_gap_monte_carlo_modes():
    # Seed 001, Prop. 13: n = 18 (even, n/2 odd), x ~ Uniform{-1, +1}, outputs are the
    # modes of the two halves. Strong gap exactly 2; weak gap ~ 0 up to MC error.
    objective, data = _box_game()
    rng = np.random.default_rng(0)
    R, n = 400, 18
    points = []
    for _ in range(R):
        x = rng.choice([-1.0, 1.0], size=n)
        points.append((np.sign([x[: n // 2].sum()]), np.sign([x[n // 2:].sum()])))
    strong = strong_duality_gap(objective, data, points)
    weak = weak_duality_gap(objective, data, points)
    assert abs(strong.lower - 2.0) < 1e-6 and abs(strong.upper - 2.0) < 1e-6
    # E|mean of R signs| ~ sqrt(2/(pi R)) per coordinate: allow several standard errors.
    assert weak.upper < 6.0 / np.sqrt(R)
    assert strong.lower - weak.upper > 1.5


def test_gap_matches_closed_form_on_ball_game():
    rng = np.random.default_rng(1)
    M = rng.standard_normal((4, 3))
    objective = BilinearGame(M, radius_w=2.0, radius_v=1.5)
    data = make_game_data(300, 4, 3, rng)
    a, b = data.X[:, :4].mean(axis=0), data.X[:, 4:].mean(axis=0)
    for _ in range(3):
        w, v = 0.5 * rng.standard_normal(4), 0.5 * rng.standard_normal(3)
        exact = (w @ a + v @ b + 1.5 * np.linalg.norm(M.T @ w - b)
                 + 2.0 * np.linalg.norm(a + M @ v))
        gap = duality_gap(objective, data, w, v, tol=1e-7)
        assert gap.lower - 1e-9 <= exact <= gap.upper + 1e-9
        assert gap.width < 1e-5


def test_inexact_inner_solve_gives_valid_wider_interval():
    rng = np.random.default_rng(2)
    objective = BilinearGame(rng.standard_normal((4, 3)), radius_w=2.0, radius_v=1.5)
    data = make_game_data(100, 4, 3, rng)
    w, v = 0.3 * np.ones(4), -0.2 * np.ones(3)
    exact = duality_gap(objective, data, w, v, tol=1e-9)
    rough = duality_gap(objective, data, w, v, max_iter=1)
    assert rough.lower <= exact.lower + 1e-9 and exact.upper <= rough.upper + 1e-9


@pytest.mark.parametrize("lam", [0.5, 2.0])
def test_strongly_convex_gap_vanishes_at_saddle_point(lam):
    rng = np.random.default_rng(4)
    objective = BilinearGame(rng.standard_normal((3, 2)))
    data = make_game_data(200, 3, 2, rng)
    ws, vs = objective.unconstrained_saddle(data, lam, lam)
    gap = duality_gap(objective.regularized(lam), data, ws, vs)
    assert gap.lower >= 0 and gap.upper < 1e-6
    # at the saddle point rounding must not invert the interval (a review: upper -1e-17
    # under lower 0), and both ends are plain floats
    assert 0.0 <= gap.lower <= gap.upper
    assert type(gap.lower) is float and type(gap.upper) is float


def test_nonconvex_objective_is_refused():
    """The MLP AUC objective is nonconvex in its weights: no certified gap is claimed."""
    from skdpminimax.objectives import MLPScorer, SquareLossAUC

    mlp = SquareLossAUC(1, 0.5, 1.0, radius=3.0, l2_reg=1e-2, scorer=MLPScorer(2))
    linear = SquareLossAUC(1, 0.5, 1.0, radius=3.0, l2_reg=1e-2)
    assert mlp.strong_convexity()[0] == -np.inf and mlp.strong_convexity()[1] > 0
    assert linear.strong_convexity() == (1e-2, 0.5)
    rng = np.random.default_rng(0)
    data = SaddleData(rng.normal(size=(6, 1)), np.array([1.0, -1.0] * 3))
    w, v = mlp.init_params(rng)
    with pytest.raises(ValueError, match="convex-concave"):
        duality_gap(mlp, data, w, v)
    with pytest.raises(ValueError, match="convex-concave"):
        weak_duality_gap(mlp, data, [(w, v)])


def test_gap_refuses_data_outside_the_objective_domain_and_points_of_other_shapes():
    """A user-style probe: labels in {0, 1} gave a certified interval for the wrong
    problem, and a w of the wrong length an IndexError."""
    from skdpminimax.objectives import SaddleData, SquareLossAUC

    rng = np.random.default_rng(0)
    X = rng.normal(size=(40, 3))
    y01 = (X[:, 0] > 0).astype(float)
    objective = SquareLossAUC(3, 0.5, data_norm=5.0, radius=1.0, l2_reg=0.1)
    w, v = objective.init_params()
    with pytest.raises(ValueError):
        duality_gap(objective, SaddleData(X, y01), w, v)
    # no labels at all: the objective's own check says so (a review: it was skipped
    # for y=None, and the objective failed inside with a TypeError on None)
    with pytest.raises(ValueError):
        duality_gap(objective, SaddleData(X), w, v)
    data = SaddleData(X, 2 * y01 - 1)
    with pytest.raises(ValueError, match="objective's shapes"):
        duality_gap(objective, data, w[:-1], v)
    assert duality_gap(objective, data, w, v).upper >= 0
