r"""Output perturbation around certified solutions (Zhang, Thekumparampil, Oh, He 2022).

"Bring your own algorithm": any non-private base solver (see
:mod:`skdpminimax.solvers.base_solvers`) computes an approximate saddle point of a
strongly-convex-strongly-concave (SC-SC) empirical problem; the engine certifies
its distance to the exact saddle point and adds Gaussian noise scaled to the
stability of that exact point plus the certified error.

Sensitivity (replace-one, ``n`` public). For a phase objective ``Phi`` on ``m``
examples with moduli ``(mu_w, mu_v)`` and per-example data-term gradient bounds
``(G_w, G_v)`` (``objective.lipschitz()``, from public bounds only), neighbouring
data sets change ``F = (grad_w Phi, -grad_v Phi)`` by one example's term, so
strong monotonicity and the two variational inequalities give

.. math::

    \mu_w\|\Delta w^*\|^2 + \mu_v\|\Delta v^*\|^2
    \le \tfrac{2}{m}(G_w\|\Delta w^*\| + G_v\|\Delta v^*\|)
    \;\Rightarrow\;
    Q_{\mathrm{stab}} := \tfrac{4}{m^2}\Big(\tfrac{G_w^2}{\mu_w} + \tfrac{G_v^2}{\mu_v}\Big)

(Cauchy-Schwarz in the weighted norm); with ``L^2 = G_w^2 + G_v^2`` this is at most
the ``4 L^2 / (mu m^2)`` of the paper's Lemma 4.3. The base solver's output is
certified to ``Q(z) <= rho^2 Q_stab`` (``rho = accuracy_ratio``; the paper's
contract is ``rho = 1/2``), so, by the triangle inequality through both exact
saddle points, the released quantity moves by at most ``(1 + 2 rho) sqrt(Q_stab)``
in the ``(mu_w, mu_v)``-weighted norm, or ``(1 + 2 rho) sqrt(Q_stab / mu_w)`` in
``w`` alone. The certificate is deterministic, so no failure probability enters
``delta`` (seed-004 digest section 7.2) and the noise comes from the analytic
Gaussian mechanism (Balle & Wang 2018) at the full per-release budget, valid for any
``epsilon`` (the paper's classical calibration needs ``epsilon < 1``).

Nothing is clipped: the argument rests on ``lipschitz()`` bounding every example's
gradient and on ``strong_convexity()`` (and, for the fallback below,
``smoothness()``) holding for every data set. The frameworks therefore run only on
objectives that certify these constants
(:func:`~skdpminimax.objectives.certifies_constants`; the built-in objectives do)
and refuse others before anything is spent.

**No data-dependent failure.** If the base solver and the engine's
:class:`~skdpminimax.solvers.Extragradient` both fail to certify (or raise), the
engine does not raise: it runs projected extragradient from the public start, at
most the number of steps that provably reaches the target from the certified
constants (linear in ``smoothness() / mu``, :func:`a_priori_solve`), stopping
earlier where its certificate already shows the target. Every run thus releases a
point within the target of the exact saddle point, and whether a solver gave up is
not an output (only the time it takes shows it; on ill-conditioned objectives, small
``mu`` against ``smoothness()``, that worst case is long: raise the regularisation).
The base solvers are asked for the Euclidean distance that implies the target, which
is tighter than the target where the moduli differ, except for releases whose noise
drowns the primal set (:func:`certified_solve`'s ``loose``).

**When the stability bound exceeds the sets.** The target ``rho^2 Q_stab`` does not
depend on ``epsilon``. Where ``sqrt(Q_stab / mu_w)`` is larger than the primal set
(small ``mu`` or small ``n`` against ``lipschitz()``), every point of the set meets
it, the public start included, and the release is that start plus noise, even at
``epsilon = inf`` (``DPGroupFairRegressor`` on diabetes, 442 rows: R^2 -0.19 against
0.51 for ``"sgda"``). Compare ``solver_info_["target"]`` with the set (the phased
variant's per-phase targets are in ``info["phases"]``; its ``solver_info_`` keeps the
released primal's ``sigma_w`` and ``sensitivity``): the remedy is
more regularisation or a clipping solver. (A target tied to the noise and the set's
diameter was tried and made such fits run for minutes: not adopted.)
"""

import copy
import math
import warnings
from numbers import Real

import numpy as np
import scipy.sparse as sp
from sklearn.utils._param_validation import HasMethods, Interval, StrOptions

from skdpminimax._compat import spawn
from skdpminimax.objectives.base import (
    SaddleData,
    prepare_data,
    quiet_after_the_spend,
    uncertified_reason,
)
from skdpminimax.privacy.calibration import NoiseCalibration, analytic_gaussian_sigma
from skdpminimax.solvers._planning import declared_smoothness
from skdpminimax.solvers.base import PrivateSolver, SolverResult, fresh_copy
from skdpminimax.solvers.base_solvers import Extragradient, SVRGExtragradient
from skdpminimax.solvers.certificates import certify
from skdpminimax.solvers.contraction import a_priori_iterations

__all__ = ["OutputPerturbation", "PhasedOutputPerturbation", "stability_bound"]

# The fallback solve checks its certificate this often (a full gradient each time).
_CHECK_EVERY = 20


