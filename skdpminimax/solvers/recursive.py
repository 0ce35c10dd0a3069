"""Recursive regularization (Bassily, Guzman & Menart 2023, Algorithm 1).

A driver around any private base solver: round ``t`` solves, on its own disjoint
chunk of the data, the objective plus the accumulated regulariser

    sum_{k<t} 2^{k+1} lam (||w - w_k||^2 - ||v - v_k||^2),

with centres the earlier rounds' *released* outputs, warm-started at the previous
output. The last round's output is returned.
"""

import math
from numbers import Integral, Real

import numpy as np
from sklearn.utils._param_validation import HasMethods, Interval, StrOptions

from skdpminimax._compat import spawn
from skdpminimax.solvers._planning import initial_point
from skdpminimax.solvers.base import PrivateSolver, SolverResult, fresh_copy
from skdpminimax.solvers.oracle import resolve_clip_norms
from skdpminimax.solvers.sgda import NoisySGDA

__all__ = ["RecursiveRegularization"]

_MAX_PLAN_ITER = 50


class RecursiveRegularization(PrivateSolver):
    r"""Recursive regularization (RR) around a private base solver.

    Round ``t = 1..T`` hands the base solver its chunk ``S_t`` (``n' = n // T``
    examples of one data-independent random permutation) and

    .. math::

        \phi_t(w, v) = \phi(w, v) + C_t \|w - a^w_t\|^2 - C_t \|v - a^v_t\|^2,
        \quad C_t = \sum_{k<t} 2^{k+1}\lambda = 2\lambda(2^t - 1),
        \quad a_t = \frac{1}{C_t}\sum_{k<t} 2^{k+1}\lambda\, \bar u_k,

    (the merged form of the accumulated regularisers; ``\bar u_0`` is the start
    point), through ``objective.regularized(2 C_t, 2 C_t, a^w_t, a^v_t)``, starting
    from ``\bar u_{t-1}``. It returns ``\bar u_T``.

    Parameters
    ----------
    base_solver : solver object or None, default=None
        Private solver run in each round (a fresh copy per round). ``None`` uses
        ``NoisySGDA(sampler="without_replacement")``. It must be DP under
        replace-one neighbours (see Notes).
    n_rounds : int or "auto", default="auto"
        ``T``. ``"auto"`` iterates ``n' = n // T``,
        ``T = max(1, floor(log2(L / (B lam))))`` to a fixed point (digest §2.5).
    reg_constant : float, default=2.0
        ``c`` in ``lam = (c / B) (L / sqrt(n') + L sqrt(d log(1/delta)) / (n' epsilon))``
        (Thm. 5 / Thm. 12 with ``c = 48``, which leaves zero rounds for
        ``n < 1e5``). ``L``: joint per-example gradient bound (the base solver's
        clip norms when it has them), ``B``: joint diameter, ``d``: dimension.
    prox_weight : float or "auto", default="auto"
        ``lam`` itself; ``"auto"`` uses the rule above.

    Notes
    -----
    **Privacy.** Replace-one neighbours, ``n_samples`` public. The permutation
    that cuts the chunks is drawn from the generator, independently of the data,
    so a replaced example changes exactly one chunk. Round ``t`` reads only its
    chunk and earlier *released* outputs (centres, start point); it runs a fresh
    copy of the base solver with its own generator, spawned before any data are
    read, so that a base solver drawing a data-dependent amount of randomness
    cannot pass one chunk on to the next round. So if every base call is
    ``(epsilon, delta)``-DP with respect to its chunk, the whole run is
    ``(epsilon, delta)``-DP by adaptive parallel composition and post-processing
    (Bassily, Guzman & Menart 2023, Thm. 8): every round gets the **full**
    budget, not ``epsilon / T``. Regularisers are data-free (never clipped nor
    noised). The base solver must certify replace-one DP: an add/remove-DP base
    (e.g. Poisson sampling) is refused, since replacing one example is an add and
    a remove. ``T``, ``n'`` and ``lam`` depend on public quantities only;
    left-over examples are unused.
    """

    _parameter_constraints = {
        "base_solver": [HasMethods(["solve", "calibrate"]), None],
        "n_rounds": [Interval(Integral, 1, None, closed="left"), StrOptions({"auto"})],
        "reg_constant": [Interval(Real, 0, None, closed="neither")],
        "prox_weight": [Interval(Real, 0, None, closed="neither"), StrOptions({"auto"})],
    }

    def __init__(self, base_solver=None, n_rounds="auto", reg_constant=2.0, prox_weight="auto"):
        self.base_solver = base_solver
        self.n_rounds = n_rounds
        self.reg_constant = reg_constant
        self.prox_weight = prox_weight

    def _base(self):
        if self.base_solver is None:
            return NoisySGDA(sampler="without_replacement")
        return fresh_copy(self.base_solver)

    # ---- data-free planning -------------------------------------------------
    @staticmethod
    def _constants(objective, base):
        """Joint gradient bound ``L`` and joint diameter ``B`` (public)."""
        if hasattr(base, "clip_w") and hasattr(base, "clip_v"):
            lip = math.hypot(*resolve_clip_norms(objective, base.clip_w, base.clip_v))
        else:
            lip = math.hypot(*objective.lipschitz())
        diameter = math.hypot(objective.primal_set.diameter(objective.n_primal),
                              objective.dual_set.diameter(objective.n_dual))
        if not (math.isfinite(lip) and math.isfinite(diameter)):
            raise ValueError(
                "RecursiveRegularization needs finite public gradient bounds and bounded sets "
                "for n_rounds='auto' or prox_weight='auto'; set both explicitly."
            )
        return lip, diameter

    def _lambda(self, objective, base, chunk, budget):
        if self.prox_weight != "auto":
            return float(self.prox_weight)
        lip, diameter = self._constants(objective, base)
        rate = 1.0 / math.sqrt(chunk)
        if budget.is_private:
            dim = objective.n_primal + objective.n_dual
            rate += math.sqrt(dim * math.log(1.0 / budget.delta)) / (chunk * budget.epsilon)
        return self.reg_constant * lip / diameter * rate

    def _plan(self, objective, n_samples, budget, base):
        """``(T, n', lam)`` from public quantities only."""
        if self.n_rounds != "auto":
            n_rounds = int(self.n_rounds)
            if n_rounds > n_samples:
                raise ValueError(f"n_rounds={n_rounds} exceeds n_samples={n_samples}.")
            chunk = n_samples // n_rounds
            return n_rounds, chunk, self._lambda(objective, base, chunk, budget)
        lip, diameter = self._constants(objective, base)
        n_rounds, seen = 1, set()
        for _ in range(_MAX_PLAN_ITER):
            chunk = n_samples // n_rounds
            lam = self._lambda(objective, base, chunk, budget)
            proposal = max(1, math.floor(math.log2(max(lip / (diameter * lam), 1.0))))
            proposal = min(proposal, n_samples)
            if proposal == n_rounds or proposal in seen:
                n_rounds = min(n_rounds, proposal)  # a 2-cycle settles on fewer rounds
                break
            seen.add(n_rounds)
            n_rounds = proposal
        chunk = n_samples // n_rounds
        return n_rounds, chunk, self._lambda(objective, base, chunk, budget)

    @staticmethod
    def _round_objective(objective, weight, anchor_w, anchor_v):
        # C ||w - a||^2 is (2C)/2 ||w - a||^2 in RegularizedObjective's convention.
        return objective.regularized(2.0 * weight, 2.0 * weight, anchor_w, anchor_v)

    def calibrate(self, objective, n_samples, budget):
        """The base solver's calibration for one round (every round gets the same).

        Data-free. Raises if the base solver is not replace-one DP.
        """
        self._validate_params()
        base = self._base()
        n_rounds, chunk, lam = self._plan(objective, n_samples, budget, base)
        w0, v0 = objective.init_params()
        probe = self._round_objective(objective, 2.0 * lam, w0, v0)
        calibration = base.calibrate(probe, chunk, budget)
        relation = getattr(calibration, "neighboring_relation", "replace-one")
        if relation != "replace-one":
            raise ValueError(
                "RecursiveRegularization composes rounds in parallel under replace-one "
                f"neighbours; the base solver certifies {relation!r} DP (e.g. use "
                "sampler='without_replacement')."
            )
        return calibration

    # ---- the algorithm -------------------------------------------------------
    def solve(self, objective, data, budget, rng, *, init=None):
        """Run RR; the result is ``budget``-DP if every round is (see Notes)."""
        calibration = self.calibrate(objective, data.n_samples, budget)
        base = self._base()
        n_rounds, chunk, lam = self._plan(objective, data.n_samples, budget, base)
        w, v = initial_point(objective, rng, init)
        order = rng.permutation(data.n_samples)  # data-independent partition
        round_rngs = spawn(rng, n_rounds)  # one per round, before any data are read
        weight, anchor_w, anchor_v = 0.0, np.zeros_like(w), np.zeros_like(v)
        rounds, n_iter, n_grad_evals = [], 0, 0
        for t in range(1, n_rounds + 1):
            c_t = 2.0**t * lam  # weight of the newest centre u_{t-1}: 2^{k+1} lam, k = t-1
            anchor_w = (weight * anchor_w + c_t * w) / (weight + c_t)
            anchor_v = (weight * anchor_v + c_t * v) / (weight + c_t)
            weight += c_t
            round_objective = self._round_objective(objective, weight, anchor_w, anchor_v)
            chunk_data = data.take(order[(t - 1) * chunk : t * chunk])
            result = base.solve(round_objective, chunk_data, budget, round_rngs[t - 1],
                                init=(w, v))
            # Release of round t (projection is post-processing).
            w = objective.primal_set.project(np.asarray(result.w, dtype=float))
            v = objective.dual_set.project(np.asarray(result.v, dtype=float))
            rounds.append({"weight": weight, "n_iter": result.n_iter})
            n_iter += int(result.n_iter)
            n_grad_evals += int(getattr(result, "diagnostics", {}).get("n_grad_evals", 0))
            base = self._base()  # a fresh base solver for the next round
        return SolverResult(
            w=w, v=v, n_iter=n_iter, calibration=calibration,
            info={"n_rounds": n_rounds, "chunk_size": chunk, "prox_weight": lam,
                  "rounds": rounds},
            diagnostics={"n_grad_evals": n_grad_evals},
        )
