"""The crossed (JUMP) layout at any size: apnull against copairs's phenotypic-activity recipe, one process.

A screen of C compounds x R replicates, each replicate on its own plate beside that plate's controls
(plates of about ``--plate-size`` compound wells plus ``--controls`` DMSO wells), float32 features with
a plate effect (a random shift of every well of a plate) and a fraction ``--active`` of compounds with
an effect of their own (the rest are true nulls; ``--active 0`` is a true-null screen). apnull:
``score_profiles(perturbation=compound, stratum=plate, permutations=...)``; copairs 0.5.5:
``pos_sameby=[compound, ref], neg_sameby=[plate], neg_diffby=[compound, ref]`` (ref: -1 for
treatments, unique for each control) and ``mean_average_precision(null_size=...)``. Prints each one's
wall and CPU seconds, apnull's draws, its open decisions, the false-positive rate of the null compounds
at 0.05 with its binomial band, the planted actives found by each, and the largest difference in mAP.

    python benchmarks/jump_scale.py [--compounds 2000] [--replicates 5] [--features 100]
        [--permutations auto] [--null-size 999] [--warm] [--no-copairs]
"""

from __future__ import annotations

import argparse
import os
import time

import numpy as np
import pandas as pd


def make_screen(compounds=2000, replicates=5, plate_size=300, controls=32, features=100, active=0.1,
                plate_effect=0.3, effect=0.5, seed=0):
    """(table, active mask over compound names): the crossed layout described in the module."""
    rng = np.random.default_rng(seed)
    wells = compounds * replicates
    plates = max(replicates, -(-wells // plate_size))
    order = rng.permutation(compounds)
    comp = np.repeat(order, replicates)
    plate = (np.arange(wells) % plates)  # consecutive wells of a compound on consecutive plates: all distinct
    names = np.array([f"cmp{i:06d}" for i in range(compounds)])
    labels = np.concatenate([names[comp], np.array(["DMSO"] * (plates * controls))])
    plate_col = np.concatenate([plate, np.repeat(np.arange(plates), controls)])
    X = rng.standard_normal((labels.size, features)).astype(np.float32)
    X += (plate_effect * rng.standard_normal((plates, features))).astype(np.float32)[plate_col]
    is_active = rng.random(compounds) < active
    shift = (effect * rng.standard_normal((compounds, features))).astype(np.float32) * is_active[:, None]
    X[:wells] += shift[comp]
    df = pd.DataFrame(X, columns=[f"f{i}" for i in range(features)])
    df.insert(0, "Metadata_plate", np.array([f"plate{p:04d}" for p in range(plates)])[plate_col])
    df.insert(0, "Metadata_compound", labels)
    return df, pd.Series(is_active, index=names)


def cpu_now():
    """CPU seconds of this process and of its child processes that have ended (a local dask cluster's
    workers, once it is closed)."""
    t = os.times()
    return t.user + t.system + t.children_user + t.children_system


def run_apnull(table, permutations, threads=None, workers=None):
    from apnull.score import score_profiles

    return score_profiles(table, perturbation="Metadata_compound", control="DMSO", stratum="Metadata_plate",
                          permutations=permutations, seed=0, threads=threads, workers=workers)


def run_copairs(table, null_size):
    from copairs.map import average_precision, mean_average_precision

    meta = table[["Metadata_compound", "Metadata_plate"]].copy()
    ctl = meta["Metadata_compound"] == "DMSO"
    meta["Metadata_ref"] = np.where(ctl, np.arange(len(meta)), -1)
    feats = table.filter(regex="^f").to_numpy()
    ap = average_precision(meta, feats, pos_sameby=["Metadata_compound", "Metadata_ref"], pos_diffby=[],
                           neg_sameby=["Metadata_plate"], neg_diffby=["Metadata_compound", "Metadata_ref"],
                           progress_bar=False)
    maps = mean_average_precision(ap, ["Metadata_compound"], null_size=null_size, threshold=0.05, seed=0,
                                  progress_bar=False)
    return ap, maps


def timed(fn):
    t, c = time.perf_counter(), cpu_now()
    out = fn()
    return out, time.perf_counter() - t, cpu_now() - c


def main(argv=None):
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--compounds", type=int, default=2000)
    ap.add_argument("--replicates", type=int, default=5)
    ap.add_argument("--plate-size", type=int, default=300)
    ap.add_argument("--controls", type=int, default=32)
    ap.add_argument("--features", type=int, default=100)
    ap.add_argument("--active", type=float, default=0.1)
    ap.add_argument("--plate-effect", type=float, default=0.3)
    ap.add_argument("--permutations", default="auto")
    ap.add_argument("--null-size", type=int, default=999)
    ap.add_argument("--threads", type=int, default=None)
    ap.add_argument("--workers", type=int, default=None, help="a local dask cluster of this many worker processes")
    ap.add_argument("--seed", type=int, default=0)
    ap.add_argument("--warm", action="store_true",
                    help="score a small screen first with both tools, large enough to take the same code paths "
                         "(numba's compilation and cache loading, copairs's imports)")
    ap.add_argument("--no-copairs", action="store_true")
    a = ap.parse_args(argv)
    B = a.permutations if a.permutations in ("auto", "all") else int(a.permutations)
    if a.warm:  # past the sizes from which the crossed kernels and the queries' exact law are taken
        from apnull.score.nulls.conditional import EXACT_MIN_QUERIES
        from apnull.score.nulls.permutation import CROSSED_MIN_PERTURBATIONS

        n_warm = max(CROSSED_MIN_PERTURBATIONS, -(-EXACT_MIN_QUERIES // a.replicates)) + 50
        small, _ = make_screen(n_warm, a.replicates, 60, a.controls, a.features, a.active, a.plate_effect, seed=99)
        run_apnull(small, B, a.threads)
        if not a.no_copairs:
            run_copairs(small, a.null_size)
    table, active = make_screen(a.compounds, a.replicates, a.plate_size, a.controls, a.features, a.active,
                                a.plate_effect, seed=a.seed)
    res, wall, cpu = timed(lambda: run_apnull(table, B, a.threads, a.workers))
    g = res.groups.set_index("Metadata_compound")
    q = res.queries
    null = ~active.reindex(g.index).to_numpy()
    fp = int((g["p_value"][null] <= 0.05).sum())
    nn = int(null.sum())
    from scipy.stats import binom  # here: dask's worker processes import this script as they start

    band = binom.ppf(0.975, nn, 0.05) / max(nn, 1)
    print(f"crossed layout: {a.compounds:,} compounds x {a.replicates} replicates, {len(table):,} rows, "
          f"{table['Metadata_plate'].nunique()} plates, {a.features} features, float32; load average "
          f"{os.getloadavg()[0]:.1f}")
    T = (a.controls + 1) ** (a.replicates - 1)  # a query's choices (one member of each other plate's pool)
    law = (q["permutations"] == T) & ~q["p_value_bound"]  # its exact law counted, not drawn
    print(f"apnull permutations={B}: {wall:.2f} s wall, {cpu:.2f} s CPU; mAP draws "
          f"{int(g['permutations'].sum()):,}, per-query draws {int(q['permutations'][~law].sum()):,} "
          f"(exact law of {int(law.sum()):,} queries, max draws a query {int(q['permutations'][~law].max()):,}); "
          f"open decisions "
          f"{int(g.get('decision_open', pd.Series(False)).sum())}; null compounds' FPR@0.05 {fp / max(nn, 1):.3f} "
          f"({fp} of {nn}; upper band {band:.3f}); planted actives found (q <= 0.05) "
          f"{int((g['q_value'][~null] <= 0.05).sum())} of {int((~null).sum())}, false {int((g['q_value'][null] <= 0.05).sum())}")
    if a.no_copairs:
        return
    (cap, cmaps), cwall, ccpu = timed(lambda: run_copairs(table, a.null_size))
    cm = cmaps.set_index("Metadata_compound")
    sig = cm["below_corrected_p"].reindex(g.index).fillna(False).to_numpy(bool)
    diff = np.nanmax(np.abs(cm["mean_average_precision"].reindex(g.index).to_numpy() - g["mAP"].to_numpy()))
    print(f"copairs null_size={a.null_size}: {cwall:.2f} s wall, {ccpu:.2f} s CPU; planted actives found "
          f"{int(sig[~null].sum())} of {int((~null).sum())}, false {int(sig[null].sum())}; largest |mAP difference| "
          f"{diff:.2g} (copairs ranks in float32 and puts a tied positive first)")
    print(f"apnull / copairs wall: {wall / cwall:.2f}")


if __name__ == "__main__":
    main()