def check_objective(objective, *, convex=False):
    """Refuse (before any spend) an objective whose constants the release would rest on
    unproved, or (``convex``) that is not convex-concave."""
    reason = uncertified_reason(objective)
    if reason is not None:
        raise ValueError(
            f"Output perturbation does not clip: its privacy rests on "
            f"{type(objective).__name__}'s lipschitz(), strong_convexity() and smoothness(), "
            f"which it does not certify ({reason}). Certify them, or use a clipping "
            "solver ('sgda', 'nseg')."
        )
    if convex and not min(objective.strong_convexity()) >= 0:
        raise ValueError(
            "Phased output perturbation needs a convex-concave objective; "
            f"strong_convexity() = {tuple(objective.strong_convexity())}."
        )
    if not math.isfinite(declared_smoothness(objective)):
        raise ValueError(
            "Output perturbation needs a finite smoothness() (its fallback solve is "
            "planned from it)."
        )


def noise_fills_the_set(sigma, dim, S):
    """Whether noise of std ``sigma`` per coordinate (about ``sigma sqrt(dim)`` in norm)
    is larger than the set ``S``: a projected release is then close to a random point
    of the set, whatever the data. Public inputs only. Never without noise."""
    radius = float(S.radius(dim))
    return math.isfinite(radius) and 0 < sigma < math.inf and sigma * math.sqrt(dim) > radius


# A release's noise "drowns" its set when its std per coordinate is at least this many
# diameters of the set: any two points of the set then give release distributions within
# about 0.4 / _DROWNS in total variation, so how close the solve came changes little.
_DROWNS = 10.0


def noise_drowns_the_set(sigma, dim, S):
    """Whether noise of std ``sigma`` per coordinate is at least ``_DROWNS`` diameters
    of ``S``: where solving past the target cannot matter. Public inputs only."""
    diameter = float(S.diameter(dim))
    return math.isfinite(diameter) and 0 < sigma < math.inf and sigma >= _DROWNS * diameter


def warn_if_noise_fills_the_set(sigma, dim, primal_set, objective=None):
    """Warn when the released primal noise (std ``sigma`` per coordinate) fills the
    primal set (:func:`noise_fills_the_set`), or is larger in norm than the
    objective's public guess of a solution's norm (``typical_solution_norm()``, where
    it has one): either way the released model is mostly noise. Public inputs only;
    the warning reveals nothing."""
    spread = sigma * math.sqrt(dim)
    advice = ("More rows, a larger epsilon, a larger regularisation (alpha) or a "
              "clipping solver ('sgda') give a useful model.")
    if noise_fills_the_set(sigma, dim, primal_set):
        radius = float(primal_set.radius(dim))
        warnings.warn(
            f"Output perturbation's noise (std {sigma:.3g} per coordinate, about {spread:.3g} "
            f"in norm) is larger than the primal set (radius {radius:.3g}): the released "
            f"model is close to a random point of the set, whatever the data. {advice}",
            UserWarning,
        )
        return
    typical = None if objective is None else objective.typical_solution_norm()
    if typical is not None and 0 < sigma < math.inf and spread > typical:
        warnings.warn(
            f"Output perturbation's noise (std {sigma:.3g} per coordinate, about {spread:.3g} "
            f"in norm) is larger than a typical solution of this objective (norm about "
            f"{typical:.3g}, a public guess): the released model is mostly noise. {advice}",
            UserWarning,
        )


def sets_extent(objective):
    """``mu_w D_w^2 + mu_v D_v^2`` (diameters ``D``): the largest weighted squared
    distance between two points of the sets. Public constants only."""
    mu_w, mu_v = (float(m) for m in objective.strong_convexity())
    d_w = float(objective.primal_set.diameter(objective.n_primal))
    d_v = float(objective.dual_set.diameter(objective.n_dual))
    return mu_w * d_w**2 + mu_v * d_v**2


def target_covers_the_sets(objective, target):
    """Whether every point of the sets is within the weighted ``target`` of every
    other (``target >= sets_extent``): the public start then meets it, the solve may
    stop there, and the release be the start plus noise, even at ``epsilon = inf``.
    Public constants only."""
    spread = sets_extent(objective)
    return math.isfinite(spread) and spread <= target


def warn_if_target_covers_the_sets(objective, target):
    """Warn where :func:`target_covers_the_sets`."""
    if target_covers_the_sets(objective, target):
        spread = sets_extent(objective)
        warnings.warn(
            f"Output perturbation's accuracy target ({target:.3g}, weighted) exceeds the "
            f"sets' whole extent ({spread:.3g}): every point meets it, the public start "
            "included, so the solve may stop there and the release be that start plus noise, "
            "even at epsilon=inf. More rows, a larger regularisation (alpha) or a clipping "
            "solver ('sgda') give a model fitted to the data.", UserWarning)


def warn_if_the_start_is_released(objective, init, w, v, target):
    """Warn where a noise-free solve returned the public start: the target (which does
    not shrink with epsilon) was met there, so the release is the untrained start.
    Only without noise, where reading the data for a warning leaks nothing."""
    w0, v0 = _start(objective, init)
    if np.array_equal(w, w0) and np.array_equal(v, v0):
        warnings.warn(
            f"Output perturbation's accuracy target ({target:.3g}, weighted) is met at the "
            "public start: the release is the untrained start (a constant model). The "
            "target is rho^2 Q_stab whatever epsilon; a smaller accuracy_ratio, more "
            "regularisation (alpha) or more rows tighten it, or use a clipping solver "
            "('sgda').", UserWarning)


