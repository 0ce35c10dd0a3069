"""Data-free planning shared by the solvers in this package.

Small helpers that turn public quantities (objective constants, ``n_samples``,
budget, hyperparameters) into what a solver needs before it touches data.
"""

import dataclasses
import math

import numpy as np

from skdpminimax.privacy.calibration import calibrate_noise_multiplier, split_noise_multiplier
from skdpminimax.solvers.oracle import noise_shares, resolve_clip_norms

__all__ = ["calibrate_gradient_blocks", "declared_smoothness", "initial_point", "noise_energy",
           "operator_lipschitz", "primal_noise_energy"]


def noise_energy(dim, noise_multiplier, clip, sampler):
    """``dim * sigma^2``: the squared norm of one release's noise on the *mean* gradient
    of a block of dimension ``dim``, whose per-coordinate std is ``z s C / m`` (``s``
    the sampler's sensitivity factor, ``m`` its normalizer). With ``clip=1`` it is the
    energy relative to the clipped gradient. Public: no data."""
    return dim * (noise_multiplier * sampler.sensitivity_factor * clip
                  / sampler.normalizer) ** 2


def primal_noise_energy(calibration, n_primal, sampler):
    """:func:`noise_energy` of a calibration's primal block per unit clip (0 without
    noise): how much a step's primal noise outweighs a clipped gradient."""
    z_w = (calibration.block_noise_multipliers or (0.0,))[0]
    return noise_energy(n_primal, z_w, 1.0, sampler)


def calibrate_gradient_blocks(objective, sampler, n_releases, budget, accounting,
                              clip_w, clip_v, noise_allocation, noise_ratios=(1.0,)):
    """Calibrate ``n_releases`` oracle calls and split the joint multiplier per block.

    Each call of :class:`~skdpminimax.solvers.oracle.NoisyGradientOracle` is one
    whitened Gaussian release of both blocks; ``sampler`` says how the calls'
    batches are drawn (and so how many of them one example can affect). The budget's
    ``preceding`` releases are composed with the calls.
    """
    calibration = calibrate_noise_multiplier(
        sampler, n_releases, budget.epsilon, budget.delta, accounting, noise_ratios,
        preceding=getattr(budget, "preceding", ()),
    )
    clips = resolve_clip_norms(objective, clip_w, clip_v)
    w0, v0 = objective.init_params()
    shares = noise_shares(noise_allocation, (w0.size, v0.size), clips)
    return dataclasses.replace(
        calibration,
        block_noise_multipliers=split_noise_multiplier(calibration.noise_multiplier, shares),
    )


def initial_point(objective, rng, init):
    """Projected start ``(w, v)``: the objective's data-free one, or ``init`` (copied)."""
    w, v = objective.init_params(rng) if init is None else init
    # Copied as floats: an integer start would fail at the first step, after the spend.
    w, v = np.array(w, dtype=float), np.array(v, dtype=float)
    return objective.primal_set.project(w), objective.dual_set.project(v)


def declared_smoothness(objective):
    """``objective.smoothness()``, checked against its ``reg_curvature()`` before any
    spend: the bound covers the whole gradient map, ``reg_grad``'s part included (a
    solver that plans from it iterates both), so it cannot be below the data-free
    term's curvature. A bound of the data term alone (the usual misreading) would let
    NISPP's inner solve diverge and its released point move past the sensitivity its
    noise covers: refused."""
    smooth = float(objective.smoothness())
    reg = getattr(objective, "reg_curvature", None)
    curvature = max(float(c) for c in reg()) if reg is not None else 0.0
    if math.isfinite(smooth) and curvature > smooth:
        raise ValueError(
            f"{type(objective).__name__}.smoothness() = {smooth:g} is below its "
            f"reg_curvature() = {curvature:g}: smoothness() must bound the whole gradient "
            "map, the data term's and reg_grad's together (e.g. the data term's bound plus "
            "the regulariser's curvature, as RegularizedObjective does). Nothing was spent.")
    return smooth


def operator_lipschitz(objective, default=None):
    """Lipschitz bound of the saddle operator ``(grad_w, -grad_v)``
    (``objective.smoothness()``).

    ``default`` is returned when the objective declares none (``np.inf``); with
    ``default=None`` that is an error, and the bound is checked
    (:func:`declared_smoothness`): a solver that needs it (NISPP) plans its privacy on
    it, before the spend, where a step size read from it (NSEG) is chosen after.
    """
    smooth = (declared_smoothness(objective) if default is None
              else float(objective.smoothness()))
    if math.isfinite(smooth) and smooth > 0:
        return smooth
    if default is None:
        raise ValueError(
            "This solver needs a finite smoothness() bound of the objective's gradient map; "
            f"{type(objective).__name__} declares none (a nonconvex scorer such as the MLP, "
            "say). Use solver='sgda', which clips and needs no such bound."
        )
    return float(default)
