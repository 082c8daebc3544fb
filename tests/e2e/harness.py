"""Reusable code for driving a Streamlit app in a real Chromium.

Plain module (no pytest import at module level) so that both tests/e2e/conftest.py and the
scripts in benchmarks/ can use it.  Benchmarks import it with::

    sys.path.insert(0, str(REPO / "tests" / "e2e"))
    import harness

Pieces:

- ``find_chromium()`` / ``launch_browser(playwright)``: the system Chromium (``playwright install``
  cannot download a browser here).
- ``start_streamlit(app_path)``: context manager that runs ``streamlit run`` on a free port,
  waits for ``/_stcore/health`` and yields the base URL; kills the process group on exit.
- ``new_page(browser)``: context + page (1400x1000) with a RunTracker (``track_runs(page)``).
- Page helpers: ``goto``, ``wait_idle``, ``expect_rerun``, ``rerun``, ``run_mark``,
  ``assert_no_exception``, ``page_problems``, ``navigate``, ``plotly_charts``, ``wait_charts``,
  ``assert_charts_rendered``, ``chart_data``, ``screenshot``, ``number_input``,
  ``set_number_input``, ``query_params``.

Selectors were checked against streamlit 1.67: the root element is
``[data-testid="stApp"]`` with ``data-test-script-state`` in
{"initial", "running", "notRunning", "rerunRequested", "stopRequested", "compilationError"};
"initial" until the first script run of the session has been reported.  While a run takes more
than ~0.5 s the header shows ``[data-testid="stStatusWidget"]`` containing
``[data-testid="stStatusWidgetRunningIcon"]``.

The DOM state alone cannot tell that a *rerun* finished (a fast rerun's messages arrive in one
burst and "running" is never rendered), so each page gets a RunTracker that decodes the
websocket traffic; waits use both.
"""

from __future__ import annotations

import contextlib
import json
import os
import shutil
import signal
import socket
import subprocess
import sys
import tempfile
import time
import urllib.error
import urllib.parse
import urllib.request
from pathlib import Path
from typing import Any, Callable, Iterator, NamedTuple

REPO_ROOT = Path(__file__).resolve().parents[2]
APP_PATH = REPO_ROOT / "app.py"
SCREENSHOT_DIR = REPO_ROOT / "artifacts" / "screenshots"

CHROMIUM_ARGS = [
    "--no-sandbox",
    "--disable-gpu",
    "--disable-background-networking",
    "--disable-component-update",
    "--disable-sync",
    "--no-first-run",
    "--disable-quic",
]
VIEWPORT = {"width": 1400, "height": 1000}

SKIP_MESSAGE = (
    "browser tests skipped: install Debian's chromium (apt-get install -y chromium) "
    "or set APNULL_CHROMIUM=/path/to/chromium"
)

# --- selectors -------------------------------------------------------------------------------
APP = '[data-testid="stApp"]'
APP_IDLE = '[data-testid="stApp"][data-test-script-state="notRunning"]'
RUNNING_ICON = '[data-testid="stStatusWidgetRunningIcon"]'
# Each element renders inside React Suspense: while its lazily loaded code (data editor,
# metric, plotly, ...) is fetched, a placeholder stands in.  Also the whole-app skeleton.
LOADING = '[data-testid="stSkeleton"], [data-testid="stAppSkeleton"]'
EXCEPTION = '[data-testid="stException"]'
DIALOG = '[role="dialog"]'
PLOTLY_CHART = '[data-testid="stPlotlyChart"]'
PLOTLY_DIV = '[data-testid="stPlotlyChart"] .js-plotly-plot'
# Anything plotly draws for a trace: scatter/bar/box/... groups (g.trace), heatmaps (g.hm),
# contours, pie slices, and the canvas of WebGL traces.
TRACE_MARKS = "g.trace, g.hm, g.contour, g.slice, .gl-container canvas"

DEFAULT_TIMEOUT_MS = 60_000


