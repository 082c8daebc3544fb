"""What one rerun of each page costs the server: one user through ``load.py --lesson all``, alone.

    python benchmarks/rerun_cost.py                      # this checkout's app.py, 3 measured rounds
    python benchmarks/rerun_cost.py --app /other/checkout/app.py --rounds 5

One ``streamlit run`` (tests/e2e/harness.start_streamlit) and one websocket user (benchmarks/load.py's
``WsSession``, the browser's protocol) doing the lesson of ``load.py --lesson all``: every page, one
input changed on each, then the score page (a new FDR level, a click on the volcano). A first round
fills the caches and is not counted; then, per interaction, the median over ``--rounds`` rounds of the
messages the server sent (each element of a run is one message handed to the server's event loop) and of
the server's CPU time (user + system of its process, read before and after; Linux counts it in 10 ms
ticks, so single values are coarse and the total is the figure to compare). With one user nothing waits
for anything, so the CPU seconds depend little on the machine's load: under a class of 30
(load.py), latency is roughly a rerun's CPU times the sessions running at once.
"""

from __future__ import annotations

import argparse
import asyncio
import os
import random
import statistics
import sys
from collections import defaultdict
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(REPO / "tests" / "e2e"))
sys.path.insert(0, str(REPO / "benchmarks"))

import harness  # noqa: E402
import load  # noqa: E402


def server_process(port: int):
    import psutil

    for proc in psutil.Process().children(recursive=True):
        try:
            if "streamlit" in " ".join(proc.cmdline()) and str(port) in proc.cmdline():
                return proc
        except psutil.Error:
            continue
    raise RuntimeError(f"no streamlit server on port {port}")


async def measure(base: str, proc, rounds: int, settle: float) -> tuple[dict, dict]:
    session = load.WsSession(base, 120)
    sent = [0]
    handle = session._handle

    def counting(msg):
        sent[0] += 1
        handle(msg)

    session._handle = counting
    rng = random.Random(1)
    messages, cpu = defaultdict(list), defaultdict(list)
    await asyncio.sleep(settle)  # the warm-up's second phase runs while the server is idle
    for rnd in range(rounds + 1):
        for step, action in load.lesson_plan("all", session, rng, rnd):
            await asyncio.sleep(0.3)
            c0, m0 = sum(proc.cpu_times()[:2]), sent[0]
            await action()
            await asyncio.sleep(0.2)  # the messages after the run's end, the session's last bookkeeping
            if rnd:
                cpu[step].append(sum(proc.cpu_times()[:2]) - c0)
                messages[step].append(sent[0] - m0)
    await session.close()
    return messages, cpu


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--app", default=str(REPO / "app.py"))
    ap.add_argument("--rounds", type=int, default=3, help="measured rounds (after one unmeasured)")
    ap.add_argument("--settle", type=float, default=8.0, help="seconds idle before the user starts")
    args = ap.parse_args(argv)
    app = Path(args.app).resolve()
    load0 = os.getloadavg()
    with harness.start_streamlit(app, cwd=app.parent, timeout=180) as base:
        proc = server_process(int(base.rsplit(":", 1)[1]))
        messages, cpu = asyncio.run(measure(base, proc, args.rounds, args.settle))
    load1 = os.getloadavg()
    print(f"{app}: one user, {args.rounds} measured rounds; load average before {load0[0]:.1f}, after {load1[0]:.1f}")
    print(f"{'interaction':<22} {'messages':>8} {'server CPU ms':>13}")
    total = 0.0
    for step in load.ALL_INTERACTIONS:
        med = statistics.median(cpu[step])
        total += med
        print(f"{step:<22} {statistics.median(messages[step]):>8.0f} {med * 1000:>13.0f}")
    print(f"{'lesson':<22} {sum(statistics.median(m) for m in messages.values()):>8.0f} {total * 1000:>13.0f}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
