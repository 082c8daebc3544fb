"""Calibration and power of ``score_compare`` on real profiles (scikit-learn's digits), with plate-varying nuisance.

Every pair starts from a screen of real images (``digits_plate_screen(seed=i, plates=20, controls=10,
digits=3, weak=1, nulls=1, control_digits=range(10))``: 20 plates, each with 10 controls (images of one
digit, a different digit from plate to plate) and 5 perturbations of 3 replicate wells, every
perturbation on one plate) and builds two pipelines of the same wells:

- **true-null pairs**: A and B each add to every well Gaussian noise whose SD is drawn for each
  (pipeline, plate) uniformly in [1, 8] pixel units (the pixels run 0..16): plate quality varies, and
  a pipeline may handle a plate well while the other handles it badly; the two pipelines are
  exchangeable. In the layout "+ plate shift" each (pipeline, plate) also shifts every well by its own
  N(0, 3^2) vector (a batch effect).
- **worse pairs**: A as above, B = A + N(0, w^2) noise on every feature (A degraded), for each w of
  ``--worse``.

For each pair: ``score_compare``'s p-values (the mean delta, and the retrieved counts) (sign flips of whole plates: 2^20 flips are too many to
enumerate, so ``--permutations`` random ones), and for contrast the same engine flipping each
perturbation's delta alone (each perturbation its own unit, 9,999 random flips) and flipping each
plate's retrieved flags (as if Benjamini-Hochberg did not couple the plates). The table gives how often p <= 0.05 with the 95% binomial band of a calibrated
test (Binomial(pairs, 0.05)) and the Clopper-Pearson 95% interval of the rate; the worse pairs give the
power (p <= 0.05 and mean_delta < 0). ``--permutations`` (fixed B) is each side's B and the number of
random flips.

    python benchmarks/compare.py [--pairs 200] [--worse 4 6] [--permutations 999] [--plates 20] [--first 0]
                                 [--only null|shift|worse]
"""

from __future__ import annotations

import argparse
import time

import numpy as np
from scipy.stats import beta, binom

from apnull.score import score_compare
from apnull.score.engine.sequential import resolve, rounds_of
from apnull.score.example import digits_plate_screen
from apnull.score.nulls.compare import FlipWork, flip_null

LAYOUT = dict(plates=20, controls=10, digits=3, weak=1, nulls=1, control_digits=tuple(range(10)))
KW = dict(key=["Metadata_plate", "Metadata_well"], perturbation="Metadata_perturbation", control="DMSO",
          stratum="Metadata_plate")
SD_RANGE = (1.0, 8.0)
SHIFT_SD = 3.0


def pipeline(table, rng, shift=False):
    """The wells of ``table`` through a pipeline whose noise SD (and with ``shift`` a batch shift) varies by plate."""
    out = table.copy()
    cols = [c for c in out.columns if c.startswith("px_")]
    values = out[cols].to_numpy(dtype=float, copy=True)
    plates = out["Metadata_plate"].to_numpy()
    for plate in sorted(set(plates)):
        rows = plates == plate
        values[rows] += rng.normal(scale=rng.uniform(*SD_RANGE), size=(rows.sum(), len(cols)))
        if shift:
            values[rows] += rng.normal(scale=SHIFT_SD, size=len(cols))
    out[cols] = values
    return out


def naive_p(values, seed):
    """A sign-flip test of the sum of ``values`` (each entry its own unit; 9,999 random flips): the naive
    tests shown for contrast."""
    work = FlipWork(np.asarray(values, dtype=float)[None, :], ["naive"], seed)
    return float(resolve(flip_null(work, 0), rounds_of(9999), threads=1).p_value[0])


def flags_p(groups, seed):
    """The retrieved counts tested by flipping each plate's retrieved flags (B only minus A only), as if
    Benjamini-Hochberg did not couple the plates."""
    e = (groups["retrieved"] == "B only").astype(float) - (groups["retrieved"] == "A only").astype(float)
    return naive_p(e.groupby(groups["unit"]).sum().to_numpy(), seed)


