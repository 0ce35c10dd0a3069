"""DP-SGDA (Yang et al. 2022, Alg. 1) and, with ``batch_size=None``, DP-GDA (Kang et al.).

Each step draws a batch from the sampler, asks the shared
:class:`~skdpminimax.solvers.oracle.NoisyGradientOracle` for noisy clipped
gradients of both blocks *at the same point* and takes a simultaneous projected
descent step in ``w`` and ascent step in ``v``.
"""

import math
import warnings
from numbers import Integral, Real

import numpy as np
from sklearn.utils._param_validation import Interval, StrOptions

from skdpminimax._compiled import kernel_unavailable, sgda_kernel
from skdpminimax.privacy.calibration import UncertifiableBudgetError
from skdpminimax.privacy.samplers import make_sampler
from skdpminimax.solvers._planning import (
    calibrate_gradient_blocks,
    initial_point,
    primal_noise_energy,
)
from skdpminimax.solvers.base import PrivateSolver, SolverResult
from skdpminimax.solvers.oracle import (
    GENERIC_CLIP,
    NoisyGradientOracle,
    blas_threads_for_steps,
    chunk_rows,
    dual_clips,
    gradients_shrink_at_fit,
    max_example_weight,
    resolve_clip_norms,
)

__all__ = ["NoisySGDA"]

# n_epochs="auto": 15 epochs, doubled towards _AUTO_TARGET_STEPS while a step's primal
# noise energy (relative to the clip) stays at most _AUTO_MAX_ENERGY. Small data sets
# otherwise get a few dozen steps, too few to fit even without noise; where the noise
# is large, more steps only add noise (benchmarks/estimator_defaults.py).
_AUTO_EPOCHS = 15
_AUTO_TARGET_STEPS = 8000
_AUTO_MAX_ENERGY = 0.5

# step_size="scaled" on a nonconvex objective (no solution scale to aim at): the mean
# step times the clip, the largest move of a step, is at most _NONCONVEX_MOVE, the
# norm of a step's noise (step * clip * sqrt(E)) at most _NONCONVEX_STEP_NOISE, and the
# norm of the whole run's accumulated noise (step * clip * sqrt(E T)) at most
# _NONCONVEX_RUN_NOISE, about twice the norm of the MLP's initial weights (~9.3 at
# 256 units). Set on six data sets (benchmarks/mlp_defaults.py, docs/benchmarks.md);
# on ijcnn1 it gives the steps validated in the Yang et al. reproduction.
_NONCONVEX_MOVE = 0.7
_NONCONVEX_STEP_NOISE = 0.3
_NONCONVEX_RUN_NOISE = 20.0


# clip_w="auto_if_quiet": where a step's primal noise energy at the typical gradient
# norm is at most _QUIET_ENERGY, clipping below the gradients buys no noise worth its
# bias, so clip at the typical norm; otherwise the generic clip. The linear AUC
# objective's default: 0.4 to 4.4 AUC points where E <= 0.1 (large data, large
# epsilon), unchanged elsewhere (docs/benchmarks.md, "The linear AUC clip").
_QUIET_ENERGY = 0.1
# ... and for a reweighting objective (max_example_weight() > 1) the clip grows towards
# that weight while k^2 E stays at most _REWEIGHT_ENERGY: the group estimators' default
# since "The group estimators' primal clip" (docs/benchmarks.md; 0.1 lost up to 5
# points at epsilon = 10 on two regression sets, 0.01 none beyond 0.9).
_REWEIGHT_ENERGY = 0.01


def _nonconvex_step_clip(energy, n_steps):
    """Mean ``step * clip`` of the nonconvex ``"scaled"`` rule (data-free):
    ``min(0.7, 0.3 / sqrt(E), 20 / sqrt(E T))``."""
    product = _NONCONVEX_MOVE
    if energy > 0:
        product = min(product, _NONCONVEX_STEP_NOISE / math.sqrt(energy),
                      _NONCONVEX_RUN_NOISE / math.sqrt(energy * n_steps))
    return product


