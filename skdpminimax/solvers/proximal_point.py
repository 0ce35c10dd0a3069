"""NISPP: noisy inexact stochastic proximal point (Boob & Guzman 2023, Algorithm 2).

Each outer step solves, on one batch, the prox subproblem ``VI(W x V, G_k)`` with

    G_k(u) = F_B(u) + lam (u - c_k),

``F_B`` the clipped batch-mean saddle operator and ``c_k`` the previous *noisy,
unprojected* iterate, to a distance ``r`` of its exact solution guaranteed *a priori*
(a contraction run for a count fixed by public constants, see
:mod:`skdpminimax.solvers.contraction`), then releases the solution plus Gaussian
noise. Only the final average is projected.
"""

import math
import warnings
from numbers import Integral, Real

import numpy as np
from sklearn.utils._param_validation import Interval, StrOptions

from skdpminimax.objectives.base import certifies_constants
from skdpminimax.privacy.calibration import calibrate_noise_multiplier
from skdpminimax.privacy.samplers import make_sampler
from skdpminimax.solvers._planning import initial_point, operator_lipschitz
from skdpminimax.solvers.base import PrivateSolver, SolverResult
from skdpminimax.solvers.contraction import solve_a_priori
from skdpminimax.solvers.oracle import NoisyGradientOracle, resolve_clip_norms

__all__ = ["NoisyInexactProximalPoint"]


