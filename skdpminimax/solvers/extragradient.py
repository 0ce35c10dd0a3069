"""NSEG: noisy stochastic extragradient (Boob & Guzman 2023, Algorithm 1).

Each iteration makes two noisy operator evaluations, each on its own batch and
each a release of the shared
:class:`~skdpminimax.solvers.oracle.NoisyGradientOracle`: one at the current point
``u`` to find the extrapolated point ``x``, one at ``x`` to update ``u``. The
release is the step-size weighted average of the extrapolated points.
"""

import math
from numbers import Integral, Real

import numpy as np
from sklearn.utils._param_validation import Interval, StrOptions

from skdpminimax._compiled import kernel_unavailable, nseg_kernel
from skdpminimax.privacy.samplers import make_sampler
from skdpminimax.solvers._planning import (
    calibrate_gradient_blocks,
    initial_point,
    noise_energy,
    operator_lipschitz,
)
from skdpminimax.solvers.base import PrivateSolver, SolverResult
from skdpminimax.solvers.oracle import (
    NoisyGradientOracle,
    blas_threads_for_steps,
    chunk_rows,
    resolve_clip_norms,
)

__all__ = ["NoisyExtragradient"]

# Step size when the objective declares no smoothness bound (as NoisySGDA).
_FALLBACK_STEP = 0.1


