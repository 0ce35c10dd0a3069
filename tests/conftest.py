"""Shared pytest options and fixtures."""

import numpy as np
import pytest


def pytest_addoption(parser):
    parser.addoption(
        "--audit-runs",
        action="store",
        type=int,
        default=None,
        help="Training runs per data set in the privacy-audit tests (default: each test's "
        "fast setting; larger values give tighter bounds).",
    )


@pytest.fixture(scope="module")
def binary_data():
    """A small noisy linear binary task (60 rows, 3 features), for the search tests."""
    rng = np.random.default_rng(0)
    X = rng.normal(size=(60, 3))
    y = (X[:, 0] + 0.5 * rng.normal(size=60) > 0).astype(int)
    return X, y
