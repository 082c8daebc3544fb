"""Benchmark ``apnull.score.score_profiles`` against copairs 0.5.5 on the same synthetic screen.

300 perturbations x 4 replicates x 1,000 controls, 999 permutations (copairs: null_size 999), cosine,
one stratum, end to end (similarities, APs, p-values). Prints time and peak memory (tracemalloc) of
each, the ratio, and checks that per-query AP and mAP equal copairs's values wherever copairs's float32
similarities order the query's positives and negatives as the exact ones do.
copairs is imported here only (pip install copairs==0.5.5); the library never imports it.

    python benchmarks/score.py [--perturbations 300] [--controls 1000] [--features 100] [--repeats 5]
    taskset -c 0 python benchmarks/score.py   # everything on one core: copairs on one thread too
"""

from __future__ import annotations

import argparse
import tempfile
import time
import tracemalloc

import numpy as np
import pandas as pd

from apnull.score.engine.executor import default_threads


def make_screen(perts, reps, controls, features, seed=0):
    rng = np.random.default_rng(seed)
    names = ["DMSO"] * controls + [f"t{i:04d}" for i in range(perts) for _ in range(reps)]
    X = rng.normal(size=(len(names), features))
    shift = rng.normal(size=(perts, features)) * 0.15
    X[controls:] += np.repeat(shift, reps, axis=0)
    meta = pd.DataFrame({"Metadata_pert": names})
    return pd.concat([meta, pd.DataFrame(X, columns=[f"f{i}" for i in range(features)])], axis=1)


#: Similarities closer than this may come in either order in copairs's float32 values (a sum of 100
#: float32 products, each rounded to a relative 6e-8, is off by up to about 1e-7).
NEAR_TIE = 1e-6


def float32_near_ties(table, rows):
    """For each query of ``rows``: whether it has a positive and a negative (a control) whose cosine
    similarities to it lie within ``NEAR_TIE`` of each other."""
    X = table.filter(regex="^f").to_numpy()
    norms = np.linalg.norm(X, axis=1)
    pert = table["Metadata_pert"].to_numpy()
    controls = pert == "DMSO"
    out = []
    for row in rows:
        s = X @ X[row] / (norms * norms[row])
        pos = s[(pert == pert[row]) & (np.arange(len(pert)) != row)]
        neg = np.sort(s[controls])
        at = np.searchsorted(neg, pos)
        gaps = [abs(p - neg[j]) for p, i in zip(pos, at) for j in (i - 1, i) if 0 <= j < neg.size]
        out.append(min(gaps) < NEAR_TIE)
    return out


def measure(fn, repeats=1):
    """(result, seconds, peak traced bytes): timed untraced (the median of ``repeats`` runs), then run
    again under tracemalloc. ``measure.cpu``: the median CPU seconds of the timed runs.

    tracemalloc hooks every allocation (numba's too), which would slow the timed run several-fold.
    The median keeps one slow run (another process on the machine, Python's occasional full garbage
    collection) out of the figure.
    """
    walls, cpus = [], []
    for _ in range(repeats):
        t0 = time.perf_counter()
        c0 = time.process_time()
        out = fn()
        walls.append(time.perf_counter() - t0)
        cpus.append(time.process_time() - c0)  # CPU seconds of the timed run (all threads of the process)
    elapsed = float(np.median(walls))
    measure.cpu = float(np.median(cpus))
    tracemalloc.start()
    fn()
    peak = tracemalloc.get_traced_memory()[1]
    tracemalloc.stop()
    return out, elapsed, peak


def run_ours(table, B, threads=None):
    from apnull.score import score_profiles

    return score_profiles(table, perturbation="Metadata_pert", control="DMSO", permutations=B, threads=threads)


def run_copairs(table, B):
    from copairs.map import average_precision, mean_average_precision

    meta = table[["Metadata_pert"]].copy()
    ctl = meta["Metadata_pert"] == "DMSO"
    meta["Metadata_ref"] = np.where(ctl, np.arange(len(meta)), -1)
    feats = table.filter(regex="^f").to_numpy()
    ap = average_precision(meta, feats, pos_sameby=["Metadata_pert", "Metadata_ref"], pos_diffby=[],
                           neg_sameby=[], neg_diffby=["Metadata_pert", "Metadata_ref"], progress_bar=False)
    with tempfile.TemporaryDirectory() as cache:  # cold null cache, as on a first run
        maps = mean_average_precision(ap, ["Metadata_pert"], null_size=B, threshold=0.05, seed=0,
                                      progress_bar=False, cache_dir=cache)
    return ap, maps


