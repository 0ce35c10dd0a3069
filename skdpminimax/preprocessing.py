"""Private preprocessing: per-feature standardisation from one Gaussian release.

:class:`DPStandardScaler` learns each feature's mean and standard deviation from a
single Gaussian release of the clipped per-feature sums of ``x`` and ``x^2``. Its
noise grows with ``sqrt(n_features)`` (one release, L2 sensitivity), where a scaler
that spends a slice of epsilon per feature and moment (diffprivlib's
``StandardScaler``) grows with ``n_features``; and it is private for the same
neighbouring relation as the default estimators (add/remove-one, the size private or
declared), so it composes with their Poisson-sampled fits on one ledger.

**The mechanism.** With public per-feature bounds ``[lower_j, upper_j]``, each value is
clipped to its bounds and mapped to ``u_j = (x_j - mid_j) / half_j`` in ``[-1, 1]``
(``mid`` and ``half`` the bounds' centre and half-width). Each row ``u`` is clipped to
L2 norm ``c = row_clip * sqrt(n_features)`` (``row_clip = 1``: no row is clipped). The
release is ``(sum_i u_i, sum_i u_i^2) + N(0, sigma^2 I)``.

* Sensitivity, add/remove-one: a row moves the release by ``||(u, u^2)||``, and
  ``|u_j| <= 1`` gives ``||u^2|| <= min(||u||, ||u||^2)``, so at most
  ``c sqrt(1 + min(1, c^2))`` (``sqrt(2) c`` for ``c >= 1``; ``c`` with
  ``with_std=False``, which releases the first sums only). Replace-one: twice that
  (a replacement is a removal and an addition), or ``sqrt(2 kappa) c`` where smaller
  (``2.150 c`` for ``c >= 1``, ``2 c`` for ``c <= 0.5``; :func:`moment_sensitivity`
  has the proof).
* ``sigma`` is the analytic Gaussian's (Balle and Wang 2018) for that sensitivity at
  the release's ``(epsilon, delta)``.
* The size: under add/remove-one it is private. It is released by the library's
  two-sided geometric count with ``n_samples_budget * epsilon`` (pure DP, sensitivity
  1), or declared public (an int), exactly as for the estimators
  (:mod:`skdpminimax.base`). The Gaussian release gets the rest of epsilon and all of
  delta: sequential composition gives ``(epsilon, delta)``. Under replace-one both
  neighbours have the same size, ``len(X)``, and nothing is spent on it.
* Everything after the release is post-processing: division by the size, the means
  clipped to ``[-1, 1]`` and the second moments to ``[0, 1]``, the std floored at
  ``min_scale`` times the bounds' width, the map back to the features' units.

The whole ``(epsilon, delta)`` is spent on the accountant (diffprivlib's
``BudgetAccountant``) before the data are read; bad input is refused before the spend.
"""

import math
import warnings
from numbers import Integral, Real

import numpy as np
from diffprivlib.accountant import BudgetAccountant
from diffprivlib.utils import PrivacyLeakWarning
from sklearn.base import BaseEstimator, OneToOneFeatureMixin, TransformerMixin
from sklearn.utils._param_validation import Interval, Options, StrOptions
from sklearn.utils.validation import check_array, check_is_fitted

from skdpminimax._compat import validate_data
from skdpminimax.base import (
    DEFAULT_N_SAMPLES_BUDGET,
    MIN_DELTA,
    _check_count_epsilon,
    _declared_size,
    all_or_nothing,
    check_declared_size,
    resolve_rng,
    warn_about_public_size,
    warn_if_delta_too_large,
    warn_if_replayable,
)
from skdpminimax.privacy.budget import MAX_FINITE_EPSILON, PrivacyBudget, budget_entry
from skdpminimax.privacy.calibration import analytic_gaussian_sigma
from skdpminimax.privacy.composition import Release
from skdpminimax.privacy.ledger import (
    LedgerGuardMixin,
    check_budget,
    has_fitted_attributes,
    spend,
    spend_release,
)
from skdpminimax.privacy.mechanisms import clip_rows, private_size, row_blocks

__all__ = ["DPStandardScaler", "clipped_moment_sums", "moment_sensitivity"]


