"""Sensitive features -> group codes, and group frequencies (public or private).

Shared by the estimators that take ``sensitive_features``. All checks run in
``_validate_targets``, i.e. before any budget is spent.
"""

import datetime
import warnings
from contextlib import contextmanager
from numbers import Integral, Number, Real

import numpy as np
from sklearn.utils._param_validation import Interval

from skdpminimax.privacy.mechanisms import count_posterior_mean, noisy_counts, private_counts
from skdpminimax.solvers import NoisySGDA, resolve_solver

__all__ = ["encode_groups", "encode_public_groups", "labels_array", "GroupRatiosMixin",
           "GROUP_SGDA_DEFAULTS", "comparable_class_labels", "declared_group_codes"]

# Noise std above this share of the smallest released group count (within two noise
# steps of 0): the group objectives warn, as DPAUCMaximizer does for its class count.
_NOISY_GROUP_COUNT = 0.5

# The default solver of the group estimators (``solver="sgda"``). An example's dual
# gradient is about ``loss / pi_g``: NoisySGDA's generic ``clip_v=1`` clips small
# groups' risks hard and drags the weights towards large groups, while the certified
# bound ``loss_max / pi_min`` drowns every weight in noise; ``"auto"`` clips each
# group's coordinate at its own start value ``loss(0) / pi_g``, lowered for groups
# rarer than the step's relative noise and noised in proportion
# (``GroupDRO.typical_dual_clips``; public constants and the noise only). The
# "dimension" rule would give the K-dimensional dual most of the privacy loss; the dual is
# damped by ``dual_reg`` and averaging, so it gets a fixed 30%. The second half of
# the iterates is averaged (the first half is the transient from the start point).
# Chosen on validation splits carved from the training data (benchmarks/). The step
# is "scaled" (from the objective's public typical_solution_norm and the noise):
# "auto"'s certified 1 / L left every group estimator far from its non-private
# solution even without noise; n_epochs="auto" gives small data sets more than a few
# dozen steps where the noise is small (benchmarks/estimator_defaults.py). The primal
# clip is the generic 1 where the noise is not small; where it is ("auto_if_quiet"),
# the typical norm times up to 1 / pi_min, so that the q_g / pi_g weights of small
# groups are not clipped away (docs/benchmarks.md, "The group estimators' primal clip").
GROUP_SGDA_DEFAULTS = {"step_size": "scaled", "n_epochs": "auto", "clip_v": "auto",
                       "clip_w": "auto_if_quiet",
                       "noise_allocation": 0.3, "average": "tail"}


def _label(value):
    """A plain Python value (numpy scalars unwrapped)."""
    return value.item() if hasattr(value, "item") else value


def encode_groups(sensitive_features, n_samples):
    """Integer codes in ``[0, n_groups)`` and the sorted group labels.

    ``sensitive_features`` is 1-D (one attribute) or 2-D (several attributes: a
    group is a combination of values, labelled by a tuple, as in fairlearn).
    """
    if isinstance(sensitive_features, (str, bytes)):
        # fairlearn's metrics accept column names; fit needs the values themselves.
        raise ValueError(
            f"sensitive_features={sensitive_features!r} is a single string: pass the group "
            "labels themselves, one per row (e.g. X[column] of a DataFrame), not a column "
            "name.")
    # A list or tuple keeps its values as they are (numpy would make [1, "1", True]
    # one dtype, merging the int 1 with the string "1" or with True).
    as_given = dict(dtype=object) if isinstance(sensitive_features, (list, tuple)) else {}
    sf = np.asarray(sensitive_features, **as_given)
    if sf.ndim == 2 and sf.shape[1] == 1:
        sf = sf[:, 0]
    if sf.ndim not in (1, 2):
        raise ValueError(f"sensitive_features must be 1-D or 2-D, got shape {sf.shape}.")
    if sf.shape[0] != n_samples:
        raise ValueError(
            f"sensitive_features has {sf.shape[0]} rows, expected {n_samples} (one per sample)."
        )
    # Before labels become strings: a missing value would otherwise become a group "nan".
    if _has_missing(sf):
        raise ValueError("sensitive_features contains NaN or missing values (None, pd.NA); "
                         "drop those rows or give them a group of their own.")
    _check_discrete(sf)
    if sf.ndim == 2:
        # A DataFrame's columns as they are (np.asarray would make an int column float
        # next to a float one); an array's as sliced.
        frame = getattr(sensitive_features, "iloc", None)
        columns = ([np.asarray(frame[:, j]) for j in range(sf.shape[1])] if frame is not None
                   else [sf[:, j] for j in range(sf.shape[1])])
        return _encode_combinations(columns)
    values, codes = _unique(sf)
    return codes, [_label(v) for v in values]


