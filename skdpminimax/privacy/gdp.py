"""Gaussian differential privacy (mu-GDP, Dong, Roth & Su 2022): its (epsilon, delta) curve.

A mechanism is mu-GDP when telling its outputs on neighbouring data sets apart is no
easier than telling N(0, 1) from N(mu, 1). One Gaussian release with sensitivity
``Delta`` and noise std ``sigma`` is ``Delta / sigma``-GDP, and k of them compose to
``sqrt(k) * Delta / sigma``-GDP. The calibration uses this curve for its starting
point and the audit to turn a measured mu into an epsilon.
"""

import math

from scipy import stats

__all__ = ["gdp_delta", "gdp_epsilon"]


def gdp_delta(epsilon, mu):
    """Smallest delta with mu-GDP => (epsilon, delta)-DP (Dong et al. 2022, Cor. 2.13).

    ``Phi(-epsilon / mu + mu / 2) - exp(epsilon) Phi(-epsilon / mu - mu / 2)``; the
    second term is formed in log space, so a large epsilon does not overflow.
    """
    return float(stats.norm.cdf(-epsilon / mu + mu / 2)
                 - math.exp(epsilon + stats.norm.logcdf(-epsilon / mu - mu / 2)))


def gdp_epsilon(mu, delta):
    """Smallest epsilon >= 0 with mu-GDP => (epsilon, delta)-DP (bisection to 2^-60)."""
    if not mu > 0 or gdp_delta(0.0, mu) <= delta:
        return 0.0
    if not math.isfinite(mu):
        return math.inf
    lo, hi = 0.0, 1.0
    while gdp_delta(hi, mu) > delta:
        lo, hi = hi, 2 * hi
    for _ in range(60):
        mid = 0.5 * (lo + hi)
        lo, hi = (mid, hi) if gdp_delta(mid, mu) > delta else (lo, mid)
    return hi
