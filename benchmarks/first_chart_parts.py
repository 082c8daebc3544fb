"""Where the first chart's time goes: one fresh server and browser per run, timed inside the page.

benchmarks/cold_start.py gives one number per run (page.goto to the first chart drawn). This script
splits it, for the baseline and the apps given, into what the browser saw and when (seconds from the
navigation's start, the page's own clock):

- marks: the first stApp, h1, number input, stPlotlyChart element, plotly div and drawn trace (``trace``;
  ``trace2`` when two charts have one), seen by a MutationObserver;
- draws: per chart, each plotly event (``afterplot``, ``react``...) with its time: a chart drawn twice
  shows two;
- ws: the websocket messages (count, kB, first and last, the largest with their arrival);
- long tasks of the main thread (start + duration; PerformanceObserver "longtask"): Streamlit's
  plotly chunk is evaluated in one, both charts of a page are drawn in another;
- res: downloads over 50 kB (start -> end);
- server CPU (user + system of the server process) from goto to the chart, and in the 1.5 s after.

    python benchmarks/first_chart_parts.py --repeat 2
    python benchmarks/first_chart_parts.py --app before=/old/checkout/app.py:densities --app after=app.py:densities

``--app NAME=PATH[:url path]`` (repeatable; default the baseline and this checkout's densities page).
Each app runs from its own tree (tests/e2e/harness.start_streamlit). The measuring costs the page a
little (an observer on every DOM change), the same for every app.
"""

from __future__ import annotations

import argparse
import os
import sys
import time
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(REPO / "tests" / "e2e"))
sys.path.insert(0, str(REPO / "benchmarks"))

import harness  # noqa: E402
import page_load  # noqa: E402

PROBE = r"""
(() => {
  const T = window.__parts = {marks: {}, ws: [], longtasks: [], charts: []};
  const mark = (k) => { if (!(k in T.marks)) T.marks[k] = performance.now(); };
  const Socket = window.WebSocket;
  window.WebSocket = function (...args) {
    const ws = new Socket(...args);
    ws.addEventListener('message', ev => T.ws.push([performance.now(), ev.data.byteLength || ev.data.size || ev.data.length || 0]));
    return ws;
  };
  window.WebSocket.prototype = Socket.prototype;
  Object.assign(window.WebSocket, Socket);
  try {
    new PerformanceObserver(l => { for (const e of l.getEntries()) T.longtasks.push([e.startTime, e.duration]); })
      .observe({type: 'longtask', buffered: true});
  } catch (e) {}
  const look = () => {
    if (document.querySelector('[data-testid="stApp"]')) mark('stApp');
    if (document.querySelector('h1')) mark('h1');
    if (document.querySelector('[data-testid="stNumberInput"]')) mark('numberInput');
    if (document.querySelector('[data-testid="stPlotlyChart"]')) mark('stPlotlyChart');
    if (document.querySelector('.js-plotly-plot')) mark('plotlyDiv');
    if (document.querySelector('.js-plotly-plot g.trace')) mark('trace');
    const gds = document.querySelectorAll('.js-plotly-plot');
    if (gds.length >= 2 && Array.from(gds).slice(0, 2).every(g => g.querySelector('g.trace'))) mark('trace2');
    gds.forEach(g => {
      if (g.__part === undefined) { g.__part = T.charts.length; T.charts.push([]); }
      if (g.emit && !g.__wrapped) {  // plotly's event emitter: every later draw reports itself
        g.__wrapped = true;
        const emit = g.emit, k = g.__part;
        g.emit = function (name) {
          if (!/hover|unhover/.test(name)) T.charts[k].push([performance.now(), name.replace('plotly_', '')]);
          return emit.apply(this, arguments);
        };
      }
      const first = g.querySelector('g.trace');
      if (first && first !== g.__first) { g.__first = first; T.charts[g.__part].push([performance.now(), 'traces drawn']); }
    });
  };
  new MutationObserver(look).observe(document, {subtree: true, childList: true});
})();
"""

REPORT = """() => ({marks: __parts.marks, ws: __parts.ws, longtasks: __parts.longtasks, charts: __parts.charts,
  res: performance.getEntriesByType('resource').filter(r => r.encodedBodySize > 50000)
        .map(r => [r.name.split('/').pop(), r.startTime, r.responseEnd, r.encodedBodySize])})"""