def without_negative_zeros(values):
    """``values`` with ``-0.0`` read as ``0.0`` (float and complex arrays; others as
    they are). ``np.unique`` keeps whichever of the two equal zeros sorts first, so a
    published label (``groups_``, ``classes_``) would show how one row stores its zero.
    """
    values = np.asarray(values)
    return values + 0.0 if values.dtype.kind in "fc" else values


@contextmanager
def comparable_class_labels():
    """Class labels that do not sort (an int among strings) fail inside numpy's sort
    with a bare ``TypeError``; around the label checks, a ``ValueError`` that says so
    (before anything is spent)."""
    try:
        yield
    except TypeError as exc:
        raise ValueError(f"y's class labels must be comparable, of one type (as "
                         f"scikit-learn's classifiers need): {exc}. Nothing was spent.") from exc


def canonical_labels(values):
    """Class labels as published (``classes_``): :func:`without_negative_zeros`, and in
    an object array each value as its group label would be (:func:`_canonical`:
    numpy's ``str_("a")`` as ``"a"``, ``np.int64(1)`` as ``1``). ``np.unique`` keeps
    whichever of equal labels sorts first, so ``classes_`` would otherwise show how one
    row stores its label (a side-channel review)."""
    values = without_negative_zeros(values)
    if values.dtype.kind != "O":
        return values
    out = np.empty(values.shape, dtype=object)
    out.ravel()[:] = [_canonical(_kind(v), _label(v)) for v in values.ravel()]
    return out


def _unique(column):
    """Sorted distinct values and codes of one attribute. An object column (a list, a
    mixed column) is keyed by kind and value (:func:`_group_key`), so the int 1 and the
    string "1" (or True) stay apart while 1 and 1.0 are one group, and each group's
    label is fixed by its key (:func:`_canonical`), not by which rows hold it."""
    flat = column.ravel()
    if column.dtype.kind != "O":
        values, codes = np.unique(without_negative_zeros(column), return_inverse=True)
        return values, codes.reshape(-1).astype(np.intp)
    keys = [_group_key(v) for v in flat]
    try:
        distinct = set(keys)
    except TypeError as exc:  # a list or dict per row: not a label
        kinds = sorted({type(v).__name__ for v in flat if not _hashable(v)})
        raise ValueError(
            f"sensitive_features must hold one label per row and attribute (numbers, "
            f"strings, booleans); got values of type {', '.join(kinds)}. Pass a 2-D array "
            "(or a DataFrame) for several attributes.") from exc
    try:
        order = sorted(distinct)
    except TypeError:  # values of one kind that do not compare (e.g. plain objects)
        order = sorted(distinct, key=lambda key: (key[0], str(key[1])))
    index = {key: i for i, key in enumerate(order)}
    values = np.empty(len(order), dtype=object)
    values[:] = [value for _, value in order]
    return values, np.fromiter((index[key] for key in keys), np.intp, len(keys))


def _hashable(value):
    try:
        hash(value)
    except TypeError:
        return False
    return True


def _group_key(label):
    """What identifies a group label: its kind and canonical value (tuples element by
    element)."""
    if isinstance(label, tuple):
        return tuple(_group_key(v) for v in label)
    kind = _kind(label)
    return kind, _canonical(kind, _label(label))


# Kinds of values, checked in order (subclasses first: bool is a Number, np.str_ a
# str, pandas' Timestamp a datetime): values of one kind that compare equal are one
# group.
_KINDS = ((bool, "bool"), (np.bool_, "bool"), (Number, "number"), (str, "str"),
          (bytes, "bytes"), (datetime.datetime, "datetime"), (datetime.date, "date"))