def pipeline_pair(wells, i, kind, worse):
    """Tables A and B of the wells ``wells`` for pair ``i``: "null" and "shift" pairs go through two
    exchangeable pipelines (:func:`pipeline`), a "worse" pair's B is A plus N(0, ``worse``^2) on every
    feature. Pair i's noise comes from one generator seeded 10,000 + i."""
    rng = np.random.default_rng(10_000 + i)
    a = pipeline(wells, rng, shift=kind == "shift")
    if kind == "worse":
        b = a.copy()
        cols = [c for c in b.columns if c.startswith("px_")]
        b[cols] = b[cols].to_numpy() + rng.normal(scale=worse, size=(len(b), len(cols)))
    else:
        b = pipeline(wells, rng, shift=kind == "shift")
    return a, b


def one_pair(i, kind, worse, permutations, plates=20):
    a, b = pipeline_pair(digits_plate_screen(seed=i, **dict(LAYOUT, plates=plates)), i, kind, worse)
    res = score_compare(a, b, **KW, permutations=permutations, seed=i)
    s = res.summary
    return (s["p_value"], naive_p(res.groups["delta"].to_numpy(), i), s["mean_delta"], s["retrieved_p_value"],
            flags_p(res.groups, i), s["ci_low"] <= 0 <= s["ci_high"])


def band(pairs, rate=0.05):
    return binom.ppf(0.025, pairs, rate) / pairs, binom.ppf(0.975, pairs, rate) / pairs


def clopper(k, n):
    lo = beta.ppf(0.025, k, n - k + 1) if k else 0.0
    hi = beta.ppf(0.975, k + 1, n - k) if k < n else 1.0
    return lo, hi


def main(argv=None):
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--pairs", type=int, default=200, help="pairs per condition")
    ap.add_argument("--worse", type=float, nargs="+", default=[4.0, 6.0],
                    help="SDs of the noise that makes B worse (pixel units), one condition each")
    ap.add_argument("--plates", type=int, default=20, help="plates (units) of each screen")
    ap.add_argument("--first", type=int, default=0, help="seed of the first pair (pairs first .. first + pairs - 1)")
    ap.add_argument("--only", choices=("null", "shift", "worse"), help="run one kind of condition only")
    ap.add_argument("--permutations", type=int, default=999,
                    help="fixed B of each side's mAP p-values, and the number of random sign flips")
    args = ap.parse_args(argv)
    n = args.pairs
    lo, hi = band(n)
    print(f"{n} pairs per condition; {args.plates} plates (units), {5 * args.plates} perturbations a pair; a "
          f"calibrated test rejects "
          f"at 0.05 in {lo:.1%} .. {hi:.1%} of true-null pairs (95% binomial band)\n")
    print(f"{'condition':<28}{'unit flips':>12}{'  (95% CI)':<18}{'per-perturbation':>18}{'retrieved test':>16}"
          f"{'flags flipped':>15}{'CI holds 0':>12}{'mean delta':>12}{'seconds':>9}")
    conditions = [("null", "true null", 0.0), ("shift", "true null + plate shift", 0.0)]
    conditions += [("worse", f"B = A + N(0, {w:g}^2)", w) for w in args.worse]
    for kind, label, worse in conditions:
        if args.only and kind != args.only:
            continue
        t0 = time.process_time()
        rows = np.array([one_pair(i, kind, worse, args.permutations, args.plates)
                         for i in range(args.first, args.first + n)], dtype=float)
        p, naive, mean, rp, flags, holds = rows.T
        hit = (p <= 0.05) & ((mean < 0) if kind == "worse" else True)
        k = int(hit.sum())
        c_lo, c_hi = clopper(k, n)
        print(f"{label:<28}{k / n:>12.1%}  ({c_lo:.1%} .. {c_hi:.1%}){'':<1}{np.mean(naive <= 0.05):>17.1%}"
              f"{np.mean(rp <= 0.05):>16.1%}{np.mean(flags <= 0.05):>15.1%}{np.mean(holds):>12.1%}{mean.mean():>+12.4f}"
              f"{time.process_time() - t0:>9.0f}", flush=True)
    print("\nunit flips: score_compare's p_value <= 0.05 (worse pairs: and mean_delta < 0); per-perturbation: "
          "each delta flipped alone; retrieved test: score_compare's paired test of the retrieved counts (BH "
          "counted again under each flip); flags flipped: each plate's retrieved flags flipped instead; CI holds "
          "0: the 95% interval of the mean delta contains 0; seconds: CPU seconds of the condition")


if __name__ == "__main__":
    main()
