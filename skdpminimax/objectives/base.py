"""Saddle objectives: ``min_{w in W} max_{v in V} (1/n) sum_i f(w, v; z_i) + r(w, v)``.

An objective holds no data. It knows its sets, its per-example data term ``f`` and
its data-free term ``r`` (regularisers, known constants), and it states bounds on
the per-example gradients of ``f`` that follow from *public* quantities only
(declared ``data_norm``, projection radii). Gradient-perturbation solvers clip to
these bounds or below, so there the clip norms are what privacy rests on. Solvers
whose sensitivity argument uses the constants themselves (NISPP's monotone prox step,
output perturbation's stability bound) use them only from an objective that opts in
with :attr:`SaddleObjective.certified_constants` (see :func:`certifies_constants`).
"""

import contextlib
import functools
import warnings
from abc import ABC, abstractmethod

import numpy as np
import scipy.sparse as sp

from skdpminimax.privacy.mechanisms import clipped_sum

__all__ = ["SaddleData", "SaddleObjective", "RegularizedObjective", "certifies_constants",
           "check_shapes_on_stand_in"]


def per_example_rows(grads, n_samples, dim, block):
    """``grads`` as a float64 ``(n_samples, dim)`` array, or a ValueError.

    The clip bounds each *row*: an objective that returns two rows for an example
    (``vstack`` where ``hstack`` was meant) would give it twice the clip, and a
    complex row has no real norm. Float16 and float32 rows are widened so that the
    clip's norm is exact.
    """
    grads = np.asarray(grads)
    if np.iscomplexobj(grads) or grads.dtype.kind not in "fiub":
        raise ValueError(f"per_example_grads returned a {grads.dtype} {block} block; real "
                         "numbers are needed (each row is clipped by its norm).")
    if grads.shape != (n_samples, dim):
        raise ValueError(
            f"per_example_grads returned a {block} block of shape {grads.shape} for "
            f"{n_samples} examples and {dim} parameters; one row per example is needed "
            f"({(n_samples, dim)}): the clip bounds each row, so extra rows would multiply "
            "an example's sensitivity.")
    return grads.astype(np.float64, copy=False)


def prepare_data(objective, data):
    """``objective.prepare(data)``, refused if it changes the examples (one per row of
    ``X``): the sampler and the sensitivity are planned on the rows given."""
    return _check_prepared(objective, data, objective.prepare(data))


def _check_prepared(objective, data, prepared):
    if prepared.n_samples != data.n_samples or (
            data.y is not None and np.shape(prepared.y)[:1] != (data.n_samples,)):
        raise ValueError(
            f"{type(objective).__name__}.prepare changed the number of examples "
            f"({data.n_samples} -> {prepared.n_samples}); it may only add per-example "
            "columns (aux).")
    return prepared


# At most this many stand-in rows (one per group code, spread over the codes).
_STAND_IN_ROWS = 64


def _refuse_empty_blocks(objective):
    """Refuse an objective whose ``init_params`` gives an empty block, by name (the
    calibration would fail on it with a message about noise shares)."""
    try:
        w, v = objective.init_params(np.random.default_rng(0))
    except Exception:  # noqa: BLE001 - the stand-in batches report it, with context
        return
    empty = [name for name, block in (("primal w", w), ("dual v", v)) if np.size(block) == 0]
    if empty:
        raise ValueError(
            f"{type(objective).__name__}.init_params returned an empty {empty[0]} block: "
            "the solvers release both blocks of min_w max_v at every step, and an empty "
            "one has no noise to calibrate. For a plain minimisation, declare a dual of "
            "one coordinate held at 0 (dual_set = Box(0.0, 0.0), v = np.zeros(1), its "
            "per-example gradient 0, lipschitz()[1] a small positive bound, which keeps "
            "its share of the noise small). Nothing was spent.")