def main(argv=None):
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--perturbations", type=int, default=300)
    ap.add_argument("--replicates", type=int, default=4)
    ap.add_argument("--controls", type=int, default=1000)
    ap.add_argument("--features", type=int, default=100)
    ap.add_argument("--permutations", type=int, default=999)
    ap.add_argument("--repeats", type=int, default=5, help="timed runs of apnull (the median is shown)")
    args = ap.parse_args(argv)
    table = make_screen(args.perturbations, args.replicates, args.controls, args.features)
    B = args.permutations
    print(f"screen: {args.perturbations} perturbations x {args.replicates} replicates, {args.controls} controls, "
          f"{args.features} features, cosine, {B} permutations (copairs null_size {B})")
    run_ours(table.head(args.controls + 2 * args.replicates), 9)  # compile / load numba kernels once
    ours, t_ours, m_ours = measure(lambda: run_ours(table, B), args.repeats)
    print(f"apnull.score (permutation null): {t_ours:6.2f} s, peak {m_ours / 2**20:7.1f} MB "
          f"({default_threads()} threads)")
    one, t_one, _ = measure(lambda: run_ours(table, B, threads=1), args.repeats)
    assert one.groups.equals(ours.groups) and one.queries.equals(ours.queries), "threads changed the results"
    cpu_one = measure.cpu
    print(f"apnull.score (permutation null, 1 thread): {t_one:6.2f} s (median of {args.repeats} runs)")
    perms = args.perturbations * B
    print(f"per permutation (whole run / {perms:,} permutations): {t_ours / perms * 1e6:.2f} us "
          f"({default_threads()} threads), {t_one / perms * 1e6:.2f} us (1 thread; CPU time "
          f"{cpu_one / perms * 1e6:.2f} us)")
    ours_ind, t_ind, _ = measure(lambda: run_ours_null(table, B, "copairs"))
    print(f"apnull.score (copairs-style null): {t_ind:6.2f} s")
    try:
        (cp_ap, cp_map), t_cp, m_cp = measure(lambda: run_copairs(table, B))
    except ImportError:
        print("copairs not installed: pip install copairs==0.5.5 for the comparison")
        return 0
    cpu_cp = measure.cpu
    print(f"copairs 0.5.5 mean_average_precision: {t_cp:6.2f} s, peak {m_cp / 2**20:7.1f} MB")
    print(f"CPU time ratio (copairs CPU s / apnull 1-thread CPU s): {cpu_cp / cpu_one:.1f}x "
          f"({cpu_cp:.2f} s / {cpu_one:.2f} s; robust to other load on the machine)")
    print(f"speed-up (copairs time / apnull time): {t_cp / t_ours:.1f}x ({t_cp / t_one:.1f}x on 1 thread); "
          f"memory ratio {m_cp / m_ours:.1f}x")
    q = ours.queries.set_index("row")
    cp = cp_ap.dropna(subset=["average_precision"])
    cp = cp[cp["n_pos_pairs"] > 0]
    diff = np.abs(q.loc[cp.index, "ap"].to_numpy() - cp["average_precision"].to_numpy())
    off = cp.index[diff > 1e-6]
    unexplained = [row for row, tie in zip(off, float32_near_ties(table, off)) if not tie]
    print(f"max |AP - copairs AP| over {len(cp)} queries: {diff.max():.2e}; {len(off)} differ by more than 1e-6, "
          f"each with a positive and a negative whose similarities to it lie within {NEAR_TIE:g} "
          f"(copairs's float32 similarities may order them either way): {not unexplained}")
    g = ours.groups.set_index("Metadata_pert")
    cmap = cp_map.set_index("Metadata_pert")
    clean = cmap.index.difference(pd.Index(table.loc[off, "Metadata_pert"]))
    d_map = np.max(np.abs(g.loc[clean, "mAP"].to_numpy() - cmap.loc[clean, "mean_average_precision"].to_numpy()))
    print(f"max |mAP - copairs mAP| over the {len(clean)} perturbations without such a query: {d_map:.2e}")
    same_n = (q.loc[cp.index, "n"].to_numpy() + q.loc[cp.index, "m"].to_numpy() == cp["n_total_pairs"].to_numpy())
    print(f"(m, n) agree with copairs's (n_pos_pairs, n_total_pairs) for all queries: {bool(same_n.all())}")
    assert not unexplained and d_map < 1e-6, "AP differs from copairs's"
    return 0


def run_ours_null(table, B, null):
    from apnull.score import score_profiles

    return score_profiles(table, perturbation="Metadata_pert", control="DMSO", permutations=B, null=null)


if __name__ == "__main__":
    raise SystemExit(main())
