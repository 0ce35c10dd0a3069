"""Closed forms of Gaussian differential privacy, written independently of the library.

Tests compare the library's calibrations against these (Dong, Roth & Su 2022; Balle &
Wang 2018): ``k`` adaptive Gaussian releases of multipliers ``z_i`` are exactly
``mu``-GDP with ``mu = sqrt(sum_i z_i^-2)``.
"""

import math

from scipy.optimize import brentq
from scipy.stats import norm


def gdp_delta(epsilon, mu):
    """delta(epsilon) of a mu-GDP mechanism."""
    return norm.cdf(-epsilon / mu + mu / 2) - math.exp(epsilon) * norm.cdf(-epsilon / mu - mu / 2)


def gdp_mu(epsilon, delta):
    """The mu at which mu-GDP is exactly (epsilon, delta)-DP."""
    return brentq(lambda m: gdp_delta(epsilon, m) - delta, 1e-6, 100)


def analytic_gaussian_sigma(epsilon, delta, sens):
    """The smallest sigma with Phi(D/(2s) - e s/D) - e^e Phi(-D/(2s) - e s/D) <= delta
    (Balle and Wang 2018, Thm. 8), by bisection on the privacy profile."""
    def gap(s):
        return (norm.cdf(sens / (2 * s) - epsilon * s / sens)
                - math.exp(epsilon) * norm.cdf(-sens / (2 * s) - epsilon * s / sens) - delta)

    lo, hi = 1e-3 * sens, 1e3 * sens
    for _ in range(200):
        mid = math.sqrt(lo * hi)
        lo, hi = (mid, hi) if gap(mid) > 0 else (lo, mid)
    return hi
