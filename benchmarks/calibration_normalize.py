"""Calibration of mAP p-values with per-plate normalisation (normalize= none, controls, plate) on real data.

Normalising against a plate's controls uses the labels, and the permutation null moves labels: a
draw gives t's label to a control, whose values helped make the plate's median and MAD, and makes
t's replicate a control that did not. apnull keeps the normalisation of the observed labels for
every draw (the similarities are computed once). This measures what that does on true-null screens:
scikit-learn's digits, one digit class split into controls (20 a plate, 4 plates) and fake
perturbations of 4 replicates, one a plate (``digits_null_screen``), as ``benchmarks/calibration.py``.
Two layouts:

- ``digits``: the pixels as they are;
- ``t5 noise``: the same layout with every value a Student t (5 df) draw (continuous, no ties);
- ``raw-like``: each plate's features given a shift (N(0, 3^2) pixel units) and a gain (U(0.7, 1.4))
  of its own, and each feature a unit (10^U(-2, 3)) and an offset, as raw CellProfiler features
  carry them (the layout the normalisation is for).

For each normalize choice: the false-positive rate of the mAP p-values (B fixed) and of the per-query
p-values (conditional permutation null, B draws) at 0.05 and 0.01, with the 99.9% binomial band.
Features a choice leaves out (MAD 0 on a plate's reference rows: about half the pixels of a digit
class are 0 in most images) are left out on the observed labels, like the centre and scale.

    python benchmarks/calibration_normalize.py [--seeds 3] [--permutations 999] [--layouts digits raw-like "t5 noise"]
    python benchmarks/calibration_normalize.py --cost     # what renormalising per draw would cost
"""

from __future__ import annotations

import argparse
import sys
import time

import numpy as np
from scipy.stats import binom

from apnull.score import score_profiles
from apnull.score.example import digits_null_screen

KW = dict(perturbation="Metadata_perturbation", stratum="Metadata_plate")
CHOICES = ("none", "controls", "plate")


def raw_like(table, seed):
    """Every plate's features shifted and scaled by its own random vectors, every feature given a unit."""
    rng = np.random.default_rng(2000 + seed)
    out = table.copy()
    cols = [c for c in out.columns if c.startswith("px_")]
    d = len(cols)
    units, offset = 10.0 ** rng.uniform(-2, 3, d), rng.uniform(2, 10, d)
    for plate in sorted(out["Metadata_plate"].unique()):
        rows = out["Metadata_plate"] == plate
        shift, gain = rng.normal(0, 3, d), rng.uniform(0.7, 1.4, d)
        out.loc[rows, cols] = units * (offset + gain * (out.loc[rows, cols].to_numpy() + shift))
    return out


def t5_noise(table, seed):
    """The same screen with every feature value replaced by an independent Student t (5 df) draw:
    continuous, heavy-tailed, no ties, no MAD 0."""
    rng = np.random.default_rng(3000 + seed)
    out = table.copy()
    cols = [c for c in out.columns if c.startswith("px_")]
    out[cols] = rng.standard_t(5, size=(len(out), len(cols)))
    return out


LAYOUTS = {"digits": lambda t, s: t, "raw-like": raw_like, "t5 noise": t5_noise}


def rates(p) -> str:
    p = np.asarray(p)
    cells = []
    for alpha in (0.05, 0.01):
        lo, hi = binom.interval(0.999, p.size, alpha)
        cells.append(f"{np.mean(p <= alpha):.3f} [{lo / p.size:.3f}, {hi / p.size:.3f}]")
    return " | ".join(cells)


