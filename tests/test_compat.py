"""The version shims of skdpminimax._compat, on whichever versions are installed.

Each fallback is also called directly, so that it is checked on current versions
too, where the library takes the library's own function instead.
"""

import numpy as np
import pytest
import sklearn.utils
from sklearn.utils.multiclass import type_of_target as sklearn_type_of_target

from skdpminimax import DPAUCMaximizer, DPGroupFairRegressor, DPRobustClassifier
from skdpminimax._compat import (
    _learns_from_old_tags,
    _spawn_children,
    _type_of_target_checked,
    requires_fit,
    spawn,
    type_of_target,
)

UNKNOWN = np.array([[[0, 1]], [[1, 0]]])  # 3-d: type "unknown"


@pytest.mark.parametrize("shim", [type_of_target, _type_of_target_checked])
def test_type_of_target_raise_unknown(shim):
    assert shim(np.array([0, 1, 1]), input_name="y", raise_unknown=True) == "binary"
    assert shim(UNKNOWN, input_name="y") == "unknown"
    with pytest.raises(ValueError, match="Unknown label type for y"):
        shim(UNKNOWN, input_name="y", raise_unknown=True)
    with pytest.raises(ValueError, match="Unknown label type for data"):
        shim(UNKNOWN, raise_unknown=True)


@pytest.mark.parametrize("y", [np.array([0.5, 1.5, 2.5, 0.5]), np.array([0, 1, 2, 0])])
def test_type_of_target_shim_agrees_with_sklearn(y):
    assert _type_of_target_checked(y, input_name="y") == sklearn_type_of_target(y)


def test_auc_maximizer_refuses_an_unknown_target_type():
    y = np.array([{}, {}], dtype=object)  # 1-d, but of objects that are no labels
    with pytest.raises(ValueError, match="Unknown label type for y"):
        DPAUCMaximizer(epsilon=np.inf, data_norm=1.0).fit(np.zeros((2, 2)), y)


def _draws(generators):
    return [g.random(4).tolist() for g in generators]


def test_spawn_gives_independent_reproducible_generators():
    a, b = spawn(np.random.default_rng(7), 2), spawn(np.random.default_rng(7), 2)
    assert _draws(a) == _draws(b)
    first, second = _draws(a)
    assert first != second
    assert all(isinstance(g, np.random.Generator) for g in a)


@pytest.mark.skipif(not hasattr(np.random.Generator, "spawn"),
                    reason="numpy < 1.25 has no Generator.spawn to compare with")
@pytest.mark.parametrize("bit_generator", [np.random.PCG64, np.random.Philox])
def test_spawn_fallback_gives_numpys_children(bit_generator):
    """numpy 1.24's path gives the same streams as ``Generator.spawn``, and leaves the
    parent where the method leaves it (two spawns in a row differ alike)."""
    ours, numpys = (np.random.Generator(bit_generator(11)) for _ in range(2))
    for n in (1, 3):
        assert _draws(_spawn_children(ours, n)) == _draws(numpys.spawn(n))
    assert ours.random() == numpys.random()


@pytest.mark.skipif(not hasattr(sklearn.utils, "get_tags"),
                    reason="scikit-learn < 1.6 reads _more_tags only")
@pytest.mark.parametrize("estimator", [DPAUCMaximizer(), DPRobustClassifier(),
                                       DPGroupFairRegressor()], ids=lambda e: type(e).__name__)
def test_old_style_tags_say_what_the_new_ones_say(estimator):
    """scikit-learn < 1.6 reads ``_more_tags``, later ones ``__sklearn_tags__``: the two agree."""
    tags = sklearn.utils.get_tags(estimator)
    task_tags = tags.classifier_tags or tags.regressor_tags
    old = estimator._more_tags()
    assert old["poor_score"] == task_tags.poor_score
    assert old.get("binary_only", False) == (tags.classifier_tags is not None
                                             and not tags.classifier_tags.multi_class)


def test_requires_fit_says_which_steps_learn_from_the_rows():
    from sklearn.preprocessing import FunctionTransformer, Normalizer, StandardScaler
    assert requires_fit(StandardScaler())
    assert not requires_fit(FunctionTransformer()) and not requires_fit(Normalizer())
    # scikit-learn < 1.6's tags: a stateless step learns nothing, though it "requires fit"
    assert _learns_from_old_tags({"requires_fit": True, "stateless": False})
    assert not _learns_from_old_tags({"requires_fit": True, "stateless": True})
    assert not _learns_from_old_tags({"requires_fit": False, "stateless": False})
    assert _learns_from_old_tags({})


@pytest.mark.skipif(not hasattr(sklearn.utils, "get_tags"),
                    reason="scikit-learn < 1.6 reads _more_tags only")
@pytest.mark.parametrize("task", ["classification", "regression", None])
def test_a_custom_estimators_old_style_tags_say_whether_it_needs_y(task):
    from skdpminimax import DPSaddleEstimator

    estimator = DPSaddleEstimator(object, task=task)
    assert (estimator._more_tags()["requires_y"]
            == sklearn.utils.get_tags(estimator).target_tags.required)
