import numpy as np
import pytest

from skdpminimax.metrics import (
    demographic_parity_gap,
    group_accuracy,
    group_loss,
    worst_group_accuracy,
    worst_group_loss,
)


def test_group_accuracy_and_worst_group():
    y = np.array([1, 1, 0, 0, 1, 0])
    p = np.array([1, 0, 0, 0, 1, 1])
    sf = np.array(["a", "a", "a", "b", "b", "b"])
    assert group_accuracy(y, p, sensitive_features=sf) == pytest.approx({"a": 2 / 3, "b": 2 / 3})
    p2 = np.array([1, 1, 0, 1, 0, 1])
    assert worst_group_accuracy(y, p2, sensitive_features=sf) == pytest.approx(0.0)


def test_group_loss_and_parity_gap():
    y = np.array([0.0, 2.0, 1.0, 3.0])
    p = np.array([1.0, 2.0, 1.0, 1.0])
    sf = [0, 0, 1, 1]
    assert group_loss(y, p, sensitive_features=sf) == pytest.approx({0: 0.5, 1: 2.0})
    assert worst_group_loss(y, p, sensitive_features=sf) == pytest.approx(2.0)
    assert demographic_parity_gap(p, sensitive_features=sf) == pytest.approx(0.5)
    assert demographic_parity_gap(p, sensitive_features=sf, reference="overall") == \
        pytest.approx(0.25)


def test_intersections_and_length_mismatch():
    sf = np.array([["a", 0], ["a", 1], ["b", 0], ["b", 0]], dtype=object)
    acc = group_accuracy([1, 1, 0, 1], [1, 0, 0, 1], sensitive_features=sf)
    # each attribute keeps its values' type (they were all made strings before)
    assert acc == {("a", 0): 1.0, ("a", 1): 0.0, ("b", 0): 1.0}
    assert all(type(label[1]) is int for label in acc)
    with pytest.raises(ValueError, match="rows, expected"):
        group_accuracy([1, 0], [1, 0], sensitive_features=[0, 1, 1])
