"""Peak memory of ``apnull score`` on a large crossed (JUMP-layout) screen written as float32 Parquet.

Writes the crossed screen of ``jump_scale.make_screen`` (C compounds x R replicates, each replicate on
its own plate beside 32 DMSO wells, float32 features) to a Parquet file once (``--file``), then runs
``apnull score FILE --perturbation Metadata_compound --stratum Metadata_plate`` in a child process and
prints its peak RSS (the child's ``ru_maxrss``) against the table's size in memory (rows x features x 4
bytes of float32, plus the label columns as pandas holds them). ``--read-only`` runs only the reading and
the preparation (``read_table`` and ``prepare_screen``), for screens too large to score here.

    python benchmarks/read_memory.py --compounds 20000 --features 737 --permutations 99
    python benchmarks/read_memory.py --compounds 116000 --features 737 --read-only
    python benchmarks/read_memory.py --compounds 116000 --features 737 --where Metadata_compound=cmp000007_0

``--where COLUMN=VALUE`` (repeatable, as the command line's) reads only the rows it keeps, each in a child
process of its own: ``read_table(FILE, filters={COLUMN: [VALUE, ...]})`` against pyarrow's
``pq.read_table(FILE, filters=...)`` (the same filter, its dataset reader), wall and peak RSS each.
"""

from __future__ import annotations

import argparse
import os
import resource
import subprocess
import sys
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).parent))

LABELS = ["Metadata_compound", "Metadata_plate"]
READ_ONLY = """
import sys, resource
from apnull.score import read_table
from apnull.score.table.screen import prepare_screen
table = read_table(sys.argv[1], labels=["Metadata_compound", "Metadata_plate"])
screen = prepare_screen(table, "Metadata_compound", "DMSO", "Metadata_plate", None, "cosine")
print(f"prepared: {len(screen.perts):,} perturbations, X {type(screen.X).__name__} {screen.X.dtype}")
"""


WHERE = """
import json, resource, sys, time
import pyarrow.parquet as pq
from apnull.score import read_table
path, how, where = sys.argv[1], sys.argv[2], json.loads(sys.argv[3])
t = time.perf_counter()
if how == "apnull":
    table = read_table(path, labels=["Metadata_compound", "Metadata_plate"], filters=where)
else:
    table = pq.read_table(path, filters=[(c, "in", v) for c, v in where.items()]).to_pandas()
print(json.dumps({"rows": len(table), "wall": time.perf_counter() - t,
                  "peak": resource.getrusage(resource.RUSAGE_SELF).ru_maxrss * 1024}))
"""


def filtered_reads(path: Path, where: list) -> None:
    """Print the filtered read of ``path`` by apnull and by pyarrow (``where``: COLUMN=VALUE texts), each in a
    child process of its own: rows kept, wall, peak RSS, and apnull's peak over pyarrow's."""
    import json

    kept = {}
    for item in where:
        column, sep, value = item.partition("=")
        if not sep:
            raise SystemExit(f"--where takes COLUMN=VALUE, got {item!r}")
        kept.setdefault(column, []).append(value)
    got = {}
    for how in ("apnull", "pyarrow"):
        proc = subprocess.run([sys.executable, "-c", WHERE, str(path), how, json.dumps(kept)], capture_output=True,
                              text=True)
        if proc.returncode:
            print(proc.stderr[-2000:])
            raise SystemExit(proc.returncode)
        got[how] = json.loads(proc.stdout.strip().splitlines()[-1])
        print(f"{how}: {got[how]['rows']:,} rows in {got[how]['wall']:.1f} s, peak RSS "
              f"{got[how]['peak'] / 2**30:.2f} GB")
    print(f"filtered read of {path.name} ({path.stat().st_size / 2**30:.2f} GB on disk), {' and '.join(where)}: "
          f"apnull's peak {got['apnull']['peak'] / got['pyarrow']['peak']:.2f} x pyarrow's; load average "
          f"{os.getloadavg()[0]:.1f}")


