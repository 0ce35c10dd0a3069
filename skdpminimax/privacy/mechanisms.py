"""Shared mechanism pieces: clipping, Gaussian noise, and private counts.

Every solver goes through these functions rather than its own copy, so that the
sensitivity argument is made once.

All noise is drawn from the fit's own ``numpy.random.Generator`` (128 bits of OS
entropy unless ``random_state`` fixes it). The counts used to go through diffprivlib's
geometric mechanisms, each seeded with one 32-bit integer drawn from that generator: a
privacy review recovered that seed from the other groups' released counts (an
adversary who knows every row but one knows their exact noise) and with it the last
count's noise, and the 2**32 seeds alone made the release only approximately pure DP
(delta ~ 3e-5 to 1e-4 unaccounted).
"""

import math

import numpy as np
import scipy.sparse as sp

__all__ = ["clip_factors", "clip_rows", "clipped_sum", "discrete_laplace",
           "count_posterior_mean", "exponential_mechanism", "private_count",
           "private_counts", "private_size",
           "scaled_by_factors", "row_norms", "squared_row_norms"]


def clip_rows(X, max_norm, copy=False):
    """Scale each row of ``X`` down to L2 norm at most ``max_norm``: a new array where a
    row is clipped (CSR for sparse ``X``); where none is, a read-only view of dense ``X``
    (no copy of a large X), or a copy with ``copy=True`` (for code that may write into
    the rows it is given: user objectives).

    Rows already inside the ball are unchanged. This is how a declared ``data_norm``
    becomes a guarantee rather than an assumption.
    """
    norms = row_norms(X)
    too_long = norms > max_norm
    # Divide first: max_norm / norm can underflow to 0 for norms near float max.
    if sp.issparse(X):
        if not too_long.any() and not copy and _canonical_csr(X):
            # Nothing to clip: no copy of a large X (a fit kept one as large as X, a
            # scale probe: 1.2 GB more on 50,000 x 200,000 at 1%), but read-only arrays
            # shared with the caller's X, so that nothing can write into it.
            return _read_only_csr(X)
        X = _divide_csr_rows(X, np.where(too_long, norms, 1.0))
        X.data *= np.repeat(np.where(too_long, max_norm, 1.0), np.diff(X.indptr))
        return X
    X = np.asarray(X, dtype=float)
    if not too_long.any() and not copy:
        # Nothing to clip: no copy of X, but a read-only view, so that nothing can
        # write into the caller's array.
        view = X.view()
        view.flags.writeable = False
        return view
    X = X.copy()
    X[too_long] = (X[too_long] / norms[too_long, None]) * max_norm
    return X


def row_norms(X):
    """L2 norm of each row of ``X`` (dense or sparse), without overflow for huge
    finite entries.

    Each row is scaled by its largest absolute entry before squaring; a norm that
    exceeds the float range is returned as the largest float.
    """
    if sp.issparse(X):
        return _sparse_row_norms(X)
    X = np.asarray(X, dtype=float)
    norms = np.empty(X.shape[0])
    # In blocks of rows: the scaled copy is a block's, not X's (a fit on a large X
    # made two X-sized temporaries here).
    for rows in row_blocks(X.shape):
        block = X[rows]
        scale = np.abs(block).max(axis=1, initial=0.0)
        scaled = block / np.where(scale > 0, scale, 1.0)[:, None]
        with np.errstate(over="ignore"):
            norms[rows] = scale * np.sqrt(np.einsum("ij,ij->i", scaled, scaled))
    return np.minimum(norms, np.finfo(float).max)


_ROW_BLOCK_ENTRIES = 1 << 20  # entries of a block of rows (8 MB of floats)


