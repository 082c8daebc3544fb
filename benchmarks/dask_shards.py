"""What sending the crossed (JUMP) layout to dask workers costs: its shards, their bytes and times.

Builds the screen of ``jump_scale.py`` (compounds x 5 replicates, each on its own plate of 300 wells +
32 DMSO), starts a local cluster of ``--workers`` single-thread worker processes, and sends every shard
of the screen's work as ``score_profiles(workers=...)`` does before its first round (each shard's part
made on the client, scattered, and prepared on its worker: the controls' sorted tables), one shard at a
time, waiting for each. Prints the cluster's start, the shards' perturbations and bytes, the median and
total seconds to make and send a shard and to have it ready on its worker, against the whole
component sent as one part (what the code before the shards sent: every row, every plate).

    python benchmarks/dask_shards.py [--compounds 20000] [--features 100] [--workers 2]
"""

from __future__ import annotations

import argparse
import os
import time

import numpy as np


def main(argv=None):
    from dask.distributed import Client, LocalCluster, wait
    from jump_scale import make_screen

    from apnull.memo import rough_nbytes
    from apnull.score.engine.executor import Scattered
    from apnull.score.nulls.permutation import ScreenWork
    from apnull.score.table.screen import prepare_screen

    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--compounds", type=int, default=20000)
    ap.add_argument("--features", type=int, default=100)
    ap.add_argument("--workers", type=int, default=2)
    a = ap.parse_args(argv)
    table, _ = make_screen(a.compounds, 5, 300, 32, a.features, seed=0)
    screen = prepare_screen(table, "Metadata_compound", "DMSO", "Metadata_plate",
                            [c for c in table.columns if c.startswith("f")], "cosine")
    work = ScreenWork(screen, 0)
    t = time.perf_counter()
    with LocalCluster(n_workers=a.workers, threads_per_worker=1, dashboard_address=None) as cluster, \
            Client(cluster) as client:
        started = time.perf_counter() - t
        client.run(lambda: __import__("apnull.score.nulls.permutation"))  # the imports, not counted below
        where = Scattered(client, work)
        made, ready = [], []
        for k in range(where.shard_count()):
            t = time.perf_counter()
            future = where.shard(k)
            made.append(time.perf_counter() - t)
            wait(future)
            ready.append(time.perf_counter() - t)
        sizes = np.array([b for _, _, b in where.sent]) / 2**20
        items = np.array([n for _, n, _ in where.sent])
    t = time.perf_counter()
    whole = rough_nbytes(work.part(np.arange(work.size), True)) / 2**20
    whole_s = time.perf_counter() - t
    print(f"crossed layout: {a.compounds:,} compounds x 5 replicates, {len(table):,} rows, "
          f"{table['Metadata_plate'].nunique()} plates, {a.features} features; components {len(work.components)}; "
          f"load average {os.getloadavg()[0]:.1f}")
    print(f"local cluster of {a.workers} worker processes started in {started:.1f} s")
    print(f"{sizes.size} shards of {items.min():,} to {items.max():,} perturbations, {sizes.min():.1f} to "
          f"{sizes.max():.1f} MB each, {sizes.sum():.0f} MB in all (the whole component as one part: {whole:.0f} MB, "
          f"made in {whole_s:.2f} s)")
    print(f"a shard made and sent: {np.median(made):.2f} s (median; {sum(made):.1f} s in all); ready on its "
          f"worker: {np.median(ready):.2f} s ({sum(ready):.1f} s in all)")


if __name__ == "__main__":
    main()
