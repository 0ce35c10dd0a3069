"""Small shims over the supported versions of scikit-learn (>=1.4,<1.9) and numpy (>=1.24)."""

import inspect as _inspect

from sklearn.utils.multiclass import type_of_target as _type_of_target

try:  # scikit-learn >= 1.6
    from sklearn.utils.validation import validate_data
except ImportError:  # pragma: no cover - older scikit-learn

    def validate_data(estimator, X="no_validation", y="no_validation", reset=True, **kwargs):
        return estimator._validate_data(X, y, reset=reset, **kwargs)


def _learns_from_old_tags(tags):
    """``requires_fit`` from scikit-learn < 1.6's tag dict: those mark a transformer that
    learns nothing (``FunctionTransformer``, ``Normalizer``) ``stateless`` and leave its
    ``requires_fit`` True; 1.6 made that ``requires_fit=False``."""
    return bool(tags.get("requires_fit", True) and not tags.get("stateless", False))


try:  # scikit-learn >= 1.6
    from sklearn.utils import get_tags as _get_tags

    def requires_fit(estimator):
        """Whether ``estimator`` learns from the data it is fitted on (its tag)."""
        return bool(_get_tags(estimator).requires_fit)
except ImportError:  # pragma: no cover - older scikit-learn

    def requires_fit(estimator):
        return _learns_from_old_tags(estimator._get_tags())


def _type_of_target_checked(y, input_name="", raise_unknown=False):
    """scikit-learn's ``type_of_target`` with 1.6's ``raise_unknown``, for older ones."""
    kind = _type_of_target(y, input_name=input_name)
    if raise_unknown and kind == "unknown":
        raise ValueError(f"Unknown label type for {input_name or 'data'}: {y!r}")
    return kind


if "raise_unknown" in _inspect.signature(_type_of_target).parameters:  # scikit-learn >= 1.6
    type_of_target = _type_of_target
else:  # pragma: no cover - older scikit-learn
    type_of_target = _type_of_target_checked


def _spawn_children(rng, n_children):
    """numpy 1.25's ``Generator.spawn``, written out: the same children, each a new
    Generator of the same bit generator seeded by one child of its ``SeedSequence``."""
    bit_generator = rng.bit_generator
    return [type(rng)(type(bit_generator)(seed))
            for seed in bit_generator._seed_seq.spawn(n_children)]


def spawn(rng, n_children):
    """``rng.spawn(n_children)``: ``n_children`` independent Generators (numpy >= 1.25
    has the method; numpy 1.24 gets the same children from :func:`_spawn_children`)."""
    if hasattr(rng, "spawn"):
        return rng.spawn(n_children)
    return _spawn_children(rng, n_children)  # pragma: no cover - numpy < 1.25


__all__ = ["requires_fit", "spawn", "type_of_target", "validate_data"]