def renormalised_cost(B: int) -> None:
    """Time a null that renormalises per draw (numpy prototype, one perturbation of a digits screen:
    each plate's median and MAD made again from the draw's controls, the pools normalised again, the
    k APs recomputed) against apnull's whole run with the observed normalisation."""
    from apnull.score import tie_aware_ap

    table = digits_null_screen(3, seed=0)
    t0 = time.perf_counter()
    res = score_profiles(table, permutations=B, normalize="controls", **KW)
    run = time.perf_counter() - t0
    feats = [c for c in table.columns if c.startswith("px_")]
    X = table[feats].to_numpy(float)[:, res._screen.normalization.keep]
    plate, pert = table["Metadata_plate"].to_numpy(), table["Metadata_perturbation"].to_numpy()
    pools = [np.flatnonzero((plate == p) & ((pert == "DMSO") | (pert == "p001"))) for p in sorted(set(plate))]
    rng = np.random.default_rng(0)

    def one_draw():
        drawn = []
        for pool in pools:
            pick = rng.integers(pool.size)
            ctl = np.delete(pool, pick)
            med = np.median(X[ctl], axis=0)
            mad = 1.4826 * np.median(np.abs(X[ctl] - med), axis=0)
            z = (X[pool] - med) / np.where(mad > 0, mad, 1.0)
            drawn.append((z / np.maximum(np.linalg.norm(z, axis=1, keepdims=True), 1e-300), pick))
        aps = []
        for i, (zi, pi) in enumerate(drawn):
            pos = np.array([zj[pj] @ zi[pi] for j, (zj, pj) in enumerate(drawn) if j != i])
            neg = np.delete(zi @ zi[pi], pi)
            aps.append(tie_aware_ap(np.r_[pos, neg], np.r_[np.ones(pos.size, bool), np.zeros(neg.size, bool)]))
        return np.mean(aps)

    n = 300
    t0 = time.perf_counter()
    for _ in range(n):
        one_draw()
    per = (time.perf_counter() - t0) / n
    P = len(res.groups)
    print(f"apnull, observed normalisation: {P} perturbations x {B} draws (queries included): {run:.1f} s")
    print(f"renormalised per draw (numpy prototype, {len(pools)} plates x {pools[0].size} rows x {X.shape[1]} "
          f"features): {per * 1e3:.1f} ms a draw, so {per * B * P:.0f} s for the {P} perturbations")


def main(argv=None):
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--seeds", type=int, default=3, help="screens per digit class and layout")
    ap.add_argument("--permutations", type=int, default=999)
    ap.add_argument("--layouts", nargs="+", choices=list(LAYOUTS), default=["digits", "raw-like"])
    ap.add_argument("--cost", action="store_true", help="time a null that renormalises per draw, and stop")
    args = ap.parse_args(argv)
    if args.cost:
        renormalised_cost(args.permutations)
        return 0
    t0 = time.perf_counter()
    print(f"true-null screens: 10 digit classes x {args.seeds} seeds, 20 controls a plate, 4 plates, 4 replicates "
          f"(one a plate), cosine, B = {args.permutations}; rate at 0.05 [99.9% band] | at 0.01 [band]")
    print("| layout | normalize | mAP tests | mAP: FPR at 0.05 | at 0.01 | query tests | per-query: FPR at 0.05 "
          "| at 0.01 | features kept |")
    print("| --- | --- | --- | --- | --- | --- | --- | --- | --- |")
    for name in args.layouts:
        make = LAYOUTS[name]
        for how in CHOICES:
            maps, queries, kept = [], [], []
            for digit in range(10):
                for seed in range(args.seeds):
                    table = make(digits_null_screen(digit, seed=seed), seed)
                    res = score_profiles(table, permutations=args.permutations, seed=seed, normalize=how, **KW)
                    maps += list(res.groups["p_value"])
                    queries += list(res.queries["p_value"])
                    kept.append(res.settings["features"])
            m, q = rates(maps).split(" | "), rates(queries).split(" | ")
            print(f"| {name} | {how} | {len(maps):,} | {m[0]} | {m[1]} | {len(queries):,} | {q[0]} | {q[1]} | "
                  f"{np.mean(kept):.0f} of 64 |", flush=True)
            print(f"  ({name}, {how}: {time.perf_counter() - t0:.0f} s)", file=sys.stderr, flush=True)
    print(f"\n({time.perf_counter() - t0:.0f} s)")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