def check_shapes_on_stand_in(objective, n_features, y=None, groups=None):
    """Refuse, before any spend, an objective that fails on stand-in batches or returns
    blocks of the wrong shape.

    The stand-ins hold zero features, the first targets (already accepted by
    ``check_data``) and every group code once (group labels are public; up to 64
    codes spread over them, the largest included): two rows, or one per code if
    there are more, and a batch of one row. ``per_example_grads``,
    ``per_example_values``, ``clipped_grad_sums`` and ``reg_grad`` are called. Shape and dtype are
    what the engine's own checks (:func:`per_example_rows`, :func:`prepare_data`)
    refuse inside the solver, after the charge; an exception (a start of the wrong
    size, a set without ``project``, an objective that indexes groups none were given
    for) would come there too. One row matters: Poisson batches of one row are common
    on small data (``np.squeeze`` of a one-row block is the typical slip), and how
    often they occur depends on the private size. The stand-ins are built from public
    quantities (and the first targets), so a refusal here does not depend on the other
    rows.
    """
    codes = None if groups is None else np.unique(np.asarray(groups))
    if codes is not None and codes.size > _STAND_IN_ROWS:  # spread over the codes, the
        codes = codes[np.linspace(0, codes.size - 1, _STAND_IN_ROWS).astype(int)]  # last kept
    m = 2 if codes is None else max(2, codes.size)
    engine_sums = engine_clipped_sums(objective)
    # The library's own objectives clip and sum without per-example gradients, and take
    # their means without them (grad): their per_example_grads, an (m, dim w) matrix, is
    # checked on the one-row stand-in only. On m rows it took m times the model's size
    # before any spend (64 x 20 million floats, 10 GB, for 100 classes of 200,000
    # features; a scale probe).
    many_rows = is_users(objective) or isinstance(engine_sums, functools.partial) or (
        defining_class(forwarded_to_base(objective, "clipped_grad_sums"), "clipped_grad_sums")
        in (None, SaddleObjective))
    _refuse_empty_blocks(objective)
    for rows in (m, 1):
        stand_in = SaddleData(
            np.zeros((rows, n_features)),
            None if y is None else np.resize(np.asarray(y)[:rows], rows),
            None if codes is None else np.resize(codes, rows))
        try:
            w, v = objective.init_params(np.random.default_rng(0))
            w, v = np.asarray(w, dtype=float), np.asarray(v, dtype=float)
            objective.primal_set.project(w.copy())
            objective.dual_set.project(v.copy())
            prepared = objective.prepare(stand_in)
            if many_rows or rows == 1:
                gw, gv = objective.per_example_grads(w, v, prepared)
            objective.per_example_values(w, v, prepared)
            # What the solvers call on every step, overridden or not.
            sums = engine_sums(w, v, prepared, 1.0, 1.0)
            regs = objective.reg_grad(w, v)
        except Exception as exc:  # noqa: BLE001 - any failure here would follow the charge
            what = "one row" if rows == 1 else f"{rows} rows"
            raise ValueError(
                f"{type(objective).__name__} fails on a stand-in batch of {what} (zero "
                f"features{'' if codes is None else ', every group code'}) before anything is "
                f"spent: {type(exc).__name__}: {exc}. It would fail the same way inside the "
                "solver, after the charge. Check init_params against the sets, "
                "primal_set / dual_set, the blocks' shapes (keep them 2-D: no np.squeeze) "
                "and what the objective reads from the data (groups, y)."
            ) from exc
        _check_prepared(objective, stand_in, prepared)
        if many_rows or rows == 1:
            per_example_rows(gw, rows, np.size(w), "primal")
            per_example_rows(gv, rows, np.size(v), "dual")
        for what, (a, b) in (("clipped_grad_sums", sums), ("reg_grad", regs)):
            if np.shape(a) != np.shape(w) or np.shape(b) != np.shape(v):
                raise ValueError(
                    f"{type(objective).__name__}.{what} returned blocks of shapes "
                    f"{np.shape(a)} and {np.shape(b)}; the parameters have shapes "
                    f"{np.shape(w)} and {np.shape(v)}. Nothing was spent.")


def check_on_the_rows(objective, data, chunk_rows=4096):
    """Refuse, before any spend, a (user) objective that raises on the training rows at
    its start point, or whose gradients there are not finite: ``prepare``,
    ``per_example_grads`` and ``clipped_grad_sums`` on every row, a chunk of rows at a
    time.

    During the fit a row the objective raises on, or whose gradient is not finite,
    counts as zero (the oracle's fallback, the clip's), so such an objective would
    otherwise be fitted silently on fewer rows, or on none. Like the input checks, the
    refusal reads the data before the spend and speaks to whoever fits; it says which
    exception, not which row.
    """
    w, v = objective.init_params(np.random.default_rng(0))
    w, v = np.asarray(w, dtype=float), np.asarray(v, dtype=float)
    clipped_sums = engine_clipped_sums(objective)
    try:
        prepared = prepare_data(objective, data)
        for start in range(0, prepared.n_samples, chunk_rows):
            chunk = prepared.take(np.arange(start, min(start + chunk_rows, prepared.n_samples)))
            clipped_sums(w, v, chunk, 1.0, 1.0)
            grads = objective.per_example_grads(w, v, chunk)
            if not all(np.all(np.isfinite(np.asarray(g, dtype=float))) for g in grads):
                raise FloatingPointError("gradients that are not finite (NaN or inf) on "
                                         "some rows")
            if start == 0:
                _check_rows_are_separate(objective, w, v, chunk, grads, clipped_sums)
            if certifies_constants(objective):
                _check_certified_bounds(objective, grads)
    except (_RowsNotSeparate, _BoundsNotCertified):
        raise
    except Exception as exc:  # noqa: BLE001 - in the fit it would silently drop rows
        raise ValueError(
            f"{type(objective).__name__} fails on the training rows at its start point "
            f"before anything is spent: {type(exc).__name__}: {exc}. In a fit, a row it "
            "fails on would count as zero (fitted on the other rows, or on noise alone). "
            "Make the objective accept every row the public bounds allow."
        ) from exc


