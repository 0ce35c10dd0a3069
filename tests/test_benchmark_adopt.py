"""The row-adoption rule of benchmarks/adopt_rows.py: old rows move to a new tag only for
cells whose check seed the new code reproduced exactly."""

from benchmarks.adopt_rows import adopt


def _row(config, epsilon, seed, auc, dataset="mnist", delta=1e-6):
    return {"method": "sgda-mlp", "dataset": dataset, "epsilon": epsilon,
            "delta": None if epsilon == float("inf") else delta, "seed": seed, "auc": auc,
            "config": config}


def test_adopts_only_cells_whose_check_seed_is_identical():
    inf = float("inf")
    rows = [
        # cell eps=1: seed 2 identical -> seeds 3, 4 adopted
        *[_row("old", 1.0, s, 90.0 + s) for s in range(5)],
        *[_row("new", 1.0, s, 90.0 + s) for s in range(3)],
        # cell eps=5: seed 2 differs -> left alone
        *[_row("old", 5.0, s, 95.0 + s) for s in range(5)],
        *[_row("new", 5.0, s, 95.5 + s) for s in range(3)],
        # Original: matched under the "-ori" suffix only, never the plain tag's old rows
        *[_row("old", inf, s, 80.0 + s) for s in range(5)],
        *[_row("old-ori", inf, s, 99.0 + s) for s in range(5)],
        *[_row("new-ori", inf, s, 99.0 + s) for s in range(4)],
        # another data set is not asked for
        *[_row("old", 1.0, s, 1.0, dataset="fashion-mnist") for s in range(5)],
        *[_row("new", 1.0, s, 1.0, dataset="fashion-mnist") for s in range(3)],
    ]
    added, skipped = adopt(rows, "sgda-mlp", {"mnist"}, "old", "new", 2, [3, 4])
    got = sorted((r["epsilon"], r["seed"], r["auc"], r["config"]) for r in added)
    assert got == [(1.0, 3, 93.0, "new"), (1.0, 4, 94.0, "new"),
                   (inf, 4, 103.0, "new-ori")]
    assert all("adopted from" in r["code"] for r in added)
    assert [cell[2] for cell, _ in skipped] == [5.0]
    assert "differs" in skipped[0][1]