def _ladder(n_steps, sampler=None):
    """The longer runs of the doubling ladder from ``n_steps``: ``2 n, 4 n, ...``, the
    last one ``_AUTO_TARGET_STEPS`` (for shuffled epochs the whole epochs within it:
    a partial epoch is charged in full)."""
    target = _AUTO_TARGET_STEPS
    whole = getattr(sampler, "steps_per_epoch", None)
    if whole:
        target = max(n_steps, target // whole * whole)
    rungs = []
    while n_steps < target:
        n_steps = min(2 * n_steps, target)
        rungs.append(n_steps)
    return rungs


def _longest_quiet_run(n_steps, plan, n_primal, sampler):
    """The calibration of the longest run on the doubling ladder from ``n_steps`` whose
    noise energy stays small, ``n_steps`` itself if none does (data-free).

    Each rung planned is a full noise calibration (0.5-10 s on small data, by sampler),
    and a rung by rung walk planned up to six. The energy grows with the run's length,
    about in proportion to it where the noise is large (the multiplier as its square
    root) and more slowly where it is small: the first rung tried is the last one that
    proportional growth from ``n_steps``'s energy keeps quiet, then its neighbour across
    that guess, then the rest of the ladder by bisection. The rung found is the walk's
    (the energy is monotone in the length), typically in two calibrations besides
    ``n_steps``'s."""
    calibration = plan(n_steps)
    rungs = _ladder(n_steps, sampler)
    if not rungs:
        return calibration
    energy = primal_noise_energy(calibration, n_primal, sampler)
    guess = sum(1 for n in rungs if energy * n / n_steps <= _AUTO_MAX_ENERGY) - 1
    passing, failing = -1, len(rungs)  # rungs[: passing + 1] pass; rungs[failing:] fail
    probe, tries = min(max(guess, 0), len(rungs) - 1), 0
    while failing - passing > 1:
        try:
            longer = plan(rungs[probe])
        except UncertifiableBudgetError:  # no noise certifies a run this long: too noisy
            longer = None
        if longer is None or primal_noise_energy(longer, n_primal, sampler) > _AUTO_MAX_ENERGY:
            failing = probe
        else:
            passing, calibration = probe, longer
        tries += 1
        if tries == 1:  # the guessed boundary's other side
            probe = passing + 1 if passing == probe else failing - 1
        else:
            probe = (passing + failing) // 2
    return calibration


def _auto_step_words(smooth, auto):
    """What ``step_size='auto'`` is, for a warning: a certified ``1 / smoothness()``
    only where the objective declares a finite one (``smooth``)."""
    if np.isfinite(smooth):
        return f"the certified step 1 / smoothness() = {auto:.3g}"
    return f"step_size='auto''s fallback of {auto:.3g} (smoothness() is unknown: inf)"


def _stable_step(modulus):
    """Largest step the certified curvature ``modulus`` allows (``1 / mu``; no limit
    without one). The "scaled" rule sizes the step from the noise and the solution's
    scale, not from the curvature: a strong regulariser (``alpha`` searched over
    decades, say) would otherwise make ``1 - eta mu`` fall below -1 and the iterates
    diverge; ``"auto"``'s ``1 / L`` is below it already."""
    modulus = float(modulus)
    return 1.0 / modulus if np.isfinite(modulus) and modulus > 0 else np.inf


_MIN_RMS_FRACTION = 1e-6


def _grad_rms_fraction(objective):
    """The objective's public :meth:`typical_grad_rms_fraction` (1 for a duck-typed
    objective without one), checked to lie in (0, 1]."""
    method = getattr(objective, "typical_grad_rms_fraction", None)
    fraction = 1.0 if method is None else float(method())
    if not 0.0 < fraction <= 1.0:
        raise ValueError(f"{type(objective).__name__}.typical_grad_rms_fraction() must be "
                         f"in (0, 1]; got {fraction!r}.")
    return fraction


def _curvature(objective, block):
    """The larger of the certified strong convexity (concavity) and the data-free
    term's curvature in ``block`` (0: primal, 1: dual): either bounds the stable step.
    An objective without ``reg_curvature`` (a duck-typed one) gives the former only."""
    reg = getattr(objective, "reg_curvature", None)
    reg = float(reg()[block]) if reg is not None else 0.0
    return max(float(objective.strong_convexity()[block]), reg)


class NoisySGDA(PrivateSolver):
    r"""Noisy stochastic gradient descent-ascent with per-example clipping.

    .. math::

        w_{t+1} = \Pi_W(w_t - \eta^w_t \tilde g^w_t), \qquad
        v_{t+1} = \Pi_V(v_t + \eta^v_t \tilde g^v_t),

    where ``g~`` are the oracle's noisy clipped batch means at ``(w_t, v_t)``.

    Parameters
    ----------
    batch_size : int or None, default=64
        Expected (Poisson) or exact (without replacement) batch size. ``None`` uses
        the full data set every step: DP-GDA.
    n_epochs : float or "auto", default=15
        Passes over the data; gives ``n_iter = ceil(n_epochs * n_samples / batch_size)``
        (for full batch, ``ceil(n_epochs)``; for ``sampler="shuffle"``,
        ``ceil(n_epochs * (n_samples // batch_size))``, epochs of whole batches).
        Ignored when ``n_iter`` is set.
        ``"auto"``: 15 epochs, lengthened on small data sets (doubling, up to 8,000
        steps) as long as a step's primal noise energy relative to the clip,
        ``E = d_w (z_w s / m)^2`` after calibration for the longer run, stays at most
        0.5: more steps where the noise allows, never fewer than 15 epochs. Planned
        from public quantities only (the planning size, the budget, the dimensions;
        the group estimators' dimensions count classes or groups, whose labels they
        declare public).
        With ``batch_size=None`` (full batch) it is 15 steps.
    n_iter : int or None, default=None
        Number of steps, fixed in advance (the noise depends on it).
    step_size : float, "auto" or "scaled", default="auto"
        Primal step size ``eta^w``; ``"auto"`` uses ``1 / L`` with ``L`` the
        objective's smoothness bound (0.1 when it is unknown): safe, but slow where
        the certified ``L`` is far above the curvature met. ``"scaled"`` uses
        ``max(auto, D / (r C_w sqrt(T)) / (1 + E / r^2)^2)``: the convex step for a
        solution of norm ``D`` (the objective's public ``typical_solution_norm()``;
        ``"auto"`` when it has none) and gradients of RMS ``r C_w``, ``C_w`` the
        primal clip (at most 1 where ``clip_w="auto_if_quiet"`` raised it for heavy
        examples), ``r`` the objective's public ``typical_grad_rms_fraction()`` (1 by
        default; ``2 sqrt(p (1 - p))`` for the AUC objective), ``T`` the steps and
        ``E = d_w (z_w s / m)^2`` a step's primal noise energy relative to the clip.
        It is never below ``"auto"`` and falls back to it as the noise grows, and never
        above ``1 / mu`` for a certified strong convexity ``mu``, nor above ``1 / c``
        for the data-free term's curvature ``c`` (``reg_curvature()``; a large
        ``alpha`` would otherwise make the regulariser's own update diverge, the MLP's
        included); meant
        for an averaged iterate (its larger constant step leaves more sampling noise
        in the last one). On a nonconvex objective (the MLP scorer, which has no
        solution scale) ``"scaled"`` sets ``step * C_w``, the largest move of a step,
        to ``min(0.7, 0.3 / sqrt(E), 20 / sqrt(E T))``: a step's noise of norm at most
        0.3 and the run's accumulated noise at most 20, about twice the norm of the
        MLP's initial weights; with ``schedule="linear"`` that is the mean step and
        the decay starts at twice it. Convex objectives without a solution scale
        get ``"auto"``. All of it is data-free: no privacy cost.
    dual_step_size : float or None, default=None
        Dual step size ``eta^v``; ``None`` uses ``step_size``.
    schedule : {"constant", "inverse_sqrt", "linear", "strongly_convex"}, default="constant"
        ``eta_t = eta``, ``eta / sqrt(t)``, ``eta (1 - (t - 1) / T)`` (linear decay
        from ``eta`` to ``eta / T`` over the ``T`` steps, meant for
        ``average="last"``: in convex minimisation its last iterate matches the
        worst-case rate of the averaged iterate, Defazio et al. 2023), or Kang et
        al.'s ``min(eta, 1/(mu t))`` per block with ``mu`` the objective's certified
        strong convexity / concavity. Every schedule is fixed before training and
        does not depend on the data, so none changes the privacy guarantee.
    average : {"uniform", "tail", "last"}, default="uniform"
        Release the average of the ``T`` iterates the gradients were taken at,
        ``w_1..w_T`` in the papers' numbering (``w_1`` the start, the last update's
        ``w_{T+1}`` excluded: convex-concave theory), of their second half, or the
        last iterate ``w_{T+1}`` (nonconvex theory). Post-processing only.
    sampler : {"poisson", "without_replacement", "shuffle"}, default="poisson"
        Batch sampling; fixes the neighbouring relation (add/remove-one for Poisson,
        replace-one otherwise and for full batch). ``"shuffle"``: epochs of random
        reshuffling (a fresh permutation per epoch cut into ``n // batch_size``
        batches), accounted without amplification as one Gaussian release per epoch
        (:class:`~skdpminimax.privacy.ShuffledEpochs`): far more noise than Poisson
        sampling at the same epsilon, so meant for ``epsilon=np.inf`` (the loader of
        non-private baselines) or for few epochs of large batches.
    clip_w, clip_v : float, "auto" or None, default=1.0
        (``clip_w`` also ``"scaled"`` or ``"auto_if_quiet"``)
        Per-example clip norms of the primal and dual blocks, capped at the
        objective's certified Lipschitz bounds (``None``: clip at those bounds, which
        is unbiased but can be very noisy). Smaller values add less noise and more
        bias. ``"auto"``: the objective's ``typical_grad_norms()`` (public), and
        for ``clip_v`` one clip per dual coordinate where the objective declares
        ``typical_dual_clips`` (group DRO: each group's loss at the start over its
        frequency, lowered for groups rarer than the step's noise; the noise then
        follows each coordinate's clip, see :func:`~skdpminimax.solvers.oracle.dual_clips`).
        ``clip_w="scaled"``: that typical norm divided by ``sqrt(1 + E)``, ``E`` a step's
        primal noise energy relative to the clip (as in ``step_size``, calibrated at
        the typical norm): the typical norm without noise, a smaller clip (more
        robust directions, less noise per unit of signal) as the noise grows; for an
        objective that weighs its examples (``max_example_weight() = W > 1``) times up
        to ``W`` while ``k^2 E <= 0.01``, the step staying the one at the typical norm.
        ``clip_w="auto_if_quiet"``: that typical norm where the noise is negligible
        (``E <= 0.1`` at the typical norm: large data or large epsilon, where a clip
        below the gradients only biases the fit), else 1.0 or the typical norm if that
        is smaller; for an objective that
        weighs its examples (``max_example_weight() = W > 1``, group DRO's
        ``1 / pi_min``) the quiet clip is the typical norm times
        ``max(1, min(W, sqrt(0.01 / E)))``, so that heavy examples keep their weight
        while the noise stays small. For an objective whose gradients shrink at a fit
        (``gradients_shrink_at_fit()``: a squared loss, whose typical norm is the start
        point's), the clip instead grows continuously as the noise falls,
        ``max(min(1, c), min(sqrt(0.1 / E), c W))`` with ``c`` the typical norm:
        quiet against a unit gradient. Data-free.
    noise_allocation : {"dimension", "equal"} or float, default="dimension"
        How one step's privacy loss is split between the blocks: ``"dimension"``
        minimises the total noise energy (share proportional to
        ``clip * sqrt(dim)``), ``"equal"`` uses one multiplier for both, a float is
        the dual block's share.
    accounting : {"pld", "rdp"}, default="pld"
        Accountant used for calibration (RDP is forced where PLD does not apply).
    backend : {"auto", "numpy", "numba"}, default="auto"
        Who takes the steps: ``"numba"`` a compiled kernel (needs the optional numba
        and an objective that has one: the linear-scorer AUC objective today),
        ``"numpy"`` the reference loop, ``"auto"`` the kernel when available. Both
        consume the same batches and noise draws and agree to rounding; privacy does
        not depend on the choice.

    Notes
    -----
    **Privacy.** Each step releases the two blocks' noisy clipped sums of one batch.
    Per-example clipping bounds a block's sum sensitivity by ``C_b`` (add/remove) or
    ``2 C_b`` (replace-one); noise ``z_b * sensitivity`` per block with
    ``z_w^-2 + z_v^-2 = z^-2`` makes the pair one Gaussian mechanism with multiplier
    ``z``, composed over ``n_iter`` subsampled steps by ``dp_accounting`` (PLD for full batch and Poisson, the
    Wang-Balle-Kasiviswanathan RDP bound without replacement). ``z`` is the smallest
    value whose certified epsilon is within the budget. Yang et al. (2022, Thm. 1)
    and Kang et al. (Thm. 1) state the guarantee with unspecified constants and one
    block's cost; this calibration counts both. Everything else (projection,
    averaging) is post-processing. The number of steps is fixed before training.
    """

    composes_preceding = True  # its calibration composes budget.preceding

    _parameter_constraints = {
        "batch_size": [Interval(Integral, 1, None, closed="left"), None],
        "n_epochs": [Interval(Real, 0, None, closed="neither"), StrOptions({"auto"})],
        "n_iter": [Interval(Integral, 1, None, closed="left"), None],
        "step_size": [Interval(Real, 0, None, closed="neither"),
                      StrOptions({"auto", "scaled"})],
        "dual_step_size": [Interval(Real, 0, None, closed="neither"), None],
        "schedule": [StrOptions({"constant", "inverse_sqrt", "linear", "strongly_convex"})],
        "average": [StrOptions({"uniform", "tail", "last"})],
        "sampler": [StrOptions({"poisson", "without_replacement", "shuffle"})],
        "clip_w": [Interval(Real, 0, None, closed="neither"),
                   StrOptions({"auto", "scaled", "auto_if_quiet"}), None],
        "clip_v": [Interval(Real, 0, None, closed="neither"), StrOptions({"auto"}), None],
        "noise_allocation": [StrOptions({"dimension", "equal"}),
                             Interval(Real, 0, 1, closed="neither")],
        "accounting": [StrOptions({"pld", "rdp"})],
        "backend": [StrOptions({"auto", "numpy", "numba"})],
    }

    def __init__(
        self,
        batch_size=64,
        n_epochs=15,
        n_iter=None,
        step_size="auto",
        dual_step_size=None,
        schedule="constant",
        average="uniform",
        sampler="poisson",
        clip_w=GENERIC_CLIP,
        clip_v=1.0,
        noise_allocation="dimension",
        accounting="pld",
        backend="auto",
    ):
        self.batch_size = batch_size
        self.n_epochs = n_epochs
        self.n_iter = n_iter
        self.step_size = step_size
        self.dual_step_size = dual_step_size
        self.schedule = schedule
        self.average = average
        self.sampler = sampler
        self.clip_w = clip_w
        self.clip_v = clip_v
        self.noise_allocation = noise_allocation
        self.accounting = accounting
        self.backend = backend

    # ---- data-free planning -------------------------------------------------
    def _make_sampler(self, n_samples):
        return make_sampler(self.sampler, n_samples, self.batch_size)

    def _n_steps(self, sampler):
        if self.n_iter is not None:
            return int(self.n_iter)
        epochs = _AUTO_EPOCHS if self.n_epochs == "auto" else self.n_epochs
        whole = getattr(sampler, "steps_per_epoch", None)
        if whole is not None:  # shuffled epochs of n // m batches: no spill into another
            return max(1, math.ceil(epochs * whole))
        return max(1, math.ceil(epochs * sampler.n_samples / sampler.batch_size))

    def fix_plan(self, calibration):
        """Run ``calibration.n_steps`` steps (``n_iter``): ``n_epochs="auto"`` lengthens
        the run by the primal block's noise, whose share follows the clips, and so the
        objective's constants (see :meth:`PrivateSolver.fix_plan`)."""
        return self.set_params(n_iter=int(calibration.n_steps))

    def calibrate(self, objective, n_samples, budget):
        """Joint and per-block noise multipliers for ``n_iter`` steps (data-free).

        Also refuses a configuration this objective cannot run (``schedule``,
        ``backend``): estimators calibrate before they spend, so such errors come first.
        """
        self._validate_params()
        self._check_objective(objective)
        sampler = self._make_sampler(n_samples)

        def plan(n_steps):
            clip_w = self._primal_clip(objective, sampler, n_steps, budget)
            return calibrate_gradient_blocks(
                objective, sampler, n_steps, budget, self.accounting,
                clip_w, self.clip_v, self.noise_allocation,
            )

        # Full batch: a step is an epoch, and thousands of them are no default on large data.
        if self.n_iter is None and self.n_epochs == "auto" and self.batch_size is not None:
            calibration = _longest_quiet_run(self._n_steps(sampler), plan, objective.n_primal,
                                             sampler)
        else:
            calibration = plan(self._n_steps(sampler))
        # The objective's per-coordinate dual clips, as solve will ask for them (public
        # inputs only): a malformed typical_dual_clips fails here, before the spend.
        dual_clips(objective, self.clip_v, 1.0,
                   (calibration.block_noise_multipliers or (0.0, 0.0))[1], sampler)
        if self.step_size == "scaled":  # and a malformed typical_grad_rms_fraction
            _grad_rms_fraction(objective)
        return calibration

    def _primal_clip(self, objective, sampler, n_steps, budget):
        """``clip_w`` as given, or the noise-dependent rules ``"scaled"`` (the typical
        norm over ``sqrt(1 + E)``) and ``"auto_if_quiet"`` (the typical norm where
        ``E <= 0.1``, else 1), both times up to ``max_example_weight()`` while
        ``k^2 E <= 0.01`` (for ``gradients_shrink_at_fit()``, ``"auto_if_quiet"`` grows
        continuously instead); ``E`` calibrated at the typical norm."""
        if self.clip_w not in ("scaled", "auto_if_quiet"):
            return self.clip_w
        typical = resolve_clip_norms(objective, "auto", self.clip_v)[0]
        at_typical = calibrate_gradient_blocks(
            objective, sampler, n_steps, budget, self.accounting,
            typical, self.clip_v, self.noise_allocation,
        )
        energy = primal_noise_energy(at_typical, objective.n_primal, sampler)
        # Reweighting objectives (worst-group risk: q_g / pi_g; parity's multipliers over
        # pi_g) move examples' gradients up to max_example_weight() times the typical
        # norm. Where the noise is quiet, room for them: the clip grows k-fold, k up to
        # that weight, while the noise relative to a typical gradient stays small
        # (k^2 E <= _REWEIGHT_ENERGY). 1 elsewhere, and for unweighted objectives.
        room = math.sqrt(_REWEIGHT_ENERGY / energy) if energy > 0 else math.inf
        reweight = max(1.0, min(max_example_weight(objective), room))
        if self.clip_w == "auto_if_quiet":
            if gradients_shrink_at_fit(objective):
                # The typical norm is the start point's, far above a fitted model's
                # residual gradients: grow the clip from the generic one only as the noise
                # falls, keeping it quiet against a unit gradient (E c^2 <= 0.1), up to
                # the largest example's gradient. Continuous in E: no jump at E = 0.1.
                quiet = math.sqrt(_QUIET_ENERGY / energy) if energy > 0 else math.inf
                largest = typical * max(1.0, max_example_weight(objective))
                return max(min(GENERIC_CLIP, typical), min(quiet, largest))
            if energy > _QUIET_ENERGY:
                # The generic clip, but never above the typical norm: on rows of a small
                # public bound (data_norm < 2 for the AUC objective) 1 clips nothing and
                # only adds noise.
                return min(GENERIC_CLIP, typical)
            return typical * reweight
        return typical / math.sqrt(1.0 + energy) * reweight

    def _check_objective(self, objective):
        if self.schedule == "strongly_convex" and min(objective.strong_convexity()) <= 0:
            raise ValueError(
                "schedule='strongly_convex' needs a strongly-convex-strongly-concave "
                "objective (add a regulariser)."
            )
        if self.backend == "numba":
            reason = kernel_unavailable(objective)
            if reason is not None:
                raise ValueError(f"backend='numba' is unavailable: {reason}.")

    def _step_sizes(self, objective, calibration, sampler, clip_w):
        eta = self.step_size
        if eta in ("auto", "scaled"):
            smooth = objective.smoothness()
            auto = 1.0 / smooth if np.isfinite(smooth) else 0.1
            scaled = eta == "scaled" and np.isfinite(clip_w)
            scale = objective.typical_solution_norm() if scaled else None
            eta = auto
            if scaled:
                energy = primal_noise_energy(calibration, objective.n_primal, sampler)
                if scale is not None:
                    # The convex step D / (G sqrt T) for gradients of norm G: the clip.
                    grad_scale = clip_w
                    if max_example_weight(objective) > 1.0:
                        # The clip was raised to keep reweighted examples whole; the
                        # weights average to 1, so the step stays the one before that
                        # room: at the generic clip (the group defaults were validated
                        # with it) for "auto_if_quiet", at the typical norm for "scaled".
                        if self.clip_w == "auto_if_quiet":
                            grad_scale = min(clip_w, GENERIC_CLIP)
                        elif self.clip_w == "scaled":
                            grad_scale = min(clip_w, resolve_clip_norms(
                                objective, "auto", self.clip_v)[0])
                    # G is the gradient's RMS: a fraction of the clip where examples
                    # carry unequal public weights; the noise is measured against it.
                    # (The floor keeps the arithmetic finite for an absurd fraction,
                    # e.g. a declared pos_ratio of 1e-160: it overflowed after the spend.)
                    rms = max(_grad_rms_fraction(objective), _MIN_RMS_FRACTION)
                    damping = 1.0 + energy / rms ** 2
                    # In Python floats: a step beyond float64 (data_norm 1e-200) is inf
                    # without an overflow warning; the curvature cap below bounds it.
                    eta = max(auto, float(scale) / (float(rms) * float(grad_scale)
                                                    * math.sqrt(calibration.n_steps))
                              / damping / damping)
                elif objective.strong_convexity()[0] < 0:  # nonconvex (the MLP)
                    eta = _nonconvex_step_clip(energy, calibration.n_steps) / clip_w
                    if self.schedule == "linear":  # the mean step: start at twice it
                        eta *= 2.0
                else:  # a user objective that did not declare its scale: say so
                    warnings.warn(
                        f"step_size='scaled': {type(objective).__name__} declares no "
                        f"typical_solution_norm(), so {_auto_step_words(smooth, auto)} "
                        "is used (as step_size='auto'). Declare the public scale, or pass "
                        "a numeric step.", UserWarning)
            # Both rules: "auto"'s 0.1 (no smoothness known, the MLP) can exceed it too.
            eta = min(eta, _stable_step(_curvature(objective, 0)))
        eta_v = eta if self.dual_step_size is None else self.dual_step_size
        if self.dual_step_size is None and self.step_size in ("auto", "scaled"):
            eta_v = min(eta_v, _stable_step(_curvature(objective, 1)))
        return float(eta), float(eta_v)

    def _schedule(self, objective, eta_w, eta_v, n_steps):
        t = np.arange(1, n_steps + 1, dtype=float)
        if self.schedule == "constant":
            return np.full(n_steps, eta_w), np.full(n_steps, eta_v)
        if self.schedule == "inverse_sqrt":
            return eta_w / np.sqrt(t), eta_v / np.sqrt(t)
        if self.schedule == "linear":
            decay = 1.0 - (t - 1.0) / n_steps
            return eta_w * decay, eta_v * decay
        mu_w, mu_v = objective.strong_convexity()  # both > 0: checked by calibrate
        return np.minimum(eta_w, 1.0 / (mu_w * t)), np.minimum(eta_v, 1.0 / (mu_v * t))

    def _chunk_runner(self, objective, oracle):
        """The compiled chunk runner if the backend allows and one exists, else numpy's."""
        if self.backend != "numpy":
            kernel = sgda_kernel(objective, oracle)
            if kernel is not None:  # backend="numba" without a kernel was refused by calibrate
                def run_kernel(w, v, sum_w, sum_v, indices, starts, stops, noise, *steps):
                    kernel(w, v, sum_w, sum_v, indices, starts, stops, noise, *steps)
                    # the noise rows it added, on the chunk's batches (run log)
                    oracle.consumed(len(starts), chunk_rows(indices, starts, stops))

                return run_kernel
        W, V = objective.primal_set, objective.dual_set

        def run(w, v, sum_w, sum_v, indices, starts, stops, noise, etas_w, etas_v,
                first_averaged):
            # Updates w, v, sum_w, sum_v in place, like the compiled runner.
            etas_w, etas_v = etas_w.tolist(), etas_v.tolist()  # Python floats: cheaper
            w_t, v_t = w, v
            for j, (a, b) in enumerate(zip(starts.tolist(), stops.tolist())):
                if j >= first_averaged:
                    sum_w += w_t
                    sum_v += v_t
                idx = None if indices is None else indices[a:b]
                g_w, g_v = oracle.noisy_grads(w_t, v_t, idx, None if noise is None else noise[j])
                w_t = W.project(w_t - etas_w[j] * g_w)
                v_t = V.project(v_t + etas_v[j] * g_v)
            w[:], v[:] = w_t, v_t

        return run

    # ---- the algorithm -------------------------------------------------------
    def solve(self, objective, data, budget, rng, *, init=None):
        """Run DP-SGDA; the result is ``budget``-DP (see Notes)."""
        # Planned on the public size (the rows' count unless the estimator says
        # otherwise, see SaddleData.public_size); drawn from the rows present.
        calibration = self.calibrate(objective, data.planning_size, budget)
        sampler = self._make_sampler(data.planning_size)
        clip_w, clip_v = resolve_clip_norms(
            objective, self._primal_clip(objective, sampler, calibration.n_steps, budget),
            self.clip_v)
        n_steps = calibration.n_steps
        # The steps too are planned on the planned sampler, before it is laid over the rows.
        etas_w, etas_v = self._schedule(
            objective, *self._step_sizes(objective, calibration, sampler, clip_w), n_steps)
        multipliers = calibration.block_noise_multipliers or (0.0, 0.0)
        clip_v = dual_clips(objective, self.clip_v, clip_v, multipliers[1], sampler)
        sampler = sampler.over_rows(data.n_samples)
        oracle = NoisyGradientOracle(objective, data, sampler, multipliers, clip_w, clip_v, rng)

        w, v = initial_point(objective, rng, init)
        first_averaged = {"uniform": 0, "tail": n_steps // 2, "last": n_steps}[self.average]
        sum_w, sum_v = np.zeros_like(w), np.zeros_like(v)
        run_chunk = self._chunk_runner(objective, oracle)

        # Batches and noise are drawn a chunk of steps at a time, batches first: the
        # same random stream whichever runner takes the steps.
        chunk = oracle.max_chunk(w.size, v.size)
        first = 0
        with blas_threads_for_steps(sampler.batch_size, w.size + v.size):
            for indices, starts, stops in sampler.batch_chunks(rng, n_steps, chunk):
                k = len(starts)
                noise = oracle.noise_block(k, w.size, v.size)
                run_chunk(w, v, sum_w, sum_v, indices, starts, stops, noise,
                          etas_w[first : first + k], etas_v[first : first + k],
                          first_averaged - first)
                first += k

        n_averaged = n_steps - first_averaged
        w_out = w if n_averaged == 0 else sum_w / n_averaged
        v_out = v if n_averaged == 0 else sum_v / n_averaged
        return SolverResult(
            w=w_out,
            v=v_out,
            n_iter=n_steps,
            calibration=calibration,
            info={"w_last": w, "v_last": v, "clip_w": clip_w, "clip_v": clip_v,
                  "step_size": float(etas_w[0]), "dual_step_size": float(etas_v[0])},
            diagnostics={"n_grad_evals": oracle.n_grad_evals},
        )
