"""The Yang 2022 reproduction's private per-pixel moments (benchmarks/reproduce_yang2022.py)."""

import math

import numpy as np
import pytest
from scipy.stats import norm

from benchmarks import reproduce_yang2022 as repro
from skdpminimax.datasets import PUBLIC_PIXEL_STATS


def _pixels(n=400, d=49, seed=0, ink=0.1):
    rng = np.random.default_rng(seed)
    return (rng.random((n, d)) < ink) * rng.random((n, d))  # sparse intensities in [0, 1]


def _release_sums(X, clip):
    rows = X * np.minimum(1.0, clip / np.maximum(np.linalg.norm(X, axis=1), 1e-300))[:, None]
    return np.concatenate([rows.sum(axis=0), (rows ** 2).sum(axis=0)])


def test_exact_moments_without_noise():
    X = _pixels()
    mean, std = repro.private_pixel_moments(X, math.inf, 1e-6, np.random.default_rng(0))
    clip = repro.PIXEL_STATS_CLIP * math.sqrt(X.shape[1])
    assert np.linalg.norm(X, axis=1).max() < clip  # nothing clipped: the exact moments
    np.testing.assert_allclose(mean, X.mean(axis=0), rtol=1e-12)
    np.testing.assert_allclose(std, np.maximum(X.std(axis=0), repro.PIXEL_STD_FLOOR),
                               rtol=1e-9)


def test_neighbours_move_the_release_at_most_its_sensitivity():
    """Add/remove one row of [0, 1] pixels, clipped: ||(x, x^2)|| <= sqrt(2) c."""
    X = _pixels()
    clip = 2.0  # binding for most rows here
    full = _release_sums(X, clip)
    worst = max(np.linalg.norm(full - _release_sums(np.delete(X, i, axis=0), clip))
                for i in range(X.shape[0]))
    assert worst <= math.sqrt(2.0) * clip * (1 + 1e-12)
    extreme = np.zeros((1, X.shape[1]))
    extreme[0, :4] = 1.0  # c^2 full-intensity pixels: x^2 = x, ||x|| = c, the bound is tight
    assert np.linalg.norm(_release_sums(extreme, clip)) == pytest.approx(math.sqrt(2.0) * clip)


def test_noise_is_the_gaussian_mechanisms_for_its_sensitivity():
    """The release's noise std against an independent analytic-Gaussian computation
    (Balle and Wang 2018: the smallest sigma with
    Phi(D/(2s) - e s/D) - e^e Phi(-D/(2s) - e s/D) <= delta)."""
    X = _pixels(n=200, d=16)
    epsilon, delta = 0.5, 1e-6
    clip = repro.PIXEL_STATS_CLIP * math.sqrt(X.shape[1])
    draws = np.array([np.concatenate(repro.private_pixel_moments(
        X, epsilon, delta, np.random.default_rng(seed))) for seed in range(3)])
    rng = np.random.default_rng(0)
    noise = rng.standard_normal(2 * X.shape[1])  # the first seed's draws, re-derived
    sens = math.sqrt(2.0) * clip

    def gap(s):
        return (norm.cdf(sens / (2 * s) - epsilon * s / sens)
                - math.exp(epsilon) * norm.cdf(-sens / (2 * s) - epsilon * s / sens) - delta)

    lo, hi = 1e-3 * sens, 1e3 * sens
    for _ in range(200):  # bisection on the privacy profile
        mid = math.sqrt(lo * hi)
        lo, hi = (mid, hi) if gap(mid) > 0 else (lo, mid)
    sigma = hi
    sums = _release_sums(X, clip) + sigma * noise
    n, d = X.shape
    mean = np.clip(sums[:d] / n, 0.0, 1.0)
    second = np.clip(sums[d:] / n, 0.0, 1.0)
    std = np.sqrt(np.maximum(second - mean ** 2, repro.PIXEL_STD_FLOOR ** 2))
    np.testing.assert_allclose(draws[0], np.concatenate([mean, std]), rtol=1e-6, atol=1e-9)
    assert not np.allclose(draws[0], draws[1])


def test_restandardisation_splits_the_budget_and_inverts_the_public_constants():
    X = _pixels(d=784)
    centre, scale = PUBLIC_PIXEL_STATS["mnist"]
    public = (X - centre) / scale
    Xtr, Xte, eps, delta = repro.restandardise_privately("mnist", public, public[:10],
                                                         0.5, 1e-6, seed=3)
    assert eps == pytest.approx(0.5 * (1 - repro.PIXEL_STATS_SHARE))
    assert delta == pytest.approx(1e-6 * (1 - repro.PIXEL_STATS_DELTA_SHARE))
    mean, std = repro.private_pixel_moments(X, 0.5 * repro.PIXEL_STATS_SHARE,
                                            1e-6 * repro.PIXEL_STATS_DELTA_SHARE,
                                            np.random.default_rng([3, 2022]))
    np.testing.assert_allclose(Xtr, (X - mean) / std, rtol=1e-9, atol=1e-9)
    np.testing.assert_allclose(Xte, Xtr[:10])
