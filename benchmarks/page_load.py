"""Page-load benchmark: how long until the first chart is drawn, against a one-chart baseline.

Not a test. In one run it measures, in headless Chromium (the system one; see
tests/e2e/harness.py), for benchmarks/baseline_app.py and then for the dashboard (app.py):

- cold: a fresh Streamlit server per run (its caches and the app's imports are cold) and a fresh
  browser context (empty HTTP cache); time from page.goto to the first plotly chart with a
  trace drawn.  Median over --repeat runs.  The server start itself (spawn until
  /_stcore/health says ok) is reported apart.
- warm reload: on one server that has served the page once, page.reload() until the chart is
  drawn again (new session, warm server caches, warm browser cache).
- warm rerun: the "R" key on a loaded page until the rerun has finished and charts are drawn.

    python benchmarks/page_load.py                       # baseline + app.py, first page
    python benchmarks/page_load.py --path null_law --repeat 5
    python benchmarks/page_load.py --edit-latency --edit-path ranking --edit-label "Items"

--edit-latency adds, for the page at --edit-path, the time from committing a new value in a
number input (--edit-label, default: the first on the page) to the first chart's data changing.
The building blocks (time_to_chart, time_reload, time_rerun, time_edit) take a page and are
meant to be reused for other measurements.
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import sys
import time
from dataclasses import dataclass, field
from pathlib import Path
from typing import Callable

REPO = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(REPO / "tests" / "e2e"))

import harness  # noqa: E402

BASELINE_APP = REPO / "benchmarks" / "baseline_app.py"


# --- building blocks -------------------------------------------------------------------------
_CHARTS_DRAWN = (
    "([sel, marks, n]) => { const gds = document.querySelectorAll(sel);"
    " return gds.length >= n && Array.from(gds).every("
    "   gd => gd.querySelector('svg.main-svg') && gd.querySelectorAll(marks).length > 0); }"
)


def time_to_chart(page, url: str, *, min_count: int = 1, timeout: float = 120_000,
                  phases: dict[str, float] | None = None) -> float:
    """Seconds from page.goto(url) to min_count plotly charts with a trace drawn.

    phases, if given, receives the seconds (from goto) to "shell" (the stApp element exists),
    "run" (the server reported the first script run finished) and "chart".
    """
    tracker = harness.track_runs(page)
    finished0 = tracker.finished if tracker else 0
    phases = {} if phases is None else phases
    t0 = time.perf_counter()
    page.goto(url, wait_until="commit", timeout=timeout)
    page.wait_for_selector(harness.APP, state="attached", timeout=timeout)
    phases["shell"] = time.perf_counter() - t0
    deadline = t0 + timeout / 1000
    while "chart" not in phases:
        now = time.perf_counter()
        if "run" not in phases and tracker is not None and tracker.finished > finished0:
            phases["run"] = now - t0
        if page.evaluate(_CHARTS_DRAWN, [harness.PLOTLY_DIV, harness.TRACE_MARKS, min_count]):
            phases["chart"] = time.perf_counter() - t0
        elif now > deadline:
            raise TimeoutError(f"no rendered chart at {url} after {timeout / 1000:.0f} s")
        elif "run" in phases and (texts := harness.page_problems(page)):
            raise RuntimeError(f"{url} shows an exception: {texts[0][:300]}")
        elif ("run" in phases and now - t0 - phases["run"] > 5
              and page.locator(harness.PLOTLY_CHART).count() < min_count):
            raise RuntimeError(f"{url} has fewer than {min_count} plotly chart(s) 5 s after its run "
                               "(choose a page with a chart: --path <url_path>)")
        else:
            page.wait_for_timeout(20)
    if "run" not in phases and tracker is not None:  # chart drawn before the run finished
        while tracker.finished <= finished0 and time.perf_counter() < deadline:
            page.wait_for_timeout(20)
        phases["run"] = time.perf_counter() - t0
    return phases["chart"]


def time_reload(page, *, min_count: int = 1, timeout: float = 120_000) -> float:
    """Seconds from page.reload() to the chart drawn again (a new session on the same server)."""
    t0 = time.perf_counter()
    page.reload(wait_until="commit", timeout=timeout)
    harness.wait_charts(page, min_count, timeout=timeout)
    return time.perf_counter() - t0


def time_rerun(page, *, min_count: int = 1, timeout: float = 120_000) -> float:
    """Seconds from pressing "R" to the rerun finished and charts drawn (same session)."""
    page.evaluate("() => document.activeElement && document.activeElement.blur()")
    mark = harness.run_mark(page)
    t0 = time.perf_counter()
    page.keyboard.press("r")
    harness.wait_idle(page, since=mark, timeout=timeout, settle=0)
    harness.wait_charts(page, min_count, timeout=timeout)
    return time.perf_counter() - t0


_CHART_JSON = "gd => JSON.stringify(gd.data || [])"


def time_edit(page, action: Callable[[], None], *, chart: int = 0,
              timeout: float = 120_000) -> float:
    """Seconds from action() (e.g. fill + Enter) to the chart-th chart's data changing."""
    gd = harness.plotly_charts(page).nth(chart)
    before = gd.evaluate(_CHART_JSON)
    t0 = time.perf_counter()
    action()
    page.wait_for_function(
        "([sel, i, old]) => { const gd = document.querySelectorAll(sel)[i];"
        " return gd && JSON.stringify(gd.data || []) !== old; }",
        arg=[harness.PLOTLY_DIV, chart, before], timeout=timeout, polling="raf")
    elapsed = time.perf_counter() - t0
    harness.wait_idle(page, timeout=timeout)
    return elapsed


