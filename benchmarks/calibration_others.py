"""Calibration of ``negatives="others"`` on real data (scikit-learn's digits), with copairs 0.5.5 alongside.

True-null screens (``digits_null_screen``): one digit class split into fake perturbations of 4
replicates, every one exchangeable with every other profile of its plate. Layouts:

- "4 plates, no controls": one replicate a plate (positives on other plates: conditional per-query null);
- "1 plate, no controls": all replicates on one plate (the exact law of (m, n) per query);
- "4 plates + 20 controls": controls are negatives too;
- "4 plates + plate effect": every row of a plate shifted by the plate's own random vector;
- "mixed, null ones" (not a null of this design): ``digits_mixed_screen`` without its controls, 10
  perturbations with real signal (mixed 50% with another digit) among the null ones, the rates counted
  over the null ones only. Their replicates are not exchangeable with the active perturbations' in
  their pool, and they do stand out from those: a rate above alpha here is what "others" asks, not a
  false positive of the test.

mAP p-values with B = 999 and ``permutations="auto"``, per-query p-values of the auto run, and copairs
0.5.5's ``mean_average_precision`` on ``average_precision(pos_sameby=[perturbation],
neg_sameby=[plate], neg_diffby=[perturbation])`` when copairs is installed. False-positive rates at
0.05 and 0.01 with the 99.9% binomial band.

    python benchmarks/calibration_others.py [--seeds 3] [--permutations 999]
"""

from __future__ import annotations

import argparse
import sys
import tempfile
import time

import numpy as np
from scipy.stats import binom

from apnull.score import score_profiles
from apnull.score.example import digits_mixed_screen, digits_null_screen

KW = dict(perturbation="Metadata_perturbation", stratum="Metadata_plate", negatives="others")
PLATE_EFFECT = 3.0


def layouts(digit, seed):
    """{layout name: (table, control value or None)} of one digit class and seed."""
    out = {}
    t = digits_null_screen(digit, seed=seed, controls_per_plate=(0, 0, 0, 0))
    out["4 plates, no controls"] = t, None
    out["1 plate, no controls"] = digits_null_screen(digit, seed=seed, controls_per_plate=(0,)), None
    out["4 plates + 20 controls"] = digits_null_screen(digit, seed=seed, controls_per_plate=(20, 20, 20, 20)), "DMSO"
    rng = np.random.default_rng(1000 + seed)
    pe = t.copy()
    cols = [c for c in pe.columns if c.startswith("px_")]
    for plate in sorted(pe["Metadata_plate"].unique()):
        rows = pe["Metadata_plate"] == plate
        pe.loc[rows, cols] = pe.loc[rows, cols].to_numpy() + rng.normal(scale=PLATE_EFFECT, size=len(cols))
    out["4 plates + plate effect"] = pe, None
    mixed = digits_mixed_screen(digit, seed=seed)
    out["mixed, null ones"] = mixed[mixed["Metadata_perturbation"] != "DMSO"].reset_index(drop=True), None
    return out


def copairs_pvalues(table, control, B, seed):
    """copairs 0.5.5 with neg_diffby=[perturbation] (controls, if any, negatives only: a unique ref each)."""
    from copairs.map import average_precision, mean_average_precision

    meta = table[["Metadata_perturbation", "Metadata_plate"]].copy()
    meta["Metadata_ref"] = np.where(meta["Metadata_perturbation"] == control, np.arange(len(meta)), -1)
    feats = table.filter(regex="^px_").to_numpy()
    ap = average_precision(meta, feats, pos_sameby=["Metadata_perturbation", "Metadata_ref"], pos_diffby=[],
                           neg_sameby=["Metadata_plate"], neg_diffby=["Metadata_perturbation"], progress_bar=False)
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
    t0 = time.process_time()
    cols = ["mAP, B", "mAP, auto", "per-query, auto"] + (["copairs 0.5.5"] if have_copairs else [])
    p = {}
    for digit in range(10):
        for seed in range(args.seeds):
            for name, (table, control) in layouts(digit, seed).items():
                cell = p.setdefault(name, {c: [] for c in cols})
                null_only = lambda names: ~np.char.startswith(np.asarray(names, dtype=str), "s")  # noqa: E731
                res = score_profiles(table, control=control, permutations=args.permutations, seed=seed, **KW)
                g = res.groups
                cell["mAP, B"] += list(g["p_value"][null_only(g["Metadata_perturbation"])])
                res = score_profiles(table, control=control, permutations="auto", seed=seed, **KW)
                g, q = res.groups, res.queries
                cell["mAP, auto"] += list(g["p_value"][null_only(g["Metadata_perturbation"])])
                cell["per-query, auto"] += list(q["p_value"][null_only(q["Metadata_perturbation"])])
                if have_copairs:
                    cp = copairs_pvalues(table, control, args.permutations, seed)
                    cell["copairs 0.5.5"] += list(cp[null_only(cp.index)])
            print(f"  (digit {digit}, seed {seed}: {time.process_time() - t0:.0f} s CPU)", file=sys.stderr, flush=True)
    print(f"negatives='others', true-null perturbations of digits screens: 10 classes x {args.seeds} seeds, "
          f"4 replicates, cosine, B = {args.permutations}; FPR at 0.05 / 0.01 [99.9% binomial band]")
    print("| layout | " + " | ".join(cols) + " |")
    print("| --- " * (len(cols) + 1) + "|")
    for name, cell in p.items():
        row = []
        for c in cols:
            vals = np.array(cell[c])
            parts = []
            for alpha in (0.05, 0.01):
                lo, hi = binom.interval(0.999, vals.size, alpha)
                parts.append(f"{np.mean(vals <= alpha):.3f} [{lo / vals.size:.3f}, {hi / vals.size:.3f}]")
            row.append(f"{' / '.join(parts)} ({vals.size:,})")
        print(f"| {name} | " + " | ".join(row) + " |")
    print(f"\n({time.process_time() - t0:.0f} s CPU)")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