def write_screen(path: Path, compounds: int, replicates: int, features: int, seed: int = 0) -> None:
    """The crossed screen as Parquet at ``path`` (one row group per 65,536 rows), written plate block by block."""
    import pyarrow as pa
    import pyarrow.parquet as pq

    from jump_scale import make_screen

    tmp = path.with_suffix(".tmp")
    writer = None
    step = 10_000  # compounds a block: the generator's float64 temporaries stay small
    for a in range(0, compounds, step):
        n = min(step, compounds - a)
        table, _ = make_screen(n, replicates, features=features, seed=seed + a)
        table["Metadata_compound"] = table["Metadata_compound"].where(table["Metadata_compound"] == "DMSO",
                                                                      table["Metadata_compound"] + f"_{a}")
        table["Metadata_plate"] = table["Metadata_plate"] + f"_{a}"
        arrow = pa.Table.from_pandas(table, preserve_index=False)
        if writer is None:
            writer = pq.ParquetWriter(tmp, arrow.schema)
        writer.write_table(arrow, row_group_size=65_536)
        del table, arrow
    writer.close()
    os.replace(tmp, path)


def table_bytes(path: Path) -> tuple:
    """(rows, features, bytes in memory): the float32 features (4 bytes a value, as pandas holds them) and
    the two label columns as ``read_table`` gives them (text objects: ``memory_usage(deep=True)``)."""
    import pyarrow.parquet as pq

    from apnull.score import read_table

    meta = pq.ParquetFile(path).metadata
    rows, feats = meta.num_rows, meta.num_columns - 2
    labels = read_table(path, labels=LABELS, columns=LABELS)
    return rows, feats, rows * feats * 4 + int(labels.memory_usage(deep=True, index=False).sum())


def main(argv=None):
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--compounds", type=int, default=20_000)
    ap.add_argument("--replicates", type=int, default=5)
    ap.add_argument("--features", type=int, default=737)
    ap.add_argument("--permutations", default="99")
    ap.add_argument("--file", default=None, help="the Parquet file (written when missing)")
    ap.add_argument("--read-only", action="store_true", help="read and prepare only")
    ap.add_argument("--where", action="append", metavar="COLUMN=VALUE",
                    help="read only the rows it keeps, by apnull and by pyarrow (repeatable)")
    a = ap.parse_args(argv)
    path = Path(a.file or f"/tmp/crossed_{a.compounds}x{a.replicates}x{a.features}.parquet")
    if not path.exists():
        t = time.perf_counter()
        write_screen(path, a.compounds, a.replicates, a.features)
        print(f"wrote {path} ({path.stat().st_size / 2**20:,.0f} MB) in {time.perf_counter() - t:.0f} s")
    if a.where:
        filtered_reads(path, a.where)
        return
    if a.read_only:
        cmd = [sys.executable, "-c", READ_ONLY, str(path)]
    else:
        cmd = [sys.executable, "-m", "apnull", "score", str(path), "--perturbation", "Metadata_compound",
               "--stratum", "Metadata_plate", "--permutations", a.permutations]
    t = time.perf_counter()
    proc = subprocess.run(cmd, capture_output=True, text=True)
    wall = time.perf_counter() - t
    peak = resource.getrusage(resource.RUSAGE_CHILDREN).ru_maxrss * 1024
    if proc.returncode:
        print(proc.stderr[-2000:])
        raise SystemExit(proc.returncode)
    rows, feats, nbytes = table_bytes(path)  # after the child: its peak is its own
    lines = [ln for ln in proc.stderr.splitlines() if ln.strip()]
    print("\n".join(lines[-12:]))
    if a.read_only:
        print(proc.stdout.strip())
    what = "read + prepare" if a.read_only else f"apnull score --permutations {a.permutations}"
    print(f"crossed layout: {a.compounds:,} compounds x {a.replicates} replicates, {rows:,} rows x {feats} float32 "
          f"features; {what}: {wall:.0f} s wall, peak RSS {peak / 2**30:.2f} GB = {peak / nbytes:.2f} x the table "
          f"in memory ({nbytes / 2**30:.2f} GB); load average {os.getloadavg()[0]:.1f}")


if __name__ == "__main__":
    main()