def _kind(value):
    """What an object column's value is compared as: booleans apart from numbers
    (True is not the group 1), numbers of any type together (1 and 1.0 are one group,
    as Python and pandas compare them), str, bytes, datetimes and dates each together
    whatever their class (str and numpy's str_), anything else by its type."""
    for cls, name in _KINDS:
        if isinstance(value, cls):
            return name
    return type(value).__name__


def _canonical(kind, value):
    """One label per group whatever values its rows hold (the label is published, and
    which of 1 or 1.0 a row stores is not): whole numbers as int, other reals as
    float, strings, bytes, datetimes and dates as the builtin types."""
    if kind == "bool":
        return bool(value)
    if kind == "number" and isinstance(value, Integral):
        return int(value)
    if kind == "number" and isinstance(value, Real):
        value = float(value)
        return int(value) if value.is_integer() else value
    if kind == "str":
        return str(value)
    if kind == "bytes":
        return bytes(value)
    if kind == "datetime":  # pandas' Timestamp as the builtin (to the microsecond)
        return datetime.datetime(value.year, value.month, value.day, value.hour,
                                 value.minute, value.second, value.microsecond, value.tzinfo)
    if kind == "date":
        return datetime.date(value.year, value.month, value.day)
    return value


def _encode_combinations(columns):
    """Codes and labels of the combinations of several attributes, each attribute
    encoded on its own, so that the labels keep their values' types (a DataFrame of a
    string and an integer column gives ``('F', 1)``, which ``group_ratios`` can name)."""
    columns = [_unique(column) for column in columns]
    combined = np.stack([codes for _, codes in columns], axis=1)
    rows, codes = np.unique(combined, axis=0, return_inverse=True)
    labels = [tuple(_label(columns[j][0][c]) for j, c in enumerate(row)) for row in rows]
    return codes.reshape(-1).astype(np.intp), labels


