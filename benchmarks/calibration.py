"""Calibration of mAP p-values on real data (scikit-learn's digits): ours vs independent vs copairs.

True-null screens: one digit class split into controls (4 plates) and fake perturbations of 4
replicates (one per plate), equal (20/20/20/20) or unequal (18/19/21/22) control counts per plate,
and equal counts with a plate effect (every row of a plate shifted by the plate's own random vector,
``PLATE_EFFECT`` pixel units per feature). mAP p-values with B fixed and with ``permutations="auto"``;
per-query p-values from the run's choice (conditional permutation null here, as every query's
positives sit on other plates) and, for contrast, from the exact law of (m, n).
Every null is run on the same screens; the table gives the false-positive rate at 0.05 and 0.01 with
the 99.9% binomial band. Then mixed screens (``digits_mixed_screen``: in each digit class, 10
perturbations with signal, each replicate mixed 50% with an image of another digit) give the FDR and
power of BH at q = 0.05. With copairs installed, its own ``mean_average_precision`` (0.5.5) is run too
("copairs 0.5.5").

    python benchmarks/calibration.py [--seeds 3] [--permutations 999]
"""

from __future__ import annotations

import argparse
import sys
import tempfile
import time

import numpy as np
from scipy.stats import binom

import apnull

from apnull.score import benjamini_hochberg, score_profiles
from apnull.score.example import digits_mixed_screen, digits_null_screen

KW = dict(perturbation="Metadata_perturbation", stratum="Metadata_plate")
LAYOUTS = {"equal 20/20/20/20": (20, 20, 20, 20), "unequal 18/19/21/22": (18, 19, 21, 22),
           "equal + plate effect": (20, 20, 20, 20)}
#: Standard deviation of a plate's shift, per feature, in pixel units (the pixels range over 0..16).
PLATE_EFFECT = 3.0


def with_plate_effect(table, seed):
    """Every row of plate p shifted by its own N(0, PLATE_EFFECT^2) vector (controls and perturbations alike)."""
    rng = np.random.default_rng(1000 + seed)
    out = table.copy()
    cols = [c for c in out.columns if c.startswith("px_")]
    for plate in sorted(out["Metadata_plate"].unique()):
        rows = out["Metadata_plate"] == plate
        out.loc[rows, cols] = out.loc[rows, cols].to_numpy() + rng.normal(scale=PLATE_EFFECT, size=len(cols))
    return out
#: Signal strength of the mixed screens: each replicate of a real perturbation is (1 - MIX) * its own
#: image + MIX * an image of another digit.
MIX = 0.5


def copairs_pvalues(table, B, seed, control="DMSO", neg_diffby=("Metadata_perturbation", "Metadata_ref"),
                    drop_controls=False):
    """copairs 0.5.5's own pipeline on the same screen (negatives: controls of the same plate; each control
    its own ref, so controls are never positives of each other). ``neg_diffby`` as copairs takes it;
    ``drop_controls``: the controls' own AP rows left out before the mAP."""
    from copairs.map import average_precision, mean_average_precision

    meta = table[["Metadata_perturbation", "Metadata_plate"]].copy()
    meta["Metadata_ref"] = np.where(meta["Metadata_perturbation"] == control, np.arange(len(meta)), -1)
    feats = table.filter(regex="^px_").to_numpy()
    ap = average_precision(meta, feats, pos_sameby=["Metadata_perturbation", "Metadata_ref"], pos_diffby=[],
                           neg_sameby=["Metadata_plate"], neg_diffby=list(neg_diffby), progress_bar=False)
    if drop_controls:
        ap = ap[ap["Metadata_perturbation"] != control]
    with tempfile.TemporaryDirectory() as cache:
        maps = mean_average_precision(ap, ["Metadata_perturbation"], null_size=B, threshold=0.05, seed=seed,
                                      progress_bar=False, cache_dir=cache)
    return maps.set_index("Metadata_perturbation")["p_value"]


