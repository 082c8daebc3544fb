"""One page at a time, alone and beside a busy Python thread: what a page costs under concurrency.

Not a test. A server holding a class runs many sessions' scripts in one process; each waits for the
GIL whenever another holds it. A page that makes many small numpy calls (each releases and retakes
the GIL) or pickles ``st.cache_data`` entries on every rerun slows down far more beside other busy
threads than a page that makes one compiled call per batch. That is measurable on a shared, busy
machine too: this script runs ONE page in a fresh process through Streamlit's AppTest (tests/apptest.py,
dashboard.py's navigation), after the server's warm-up (``apnull.ui.warmup``) has finished, as app.py
waits for it, and times

- ``cold``: the first run of the page in the process (its first visitor; caches empty);
- ``warm``: the median of reruns after changing one input to values not asked before (the same input
  a student changes in ``benchmarks/load.py --lesson all``; cache misses, code warm);
- ``hit``: a rerun with a value asked before (cache hit);

once alone (``busy 0``) and once with one pure-Python busy thread beside the script (``busy 1``). The
``x`` column is busy / alone: close to 1 for a page whose work holds the GIL in few long calls.

With ``--against DIR`` (default: /work/main when it exists) every measurement runs for that checkout
too, in the same invocation and interleaved (each a subprocess with PYTHONPATH=DIR/src and DIR's
dashboard.py), so both trees see the same machine load.

    python benchmarks/page_busy.py                                  # every page, this tree and main
    python benchmarks/page_busy.py --pages hypergeometric sampled --repeat 2
    python benchmarks/page_busy.py --against none                   # this tree only

Each line: tree, page, busy, seconds for the warm-up, cold, warm (median), hit; numbers are the
median over --repeat processes.
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import subprocess
import sys
import threading
import time
from pathlib import Path

HERE = Path(__file__).resolve().parents[1]
#: page -> (widget key, values for warm reruns: each new in the process; the last repeats the first)
PLAN = {
    "densities": ("dn_M", (5, 6, 8, 5)),
    "quantiles": ("qt_M", (5, 6, 8, 5)),
    "lookup": ("lk_m", (5, 8, 10, 5)),
    "binning": ("bn_power", (1.2, 1.5, 2.0, 1.2)),
    "hypergeometric": ("hg_k", (2, 5, 8, 2)),
    "ranking": ("rk_k", (2, 5, 6, 2)),
    "sampled": ("sm_k", (5, 20, 50, 5)),
    "score": ("", ()),
}


def busy_loop(stop: threading.Event) -> None:
    """Pure Python work that wants the GIL all the time (another session's script, say)."""
    x = 0
    while not stop.is_set():
        for i in range(1000):
            x += i * i


def child(tree: Path, page: str, busy: bool, switch: float = 0.0) -> dict:
    sys.path.insert(0, str(tree / "tests"))
    os.chdir(tree)
    from apptest import AppTest, assert_clean, find_widget  # noqa: E402

    from apnull.ui import warmup

    t0 = time.perf_counter()
    if switch:
        sys.setswitchinterval(switch)
    warmup.start()
    try:
        warmup.wait(600, everything=True)
    except TypeError:  # a checkout whose warm-up has one phase
        warmup.wait(600)
    out = {"warmup": time.perf_counter() - t0}
    stop = threading.Event()
    if busy:
        threading.Thread(target=busy_loop, args=(stop,), daemon=True).start()
    try:
        at = AppTest.from_file(str(tree / "dashboard.py"), default_timeout=600)
        at.run()
        at.switch_page(f"app_pages/{page}.py")
        t0 = time.perf_counter()
        at.run()
        out["cold"] = time.perf_counter() - t0
        assert_clean(at)
        key, values = PLAN[page]
        times = []
        for value in values:
            find_widget(at, key).set_value(value)
            t0 = time.perf_counter()
            at.run()
            times.append(time.perf_counter() - t0)
            assert_clean(at)
        if not values:  # no input: a plain rerun (everything cached)
            t0 = time.perf_counter()
            at.run()
            times.append(time.perf_counter() - t0)
        out["warm"] = statistics.median(times[:-1]) if len(times) > 1 else float("nan")
        out["hit"] = times[-1]
    finally:
        stop.set()
    return out


def measure(tree: Path, page: str, busy: bool, switch: float = 0.0) -> dict:
    env = dict(os.environ, PYTHONPATH=str(tree / "src"))
    cmd = [sys.executable, str(Path(__file__).resolve()), "--child", str(tree), page, str(int(busy)), str(switch)]
    proc = subprocess.run(cmd, env=env, capture_output=True, text=True, timeout=1800)
    lines = [ln for ln in proc.stdout.splitlines() if ln.startswith("{")]
    if proc.returncode or not lines:
        tail = (proc.stderr or proc.stdout).strip().splitlines()[-3:]
        return {"error": " | ".join(tail)}
    return json.loads(lines[-1])


def main(argv: list[str] | None = None) -> int:
    argv = sys.argv[1:] if argv is None else argv
    if argv[:1] == ["--child"]:
        print(json.dumps(child(Path(argv[1]), argv[2], argv[3] == "1", float(argv[4]))))
        return 0
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--pages", nargs="+", choices=list(PLAN), default=list(PLAN))
    ap.add_argument("--against", default="/work/main" if Path("/work/main/dashboard.py").exists() else "none",
                    help="another checkout to measure in the same run ('none': this tree only)")
    ap.add_argument("--repeat", type=int, default=1, help="processes per (tree, page, busy); the median is shown")
    ap.add_argument("--busy", choices=("0", "1", "both"), default="both")
    ap.add_argument("--switch", type=float, default=0.0,
                    help="sys.setswitchinterval in the page's process (seconds; 0: Python's default, 0.005)")
    args = ap.parse_args(argv)
    trees = [("this", HERE)] + ([] if args.against == "none" else [("against", Path(args.against).resolve())])
    busies = [False, True] if args.busy == "both" else [args.busy == "1"]
    print(f"{'tree':<8} {'page':<15} {'busy':>4} {'warmup':>7} {'cold':>7} {'warm':>7} {'hit':>7}  x(warm)")
    for page in args.pages:
        alone = {}
        for busy in busies:
            for name, tree in trees:
                runs = [measure(tree, page, busy, args.switch) for _ in range(args.repeat)]
                good = [r for r in runs if "error" not in r]
                if not good:
                    print(f"{name:<8} {page:<15} {int(busy):>4}  error: {runs[0]['error'][:200]}")
                    continue
                med = {k: statistics.median(r[k] for r in good) for k in ("warmup", "cold", "warm", "hit")}
                ratio = ""
                if busy and name in alone and alone[name] > 0:
                    ratio = f"{med['warm'] / alone[name]:.1f}x" if med["warm"] == med["warm"] else ""
                if not busy:
                    alone[name] = med["warm"] if med["warm"] == med["warm"] else med["hit"]
                print(f"{name:<8} {page:<15} {int(busy):>4} {med['warmup']:>7.2f} {med['cold']:>7.2f} "
                      f"{med['warm']:>7.2f} {med['hit']:>7.2f}  {ratio}", flush=True)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