class NoisyInexactProximalPoint(PrivateSolver):
    r"""Noisy inexact stochastic proximal point (NISPP) with an a-priori inner solve.

    With :math:`F_B(u) = (\bar g_w, -\bar g_v)` the clipped batch-mean saddle
    operator (plus the data-free term's exact gradient):

    .. math::

        u_{k+1} \approx \mathrm{SOL}\big(W \times V,\;
            F_{B_{k+1}}(\cdot) + \lambda(\cdot - c_k)\big), \qquad
        c_{k+1} = u_{k+1} + \xi_{k+1}, \qquad
        \hat u = \Pi\Big(\frac{1}{K+1}\sum_{k=0}^{K} c_{k+1}\Big).

    Parameters
    ----------
    mode : {"single_pass", "multi_pass"}, default="single_pass"
        ``"single_pass"``: batches are disjoint chunks of one random permutation
        (strong-gap guarantee, Cor. 2); ``"multi_pass"``: each batch is a fresh
        uniform subset without replacement (weak-gap guarantee, Thm. 7).
    batch_size : int or "auto", default="auto"
        ``B``. ``"auto"``: ``round(n^(1/3))`` (single pass, Cor. 2) or
        ``round(sqrt(n))`` (multi pass, Thm. 7).
    n_iter : int or None, default=None
        Outer steps ``K + 1``. Default: ``n // B`` (single pass: every batch
        disjoint, at most that many), ``ceil(n_epochs * n / B)`` (multi pass).
    n_epochs : float, default=3
        Multi pass only: passes over the data when ``n_iter`` is None.
    prox_weight : float or "auto", default="auto"
        ``lambda``. ``"auto"``: ``max(M / D, L) * max(n^(1/3), sqrt(d log(1/delta)) /
        epsilon)`` (single pass) or with ``sqrt(n)`` (multi pass), where ``M`` is
        the joint clip norm, ``D`` the joint diameter, ``L`` the smoothness.
    inner_tol : float, default=0.05
        The inner solve reaches distance ``r = inner_tol * a / mu`` of the exact
        prox point (``a / mu`` is the exact solutions' sensitivity, below).
    clip_w, clip_v : float or None, default=1.0
        Per-example clip norms (capped at the objective's ``lipschitz()``).
    accounting : {"pld", "rdp"}, default="pld"
        Accountant (RDP is forced for sampling without replacement).

    Notes
    -----
    **Privacy.** Replace-one neighbours, ``n_samples`` public. Fix a prox centre
    (public: an earlier release). Replacing one example of the batch moves the
    clipped batch mean by at most ``a = 2 sqrt(C_w^2 + C_v^2) / B``. ``G_k`` is
    ``mu``-strongly monotone with ``mu = lambda - L``, ``L = smoothness()``
    (clipping keeps each per-example operator ``L``-Lipschitz but can break
    monotonicity; digest pitfall 6); ``prox_weight <= L`` is refused before
    anything is spent. Only when the objective certifies its constants
    (:func:`~skdpminimax.objectives.certifies_constants`: the built-in objectives do)
    and the clip norms are at its ``lipschitz()`` (clipping inactive, so ``F_B`` is
    monotone, as in Prop. 9) is ``mu = lambda + max(min(strong_convexity()), -L)``.
    The exact solutions for neighbouring batches are then within ``a / mu`` (Boob &
    Guzman 2023, Prop. 9 with ``nu = 0``), and the released points, each within
    ``r`` of its exact solution, within ``s = a / mu + 2 r``. The inner solve reaches
    ``r`` by a contraction whose number of steps is fixed by ``mu``, ``L``,
    ``lambda``, the clip norms and the (public) centre
    (:mod:`~skdpminimax.solvers.contraction`): it cannot fail, and its length
    reveals nothing beyond the releases. So this solver's privacy rests on
    ``smoothness()`` being a true bound, and, for a certifying objective with clip
    norms at its bounds, on ``lipschitz()`` and ``strong_convexity()`` too; not on
    clipping alone as for :class:`NoisySGDA`. Gaussian noise ``z s`` per coordinate
    on the iterate is one Gaussian mechanism per outer step. Single pass: disjoint
    batches, so by parallel composition (Prop. 4, Prop. 10) the accountant composes
    it once; multi pass: ``K + 1`` subsampled-without-replacement releases composed
    by ``dp_accounting`` (the paper's Thm. 7 sigma rests on unspecified constants
    and is not used).
    """

    _parameter_constraints = {
        "mode": [StrOptions({"single_pass", "multi_pass"})],
        "batch_size": [Interval(Integral, 1, None, closed="left"), StrOptions({"auto"})],
        "n_iter": [Interval(Integral, 1, None, closed="left"), None],
        "n_epochs": [Interval(Real, 0, None, closed="neither")],
        "prox_weight": [Interval(Real, 0, None, closed="neither"), StrOptions({"auto"})],
        "inner_tol": [Interval(Real, 0, None, closed="neither")],
        "clip_w": [Interval(Real, 0, None, closed="neither"), None],
        "clip_v": [Interval(Real, 0, None, closed="neither"), None],
        "accounting": [StrOptions({"pld", "rdp"})],
    }

    def __init__(
        self,
        mode="single_pass",
        batch_size="auto",
        n_iter=None,
        n_epochs=3,
        prox_weight="auto",
        inner_tol=0.05,
        clip_w=1.0,
        clip_v=1.0,
        accounting="pld",
    ):
        self.mode = mode
        self.batch_size = batch_size
        self.n_iter = n_iter
        self.n_epochs = n_epochs
        self.prox_weight = prox_weight
        self.inner_tol = inner_tol
        self.clip_w = clip_w
        self.clip_v = clip_v
        self.accounting = accounting

    # ---- data-free planning -------------------------------------------------
    def _plan(self, objective, n_samples, budget, *, at_solve=False):
        """Public quantities of a run: sampler, outer steps, lambda, mu, L, a, r.

        ``calibrate`` (the estimators' dry run, before any spend) refuses a
        ``prox_weight`` at or below the operator's Lipschitz bound. At ``solve`` the
        objective may be built from privately released constants (noisy group ratios)
        whose bound is larger than the dry run's: the budget is spent by then, so the
        automatic weight is used, with a warning, instead of failing.
        """
        single = self.mode == "single_pass"
        if self.batch_size == "auto":
            batch = round(n_samples ** (1 / 3) if single else math.sqrt(n_samples))
        else:
            batch = self.batch_size
        batch = int(min(max(batch, 1), n_samples))
        if single:
            sampler = make_sampler("disjoint", n_samples, batch)
            n_iter = sampler.max_steps() if self.n_iter is None else self.n_iter
            sampler.releases_per_example(n_iter)  # clear error if chunks run out
        else:
            sampler = make_sampler("without_replacement", n_samples, batch)
            n_iter = self.n_iter or max(1, math.ceil(self.n_epochs * n_samples / batch))

        clips = resolve_clip_norms(objective, self.clip_w, self.clip_v)
        lip = operator_lipschitz(objective)
        lam = self._prox_weight(objective, n_samples, budget, clips, lip, single)
        bounds = objective.lipschitz()
        if certifies_constants(objective) and clips[0] >= bounds[0] and clips[1] >= bounds[1]:
            # Clipping inactive (the bounds are proved), so F_B has the certified modulus.
            shift_mu = max(min(objective.strong_convexity()), -lip)
        else:
            shift_mu = -lip  # clipped operators are only L-Lipschitz: (-L)-monotone
        mu = lam + shift_mu
        if mu <= 0 and at_solve and self.prox_weight != "auto":
            auto = self._auto_prox_weight(objective, n_samples, budget, clips, lip, single)
            warnings.warn(
                f"prox_weight={lam:.3g} does not exceed the Lipschitz bound {lip:.3g} of the "
                "objective built from the privately released constants (the calibration "
                f"run on public ones accepted it); using the automatic weight {auto:.3g}.",
                UserWarning,
            )
            lam, mu = auto, auto + shift_mu
        if mu <= 0:
            raise ValueError(
                f"prox_weight={lam:.3g} must exceed the operator's Lipschitz bound {lip:.3g} "
                "(smoothness()) when clipping is active or the objective does not certify "
                "its constants (certified_constants): the prox subproblem must be strongly "
                "monotone."
            )
        shift = sampler.sensitivity_factor * math.hypot(*clips) / sampler.normalizer
        radius = self.inner_tol * shift / mu
        return {
            "sampler": sampler, "n_iter": int(n_iter), "prox_weight": lam,
            "strong_monotonicity": mu, "monotonicity": shift_mu, "lipschitz": lip,
            "clips": clips, "radius": radius, "sensitivity": shift / mu + 2.0 * radius,
        }

    def _prox_weight(self, objective, n_samples, budget, clips, lip, single):
        if self.prox_weight != "auto":
            return float(self.prox_weight)
        return self._auto_prox_weight(objective, n_samples, budget, clips, lip, single)

    @staticmethod
    def _auto_prox_weight(objective, n_samples, budget, clips, lip, single):
        diameter = math.hypot(objective.primal_set.diameter(objective.n_primal),
                              objective.dual_set.diameter(objective.n_dual))
        scale = max(math.hypot(*clips) / diameter, lip)
        growth = n_samples ** (1 / 3) if single else math.sqrt(n_samples)
        if budget.is_private:
            dim = objective.n_primal + objective.n_dual
            growth = max(growth, math.sqrt(dim * math.log(1 / budget.delta)) / budget.epsilon)
        return scale * growth

    def calibrate(self, objective, n_samples, budget):
        """Joint multiplier of the ``K + 1`` iterate releases (data-free).

        The noise std per coordinate is ``noise_multiplier * sensitivity`` with the
        sensitivity of :meth:`solve`'s ``info['sensitivity']``.
        """
        self._validate_params()
        return self._calibrate_plan(self._plan(objective, n_samples, budget), budget)

    def _calibrate_plan(self, plan, budget):
        return calibrate_noise_multiplier(
            plan["sampler"], plan["n_iter"], budget.epsilon, budget.delta, self.accounting,
            preceding=getattr(budget, "preceding", ()),
        )

    # ---- the algorithm -------------------------------------------------------
    def solve(self, objective, data, budget, rng, *, init=None):
        """Run NISPP; the result is ``budget``-DP (see Notes)."""
        self._validate_params()
        plan = self._plan(objective, data.n_samples, budget, at_solve=True)
        calibration = self._calibrate_plan(plan, budget)
        sampler, lam = plan["sampler"], plan["prox_weight"]
        # Noise-free oracle: exact clipped batch means; the noise goes on the iterate.
        oracle = NoisyGradientOracle(objective, data, sampler, (0.0, 0.0), *plan["clips"], rng)
        W, V = objective.primal_set, objective.dual_set
        w0, v0 = initial_point(objective, rng, init)
        dim_w = w0.size

        def project(u):
            return np.concatenate([W.project(u[:dim_w]), V.project(u[dim_w:])])

        sigma = calibration.noise_multiplier * plan["sensitivity"]
        mu = plan["strong_monotonicity"]
        diameter = math.hypot(W.diameter(dim_w), V.diameter(v0.size))
        # F_B minus the data-free term is a mean of examples clipped per block.
        batch_bound = math.hypot(*plan["clips"])
        centre = np.concatenate([w0, v0])
        total = np.zeros_like(centre)
        inner_iters = []
        for idx in sampler.batches(rng, plan["n_iter"]):
            def field(u, idx=idx):
                g_w, g_v = oracle(u[:dim_w], u[dim_w:], idx)
                return np.concatenate([g_w, -g_v])

            # The start's distance to the prox point, from public values only (the
            # centre is a release): ||G(z0)|| / mu, G's data part bounded by the clips.
            start = project(centre)
            r_w, r_v = objective.reg_grad(start[:dim_w], start[dim_w:])
            g_bound = (batch_bound + math.hypot(np.linalg.norm(r_w), np.linalg.norm(r_v))
                       + lam * float(np.linalg.norm(start - centre)))
            u, n_inner = solve_a_priori(
                field, project, start, centre, lam, plan["monotonicity"], plan["lipschitz"],
                min(diameter, g_bound / mu), plan["radius"],
            )
            inner_iters.append(n_inner)
            centre = u + sigma * rng.standard_normal(u.size) if sigma > 0 else u
            total += centre  # gamma_k = 1: uniform average of the noisy iterates
        out = project(total / plan["n_iter"])
        return SolverResult(
            w=out[:dim_w],
            v=out[dim_w:],
            n_iter=plan["n_iter"],
            calibration=calibration,
            info={"prox_weight": lam, "strong_monotonicity": mu,
                  "sensitivity": plan["sensitivity"], "inner_radius": plan["radius"],
                  "noise_std": sigma, "batch_size": sampler.batch_size, "mode": self.mode},
            diagnostics={"n_grad_evals": oracle.n_grad_evals, "inner_iterations": inner_iters},
        )
