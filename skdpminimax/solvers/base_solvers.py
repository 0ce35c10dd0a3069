r"""Non-private base solvers with an accuracy contract ("bring your own base solver").

Output perturbation (:mod:`skdpminimax.solvers.output_perturbation`) adds noise to
an *approximate* solution of a strongly-convex-strongly-concave (SC-SC) problem;
its privacy rests on the approximation being provably close to the exact one. A
base solver therefore promises:

**Contract.** ``solve_saddle(objective, data, tol, *, init=None, rng=None)``
receives an objective with ``strong_convexity() = (mu_w, mu_v)``, both ``> 0``,
the data and a target distance ``tol > 0``. It returns a :class:`CertifiedSolution`
``(w, v, distance_bound, ...)`` with ``(w, v)`` in the objective's sets and a
*certified* ``distance_bound >= ||(w, v) - (w*, v*)||``, where ``(w*, v*)`` is the
exact saddle point of the regularised empirical objective on ``data``, and
``distance_bound <= tol``. It keeps iterating until the certificate holds and
raises :class:`CertificationError` after ``max_iter`` iterations otherwise; it
never returns an uncertified point.

**The certificate** (derivation in :mod:`skdpminimax.solvers.certificates`): with
``F = (grad_w Phi, -grad_v Phi)`` strongly monotone with moduli ``(mu_w, mu_v)`` and
the variational inequality at the saddle point,

.. math::

    \mu_w\|w - w^*\|^2 + \mu_v\|v - v^*\|^2 \le \langle F(z), z - z^*\rangle
    \le B(z) = \min\Big(\sum_j \mathrm{lin}_j,\ \sum_j \min(\|F_j(z)\|^2/\mu_j,\ 2\,\mathrm{lin}_j)\Big)

over the pieces ``j`` of the sets (``lin_j`` is the piece's Frank-Wolfe gap), so
``||z - z*|| <= sqrt(B / min(mu_w, mu_v))``. For an unconstrained problem this is
``||z - z*||^2 <= ||F_w||^2/(mu_w m) + ||F_v||^2/(mu_v m)``: the gradient-norm
bound ``||z - z*|| <= ||F(z)|| / mu`` (the natural residual with ``eta -> 0``), and
it needs no smoothness constant, so a wrong ``smoothness()`` can slow a solver down
but never break a certificate.

A user's solver only needs a ``solve_saddle`` method with this signature that
returns an object with ``w`` and ``v``; the output-perturbation wrappers never trust
its bound: they recompute the certificate themselves and, if it fails, continue
from the returned point with :class:`Extragradient` until it holds. If that gives up
too (or a solver raises), they do not fail after the budget is spent: they run
:func:`~skdpminimax.solvers.output_perturbation.a_priori_solve`, whose number of
steps follows from the objective's certified constants. Each solve (each phase)
gets a fresh copy of the base solver (``clone``, or ``copy.deepcopy`` for other
objects) and its own generator.

Solvers here (all deterministic except the variance-reduced one, all with
projected/proximal steps, all verified by the same certificate every
``check_every`` iterations; a step size under which the certificate stops improving
is halved, which the certificate makes safe):

- :class:`ProjectedGDA`: simultaneous proximal gradient descent-ascent;
- :class:`Extragradient`: proximal extragradient (Korpelevich; Tseng 1995);
- :class:`SVRGExtragradient`: variance-reduced extragradient with full-gradient
  snapshots (SVRE, Chavdarova et al. 2019; Palaniappan & Bach 2016), near-linear
  ``O((n + sqrt(n) kappa) log(1/tol))`` in practice.

Quadratic terms added by :meth:`~skdpminimax.objectives.SaddleObjective.regularized` (e.g. the phase
regularisers of phased output perturbation, whose weight grows to ``mu n``) are
handled by their closed-form prox, so step sizes depend only on the smoothness of
the rest (the "prox-friendly" remedy of seed-004 digest section 3.2).
"""

from dataclasses import dataclass
from numbers import Integral, Real

import numpy as np
from sklearn.base import BaseEstimator
from sklearn.utils._param_validation import Interval, StrOptions

from skdpminimax.objectives.base import RegularizedObjective, prepare_data
from skdpminimax.solvers.certificates import certify

__all__ = [
    "CertificationError",
    "CertifiedSolution",
    "BaseSaddleSolver",
    "ProjectedGDA",
    "Extragradient",
    "SVRGExtragradient",
]


class CertificationError(RuntimeError):
    """A base solver could not certify the requested accuracy within its budget."""


@dataclass
class CertifiedSolution:
    """A base solver's output and its certified distance to the exact saddle point."""

    w: np.ndarray
    v: np.ndarray
    distance_bound: float
    weighted_bound: float
    n_iter: int
    n_grad_evals: int


