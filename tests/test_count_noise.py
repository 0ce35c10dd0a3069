"""The integer mechanisms (private counts, the private size, the private choice) draw
their noise from the fit's 128-bit generator, with the distributions they claim.

A privacy review found diffprivlib's mechanisms seeded with one 32-bit integer drawn
from that generator: from the other groups' released counts an adversary who knows
every row but one recovered that seed, hence the last count's noise (6 of 6 trials).
"""

import math

import numpy as np
import pytest
from scipy import stats

from skdpminimax.privacy.mechanisms import (
    count_posterior_mean,
    discrete_laplace,
    exponential_mechanism,
    private_count,
    private_counts,
    private_size,
)
from skdpminimax.selection import ExponentialSelection

# Two seeds whose generators draw the same first 32-bit integer (found by a birthday
# search over seeds below 2**18; the test checks it).
_SAME_FIRST_U32 = (43408, 44001)


def _two_generators_sharing_a_32_bit_draw():
    g1, g2 = (np.random.default_rng(s) for s in _SAME_FIRST_U32)
    a, b = (np.random.default_rng(s).integers(2**32) for s in _SAME_FIRST_U32)
    assert a == b  # the premise: a 32-bit seed drawn from either would be the same
    return g1, g2


@pytest.mark.parametrize("release", ["counts", "size", "choice"])
def test_noise_depends_on_more_than_a_32_bit_draw(release):
    """Generators that agree on their first 32-bit draw give other noise in their first
    release: the noise is not a function of one 32-bit seed (what an adversary could
    search). With the seeded diffprivlib mechanisms all three releases were equal."""
    g1, g2 = _two_generators_sharing_a_32_bit_draw()
    if release == "counts":
        out = [private_counts(np.full(50, 1000), 5000, 0.05, g) for g in (g1, g2)]
    elif release == "size":
        out = [private_size(10_000, 0.05, g) for g in (g1, g2)]
    else:
        results = {"split0_test_score": np.linspace(0.5, 0.6, 40)}
        out = [ExponentialSelection(0.01, [10], g)(results) for g in (g1, g2)]
    assert not np.array_equal(out[0], out[1])


@pytest.mark.parametrize("epsilon", [0.3, 1.0, 3.0])
def test_discrete_laplace_has_the_two_sided_geometric_pmf(epsilon):
    """Chi-square against P(k) = (1 - a) / (1 + a) a^|k|, a = exp(-epsilon), computed
    here; the same draws are rejected against the pmf at 1.15 epsilon (the test has
    power)."""
    draws = discrete_laplace(epsilon, 200_000, np.random.default_rng(3))
    assert draws.dtype == np.int64

    def p_value(eps):
        a = math.exp(-eps)
        k_max = int(np.ceil(np.log(1e-3) / np.log(a)))  # the rest in one tail bin each
        ks = np.arange(-k_max, k_max + 1)
        pmf = (1 - a) / (1 + a) * a ** np.abs(ks)
        tail = (1.0 - pmf.sum()) / 2.0
        expected = np.concatenate([[tail], pmf, [tail]]) * draws.size
        clipped = np.clip(draws, -k_max - 1, k_max + 1) + k_max + 1
        observed = np.bincount(clipped, minlength=2 * k_max + 3)
        return stats.chisquare(observed, expected).pvalue

    assert p_value(epsilon) > 1e-4
    assert p_value(1.15 * epsilon) < 1e-6


def test_private_count_and_size_are_the_documented_post_processing():
    """A count: clamped to [0, upper] before and after the noise; a size: at least 1;
    epsilon = inf releases the value."""
    assert private_count(250, 100, math.inf, np.random.default_rng(0)) == 100
    edge = private_counts([0, 100] * 500, 100, 0.05, np.random.default_rng(1))
    assert edge.min() == 0 and edge.max() == 100
    assert min(private_size(1, 0.01, np.random.default_rng(s)) for s in range(50)) == 1
    assert private_size(7, math.inf, np.random.default_rng(0)) == 7


def test_exponential_mechanism_frequencies():
    """Frequencies of the chosen index against exp(epsilon u / (2 sensitivity)) / Z,
    with utilities far from 0 (the shift by the maximum must not matter)."""
    u = np.array([1e6, 1e6 + 3.0, 1e6 + 4.0, 1e6 - 50.0])
    eps, sens = 0.8, 2.0
    expected = np.exp(eps * (u - u.max()) / (2 * sens))
    expected /= expected.sum()
    rng = np.random.default_rng(11)
    draws = np.array([exponential_mechanism(u, eps, rng, sensitivity=sens)
                      for _ in range(20_000)])
    freq = np.bincount(draws, minlength=u.size) / draws.size
    np.testing.assert_allclose(freq, expected, atol=0.015)  # binomial sd <= 0.0036
    with pytest.raises(ValueError, match="finite"):
        exponential_mechanism([1.0, np.nan], 1.0, rng)