def stability_bound(objective, n_samples):
    """``Q_stab``: bound on the weighted squared move of the exact saddle point (module docstring)."""
    check_objective(objective)
    mu_w, mu_v = (float(m) for m in objective.strong_convexity())
    if not (mu_w > 0 and mu_v > 0):
        raise ValueError(
            "Output perturbation needs a strongly-convex-strongly-concave objective "
            f"(strong_convexity() = {(mu_w, mu_v)}); add regularisation (the estimators' "
            "alpha > 0; objective.regularized(lam) for your own objective, whose "
            "one-point dual of a plain minimisation may declare any positive modulus) "
            "or use PhasedOutputPerturbation."
        )
    g_w, g_v = (float(g) for g in objective.lipschitz())
    if not (math.isfinite(g_w) and math.isfinite(g_v)):
        raise ValueError(
            "Output perturbation needs finite per-example gradient bounds (objective.lipschitz()) "
            "from public constants; bound the sets and the data."
        )
    try:
        return 4.0 / n_samples**2 * (g_w**2 / mu_w + g_v**2 / mu_v)
    except OverflowError:  # Python floats raise where numpy's would give inf
        return math.inf


# The smallest Euclidean accuracy a certified solve is asked for: below it the target
# is lost to underflow (subnormal, or 0: the fallback's step count refuses it) or takes
# ever longer to certify in float64 (data_norm 1e-60: 65 s for 60 rows), after the
# spend. Rows of norm ~1 ask for 1e-6 at a billion rows.
_MIN_TOL = 1e-12


def check_target_in_range(objective, n_samples, accuracy_ratio):
    """Refuse, before the spend, public constants whose stability bound, accuracy
    target or noise overflow or underflow float64 (a ``data_norm`` of 1e100 or 1e-160,
    say; a fuzzing review: the phased solve raised OverflowError after the spend, a
    tiny target raised or ran for minutes). Public inputs only."""
    q_stab = stability_bound(objective, n_samples)
    moduli = [float(m) for m in objective.strong_convexity()]
    target = accuracy_ratio**2 * q_stab
    try:
        tol = math.sqrt(target / max(moduli))
        sens = (1.0 + 2.0 * accuracy_ratio) * math.sqrt(q_stab / min(moduli))
    except (OverflowError, ZeroDivisionError, ValueError):
        tol = sens = math.nan
    if not (math.isfinite(sens) and math.isfinite(tol) and tol >= _MIN_TOL):
        g_w, g_v = (float(g) for g in objective.lipschitz())
        raise ValueError(
            f"Output perturbation cannot plan a release in float64 for these public "
            f"constants: gradient bounds {g_w:.3g} / {g_v:.3g} (objective.lipschitz()), "
            f"moduli {moduli[0]:.3g} / {moduli[1]:.3g}, {n_samples} rows give a stability "
            f"bound {q_stab:.3g} and an accuracy {tol:.3g} (at least {_MIN_TOL:g} "
            "needed). Rescale the data bound (data_norm), the targets or the sets' radius "
            "towards 1. Nothing was spent.")


def certified_solve(base_solver, objective, data, target, init, rng, *, loose=False):
    """A point within weighted distance ``target`` of the exact saddle point, in every run.

    The base solver is asked for Euclidean distance ``tol = sqrt(target / max mu)``,
    which implies the weighted target, and solves well beyond it when the moduli
    differ (its certificate reads the weighted bound over ``min mu``). ``loose=True``
    asks for ``sqrt(target / min mu)``, the weighted target itself: for a release
    whose noise drowns the set (:func:`noise_drowns_the_set`: ten diameters per
    coordinate), where a closer solution changes the release little but can take
    minutes to reach (a tiny ``mu_w`` on a few hundred rows). Never without noise: the
    public start can meet a target that does not shrink with epsilon, and at
    ``epsilon = inf`` the solution is the release. Its claim is not trusted: the
    engine recomputes
    the certificate and, if it fails, continues from the returned point with
    :class:`Extragradient`. If neither certifies (or either raises: the base solver
    is untrusted code), :func:`a_priori_solve` runs from the public start instead of
    failing, so the release never depends on whether a solver gave up. Returns
    ``(w, v, diagnostics)``; ``diagnostics`` (work done) is not private.
    """
    with quiet_after_the_spend(objective):  # a user's objective says nothing a row decides
        return _certified_solve(base_solver, objective, data, target, init, rng, loose)