# --- browser ---------------------------------------------------------------------------------
def find_chromium() -> str | None:
    """APNULL_CHROMIUM, else /usr/bin/chromium, else chromium / chromium-browser on PATH."""
    env = os.environ.get("APNULL_CHROMIUM")
    if env:
        return env if Path(env).exists() else None
    if Path("/usr/bin/chromium").exists():
        return "/usr/bin/chromium"
    for name in ("chromium", "chromium-browser"):
        found = shutil.which(name)
        if found:
            return found
    return None


def playwright_available() -> bool:
    try:
        import playwright.sync_api  # noqa: F401
    except ImportError:
        return False
    return True


def launch_browser(playwright: Any, executable_path: str | None = None, headless: bool = True):
    """Launch the system Chromium through a running ``sync_playwright()`` instance."""
    exe = executable_path or find_chromium()
    if exe is None:
        raise RuntimeError(SKIP_MESSAGE)
    return playwright.chromium.launch(executable_path=exe, headless=headless, args=CHROMIUM_ARGS)


class RunTracker:
    """Follows the websocket of a page and counts finished script runs.

    The DOM attribute data-test-script-state is not enough to see a rerun finish: a fast rerun's
    messages arrive in one burst and React renders "notRunning" without ever showing "running".
    So the tracker decodes the ForwardMsg protobufs the server sends (streamlit.proto):
    ``finished`` counts script_finished messages, ``running`` is the last
    session_status_changed.script_is_running, ``reruns_sent`` counts rerun_script BackMsgs.
    Events are delivered while playwright waits (e.g. page.wait_for_timeout).
    """

    def __init__(self) -> None:
        from streamlit.proto.BackMsg_pb2 import BackMsg
        from streamlit.proto.ForwardMsg_pb2 import ForwardMsg

        self._fwd, self._back = ForwardMsg, BackMsg
        self.finished = 0
        self.running = False
        self.reruns_sent = 0
        self.last_status: str | None = None

    def attach(self, ws) -> None:
        ws.on("framereceived", self._received)
        ws.on("framesent", self._sent)
        ws.on("close", self._closed)

    def _closed(self, _ws=None) -> None:
        self.running = False  # the page navigated away or lost the server mid-run

    def _received(self, payload) -> None:
        if isinstance(payload, str):
            return
        msg = self._fwd()
        try:
            msg.ParseFromString(payload)
        except Exception:  # noqa: BLE001 - not a ForwardMsg: ignore
            return
        kind = msg.WhichOneof("type")
        if kind == "new_session":
            self.running = True
        elif kind == "session_status_changed":
            self.running = msg.session_status_changed.script_is_running
        elif kind == "script_finished":
            self.finished += 1
            self.last_status = self._fwd.ScriptFinishedStatus.Name(msg.script_finished)

    def _sent(self, payload) -> None:
        if isinstance(payload, str):
            return
        msg = self._back()
        try:
            msg.ParseFromString(payload)
        except Exception:  # noqa: BLE001
            return
        if msg.WhichOneof("type") == "rerun_script":
            self.reruns_sent += 1
            self.running = True


def track_runs(page) -> RunTracker | None:
    """Attach (once) a RunTracker to page; call before page.goto. None if streamlit.proto is
    not importable (then waits fall back to the DOM state and a grace period)."""
    tracker = getattr(page, "_apnull_tracker", None)
    if tracker is None:
        try:
            tracker = RunTracker()
        except ImportError:
            return None
        page.on("websocket", tracker.attach)
        page._apnull_tracker = tracker
    return tracker


def new_page(browser: Any, viewport: dict | None = None):
    """New context + page with the standard viewport and a RunTracker."""
    context = browser.new_context(viewport=viewport or VIEWPORT)
    page = context.new_page()
    track_runs(page)
    return page


# --- server ----------------------------------------------------------------------------------
def free_port() -> int:
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def _health_ok(url: str) -> bool:
    try:
        with urllib.request.urlopen(url + "/_stcore/health", timeout=2) as r:
            return r.read().decode().strip() == "ok"
    except (urllib.error.URLError, OSError, ValueError):
        return False


class ServerError(RuntimeError):
    pass


