"""The command line: ``python -m skdpminimax demo``."""

import pytest

from skdpminimax.__main__ import main


@pytest.mark.parametrize("args, message", [
    (["--epsilons", "0"], "epsilon must be > 0"),
    (["--epsilons", "nan"], "epsilon must be a positive real number"),
    (["--epsilons", "1e6"], "at most 100000"),
    (["--epsilons", "x"], "not a number"),
    (["--seed", "-1"], "the seed must be in"),
])
def test_bad_values_are_usage_errors(args, message, capsys):
    """A practitioner probe: they printed a baseline row, then a traceback."""
    with pytest.raises(SystemExit) as exit_info:
        main(["demo", *args])
    assert exit_info.value.code == 2
    err = capsys.readouterr().err
    assert message in err and "Traceback" not in err


def test_demo_runs_with_an_infinite_epsilon(capsys):
    assert main(["demo", "--epsilons", "inf", "--seed", "1"]) == 0
    out = capsys.readouterr().out
    assert "(no noise)" in out and "Total spent on the ledger" in out
    # the private pipeline's row: the scaler's and the fit's budgets on one ledger
    assert "DPStandardScaler + DPAUCMaximizer (no noise)" in out
