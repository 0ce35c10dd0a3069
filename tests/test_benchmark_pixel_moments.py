"""The Yang 2022 reproduction's private per-pixel statistics (benchmarks/reproduce_yang2022.py)."""

import math

import numpy as np
import pytest
from scipy.stats import norm

from benchmarks import reproduce_yang2022 as repro
from skdpminimax.datasets import PUBLIC_PIXEL_STATS


def _pixels(n=400, d=49, seed=0, ink=0.1):
    rng = np.random.default_rng(seed)
    return (rng.random((n, d)) < ink) * rng.random((n, d))  # sparse intensities in [0, 1]


def _release_sums(X, clip, means_only=False):
    rows = X * np.minimum(1.0, clip / np.maximum(np.linalg.norm(X, axis=1), 1e-300))[:, None]
    return rows.sum(axis=0) if means_only else np.concatenate(
        [rows.sum(axis=0), (rows ** 2).sum(axis=0)])


def _analytic_gaussian_sigma(epsilon, delta, sens):
    """Independent: the smallest sigma with Phi(D/(2s) - e s/D) - e^e Phi(-D/(2s) - e s/D)
    <= delta (Balle and Wang 2018), by bisection on the privacy profile."""
    def gap(s):
        return (norm.cdf(sens / (2 * s) - epsilon * s / sens)
                - math.exp(epsilon) * norm.cdf(-sens / (2 * s) - epsilon * s / sens) - delta)

    lo, hi = 1e-3 * sens, 1e3 * sens
    for _ in range(200):
        mid = math.sqrt(lo * hi)
        lo, hi = (mid, hi) if gap(mid) > 0 else (lo, mid)
    return hi


def test_exact_statistics_without_noise():
    X = _pixels()
    fraction = 0.35
    assert np.linalg.norm(X, axis=1).max() < fraction * math.sqrt(X.shape[1])  # unclipped
    mean, std = repro.private_pixel_stats(X, math.inf, 1e-6, np.random.default_rng(0), fraction)
    np.testing.assert_allclose(mean, X.mean(axis=0), rtol=1e-12)
    np.testing.assert_allclose(std, np.maximum(X.std(axis=0), repro.PIXEL_STD_FLOOR),
                               rtol=1e-9)
    mean, std = repro.private_pixel_stats(X, math.inf, 1e-6, np.random.default_rng(0),
                                          fraction, means_only=True, public_std=0.3)
    np.testing.assert_allclose(mean, X.mean(axis=0), rtol=1e-12)
    assert np.all(std == 0.3)


@pytest.mark.parametrize("means_only", [False, True])
def test_neighbours_move_the_release_at_most_its_sensitivity(means_only):
    """Add/remove one row of [0, 1] pixels, clipped to c: ||x|| <= c and ||(x, x^2)||
    <= sqrt(2) c, attained by c^2 full-intensity pixels."""
    X = _pixels(ink=0.3)
    clip = 2.0  # binding for most rows here
    bound = clip if means_only else math.sqrt(2.0) * clip
    full = _release_sums(X, clip, means_only)
    worst = max(np.linalg.norm(full - _release_sums(np.delete(X, i, axis=0), clip, means_only))
                for i in range(X.shape[0]))
    assert worst <= bound * (1 + 1e-12)
    extreme = np.zeros((1, X.shape[1]))
    extreme[0, :4] = 1.0
    assert np.linalg.norm(_release_sums(extreme, clip, means_only)) == pytest.approx(bound)


@pytest.mark.parametrize("means_only", [False, True])
def test_noise_is_the_gaussian_mechanisms_for_its_sensitivity(means_only):
    X = _pixels(n=200, d=16)
    epsilon, delta, fraction = 0.5, 1e-6, 0.35
    clip = fraction * math.sqrt(X.shape[1])
    released = repro.private_pixel_stats(X, epsilon, delta, np.random.default_rng(0),
                                         fraction, means_only=means_only, public_std=0.3)
    sens = clip if means_only else math.sqrt(2.0) * clip
    sums = _release_sums(X, clip, means_only)
    noise = np.random.default_rng(0).standard_normal(sums.shape)  # the same draws
    sums = sums + _analytic_gaussian_sigma(epsilon, delta, sens) * noise
    n, d = X.shape
    mean = np.clip(sums[:d] / n, 0.0, 1.0)
    if means_only:
        std = np.full(d, 0.3)
    else:
        std = np.sqrt(np.maximum(np.clip(sums[d:] / n, 0.0, 1.0) - mean ** 2,
                                 repro.PIXEL_STD_FLOOR ** 2))
    np.testing.assert_allclose(np.concatenate(released), np.concatenate([mean, std]),
                               rtol=1e-6, atol=1e-9)


@pytest.mark.parametrize("dataset", ["mnist", "fashion-mnist"])
def test_restandardisation_splits_the_budget_and_inverts_the_public_constants(dataset):
    X = _pixels(d=784)
    centre, scale = PUBLIC_PIXEL_STATS[dataset]
    public = (X - centre) / scale
    Xtr, Xte, eps, delta = repro.restandardise_privately(dataset, public, public[:10],
                                                         0.5, 1e-6, seed=3)
    share = repro.PIXEL_STATS_SHARE[dataset]
    assert eps == pytest.approx(0.5 * (1 - share))
    assert delta == pytest.approx(1e-6 * (1 - repro.PIXEL_STATS_DELTA_SHARE))
    mean, std = repro.private_pixel_stats(
        X, 0.5 * share, 1e-6 * repro.PIXEL_STATS_DELTA_SHARE, np.random.default_rng([3, 2022]),
        repro.PIXEL_STATS_CLIP[dataset], means_only=repro.PIXEL_STATS[dataset] == "means",
        public_std=scale)
    np.testing.assert_allclose(Xtr, (X - mean) / std, rtol=1e-9, atol=1e-9)
    np.testing.assert_allclose(Xte, Xtr[:10])