class NoisyExtragradient(PrivateSolver):
    r"""Noisy stochastic extragradient (NSEG) with per-example clipping.

    With the saddle operator :math:`F(w, v) = (\nabla_w \phi, -\nabla_v \phi)` and
    :math:`\tilde F_{B}` the oracle's noisy clipped mean on batch ``B``:

    .. math::

        x_t = \Pi(u_{t-1} - \gamma \tilde F_{B^1_t}(u_{t-1})), \qquad
        u_t = \Pi(u_{t-1} - \gamma \tilde F_{B^2_t}(x_t)), \qquad
        \bar x_T = \frac{\sum_t \gamma_t x_t}{\sum_t \gamma_t}.

    Parameters
    ----------
    mode : {"single_pass", "multi_pass"}, default="single_pass"
        ``"single_pass"``: the ``2T`` batches are disjoint chunks of one random
        permutation, so every example is used at most once (``T = n // (2 B)``);
        Boob & Guzman bound the *strong* gap (Cor. 1). ``"multi_pass"``: every
        evaluation draws a fresh batch from ``sampler``; the guarantee is on the
        *weak* gap (Thm. 4).
    batch_size : int, "auto" or None, default="auto"
        Size of each of the two batches of an iteration. ``"auto"``: single pass
        uses Corollary 1's ``round(sqrt(d log(1/delta)) / epsilon)`` (at least 1, at
        most ``n // 2``); multi pass uses ``min(64, n)``. ``None`` (multi pass
        only) uses every example at every evaluation (full-batch noisy EG).
    n_iter : int or None, default=None
        Iterations ``T`` (each makes two releases). Single pass: at most
        ``n // (2 B)``, which is the default. Multi pass: default
        ``ceil(n_epochs * n / (2 B))`` (``sampler="shuffle"``:
        ``floor(n_epochs * (n // B) / 2)``, whole epochs of ``n // B`` batches).
    n_epochs : float, default=10
        Multi pass only: passes over the data when ``n_iter`` is None.
    step_size : float or "auto", default="auto"
        Constant ``gamma``. ``"auto"`` is Corollary 1's
        ``D / (M sqrt(7 T (1 + d sigma^2 / M^2)))`` capped at Theorem 2's
        ``1 / (sqrt(3) L)`` (``D``: joint diameter, ``M``: joint clip norm, taken
        as 0 for full batches, ``sigma``: noise std per coordinate of the mean, in
        root mean square over the two releases when ``extrapolation_noise`` is not 1,
        ``L``: smoothness).
    sampler : {"without_replacement", "poisson", "shuffle"}, default="without_replacement"
        Multi pass only: batch sampling (replace-one, as in the paper, or
        add/remove-one; ``"shuffle"``, epochs of random reshuffling accounted as one
        Gaussian release per epoch, is meant for ``epsilon=np.inf``: see
        :class:`~skdpminimax.privacy.ShuffledEpochs`).
    clip_w, clip_v : float or None, default=1.0
        Per-example clip norms of the primal and dual blocks (capped at the
        objective's certified bounds; ``None`` clips at those bounds).
    noise_allocation : {"dimension", "equal"} or float, default="dimension"
        Split of one release's privacy loss between the blocks (see
        :func:`~skdpminimax.solvers.oracle.noise_shares`).
    extrapolation_noise : float, default=1.0
        Noise of the extrapolation release (at ``u``) relative to the update release
        (at ``x``); 1 is the paper's equal noise. The update's noise accumulates in
        ``u`` while the extrapolation's enters ``u`` only through ``gamma`` times the
        operator's change, so a ratio above 1 buys the update less noise for the same
        budget (multi pass with a subsampling sampler; in single pass, and over
        shuffled epochs, an example's releases are charged at the least noisy kind and
        the ratio buys nothing). The two kinds are composed each as often as it occurs.
    accounting : {"pld", "rdp"}, default="pld"
        Accountant used for calibration (RDP where PLD does not apply).
    backend : {"auto", "numpy", "numba"}, default="auto"
        Who takes the iterations: ``"numba"`` a compiled kernel (needs the optional
        numba and an objective that has one: the linear-scorer AUC objective today),
        ``"numpy"`` the reference loop, ``"auto"`` the kernel when available. Both
        consume the same batches and noise draws and agree to rounding; privacy does
        not depend on the choice.

    Notes
    -----
    **Privacy.** Every operator evaluation is one release of the shared oracle:
    per-block clipped sums of its batch plus Gaussian noise, both blocks one
    whitened Gaussian mechanism with joint multiplier ``z`` calibrated by
    ``dp_accounting`` (replace-one sensitivity ``2 C_b`` per block sum, or ``C_b``
    under add/remove with Poisson sampling). Single pass: the ``2T`` batches are
    disjoint chunks of a data-independent permutation, so each example affects
    one release and parallel composition (Boob & Guzman 2023, Prop. 4 and Prop. 5)
    makes the run cost one Gaussian release: the accountant composes the event
    once. Multi pass: the ``2T`` subsampled releases are composed, ``T`` of each
    kind when ``extrapolation_noise`` is not 1 (the paper's
    Prop. 7 counts ``T`` with an unspecified-constant moments bound; its sigma is
    too small, so it is not used). Iterates, projections and averaging are
    post-processing; ``T`` and ``gamma`` depend on public quantities only: the
    size they are planned on is ``data.planning_size`` (a released or declared size
    under Poisson sampling).
    """

    composes_preceding = True  # its calibration composes budget.preceding

    _parameter_constraints = {
        "mode": [StrOptions({"single_pass", "multi_pass"})],
        "batch_size": [Interval(Integral, 1, None, closed="left"), StrOptions({"auto"}), None],
        "n_iter": [Interval(Integral, 1, None, closed="left"), None],
        "n_epochs": [Interval(Real, 0, None, closed="neither")],
        "step_size": [Interval(Real, 0, None, closed="neither"), StrOptions({"auto"})],
        "sampler": [StrOptions({"without_replacement", "poisson", "shuffle"})],
        "clip_w": [Interval(Real, 0, None, closed="neither"), None],
        "clip_v": [Interval(Real, 0, None, closed="neither"), None],
        "noise_allocation": [StrOptions({"dimension", "equal"}),
                             Interval(Real, 0, 1, closed="neither")],
        "extrapolation_noise": [Interval(Real, 0, None, closed="neither")],
        "accounting": [StrOptions({"pld", "rdp"})],
        "backend": [StrOptions({"auto", "numpy", "numba"})],
    }

    def __init__(
        self,
        mode="single_pass",
        batch_size="auto",
        n_iter=None,
        n_epochs=10,
        step_size="auto",
        sampler="without_replacement",
        clip_w=1.0,
        clip_v=1.0,
        noise_allocation="dimension",
        extrapolation_noise=1.0,
        accounting="pld",
        backend="auto",
    ):
        self.mode = mode
        self.batch_size = batch_size
        self.n_iter = n_iter
        self.n_epochs = n_epochs
        self.step_size = step_size
        self.sampler = sampler
        self.clip_w = clip_w
        self.clip_v = clip_v
        self.noise_allocation = noise_allocation
        self.extrapolation_noise = extrapolation_noise
        self.accounting = accounting
        self.backend = backend

    # ---- data-free planning -------------------------------------------------
    def _batch_size(self, objective, n_samples, budget):
        if self.batch_size != "auto":
            return self.batch_size
        if self.mode == "multi_pass":
            return min(64, n_samples)
        if not budget.is_private:
            return 1
        dim = objective.n_primal + objective.n_dual
        b = round(math.sqrt(dim * math.log(1.0 / budget.delta)) / budget.epsilon)
        return int(min(max(b, 1), max(n_samples // 2, 1)))

    def _plan(self, objective, n_samples, budget):
        """``(sampler, T)``: how batches are drawn and how many iterations run."""
        batch = self._batch_size(objective, n_samples, budget)
        if self.mode == "single_pass":
            if batch is None:
                raise ValueError("mode='single_pass' needs a batch size (disjoint chunks).")
            max_iter = n_samples // (2 * batch)
            if max_iter < 1:
                raise ValueError(
                    f"Single-pass NSEG needs 2 * batch_size <= n_samples; got batch_size={batch} "
                    f"and n_samples={n_samples}."
                )
            if self.n_iter is not None and self.n_iter > max_iter:
                raise ValueError(
                    f"Single-pass NSEG can run at most n_samples // (2 * batch_size) = {max_iter} "
                    f"iterations; n_iter={self.n_iter}."
                )
            n_iter = max_iter if self.n_iter is None else self.n_iter
            return make_sampler("disjoint", n_samples, batch), n_iter
        sampler = make_sampler(self.sampler, n_samples, batch)
        if self.n_iter is not None:
            return sampler, self.n_iter
        whole = getattr(sampler, "steps_per_epoch", None)
        if whole is not None:
            # Shuffled epochs of n // m batches: the iterations their releases fill, so
            # that no pair spills into an epoch more (charged in full).
            return sampler, max(1, math.floor(self.n_epochs * whole / 2))
        return sampler, max(1, math.ceil(self.n_epochs * n_samples / (2 * sampler.batch_size)))

    def calibrate(self, objective, n_samples, budget):
        """Noise for the ``2T`` oracle releases (data-free).

        ``n_steps`` of the result counts releases (two per iteration);
        ``n_compositions`` is 1 in single pass (disjoint batches). The multipliers
        are the update releases'; ``noise_ratios = (extrapolation_noise, 1)``.
        Also refuses ``backend="numba"`` where it cannot run, before any spend.
        """
        self._validate_params()
        if self.backend == "numba":
            reason = kernel_unavailable(objective)
            if reason is not None:
                raise ValueError(f"backend='numba' is unavailable: {reason}.")
        sampler, n_iter = self._plan(objective, n_samples, budget)
        return calibrate_gradient_blocks(
            objective, sampler, 2 * n_iter, budget, self.accounting,
            self.clip_w, self.clip_v, self.noise_allocation,
            noise_ratios=(float(self.extrapolation_noise), 1.0),
        )

    def _gamma(self, objective, sampler, calibration, clips, n_iter):
        if self.step_size != "auto":
            return float(self.step_size)
        lip = operator_lipschitz(objective, default=math.inf)
        cap = 1.0 / (math.sqrt(3.0) * lip) if math.isfinite(lip) else _FALLBACK_STEP
        diameter = math.hypot(objective.primal_set.diameter(objective.n_primal),
                              objective.dual_set.diameter(objective.n_dual))
        if not math.isfinite(diameter):
            return cap
        # d sigma^2 of the noisy mean: block b has per-coordinate std z_b s C_b / m,
        # averaged over the two releases of an iteration.
        dims = (objective.n_primal, objective.n_dual)
        mean_ratio_sq = np.mean(np.square(calibration.noise_ratios))
        energy = mean_ratio_sq * sum(
            noise_energy(d, z, c, sampler)
            for d, z, c in zip(dims, calibration.block_noise_multipliers, clips)
        )
        # The M^2 term of Theorem 2 comes from sampling; full-batch noiseless EG has none.
        m2 = 0.0 if sampler.name == "full" else clips[0] ** 2 + clips[1] ** 2
        if m2 + energy == 0:
            return cap
        return min(cap, diameter / math.sqrt(7.0 * n_iter * (m2 + energy)))

    def _chunk_runner(self, objective, update, extrapolation, gamma):
        """The compiled chunk runner if the backend allows and one exists, else numpy's
        (called as described in :func:`skdpminimax._compiled.nseg_kernel`)."""
        if self.backend != "numpy":
            kernel = nseg_kernel(objective, update, extrapolation, gamma)
            if kernel is not None:  # backend="numba" without a kernel was refused by calibrate
                def run_kernel(w, v, sum_w, sum_v, indices, starts, stops, noise_ext, noise_upd):
                    kernel(w, v, sum_w, sum_v, indices, starts, stops, noise_ext, noise_upd)
                    # the noise rows the kernel added, on the chunk's batches (run log)
                    k = len(starts) // 2  # extrapolations on even steps, updates on odd
                    extrapolation.consumed(
                        k, chunk_rows(indices, starts, stops, slice(0, 2 * k, 2)))
                    update.consumed(k, chunk_rows(indices, starts, stops, slice(1, 2 * k, 2)))

                return run_kernel
        W, V = objective.primal_set, objective.dual_set

        def run(w, v, sum_w, sum_v, indices, starts, stops, noise_ext, noise_upd):
            w_t, v_t = w, v
            bounds = list(zip(starts.tolist(), stops.tolist()))
            for t in range(len(bounds) // 2):
                (a1, b1), (a2, b2) = bounds[2 * t], bounds[2 * t + 1]
                g_w, g_v = extrapolation.noisy_grads(
                    w_t, v_t, None if indices is None else indices[a1:b1],
                    None if noise_ext is None else noise_ext[t])
                x_w, x_v = W.project(w_t - gamma * g_w), V.project(v_t + gamma * g_v)
                # a fresh batch, a fresh release
                g_w, g_v = update.noisy_grads(
                    x_w, x_v, None if indices is None else indices[a2:b2],
                    None if noise_upd is None else noise_upd[t])
                w_t, v_t = W.project(w_t - gamma * g_w), V.project(v_t + gamma * g_v)
                sum_w += x_w  # constant gamma: the gamma-weighted average is uniform
                sum_v += x_v
            w[:], v[:] = w_t, v_t

        return run

    # ---- the algorithm -------------------------------------------------------
    def solve(self, objective, data, budget, rng, *, init=None):
        """Run NSEG; the result is ``budget``-DP (see Notes)."""
        # Planned on the public size (see SaddleData.public_size), drawn from the rows.
        calibration = self.calibrate(objective, data.planning_size, budget)
        sampler, n_iter = self._plan(objective, data.planning_size, budget)
        clips = resolve_clip_norms(objective, self.clip_w, self.clip_v)
        # The step is planned on the planned sampler, before it is laid over the rows.
        gamma = self._gamma(objective, sampler, calibration, clips, n_iter)
        sampler = sampler.over_rows(data.n_samples)
        update = NoisyGradientOracle(
            objective, data, sampler, calibration.block_noise_multipliers, *clips, rng
        )
        ratio = calibration.noise_ratios[0]
        extrapolation = update if ratio == 1.0 or not update.noisy else NoisyGradientOracle(
            objective, data, sampler,
            tuple(ratio * z for z in calibration.block_noise_multipliers), *clips, rng,
        )
        w, v = initial_point(objective, rng, init)
        sum_w, sum_v = np.zeros_like(w), np.zeros_like(v)
        run_chunk = self._chunk_runner(objective, update, extrapolation, gamma)
        # Batches and noise are drawn k iterations at a time (the 2k batches first, then
        # the extrapolations' noise, then the updates'): the same random stream
        # whichever runner takes the iterations.
        k = max(1, update.max_chunk(w.size, v.size) // 2)
        with blas_threads_for_steps(sampler.batch_size, w.size + v.size):
            for indices, starts, stops in sampler.batch_chunks(rng, 2 * n_iter, 2 * k):
                n = len(starts) // 2
                noise_ext = extrapolation.noise_block(n, w.size, v.size)
                noise_upd = update.noise_block(n, w.size, v.size)
                run_chunk(w, v, sum_w, sum_v, indices, starts, stops, noise_ext, noise_upd)
        return SolverResult(
            w=sum_w / n_iter,
            v=sum_v / n_iter,
            n_iter=n_iter,
            calibration=calibration,
            info={"u_last": (w, v), "step_size": gamma, "batch_size": sampler.batch_size,
                  "mode": self.mode, "n_releases": 2 * n_iter,
                  "clip_w": clips[0], "clip_v": clips[1]},
            diagnostics={"n_grad_evals": update.n_grad_evals + (
                extrapolation.n_grad_evals if extrapolation is not update else 0)},
        )