class _RowsNotSeparate(ValueError):
    """A per-example gradient that depends on other rows of its batch."""


class _BoundsNotCertified(ValueError):
    """A certified ``lipschitz()`` that a training row's gradient exceeds."""


def _check_certified_bounds(objective, grads):
    """Refuse a certified objective whose per-example gradients at the start point
    exceed its ``lipschitz()`` (a review: one declared ten times too low fitted under
    output perturbation and NISPP, whose noise rests on it). The check reads the rows,
    but under a true bound it never fires: its outcome is then fixed, and reveals
    nothing; it fires only where the guarantee would not hold anyway."""
    for name, g, bound in zip(("primal", "dual"), grads, objective.lipschitz()):
        g = np.asarray(g, dtype=float)
        largest = float(np.max(np.linalg.norm(g.reshape(len(g), -1), axis=1), initial=0.0))
        if largest > float(bound) * (1.0 + 1e-9) + 1e-12:
            raise _BoundsNotCertified(
                f"{type(objective).__name__} certifies its constants (certified_constants), "
                f"but a training row's {name} gradient at the start point exceeds "
                f"lipschitz()'s bound {float(bound):.4g}: the bound is not proved. "
                "Output perturbation and NISPP's certified path rest on it. Fix the bound, "
                "or drop certified_constants (the clipping solvers then enforce it). "
                "Nothing was spent.")