def app_env(app_path: str | os.PathLike = APP_PATH, env: dict[str, str] | None = None) -> dict[str, str]:
    """The environment an app's processes run in: ``env`` (default: this one) with the app's own tree's
    src (``<app's folder>/src``, else this repository's) first on PYTHONPATH."""
    full_env = dict(os.environ if env is None else env)
    own_src = Path(app_path).resolve().parent / "src"
    src = str(own_src if (own_src / "apnull").is_dir() else REPO_ROOT / "src")
    full_env["PYTHONPATH"] = os.pathsep.join(p for p in (src, full_env.get("PYTHONPATH")) if p)
    full_env.setdefault("PYTHONUNBUFFERED", "1")
    return full_env


def warm_compiled(app_path: str | os.PathLike = APP_PATH, timeout: float = 900.0) -> float:
    """Fill numba's disk cache with the scoring pages' kernels before a server starts
    (:func:`apnull.ui.warmup.warm_scoring`, in a process of the app's environment), so that no browser
    test waits for the compiler: on an empty cache the first visit of "Compare two pipelines" took 40-60
    s, which a page test's time limits are not meant to measure (benchmarks/cold_start.py does).

    Parallel test workers take turns under a file lock: the first compiles, the others load the cache.
    Returns the seconds this call took. A failure is left to the pages, which compile for themselves.
    """
    import fcntl

    start = time.monotonic()
    lock = Path(tempfile.gettempdir()) / f"apnull-e2e-warm-{os.getuid()}.lock"
    with open(lock, "w") as handle:
        fcntl.flock(handle, fcntl.LOCK_EX)
        try:
            subprocess.run([sys.executable, "-c", "from apnull.ui import warmup; warmup.warm_scoring()"],
                           cwd=str(REPO_ROOT), env=app_env(app_path), stdin=subprocess.DEVNULL,
                           stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL, timeout=timeout, check=False)
        except subprocess.TimeoutExpired:
            pass
        finally:
            fcntl.flock(handle, fcntl.LOCK_UN)
    return time.monotonic() - start


@contextlib.contextmanager
def start_streamlit(
    app_path: str | os.PathLike = APP_PATH,
    *,
    port: int | None = None,
    cwd: str | os.PathLike | None = None,
    timeout: float = 60.0,
    extra_args: tuple[str, ...] | list[str] = (),
    env: dict[str, str] | None = None,
) -> Iterator[str]:
    """Run ``python -m streamlit run app_path`` and yield ``http://127.0.0.1:<port>``.

    cwd defaults to the repository root; the app's own tree's src (``<app's folder>/src``, else this
    repository's) is prepended to PYTHONPATH so the app imports its own apnull, not the installed
    one or this checkout's: a benchmark comparing an older checkout's app.py times that checkout.  The server runs in its own process group, which is
    terminated (then killed) on exit.  If /_stcore/health does not answer "ok" within
    ``timeout`` seconds, raises ServerError with the server's stderr.
    """
    app_path = Path(app_path).resolve()
    if not app_path.exists():
        raise FileNotFoundError(f"streamlit app not found: {app_path}")
    port = port or free_port()
    url = f"http://127.0.0.1:{port}"
    cmd = [
        sys.executable, "-m", "streamlit", "run", str(app_path),
        "--server.headless", "true",
        "--server.port", str(port),
        "--server.address", "127.0.0.1",
        "--browser.gatherUsageStats", "false",
        "--server.fileWatcherType", "none",
        *extra_args,
    ]
    full_env = app_env(app_path, env)

    out = tempfile.TemporaryFile()
    err = tempfile.TemporaryFile()
    proc = subprocess.Popen(
        cmd, cwd=str(cwd or REPO_ROOT), env=full_env,
        stdout=out, stderr=err, stdin=subprocess.DEVNULL, start_new_session=True,
    )

    def captured(f) -> str:
        f.seek(0)
        return f.read().decode(errors="replace")

    try:
        deadline = time.monotonic() + timeout
        while True:
            if proc.poll() is not None:
                raise ServerError(
                    f"streamlit exited with status {proc.returncode} before becoming healthy\n"
                    f"command: {' '.join(cmd)}\n--- stderr ---\n{captured(err)}"
                    f"\n--- stdout ---\n{captured(out)}"
                )
            if _health_ok(url):
                break
            if time.monotonic() > deadline:
                raise ServerError(
                    f"streamlit did not answer {url}/_stcore/health within {timeout:.0f} s\n"
                    f"command: {' '.join(cmd)}\n--- stderr ---\n{captured(err)}"
                    f"\n--- stdout ---\n{captured(out)}"
                )
            time.sleep(0.2)
        yield url
    finally:
        _stop(proc)
        out.close()
        err.close()


