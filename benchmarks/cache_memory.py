"""Memory bound of the dashboard's shared caches: fill every one past its limit, report what it holds.

Not a test. In one process (no server), this asks the caches of ``apnull.ui.cache`` and the law cache
of ``apnull.significance`` for more distinct entries than they may keep, as a server would after a
long day of visitors who all asked for different views, and prints for each cache its entries and
bytes against its bounds, then the process's resident memory (current and peak). A server adds its
own ~150 MB (Streamlit, tornado, per-session state) to the figure printed here.

    python benchmarks/cache_memory.py            # about a minute on 2 cores
    python benchmarks/cache_memory.py --scale 0.25  # a quick look (caches not full)

The requests, in this order (each distinct, so nothing is a hit):
- views: density views of K = 200 sizes and 100 draws for 120 values of M (bound 96 / 128 MB),
  which also put 24,000 per-size summaries in a cache of 8,192;
- exact tables: 1,200 sizes (bound 1,024; their laws fill the law cache's 64 entries);
- draws: 1,000,000 draws of 24 sizes (16 MB each; bound 256 MB);
- laws: Monte Carlo laws of AP with 2,000,000 draws for 24 sizes (64 MB each; bound 256 MB);
- moments: 1,200 sizes (bound 1,024).
"""

from __future__ import annotations

import argparse
import resource
import time


def rss_mb() -> float:
    with open("/proc/self/status") as f:
        for line in f:
            if line.startswith("VmRSS:"):
                return int(line.split()[1]) / 1024
    return float("nan")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--scale", type=float, default=1.0, help="fraction of the requests to make")
    args = parser.parse_args()

    from apnull import significance
    from apnull.ui import binning_cache, cache, hypergeom_cache, sampled_cache

    def count(x):
        return max(1, int(round(x * args.scale)))

    print(f"start: RSS {rss_mb():.0f} MB")
    # Ordered so that no step evicts an earlier one's entries (views put small draws in DRAWS, exact
    # tables small laws in the law cache): every cache ends full. Each result is dropped at once (a
    # list of them would keep every evicted entry alive).
    steps = [
        ("views", lambda i: cache.density_figures(1 + i, 30, 200, 100, 0, False, progress=False), 120),
        ("exact tables", lambda i: cache.cached_exact_size_summary(1 + i % 40, 1 + i // 40), 1200),
        ("draws", lambda i: cache.size_draws(10 + i, 200 + i, 1_000_000, 0), 24),
        ("laws", lambda i: cache.null_law(20 + i, 300, "ap", "mc", draws=2_000_000, seed=0), 24),
        ("moments", lambda i: cache.moments(1 + i, 1000), 1200),
        ("hypergeom", lambda i: hypergeom_cache.hypergeom_view(4 + i % 20, 200 + i, 4, 100_000, 0), 80),
        ("binning", lambda i: binning_cache.binning_view(4, 0.95, 2000, 1.05 + i / 100, "lower", "ap"), 80),
    ]
    for name, request, requests in steps:
        t0 = time.perf_counter()
        for i in range(count(requests)):
            request(i)
        print(f"filled {name:<13} in {time.perf_counter() - t0:5.1f} s; RSS {rss_mb():.0f} MB")

    law_cache = significance._CACHE
    print()
    print(f"{'cache':<16}{'entries':>9}{'max':>7}{'MB':>9}{'max MB':>9}")
    for name, memo in [("DRAWS", cache.DRAWS), ("SUMMARIES", cache.SUMMARIES), ("VIEWS", cache.VIEWS),
                       ("EXACT_SUMMARIES", cache.EXACT_SUMMARIES), ("MOMENTS", cache.MOMENTS),
                       ("null laws", law_cache), ("HG BLOCKS", hypergeom_cache.BLOCKS),
                       ("HG HYPER", hypergeom_cache.HYPER), ("HG VIEWS", hypergeom_cache.VIEWS),
                       ("BINNING VIEWS", binning_cache.VIEWS), ("SAMPLED CURVES", sampled_cache.CURVES),
                       ("SAMPLED FIGURES", sampled_cache.FIGURES)]:
        bound = "-" if memo.max_bytes is None else f"{memo.max_bytes / 2**20:.0f}"
        held = "-" if memo.max_bytes is None else f"{memo.nbytes / 2**20:.1f}"
        print(f"{name:<16}{len(memo):>9}{memo.max_entries:>7}{held:>9}{bound:>9}")
    peak = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024
    print(f"\nprocess RSS now {rss_mb():.0f} MB, peak {peak:.0f} MB")


if __name__ == "__main__":
    main()