def _replacement_ratio(m):
    """``kappa(m) = max (a - b)^2 (1 + (a + b)^2) / (a^2 + b^2)`` over ``|a|, |b| <= m``
    (``0 < m <= 1``), with a relative margin of ``1e-9``.

    In ``s = |a + b|``, ``t = |a - b|`` the box is ``s + t <= 2 m`` and the ratio is
    ``2 t^2 (1 + s^2) / (s^2 + t^2)``, which grows with ``t``; so the maximum lies on
    ``t = 2 m - s``, ``0 <= s <= 2 m``: a rational function of one variable, maximised
    at ``s = 0`` (the value 2) or at a real root of its derivative's numerator (a
    polynomial of degree at most 5). ``kappa`` is 2 for ``m <= 1/2`` (near ``s = 0`` the
    ratio is ``2 + 2 s^2 (4 m^2 - 1) / (s^2 + t^2)`` to second order) and 2.3114 at
    ``m = 1``."""
    s = np.polynomial.Polynomial([0.0, 1.0])
    num = (2.0 * m - s) ** 2 * (1.0 + s ** 2)
    den = s ** 2 + (2.0 * m - s) ** 2
    stationary = (num.deriv() * den - num * den.deriv()).roots()
    # A root is a stationary point in the interval; a tolerance keeps a root at its ends.
    points = [0.0] + [float(np.clip(r.real, 0.0, 2.0 * m)) for r in stationary
                      if abs(r.imag) <= 1e-9 and -1e-9 <= r.real <= 2.0 * m + 1e-9]
    return max(2.0 * num(x) / den(x) for x in points) * (1.0 + 1e-9)


def moment_sensitivity(row_norm_bound, with_std=True, neighbouring="add_remove"):
    """L2 sensitivity of :func:`clipped_moment_sums` for rows of norm at most
    ``c = row_norm_bound`` with entries in ``[-1, 1]``.

    Add/remove-one: a row moves the release by ``||(u, u^2)||``, and ``||u^2|| <=
    min(||u||, ||u||^2)`` (``u_j^2 <= |u_j|`` and ``sum u_j^4 <= (sum u_j^2)^2``), so
    ``c sqrt(1 + min(1, c^2))`` (``sqrt(2) c`` for ``c >= 1``), or ``c`` for the first
    sums only.

    Replace-one (``a`` by ``b``): ``||a - b|| <= 2 c`` for the first sums only. With the
    second sums, the move is ``sum_j (a_j - b_j)^2 (1 + (a_j + b_j)^2)``, square-rooted.
    Every entry lies in ``[-m, m]`` with ``m = min(1, c)`` (an entry is at most the
    row's norm), so each term is at most ``kappa(m) (a_j^2 + b_j^2)`` (the ratio's
    largest value on that box, :func:`_replacement_ratio`), and the move is at most
    ``sqrt(kappa(m) (||a||^2 + ||b||^2)) <= sqrt(2 kappa(m)) c``: ``2 c`` for ``c <=
    0.5`` and ``2.150 c`` for ``c >= 1`` (the earlier bound, from ``kappa <= 3``, was
    ``sqrt(6) c = 2.449 c``). Twice the add/remove bound (a removal and an addition)
    is never smaller, and the smaller of the two is returned."""
    c = float(row_norm_bound)
    if not with_std:
        return 2.0 * c if neighbouring == "replace_one" else c
    add_remove = c * math.sqrt(1.0 + min(1.0, c * c))
    if neighbouring == "replace_one":
        if c == 0.0:
            return 0.0
        return min(math.sqrt(2.0 * _replacement_ratio(min(1.0, c))) * c, 2.0 * add_remove)
    return add_remove


def clipped_moment_sums(U, row_norm_bound, with_std=True):
    """``sum_i u_i`` (and ``sum_i u_i^2``) over the rows of ``U`` clipped to ``[-1, 1]``
    and to L2 norm ``row_norm_bound``: the release before its noise."""
    rows = np.asarray(clip_rows(np.clip(U, -1.0, 1.0), row_norm_bound))
    first = rows.sum(axis=0)
    return np.concatenate([first, (rows ** 2).sum(axis=0)]) if with_std else first


_FLOAT_DTYPES = (np.float64, np.float32)



def _writeable(X):
    """``X``, or a copy of it where it is read-only (``copy=False`` scales in place)."""
    return X if X.flags.writeable else X.copy()


