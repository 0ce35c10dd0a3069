"""``parametrize_with_checks`` with the check list materialised (pytest 9 deprecates generators)."""

import functools
import inspect

import pytest
from sklearn.utils.estimator_checks import _get_check_estimator_ids

try:  # scikit-learn >= 1.6
    from sklearn.utils.estimator_checks import estimator_checks_generator

    LEGACY_CHECKS = False
except ImportError:  # scikit-learn 1.4 and 1.5: the checks of check_estimator
    from sklearn.utils.estimator_checks import check_estimator

    LEGACY_CHECKS = True

    def estimator_checks_generator(estimator, *, legacy, expected_failed_checks, mark,
                                   xfail_strict):
        for est, check in check_estimator(estimator, generate_only=True):
            name = (check.func if isinstance(check, functools.partial) else check).__name__
            if name in expected_failed_checks:
                yield pytest.param(est, check, marks=pytest.mark.xfail(
                    reason=expected_failed_checks[name], strict=xfail_strict))
            else:
                yield est, check


def _strict(case):
    """``case`` with its xfail mark made strict (scikit-learn 1.6 has no xfail_strict)."""
    marks = getattr(case, "marks", ())
    if not any(mark.name == "xfail" for mark in marks):
        return case
    marks = [pytest.mark.xfail(reason=mark.kwargs.get("reason", ""), strict=True)
             if mark.name == "xfail" else mark for mark in marks]
    return pytest.param(*case.values, marks=marks, id=case.id)


def parametrize_with_checks_list(estimators, expected_failed_checks=lambda estimator: {}):
    """Like scikit-learn's ``parametrize_with_checks`` but with a list of cases.

    ``expected_failed_checks(estimator)`` returns ``{check_name: reason}``; those checks
    are strict xfails, so a check that starts passing is reported. Before scikit-learn
    1.6 the cases are ``check_estimator``'s, which read the estimators' ``_more_tags``.
    """
    takes_strict = "xfail_strict" in inspect.signature(estimator_checks_generator).parameters
    cases = []
    for estimator in estimators:
        kwargs = dict(legacy=True, expected_failed_checks=expected_failed_checks(estimator),
                      mark="xfail")
        if takes_strict:
            cases.extend(estimator_checks_generator(estimator, xfail_strict=True, **kwargs))
        else:
            cases.extend(_strict(case) for case in estimator_checks_generator(estimator, **kwargs))
    return pytest.mark.parametrize("estimator, check", cases, ids=_get_check_estimator_ids)