def edit_number(page, label: str | None, value) -> Callable[[], None]:
    """An action for time_edit: type value into the number input labelled label (or the first)."""
    box = (harness.number_input(page, label) if label
           else page.locator('input[data-testid="stNumberInputField"]').first)

    def action() -> None:
        box.fill(str(value))
        box.press("Enter")

    return action


# --- measurements ----------------------------------------------------------------------------
@dataclass
class Result:
    name: str
    cold: list[float] = field(default_factory=list)
    server_start: list[float] = field(default_factory=list)
    cold_shell: list[float] = field(default_factory=list)
    cold_run: list[float] = field(default_factory=list)
    reload: list[float] = field(default_factory=list)
    rerun: list[float] = field(default_factory=list)
    edit: list[float] = field(default_factory=list)
    notes: list[str] = field(default_factory=list)

    @staticmethod
    def med(xs: list[float]) -> float | None:
        return statistics.median(xs) if xs else None


def _check_page(page, result: Result, label: str) -> None:
    texts = harness.page_problems(page)
    if texts:
        result.notes.append(f"{label}: exception shown: {texts[0][:200]}")


def measure_cold(browser, app: Path, path: str, repeat: int, result: Result) -> None:
    for i in range(repeat):
        t0 = time.perf_counter()
        with harness.start_streamlit(app, timeout=120) as base:
            result.server_start.append(time.perf_counter() - t0)
            page = harness.new_page(browser)
            try:
                phases: dict[str, float] = {}
                result.cold.append(
                    time_to_chart(page, harness.build_url(base, path), phases=phases))
                result.cold_shell.append(phases["shell"])
                result.cold_run.append(phases["run"])
                harness.wait_idle(page)
                _check_page(page, result, f"cold run {i + 1}")
            finally:
                page.context.close()


def measure_warm(browser, app: Path, path: str, repeat: int, result: Result,
                 edit_path: str | None = None, edit_label: str | None = None) -> None:
    with harness.start_streamlit(app, timeout=120) as base:
        page = harness.new_page(browser)
        try:
            harness.goto(page, base, path, timeout=120_000)  # warms the server and browser cache
            harness.wait_charts(page, 1, timeout=120_000)
            for _ in range(repeat):
                result.reload.append(time_reload(page))
                harness.wait_idle(page)
            for _ in range(repeat):
                result.rerun.append(time_rerun(page))
            _check_page(page, result, "warm")
            if edit_path is not None:
                harness.goto(page, base, edit_path, timeout=120_000)
                harness.wait_charts(page, 1, timeout=120_000)
                box = (harness.number_input(page, edit_label) if edit_label
                       else page.locator('input[data-testid="stNumberInputField"]').first)
                start = float(box.input_value())
                step = float(box.get_attribute("step") or 1)
                for i in range(repeat):
                    # alternate up and down so the value stays in range
                    value = start + step if i % 2 == 0 else start
                    if value == int(value):
                        value = int(value)
                    result.edit.append(time_edit(page, edit_number(page, edit_label, value)))
                _check_page(page, result, "edit")
        finally:
            page.context.close()


def measure(browser, name: str, app: Path, path: str, repeat: int,
            edit_path: str | None = None, edit_label: str | None = None) -> Result:
    result = Result(name)
    print(f"measuring {name} ({app.relative_to(REPO) if app.is_relative_to(REPO) else app}"
          f"{'/' + path if path else ''}) ...", file=sys.stderr, flush=True)
    try:
        measure_cold(browser, app, path, repeat, result)
        measure_warm(browser, app, path, repeat, result, edit_path, edit_label)
    except Exception as exc:  # noqa: BLE001 - report and go on with the other app
        result.notes.append(f"failed: {type(exc).__name__}: {str(exc).splitlines()[0][:300]}")
    return result