def main(argv=None):
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--seeds", type=int, default=3, help="screens per digit class and layout")
    ap.add_argument("--permutations", type=int, default=999)
    args = ap.parse_args(argv)
    try:
        import copairs  # noqa: F401
        have_copairs = True
    except ImportError:
        have_copairs = False
    methods = ["permutation", "independent", "copairs"] + (["copairs 0.5.5"] if have_copairs else [])
    methods.insert(1, "permutation (auto)")
    t0 = time.perf_counter()
    print(f"true-null screens: 10 digit classes x {args.seeds} seeds per layout, 4 replicates, cosine, "
          f"B = {args.permutations}")
    print(f"{'layout':22s} {'method':28s} {'tests':>6s} {'FPR@0.05':>9s} {'band 99.9%':>13s} "
          f"{'FPR@0.01':>9s} {'band 99.9%':>13s}")
    for name, layout in LAYOUTS.items():
        p = {m: [] for m in methods + ["per-query AP (auto: conditional)", "per-query AP (exact law)"]}
        for digit in range(10):
            for seed in range(args.seeds):
                table = digits_null_screen(digit, seed=seed, controls_per_plate=layout)
                if "plate effect" in name:
                    table = with_plate_effect(table, seed)
                for null in ("permutation", "permutation (auto)", "independent", "copairs"):
                    B = "auto" if null == "permutation (auto)" else args.permutations
                    res = score_profiles(table, null=null.split()[0], permutations=B, seed=seed, **KW)
                    p[null] += list(res.groups["p_value"])
                    if B == "auto":
                        q = res.queries
                        p["per-query AP (auto: conditional)"] += list(q["p_value"])
                        p["per-query AP (exact law)"] += [apnull.null_distribution(m, n).pvalue(a)
                                                          for m, n, a in zip(q["m"], q["n"], q["ap"])]
                if have_copairs:
                    p["copairs 0.5.5"] += list(copairs_pvalues(table, args.permutations, seed))
                print(f"  ({name}, digit {digit}, seed {seed}: {time.perf_counter() - t0:.0f} s)", file=sys.stderr,
                      flush=True)
        for method, vals in p.items():
            vals = np.array(vals)
            cells = []
            for alpha in (0.05, 0.01):
                lo, hi = binom.interval(0.999, vals.size, alpha)
                cells.append(f"{np.mean(vals <= alpha):9.3f} [{lo / vals.size:.3f},{hi / vals.size:.3f}]")
            label = method if method != "copairs" else "copairs-style (apnull)"
            print(f"{name:22s} {label:28s} {vals.size:6d} {cells[0]} {cells[1]}")
    print(f"\nmixed screens: each digit class d x {args.seeds} seeds (layouts alternate), 10 perturbations with "
          f"signal (each replicate mixed {MIX:.0%} with an image of digit (d + 5) mod 10), the other ~15 null;")
    print("BH at q = 0.05. FDR = mean over screens of false / max(discoveries, 1) (its SE); power = mean share "
          "of the 10 found")
    print(f"{'method':28s} {'screens':>7s} {'discoveries':>11s} {'FDR':>6s} {'SE':>6s} {'power':>6s}")
    for null in methods:
        fdp, power, found = [], [], 0
        for digit in range(10):
            for seed in range(args.seeds):
                table = digits_mixed_screen(digit, seed=seed, mix=MIX)
                if null == "copairs 0.5.5":
                    pv = copairs_pvalues(table, args.permutations, seed)
                    names, p = pv.index.to_numpy(), pv.to_numpy()
                else:
                    B = "auto" if null == "permutation (auto)" else args.permutations
                    g = score_profiles(table, null=null.split()[0], permutations=B, seed=seed, **KW).groups
                    names, p = g["Metadata_perturbation"].to_numpy(), g["p_value"].to_numpy()
                hit = benjamini_hochberg(p) <= 0.05
                real = np.char.startswith(names.astype(str), "s")
                found += int(hit.sum())
                fdp.append((hit & ~real).sum() / max(hit.sum(), 1))
                power.append((hit & real).sum() / real.sum())
        fdp = np.array(fdp)
        label = null if null != "copairs" else "copairs-style (apnull)"
        print(f"{label:28s} {fdp.size:7d} {found:11d} {fdp.mean():6.3f} {fdp.std(ddof=1) / np.sqrt(fdp.size):6.3f} "
              f"{np.mean(power):6.3f}")
    print(f"\n({time.perf_counter() - t0:.0f} s)")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
