"""Calibration and power of ``score_compare`` on crossed screens (JUMP's layout) of real profiles.

Every pair starts from ``digits_crossed_screen(seed=i, mix=(0.3, 0.8))``: 240 compounds x 4 replicates
on 32 plates (each replicate on its own plate, drawn at random), 8 controls a plate; a compound's well mixes
a control image with an image of its digit at a strength drawn per compound. Every plate is linked to
every other by compounds, so the screen is one unit and ``score_compare`` uses its plate-clustered t test
(:mod:`apnull.score.nulls.crossed`). Two pipelines of the same wells, as ``benchmarks/compare.py`` builds
them for the block layout:

- **true-null pairs**: A and B each add Gaussian noise whose SD is drawn for each (pipeline, plate)
  uniformly in [1, 8] pixel units (pixels run 0..16): plate quality varies and differs between the
  pipelines, which are exchangeable. "+ plate shift": each (pipeline, plate) also shifts every well by
  its own N(0, 3^2) vector;
- **worse pairs**: A as above, B = A + N(0, w^2) on every feature, for each w of ``--worse``.

For each pair: ``score_compare``'s p-value and 95% interval of the mean delta and, for contrast, the same
deltas tested by flipping each perturbation's sign alone (9,999 random flips). The mAPs do not depend on
the number of permutations, so each side draws only ``--permutations`` (default 19) to keep a pair near a
second; the retrieved counts get no test on a crossed screen. The table gives how often p <= 0.05 with
the Clopper-Pearson 95% interval of that rate and the 95% band of a calibrated test (Binomial(pairs,
0.05)); the worse pairs give the power (p <= 0.05 and mean_delta < 0).

    python benchmarks/compare_crossed.py [--pairs 200] [--first 0] [--worse 2 4] [--only null|shift|worse]
                                         [--plates 32] [--compounds 240]
"""

from __future__ import annotations

import argparse
import time

import numpy as np
from compare import KW, band, clopper, naive_p, pipeline_pair

from apnull.score import score_compare
from apnull.score.example import digits_crossed_screen

MIX = (0.3, 0.8)


def main(argv=None):
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--pairs", type=int, default=200, help="pairs per condition")
    ap.add_argument("--first", type=int, default=0, help="seed of the first pair (pairs first .. first + pairs - 1)")
    ap.add_argument("--worse", type=float, nargs="+", default=[2.0, 4.0],
                    help="SDs of the noise that makes B worse (pixel units), one condition each")
    ap.add_argument("--only", choices=("null", "shift", "worse"), help="run one kind of condition only")
    ap.add_argument("--plates", type=int, default=32)
    ap.add_argument("--compounds", type=int, default=240)
    ap.add_argument("--permutations", type=int, default=19, help="fixed B of each side's mAP p-values")
    args = ap.parse_args(argv)
    n = args.pairs
    lo, hi = band(n)
    print(f"{n} pairs per condition; {args.compounds} compounds x 4 replicates on {args.plates} plates (crossed); a "
          f"calibrated test rejects at 0.05 in {lo:.1%} .. {hi:.1%} of true-null pairs (95% binomial band)\n")
    print(f"{'condition':<26}{'clustered t':>12}{'  (95% CI)':<18}{'per-perturbation':>18}{'CI holds 0':>12}"
          f"{'mean delta':>12}{'seconds':>9}")
    conditions = [("null", "true null", 0.0), ("shift", "true null + plate shift", 0.0)]
    conditions += [("worse", f"B = A + N(0, {w:g}^2)", w) for w in args.worse]
    for kind, label, worse in conditions:
        if args.only and kind != args.only:
            continue
        t0 = time.process_time()
        rows = []
        for i in range(args.first, args.first + n):
            res = one_pair_result(i, kind, worse, args)
            rows.append(res)
        p, naive, mean, holds = np.array(rows, dtype=float).T
        hit = (p <= 0.05) & ((mean < 0) if kind == "worse" else True)
        k = int(hit.sum())
        c_lo, c_hi = clopper(k, n)
        print(f"{label:<26}{k / n:>12.1%}  ({c_lo:.1%} .. {c_hi:.1%}){'':<1}{np.mean(naive <= 0.05):>17.1%}"
              f"{np.mean(holds):>12.1%}{mean.mean():>+12.4f}{time.process_time() - t0:>9.0f}", flush=True)
    print("\nclustered t: score_compare's p_value <= 0.05 (worse pairs: and mean_delta < 0); per-perturbation: each "
          "delta flipped alone (9,999 random flips); CI holds 0: the 95% interval of the mean delta contains 0; "
          "seconds: CPU seconds of the condition")


def one_pair_result(i, kind, worse, args):
    """(p, per-perturbation p, mean delta, interval holds 0) of pair i."""
    wells = digits_crossed_screen(i, compounds=args.compounds, plates=args.plates, mix=MIX)
    a, b = pipeline_pair(wells, i, kind, worse)
    res = score_compare(a, b, **KW, permutations=args.permutations, seed=i, threads=1)
    s = res.summary
    if s["test"] != "plate-clustered t":
        raise SystemExit(f"pair {i}: expected the plate-clustered test, got {s['test']}")
    deltas = res.groups.sort_values("Metadata_perturbation")["delta"].to_numpy()
    return s["p_value"], naive_p(deltas, i), s["mean_delta"], s["ci_low"] <= 0 <= s["ci_high"]


if __name__ == "__main__":
    main()
