"""Timings of far-tail p-values: the counting scan, and per-query p-values of ``score``.

1. ``apnull.significance.tail_pvalue`` for a few (value, m, n): the p, its guaranteed range, its
   relative error and log10, where it came from, and the time (laws are computed first, untimed:
   what is timed is resolving the p-value; the compiled kernel is loaded first, once per process).
2. Per-query p-values (``LawCache.query_pvalues``) against the law's own ``pvalue`` (what they were
   before far tails were counted), on the bundled digits screen (44 queries) and on 1,000 queries of
   4-replicate perturbations (m = 3) against 100 to 1,000 controls, a tenth of them strong (AP near 1).

    python benchmarks/tail_pvalue.py
"""

from __future__ import annotations

import time

import numpy as np

import apnull
from apnull.score import score_profiles
from apnull.score.example import digits_screen
from apnull.score.nulls.laws import LawCache
from apnull.significance import null_distribution, tail_pvalue

CASES = [(1.0, 30, 240), (0.95, 30, 240), (0.6, 30, 240), (1.0, 100, 1000), (0.7, 100, 1000),
         (0.25, 40, 300), (1.0, 500, 5000), (0.999, 3, 999_997)]


def best_of(fn, repeat=3):
    times = []
    for _ in range(repeat):
        t0 = time.perf_counter()
        out = fn()
        times.append(time.perf_counter() - t0)
    return out, min(times)


def tails() -> None:
    from apnull.tail import tail_bounds

    tail_bounds(1.0, 3, 5)  # load the compiled kernel: not timed below
    print(f"{'value':>6} {'m':>4} {'n':>8}  {'p':>10}  {'range':>25}  {'rel.err':>8}  {'log10 p':>11}  "
          f"{'source':>10}  {'ms':>7}")
    for x, m, n in CASES:
        null_distribution(m, n, seed=0)
        t0 = time.perf_counter()
        r = tail_pvalue(x, m, n, seed=0)
        ms = 1e3 * (time.perf_counter() - t0)
        print(f"{x:6g} {m:4d} {n:8d}  {r.p:10.4g}  [{r.low:10.4g}, {r.high:10.4g}]  {r.rel_error:8.2g}  "
              f"{r.log10_p:11.4f}  {r.source:>10}  {ms:7.1f}")


def per_query(name, ms, ns, aps) -> None:
    laws = LawCache(0)
    for m, n in set(zip(ms, ns)):
        laws.law(m, n)  # laws first: they are the same before and after
    before, t_before = best_of(lambda: np.array([float(laws.law(m, n).pvalue(a)) for m, n, a in zip(ms, ns, aps)]))
    after, t_after = best_of(lambda: laws.query_pvalues(ms, ns, aps))
    print(f"{name}: {len(aps)} queries, {len(set(zip(ms, ns)))} sizes; law p-values {1e3 * t_before:.1f} ms, "
          f"resolved {1e3 * t_after:.1f} ms (tail cache warm; first call below); "
          f"zero p-values {int(np.sum(before == 0))} -> {int(np.sum(after == 0))}; "
          f"smallest p {before.min():.3g} -> {after.min():.3g}")


def first_call(name, ms, ns, aps) -> None:
    from apnull.tail import tail_bounds

    tail_bounds.cache_clear()
    laws = LawCache(0)
    for m, n in set(zip(ms, ns)):
        laws.law(m, n)
    t0 = time.perf_counter()
    laws.query_pvalues(ms, ns, aps)
    print(f"{name}: first call, tail cache empty: {1e3 * (time.perf_counter() - t0):.1f} ms")


def main() -> None:
    tails()
    res = score_profiles(digits_screen(), "Metadata_perturbation", "DMSO", permutations=99, seed=0)
    q = res.queries
    args = (q["m"].to_list(), q["n"].to_list(), q["ap"].to_numpy())
    per_query("digits screen", *args)
    first_call("digits screen", *args)
    rng = np.random.default_rng(0)
    k = 1000
    ns = rng.choice([100, 250, 500, 1000], size=k).tolist()
    ms = [3] * k
    aps = np.array([apnull.average_precision(np.isin(np.arange(3 + n), rng.choice(3 + n, 3, replace=False)))
                    for n in ns])
    strong = rng.random(k) < 0.1
    aps[strong] = rng.choice([1.0, 0.8333333333333334, 0.7777777777777778], size=int(strong.sum()))
    per_query("1,000 queries", ms, ns, aps)
    first_call("1,000 queries", ms, ns, aps)


if __name__ == "__main__":
    main()
