"""The theorem behind each registered solver and the exponent in ``n`` it predicts.

Each entry gives the quantity the theorem bounds (``"gap"``: population strong gap,
``"primal"``: primal excess risk ``P(w) - Phi*``), the bound as a function of ``n``
(terms with the theorem's own constants where it states them, unit constants where
it only states an ``O(.)``; factors common to all terms, such as ``L D`` or
``kappa^2``, drop out of the slope and are omitted), and whether the registered
configuration meets the theorem's conditions.

The *regime exponent* is the least-squares slope of ``log bound`` on ``log n`` over
the benchmark's own ``n`` grid: it is the theorem's prediction for the range
actually measured (e.g. ``-2`` when the ``d/(n^2 eps^2)`` privacy term dominates,
``-1`` or ``-1/2`` when the statistical term does). Theorems for convex-concave
problems are upper bounds over a larger class; on the SC-SC benchmark problems a
solver may legitimately be faster than them, so the verdict distinguishes
"within 0.15", "faster" and "slower" (only "slower" contradicts a theorem).

References (digests in ``/work/shared/notes``): Zhang, Thekumparampil, Oh, He (2022)
= seed 004; Yang et al. (2022) and Kang et al. = seed 000/003; Boob & Guzman (2023)
= seed 002; Bassily, Guzman, Menart (2023) = seed 001.
"""

import math

import numpy as np


def _dims(objective):
    w0, v0 = objective.init_params()
    return w0.size, v0.size


def _constants(objective):
    g_w, g_v = objective.lipschitz()
    w0, v0 = _dims(objective)
    radius = max(objective.primal_set.radius(w0), objective.dual_set.radius(v0))
    return math.hypot(g_w, g_v), radius, objective.strong_convexity()


def _op(objective, n, eps, delta):
    d = max(_dims(objective))
    return 3.0 / n + 128.0 * d * math.log(5 / delta) / (n * eps) ** 2


def _phased(objective, n, eps, delta):
    lip, radius, (_, mu_v) = _constants(objective)
    d_w = _dims(objective)[0]
    K = max(1, math.floor(math.log2(n)))
    return (6 * lip * radius * K * (1 / math.sqrt(n)
                                    + 4 * math.sqrt(d_w * math.log(2.5 / delta)) / (n * eps))
            + lip**2 * K**2 * (8 / (mu_v * n)
                               + 65 * d_w * math.log(2.5 * n / delta) / (mu_v * (n * eps) ** 2)))


def _cc_optimal(objective, n, eps, delta):
    d = max(_dims(objective))
    return 1 / math.sqrt(n) + math.sqrt(d * math.log(1 / delta)) / (n * eps)


def _kang(objective, n, eps, delta):
    p = sum(_dims(objective))
    return max(p**0.25 / math.sqrt(n * eps), p**0.75 / (n * eps**1.5), n ** (-2 / 3))


def _nseg_single(objective, n, eps, delta):
    dl = max(_dims(objective)) * math.log(1 / delta)
    return dl**0.25 / math.sqrt(n * eps) + math.sqrt(dl) / (n * eps)


def _nispp_single(objective, n, eps, delta):
    dl = max(_dims(objective)) * math.log(1 / delta)
    return n ** (-1 / 3) + math.sqrt(dl) / (eps * n ** (2 / 3))


def _recursive(objective, n, eps, delta):
    d = max(_dims(objective))
    ln = math.log(n)
    return ln**1.5 / math.sqrt(n) + ln**2 * math.sqrt(d * math.log(1 / delta)) / (n * eps)


# name -> (measure, theorem, asymptotic exponent, bound(objective, n, eps, delta),
#          conditions the registered configuration does not meet, or "" when it meets them)
THEORY = {
    "output_perturbation": (
        "gap", "Zhang+22 Thm 4.4 (SC-SC)", -1.0, _op, ""),
    "phased_output_perturbation": (
        "primal", "Zhang+22 Cor 4.9 (C-SC)", -0.5, _phased, ""),
    "sgda": (
        "gap", "Yang+22 Thm 2a (C-C, weak)", -0.5, _cc_optimal,
        "constant step 1/L (thm: 1/max(sqrt n, sqrt(d log)/eps)); clip 1 < G"),
    "gda": (
        "gap", "Kang+ Table 1 (SC-SC)", -0.5, _kang,
        "500 steps, constant step (thm: T ~ n^2/3, eta_t = 1/(rho t)); clip 1 < G"),
    "nseg": (
        "gap", "Boob-Guzman Cor 1 (single pass)", -0.5, _nseg_single, "clip 1 < G"),
    "nseg_multipass": (
        "gap", "Boob-Guzman Thm 4 (C-C, weak)", -0.5, _cc_optimal,
        "10 epochs (thm: T = n^2 steps); clip 1 < G"),
    "nispp": (
        "gap", "Boob-Guzman Cor 2 (single pass)", -1 / 3, _nispp_single, "clip 1 < G"),
    "recursive": (
        "gap", "Bassily+23 Thm 5 (noisy SGDA base)", -0.5, _recursive, "clip 1 < G (base)"),
}


# Exponent of the privacy term alone (measured as gap(eps) - gap(inf), same data and seed):
# only where the noise-free run isolates the theorem's other term (the certified
# solution of output perturbation does not depend on eps).
PRIVACY_EXPONENT = {"output_perturbation": -2.0}


def regime_exponent(name, objective, ns, eps, delta):
    """Least-squares slope of the theorem's bound over the measured ``n`` grid."""
    bound = THEORY[name][3]
    values = [bound(objective, n, eps, delta) for n in ns]
    return float(np.polyfit(np.log(ns), np.log(values), 1)[0])


def verdict(measured, theory, tol=0.15):
    """``within`` (|difference| <= tol), ``faster`` (steeper decrease) or ``slower``."""
    if abs(measured - theory) <= tol:
        return "within"
    return "faster" if measured < theory else "SLOWER"