@pytest.mark.parametrize("upper, epsilon, low, high", [(50, 0.3, 1, None), (400, 0.05, 1, None),
                                                      (60, 0.2, 4, 45)])
def test_count_posterior_mean_against_simulation(upper, epsilon, low, high):
    """The posterior mean under a flat prior on [low, high] ([1, upper - 1] by default),
    against the mean of true counts drawn from that prior whose simulated release
    equals each value (an independent computation: draws, not the likelihood)."""
    rng = np.random.default_rng(0)
    n = 4_000_000
    true = rng.integers(low, (upper - low if high is None else high) + 1, n)
    released = np.clip(true + discrete_laplace(epsilon, n, rng), 0, upper)
    values = np.array([0, 1, 3, upper // 2, upper - 3, upper])
    expected = count_posterior_mean(values, upper, epsilon, low=low, high=high)
    for value, mean in zip(values, expected):
        hits = true[released == value]
        assert hits.size > 2_000
        assert abs(hits.mean() - mean) < 4 * hits.std() / math.sqrt(hits.size) + 1e-9
    # A release at the edge means about one noise scale inside the prior, not the edge.
    assert expected[0] > low + 0.5 / epsilon and expected[-1] < upper - 0.5 / epsilon


def test_count_posterior_mean_far_from_the_edges_and_without_noise():
    # More than 50 noise scales from both ends: the likelihood is symmetric there.
    assert count_posterior_mean([5_000, 9_000], 20_000, 0.02).tolist() == [5_000, 9_000]
    assert count_posterior_mean([0, 7, 12], 10, np.inf).tolist() == [1, 7, 9]
    # One posterior per distinct value: repeated values agree with single calls.
    many = count_posterior_mean([0, 3, 0, 3, 200], 200, 0.1)
    singles = [count_posterior_mean(v, 200, 0.1)[0] for v in (0, 3, 0, 3, 200)]
    np.testing.assert_allclose(many, singles)
    assert count_posterior_mean([0, 1], 1, 1.0).tolist() == [0.5, 0.5]  # empty prior


def _posterior_mean_by_summation(r, upper, epsilon, low, high):
    """The posterior mean by direct summation over every count of the prior (the
    likelihood of a clamped release, a^|clamp(r) - k|), in extended precision."""
    k = np.arange(low, high + 1, dtype=np.longdouble)
    log_lik = -np.longdouble(epsilon) * np.abs(np.longdouble(min(max(r, 0), upper)) - k)
    weights = np.exp(log_lik - log_lik.max())
    return float((weights * k).sum() / weights.sum())


@pytest.mark.parametrize("upper, epsilon, low, high", [
    (30, 2.0, 1, None), (1_000, 0.01, 1, None), (5_000, 1e-3, 1, None),
    (200_000, 1e-5, 1, None), (2_000, 0.004, 300, 900), (40, 30.0, 0, 40), (7, 0.5, 3, 3),
    (50, 700.0, 1, None), (50, 2e4, 1, None)])
def test_count_posterior_mean_against_summation(upper, epsilon, low, high):
    """The closed form against summing the posterior over every candidate count, at
    releases below, at and inside both ends of the prior and across the release range,
    down to noise scales far wider than the range (epsilon = 1e-5 on 200,000)."""
    high = upper - low if high is None else high
    values = sorted({0, 1, low, low + 1, (low + high) // 2, high - 1, high, upper - 1, upper})
    got = count_posterior_mean(values, upper, epsilon, low=low, high=high)
    want = [_posterior_mean_by_summation(r, upper, epsilon, low, high) for r in values]
    np.testing.assert_allclose(got, want, rtol=0, atol=1e-6 * max(1.0, high - low))


def test_count_posterior_mean_at_a_tiny_epsilon_on_a_huge_size():
    """A count epsilon of 1e-6 on 1e8 rows: a window of 100 / epsilon candidates cost a
    gigabyte; the closed form's mean of a release at 0 is 1 + 1 / expm1(epsilon) - (n -
    1) / expm1((n - 1) epsilon) (the geometric law's truncated mean), about 1e6."""
    n, eps = 10**8, 1e-6
    expected = 1 + 1 / math.expm1(eps) - (n - 1) / math.expm1((n - 1) * eps)
    got = count_posterior_mean([0, n], n, eps)
    np.testing.assert_allclose(got, [expected, n - expected], rtol=1e-12)


@pytest.mark.parametrize("kwargs", [dict(epsilon=0.0), dict(epsilon=np.nan),
                                    dict(epsilon=-1.0), dict(low=-1), dict(high=11)])
def test_count_posterior_mean_refuses_what_the_mechanism_cannot_release(kwargs):
    kwargs = {"epsilon": 0.5, **kwargs}
    with pytest.raises(ValueError, match="epsilon must be > 0|must lie in"):
        count_posterior_mean([3], 10, **kwargs)
