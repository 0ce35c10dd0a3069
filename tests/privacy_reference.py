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