def _certified_solve(base_solver, objective, data, target, init, rng, loose):
    moduli = objective.strong_convexity()
    # The Euclidean distance that implies the weighted target (the fallback's proof
    # needs it), and what the base solvers are asked for.
    strict_tol = math.sqrt(target / max(moduli))
    tol = math.sqrt(target / min(moduli)) if loose else strict_tol
    start = _start(objective, init)
    diagnostics = {"n_grad_evals": 0, "a_priori_fallback": False}
    if loose and target_covers_the_sets(objective, target):
        # Every feasible point is within the target of the saddle point (public
        # constants), so the start meets it although the certificate, an upper bound,
        # may not show it: the engines would run to their caps for nothing (a review:
        # 131 s on 500 rows), and the noise drowns the set anyway.
        return (*start, diagnostics)
    data = prepare_data(objective, data)
    engines = [base_solver]
    if not isinstance(base_solver, Extragradient):  # else it would be the same engine
        engines.append(Extragradient())
    point = start  # each engine continues from the previous one's point, if any
    for engine in engines:
        found = _attempt(engine, objective, data, tol, point, rng, diagnostics)
        if found is None:
            continue
        diagnostics["n_grad_evals"] += data.n_samples
        if certify(objective, data, *found).weighted <= target:
            return (*found, diagnostics)
        point = found
    w, v, n_steps = a_priori_solve(objective, data, start, strict_tol, target)
    # two gradients a step, plus a certificate every _CHECK_EVERY steps
    diagnostics["n_grad_evals"] += (2 * n_steps + n_steps // _CHECK_EVERY) * data.n_samples
    diagnostics["a_priori_fallback"] = True
    return w, v, diagnostics


def _attempt(solver, objective, data, tol, init, rng, diagnostics):
    """The solver's point, projected, or ``None`` if it raised or returned a point of the
    wrong shape or with non-finite values."""
    w0, v0 = init
    try:
        # Its own copies: the engine certifies (and may fall back from the start) on
        # the problem it was given, whatever the solver edits in place.
        sol = solver.solve_saddle(copy.deepcopy(objective), _read_only(data), tol,
                                  init=(w0.copy(), v0.copy()), rng=rng)
        w, v = np.array(sol.w, dtype=float), np.array(sol.v, dtype=float)
        if w.shape != np.shape(w0) or v.shape != np.shape(v0):
            return None  # an untrusted solver's malformed answer: the engine goes on
        w, v = objective.primal_set.project(w), objective.dual_set.project(v)
    except Exception:  # noqa: BLE001 -- a failure must not decide what is released
        return None
    if not (np.all(np.isfinite(w)) and np.all(np.isfinite(v))):
        return None
    diagnostics["n_grad_evals"] += _work_done(sol)
    return w, v


def _work_done(solution):
    """The solution's optional ``n_grad_evals`` (work done, not private), 0 when it
    has none that reads as a count: a diagnostic must not discard a good point."""
    try:
        count = float(getattr(solution, "n_grad_evals", 0))
    except (TypeError, ValueError):
        return 0
    return int(count) if math.isfinite(count) and count >= 0 else 0


def _read_only(data):
    """``data`` with read-only views of its arrays (a copy of a sparse ``X``): what a
    base solver gets, so that an in-place edit raises (and the engine goes on)
    instead of changing the problem the release is certified on."""
    def frozen(a):
        if a is None:
            return None
        if sp.issparse(a):
            return a.copy()
        view = np.asarray(a).view()
        view.flags.writeable = False
        return view
    return SaddleData(frozen(data.X), frozen(data.y), frozen(data.groups), frozen(data.aux),
                      public_size=data.public_size)


def a_priori_steps(objective, start, tol):
    """The most steps :func:`a_priori_solve` takes from ``start`` to ``tol`` (public)."""
    return _a_priori_plan(objective, start, tol)[1]


def _a_priori_plan(objective, start, tol):
    """``(eta, steps)`` of :func:`a_priori_solve`, from public constants only."""
    mu = float(min(objective.strong_convexity()))
    lip = max(declared_smoothness(objective), 2.0 * mu)  # see a_priori_solve: mu <= L / 2
    w0, v0 = start
    r_w, r_v = objective.reg_grad(w0, v0)
    g_bound = math.hypot(*objective.lipschitz()) + math.hypot(np.linalg.norm(r_w),
                                                              np.linalg.norm(r_v))
    diameter = math.hypot(objective.primal_set.diameter(w0.size),
                          objective.dual_set.diameter(v0.size))
    distance = min(diameter, g_bound / mu)
    ratio = mu / (2.0 * lip)  # log1p: 1 - ratio rounds to 1 below ~1e-16 (a review)
    q, neg_log_q = math.sqrt(1.0 - ratio), -0.5 * math.log1p(-ratio)
    return 1.0 / (2.0 * lip), a_priori_iterations(q, distance, 0.5 * tol, neg_log_q)


def a_priori_solve(objective, data, start, tol, target=None):
    r"""``(w, v, steps)`` within ``tol`` of the exact saddle point, in at most a number
    of steps fixed in advance from public constants.

    Projected extragradient on the saddle operator ``G = (grad_w, -grad_v)`` of the
    whole objective, ``mu``-strongly monotone (``mu = min strong_convexity()``) and
    ``L``-Lipschitz (``L = smoothness()``, raised to ``2 mu`` if below), from the public
    ``start`` with ``eta = 1 / (2 L)``. For ``u = z*`` the extragradient inequality
    (Nemirovski 2004, Lemma 3.1) gives ``|z+ - z*|^2 <= |z - z*|^2 - (1 - eta^2 L^2)
    |z - zh|^2 - 2 eta <G(zh), zh - z*>``, and ``<G(zh), zh - z*> >= mu |zh - z*|^2 >=
    mu (|z - z*|^2 / 2 - |z - zh|^2)`` (``z*`` solves the variational inequality), so
    ``|z+ - z*|^2 <= (1 - mu / (2 L)) |z - z*|^2 - (3/4 - mu / L) |z - zh|^2``, a
    contraction by ``q = sqrt(1 - mu / (2 L))`` when ``mu <= L / 2``. The start is
    within ``|G(start)| / mu <= (|lipschitz()| + |r'(start)|) / mu`` or the sets'
    diameter, so the count, linear in ``L / mu`` (half the radius left for rounding,
    :mod:`~skdpminimax.solvers.contraction`), is public. With ``target`` the run stops
    as soon as the certificate (:func:`~skdpminimax.solvers.certificates.certify`)
    shows the weighted distance within it, usually long before the count; either way
    the point is within the target, which is all the release rests on.
    """
    eta, n_steps = _a_priori_plan(objective, start, tol)
    W, V = objective.primal_set, objective.dual_set
    w, v = start
    for t in range(1, n_steps + 1):
        g_w, g_v = objective.grad(w, v, data)
        wh, vh = W.project(w - eta * g_w), V.project(v + eta * g_v)
        g_w, g_v = objective.grad(wh, vh, data)
        w, v = W.project(w - eta * g_w), V.project(v + eta * g_v)
        if target is not None and t % _CHECK_EVERY == 0 and t < n_steps:
            if certify(objective, data, w, v).weighted <= target:
                return w, v, t
    return w, v, n_steps


def _public_start(objective, init, rng):
    """``init``, or the objective's start drawn from the fit's generator (a child
    spawned after the solver's and the noise's, whose streams it leaves as they were):
    a random ``init_params(rng)`` is then reproducible with ``random_state``. It is
    data-free, hence public."""
    return objective.init_params(spawn(rng, 1)[0]) if init is None else init


def _start(objective, init):
    """The public start ``(w0, v0)``: ``init`` or the objective's, projected onto the sets."""
    w, v = objective.init_params() if init is None else init
    return (objective.primal_set.project(np.array(w, dtype=float)),
            objective.dual_set.project(np.array(v, dtype=float)))


def _calibration(multiplier, n_releases, n_samples, sample_rate, budget, block_multipliers,
                 n_compositions):
    return NoiseCalibration(
        n_compositions=int(n_compositions),  # the releases one example is in
        noise_multiplier=float(multiplier),
        n_steps=int(n_releases),
        sampler="full" if sample_rate == 1.0 else "partition",
        sample_rate=float(sample_rate),
        batch_size=int(round(n_samples * sample_rate)),
        neighboring_relation="replace-one",
        accounting="analytic-gaussian",
        epsilon=float(budget.epsilon),
        delta=float(budget.delta),
        block_noise_multipliers=tuple(float(z) for z in block_multipliers),
    )


class _OutputPerturbationBase(PrivateSolver):
    _parameter_constraints = {
        "base_solver": [HasMethods(["solve_saddle"]), None],
        "accuracy_ratio": [Interval(Real, 0, 1, closed="neither")],
    }

    def _base(self):
        """A fresh, unused base solver: no state crosses solves (or phases)."""
        return SVRGExtragradient() if self.base_solver is None else fresh_copy(self.base_solver)


class OutputPerturbation(_OutputPerturbationBase):
    r"""Output perturbation for SC-SC problems (seed 004, Algorithm 3).

    Solves :math:`\min_{w \in W}\max_{v \in V} \frac1n\sum_i f(w, v; z_i) + r(w, v)`
    (``mu_w``, ``mu_v > 0``) to a certified accuracy with ``base_solver`` and releases

    .. math::

        \tilde w = w_A + N(0, \sigma^2/\mu_w\, I), \qquad
        \tilde v = v_A + N(0, \sigma^2/\mu_v\, I), \qquad
        \sigma = \sigma_{AG}(\varepsilon, \delta, (1 + 2\rho)\sqrt{Q_{\mathrm{stab}}}).

    Parameters
    ----------
    base_solver : object with ``solve_saddle`` or None, default=None
        Non-private solver (see :mod:`~skdpminimax.solvers.base_solvers`); ``None``
        uses :class:`~skdpminimax.solvers.SVRGExtragradient`. Any object with the same
        method works; its output is re-certified by the engine.
    accuracy_ratio : float in (0, 1), default=0.1
        ``rho``: certified error over the stability radius. Smaller means less noise
        (sensitivity factor ``1 + 2 rho``) and a few more base-solver iterations.

    Notes
    -----
    **Privacy.** Replace-one neighbours, ``n`` public. The pair ``(w, v)`` is one
    Gaussian mechanism on the rescaled vector ``(sqrt(mu_w) w, sqrt(mu_v) v)``, whose
    L2 sensitivity is at most ``(1 + 2 rho) sqrt(Q_stab)`` (module docstring: Lemma
    4.3 of Zhang et al. 2022, refined per block, plus the engine's deterministic
    certificate); ``sigma`` is the analytic Gaussian mechanism's (Balle & Wang 2018,
    Thm. 8) for the whole ``(epsilon, delta)``, which is tighter than the paper's split
    of ``(epsilon/2, delta/2)`` per block (Thm. 4.4) and valid for ``epsilon >= 1``.
    The strong convexity and gradient bounds must come from public constants. Only
    the noisy point is released, projected onto the sets (post-processing); ``n_iter``
    is 1.
    """

    def __init__(self, base_solver=None, accuracy_ratio=0.1):
        self.base_solver = base_solver
        self.accuracy_ratio = accuracy_ratio

    def _sensitivity(self, objective, n_samples):
        """Weighted-norm sensitivity ``(1 + 2 rho) sqrt(Q_stab)`` of the release."""
        return (1.0 + 2.0 * self.accuracy_ratio) * math.sqrt(stability_bound(objective, n_samples))

    def calibrate(self, objective, n_samples, budget):
        """Noise multiplier of the single release (data-free).

        The noise std of each block over that block's own sensitivity is the same
        multiplier ``z``, so ``block_noise_multipliers = (z, z)``.
        """
        self._validate_params()
        self._sensitivity(objective, n_samples)  # fails early on a non-SC-SC objective
        check_target_in_range(objective, n_samples, self.accuracy_ratio)
        self._base()  # and on a base solver that cannot be copied
        z = analytic_gaussian_sigma(budget.epsilon, budget.delta, 1.0)
        return _calibration(z, 1, n_samples, 1.0, budget, (z, z), 1)

    def solve(self, objective, data, budget, rng, *, init=None):
        """Certified solve, then one Gaussian release (see Notes)."""
        calibration = self.calibrate(objective, data.n_samples, budget)
        sens = self._sensitivity(objective, data.n_samples)
        target = self.accuracy_ratio**2 * stability_bound(objective, data.n_samples)
        solver_rng, noise_rng = spawn(rng, 2)
        init = _public_start(objective, init, rng)
        sigma = calibration.noise_multiplier * sens
        mu_w, mu_v = objective.strong_convexity()
        dim = np.size(init[0])
        loose = noise_drowns_the_set(sigma / math.sqrt(mu_w), dim, objective.primal_set)
        warn_if_target_covers_the_sets(objective, target)
        w, v, diagnostics = certified_solve(self._base(), objective, data, target, init,
                                            solver_rng, loose=loose)
        if sigma == 0:  # without noise nothing is private: say what the release is
            warn_if_the_start_is_released(objective, init, w, v, target)
        warn_if_noise_fills_the_set(sigma / math.sqrt(mu_w), w.size, objective.primal_set,
                                    objective)
        w_out = w + noise_rng.standard_normal(w.shape) * sigma / math.sqrt(mu_w)
        v_out = v + noise_rng.standard_normal(v.shape) * sigma / math.sqrt(mu_v)
        # Post-processing: projecting onto the (public) sets keeps the release feasible
        # and cannot move it farther from any feasible point, the saddle point included.
        w_out, v_out = objective.primal_set.project(w_out), objective.dual_set.project(v_out)
        return SolverResult(
            w=w_out, v=v_out, n_iter=1, calibration=calibration,
            info={"sigma_w": sigma / math.sqrt(mu_w), "sigma_v": sigma / math.sqrt(mu_v),
                  "sensitivity": sens, "target": target, "budget": budget},
            diagnostics=diagnostics,
        )


class PhasedOutputPerturbation(_OutputPerturbationBase):
    r"""Phased output perturbation for convex-concave problems (seed 004, Algorithms 4-5, Sec. 4.3).

    The data are split at random into ``K = max(1, floor(log2 n))`` disjoint chunks.
    Phase ``k`` solves, on chunk ``k`` only, to a certified accuracy,

    .. math::

        \min_{w}\max_{v}\ \hat F_k(w, v) + \tfrac{\mu_k}{2}\|w - \tilde w_{k-1}\|^2
        - \tfrac{\mu}{2}\|v\|^2, \qquad \mu_k = \mu 2^k,

    and releases ``w~_k = w_k + N(0, sigma_k^2 I)`` (Alg. 4, primal). Alg. 5 mirrors it
    for ``v`` (``mu/2 ||w||^2``, ``mu_k/2 ||v - v~_{k-1}||^2``). ``variant=
    "convex-strongly-concave"`` (Sec. 4.3) drops the ``v`` regulariser, relies on the
    objective's own strong concavity and runs only the primal pass.

    Parameters
    ----------
    base_solver : object with ``solve_saddle`` or None, default=None
        As in :class:`OutputPerturbation`.
    accuracy_ratio : float in (0, 1), default=0.1
        As in :class:`OutputPerturbation`.
    mu : float or "auto", default="auto"
        Base regularisation. ``"auto"``: Thm. 4.8's ``(L/D) max(2/sqrt(n),
        13 K sqrt(d log(5/delta))/(n epsilon))`` (C-C) or Cor. 4.9's ``3 (L/D)
        max(1/sqrt(n), 4 K sqrt(d_w log(2.5/delta))/(n epsilon))`` (C-SC), with ``L``
        the joint gradient bound and ``D`` the largest radius of the sets (public).
    variant : {"auto", "convex-concave", "convex-strongly-concave"}, default="auto"
        ``"auto"`` uses C-SC when the objective's strong concavity is at least
        ``L / (D sqrt(n))`` (Cor. 4.9's condition), C-C otherwise.

    Notes
    -----
    **Privacy.** Replace-one neighbours, ``n`` public. A phase's release is one
    Gaussian mechanism on ``w`` (or ``v``) with sensitivity ``(1 + 2 rho)
    sqrt(Q_stab / mu_k)`` (module docstring), calibrated by the analytic Gaussian
    mechanism; phase ``k`` sees earlier phases only through their released, noisy
    outputs (used as the regularisation centre and the warm start), and the chunks
    are disjoint, so the phases of one pass compose in parallel (Zhang et al. 2022,
    Lemma A.1): an example is in one phase, one Gaussian release, of each pass. Every
    release has noise ``z`` times its sensitivity, so C-C's two passes are exactly
    ``sqrt(2) / z``-GDP (Gaussian composition; the paper's Thm. 4.8 splits ``(epsilon/2,
    delta/2)`` per pass by basic composition, which needs about 1.3 to 1.4 times the
    noise at epsilon 0.1 to 10) and ``z = sqrt(2) / mu`` with ``mu`` the analytic
    Gaussian's for ``(epsilon, delta)``; C-SC spends ``(epsilon, delta)`` on the primal pass and releases the
    data-free initial ``v`` (Cor. 4.9 guarantees only ``w``). The deterministic
    certificate removes the paper's solver-failure share of ``delta``. Choosing
    ``mu`` on the private data (e.g. by grid search) is not covered.
    """

    _parameter_constraints = {
        **_OutputPerturbationBase._parameter_constraints,
        "mu": [Interval(Real, 0, None, closed="neither"), StrOptions({"auto"})],
        "variant": [StrOptions({"auto", "convex-concave", "convex-strongly-concave"})],
    }

    def __init__(self, base_solver=None, accuracy_ratio=0.1, mu="auto", variant="auto"):
        self.base_solver = base_solver
        self.accuracy_ratio = accuracy_ratio
        self.mu = mu
        self.variant = variant

    # ---- data-free planning -------------------------------------------------
    def _plan(self, objective, n_samples, budget):
        """Variant, ``mu``, ``K`` and the per-pass budget: public quantities only."""
        check_objective(objective, convex=True)
        g_w, g_v = (float(g) for g in objective.lipschitz())
        lip = math.hypot(g_w, g_v)
        if not math.isfinite(lip):
            raise ValueError("Phased output perturbation needs finite objective.lipschitz().")
        w0, v0 = objective.init_params()
        radius = max(objective.primal_set.radius(w0.size), objective.dual_set.radius(v0.size))
        n_phases = max(1, int(math.floor(math.log2(n_samples))))
        mu_v0 = float(objective.strong_convexity()[1])
        variant = self.variant
        if variant == "auto":
            threshold = lip / (radius * math.sqrt(n_samples)) if math.isfinite(radius) else math.inf
            variant = "convex-strongly-concave" if mu_v0 > 0 and mu_v0 >= threshold \
                else "convex-concave"
        if variant == "convex-strongly-concave" and not mu_v0 > 0:
            raise ValueError("variant='convex-strongly-concave' needs strong_convexity()[1] > 0.")
        if self.mu != "auto":
            mu = float(self.mu)
        elif not math.isfinite(radius):
            raise ValueError("mu='auto' needs bounded sets (finite radius); set mu.")
        else:
            eps, delta, n, K = budget.epsilon, budget.delta, n_samples, n_phases
            if variant == "convex-concave":
                d = max(w0.size, v0.size)
                mu = lip / radius * max(2 / math.sqrt(n),
                                        13 * K * math.sqrt(d * math.log(5 / delta)) / (n * eps))
            else:
                mu = 3 * lip / radius * max(
                    1 / math.sqrt(n), 4 * K * math.sqrt(w0.size * math.log(2.5 / delta)) / (n * eps))
        passes = ("primal", "dual") if variant == "convex-concave" else ("primal",)
        return variant, mu, n_phases, passes

    @staticmethod
    def _noise_multiplier(budget, passes):
        """Noise std over sensitivity of every release: an example is in one phase of
        each pass, so it affects one Gaussian release per pass, and ``P`` releases at
        multiplier ``z`` are exactly ``sqrt(P) / z``-GDP; ``z = sqrt(P) / mu`` with
        ``mu`` the analytic Gaussian's for ``(epsilon, delta)``."""
        return math.sqrt(len(passes)) * analytic_gaussian_sigma(budget.epsilon, budget.delta,
                                                                1.0)

    def _phase_objective(self, objective, variant, which, mu, k, centre):
        mu_k = mu * 2.0**k
        w0, v0 = objective.init_params()
        if variant == "convex-strongly-concave":
            return objective.regularized(mu_k, 0.0, center_w=centre)
        if which == "primal":
            return objective.regularized(mu_k, mu, center_w=centre, center_v=np.zeros_like(v0))
        return objective.regularized(mu, mu_k, center_w=np.zeros_like(w0), center_v=centre)

    def calibrate(self, objective, n_samples, budget):
        """Per-release noise multiplier (noise std over sensitivity), data-free."""
        self._validate_params()
        variant, mu, n_phases, passes = self._plan(objective, n_samples, budget)
        # Each phase's bound holds whatever its centre (lipschitz() and the moduli do
        # not read it) on a chunk of at least n // K rows: checked before the spend.
        w0, v0 = objective.init_params()
        for which in passes:
            centre = np.zeros_like(w0 if which == "primal" else v0)
            for k in range(1, n_phases + 1):
                check_target_in_range(
                    self._phase_objective(objective, variant, which, mu, k, centre),
                    max(1, n_samples // n_phases), self.accuracy_ratio)
        self._base()  # fails early on a base solver that cannot be copied
        z = self._noise_multiplier(budget, passes)
        n_rel = n_phases * len(passes)
        # An example is in one phase's chunk: one release per pass.
        return _calibration(z, n_rel, n_samples, 1.0 / n_phases, budget,
                            (z, z if len(passes) == 2 else 0.0), len(passes))

    # ---- the algorithm -------------------------------------------------------
    def solve(self, objective, data, budget, rng, *, init=None):
        """Run the phased passes; only noisy phase outputs cross phases (see Notes)."""
        calibration = self.calibrate(objective, data.n_samples, budget)
        variant, mu, n_phases, passes = self._plan(objective, data.n_samples, budget)
        solver_rng, noise_rng = spawn(rng, 2)
        # One generator per phase, drawn before any data are touched: a base solver
        # that draws a data-dependent amount (SVRG's batches) cannot pass chunk k's
        # data on to phase k + 1 through a shared stream.
        phase_rngs = iter(spawn(solver_rng, n_phases * len(passes)))
        w0, v0 = _start(objective, _public_start(objective, init, rng))
        released = {"primal": w0, "dual": v0}
        phases, evals, fallbacks, covered = [], 0, 0, []
        for which in passes:
            chunks = np.array_split(noise_rng.permutation(data.n_samples), n_phases)
            out = released[which]
            S = objective.primal_set if which == "primal" else objective.dual_set
            for k, idx in enumerate(chunks, start=1):
                centre = S.project(out)  # post-processing of the previous release
                phase_obj = self._phase_objective(objective, variant, which, mu, k, centre)
                chunk = data.take(np.sort(idx))
                q_stab = stability_bound(phase_obj, chunk.n_samples)
                target = self.accuracy_ratio**2 * q_stab
                start = (centre, v0) if which == "primal" else (w0, centre)
                mu_block = phase_obj.strong_convexity()[0 if which == "primal" else 1]
                sens = (1.0 + 2.0 * self.accuracy_ratio) * math.sqrt(q_stab / mu_block)
                sigma = calibration.noise_multiplier * sens
                loose = noise_drowns_the_set(sigma, centre.size, S)
                if target_covers_the_sets(phase_obj, target):
                    covered.append(f"{which} {k}")
                # A fresh base solver and generator per phase: no solver state crosses phases.
                w, v, diagnostics = certified_solve(self._base(), phase_obj, chunk, target,
                                                    start, next(phase_rngs), loose=loose)
                evals += diagnostics["n_grad_evals"]
                fallbacks += diagnostics["a_priori_fallback"]
                point = w if which == "primal" else v
                out = point + noise_rng.standard_normal(point.shape) * sigma
                phases.append({"pass": which, "phase": k, "n_samples": chunk.n_samples,
                               "mu_k": mu * 2.0**k, "centre": centre, "released": out,
                               "sensitivity": sens, "sigma": sigma,
                               "target": target})
            released[which] = out
        if covered:
            # target_covers_the_sets, per phase: such a phase releases its
            # centre plus noise whatever the chunk holds (public constants only).
            warnings.warn(
                f"Phased output perturbation: in {len(covered)} of {len(phases)} phases "
                f"(pass and phase: {', '.join(covered[:4])}{', ...' if len(covered) > 4 else ''}) "
                "the accuracy target exceeds the phase's sets' whole extent, so those "
                "phases may release their centre plus noise without fitting their chunk, "
                "even at epsilon=inf. A larger mu (or mu='auto'), more rows or a clipping "
                "solver ('sgda') give a model fitted to the data.", UserWarning)
        primal_phases = [phase for phase in phases if phase["pass"] == "primal"]
        last_primal = primal_phases[-1]
        # The first phase's noise is the largest, and the later phases, held ever closer
        # to their centres, cannot undo more than a fraction of it: it decides whether
        # the release is mostly noise.
        warn_if_noise_fills_the_set(primal_phases[0]["sigma"], w0.size, objective.primal_set,
                                    objective)
        w_out = objective.primal_set.project(released["primal"])
        v_out = objective.dual_set.project(released["dual"])
        return SolverResult(
            w=w_out, v=v_out, n_iter=len(phases), calibration=calibration,
            info={"variant": variant, "mu": mu, "n_phases": n_phases, "phases": phases,
                  "n_passes": len(passes),
                  # The released primal's noise and sensitivity, as scalars (what
                  # estimators keep in solver_info_; per phase in "phases").
                  "sigma_w": float(last_primal["sigma"]),
                  "sensitivity": float(last_primal["sensitivity"]),
                  # The first primal phase's noise: the largest (its sensitivity has the
                  # weakest regulariser), and it moves every later phase's centre, so
                  # the released model's error is mostly its, not sigma_w's.
                  "sigma_w_first_phase": float(primal_phases[0]["sigma"])},
            diagnostics={"n_grad_evals": evals, "a_priori_fallbacks": fallbacks},
        )
