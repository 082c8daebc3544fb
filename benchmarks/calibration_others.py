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

    python benchmarks/calibration_others.py [--seeds 3] [--first-seed 0] [--permutations 999]
        [--layouts 0,1,...] [--fixed-only]

``--fixed-only`` runs the fixed B column alone (no auto, no copairs). Each cell also gives the mean
over screens of the per-screen rate and its standard error: the perturbations of one screen share
their pools, so the binomial band (independent tests) is narrower than the rate's real spread.
"""

from __future__ import annotations

import argparse
import sys
import time

import numpy as np
from scipy.stats import binom

import calibration

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
    return calibration.copairs_pvalues(table, B, seed, control, neg_diffby=["Metadata_perturbation"],
                                       drop_controls=True)


def main(argv=None):
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--seeds", type=int, default=3, help="screens per digit class and layout")
    ap.add_argument("--first-seed", type=int, default=0)
    ap.add_argument("--permutations", type=int, default=999)
    ap.add_argument("--layouts", default=None, help="indices of the layouts to run, e.g. 0,1 (default all)")
    ap.add_argument("--fixed-only", action="store_true", help="the fixed-B column only")
    args = ap.parse_args(argv)
    try:
        import copairs  # noqa: F401
        have_copairs = not args.fixed_only
    except ImportError:
        have_copairs = False
    t0 = time.process_time()
    cols = ["mAP, B"] + ([] if args.fixed_only else ["mAP, auto", "per-query, auto"])
    cols += ["copairs 0.5.5"] if have_copairs else []
    chosen = None if args.layouts is None else {int(i) for i in args.layouts.split(",")}
    p, screens = {}, {}
    for digit in range(10):
        for seed in range(args.first_seed, args.first_seed + args.seeds):
            for i, (name, (table, control)) in enumerate(layouts(digit, seed).items()):
                if chosen is not None and i not in chosen:
                    continue
                cell = p.setdefault(name, {c: [] for c in cols})
                null_only = lambda names: ~np.char.startswith(np.asarray(names, dtype=str), "s")  # noqa: E731
                res = score_profiles(table, control=control, permutations=args.permutations, seed=seed, **KW)
                g = res.groups
                fixed = g["p_value"][null_only(g["Metadata_perturbation"])]
                cell["mAP, B"] += list(fixed)
                screens.setdefault(name, []).append([np.mean(fixed <= 0.05), np.mean(fixed <= 0.01)])
                if args.fixed_only:
                    continue
                res = score_profiles(table, control=control, permutations="auto", seed=seed, **KW)
                g, q = res.groups, res.queries
                cell["mAP, auto"] += list(g["p_value"][null_only(g["Metadata_perturbation"])])
                cell["per-query, auto"] += list(q["p_value"][null_only(q["Metadata_perturbation"])])
                if have_copairs:
                    cp = copairs_pvalues(table, control, args.permutations, seed)
                    cell["copairs 0.5.5"] += list(cp[null_only(cp.index)])
            print(f"  (digit {digit}, seed {seed}: {time.process_time() - t0:.0f} s CPU)", file=sys.stderr, flush=True)
    print(f"negatives='others', true-null perturbations of digits screens: 10 classes x {args.seeds} seeds "
          f"from {args.first_seed}, "
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
    print("\nmAP, B: mean over screens of the per-screen rate at 0.05 / 0.01 (its standard error)")
    for name, rates in screens.items():
        r = np.array(rates)
        se = r.std(axis=0, ddof=1) / np.sqrt(len(r))
        print(f"  {name}: {r[:, 0].mean():.4f} ({se[0]:.4f}) / {r[:, 1].mean():.4f} ({se[1]:.4f}), {len(r)} screens")
    print(f"\n({time.process_time() - t0:.0f} s CPU)")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
