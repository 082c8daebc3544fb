"""Cold start, interleaved: first chart on a fresh server for the baseline and one or more apps.

benchmarks/page_load.py measures every cold run of the baseline first and then every cold run of
the app; on a shared 2-core machine the load changes between the two blocks, which moves the
ratio by more than the effect being measured. This script reuses page_load's ``time_to_chart``
but runs the apps round-robin (the order rotates every round), so each app sees the same load
on average, and it can compare two versions of the app (e.g. before/after a warm-up) in one run:

    python benchmarks/cold_start.py --repeat 7
    python benchmarks/cold_start.py --app before=/tmp/old/app.py --app after=app.py --repeat 7

Each run: a fresh ``streamlit run`` (harness.start_streamlit), a fresh browser context, time from
page.goto to the first plotly chart with a trace drawn (median reported; the ratio is the app's
median over the baseline's). The server start (launch to a healthy /_stcore/health) is reported
too, and the ratio of start + first chart: app.py warms the numba kernel before the server
answers, so that work moves from the first page to the start. Prints the load average before and after.
"""

from __future__ import annotations

import argparse
import os
import statistics
import sys
import time
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(REPO / "tests" / "e2e"))
sys.path.insert(0, str(REPO / "benchmarks"))

import harness  # noqa: E402
import page_load  # noqa: E402


def cold_once(browser, app: Path, path: str) -> dict[str, float]:
    t0 = time.perf_counter()
    with harness.start_streamlit(app, cwd=app.parent, timeout=120) as base:
        started = time.perf_counter() - t0
        page = harness.new_page(browser)
        try:
            phases: dict[str, float] = {}
            page_load.time_to_chart(page, harness.build_url(base, path), phases=phases)
            problems = harness.page_problems(page)
            if problems:
                raise RuntimeError(f"{app.name}/{path}: {problems[0][:200]}")
        finally:
            page.context.close()
    return {"start": started, **phases}


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--app", action="append", default=None, metavar="NAME=PATH",
                    help="an app to time (repeatable); default app=<repo>/app.py")
    ap.add_argument("--path", default="densities", help="url path of the app page (default densities)")
    ap.add_argument("--baseline", default=str(page_load.BASELINE_APP))
    ap.add_argument("--repeat", type=int, default=5)
    args = ap.parse_args(argv)
    if harness.find_chromium() is None or not harness.playwright_available():
        print(harness.SKIP_MESSAGE, file=sys.stderr)
        return 2
    apps = [("baseline", Path(args.baseline).resolve(), "")]
    for spec in args.app or [f"app={REPO / 'app.py'}"]:
        name, _, path = spec.partition("=")
        apps.append((name, Path(path).resolve(), args.path))
    times: dict[str, list[dict[str, float]]] = {name: [] for name, _, _ in apps}
    load0 = os.getloadavg()
    from playwright.sync_api import sync_playwright

    with sync_playwright() as pw:
        browser = harness.launch_browser(pw)
        try:
            # one unmeasured run per app: numba's on-disk cache, .pyc files, the OS page cache
            for name, app, path in apps:
                cold_once(browser, app, path)
            for r in range(args.repeat):
                order = apps[r % len(apps):] + apps[:r % len(apps)]
                for name, app, path in order:
                    res = cold_once(browser, app, path)
                    times[name].append(res)
                    print(f"round {r + 1} {name:>10}: chart {res['chart']:.2f} s (shell {res['shell']:.2f}, "
                          f"run {res.get('run', float('nan')):.2f}) load {os.getloadavg()[0]:.1f}",
                          file=sys.stderr, flush=True)
        finally:
            browser.close()
    load1 = os.getloadavg()
    base = statistics.median(t["chart"] for t in times["baseline"])
    print(f"cold start, {args.repeat} interleaved runs per app, {os.cpu_count()} cpus; load average "
          f"before {' '.join(f'{x:.1f}' for x in load0)}, after {' '.join(f'{x:.1f}' for x in load1)}")
    print(f"{'app':<12} {'chart median':>12} {'min':>6} {'max':>6} {'run median':>10} {'ratio':>6} "
          f"{'server start':>12} {'start+chart ratio':>17}")
    base_total = statistics.median(t["chart"] + t["start"] for t in times["baseline"])
    for name, _, path in apps:
        charts = [t["chart"] for t in times[name]]
        runs = [t["run"] for t in times[name] if "run" in t]
        med = statistics.median(charts)
        start = statistics.median(t["start"] for t in times[name])
        total = statistics.median(t["chart"] + t["start"] for t in times[name])
        print(f"{name:<12} {med:>10.2f} s {min(charts):>6.2f} {max(charts):>6.2f} "
              f"{statistics.median(runs):>8.2f} s {med / base:>5.2f}x {start:>10.2f} s {total / base_total:>16.2f}x")
    return 0


if __name__ == "__main__":
    sys.exit(main())