def row_blocks(shape):
    """Slices of consecutive rows of a dense array of ``shape``, each of about
    ``_ROW_BLOCK_ENTRIES`` entries (at least one row): work on X row by row in blocks,
    so that temporaries are a block's size, not X's."""
    n_rows, n_cols = shape
    step = max(1, _ROW_BLOCK_ENTRIES // max(1, n_cols))
    return [slice(start, start + step) for start in range(0, n_rows, step)]


def _canonical_csr(X):
    """Whether ``X`` is a CSR matrix of floats without duplicate or unsorted entries (which
    scipy would sort in place)."""
    return X.format == "csr" and X.dtype == np.float64 and X.has_canonical_format


def _read_only_csr(X):
    """A CSR matrix over ``X``'s own arrays, made read-only (no copy)."""
    arrays = []
    for a in (X.data, X.indices, X.indptr):
        view = a.view()
        view.flags.writeable = False
        arrays.append(view)
    out = sp.csr_matrix(tuple(arrays), shape=X.shape, copy=False)
    out.has_sorted_indices = True
    out.has_canonical_format = True
    return out


def _csr_row_blocks(X):
    """Blocks of rows of sparse ``X`` as ``(start, stop, lengths, offsets, values)``: rows
    ``[start, stop)`` (at least one, at most about ``_ROW_BLOCK_ENTRIES`` stored entries),
    the rows' entry counts, the offsets of the non-empty rows' first entries in
    ``values``, and ``values``, their stored entries as floats (a view where ``X`` holds
    floats). Duplicates are summed first (a copy, rare), so that a row's entries are its
    coordinates; otherwise no copy of ``X`` is made."""
    X = sp.csr_matrix(X)  # no copy of a CSR
    if not X.has_canonical_format:
        X = X.copy()
        X.sum_duplicates()
    n, indptr = X.shape[0], X.indptr
    start = 0
    while start < n:
        stop = int(np.searchsorted(indptr, indptr[start] + _ROW_BLOCK_ENTRIES, side="right")) - 1
        stop = min(n, max(stop, start + 1))
        lengths = np.diff(indptr[start:stop + 1])
        filled = lengths > 0
        offsets = (indptr[start:stop] - indptr[start])[filled]
        values = X.data[indptr[start]:indptr[stop]].astype(float, copy=False)
        yield start, stop, lengths, offsets, values
        start = stop


def _sparse_row_norms(X):
    """:func:`row_norms` of a sparse ``X`` from its stored entries, in blocks of rows
    (:func:`_csr_row_blocks`): no copy of ``X`` (the previous version made three
    X-sized temporaries, ``abs``, a scaled copy and its square)."""
    norms = np.zeros(X.shape[0])
    for start, stop, lengths, offsets, values in _csr_row_blocks(X):
        if offsets.size:
            filled = lengths > 0
            values = np.abs(values)
            scale = np.maximum.reduceat(values, offsets)
            safe = np.where(scale > 0, scale, 1.0)
            values /= np.repeat(safe, lengths[filled])
            sq = np.add.reduceat(values * values, offsets)
            with np.errstate(over="ignore"):
                norms[start:stop][filled] = scale * np.sqrt(sq)
    return np.minimum(norms, np.finfo(float).max)


def _divide_csr_rows(X, divisors):
    """A CSR float copy of sparse ``X`` with row ``i`` divided by ``divisors[i]``."""
    X = sp.csr_matrix(X, dtype=float, copy=True)
    X.data /= np.repeat(divisors, np.diff(X.indptr))
    return X


def squared_row_norms(X):
    """``||x_i||^2`` per row of ``X``, dense or sparse (no overflow guard: rows are
    clipped to the public ``data_norm`` before any objective sees them)."""
    if sp.issparse(X):
        # in blocks of rows: X.multiply(X) made an X-sized temporary (data and indices;
        # 240 MB for a 120 MB X, in the AUC objective's prepare, a memory trace)
        sq = np.zeros(X.shape[0])
        for start, stop, lengths, offsets, values in _csr_row_blocks(X):
            if offsets.size:
                sq[start:stop][lengths > 0] = np.add.reduceat(values * values, offsets)
        return sq
    return np.einsum("ij,ij->i", X, X)


def clip_factors(norms, bound):
    """``min(1, bound / norm)`` per row, and 0 where the norm is not finite.

    A row whose norm overflowed or is NaN (an objective evaluated where it blows up)
    then contributes nothing, which is inside the clip: one such row must not turn
    the whole release into NaN, an output that would reveal it.
    """
    norms = np.asarray(norms, dtype=float)
    if 0.0 < bound < np.inf:
        # bound / max(norm, bound) is min(1, bound / norm) without a division by 0;
        # an infinite norm gives 0 already and only a NaN needs the slow path (this
        # runs twice a step: the no-NaN case skips the error-state switch)
        factors = bound / np.maximum(norms, bound)
        if not np.isnan(factors).any():
            return factors
    with np.errstate(invalid="ignore"):
        factors = np.minimum(1.0, bound / np.maximum(norms, 1e-300))
    return np.where(np.isfinite(norms), factors, 0.0)


def scaled_by_factors(values, factors):
    """``values`` scaled row by row by clip ``factors`` (``values`` of shape ``(m,)`` or
    ``(m, k)``), and exactly 0 where a factor is 0: a row that :func:`clip_factors`
    zeroed (its norm overflowed or is NaN) adds nothing even where its own values are
    infinite (``inf * 0`` is NaN, which would turn the whole sum into NaN)."""
    factors = np.asarray(factors, dtype=float)
    if np.ndim(values) == 2:
        factors = factors[:, None]
    if factors.size and factors.min() > 0.0:
        # no zeroed row: the plain product (a factor <= 1 cannot overflow it)
        return values * factors
    with np.errstate(invalid="ignore", over="ignore"):
        scaled = values * factors
    return np.where(factors > 0, scaled, 0.0)


def _row_norms(rows):
    """L2 norm of each (finite) row, without overflow for entries near the float range."""
    with np.errstate(over="ignore"):
        norms = np.sqrt(np.einsum("ij,ij->i", rows, rows))
    big = ~np.isfinite(norms)
    if big.any():  # rescale by the largest entry: exact where the squares overflow
        peak = np.abs(rows[big]).max(axis=1)
        norms[big] = peak * np.linalg.norm(rows[big] / peak[:, None], axis=1)
    return norms


def clipped_sum(per_example, max_norm):
    """Sum of the rows of ``per_example`` after clipping each to L2 norm ``max_norm``.

    The result changes by at most ``max_norm`` when a row is added or removed and by
    at most ``2 * max_norm`` when a row is replaced.

    ``max_norm`` may also be a vector ``c`` of positive finite per-coordinate clips:
    each row ``u`` is then scaled to ``||u / c|| <= 1`` (an ellipsoid), so the sum
    divided by ``c`` changes by at most 1 (2 when replaced); noise ``N(0, diag(c)^2)``
    times the scalar case's multiplier gives the same Gaussian mechanism (divide by
    ``c``, add isotropic noise, multiply back: post-processing).

    A row with an infinite or NaN entry counts as zero (:func:`clip_factors`).
    """
    if np.ndim(max_norm) == 0 and not math.isfinite(max_norm):
        return per_example.sum(axis=0)
    finite = np.all(np.isfinite(per_example), axis=1)
    rows = per_example if finite.all() else np.where(finite[:, None], per_example, 0.0)
    if np.ndim(max_norm) == 0:
        return clip_factors(_row_norms(rows), max_norm) @ rows
    c = check_coordinate_clips(max_norm, rows.shape[1])
    return clip_factors(_row_norms(rows / c), 1.0) @ rows


def check_coordinate_clips(clips, dim):
    """``clips`` as a float vector of ``dim`` positive finite per-coordinate clip norms."""
    c = np.asarray(clips, dtype=float)
    if c.shape != (dim,) or not (np.all(np.isfinite(c)) and np.all(c > 0)):
        raise ValueError(
            f"Per-coordinate clips must be positive, finite and one per coordinate ({dim}); "
            f"got shape {c.shape}."
        )
    return c


def discrete_laplace(epsilon, size, rng):
    """Two-sided geometric noise, ``P(k) = (1 - a) / (1 + a) a^|k|`` with
    ``a = exp(-epsilon)``: the ``epsilon``-DP noise for an integer of sensitivity 1.

    The difference of two independent geometric draws of success probability
    ``1 - a`` (Ghosh, Roughgarden & Sundararajan 2009), both from ``rng``, the fit's
    ``Generator``: the noise has the generator's 128-bit state behind it, never a
    smaller seed. numpy draws a geometric by inverting a 53-bit uniform, so the
    pmf is exact up to that rounding: masses below ~1e-16 (a tail past ~37 /
    epsilon) are lost, a delta of that order, far below any delta accepted.
    """
    p = -math.expm1(-float(epsilon))  # 1 - a, exact for small epsilon
    return (rng.geometric(p, size=size) - rng.geometric(p, size=size)).astype(np.int64)


def exponential_mechanism(utilities, epsilon, rng, sensitivity=1.0):
    """Index ``i`` drawn with probability proportional to ``exp(epsilon u_i / (2
    sensitivity))``: ``epsilon``-DP for utilities that one row moves by at most
    ``sensitivity`` (McSherry & Talwar 2007; diffprivlib's ``Exponential``, not
    monotone).

    Drawn by the Gumbel-max trick, ``argmax_i(epsilon u_i / (2 sensitivity) + G_i)``
    with ``G_i`` standard Gumbel from ``rng`` (the fit's ``Generator``), which has
    exactly that distribution (Yellott 1977).
    """
    u = np.asarray(utilities, dtype=float)
    if u.ndim != 1 or u.size == 0 or not np.all(np.isfinite(u)):
        raise ValueError("The exponential mechanism needs a non-empty vector of finite "
                         "utilities.")
    scaled = float(epsilon) / (2.0 * float(sensitivity)) * (u - u.max())
    return int(np.argmax(scaled + rng.gumbel(size=u.size)))


def private_size(n_samples, epsilon, rng):
    """``epsilon``-DP release of the number of examples (add/remove-one: sensitivity 1).

    The (untruncated) two-sided geometric mechanism (:func:`discrete_laplace`), then at
    least 1 (post-processing): no bound that depends on the true size enters the
    release. ``epsilon=np.inf`` returns the exact size.
    """
    if math.isinf(epsilon):
        return int(n_samples)
    return max(1, int(n_samples) + int(discrete_laplace(epsilon, 1, rng)[0]))


def geometric_noise_std(epsilon):
    """Standard deviation of the two-sided geometric noise of :func:`private_count`
    (before truncation; sensitivity 1): ``sqrt(2 a) / (1 - a)`` with ``a = exp(-epsilon)``,
    about ``sqrt(2) / epsilon`` for small ``epsilon``; 0 at ``epsilon = inf``."""
    if math.isinf(epsilon):
        return 0.0
    a = math.exp(-epsilon)
    return math.sqrt(2.0 * a) / -math.expm1(-epsilon)


def noisy_counts(counts, epsilon, max_ratio):
    """``(noise std, smallest count)`` of counts released by :func:`private_count` at
    ``epsilon`` when the noise's std exceeds ``max_ratio`` times the smallest of them
    (taken as at least 1), else ``None``. Reads only released counts and the public
    noise scale: a warning on it is post-processing."""
    noise = geometric_noise_std(epsilon)
    smallest = float(np.min(counts))
    return (noise, smallest) if noise > max_ratio * max(smallest, 1.0) else None


# Beyond this many noise scales from a released count the likelihood is below e^-50:
# a count that far from both ends of its prior has a symmetric posterior, whose mean is
# the count itself (returned exactly, not through the closed form's rounding).
_POSTERIOR_WINDOW = 50.0


def _geometric_mean_offset(m, epsilon):
    """Mean of ``j`` over ``j = 0..m`` with weights ``exp(-epsilon j)`` (``m`` an array
    of non-negative integers): ``1 / expm1(eps) - (m + 1) / expm1((m + 1) eps)``, in the
    form ``a / (1 - a) - (m + 1) b / (1 - b)`` (``a = exp(-eps)``, ``b = a^(m + 1)``),
    which does not overflow at large ``eps``. The two terms cancel to about ``1e-16 /
    epsilon`` (absolute), far below a count's unit."""
    m = np.asarray(m, dtype=float)
    b = np.exp(-(m + 1.0) * epsilon)
    return math.exp(-epsilon) / -math.expm1(-epsilon) - (m + 1.0) * b / -np.expm1(
        -(m + 1.0) * epsilon)


def count_posterior_mean(released, upper, epsilon, low=1, high=None):
    """Posterior mean of the true counts behind counts released by :func:`private_count`
    (or :func:`private_counts`) at ``epsilon`` with bound ``upper``, under a flat prior
    on the integers ``[low, high]`` within ``[0, upper]`` (``high`` defaults to ``upper
    - low``).

    Post-processing of released values and public constants only. The release clamps
    to ``[0, upper]``, so a released ``0`` says only "``count + noise <= 0``" (likelihood
    ``a^k``, ``a = exp(-epsilon)``), and ``upper`` "``>= upper``"; inside, the likelihood
    is ``a^|r - k|``. Where a count is known to be at least ``low`` (a class or group the
    input checks found present), a release at the edge is worth about one noise scale
    ``1 / epsilon`` rather than 0: a class ratio built from a released 0 (clamped to
    0.001 before) weighted the other class a thousand-fold and inverted a linear
    scorer's ranking (breast cancer, epsilon 0.5, one seed in ten). Far from the edges
    (many noise scales) the mean is the released count. ``epsilon=np.inf`` returns the
    released counts clipped to ``[low, high]``; an empty prior (``high < low``) gives
    ``upper / 2``. The posterior is two truncated geometric laws either side of the
    release, so the mean has a closed form: constant time and memory per count at any
    ``epsilon``.
    """
    released = np.atleast_1d(np.asarray(released, dtype=np.int64))
    upper, low = int(upper), int(low)
    high = upper - low if high is None else int(high)
    if not epsilon > 0:  # NaN too
        raise ValueError(f"epsilon must be > 0, got {epsilon}.")
    if low < 0 or high > upper:  # the mechanism releases counts clamped to [0, upper]
        raise ValueError(f"The prior [{low}, {high}] must lie in [0, upper={upper}].")
    if high < low:  # no count fits the prior (a size of 1 for two classes): the middle
        return np.full(released.shape, upper / 2.0)
    if math.isinf(epsilon):
        return np.clip(released, low, high).astype(float)
    epsilon = float(epsilon)
    width = _POSTERIOR_WINDOW / epsilon
    means = released.astype(float)
    near_an_edge = (released - width <= low) | (released + width >= high)
    # The mechanism clamps the count, then the release, to [0, upper], and the prior
    # lies inside it: for a count k of the prior P(release r | k) is a^|r - k| up to a
    # constant, at the edges too (a release at 0 says k + noise <= 0, probability
    # a^k / (1 + a)).
    r = np.clip(released[near_an_edge], 0, upper).astype(float)
    means[near_an_edge] = _posterior_mean_near(r, float(low), float(high), epsilon)
    return means


def _posterior_mean_near(r, low, high, epsilon):
    """Mean of ``k`` over the integers ``[low, high]`` with weights ``exp(-eps |r - k|)``:
    a geometric law rising to the release from below and one falling from it above,
    in closed form (:func:`_geometric_mean_offset`)."""
    below, above = r < low, r > high
    out = np.empty_like(r)
    span = high - low
    out[below] = low + _geometric_mean_offset(span, epsilon)
    out[above] = high - _geometric_mean_offset(span, epsilon)
    inside = ~(below | above)
    if inside.any():
        ri = r[inside]
        left, right = ri - low, high - ri  # steps from the release to each end
        # Mass (times 1 - a) and mean distance of each side: j = 0..left below the
        # release (k = r - j), j = 1..right above it (k = r + j).
        mass_left = -np.expm1(-(left + 1.0) * epsilon)
        mass_right = math.exp(-epsilon) * -np.expm1(-right * epsilon)
        dist_left = _geometric_mean_offset(left, epsilon)
        dist_right = 1.0 + _geometric_mean_offset(np.maximum(right - 1.0, 0.0), epsilon)
        out[inside] = ri + (mass_right * dist_right - mass_left * dist_left) / (
            mass_left + mass_right)
    return out


def private_count(count, upper, epsilon, rng):
    """``epsilon``-DP release of a count in ``[0, upper]`` (sensitivity 1).

    The truncated geometric mechanism (Ghosh et al. 2009; diffprivlib's
    ``GeometricTruncated``): :func:`discrete_laplace` noise from the fit's
    ``Generator`` (so the whole fit stays reproducible from one ``random_state``),
    then clamped to ``[0, upper]`` (post-processing).
    ``upper`` must be public (the size the fit plans on, see
    :mod:`skdpminimax.base`); a count above it is first clamped to it (which keeps
    the sensitivity 1). ``epsilon=np.inf`` returns the exact count.
    """
    return int(private_counts([count], upper, epsilon, rng)[0])


def private_counts(counts, upper, epsilon, rng):
    """Each of ``counts`` released as :func:`private_count` does, ``epsilon``-DP each.

    The noises are independent draws of :func:`discrete_laplace` from ``rng``, in one
    vectorised call. How the counts compose (parallel for a histogram) is the
    caller's to account.
    """
    counts = np.minimum(np.maximum(np.asarray(counts, dtype=np.int64), 0), int(upper))
    if math.isinf(epsilon):
        return counts
    noisy = counts + discrete_laplace(epsilon, counts.shape, rng)
    return np.minimum(np.maximum(noisy, 0), int(upper)).astype(np.int64)