def _stop(proc: subprocess.Popen) -> None:
    if proc.poll() is not None:
        return
    try:
        os.killpg(proc.pid, signal.SIGTERM)
    except ProcessLookupError:
        return
    try:
        proc.wait(timeout=10)
    except subprocess.TimeoutExpired:
        with contextlib.suppress(ProcessLookupError):
            os.killpg(proc.pid, signal.SIGKILL)
        proc.wait(timeout=10)


# --- page helpers ----------------------------------------------------------------------------
def build_url(base_url: str, path: str = "", **query: Any) -> str:
    url = base_url.rstrip("/") + "/" + path.lstrip("/")
    if query:
        url += "?" + urllib.parse.urlencode(query, doseq=True)
    return url


class RunMark(NamedTuple):
    finished: int
    reruns_sent: int


def run_mark(page) -> RunMark | None:
    """Snapshot of the page's RunTracker counters (None without a tracker)."""
    tracker = getattr(page, "_apnull_tracker", None)
    return None if tracker is None else RunMark(tracker.finished, tracker.reruns_sent)


def _runs(page) -> int | None:
    tracker = getattr(page, "_apnull_tracker", None)
    return None if tracker is None else tracker.finished


def goto(page, base_url: str, path: str = "", *, timeout: float = DEFAULT_TIMEOUT_MS,
         **query: Any) -> None:
    """Open base_url/path?query and wait until the app's script run(s) have finished.

    Waits for a script_finished from the server (RunTracker), then for the DOM to say
    data-test-script-state="notRunning" with no running icon, and for a short quiet period so
    that a rerun that follows at once (st.navigation, bound query params) is waited for too.
    """
    tracker = track_runs(page)
    before = tracker.finished if tracker else None
    page.goto(build_url(base_url, path, **query), wait_until="domcontentloaded", timeout=timeout)
    page.wait_for_selector(APP, state="attached", timeout=timeout)
    wait_idle(page, timeout=timeout, since=before)


def wait_idle(page, *, timeout: float = DEFAULT_TIMEOUT_MS, since: int | RunMark | None = None,
              grace: float = 1000, settle: float = 200) -> None:
    """Wait until the app is not running any script.

    since: ``run_mark(page)`` taken before an interaction (``expect_rerun`` does this).  Then
    wait until a run started after the mark has finished; if the browser has not even sent a
    rerun request ``grace`` ms after the call, conclude that the interaction caused no rerun.
    An int is a number of finished runs that must be exceeded (no grace: used by goto).
    Without since, wait up to ``grace`` ms for a run to start and go on if none does.
    Finally wait for data-test-script-state="notRunning", for no running icon, for no
    loading placeholder (stSkeleton: an element whose lazily loaded code is still on its way;
    without this, e.g. st.metric cards next to a data editor can be missing for seconds after
    the run), and for ``settle`` ms without a new run.
    """
    tracker = getattr(page, "_apnull_tracker", None)
    start = time.monotonic()
    deadline = start + timeout / 1000

    def left_ms() -> float:
        return max(1.0, (deadline - time.monotonic()) * 1000)

    if tracker is not None and since is not None:
        mark = since if isinstance(since, RunMark) else RunMark(since, -1)
        while tracker.finished <= mark.finished or tracker.running:
            if (mark.reruns_sent >= 0 and tracker.reruns_sent == mark.reruns_sent
                    and not tracker.running and time.monotonic() - start > grace / 1000):
                break  # nothing was requested: no rerun is coming
            if time.monotonic() > deadline:
                raise TimeoutError(
                    f"no script run finished within {timeout / 1000:.0f} s "
                    f"(finished={tracker.finished}, mark={mark}, running={tracker.running})")
            page.wait_for_timeout(25)
    else:
        end = start + grace / 1000
        finished0 = tracker.finished if tracker else 0
        while time.monotonic() < end:
            if tracker is not None and (tracker.running or tracker.finished > finished0):
                break
            if page.locator(APP_IDLE).count() == 0:
                break
            page.wait_for_timeout(25)
    while True:
        page.wait_for_selector(APP_IDLE, state="attached", timeout=left_ms())
        page.wait_for_selector(RUNNING_ICON, state="detached", timeout=left_ms())
        page.locator(LOADING).first.wait_for(state="detached", timeout=left_ms())
        before = _runs(page)
        page.wait_for_timeout(settle)
        quiet = tracker is None or (tracker.finished == before and not tracker.running)
        if quiet and page.locator(APP_IDLE).count() == 1 and page.locator(LOADING).count() == 0:
            return
        if time.monotonic() > deadline:
            raise TimeoutError(f"app did not become idle within {timeout / 1000:.0f} s")