def _server_process(base: str):
    try:
        import psutil
    except ImportError:
        return None
    port = base.rsplit(":", 1)[1]
    for proc in psutil.process_iter(["cmdline"]):
        cmd = proc.info["cmdline"] or []
        if "--server.port" in cmd and port in cmd:
            return proc
    return None


def _cpu(proc) -> float:
    if proc is None:
        return float("nan")
    times = proc.cpu_times()
    return times.user + times.system


def once(browser, app: Path, path: str) -> dict:
    """One fresh server and browser context: the page's own timings of its first chart."""
    with harness.start_streamlit(app, cwd=app.parent, timeout=120) as base:
        context = browser.new_context(viewport=harness.VIEWPORT)
        try:
            page = context.new_page()
            page.add_init_script(PROBE)
            server = _server_process(base)
            cpu0 = _cpu(server)
            t0 = time.perf_counter()
            page.goto(harness.build_url(base, path), wait_until="commit")
            page.wait_for_function("() => window.__parts && 'trace' in window.__parts.marks",
                                   timeout=120_000, polling=50)
            chart = time.perf_counter() - t0
            cpu1 = _cpu(server)
            page.wait_for_timeout(1500)
            cpu2 = _cpu(server)
            out = page.evaluate(REPORT)
            problems = harness.page_problems(page)
            if problems:
                raise RuntimeError(f"{app}/{path}: {problems[0][:200]}")
        finally:
            context.close()
    out.update(chart=chart, server_cpu=(cpu1 - cpu0, cpu2 - cpu1))
    return out


def show(name: str, r: dict) -> None:
    s = 1000.0
    print(f"== {name}: first chart {r['chart']:.2f} s after goto; server CPU {r['server_cpu'][0]:.2f} s until "
          f"then, {r['server_cpu'][1]:.2f} s in the next 1.5 s")
    print("  marks:", " ".join(f"{k}={v / s:.2f}" for k, v in sorted(r["marks"].items(), key=lambda kv: kv[1])))
    for k, events in enumerate(r["charts"]):
        print(f"  chart {k}:", ", ".join(f"{t / s:.2f} {what}" for t, what in events))
    ws = r["ws"]
    if ws:
        big = sorted(ws, key=lambda w: -w[1])[:3]
        print(f"  ws: {len(ws)} messages, {sum(n for _, n in ws) / 1e3:.0f} kB, first {ws[0][0] / s:.2f}, last "
              f"{ws[-1][0] / s:.2f}; largest " + ", ".join(f"{n / 1e3:.0f} kB at {t / s:.2f}" for t, n in big))
    long = r["longtasks"]
    print(f"  long tasks: {len(long)}, {sum(d for _, d in long) / s:.2f} s in all; over 0.1 s: "
          + ", ".join(f"{t / s:.2f}+{d / s:.2f}" for t, d in long if d > 100))
    for res, start, end, size in sorted(r["res"], key=lambda x: x[1]):
        print(f"  res {res[:48]:<48} {start / s:.2f} -> {end / s:.2f} ({size / 1e3:.0f} kB)")


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--app", action="append", default=None, metavar="NAME=PATH[:URL_PATH]",
                    help="an app to time (repeatable); default: the baseline and this checkout's densities page")
    ap.add_argument("--repeat", type=int, default=1, help="rounds (the apps interleaved in each)")
    args = ap.parse_args(argv)
    if harness.find_chromium() is None or not harness.playwright_available():
        print(harness.SKIP_MESSAGE, file=sys.stderr)
        return 2
    specs = args.app or [f"baseline={page_load.BASELINE_APP}:", f"app={REPO / 'app.py'}:densities"]
    apps = []
    for spec in specs:
        name, _, rest = spec.partition("=")
        path, _, url_path = rest.partition(":")
        apps.append((name, Path(path).resolve(), url_path))
    from playwright.sync_api import sync_playwright

    with sync_playwright() as pw:
        browser = harness.launch_browser(pw)
        try:
            for r in range(args.repeat):
                for name, app, url_path in apps:
                    show(name, once(browser, app, url_path))
                    print(f"  load average {os.getloadavg()[0]:.1f}", flush=True)
        finally:
            browser.close()
    return 0


if __name__ == "__main__":
    sys.exit(main())
