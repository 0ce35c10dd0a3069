"""Carry logged rows of a reproduction run over to a new configuration tag, cell by cell,
only where the new code has reproduced the old one bit for bit.

A configuration tag is bumped when the code that produces a row may have changed (see
``CONFIG_TAG`` in ``reproduce_yang2022.py``). When only some old rows are in doubt, the new
tag need not rerun every seed: for each cell, if the new run's ``--check-seed`` row has
exactly the old row's AUC (same batches, noise and arithmetic), the old rows of
``--seeds`` are appended under the new tag, marked ``"code": "adopted from <old tag>
..."``. Cells whose check row differs, or that lack it, are listed and left alone.

Example (the ``-mlp7`` rerun of the image MLP cells; docs/benchmarks.md)::

    python benchmarks/adopt_rows.py --method sgda-mlp --datasets mnist fashion-mnist \\
        --from-tag v3-mlp6 --to-tag v3-mlp7 --check-seed 2 --seeds 3 4
"""

import argparse
import json
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]


def cell_of(row):
    return row["method"], row["dataset"], float(row["epsilon"]), row["delta"]


def has_tag(row, base):
    """Whether ``row`` was logged under ``base``: its private cells carry ``base``, its
    Original column ``base + "-ori"`` (ORIGINAL_TAGS in reproduce_yang2022.py)."""
    original = float(row["epsilon"]) == float("inf")
    return row.get("config") == base + ("-ori" if original else "")


def adopt(rows, method, datasets, from_tag, to_tag, check_seed, seeds):
    """Rows to append, and ``[(cell, reason)]`` for the cells left alone."""
    def index(tag):
        out = {}
        for r in rows:
            if has_tag(r, tag) and r["method"] == method and r["dataset"] in datasets:
                out[cell_of(r) + (int(r["seed"]),)] = r
        return out

    old, new = index(from_tag), index(to_tag)
    cells = sorted({key[:4] for key in old}, key=str)
    added, skipped = [], []
    for cell in cells:
        check_old, check_new = old.get(cell + (check_seed,)), new.get(cell + (check_seed,))
        if check_old is None or check_new is None:
            skipped.append((cell, "no check row"))
            continue
        if check_old["auc"] != check_new["auc"]:
            skipped.append((cell, f"check seed differs: {check_old['auc']} vs {check_new['auc']}"))
            continue
        for seed in seeds:
            if cell + (seed,) in new or cell + (seed,) not in old:
                continue
            row = dict(old[cell + (seed,)])
            row["config"] = to_tag + row["config"][len(from_tag):]
            row["code"] = (f"adopted from {old[cell + (seed,)]['config']}: seed {check_seed} "
                           f"reproduced bit for bit by {check_new.get('code')}")
            added.append(row)
    return added, skipped


def main(argv=None):
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--results", default=str(ROOT / "benchmarks" / "results_yang2022.jsonl"))
    parser.add_argument("--method", required=True)
    parser.add_argument("--datasets", nargs="+", required=True)
    parser.add_argument("--from-tag", required=True)
    parser.add_argument("--to-tag", required=True)
    parser.add_argument("--check-seed", type=int, required=True)
    parser.add_argument("--seeds", nargs="+", type=int, required=True)
    args = parser.parse_args(argv)
    path = Path(args.results)
    rows = [json.loads(line) for line in path.read_text().splitlines() if line.strip()]
    added, skipped = adopt(rows, args.method, set(args.datasets), args.from_tag, args.to_tag,
                           args.check_seed, args.seeds)
    with path.open("a") as f:
        for row in added:
            f.write(json.dumps(row) + "\n")
    print(f"adopted {len(added)} rows")
    for cell, reason in skipped:
        print(f"left alone: {cell}: {reason}")


if __name__ == "__main__":
    main()
