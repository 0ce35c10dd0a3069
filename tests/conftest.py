"""Shared pytest options."""


def pytest_addoption(parser):
    parser.addoption(
        "--audit-runs",
        action="store",
        type=int,
        default=None,
        help="Training runs per data set in the privacy-audit tests (default: each test's "
        "fast setting; larger values give tighter bounds).",
    )