@contextlib.contextmanager
def expect_rerun(page, *, timeout: float = DEFAULT_TIMEOUT_MS, grace: float = 3000) -> Iterator[None]:
    """``with expect_rerun(page): <interaction>`` waits for the rerun the interaction causes.

    If the browser sends no rerun request within ``grace`` ms, returns once the app is idle.
    """
    mark = run_mark(page)
    yield
    wait_idle(page, timeout=timeout, since=mark, grace=grace)


def exception_texts(page) -> list[str]:
    """Texts of the st.exception / uncaught-exception boxes on the page."""
    return [t.strip() for t in page.locator(EXCEPTION).all_inner_texts()]


def page_problems(page) -> list[str]:
    """Exception boxes, plus Streamlit's "Page not found" dialog.

    Observed with streamlit 1.67 and st.navigation: a URL path that names no page shows the
    dialog and runs the default page at "/"; the default page is only served at "/" (its
    url_path gives the dialog).  If the page files live in a directory named ``pages/`` next
    to the entry script, Streamlit's old automatic multipage mode also kicks in until the
    entry script has run once on that server: a deep link /<x> then runs pages/<x>.py on its
    own (no app.py: no shared sidebar, a sidebar of file names) or, if no file is named <x>,
    shows this dialog before running the right page.
    """
    problems = exception_texts(page)
    for text in page.locator(DIALOG).all_inner_texts():
        if "Page not found" in text:
            problems.append(" ".join(text.split()))
    return problems


def assert_no_exception(page) -> None:
    """Fail if the page shows an exception box or the "Page not found" dialog."""
    problems = page_problems(page)
    if problems:
        joined = "\n---\n".join(problems)
        raise AssertionError(f"{len(problems)} problem(s) shown on {page.url}:\n{joined}")


def navigate(page, title: str, *, timeout: float = DEFAULT_TIMEOUT_MS) -> None:
    """Click the sidebar navigation link named title and wait for the page's run."""
    link = page.locator('[data-testid="stSidebarNav"]').get_by_role("link", name=title, exact=True)
    with expect_rerun(page, timeout=timeout):
        link.click(timeout=timeout)


def plotly_charts(page):
    """Locator of the plotly graph divs (one per st.plotly_chart)."""
    return page.locator(PLOTLY_DIV)


_CHART_STATE_JS = """
(sel) => Array.from(document.querySelectorAll(sel)).map(gd => ({
  svg: !!gd.querySelector('svg.main-svg'),
  marks: gd.querySelectorAll(%s).length,
  traces: (gd._fullData || gd.data || []).length,
}))
""" % json.dumps(TRACE_MARKS)


def chart_states(page) -> list[dict]:
    """Per chart: whether the svg exists, how many trace marks are drawn, how many traces."""
    return page.evaluate(_CHART_STATE_JS, PLOTLY_DIV)


