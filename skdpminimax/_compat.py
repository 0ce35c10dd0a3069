"""Small shims over scikit-learn versions (the supported range is >=1.4,<1.9)."""

try:  # scikit-learn >= 1.6
    from sklearn.utils.validation import validate_data
except ImportError:  # pragma: no cover - older scikit-learn

    def validate_data(estimator, X="no_validation", y="no_validation", reset=True, **kwargs):
        return estimator._validate_data(X, y, reset=reset, **kwargs)

__all__ = ["validate_data"]
