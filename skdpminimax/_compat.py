"""Small shims over scikit-learn versions (the supported range is >=1.4,<1.9)."""

try:  # scikit-learn >= 1.6
    from sklearn.utils.validation import validate_data
except ImportError:  # pragma: no cover - older scikit-learn

    def validate_data(estimator, X="no_validation", y="no_validation", reset=True, **kwargs):
        return estimator._validate_data(X, y, reset=reset, **kwargs)

try:  # scikit-learn >= 1.6
    from sklearn.utils import get_tags as _get_tags

    def requires_fit(estimator):
        """Whether ``estimator`` learns from the data it is fitted on (its tag)."""
        return bool(_get_tags(estimator).requires_fit)
except ImportError:  # pragma: no cover - older scikit-learn

    def requires_fit(estimator):
        return bool(estimator._get_tags().get("requires_fit", True))

__all__ = ["requires_fit", "validate_data"]