def wait_charts(page, min_count: int = 1, *, timeout: float = DEFAULT_TIMEOUT_MS) -> None:
    """Wait until at least min_count charts exist and every chart has drawn a trace."""
    page.wait_for_function(
        "([sel, marks, n]) => { const gds = document.querySelectorAll(sel);"
        " return gds.length >= n && Array.from(gds).every("
        "   gd => gd.querySelector('svg.main-svg') && gd.querySelectorAll(marks).length > 0); }",
        arg=[PLOTLY_DIV, TRACE_MARKS, min_count], timeout=timeout, polling=50)


def assert_charts_rendered(page, min_count: int = 1, *, timeout: float = 15_000) -> None:
    """At least min_count plotly charts, each with an svg and at least one trace drawn."""
    try:
        wait_charts(page, min_count, timeout=timeout)
    except Exception as exc:
        states = chart_states(page)
        raise AssertionError(
            f"expected >= {min_count} rendered plotly chart(s) on {page.url}, "
            f"found {len(states)}: {states}") from exc


_PLAIN_DATA_JS = """
gd => {
  const plain = (v) => {
    if (v === null || typeof v !== 'object') return v;
    if (ArrayBuffer.isView(v) && !(v instanceof DataView)) return Array.from(v);
    if (Array.isArray(v)) return v.map(plain);
    if (v._inputArray !== undefined) return plain(v._inputArray);  // decoded plotly binary array
    const out = {};
    for (const [k, x] of Object.entries(v)) out[k] = plain(x);
    return out;
  };
  return plain(gd.data || []);
}
"""


def _decode_binary(value: Any) -> Any:
    """Plotly's binary array form {"dtype", "bdata"[, "shape"]} (if plotly.js left one) as lists."""
    if isinstance(value, dict):
        if "bdata" in value and "dtype" in value:
            import base64

            import numpy as np

            arr = np.frombuffer(base64.b64decode(value["bdata"]), dtype=np.dtype(value["dtype"]))
            if "shape" in value:
                arr = arr.reshape([int(s) for s in str(value["shape"]).split(",")])
            return arr.tolist()
        return {k: _decode_binary(v) for k, v in value.items()}
    if isinstance(value, list):
        return [_decode_binary(v) for v in value]
    return value


def chart_data(page, index: int = 0) -> list[dict]:
    """The plotly ``data`` (list of traces) of the index-th chart on the page, as plain JSON.

    Plotly 6+ ships numpy arrays in a binary form ({"dtype", "bdata"}) that plotly.js decodes
    into typed arrays; here every array comes back as a plain list (nested for 2-D, e.g. z).
    """
    return _decode_binary(plotly_charts(page).nth(index).evaluate(_PLAIN_DATA_JS))


_CONTENT_HEIGHT_JS = """
() => Math.max(document.documentElement.scrollHeight,
  ...Array.from(document.querySelectorAll(
    '[data-testid="stMain"], [data-testid="stAppViewContainer"], [data-testid="stSidebarContent"]'
  )).map(e => e.scrollHeight))
"""


def metric_value(page, label: str) -> str:
    """The shown value of the st.metric whose label contains ``label``."""
    card = page.locator('[data-testid="stMetric"]').filter(
        has=page.locator('[data-testid="stMetricLabel"]', has_text=label))
    return card.locator('[data-testid="stMetricValue"]').first.inner_text().strip()


def screenshot(page, name: str, *, full_page: bool = True, max_height: int = 20_000) -> Path:
    """Save <repo>/artifacts/screenshots/<name>.png and return the path.

    Streamlit scrolls inside [data-testid="stMain"], not the document, so playwright's
    full_page alone would capture one viewport: with full_page the viewport is stretched to
    the content height for the shot and restored afterwards.
    """
    SCREENSHOT_DIR.mkdir(parents=True, exist_ok=True)
    safe = "".join(c if c.isalnum() or c in "-_." else "_" for c in name)
    path = SCREENSHOT_DIR / f"{safe}.png"
    size = page.viewport_size
    height = int(page.evaluate(_CONTENT_HEIGHT_JS)) if full_page and size else 0
    if size and height > size["height"]:
        page.set_viewport_size({"width": size["width"], "height": min(height, max_height)})
        page.wait_for_timeout(300)  # let the layout (and plotly's resize handlers) settle
        try:
            page.screenshot(path=str(path), full_page=True)
        finally:
            page.set_viewport_size(size)
    else:
        page.screenshot(path=str(path), full_page=full_page)
    return path