class _ProxSplit:
    """``objective = smooth + lam_w/2||w-c_w||^2 - lam_v/2||v-c_v||^2 + indicators``.

    Peels every :class:`RegularizedObjective` layer into one quadratic per block
    (sums of quadratics are quadratics) whose prox with the set's indicator is
    ``Pi((x + eta lam c) / (1 + eta lam))``.
    """

    def __init__(self, objective):
        lam_w = lam_v = 0.0
        cw = cv = 0.0
        smooth = objective
        while isinstance(smooth, RegularizedObjective):
            lam_w, cw = lam_w + smooth.lam_w, cw + smooth.lam_w * smooth.center_w
            lam_v, cv = lam_v + smooth.lam_v, cv + smooth.lam_v * smooth.center_v
            smooth = smooth.base
        self.smooth = smooth
        self.lam_w, self.lam_v = lam_w, lam_v
        self.cw = cw / lam_w if lam_w > 0 else 0.0
        self.cv = cv / lam_v if lam_v > 0 else 0.0
        self.W, self.V = objective.primal_set, objective.dual_set

    def lipschitz_smooth(self):
        return float(self.smooth.smoothness())

    def grad(self, w, v, data):
        return self.smooth.grad(w, v, data)

    def step(self, w, v, gw, gv, eta_w, eta_v):
        """Proximal descent step in ``w`` and ascent step in ``v``."""
        w = (w - eta_w * gw + eta_w * self.lam_w * self.cw) / (1.0 + eta_w * self.lam_w)
        v = (v + eta_v * gv + eta_v * self.lam_v * self.cv) / (1.0 + eta_v * self.lam_v)
        return self.W.project(w), self.V.project(v)


class BaseSaddleSolver(BaseEstimator):
    """Shared certified loop (see the module docstring); subclasses implement ``_run``.

    Parameters
    ----------
    step_size : float or "auto"
        Initial step; ``"auto"`` uses ``c / ell`` with ``ell`` the smoothness of the
        non-quadratic part and ``c`` the method's constant (a step of 1.0 when ``ell``
        is unknown).
    max_iter : int
        Iterations (epochs for the variance-reduced solver) before giving up.
    check_every : int
        Iterations between certificates (each costs one full gradient pass).
    """

    _parameter_constraints = {
        "step_size": [Interval(Real, 0, None, closed="neither"), StrOptions({"auto"})],
        "max_iter": [Interval(Integral, 1, None, closed="left")],
        "check_every": [Interval(Integral, 1, None, closed="left")],
    }
    _step_constant = 0.5
    _patience = 3

    def __init__(self, step_size="auto", max_iter=100_000, check_every=20):
        self.step_size = step_size
        self.max_iter = max_iter
        self.check_every = check_every

    def _initial_step(self, split):
        if self.step_size != "auto":
            return float(self.step_size)
        ell = split.lipschitz_smooth()
        return self._step_constant / ell if np.isfinite(ell) and ell > 0 else 1.0

    def solve_saddle(self, objective, data, tol, *, init=None, rng=None):
        """Iterate until the certified distance to the exact saddle point is ``<= tol``."""
        self._validate_params()
        if not tol > 0:
            raise ValueError(f"tol must be > 0, got {tol}.")
        rng = np.random.default_rng(rng)
        data = prepare_data(objective, data)
        w, v = (np.array(x, dtype=float)
                for x in (objective.init_params() if init is None else init))
        w, v = objective.primal_set.project(w), objective.dual_set.project(v)
        split = _ProxSplit(objective)
        eta = self._initial_step(split)
        cert = certify(objective, data, w, v)
        n = data.n_samples
        evals, it, stalled, since_best, best = n, 0, 0, 0, cert.weighted
        while not cert.distance <= tol:
            if it >= self.max_iter:
                raise CertificationError(
                    f"{type(self).__name__} reached max_iter={self.max_iter} with certified "
                    f"distance {cert.distance:.3g} > tol={tol:.3g}; raise max_iter or check "
                    "that the objective is strongly-convex-strongly-concave."
                )
            w_new, v_new, steps, used = self._run(split, data, w, v, cert, eta, rng)
            it += steps
            new = certify(objective, data, w_new, v_new)
            evals += used + n
            # Any step rule is safe: only the final certificate matters. Non-finite:
            # discard and halve. No decrease for `_patience` checks in a row (too long
            # a step, or a stochastic noise floor), or no new best for 4 * `_patience`
            # checks (oscillation): halve, and judge the new step afresh.
            if not np.isfinite(new.weighted):
                eta, stalled = eta / 2.0, 0
                continue
            stalled = 0 if new.weighted < cert.weighted else stalled + 1
            since_best = 0 if new.weighted < best else since_best + 1
            w, v, cert = w_new, v_new, new
            best = min(best, cert.weighted)
            if stalled >= self._patience or since_best >= 4 * self._patience:
                eta, stalled, since_best, best = eta / 2.0, 0, 0, cert.weighted
        return CertifiedSolution(w, v, cert.distance, cert.weighted, it, evals)