def _check_rows_are_separate(objective, w, v, chunk, grads, clipped_sums):
    """Refuse an objective whose row ``i`` of ``per_example_grads`` (or whose clipped
    sums) depend on the other rows of the batch: the clip bounds one row's own
    gradient, so such an objective moves the noisy sum by more than the noise is
    calibrated for (a review: a batch mean returned on every row moved the clipped sum
    by 2.99 where the noise assumed 2). A few rows of the first chunk, each alone."""
    n = chunk.n_samples
    rows = sorted({0, n // 3, (2 * n) // 3, n - 1}) if n > 1 else []  # four at most
    gw, gv = (np.asarray(g, dtype=float) for g in grads)
    sum_w = np.zeros_like(w, dtype=float)
    sum_v = np.zeros_like(v, dtype=float)
    for i in rows:
        one = chunk.take(np.array([i]))
        aw, av = (np.asarray(g, dtype=float) for g in objective.per_example_grads(w, v, one))
        for batch_row, alone in ((gw[i], aw[0]), (gv[i], av[0])):
            scale = max(1.0, float(np.max(np.abs(alone), initial=0.0)))
            if not np.allclose(batch_row, alone, rtol=1e-6, atol=1e-9 * scale):
                raise _RowsNotSeparate(
                    f"{type(objective).__name__}.per_example_grads gives row {i} of a "
                    "batch another gradient than the same row alone: each row's gradient "
                    "must depend on that example only (and the parameters). The clip "
                    "bounds a row's own gradient, so this objective would move the noisy "
                    "sum by more than the noise is calibrated for. (A batch mean or "
                    "normalisation returned per row is the usual slip.) Nothing was spent.")
        cw, cv = clipped_sums(w, v, one, 1.0, 1.0)
        sum_w, sum_v = sum_w + np.asarray(cw, dtype=float), sum_v + np.asarray(cv, dtype=float)
    if rows:
        bw, bv = clipped_sums(w, v, chunk.take(np.array(rows)), 1.0, 1.0)
        for together, apart in ((bw, sum_w), (bv, sum_v)):
            if not np.allclose(np.asarray(together, dtype=float), apart, rtol=1e-6,
                               atol=1e-9 * max(1.0, len(rows))):
                raise _RowsNotSeparate(
                    f"{type(objective).__name__}.clipped_grad_sums of {len(rows)} rows is "
                    "not the sum of its value on each row alone: the sum of clipped "
                    "per-example gradients is what the noise is calibrated for. Nothing "
                    "was spent.")


class SaddleData:
    """The validated training data handed to a solver.

    Parameters
    ----------
    X : ndarray of shape (n_samples, n_features)
        Features, rows already clipped to the declared ``data_norm``.
    y : ndarray of shape (n_samples,), default=None
        Targets in the encoding the objective expects.
    groups : ndarray of shape (n_samples,), default=None
        Integer group codes in ``[0, n_groups)``.
    aux : ndarray of shape (n_samples, k), default=None
        Per-example constants an objective precomputes once per fit
        (:meth:`SaddleObjective.prepare`), gathered with the batch.
    public_size : int, default=None
        The size solvers plan on (sampling rate, number of steps) when it may not be
        the number of rows: under add/remove-one neighbours the true size is private
        (see :mod:`skdpminimax.base`). ``None``: plan on ``n_samples``.
    run_log : RunLog, default=None
        Where the gradient oracles built on these rows (or on rows taken from them)
        log themselves; set by the estimators (``skdpminimax.solvers.run_log``).
    row_ids : ndarray of int, default=None
        The rows' positions in the data the estimator handed over (``None``: the
        identity); :meth:`take` carries them, so that the run log can count the
        releases each original row was exposed to.
    """

    __slots__ = ("X", "y", "groups", "aux", "public_size", "run_log", "row_ids")

    def __init__(self, X, y=None, groups=None, aux=None, public_size=None, *, run_log=None,
                 row_ids=None):
        self.X = X
        self.y = y
        self.groups = groups
        self.aux = aux
        self.public_size = None if public_size is None else int(public_size)
        self.run_log = run_log
        self.row_ids = row_ids

    @property
    def n_samples(self):
        return self.X.shape[0]

    @property
    def planning_size(self):
        """The size every public quantity of a run is computed from."""
        return self.n_samples if self.public_size is None else self.public_size

    def __getstate__(self):
        # A copy (another process, a deep copy) does not carry the fit's run log: its
        # oracles could not report to it.
        return {name: (None if name == "run_log" else getattr(self, name, None))
                for name in self.__slots__}

    def __setstate__(self, state):
        if isinstance(state, tuple):  # an older pickle: (None, {slot: value})
            state = state[1] or {}
        for name in self.__slots__:  # slots missing from an older pickle default to None
            setattr(self, name, state.get(name))

    def take(self, idx):
        """Return the rows ``idx`` (``None`` means all rows)."""
        if idx is None:
            return self
        ids = None
        if self.run_log is not None:  # only a logged run needs the rows' origin
            ids = np.asarray(idx) if self.row_ids is None else self.row_ids.take(idx)
        return SaddleData(
            self.X[idx] if sp.issparse(self.X) else self.X.take(idx, axis=0),
            None if self.y is None else self.y.take(idx),
            None if self.groups is None else self.groups.take(idx),
            None if self.aux is None else self.aux.take(idx, axis=0),
            run_log=self.run_log, row_ids=ids,
        )


class SaddleObjective(ABC):
    """Base class of saddle objectives; subclass it to bring your own.

    Subclasses set ``primal_set`` and ``dual_set`` (see :mod:`skdpminimax.sets`)
    and implement :meth:`init_params`, :meth:`per_example_values`,
    :meth:`per_example_grads` and :meth:`lipschitz`. Override :meth:`reg_value` /
    :meth:`reg_grad` for data-free terms (they are never clipped nor noised), and
    :meth:`smoothness` / :meth:`strong_convexity` where known.

    Attributes
    ----------
    exact_clipped_sums : bool, default=False
        Set to ``True`` in the class that overrides :meth:`clipped_grad_sums`, only if
        the override clips every example's gradient per block exactly as the base
        class does (the primal block to ``clip_w``; the dual block to ``clip_v``, or to
        ``||u / clip_v|| <= 1`` for a vector of clips) and a row whose gradient is not
        finite adds zero. Gradient-perturbation privacy rests on that clip. Without
        the flag, declared in the overriding class or below it, the engine does not
        run the override: it clips the per-example gradients itself (the base class's
        :meth:`clipped_grad_sums`), with a warning (:func:`engine_clipped_sums`). The
        built-in objectives declare it.
    certified_constants : bool, default=False
        Set to ``True`` in your class only if :meth:`lipschitz`, :meth:`smoothness`
        and :meth:`strong_convexity` are *proved* from public bounds: every example
        the public bounds allow has data-term gradients within :meth:`lipschitz` at
        every point of the sets, and every data set (every batch) gives an objective
        with gradient map :meth:`smoothness`-Lipschitz and the moduli of
        :meth:`strong_convexity`. The solvers that rest privacy on these constants
        rather than on clipping (the monotone branch of
        :class:`~skdpminimax.solvers.NoisyInexactProximalPoint`, the output
        perturbation frameworks) read them only then (except that
        ``NoisyInexactProximalPoint`` rests on :meth:`smoothness` in every case: its
        prox weight must exceed it). Those frameworks also evaluate :meth:`grad`
        unclipped after the spend, so the flag vouches too that it is finite and does
        not raise at every point of the sets on every data set the public bounds allow
        (an exception there would be an output a row decides). It vouches for the class
        that declares it: a subclass overriding a method it covers (the data and
        data-free terms, the constants, and :meth:`check_data`, the domain they are
        proved on) must declare it again (:func:`certifies_constants`). The built-in
        objectives declare it.
    """

    primal_set = None
    dual_set = None
    exact_clipped_sums = False
    certified_constants = False

    @abstractmethod
    def init_params(self, rng=None):
        """Initial ``(w, v)``: data-independent."""

    @abstractmethod
    def per_example_values(self, w, v, data):
        """``f(w, v; z_i)`` for every row of ``data``: shape ``(m,)``."""

    @abstractmethod
    def per_example_grads(self, w, v, data):
        """Compute the gradients of ``f(w, v; z_i)``: shapes ``(m, dim w)``, ``(m, dim v)``."""

    @abstractmethod
    def lipschitz(self):
        """``(G_w, G_v)``: bounds on ``||grad_w f||`` and ``||grad_v f||`` per example.

        They must hold for every example allowed by the public bounds and every point
        of ``primal_set x dual_set``; ``np.inf`` when no such bound exists (then a
        gradient-perturbation solver needs explicit clip norms).
        """

    def typical_grad_norms(self):
        """``(c_w, c_v)``: per-example gradient norms at a typical scale, from public values.

        What a solver's ``clip="auto"`` clips at: a norm that balances clipping bias
        against noise without paying for the worst case that :meth:`lipschitz`
        certifies (the solver caps it there). It may depend on public constants
        only. Default: the certified bounds themselves.
        """
        return self.lipschitz()

    def typical_dual_clips(self, noise_scale):
        """Per-coordinate clips of the dual block for ``clip_v="auto"``, or ``None``.

        ``noise_scale`` is a release's noise std on the *mean* dual gradient per unit
        clip (``z_v s / m``: multiplier, sensitivity factor, batch normaliser; 0
        without noise). An objective may return a vector ``c`` (one positive clip
        per dual coordinate, from public values and ``noise_scale`` only): the solver
        then clips each example's dual gradient ``u`` to ``||u / c|| <= 1`` and adds
        noise ``z_v s c`` per coordinate, the same Gaussian mechanism as a scalar
        clip after dividing by ``c`` (:func:`~skdpminimax.privacy.mechanisms.clipped_sum`).
        Its :meth:`clipped_grad_sums` must clip that way (the base class's does); a
        subclass that overrides :meth:`clipped_grad_sums` below an inherited
        ``typical_dual_clips`` keeps one scalar clip, with a warning. Default ``None``:
        one scalar clip, :meth:`typical_grad_norms`.
        """
        return None

    def typical_solution_norm(self):
        """A public guess of the primal solution's norm, or ``None`` (the default).

        What :class:`~skdpminimax.solvers.NoisySGDA`'s ``step_size="scaled"`` reads
        to size its steps; from public constants only. ``None``: no guess, and the
        solver keeps its ``"auto"`` step.
        """
        return None

    def typical_grad_rms_fraction(self):
        """The root mean square of a per-example primal gradient, as a fraction of
        :meth:`typical_grad_norms`'s primal norm (public; default 1).

        ``step_size="scaled"`` sizes the convex step ``D / (G sqrt(T))`` with ``G``
        the stochastic gradient's RMS, which is this fraction of the clip. An
        objective whose examples carry public weights that average well below their
        largest (the AUC objective weighs a positive ``1 - p`` and a negative ``p``,
        an RMS of ``2 sqrt(p (1 - p))`` of the balanced case) says so here; its mean
        gradient and curvature shrink by as much, so the step grows. From public
        constants only.
        """
        return 1.0

    def check_data(self, y, groups):
        """Refuse targets or group codes outside the domain the bounds are proved on.

        The estimators call it on the training data before anything is spent: an
        objective whose :meth:`lipschitz` (or certified constants) assumes, say,
        ``y`` in ``{-1, +1}`` must refuse any other ``y`` here, or one such example
        could move the release further than the calibrated sensitivity. Raise
        ``ValueError``; the default checks nothing.
        """

    def prepare(self, data):
        """Return ``data`` with per-example constants precomputed (default: unchanged).

        Solvers call it once before iterating; only parameter-free, per-example
        quantities belong here (nothing aggregated over examples).
        """
        return data

    def reg_value(self, w, v):
        """Data-free part ``r(w, v)`` of the objective."""
        return 0.0

    def reg_grad(self, w, v):
        """Gradient of the data-free part."""
        return np.zeros_like(w), np.zeros_like(v)

    def smoothness(self):
        """Lipschitz constant of the whole gradient map, the data term's and
        :meth:`reg_grad`'s together (``np.inf`` if unknown): at least
        :meth:`reg_curvature`, which the solvers that plan on it (NISPP, output
        perturbation) check before any spend."""
        return np.inf

    def gradients_shrink_at_fit(self):
        """Whether the per-example gradients shrink to the residuals at a good fit (a
        squared loss: ``2 (h - y) x``), so that :meth:`typical_grad_norms`, taken at the
        start point, overstates them by a ratio no public value gives (the targets'
        range over the residuals'). ``clip_w="auto_if_quiet"`` then grows the clip from
        the generic one only as the noise falls, rather than raising it to the typical
        norm once the noise is quiet against that norm. Default ``False`` (a logistic
        or AUC loss, whose per-example gradients keep their scale at a fit)."""
        return False

    def max_example_weight(self):
        """How many times :meth:`typical_grad_norms`'s primal norm an example's weight in
        the data term can reach (public; default 1).

        Reweighting objectives (worst-group risk weighs an example ``q_g / pi_g``) give
        ``max q_g / pi_g``. ``clip_w="auto_if_quiet"`` lets the clip grow towards that
        many typical norms where the noise is quiet, so that the reweighting is not
        clipped away.
        """
        return 1.0

    def reg_curvature(self):
        """``(c_w, c_v)``: curvature of the data-free term ``r`` in ``w`` and in ``v``
        (the largest eigenvalue of its Hessian's magnitude in each block).

        Solvers' default steps stay below ``1 / c``: a step above ``2 / c`` makes the
        regulariser's own update diverge, whatever the data term. Default ``(0, 0)``:
        nothing known, no cap. Where :meth:`strong_convexity` certifies the modulus
        the cap already follows from it; this covers nonconvex data terms (the MLP).
        """
        return 0.0, 0.0

    def strong_convexity(self):
        """``(mu_w, mu_v)``: certified strong convexity in w and strong concavity in v.

        ``0`` means convex (concave) without a modulus, ``-inf`` that nothing is
        known. Default ``(-inf, -inf)``: an objective claims no convexity unless it
        says so.
        """
        return -np.inf, -np.inf

    # ---- derived quantities -------------------------------------------------
    def value(self, w, v, data):
        """Empirical objective ``(1/n) sum_i f(w, v; z_i) + r(w, v)``."""
        return float(np.mean(self.per_example_values(w, v, data)) + self.reg_value(w, v))

    def grad(self, w, v, data):
        """Gradient of :meth:`value` with respect to ``w`` and ``v``."""
        gw, gv = self.per_example_grads(w, v, data)
        rw, rv = self.reg_grad(w, v)
        return gw.mean(axis=0) + rw, gv.mean(axis=0) + rv

    def clipped_grad_sums(self, w, v, data, clip_w, clip_v):
        """Sum the per-example gradients over ``data``, clipped per block.

        Override when the per-example gradients have structure that makes their
        norms cheaper than materialising them (e.g. rank-one layers), and declare
        ``exact_clipped_sums = True`` in the overriding class: the engine runs an
        override only then.
        """
        gw, gv = self.per_example_grads(w, v, data)
        gw = per_example_rows(gw, data.n_samples, np.size(w), "primal")
        gv = per_example_rows(gv, data.n_samples, np.size(v), "dual")
        return clipped_sum(gw, clip_w), clipped_sum(gv, clip_v)

    def regularized(self, lam_w, lam_v=None, center_w=None, center_v=None):
        """Return this objective plus
        ``lam_w/2 ||w - center_w||^2 - lam_v/2 ||v - center_v||^2``."""
        return RegularizedObjective(self, lam_w, lam_w if lam_v is None else lam_v,
                                    center_w, center_v)

    @property
    def n_primal(self):
        return int(np.size(self.init_params()[0]))

    @property
    def n_dual(self):
        return int(np.size(self.init_params()[1]))


class RegularizedObjective(SaddleObjective):
    """``base + lam_w/2 ||w - c_w||^2 - lam_v/2 ||v - c_v||^2`` (a data-free term).

    The data term, its per-example gradients and their bounds are the base's; the
    added term raises strong convexity / concavity by ``lam_w`` / ``lam_v``. Its
    constants are certified when the base's are.
    """

    @property
    def certified_constants(self):
        return certifies_constants(self.base)

    def __init__(self, base, lam_w, lam_v, center_w=None, center_v=None):
        if lam_w < 0 or lam_v < 0:
            raise ValueError("Regularisation weights must be >= 0.")
        self.base = base
        self.lam_w = float(lam_w)
        self.lam_v = float(lam_v)
        w0, v0 = base.init_params()
        self.center_w = np.zeros_like(w0) if center_w is None else np.asarray(center_w, float)
        self.center_v = np.zeros_like(v0) if center_v is None else np.asarray(center_v, float)
        self.primal_set = base.primal_set
        self.dual_set = base.dual_set

    # What the estimators read off an objective to predict: the base's, when it has
    # them (a factory returning base.regularized(...) lost predict, and score raised).
    _PREDICTIONS = ("predict", "decision_function", "predict_proba")

    def __getattr__(self, name):
        base = self.__dict__.get("base")  # absent while copy or pickle builds the object
        if name in RegularizedObjective._PREDICTIONS and base is not None:
            return getattr(base, name)
        raise AttributeError(f"{type(self).__name__!r} object has no attribute {name!r}")

    def init_params(self, rng=None):
        return self.base.init_params(rng)

    def per_example_values(self, w, v, data):
        return self.base.per_example_values(w, v, data)

    def per_example_grads(self, w, v, data):
        return self.base.per_example_grads(w, v, data)

    def grad(self, w, v, data):
        # The base's (it may have a faster one than the mean of per-example
        # gradients) plus the added quadratic terms.
        gw, gv = self.base.grad(w, v, data)
        return (gw + self.lam_w * (w - self.center_w), gv - self.lam_v * (v - self.center_v))

    def clipped_grad_sums(self, w, v, data, clip_w, clip_v):
        return self.base.clipped_grad_sums(w, v, data, clip_w, clip_v)

    def prepare(self, data):
        return self.base.prepare(data)

    def check_data(self, y, groups):
        return self.base.check_data(y, groups)

    def lipschitz(self):
        return self.base.lipschitz()

    def typical_grad_norms(self):
        return self.base.typical_grad_norms()

    def typical_dual_clips(self, noise_scale):
        return self.base.typical_dual_clips(noise_scale)

    def typical_solution_norm(self):
        return self.base.typical_solution_norm()

    def typical_grad_rms_fraction(self):
        return self.base.typical_grad_rms_fraction()

    def reg_value(self, w, v):
        dw, dv = w - self.center_w, v - self.center_v
        return (self.base.reg_value(w, v) + 0.5 * self.lam_w * float(dw @ dw)
                - 0.5 * self.lam_v * float(dv @ dv))

    def reg_grad(self, w, v):
        rw, rv = self.base.reg_grad(w, v)
        return rw + self.lam_w * (w - self.center_w), rv - self.lam_v * (v - self.center_v)

    def smoothness(self):
        return self.base.smoothness() + max(self.lam_w, self.lam_v)

    def max_example_weight(self):
        return self.base.max_example_weight()

    def gradients_shrink_at_fit(self):
        return self.base.gradients_shrink_at_fit()

    def reg_curvature(self):
        cw, cv = self.base.reg_curvature()
        return cw + self.lam_w, cv + self.lam_v

    def strong_convexity(self):
        mw, mv = self.base.strong_convexity()
        return mw + self.lam_w, mv + self.lam_v


def defining_class(obj, name):
    """The class of ``type(obj)``'s MRO that defines ``name`` (``None`` if none)."""
    return next((klass for klass in type(obj).__mro__ if name in vars(klass)), None)


def forwarded_to_base(objective, *names):
    """``objective`` under the :class:`RegularizedObjective` wrappers that forward every
    method in ``names`` to their base: a subclass that overrides one of them is not
    unwrapped, and its own version is judged."""
    while isinstance(objective, RegularizedObjective) and all(
            defining_class(objective, name) is RegularizedObjective for name in names):
        objective = objective.base
    return objective


def is_users(objective):
    """Whether ``objective``'s class (under its :class:`RegularizedObjective` wrappers)
    is defined outside the library."""
    while type(objective) is RegularizedObjective:
        objective = objective.base
    return not type(objective).__module__.startswith("skdpminimax.")


@contextlib.contextmanager
def quiet_after_the_spend(objective):
    """Silence what a user's objective says while a solver runs: a numpy warning it
    raises on one row (an overflow once the iterate moves) would be an output that
    row decides, as an exception would (the oracle counts such a row as zero; a
    side-channel review heard the warnings). The built-in objectives raise none, and
    run as they are; the solvers' own warnings are issued outside."""
    if not is_users(objective):
        yield
        return
    with np.errstate(all="ignore"), warnings.catch_warnings():
        warnings.simplefilter("ignore")
        yield


def engine_clipped_sums(objective):
    """The ``clipped_grad_sums`` the engine calls on ``objective`` (every solver's
    oracle and the checks before the spend).

    The objective's own where it is the base class's or an override that vouches for
    its clip (``exact_clipped_sums`` declared in the overriding class or below it; a
    :class:`RegularizedObjective` forwards its base's). Otherwise the base class's on
    this objective, which clips the per-example gradients itself, with a
    :class:`UserWarning`: an override that forgot a clip, or let a NaN through, would
    otherwise set the sensitivity the noise is calibrated for.
    """
    inner = forwarded_to_base(objective, "clipped_grad_sums")
    owner = defining_class(inner, "clipped_grad_sums")
    if owner is None or owner is SaddleObjective:
        return objective.clipped_grad_sums
    declares = defining_class(inner, "exact_clipped_sums")
    if (getattr(inner, "exact_clipped_sums", False) is True and declares is not None
            and issubclass(declares, owner)):
        return objective.clipped_grad_sums
    warnings.warn(
        f"{type(inner).__name__} overrides clipped_grad_sums without declaring "
        "exact_clipped_sums = True in the overriding class: the engine clips the "
        "per-example gradients itself instead (SaddleObjective.clipped_grad_sums), since "
        "privacy rests on that clip. Declare the flag if the override clips every "
        "example's gradient exactly and adds zero for a row that is not finite.",
        UserWarning)  # one location: shown once, not once per caller
    return functools.partial(SaddleObjective.clipped_grad_sums, objective)


# What `certified_constants` vouches for: the data term, the data-free term and the
# constants derived from them. A subclass overriding one of these below the class
# that declared the flag has not certified its new version.
_VOUCHED = ("per_example_grads", "per_example_values", "clipped_grad_sums", "prepare",
            "grad", "value", "reg_grad", "reg_value", "lipschitz", "smoothness",
            "strong_convexity",
            # the data domain the constants are proved on (a review: a subclass that
            # dropped it kept the flag, and output perturbation under-noised 22x)
            "check_data")


def certifies_constants(objective):
    """Whether ``objective`` vouches for its constants (``certified_constants``).

    True only if the flag is ``True`` and was declared in the class that defines
    (or below every class that defines) the methods it covers; a
    :class:`RegularizedObjective` certifies what its base certifies. Objects that
    are not :class:`SaddleObjective` instances certify when they carry the flag
    themselves.
    """
    return uncertified_reason(objective) is None


def uncertified_reason(objective):
    """Why ``objective`` does not certify its constants (``None`` if it does): the
    flag is not set, or it was inherited from a class above one that overrides a
    method it vouches for (see :func:`certifies_constants`)."""
    while type(objective) is RegularizedObjective:  # a subclass may change what it adds
        objective = objective.base
    name = type(objective).__name__
    if getattr(objective, "certified_constants", False) is not True:
        return f"{name} does not set certified_constants = True"
    if "certified_constants" in getattr(objective, "__dict__", {}):
        return None  # set on the instance: it vouches for the instance's methods
    declares = defining_class(objective, "certified_constants")
    for method in _VOUCHED:
        owner = defining_class(objective, method)
        if owner is not None and not issubclass(declares, owner):
            return (f"{name} inherits certified_constants from {declares.__name__}, but "
                    f"{owner.__name__} overrides {method}() below it, unproved by that "
                    f"flag; declare certified_constants = True again in {owner.__name__} "
                    "(or below it) once its constants are proved")
    return None
