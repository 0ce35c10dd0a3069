"""Gaussian differential privacy (mu-GDP, Dong, Roth & Su 2022): its (epsilon, delta) curve.

A mechanism is mu-GDP when telling its outputs on neighbouring data sets apart is no
easier than telling N(0, 1) from N(mu, 1). One Gaussian release with sensitivity
``Delta`` and noise std ``sigma`` is ``Delta / sigma``-GDP, and k of them compose to
``sqrt(k) * Delta / sigma``-GDP. The calibration uses this curve for its starting
point and the audit to turn a measured mu into an epsilon.
"""

import math

import numpy as np
from scipy import special

__all__ = ["gaussian_sigma", "gdp_delta", "gdp_epsilon"]


def gdp_delta(epsilon, mu):
    """Smallest delta with mu-GDP => (epsilon, delta)-DP (Dong et al. 2022, Cor. 2.13).

    ``Phi(-epsilon / mu + mu / 2) - exp(epsilon) Phi(-epsilon / mu - mu / 2)``, formed
    as ``Phi(a) (1 - exp(log-ratio))`` in log space: deep in the tails (large
    epsilon, tiny delta) both terms are tiny and nearly equal, and a difference of
    the two, or ``Phi`` through ``erf``, loses every digit.
    """
    if mu == 0:
        return 0.0
    a = -epsilon / mu + mu / 2
    # scipy.special's ufunc: stats.norm.logcdf is the same function behind ~0.2 ms of
    # argument handling per call, and the noise searches call this thousands of times.
    log_first = float(special.log_ndtr(a))
    log_tail = float(special.log_ndtr(a - mu))
    log_second = epsilon + log_tail
    if mu <= 1.0 and abs(a) <= 30.0 and epsilon <= 50.0 and log_second - log_first > -0.5:
        # Nearly equal terms (small epsilon, small mu): 1 - e^eps Phi(a - mu) / Phi(a)
        # taken as (Phi(a) - Phi(a - mu)) / Phi(a) - (e^eps - 1) Phi(a - mu) / Phi(a),
        # the first by quadrature, not as a difference: the difference of the two logs
        # kept a relative ~1e-5 of delta at epsilon 2e-6 and delta 1e-9 (a review).
        # Not beyond |a| = 30 (Phi(a) < 1e-197, where a^2 loses the band's digits).
        ratio = math.exp(log_tail - log_first)
        rest = _band_mass_over_tail(a, mu, log_first) - math.expm1(epsilon) * ratio
        return max(0.0, float(math.exp(log_first) * rest))
    if log_second >= log_first:  # only by rounding: the exact difference is >= 0
        return 0.0
    return float(math.exp(log_first) * -math.expm1(log_second - log_first))


# Gauss-Legendre nodes on [-1, 1]: exact for the band's smooth integrand to rounding
# (a band of width mu <= 1, where the normal density varies by at most a factor e^|a|).
_GL_NODES, _GL_WEIGHTS = np.polynomial.legendre.leggauss(24)


def _band_mass_over_tail(a, width, log_tail):
    """``(Phi(a) - Phi(a - width)) / Phi(a)`` for ``0 < width <= 1``, with ``log_tail =
    log Phi(a)``: the normal density integrated over the band by quadrature, in log
    space relative to ``Phi(a)`` (no difference of two near masses)."""
    t = a - width / 2 + (width / 2) * _GL_NODES
    log_density = -0.5 * t * t - 0.5 * math.log(2 * math.pi) - log_tail
    return float((width / 2) * np.dot(_GL_WEIGHTS, np.exp(log_density)))


# gaussian_sigma's noise certifies at mu this much (relatively) above its own.
_MU_MARGIN = 1e-9


def gaussian_sigma(epsilon, delta, sensitivity=1.0):
    """Smallest noise std (to a relative 1e-9, on the safe side) at which one Gaussian
    release of this L2 sensitivity is (epsilon, delta)-DP: the analytic Gaussian
    mechanism (Balle & Wang 2018, Thm. 8), i.e. ``sensitivity / sigma``-GDP.

    Bisection on ``log mu`` with :func:`gdp_delta`; the returned sigma is checked to
    certify before it is returned. Valid for any ``epsilon > 0`` and ``delta`` in (0, 1).
    """
    if not (epsilon > 0 and 0 < delta < 1 and sensitivity >= 0):
        raise ValueError(f"Need epsilon > 0, delta in (0, 1), sensitivity >= 0; got "
                         f"{epsilon}, {delta}, {sensitivity}.")
    if sensitivity == 0 or math.isinf(epsilon):
        return 0.0
    lo, hi = 1e-3, 1.0  # mu bracket: gdp_delta(epsilon, lo) <= delta < gdp_delta(epsilon, hi)
    while gdp_delta(epsilon, lo) > delta:
        lo, hi = lo / 16, lo
        if lo < 1e-300:
            raise ValueError(f"No Gaussian noise meets epsilon={epsilon}, delta={delta}.")
    while gdp_delta(epsilon, hi) <= delta:
        lo, hi = hi, hi * 16
        if hi > 1e300:
            return 0.0  # any noise, however small, certifies
    while hi / lo > 1 + 1e-12:
        mid = math.sqrt(lo * hi)
        lo, hi = (mid, hi) if gdp_delta(epsilon, mid) <= delta else (lo, mid)
    # Never release uncertified noise. sensitivity / (sensitivity / lo) need not round
    # back to lo, and gdp_delta is not monotone in its last digits, so a sigma one
    # rounding below what certifies is nudged up (a user probe: 0.4% of random
    # (epsilon, sensitivity) pairs failed this check, after the spend). It must also
    # certify with a margin: a record of the release (Release) recomputes mu as
    # 1 / (sigma / sensitivity), and at small epsilon gdp_delta differences two tail
    # masses of ~0.05 into a delta of 1e-6, to a relative ~1e-11 only (a fuzzing
    # review: DPStandardScaler at epsilon 3e-4 refused by its own record's check).
    sigma = sensitivity / lo
    for _ in range(64):
        if gdp_delta(epsilon, (sensitivity / sigma) * (1.0 + _MU_MARGIN)) <= delta:
            return sigma
        sigma *= 1.0 + _MU_MARGIN
    raise RuntimeError("Gaussian noise calibration failed to certify (epsilon, delta).")


def gdp_epsilon(mu, *, delta):
    """Smallest epsilon >= 0 with mu-GDP => (epsilon, delta)-DP (bisection to 2^-60).

    ``delta`` is keyword-only: beside ``gdp_delta(epsilon, mu)``, a positional
    ``gdp_epsilon(delta, mu)`` would be a silent mistake (a review)."""
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