# --- report ----------------------------------------------------------------------------------
def _fmt(x: float | None) -> str:
    return "n/a" if x is None else f"{x:.2f} s"


def report(baseline: Result, app: Result | None) -> str:
    rows = [("baseline cold (goto -> first chart)", _fmt(baseline.med(baseline.cold)))]
    rows.append(("  of which: goto -> app shell", _fmt(baseline.med(baseline.cold_shell))))
    rows.append(("  of which: goto -> first run finished", _fmt(baseline.med(baseline.cold_run))))
    rows.append(("baseline warm reload", _fmt(baseline.med(baseline.reload))))
    rows.append(("baseline warm rerun (R)", _fmt(baseline.med(baseline.rerun))))
    rows.append(("baseline server start", _fmt(baseline.med(baseline.server_start))))
    if app is not None:
        rows.append(("app cold (goto -> first chart)", _fmt(app.med(app.cold))))
        rows.append(("  of which: goto -> app shell", _fmt(app.med(app.cold_shell))))
        rows.append(("  of which: goto -> first run finished", _fmt(app.med(app.cold_run))))
        b, a = baseline.med(baseline.cold), app.med(app.cold)
        rows.append(("ratio app/baseline (cold)", "n/a" if not (a and b) else f"{a / b:.2f}x"))
        rows.append(("app warm reload", _fmt(app.med(app.reload))))
        rows.append(("app warm rerun (R)", _fmt(app.med(app.rerun))))
        rows.append(("app server start", _fmt(app.med(app.server_start))))
        if app.edit:
            rows.append(("app edit -> chart updated", _fmt(app.med(app.edit))))
    width = max(len(r[0]) for r in rows)
    lines = [f"{'measure (median)':<{width}}  value", f"{'-' * width}  -------"]
    lines += [f"{k:<{width}}  {v}" for k, v in rows]
    for r in (baseline, app):
        if r is not None:
            lines += [f"note [{r.name}]: {n}" for n in r.notes]
    return "\n".join(lines)


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--app", default=str(REPO / "app.py"), help="the dashboard (default app.py)")
    ap.add_argument("--path", default="densities", help="page url path (default: densities, the W1 view)")
    ap.add_argument("--baseline", default=str(BASELINE_APP))
    ap.add_argument("--repeat", type=int, default=3)
    ap.add_argument("--edit-latency", action="store_true",
                    help="also time an edit on --edit-path until the chart changes")
    ap.add_argument("--edit-path", default="ranking",
                    help="page of the ranking editor (url path)")
    ap.add_argument("--edit-label", default=None,
                    help="label of the number input to change (default: the first on the page)")
    ap.add_argument("--json", action="store_true", help="print raw timings as JSON too")
    args = ap.parse_args(argv)

    if harness.find_chromium() is None or not harness.playwright_available():
        print(harness.SKIP_MESSAGE.replace("browser tests skipped", "cannot benchmark"),
              file=sys.stderr)
        return 2
    from playwright.sync_api import sync_playwright

    app = Path(args.app).resolve()
    with sync_playwright() as pw:
        browser = harness.launch_browser(pw)
        try:
            base = measure(browser, "baseline", Path(args.baseline).resolve(), "", args.repeat)
            res = None
            if app.exists():
                res = measure(browser, "app", app, args.path, args.repeat,
                              args.edit_path if args.edit_latency else None, args.edit_label)
            else:
                print(f"{app} does not exist yet: measuring the baseline only",
                      file=sys.stderr)
        finally:
            browser.close()

    load = " ".join(f"{x:.1f}" for x in os.getloadavg())
    print(f"streamlit {_version('streamlit')}, plotly {_version('plotly')}, "
          f"chromium {harness.find_chromium()}, repeat {args.repeat}, "
          f"{os.cpu_count()} cpus, load average {load} (timings are only comparable at low load)")
    print(report(base, res))
    if args.json:
        print(json.dumps({r.name: r.__dict__ for r in (base, res) if r is not None}, indent=1))
    return 0


def _version(mod: str) -> str:
    try:
        from importlib.metadata import version

        return version(mod)
    except Exception:  # noqa: BLE001
        return "?"


if __name__ == "__main__":
    sys.exit(main())