def _warn_if_mostly_floored(released_var_u, var_noise_std_u, floor_u, flat, min_scale):
    """Warn where the std floor, not the data, set most features' scales because the
    bounds are far wider than the features' spread (one scalar pair for features of
    unlike scales is the usual slip). A feature counts where its released variance is
    below the floor's by more than twice the noise on it: where the noise alone could
    have put it there (a small epsilon on few rows), the floor is doing its job, and
    no bounds would help. It reads the released statistics and the public noise scale
    only (post-processing), so it costs no privacy."""
    below = (released_var_u + 2.0 * var_noise_std_u < floor_u ** 2) & ~flat
    n_free = int(np.count_nonzero(~flat))
    if n_free and 2 * int(np.count_nonzero(below)) > n_free:
        warnings.warn(
            f"{int(np.count_nonzero(below))} of {n_free} features' released stds are "
            f"below min_scale={min_scale:g} times their bounds' width (by more than the "
            "noise explains) and were floored there: those features are scaled less "
            "than StandardScaler would scale them. Their bounds are much wider than "
            "their spread (one pair of bounds for features of different scales?). "
            "Give bounds per feature, close to each feature's range, or lower "
            "min_scale. (This reads the release only.)",
            UserWarning)


def _as_bounds(bounds, n_features):
    """``(lower, upper)`` arrays of length ``n_features`` from scalars or arrays, or a
    clear error."""
    if not (isinstance(bounds, (tuple, list)) and len(bounds) == 2):
        raise ValueError(f"bounds must be a (lower, upper) pair of floats or arrays, got "
                         f"{bounds!r}.")
    lower, upper = (np.asarray(b, dtype=float) for b in bounds)
    out = []
    for name, b in (("lower", lower), ("upper", upper)):
        if b.size == 1:  # one value (a size-1 array too, as diffprivlib takes it)
            b = np.full(n_features, float(b.reshape(-1)[0]))
        if b.shape != (n_features,):
            raise ValueError(f"The {name} bounds have shape {b.shape}; X has {n_features} "
                             "features (give one value, or one per feature).")
        if not np.all(np.isfinite(b)):
            raise ValueError(f"The {name} bounds must be finite.")
        out.append(b)
    lower, upper = out
    if np.any(lower > upper):
        j = int(np.argmax(lower > upper))
        raise ValueError(f"bounds: lower > upper for feature {j} ({lower[j]} > {upper[j]}).")
    return lower, upper


