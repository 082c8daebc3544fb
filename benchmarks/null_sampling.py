"""Benchmark: null sampling of the reference experiment's workload W1, apnull against copairs, plus the grid law.

W1: M = 4, N = 30, sizes (M*i, N*i) for i = 1..50, 10,000 draws each, AP and Precision@R.
copairs (if installed: `pip install copairs`; it is not an apnull dependency) runs
`copairs.compute.random_ap` on the same sizes in the same process; it yields AP only.

Prints wall times (best of --repeat runs, after one warm-up that also loads the compiled kernel),
the ratio copairs / apnull, apnull's peak memory (tracemalloc: Python-side arrays; the kernel's
per-row bitsets are a few hundred bytes), and the grid law for (40, 300) with its error bound.

    python benchmarks/null_sampling.py [--repeat 3] [--draws 10000] [--sizes 50]
"""

from __future__ import annotations

import argparse
import os
import platform
import time
import tracemalloc

import numpy as np


def run_apnull(M, N, K, draws, seed=1):
    from apnull.sampling import iter_sample_grid

    return [(s.ap, s.pr) for s in iter_sample_grid(M, N, K, draws, seed)]


def run_copairs(M, N, K, draws, seed=1):
    from copairs.compute import random_ap

    return [random_ap(draws, M * i, M * i + N * i, seed) for i in range(1, K + 1)]


def best_of(fn, repeat):
    times = []
    for _ in range(repeat):
        t0 = time.perf_counter()
        fn()
        times.append(time.perf_counter() - t0)
    return min(times), times


def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--repeat", type=int, default=3)
    ap.add_argument("--draws", type=int, default=10_000)
    ap.add_argument("--sizes", type=int, default=50)
    args = ap.parse_args()
    M, N, K, D = 4, 30, args.sizes, args.draws

    print(f"machine: {platform.machine()}, {os.cpu_count()} cores, Python {platform.python_version()}")
    print(f"W1: M={M}, N={N}, sizes i=1..{K}, {D:,} draws each (AP and Precision@R)\n")

    t0 = time.perf_counter()
    run_apnull(M, N, 1, 10)  # loads (or compiles, on the very first run) the kernel
    print(f"apnull kernel load/compile: {time.perf_counter() - t0:.2f} s")

    t_ap, all_ap = best_of(lambda: run_apnull(M, N, K, D), args.repeat)
    tracemalloc.start()
    run_apnull(M, N, K, D)
    _, peak = tracemalloc.get_traced_memory()
    tracemalloc.stop()
    print(f"apnull  W1: {t_ap:.3f} s (runs: {', '.join(f'{t:.3f}' for t in all_ap)}), "
          f"peak traced memory {peak / 2**20:.1f} MB")

    try:
        import copairs  # noqa: F401
    except ImportError:
        print("copairs  W1: not installed (pip install copairs to compare)")
    else:
        t_cp, all_cp = best_of(lambda: run_copairs(M, N, K, D), max(1, min(args.repeat, 2)))
        print(f"copairs W1: {t_cp:.3f} s (runs: {', '.join(f'{t:.3f}' for t in all_cp)}), AP only")
        print(f"ratio copairs / apnull: {t_cp / t_ap:.1f}x")
        # the two samplers draw the same law: compare the largest size's AP means
        a = run_apnull(M, N, K, D)[-1][0]
        c = run_copairs(M, N, K, D)[-1]
        print(f"check, size i={K}: mean AP apnull {np.mean(a):.5f}, copairs {np.mean(c):.5f}")

    from apnull.exact import ap_law_grid, expected_ap, _grid_dp

    for m, n in [(40, 300), (20, 200), (60, 600)]:
        _grid_dp.cache_clear()
        t0 = time.perf_counter()
        law = ap_law_grid(m, n)
        dt = time.perf_counter() - t0
        print(f"grid law ({m}, {n}): {dt:.3f} s at G={law.grid_size}, quantiles within {law.error_bound:.1e}; "
              f"q95 = {law.quantile(0.95):.4f}, mean {law.mean:.6f} vs exact {expected_ap(m, n):.6f}")


if __name__ == "__main__":
    main()