def encode_public_groups(sensitive_features, n_samples):
    """:func:`encode_groups` for a fit, whose group labels are published (``groups_``).

    Not only floats are continuous: the same column as strings, Decimals, whole
    numbers or dates makes (nearly) one group per row, so more distinct labels than
    half the rows are refused.
    """
    codes, labels = encode_groups(sensitive_features, n_samples)
    if len(labels) > max(2, n_samples // 2):
        raise ValueError(
            "sensitive_features has more distinct groups than half the rows: an "
            "identifier or a continuous attribute (as numbers, strings or dates), whose "
            "values groups_ would publish, since group labels are public. Bin it into "
            "groups with public edges first.")
    return codes, labels


def declared_group_codes(codes, labels, declared):
    """Codes of a fit's groups re-indexed into public ``declared`` labels.

    ``codes`` index ``labels`` (the sorted labels the fit's rows hold); the result
    indexes ``declared``, so a group absent from the rows keeps its code. Labels are
    matched as the groups are told apart (``_group_key``: 1 and 1.0 alike, True
    apart). Returns the new codes and the declared labels (plain values, tuples for
    intersections).
    """
    def plain(g):
        if isinstance(g, (tuple, list, np.ndarray)):
            return tuple(_label(v) for v in g)
        return _label(g)

    if isinstance(declared, (str, bytes)):
        raise ValueError(f"groups={declared!r} is a single string: pass the list of group "
                         "labels.")
    declared = [plain(g) for g in declared]
    if not declared:
        raise ValueError("groups is empty: declare the public group labels, or pass None.")
    index = {}
    for k, g in enumerate(declared):
        if index.setdefault(_group_key(g), k) != k:
            raise ValueError(f"groups declares the group {g!r} twice ({declared!r}).")
    unknown = [g for g in labels if _group_key(g) not in index]
    if unknown:
        raise ValueError(f"sensitive_features hold groups {unknown!r} that groups="
                         f"{declared!r} does not declare. Nothing was spent.")
    remap = np.array([index[_group_key(g)] for g in labels], dtype=np.intp)
    return remap[codes], declared


def _check_discrete(sf):
    """Refuse a continuous attribute: every distinct value would be a group of its own
    (a useless model), and ``groups_``, which treats group labels as public, would
    publish the column's values."""
    values = sf.ravel()
    if sf.dtype.kind == "O":  # mixed columns: look at the numbers among them
        values = np.array([v for v in values if isinstance(v, (float, np.floating))], float)
    elif sf.dtype.kind not in "fc":
        return
    if not np.all(np.isfinite(values)):
        raise ValueError("sensitive_features contains inf; group labels must be finite.")
    if np.any(values != np.round(values)):
        raise ValueError(
            "sensitive_features holds non-integer numbers, i.e. a continuous attribute: "
            "every distinct value would be a group of its own, and group labels are "
            "released as public (groups_). Bin it into groups first, with public bin "
            "edges (e.g. numpy.digitize or pandas.cut).")


def _has_missing(sf):
    if sf.dtype.kind in "fc":
        return bool(np.any(np.isnan(sf)))
    if sf.dtype.kind != "O":
        return False
    return any(v is None or (isinstance(v, (float, np.floating)) and np.isnan(v))
               or type(v).__name__ in ("NAType", "NaTType") for v in sf.ravel())


def labels_array(labels):
    """Group labels as a 1-D array (tuples of an intersection stay whole; labels of
    several kinds, such as 1 and "1", stay apart in an object array)."""
    if not isinstance(labels[0], tuple) and len({_kind(v) for v in labels}) < 2:
        return np.asarray(labels)
    out = np.empty(len(labels), dtype=object)
    out[:] = labels
    return out


class GroupRatiosMixin:
    """Group frequencies ``pi``: public (``group_ratios``) or privately counted.

    Implements the ``_split_budget``, ``_public_constants`` and ``_private_constants``
    hooks of :class:`~skdpminimax.base.DPMinimaxEstimator` (put it first in the bases).

    **Privacy of the counts.** Each group's size is released with the truncated
    geometric mechanism (:func:`~skdpminimax.privacy.mechanisms.private_counts`; pure
    DP, sensitivity 1 per count); the fit uses the counts' posterior means on ``[1,
    n - k + 1]`` (:func:`~skdpminimax.privacy.mechanisms.count_posterior_mean`),
    normalised. One example belongs to one group: under
    add/remove-one it changes one count by 1, so every count gets the whole slice
    ``epsilon_c`` (parallel composition); under replace-one it can change two counts
    by 1 each (L1 sensitivity 2), so every count gets ``epsilon_c / 2``. The relation
    is the solver's (from its calibration), so the slice and the solver compose under
    one relation: in one PLD with ``composition="pld"`` under add/remove-one (the
    histogram is one discrete Laplace), else by basic composition. The counts are
    bounded by the size the fit plans on (``n_samples_budget``).
    """

    # Add/remove-one (the only relation composed): a row is in one group's count, so
    # the histogram is one discrete Laplace at the share's whole epsilon.
    _constants_are_one_count = True

    _group_parameter_constraints = {
        "group_ratios": [dict, "array-like", None],
        "group_ratios_budget": [Interval(Real, 0, 1, closed="neither")],
    }

    def _encode_task_groups(self, sensitive_features, n_samples):
        codes, labels = encode_public_groups(sensitive_features, n_samples)
        ratios = None
        if self.group_ratios is not None:
            ratios = self._public_ratios(labels)
        n_groups = len(labels) if ratios is None else ratios.size
        if n_groups < 2:
            raise ValueError(
                f"{type(self).__name__} needs at least 2 groups; sensitive_features has "
                f"only {labels!r}."
            )
        self.groups_ = labels_array(labels)
        self._public_group_ratios = ratios
        return codes, labels

    def _public_ratios(self, labels):
        gr = self.group_ratios
        if isinstance(gr, dict):
            # Matched as the groups are told apart (_kind): a plain lookup would find
            # the key True for the group 1.
            keyed = {_group_key(g): ratio for g, ratio in gr.items()}
            unseen = [g for g in labels if _group_key(g) not in keyed]
            if unseen:
                raise ValueError(
                    f"Groups {unseen} appear in sensitive_features but not in group_ratios "
                    f"(keys {list(gr)}; True and 1 are different groups, and a dict cannot "
                    "hold both: pass an array aligned with the sorted groups)."
                )
            seen = {_group_key(g) for g in labels}
            empty = [g for g in gr if _group_key(g) not in seen]
            if empty:
                raise ValueError(
                    f"Groups {empty} of group_ratios have no training samples: a group "
                    "without rows has no risk to weigh. In cross-validation a rare group "
                    "can miss a training fold: stratify the folds on the groups "
                    "(cv=list(StratifiedKFold(k).split(X, sensitive_features))) or merge the "
                    "rare group into another. Nothing was spent.")
            values = [keyed[_group_key(g)] for g in labels]
        else:
            values = np.asarray(gr)  # numbers checked below
            if values.ndim != 1:
                raise ValueError(f"group_ratios must be a dict or a 1-D array, got shape "
                                 f"{values.shape}.")
            if values.size != len(labels):
                raise ValueError(
                    f"group_ratios has {values.size} entries but sensitive_features has "
                    f"{len(labels)} groups {labels!r} (an empty or unseen group?). Pass a dict "
                    "{group: ratio} to name them."
                )
        try:
            values = np.asarray(values, dtype=float)
        except (TypeError, ValueError) as exc:
            raise ValueError(f"group_ratios must hold numbers (frequencies or counts), got "
                             f"{self.group_ratios!r}.") from exc
        if np.any(~np.isfinite(values)) or np.any(values <= 0):
            raise ValueError(f"group_ratios must be positive, got {values.tolist()}.")
        total = float(values.sum())
        if np.all(values <= 1.0) and abs(total - 1.0) > 1e-3:
            # Counts are normalised silently; frequencies that miss 1 are likely a slip.
            warnings.warn(
                f"group_ratios {values.tolist()} sum to {total:g}, not 1: they are normalised "
                f"to {np.round(values / total, 6).tolist()}. Pass frequencies that sum to 1, "
                "or counts.", UserWarning)
        return values / total

    # ---- the pipeline hooks of DPMinimaxEstimator for group frequencies ----------
    def _resolve_solver(self):
        if isinstance(self.solver, str) and self.solver == "sgda":
            return NoisySGDA(**GROUP_SGDA_DEFAULTS)
        return resolve_solver(self.solver)

    def _split_budget(self, budget):
        if self._public_group_ratios is not None:
            return None, budget
        return budget.split(self.group_ratios_budget)

    def _public_constants(self, targets, task_data):
        if self._public_group_ratios is not None:
            return {"group_ratios": self._public_group_ratios}
        k = len(self.groups_)
        return {"group_ratios": np.full(k, 1.0 / k)}

    def _private_constants(self, targets, task_data, budget, rng):
        if self._public_group_ratios is not None:
            return {"group_ratios": self._public_group_ratios}
        codes = task_data["groups"]
        n, k = task_data["size"], len(self.groups_)  # public size bounds each count
        relation = task_data.get("neighboring_relation", "replace-one")
        epsilon = budget.epsilon / (1.0 if relation == "add/remove-one" else 2.0)
        counts = np.bincount(codes, minlength=k)
        released = private_counts(counts, n, epsilon, rng)
        self._check_released_counts(released, epsilon)
        # Every group has a row (checked before the spend): each count's posterior mean
        # on [1, n - k + 1], not the release floored at 1 (a released 0 weighted its
        # group n-fold). Post-processing.
        sizes = count_posterior_mean(released, n, epsilon, low=1, high=max(1, n - k + 1))
        return {"group_ratios": sizes / sizes.sum()}

    def _noisy_count_rule(self):
        """``(ratio, consequence)``: warn where the counts' noise std is above ``ratio``
        times the smallest released count, saying ``consequence``. The group objectives
        weigh each group by ``1 / ratio``: within two noise steps of 0 a group's weight
        may be far off (iris at epsilon 0.5: ratios 0.015 / 0.358 / 0.627 released for
        three equal classes, silently)."""
        return _NOISY_GROUP_COUNT, "A group's weight 1 / ratio may be far off."

    def _check_released_counts(self, counts, epsilon):
        """Warn on noisy released group counts (:meth:`_noisy_count_rule`). Released
        values and a public noise scale only."""
        ratio, consequence = self._noisy_count_rule()
        noisy = noisy_counts(counts, epsilon, ratio)
        if noisy is not None:
            noise_std, smallest = noisy
            warnings.warn(
                f"The group sizes were released with noise of std {noise_std:.3g} (before "
                f"truncation to [0, n]) on counts as small as {smallest:.0f} "
                f"(group_ratios_budget={self.group_ratios_budget:g} of "
                f"epsilon={self.epsilon:g}). {consequence} Pass group_ratios if the group "
                "frequencies are public, or raise group_ratios_budget.", UserWarning)
