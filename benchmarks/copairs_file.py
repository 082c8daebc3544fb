"""copairs's phenotypic-activity recipe on a crossed (JUMP-layout) screen read from a Parquet file.

The file is one written by ``read_memory.py`` (``Metadata_compound``, ``Metadata_plate``, float32
features ``f0..``, controls named ``DMSO``). The recipe is ``jump_scale.run_copairs``:
``pos_sameby=[compound, ref], neg_sameby=[plate], neg_diffby=[compound, ref]`` (ref: -1 for
treatments, unique for each control) and ``mean_average_precision(null_size=...)``. Run it under
``/usr/bin/time -v`` for its wall, CPU and peak RSS, beside ``apnull score`` of the same file in a
separate process (docs/benchmarks.md).

    python benchmarks/copairs_file.py FILE [--null-size 999]
"""

from __future__ import annotations

import argparse
import sys
import time
from pathlib import Path

import pandas as pd

sys.path.insert(0, str(Path(__file__).parent))


def main(argv=None):
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("file")
    ap.add_argument("--null-size", type=int, default=999)
    a = ap.parse_args(argv)
    from jump_scale import run_copairs

    t = time.perf_counter()
    table = pd.read_parquet(a.file)
    print(f"read {len(table):,} rows in {time.perf_counter() - t:.1f} s", file=sys.stderr, flush=True)
    t = time.perf_counter()
    ap_, maps = run_copairs(table, a.null_size)
    print(f"copairs null_size={a.null_size}: {time.perf_counter() - t:.1f} s; {len(maps):,} compounds, "
          f"{int(maps['below_corrected_p'].sum()):,} below the corrected p")


if __name__ == "__main__":
    main()