def css_string(text: str) -> str:
    """text as a quoted CSS string (non-ASCII kept as is: json.dumps's \\uXXXX is not CSS)."""
    body = text.replace("\\", "\\\\").replace('"', '\\"').replace("\n", "\\a ")
    return f'"{body}"'


def number_input(page, label: str):
    """Locator of the <input> of the st.number_input with this label (its aria-label)."""
    return page.locator(f'input[data-testid="stNumberInputField"][aria-label={css_string(label)}]')


def set_number_input(page, label: str, value: Any, *, timeout: float = DEFAULT_TIMEOUT_MS) -> None:
    """Type value into the number input labelled ``label``, press Enter, wait for the rerun.

    A value out of the widget's range is refused by the frontend (the input gets
    aria-invalid="true" and an error tooltip, no rerun); then this returns at once.  The value
    already shown causes no rerun either (if shown differently, e.g. "0.50" for 0.5, the wait
    ends after a 3 s grace period).
    """
    box = number_input(page, label)
    box.wait_for(state="visible", timeout=timeout)
    unchanged = box.input_value() == str(value)
    mark = run_mark(page)
    box.fill(str(value))
    box.press("Enter")
    if unchanged or box.get_attribute("aria-invalid") == "true":
        # same value, or refused by the frontend ("Number is outside the allowed range"): no rerun
        wait_idle(page, timeout=timeout, grace=0)
    else:
        wait_idle(page, timeout=timeout, since=mark, grace=3000)


def choose_radio(page, option: str, *, group: str | None = None, timeout: float = DEFAULT_TIMEOUT_MS) -> None:
    """Click the radio option labelled ``option`` (in the st.radio whose text holds ``group``, if given),
    wait for the rerun, and check that the option is now the checked one. A click that lands while the
    page still replaces its elements after a rerun is lost (seen on a loaded machine), so the option is
    clicked a second time then; if it is still not checked, AssertionError."""
    radios = page.locator('[data-testid="stRadio"]')
    if group is not None:
        radios = radios.filter(has_text=group)
    label = radios.locator("label").filter(has_text=option).first
    for _ in range(2):
        wait_idle(page, timeout=timeout)
        with expect_rerun(page, timeout=timeout):
            label.click()
        if label.locator('input[type="radio"]').is_checked():
            return
    raise AssertionError(f"the radio option {option!r} did not become the checked one")


def upload_files(page, paths, *, timeout: float = DEFAULT_TIMEOUT_MS) -> None:
    """Put each file of ``paths`` into the page's file uploaders, in order (the first file into the first
    uploader), waiting for the rerun each upload starts."""
    inputs = page.locator('[data-testid="stFileUploaderDropzoneInput"]')
    for i, path in enumerate(paths):
        with expect_rerun(page, timeout=timeout):
            inputs.nth(i).set_input_files(str(path))


def query_params(page) -> dict[str, str | list[str]]:
    """Query of the current URL: value as str, or a list when the key repeats."""
    href = page.evaluate("() => window.location.href")
    out: dict[str, str | list[str]] = {}
    for k, v in urllib.parse.parse_qsl(urllib.parse.urlsplit(href).query, keep_blank_values=True):
        if k in out:
            prev = out[k]
            out[k] = (prev if isinstance(prev, list) else [prev]) + [v]
        else:
            out[k] = v
    return out


def rerun(page, *, timeout: float = DEFAULT_TIMEOUT_MS) -> None:
    """Trigger a rerun as the "R" key does, and wait for it to finish."""
    with expect_rerun(page, timeout=timeout):
        page.evaluate("() => document.activeElement && document.activeElement.blur()")
        page.keyboard.press("r")


def timed(fn: Callable[[], Any]) -> float:
    """Seconds taken by fn()."""
    t0 = time.perf_counter()
    fn()
    return time.perf_counter() - t0