class ProjectedGDA(BaseSaddleSolver):
    """Simultaneous proximal gradient descent-ascent (full batch), certified.

    ``z <- prox(z - eta F(z))``; linear rate ``1 - O(mu^2 / ell^2)`` for SC-SC
    objectives. See the module docstring for the contract.

    Parameters
    ----------
    step_size : float or "auto", default="auto"
        Initial step; ``"auto"`` uses ``0.5 / ell`` with ``ell`` the smoothness of the
        non-quadratic part (a step of 1.0 when ``ell`` is unknown).
    max_iter : int, default=100000
        Iterations before giving up (:class:`CertificationError`).
    check_every : int, default=20
        Iterations between certificates (each costs one full gradient pass).
    """

    _step_constant = 0.5

    def _run(self, split, data, w, v, cert, eta, rng):
        for _ in range(self.check_every):
            gw, gv = split.grad(w, v, data)
            w, v = split.step(w, v, gw, gv, eta, eta)
        return w, v, self.check_every, self.check_every * data.n_samples


class Extragradient(BaseSaddleSolver):
    """Proximal extragradient (full batch), certified.

    ``z' = prox(z - eta F(z))``, ``z <- prox(z - eta F(z'))``; linear rate
    ``1 - O(mu / ell)`` for SC-SC objectives with ``eta <= 1/(2 ell)``. It is the
    engine's fallback when a user's base solver returns an uncertified point.

    Parameters
    ----------
    step_size : float or "auto", default="auto"
        Initial step; ``"auto"`` uses ``0.5 / ell`` with ``ell`` the smoothness of the
        non-quadratic part (a step of 1.0 when ``ell`` is unknown).
    max_iter : int, default=100000
        Iterations before giving up (:class:`CertificationError`).
    check_every : int, default=20
        Iterations between certificates (each costs one full gradient pass).
    """

    _step_constant = 0.5

    def _run(self, split, data, w, v, cert, eta, rng):
        for _ in range(self.check_every):
            gw, gv = split.grad(w, v, data)
            wh, vh = split.step(w, v, gw, gv, eta, eta)
            gw, gv = split.grad(wh, vh, data)
            w, v = split.step(w, v, gw, gv, eta, eta)
        return w, v, self.check_every, 2 * self.check_every * data.n_samples


class SVRGExtragradient(BaseSaddleSolver):
    """Variance-reduced (SVRG-style) proximal extragradient, certified.

    Each epoch takes the current point as snapshot ``z~`` with its exact full
    gradient (the one the certificate just computed, so snapshots are free), then
    runs ``n / batch_size`` extragradient steps with the estimator
    ``F_B(z) - F_B(z~) + F(z~)`` on uniformly drawn batches ``B`` (one batch per
    step, used for both half-steps). Epoch cost ``~3n`` gradient evaluations plus
    the certificate's ``n``.

    Parameters
    ----------
    step_size : float or "auto", default="auto"
        Initial step; ``"auto"`` uses ``0.25 / ell`` with ``ell`` the smoothness of the
        non-quadratic part (a step of 1.0 when ``ell`` is unknown).
    max_iter : int, default=10000
        Epochs before giving up (:class:`CertificationError`).
    check_every : int, default=1
        Ignored: every epoch is certified.
    batch_size : int or "auto", default="auto"
        ``"auto"`` uses ``ceil(sqrt(n))`` (amortises Python overhead; the epoch
        still has ``sqrt(n)`` steps).
    """

    _parameter_constraints = {
        **BaseSaddleSolver._parameter_constraints,
        "batch_size": [Interval(Integral, 1, None, closed="left"), StrOptions({"auto"})],
    }
    _step_constant = 0.25

    def __init__(self, step_size="auto", max_iter=10_000, check_every=1, batch_size="auto"):
        super().__init__(step_size=step_size, max_iter=max_iter, check_every=check_every)
        self.batch_size = batch_size

    def _run(self, split, data, w, v, cert, eta, rng):
        n = data.n_samples
        b = int(np.ceil(np.sqrt(n))) if self.batch_size == "auto" else min(self.batch_size, n)
        # Full gradient of the smooth part at the snapshot: the certificate's minus the quadratics.
        sw, sv = w.copy(), v.copy()
        fw = cert.grad_w - split.lam_w * (sw - split.cw)
        fv = cert.grad_v + split.lam_v * (sv - split.cv)
        n_steps = max(1, n // b)
        for _ in range(n_steps):
            batch = data.take(rng.choice(n, size=b, replace=False))
            bw, bv = split.grad(sw, sv, batch)
            gw, gv = split.grad(w, v, batch)
            wh, vh = split.step(w, v, gw - bw + fw, gv - bv + fv, eta, eta)
            gw, gv = split.grad(wh, vh, batch)
            w, v = split.step(w, v, gw - bw + fw, gv - bv + fv, eta, eta)
        return w, v, 1, 3 * n_steps * b