class DPStandardScaler(LedgerGuardMixin, OneToOneFeatureMixin, TransformerMixin, BaseEstimator):
    """Standardise features with privately released means and standard deviations.

    One Gaussian release of the per-feature sums of ``x`` and ``x^2`` (clipped to public
    bounds and rows clipped in norm) gives every feature's mean and std; ``transform``
    then computes ``(x - mean_) / scale_`` like scikit-learn's ``StandardScaler``. The
    noise grows with ``sqrt(n_features)``, not ``n_features``. The scaler is private
    for add/remove-one neighbours by default, like the estimators' Poisson-sampled
    fits, so a ``Pipeline`` of both on one accountant is ``(sum of epsilons, sum of
    deltas)``-DP under one relation. See :mod:`skdpminimax.preprocessing` for the
    mechanism, its sensitivity and its accounting. Dense ``X`` only (scikit-learn's
    "dense data is required" error for a sparse matrix): centring would fill a
    sparse matrix in; scale sparse features by public constants instead.

    Parameters
    ----------
    epsilon : float, default=1.0
        Privacy loss of the fit, in ``(0, inf]`` (``inf``: exact statistics of the
        clipped data, no privacy; each std still floored at ``min_scale`` times its
        bounds' width, so a feature with a smaller spread than that is scaled less
        than :class:`~sklearn.preprocessing.StandardScaler` would).
    delta : float, default=1e-6
        In ``[1e-100, 1)``; choose it well below ``1 / n_samples`` (the fit warns
        otherwise, as the estimators do).
    bounds : tuple (lower, upper) or None, default=None
        Public bounds of each feature (floats, or arrays of length ``n_features``);
        values outside them are clipped to them. ``None`` takes them from the data,
        which is not private: the fit warns (``PrivacyLeakWarning``), as diffprivlib
        does.
    with_mean : bool, default=True
        Centre the data (``transform`` subtracts ``mean_``).
    with_std : bool, default=True
        Scale the data to unit variance. ``False`` releases the first sums only
        (half the sensitivity's square, less noise) and sets ``scale_`` to ``None``.
        ``with_mean`` and ``with_std`` cannot both be ``False`` (the identity).
    row_clip : float in (0, 1], default=1.0
        For the release, each row (in the ``[-1, 1]`` units of its bounds) is clipped
        to L2 norm ``row_clip * sqrt(n_features)``. At 1 no row is clipped and the
        statistics are unbiased; smaller values divide the noise by ``1 / row_clip``
        and bias the statistics of rows of large norm towards the bounds' centres.
    min_scale : float in (0, 1], default=0.1
        Floor of each released std, as a fraction of the feature's bounds' width: a
        feature whose released variance is tiny or negative (noise) is not blown up.
        Where it sets more than half the features' scales and the noise does not
        explain why (their released variances are below the floor's by more than
        twice the noise on them), the fit warns: bounds far wider than the features'
        spread. A small epsilon on few rows floors many scales without a warning:
        the noise swamps those variances, and the floor is what keeps them usable.
        At 0.1 a feature with a smaller std (a pixel that is nearly always blank) is
        under-scaled rather than amplified: on scikit-learn's digits (64 pixels in
        [0, 16]) behind a scaler at epsilon 0.5, the default fit's test AUC at epsilon
        0.5 / 1 / 5 is 87.8 / 91.8 / 93.7 with 0.1 and 78.4 / 87.2 / 93.1 with 0.025,
        and breast cancer and the offset task of ``benchmarks/private_preprocessing.py``
        move by at most 0.2.
    n_samples_budget : float in (0, 1), int >= 1 or "public", default=0.05
        The size the statistics are divided by. Under add/remove-one it is private:
        released with ``n_samples_budget * epsilon`` (two-sided geometric noise), or
        declared public as an int (a published data set's size; nothing spent; more
        than ten times from the rows warns, more than 1,000 times is refused before
        the spend), or ``"public"`` (``len(X)``, which ``n_samples_seen_`` then
        reveals: warns).
        Unused under replace-one, where both neighbours have the same size.
    neighbouring : {"add_remove", "replace_one"}, default="add_remove"
        The relation the guarantee holds for. ``"replace_one"`` doubles the
        sensitivity and takes the size as public (diffprivlib's relation; use it in
        front of a replace-one solver).
    copy : bool, default=True
        Copy ``X`` in ``transform`` (``False``: scale in place where possible).
    accountant : BudgetAccountant or None, default=None
        The ledger the fit spends on (``None``: diffprivlib's default accountant).
    random_state : int, Generator, RandomState or None, default=None
        Seeds the fit's single ``numpy.random.Generator``. Leave ``None`` for a
        release: a known seed replays the noise.

    Attributes
    ----------
    mean_ : ndarray of shape (n_features,)
        The released means (in the features' units).
    var_ : ndarray of shape (n_features,) or None
        The released variances, floored (``None`` when ``with_std=False``).
    scale_ : ndarray of shape (n_features,) or None
        ``sqrt(var_)`` (``None`` when ``with_std=False``); 1 for a feature whose bounds
        are equal.
    n_samples_seen_ : int
        The size the sums were divided by: ``len(X)`` under replace-one, else the
        released or declared size.
    noise_std_ : float
        The std of the Gaussian noise on each released sum (``[-1, 1]`` units; 0 at
        ``epsilon = inf``).
    sensitivity_ : float
        The release's L2 sensitivity (``[-1, 1]`` units).
    lower_, upper_ : ndarray of shape (n_features,)
        The bounds used.
    privacy_spent_ : PrivacyBudget
        What the fit spent.
    privacy_shares_ : dict
        Where it went (records with ``epsilon`` and ``delta``; they add up to
        ``privacy_spent_``): ``"n_samples"``, the size's count (``None`` where the size
        is declared or the relation replace-one), and ``"moments"``, the Gaussian
        release of the sums.
    release_ : Release or None
        The release as a :class:`~skdpminimax.privacy.Release` record (its Gaussian
        and, with a private size, its count), charged on the ledger as such: pass it
        to the estimator fitted next on these rows, ``composed_with=[scaler.release_]``,
        with that estimator's ``(epsilon, delta)`` raised to the total, and the two
        are composed in one PLD (less noise for the same total). ``None`` under
        replace-one or at ``epsilon = inf``.
    n_features_in_ : int
        Number of features seen during ``fit``.
    feature_names_in_ : ndarray of shape (n_features,)
        Names of features seen during ``fit`` (when ``X`` has string column names).

    See Also
    --------
    sklearn.preprocessing.StandardScaler : The non-private scaler.
    diffprivlib.models.StandardScaler : Laplace noise per feature and moment,
        replace-one.

    Examples
    --------
    >>> import numpy as np
    >>> from skdpminimax.preprocessing import DPStandardScaler
    >>> X = np.random.default_rng(0).uniform(0, 10, size=(5000, 3))
    >>> scaler = DPStandardScaler(epsilon=1.0, bounds=(0, 10), n_samples_budget=5000,
    ...                           random_state=0).fit(X)
    >>> bool(np.allclose(scaler.mean_, X.mean(axis=0), atol=0.05))
    True
    >>> scaler.transform(X).std(axis=0).round(1)
    array([1., 1., 1.])
    """

    _parameter_constraints = {
        "epsilon": [Interval(Real, 0, MAX_FINITE_EPSILON, closed="right"),
                    Options(Real, {np.inf})],
        "delta": [Interval(Real, MIN_DELTA, 1, closed="left")],
        "bounds": [tuple, list, None],
        "with_mean": ["boolean"],
        "with_std": ["boolean"],
        "row_clip": [Interval(Real, 0, 1, closed="right")],
        "min_scale": [Interval(Real, 0, 1, closed="right")],
        "n_samples_budget": [Interval(Real, 0, 1, closed="neither"),
                             Interval(Integral, 1, None, closed="left"), StrOptions({"public"})],
        "neighbouring": [StrOptions({"add_remove", "replace_one"})],
        "copy": ["boolean"],
        "accountant": [BudgetAccountant, None],
        "random_state": ["random_state", np.random.Generator],
    }

    def __init__(self, *, epsilon=1.0, delta=1e-6, bounds=None, with_mean=True, with_std=True,
                 row_clip=1.0, min_scale=0.1, n_samples_budget=DEFAULT_N_SAMPLES_BUDGET,
                 neighbouring="add_remove", copy=True, accountant=None, random_state=None):
        self.epsilon = epsilon
        self.delta = delta
        self.bounds = bounds
        self.with_mean = with_mean
        self.with_std = with_std
        self.row_clip = row_clip
        self.min_scale = min_scale
        self.n_samples_budget = n_samples_budget
        self.neighbouring = neighbouring
        self.copy = copy
        self.accountant = accountant
        self.random_state = random_state

    def __sklearn_tags__(self):
        tags = super().__sklearn_tags__()
        tags.non_deterministic = False
        tags.input_tags.sparse = False
        tags.transformer_tags.preserves_dtype = ["float64", "float32"]  # transform keeps X's
        return tags

    def fit(self, X, y=None):
        """Release the features' means and stds (spends ``(epsilon, delta)``).

        Parameters
        ----------
        X : array-like of shape (n_samples, n_features)
            The private rows (finite values; dense).
        y : None, default=None
            Ignored.

        Returns
        -------
        self : DPStandardScaler
            Fitted.
        """
        refit = has_fitted_attributes(self)
        with all_or_nothing(self) as outcome:
            self._fit(X, refit)
            outcome.keep = True
        return self

    def _fit(self, X, refit=False):
        (X, lower, upper, declared, count_epsilon,
         (row_bound, sens, sigma)) = self._checked(X, reset=True)
        n_samples, n_features = X.shape
        budget = PrivacyBudget(self.epsilon, self.delta)
        add_remove = self.neighbouring == "add_remove"
        accountant = self._fit_ledger()
        check_budget(accountant, budget.epsilon, budget.delta, owner=type(self).__name__,
                     refit=refit)
        if self.bounds is None:
            warnings.warn(
                "Bounds have not been specified and will be calculated on the data provided. "
                "This will result in additional privacy leakage. To ensure differential "
                "privacy and no additional privacy leakage, specify bounds for each "
                "dimension.", PrivacyLeakWarning)
        warn_if_replayable(self.random_state, budget.epsilon)
        warn_about_public_size(self.n_samples_budget, budget.epsilon, add_remove=add_remove,
                               uses="divides by", revealed_by="n_samples_seen_")
        if add_remove:
            check_declared_size(declared, n_samples,
                                f"the statistics are divided by {declared}")

        # before the data are read; an add/remove-one release is charged as one that a
        # later fit may compose with (release_)
        release = self._release(count_epsilon, sens, sigma)
        if release is None:
            spend(accountant, budget.epsilon, budget.delta, relation=self._relation)
        else:
            spend_release(accountant, release)
        rng = resolve_rng(self.random_state)
        if count_epsilon is not None:
            size = private_size(n_samples, count_epsilon, rng)  # exact at epsilon = inf
        else:
            size = declared if add_remove and declared is not None else n_samples
        warn_if_delta_too_large(budget, size)  # as the estimators do

        # Halves first: (upper + lower) and (upper - lower) overflow for bounds near
        # the float range.
        mid, half = lower / 2.0 + upper / 2.0, upper / 2.0 - lower / 2.0
        flat = half == 0.0  # a feature fixed by its bounds: u = 0
        divisor = np.where(flat, 1.0, half)
        # In blocks of rows: the scaled, clipped and squared copies are a block's, not
        # X's (three X-sized temporaries before: 240 MB for a 2,000 x 5,000 X of 80 MB,
        # a scale probe). Each row is clipped on its own, so the sums are the same.
        sums = np.zeros(n_features * (2 if self.with_std else 1))
        for rows in row_blocks(X.shape):
            U = (np.clip(X[rows], lower, upper) - mid) / divisor
            sums += clipped_moment_sums(U, row_bound, self.with_std)
        if sigma > 0:
            sums = sums + sigma * rng.standard_normal(sums.shape)

        mean_u = np.clip(sums[:n_features] / size, -1.0, 1.0)
        self.mean_ = np.where(flat, lower, mid + half * mean_u)
        if self.with_std:
            second = np.clip(sums[n_features:] / size, 0.0, 1.0)
            floor_u = 2.0 * self.min_scale  # min_scale * width, in half-width units
            # the floor on the std itself: its square underflows for a tiny min_scale
            released_var_u = second - mean_u ** 2
            released_std_u = np.sqrt(np.maximum(released_var_u, 0.0))
            # the noise's std on a released second moment, in the same units
            _warn_if_mostly_floored(released_var_u, sigma / size, floor_u, flat,
                                    self.min_scale)
            std_u = np.maximum(released_std_u, floor_u)
            self.scale_ = np.where(flat, 1.0, half * std_u)
            with np.errstate(over="ignore"):  # inf beyond the float range (bounds ~1e154+)
                self.var_ = np.where(flat, 0.0, self.scale_ ** 2)
        else:
            self.scale_ = None
            self.var_ = None
        self.n_samples_seen_ = int(size)
        self.noise_std_ = float(sigma)
        self.sensitivity_ = float(sens)
        self.lower_, self.upper_ = lower, upper
        self.privacy_spent_ = budget
        self.privacy_shares_ = {
            "n_samples": None if count_epsilon is None else budget_entry(count_epsilon, 0.0),
            "moments": budget_entry(self._moments_epsilon(count_epsilon), budget.delta),
        }
        self.release_ = release

    @property
    def _relation(self):
        """The release's neighbouring relation in the library's words (the samplers'
        ``neighboring_relation``): ``"add/remove-one"`` or ``"replace-one"``."""
        return "add/remove-one" if self.neighbouring == "add_remove" else "replace-one"

    def _check_params(self):
        """The checks on the parameters alone (``_checked`` and a rows-only
        ``_check_fit``): ``(declared size or None, epsilon of the private count or
        None)``."""
        self._validate_params()
        if not (self.with_mean or self.with_std):
            raise ValueError("with_mean=False and with_std=False make the scaler the identity: "
                             "it would spend its budget on nothing. Drop it from the pipeline.")
        declared = _declared_size(self.n_samples_budget)
        count_epsilon = None
        if (self.neighbouring == "add_remove"
                and not isinstance(self.n_samples_budget, (Integral, str))):
            count_epsilon = self.epsilon * self.n_samples_budget
            _check_count_epsilon("n_samples_budget", count_epsilon)
        return declared, count_epsilon

    def _moments_epsilon(self, count_epsilon):
        """The Gaussian release's epsilon: the fit's, less the size count's share."""
        if count_epsilon is not None and math.isfinite(self.epsilon):
            return self.epsilon - count_epsilon
        return self.epsilon

    def _release(self, count_epsilon, sens, sigma):
        """The fit's release as a :class:`~skdpminimax.privacy.Release` (add/remove-one,
        finite epsilon), else ``None``."""
        if self._relation != "add/remove-one" or not math.isfinite(self.epsilon):
            return None
        return Release(self.epsilon, self.delta,
                       gaussian_multipliers=(sigma / sens,) if sigma > 0 else (),
                       count_epsilons=() if count_epsilon is None else (count_epsilon,))

    def _checked(self, X, reset):
        """Everything ``fit`` checks and plans before its spend: ``(X, lower, upper,
        declared size or None, epsilon of the private count or None, (row-norm bound,
        sensitivity, sigma))``, or a clear error (nothing spent; ``_check_fit`` restores
        what validation records)."""
        declared, count_epsilon = self._check_params()
        X = validate_data(self, X, dtype=np.float64, reset=reset)
        if self.bounds is None:
            lower, upper = X.min(axis=0), X.max(axis=0)
        else:
            lower, upper = _as_bounds(self.bounds, X.shape[1])
        # The noise depends on public quantities only: computed here, before the spend,
        # so that a failure cannot come after it.
        sums_epsilon = self._moments_epsilon(count_epsilon)
        row_bound = self.row_clip * math.sqrt(X.shape[1])
        sens = moment_sensitivity(row_bound, self.with_std, self.neighbouring)
        sigma = (analytic_gaussian_sigma(sums_epsilon, self.delta, sens)
                 if math.isfinite(sums_epsilon) else 0.0)
        return X, lower, upper, declared, count_epsilon, (row_bound, sens, sigma)

    def _check_fit(self, X, y=None, *, rows_only=False, **fit_params):
        """Raise what ``fit(X)`` would raise before its spend; nothing is spent or changed.

        Callers that charge fits in advance (:mod:`skdpminimax.search`) run it so that
        bad input fails before their charge. ``rows_only``: ``X`` is not what the fit
        will get (earlier steps transform it), so only the parameters are checked.

        Parameters
        ----------
        X : array-like of shape (n_samples, n_features)
            The data the fit would get.
        y : None
            Ignored.
        rows_only : bool, default=False
            Check the parameters only.
        **fit_params : dict
            Ignored (``fit`` takes none).

        Returns
        -------
        self : DPStandardScaler
            Unchanged.
        """
        # Restored whatever happens: validate_data(reset=True) records the width and
        # feature names.
        with all_or_nothing(self):
            if rows_only:
                self._check_params()
            else:
                self._checked(X, reset=True)
            check_budget(self._fit_ledger(), self.epsilon, self.delta,
                         owner=type(self).__name__)
        return self

    def transform(self, X, copy=None):
        """Standardise ``X`` with the released statistics (post-processing).

        Parameters
        ----------
        X : array-like of shape (n_samples, n_features)
            Rows to transform.
        copy : bool or None, default=None
            Copy ``X`` (``None``: the ``copy`` parameter).

        Returns
        -------
        X_tr : ndarray of shape (n_samples, n_features)
            The standardised rows.
        """
        check_is_fitted(self)
        copy = self.copy if copy is None else copy
        X = validate_data(self, X, dtype=_FLOAT_DTYPES, reset=False, copy=copy)
        X = _writeable(X)
        if self.with_mean:
            X -= self.mean_
        if self.with_std:
            X /= self.scale_
        return X

    def inverse_transform(self, X, copy=None):
        """Map standardised rows back to the features' units.

        Parameters
        ----------
        X : array-like of shape (n_samples, n_features)
            Standardised rows.
        copy : bool or None, default=None
            Copy ``X`` (``None``: the ``copy`` parameter).

        Returns
        -------
        X_original : ndarray of shape (n_samples, n_features)
            The rows in the features' units.
        """
        check_is_fitted(self)
        copy = self.copy if copy is None else copy
        # check_array, as scikit-learn's scaler: no feature-name check on the way back
        X = _writeable(check_array(X, dtype=_FLOAT_DTYPES, copy=copy))
        if X.shape[1] != self.n_features_in_:
            raise ValueError(f"X has {X.shape[1]} features, but DPStandardScaler is expecting "
                             f"{self.n_features_in_} features as input.")
        if self.with_std:
            X *= self.scale_
        if self.with_mean:
            X += self.mean_
        return X
