"""``parametrize_with_checks`` with the check list materialised (pytest 9 deprecates generators)."""

import pytest
from sklearn.utils.estimator_checks import _get_check_estimator_ids, estimator_checks_generator


def parametrize_with_checks_list(estimators, expected_failed_checks):
    """Like scikit-learn's ``parametrize_with_checks`` but with a list of cases.

    ``expected_failed_checks(estimator)`` returns ``{check_name: reason}``; those checks
    are strict xfails, so a check that starts passing is reported.
    """
    cases = []
    for estimator in estimators:
        cases.extend(estimator_checks_generator(
            estimator, legacy=True, expected_failed_checks=expected_failed_checks(estimator),
            mark="xfail", xfail_strict=True))
    return pytest.mark.parametrize("estimator, check", cases, ids=_get_check_estimator_ids)
