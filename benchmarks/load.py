"""Load benchmark: N concurrent users doing a scripted lesson against one dashboard server.

    python benchmarks/load.py                          # 30 users, 2 rounds, websocket sessions
    python benchmarks/load.py --users 10 --rounds 1 --mode browser
    python benchmarks/load.py --users 30 --think 0 0   # no pauses: a stress test, not a class

One ``streamlit run app.py`` on a free loopback port (tests/e2e/harness.start_streamlit). Each user
is a Streamlit session that follows the same lesson, ``--rounds`` times, pausing ``--think``
seconds (uniform, seeded per user) between interactions:

    open        /densities (round 1: a new session; later rounds: switch back to the page)
    set_M       M (positives at i = 1)      set_N   N (negatives at i = 1)
    set_draws   draws per size
    to_quantiles, to_lookup, to_ranking     page switches (as the sidebar does)
    set_k       k on the ranking editor     preset  another ranking preset (the ranking changes)

``--lesson all``: every page of the sidebar in its order, one number input changed on each
(interactions named after the page: to_densities, set_densities_M, to_quantiles, set_quantiles_M,
to_lookup, set_lookup_m, to_binning, set_binning_power, to_hypergeometric, set_hypergeometric_k,
to_ranking, set_ranking_k, to_sampled, set_sampled_k), then the score page with its bundled
example (scored as the page opens, no button to press): to_score, set_score_fdr (another FDR level q:
the significance colours and counts change, the scoring is reused), click_score_volcano (a click on one
point of the volcano plot, which shows that perturbation's null).

A session's first chart on the densities page comes alone (apnull.ui.common.charts_now); the browser asks
for the page's other charts once it has drawn it. The client asks at once, when the first run has ended,
and reports that run as ``later_charts`` (one per user; the interaction itself ends with the first run).

``--values free`` (default): each user picks its own values from small sets (seeded per user), so
users rarely share a cache entry: the hard case.  ``--values class``: everyone types the values the
teacher dictates (the same sequence for all users), so after the first user the others mostly hit
the shared caches (apnull.memo.Memo computes a value once even when many sessions ask at once).

A widget drawn inside an ``st.fragment`` (the score page's inspected perturbation: its box and the
volcano) reruns that fragment only, as the browser asks: the request names the fragment the widget's
element came from.

Latency of an interaction: from the action (the rerun request leaving the client) to the end of
the resulting script run(s) with the new output delivered: the server reports the run finished
successfully, the session is no longer running, no further run starts within a short settle time
(subtracted), and the page's new elements (e.g. its plotly charts) have arrived.  An interaction
is an error when the run shows an exception, an ``st.error`` box, lacks the page's chart(s), or
finishes abnormally; a session is lost when its connection closes or a run takes longer than
``--timeout`` seconds (the user stops there).

Modes (``--mode``):

- ``ws`` (default): each user is a websocket client speaking Streamlit's protocol (protobuf
  BackMsg/ForwardMsg, the same messages the browser sends: rerun requests with widget states,
  page switches by page_script_hash).  All users run in one asyncio loop in this process, so the
  client costs a few per cent of one core and the 2 cores are left to the server.  "Rendered"
  means delivered to the client: browser-side drawing (plotly.js) is not included; it happens
  on each student's own machine in a real class.
- ``browser``: each user is a real Chromium page (its own context) driven through the e2e
  harness (goto, set_number_input, navigate, wait_charts), one thread and one Chromium per user
  (playwright's sync API is single-threaded).  Latency then includes drawing the charts, and the
  browsers compete with the server for the same 2 cores; use it with few users to check that the
  websocket numbers agree, not for 30 users on this machine.

Server memory: RSS of the server and its children sampled every 0.2 s (peak reported) and the
kernel's high-water mark VmHWM of the server process at the end.

Prints a table (users, p50, p95, max per interaction, errors, lost sessions, server peak memory)
and exits 0, also when the goal is missed; non-zero only when the harness itself fails (server
does not start, protocol failure before any user ran).
"""

from __future__ import annotations

import argparse
import asyncio
import os
import random
import statistics
import sys
import threading
import time
import traceback
from collections import defaultdict
from dataclasses import dataclass, field
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(REPO / "tests" / "e2e"))

import harness  # noqa: E402

INTERACTIONS = ("open", "set_M", "set_N", "set_draws", "to_quantiles", "to_lookup", "to_ranking", "set_k",
                "preset")
# --lesson all: every page of the sidebar, one input changed on each, in the sidebar's order:
# (url path, name of the input, label prefix of its number input, values a user picks from)
ALL_PAGES = (
    ("densities", "M", "M (positives", (4, 5, 6, 8)),
    ("quantiles", "M", "M (positives", (4, 5, 6, 8)),
    ("lookup", "m", "m (positives", (3, 4, 5, 8, 10)),
    ("binning", "power", "power", (1.1, 1.2, 1.3, 1.5, 2.0)),
    ("hypergeometric", "k", "k (top positions", (2, 3, 4, 5, 8)),
    ("ranking", "k", "k, the cut-off", (1, 2, 4, 5, 6)),
    ("sampled", "k", "k (cut-off", (5, 10, 20, 50)),
    ("score", "fdr", "FDR level q", (0.01, 0.05, 0.1, 0.2)),
)
ALL_INTERACTIONS = tuple(name for page, inp, _, _ in ALL_PAGES for name in (
    (f"to_{page}", f"set_{page}_{inp}", "click_score_volcano") if page == "score" else
    (f"to_{page}", f"set_{page}_{inp}")))
# (url path, minimum plotly charts the page shows after a good run)
#: The browser-side element of a session's first chart that asks for the page's other charts once it is
#: drawn (apnull.ui.common.charts_now)
LATER_CHARTS_WATCHER = "apnull_first_chart_drawn"
PAGES = {"densities": 2, "quantiles": 1, "lookup": 1, "ranking": 1, "binning": 1, "hypergeometric": 1,
         "sampled": 1, "score": 0}
LABELS = {  # widget labels (prefix match, so small wording changes do not break the lesson)
    "M": "M (positives",
    "N": "N (negatives",
    "draws": "draws per size",
    "k": "k, the cut-off",
    "preset": "Preset",
}
CHOICES = {"M": (4, 5, 6, 8), "N": (30, 40, 60), "draws": (5_000, 10_000, 20_000), "k": (1, 2, 4, 5, 6)}
#: every interaction's p95 under this on a quiet machine (issue 35: 30 users, --lesson all)
GOAL_P95 = 0.5


# --- results ---------------------------------------------------------------------------------
@dataclass
class Stats:
    latencies: dict[str, list[float]] = field(default_factory=lambda: defaultdict(list))
    errors: dict[str, int] = field(default_factory=lambda: defaultdict(int))
    error_samples: list[str] = field(default_factory=list)
    lost: int = 0
    lost_samples: list[str] = field(default_factory=list)
    finished_users: int = 0
    lock: threading.Lock = field(default_factory=threading.Lock)

    def ok(self, name: str, seconds: float) -> None:
        with self.lock:
            self.latencies[name].append(seconds)

    def error(self, name: str, seconds: float | None, text: str) -> None:
        with self.lock:
            self.errors[name] += 1
            if seconds is not None:
                self.latencies[name].append(seconds)
            if len(self.error_samples) < 12:
                self.error_samples.append(f"{name}: {text[:300]}")

    def lose(self, user: int, name: str, text: str) -> None:
        with self.lock:
            self.lost += 1
            if len(self.lost_samples) < 8:
                self.lost_samples.append(f"user {user} at {name}: {text[:300]}")


class LostSession(Exception):
    pass


def pct(xs: list[float], q: float) -> float:
    """q-quantile with linear interpolation (numpy's default), no numpy needed."""
    s = sorted(xs)
    if not s:
        return float("nan")
    pos = (len(s) - 1) * q
    lo = int(pos)
    hi = min(lo + 1, len(s) - 1)
    return s[lo] + (s[hi] - s[lo]) * (pos - lo)


# --- server memory ---------------------------------------------------------------------------
class MemorySampler(threading.Thread):
    """Peak RSS (process + children) of the streamlit server listening on ``port``."""

    def __init__(self, port: int, interval: float = 0.2):
        super().__init__(daemon=True, name="memory-sampler")
        self.port, self.interval = port, interval
        self.peak = 0
        self.pid: int | None = None
        self.hwm_kb: int | None = None
        self.cpu_seconds: float | None = None
        self._halt = threading.Event()

    def _find(self):
        import psutil

        for proc in psutil.Process().children(recursive=True):
            try:
                cmd = proc.cmdline()
            except psutil.Error:
                continue
            if "streamlit" in " ".join(cmd) and str(self.port) in cmd:
                return proc
        return None

    def run(self) -> None:
        try:
            import psutil
        except ImportError:  # fall back to VmHWM only
            psutil = None
        proc = None
        while not self._halt.is_set():
            if psutil is not None:
                try:
                    proc = proc or self._find()
                    if proc is not None:
                        self.pid = proc.pid
                        rss = proc.memory_info().rss + sum(
                            c.memory_info().rss for c in proc.children(recursive=True))
                        self.peak = max(self.peak, rss)
                        t = proc.cpu_times()
                        self.cpu_seconds = t.user + t.system
                except Exception:  # noqa: BLE001 - process gone or racing: keep the last peak
                    pass
            self._halt.wait(self.interval)

    def stop(self) -> None:
        """Stop sampling and read VmHWM (call while the server is still running)."""
        self._halt.set()
        self.join(timeout=5)
        if self.pid is not None:
            try:
                for line in Path(f"/proc/{self.pid}/status").read_text().splitlines():
                    if line.startswith("VmHWM:"):
                        self.hwm_kb = int(line.split()[1])
            except OSError:
                pass


# --- websocket users -------------------------------------------------------------------------
class WsSession:
    """One Streamlit session over the websocket, as the browser's frontend would run it."""

    def __init__(self, base_url: str, timeout: float, settle: float = 0.15):
        from streamlit.proto.BackMsg_pb2 import BackMsg
        from streamlit.proto.ForwardMsg_pb2 import ForwardMsg

        self.BackMsg, self.ForwardMsg = BackMsg, ForwardMsg
        self.url = base_url.replace("http://", "ws://").rstrip("/") + "/_stcore/stream"
        self.timeout, self.settle = timeout, settle
        self.ws = None
        self.reader: asyncio.Task | None = None
        self.pages: dict[str, str] = {}  # url path -> page_script_hash
        self.query = ""
        self.page = ""
        self.widgets: dict[str, object] = {}  # label -> element proto (last seen)
        # the page as the browser shows it: delta path -> (type, element, id of the st.fragment drawing it);
        # a run's end drops what the run (or the fragment it reran) did not draw again
        self.drawn: dict[tuple[int, ...], tuple[str, object, str]] = {}
        self.drawn_this_run: set[tuple[int, ...]] = set()
        self.sent_states: dict[str, object] = {}  # widget id -> WidgetState we set on this page
        self.fragments: dict[str, str] = {}  # widget id -> id of the st.fragment drawing it (as the browser keeps)
        self.running = False
        self.finished: list[tuple[float, str]] = []  # (time, status) of script_finished
        self.elements: list[tuple[str, object]] = []  # (type, element) since the last request
        self.closed: str | None = None
        self.changed = asyncio.Event()
        self.later: list[float] = []  # seconds of each run the browser asks for after its first chart

    # connection --------------------------------------------------------------------------
    async def connect(self) -> None:
        from websockets.asyncio.client import connect

        self.ws = await connect(self.url, subprotocols=["streamlit"], max_size=None, open_timeout=self.timeout,
                                ping_interval=None)
        self.reader = asyncio.create_task(self._read())

    async def close(self) -> None:
        if self.ws is not None:
            await self.ws.close()
        if self.reader is not None:
            self.reader.cancel()

    async def _read(self) -> None:
        try:
            async for frame in self.ws:
                if isinstance(frame, str):
                    continue
                msg = self.ForwardMsg()
                msg.ParseFromString(frame)
                self._handle(msg)
        except Exception as exc:  # noqa: BLE001
            self.closed = f"{type(exc).__name__}: {exc}"
        else:
            self.closed = self.closed or "connection closed by the server"
        self.changed.set()

    def _handle(self, msg) -> None:
        kind = msg.WhichOneof("type")
        if kind == "new_session":  # sent as every run starts, a fragment's too
            self.running = True
            self.drawn_this_run = set()
            for p in msg.new_session.app_pages:
                self.pages[p.url_pathname] = p.page_script_hash
        elif kind == "navigation":
            for p in msg.navigation.app_pages:
                self.pages[p.url_pathname] = p.page_script_hash
        elif kind == "page_info_changed":
            self.query = msg.page_info_changed.query_string
        elif kind == "session_status_changed":
            self.running = msg.session_status_changed.script_is_running
        elif kind == "script_finished":
            status = self.ForwardMsg.ScriptFinishedStatus.Name(msg.script_finished)
            self.finished.append((time.perf_counter(), status))
            self._forget_undrawn(status)
        elif kind == "delta":
            delta = msg.delta
            if delta.WhichOneof("type") == "new_element":
                el = delta.new_element
                etype = el.WhichOneof("type")
                self.elements.append((etype, el))
                if etype in ("number_input", "radio", "button"):
                    self.widgets[getattr(el, etype).label] = el
                path = tuple(msg.metadata.delta_path)
                self.drawn[path] = (etype, el, delta.fragment_id)
                self.drawn_this_run.add(path)
                wid = getattr(getattr(el, etype), "id", "")
                if wid:
                    self.fragments[wid] = delta.fragment_id
        self.changed.set()

    def _forget_undrawn(self, status: str) -> None:
        """At a run's end, drop the elements the browser drops: a full run's page is what it drew; a
        fragment run redraws its fragment(s) only. A run stopped for a rerun changes nothing yet."""
        if status == "FINISHED_SUCCESSFULLY":
            self.drawn = {p: d for p, d in self.drawn.items() if p in self.drawn_this_run}
        elif status == "FINISHED_FRAGMENT_RUN_SUCCESSFULLY":
            rerun = {self.drawn[p][2] for p in self.drawn_this_run if p in self.drawn}
            self.drawn = {p: d for p, d in self.drawn.items() if p in self.drawn_this_run or d[2] not in rerun}

    # requests ----------------------------------------------------------------------------
    def _request(self, page_name: str = "", page_hash: str = "", query: str | None = None,
                 widget: str = "") -> None:
        """A rerun request; ``widget``: the id of the widget whose change causes it (a widget drawn by an
        ``st.fragment`` reruns that fragment only, as the browser asks)."""
        msg = self.BackMsg()
        cs = msg.rerun_script
        cs.query_string = self.query if query is None else query
        if widget and self.fragments.get(widget):
            cs.fragment_id = self.fragments[widget]
        if page_hash:
            cs.page_script_hash = page_hash
        if page_name:
            cs.page_name = page_name
        for state in self.sent_states.values():
            cs.widget_states.widgets.add().CopyFrom(state)
        self.elements = []
        return msg.SerializeToString()

    async def _run(self, payload: bytes, expect_charts: int, t0: float | None = None) -> float:
        """Send a rerun request and wait for the run(s) it causes to finish; return seconds since t0
        (default: the send)."""
        n0 = len(self.finished)
        t0 = time.perf_counter() if t0 is None else t0
        await self.ws.send(payload)
        deadline = t0 + self.timeout
        while True:
            if self.closed:
                raise LostSession(self.closed)
            done_ok = [f for f in self.finished[n0:] if f[1] in ("FINISHED_SUCCESSFULLY", "FINISHED_WITH_COMPILE_ERROR",
                                                                 "FINISHED_FRAGMENT_RUN_SUCCESSFULLY")]
            if done_ok and not self.running:
                last = self.finished[-1][0]
                # a run that follows at once (st.rerun, bound query params) belongs to this action
                settle_end = time.perf_counter() + self.settle
                while time.perf_counter() < settle_end and not self.running and self.finished[-1][0] == last:
                    await asyncio.sleep(0.02)
                if not self.running and self.finished[-1][0] == last:
                    elapsed = last - t0
                    if self._asks_for_later_charts():
                        # a session's first chart came alone (ui.charts_now); the browser asks for the page's
                        # other charts once it has drawn it: asked at once here, timed as "later_charts"
                        self._check(min(expect_charts, 1))
                        self.later.append(await self._run(
                            self._request(page_hash=self.pages.get(self.page, "")), expect_charts))
                        return elapsed
                    self._check(expect_charts)
                    return elapsed
            remaining = deadline - time.perf_counter()
            if remaining <= 0:
                raise LostSession(f"no finished run within {self.timeout:.0f} s "
                                  f"(runs: {[s for _, s in self.finished[n0:]]})")
            self.changed.clear()
            try:
                await asyncio.wait_for(self.changed.wait(), timeout=min(remaining, 1.0))
            except asyncio.TimeoutError:
                pass

    def _asks_for_later_charts(self) -> bool:
        return any(etype == "bidi_component" and el.bidi_component.component_name == LATER_CHARTS_WATCHER
                   for etype, el in self.elements)

    def _check(self, expect_charts: int) -> None:
        problems = []
        for etype, el in self.elements:
            if etype == "exception":
                problems.append(f"exception {el.exception.type}: {el.exception.message}")
            elif etype == "alert" and el.alert.format == el.alert.ERROR:
                problems.append(f"st.error: {el.alert.body}")
        charts = sum(1 for etype, _ in self.elements if etype == "plotly_chart")
        status = self.finished[-1][1]
        if status not in ("FINISHED_SUCCESSFULLY", "FINISHED_FRAGMENT_RUN_SUCCESSFULLY"):
            problems.append(f"run finished with {status}")
        if not problems and charts < expect_charts:
            problems.append(f"{charts} plotly chart(s), expected {expect_charts}")
        if problems:
            raise AssertionError("; ".join(problems))

    async def open(self, path: str) -> float:
        """A new session on base/path: connect, send the first rerun request, wait for the page."""
        t0 = time.perf_counter()
        await self.connect()
        self.page = path
        self.sent_states = {}
        return await self._run(self._request(page_name=path, query=""), PAGES.get(path, 0), t0)

    async def switch(self, path: str) -> float:
        page_hash = self.pages.get(path)
        if page_hash is None:
            raise AssertionError(f"no page {path!r} in the navigation ({sorted(self.pages)})")
        self.page = path
        self.sent_states = {}
        self.widgets = {}
        return await self._run(self._request(page_hash=page_hash, query=""), PAGES.get(path, 0))

    def widget(self, prefix: str):
        for label, el in self.widgets.items():
            if label.startswith(prefix):
                return el
        raise AssertionError(f"no widget labelled {prefix!r}... on /{self.page} (have {list(self.widgets)})")

    def current(self, prefix: str):
        el = self.widget(prefix)
        etype = el.WhichOneof("type")
        w = getattr(el, etype)
        if w.id in self.sent_states:
            s = self.sent_states[w.id]
            return getattr(s, s.WhichOneof("value"))
        if etype == "number_input":
            return w.value if w.set_value else w.default
        return w.raw_value if w.set_value else self.default(el)

    @staticmethod
    def default(el):
        """The value a number input or radio shows by default (a bound input with it is left out of the URL)."""
        etype = el.WhichOneof("type")
        w = getattr(el, etype)
        if etype == "number_input":
            return w.default
        return w.options[w.default[0]] if w.default else None

    async def set(self, prefix: str, value) -> float:
        from streamlit.proto.WidgetStates_pb2 import WidgetState

        el = self.widget(prefix)
        etype = el.WhichOneof("type")
        w = getattr(el, etype)
        state = WidgetState(id=w.id)
        if etype == "number_input":
            if w.data_type == w.INT:
                state.int_value = int(value)
            else:
                state.double_value = float(value)
        else:  # radio: the formatted option
            state.string_value = str(value)
        self.sent_states[w.id] = state
        if w.query_param_key:  # the browser writes a bound input's new value into its URL before it reruns
            self.query = with_param(self.query, w.query_param_key, None if value == self.default(el) else
                                    (str(value) if etype != "number_input" else number_text(value)))
        return await self._run(self._request(page_hash=self.pages.get(self.page, ""), widget=w.id),
                               PAGES.get(self.page, 0))


    async def press(self, label: str) -> float:
        """Click the button labelled ``label`` (a trigger for one run, as the browser sends it)."""
        from streamlit.proto.WidgetStates_pb2 import WidgetState

        w = self.widget(label).button
        payload = self._request(page_hash=self.pages.get(self.page, ""))
        msg = self.BackMsg()
        msg.ParseFromString(payload)
        msg.rerun_script.widget_states.widgets.add().CopyFrom(WidgetState(id=w.id, trigger_value=True))
        return await self._run(msg.SerializeToString(), PAGES.get(self.page, 0))

    def chart(self, key: str):
        """The selectable plotly chart on the page now whose widget id contains ``key``: its latest delta
        (a chart's id follows its figure, so e.g. another FDR level makes the volcano a new element, and
        a fragment's id follows its position on the page). Fails unless exactly one such chart is drawn."""
        found = [el.plotly_chart for etype, el, _ in self.drawn.values()
                 if etype == "plotly_chart" and el.plotly_chart.id and key in el.plotly_chart.id]
        if len(found) != 1:
            shown = sorted(el.plotly_chart.id for etype, el, _ in self.drawn.values() if etype == "plotly_chart")
            raise AssertionError(f"{len(found)} selectable charts {key!r} on /{self.page}, expected 1 (charts: {shown})")
        return found[0]

    async def click_point(self, key: str, rng: random.Random) -> float:
        """Click one point of the chart :meth:`chart` finds (a selection event naming the point's
        customdata, as plotly.js reports a click)."""
        import json

        from streamlit.proto.WidgetStates_pb2 import WidgetState

        el = self.chart(key)
        points = [(c, j, i, x, y, cd) for c, trace in enumerate(json.loads(el.spec).get("data", []))
                  for j, (x, y, cd) in enumerate(zip(*(harness._decode_binary(trace.get(a)) or ()
                                                       for a in ("x", "y", "customdata"))))
                  for i in [j]]
        if not points:
            raise AssertionError(f"chart {key!r} has no point with customdata")
        c, j, i, x, y, cd = rng.choice(points)
        selection = {"selection": {"points": [{"curve_number": c, "point_number": j, "point_index": i, "x": x,
                                               "y": y, "customdata": cd}],
                                   "point_indices": [i], "box": [], "lasso": []}}
        self.sent_states[el.id] = WidgetState(id=el.id, string_value=json.dumps(selection))
        return await self._run(self._request(page_hash=self.pages.get(self.page, ""), widget=el.id),
                               PAGES.get(self.page, 0))


def with_param(query: str, key: str, text: str | None) -> str:
    """``query`` with the parameter ``key`` set to ``text`` (None: left out), the others kept in order."""
    from urllib.parse import parse_qsl, urlencode

    pairs = [(k, v) for k, v in parse_qsl(query, keep_blank_values=True) if k != key]
    return urlencode(pairs + ([(key, text)] if text is not None else []))


def number_text(value) -> str:
    """A number as the browser writes it in the URL (JavaScript's String: 2, not 2.0)."""
    value = float(value)
    return str(int(value)) if value.is_integer() else repr(value)


def rngs(uid: int, args) -> tuple[random.Random, random.Random]:
    """(values, pauses): class mode gives every user the same values, never the same pauses."""
    return random.Random(7 if args.values == "class" else 1000 + uid), random.Random(5000 + uid)


async def ws_user(uid: int, base: str, args, stats: Stats, start_at: float) -> None:
    rng, pause = rngs(uid, args)
    await asyncio.sleep(max(0.0, start_at - time.perf_counter()))
    sess = WsSession(base, args.timeout)
    step = "open"
    try:
        for rnd in range(args.rounds):
            plan = lesson_plan(args.lesson, sess, rng, rnd)
            for step, action in plan:
                if rnd > 0 or step != plan[0][0]:
                    await asyncio.sleep(pause.uniform(*args.think))
                try:
                    stats.ok(step, await action())
                except AssertionError as exc:
                    stats.error(step, None, f"user {uid} round {rnd + 1}: {exc}")
                while sess.later:
                    stats.ok("later_charts", sess.later.pop())
        stats.finished_users += 1
    except LostSession as exc:
        stats.lose(uid, step, str(exc))
    except Exception as exc:  # noqa: BLE001 - a client bug: count the session as lost, keep going
        stats.lose(uid, step, f"{type(exc).__name__}: {exc}\n{traceback.format_exc(limit=3)}")
    finally:
        await sess.close()


def lesson_plan(lesson: str, sess: "WsSession", rng: random.Random, rnd: int) -> list:
    """The (interaction name, coroutine factory) steps of one round of ``lesson`` for one user."""
    def go(path):
        return (lambda: sess.open(path)) if rnd == 0 and not sess.pages else (lambda: sess.switch(path))

    def change(label, choices):
        return lambda: sess.set(label, pick(rng, choices, sess.current(label)))

    if lesson == "lesson":
        return [
            ("open", go("densities")),
            ("set_M", change(LABELS["M"], CHOICES["M"])),
            ("set_N", change(LABELS["N"], CHOICES["N"])),
            ("set_draws", change(LABELS["draws"], CHOICES["draws"])),
            ("to_quantiles", lambda: sess.switch("quantiles")),
            ("to_lookup", lambda: sess.switch("lookup")),
            ("to_ranking", lambda: sess.switch("ranking")),
            ("set_k", change(LABELS["k"], CHOICES["k"])),
            ("preset", lambda: sess.set(LABELS["preset"], pick(
                rng, [o for o in sess.widget(LABELS["preset"]).radio.options if o != "Random"],
                sess.current(LABELS["preset"])))),
        ]
    plan = []
    for page, name, label, choices in ALL_PAGES:
        plan.append((f"to_{page}", (lambda p=page: sess.open(p)) if rnd == 0 and not plan else
                     (lambda p=page: sess.switch(p))))
        plan.append((f"set_{page}_{name}", change(label, choices)))
        if page == "score":
            plan.append(("click_score_volcano", lambda: sess.click_point("volcano", rng)))
    return plan


def pick(rng: random.Random, options, current):
    """A value from options other than the current one (so the action always changes something)."""
    options = [o for o in options if str(o) != str(current) and o != current]
    return rng.choice(options)


async def run_ws(base: str, args, stats: Stats) -> None:
    t0 = time.perf_counter()
    starts = [t0 + args.ramp * i / max(1, args.users - 1) for i in range(args.users)]
    await asyncio.gather(*(ws_user(u, base, args, stats, starts[u]) for u in range(args.users)))


# --- browser users ---------------------------------------------------------------------------
def browser_user(uid: int, base: str, args, stats: Stats, start_at: float) -> None:
    from playwright.sync_api import sync_playwright

    rng, pause = rngs(uid, args)
    time.sleep(max(0.0, start_at - time.perf_counter()))
    timeout_ms = args.timeout * 1000
    titles = {"densities": "Null densities", "quantiles": "Quantiles vs size", "lookup": "Threshold lookup",
              "ranking": "Ranking editor"}
    step = "open"
    with sync_playwright() as pw:
        browser = harness.launch_browser(pw)
        try:
            page = harness.new_page(browser)

            def label(prefix: str) -> str:
                loc = page.locator(f'input[data-testid="stNumberInputField"][aria-label^={harness.css_string(prefix)}]')
                return loc.first.get_attribute("aria-label", timeout=timeout_ms)

            def check(path: str) -> None:
                problems = harness.page_problems(page)
                problems += [t for t in page.locator('[data-testid="stAlertContentError"]').all_inner_texts()]
                if problems:
                    raise AssertionError("; ".join(p[:200] for p in problems))
                harness.wait_charts(page, PAGES[path], timeout=timeout_ms)

            def set_num(key: str, path: str) -> None:
                lab = label(LABELS[key])
                cur = harness.number_input(page, lab).input_value()
                harness.set_number_input(page, lab, pick(rng, CHOICES[key], cur), timeout=timeout_ms)
                check(path)

            def to(path: str) -> None:
                harness.navigate(page, titles[path], timeout=timeout_ms)
                check(path)

            def preset() -> None:
                radio = page.locator('[data-testid="stRadio"]').filter(has_text=LABELS["preset"]).first
                labels = radio.locator('[role="radiogroup"] label')
                options = [t.strip() for t in labels.all_inner_texts()]
                checked = radio.locator('[role="radiogroup"] label:has(input:checked)')
                current = checked.first.inner_text().strip() if checked.count() else None
                choice = pick(rng, [o for o in options if o and o != "Random"], current)
                with harness.expect_rerun(page, timeout=timeout_ms):
                    labels.nth(options.index(choice)).click(timeout=timeout_ms)
                check("ranking")

            for rnd in range(args.rounds):
                plan = [
                    ("open", (lambda: (harness.goto(page, base, "densities", timeout=timeout_ms), check("densities")))
                     if rnd == 0 else (lambda: to("densities"))),
                    ("set_M", lambda: set_num("M", "densities")),
                    ("set_N", lambda: set_num("N", "densities")),
                    ("set_draws", lambda: set_num("draws", "densities")),
                    ("to_quantiles", lambda: to("quantiles")),
                    ("to_lookup", lambda: to("lookup")),
                    ("to_ranking", lambda: to("ranking")),
                    ("set_k", lambda: set_num("k", "ranking")),
                    ("preset", preset),
                ]
                for step, action in plan:
                    if step != "open" or rnd > 0:
                        time.sleep(pause.uniform(*args.think))
                    t = time.perf_counter()
                    try:
                        action()
                        stats.ok(step, time.perf_counter() - t)
                    except AssertionError as exc:
                        stats.error(step, time.perf_counter() - t, f"user {uid} round {rnd + 1}: {exc}")
            stats.finished_users += 1
        except Exception as exc:  # noqa: BLE001 - timeouts, closed pages: the session is lost
            stats.lose(uid, step, f"{type(exc).__name__}: {str(exc).splitlines()[0] if str(exc) else ''}")
        finally:
            browser.close()


def run_browser(base: str, args, stats: Stats) -> None:
    t0 = time.perf_counter()
    threads = []
    for u in range(args.users):
        start_at = t0 + args.ramp * u / max(1, args.users - 1)
        th = threading.Thread(target=browser_user, args=(u, base, args, stats, start_at), daemon=True)
        th.start()
        threads.append(th)
    for th in threads:
        th.join(timeout=args.timeout * 12 * args.rounds + args.ramp + 120)


# --- report ----------------------------------------------------------------------------------
def report(stats: Stats, args, mem: MemorySampler, wall: float, loads: list[tuple[float, float, float]]) -> str:
    lines = []
    INTERACTIONS = ALL_INTERACTIONS if args.lesson == "all" else globals()["INTERACTIONS"]
    INTERACTIONS = list(INTERACTIONS) + [n for n in stats.latencies if n not in INTERACTIONS]  # later_charts
    width = max(len(x) for x in INTERACTIONS) + 2
    lines.append(f"{'interaction':<{width}} {'users':>5} {'n':>4} {'p50 s':>7} {'p95 s':>7} {'max s':>7} {'errors':>6}")
    lines.append("-" * (width + 43))
    all_lat: list[float] = []
    for name in INTERACTIONS:
        xs = stats.latencies.get(name, [])
        all_lat += xs
        lines.append(f"{name:<{width}} {args.users:>5} {len(xs) + (stats.errors.get(name, 0) if args.mode == 'ws' else 0):>4} "
                     f"{pct(xs, .5):>7.2f} {pct(xs, .95):>7.2f} {max(xs) if xs else float('nan'):>7.2f} "
                     f"{stats.errors.get(name, 0):>6}")
    lines.append("-" * (width + 43))
    lines.append(f"{'all':<{width}} {args.users:>5} {len(all_lat):>4} {pct(all_lat, .5):>7.2f} {pct(all_lat, .95):>7.2f} "
                 f"{max(all_lat) if all_lat else float('nan'):>7.2f} {sum(stats.errors.values()):>6}")
    worst = max((pct(stats.latencies.get(n, []), .95) for n in INTERACTIONS if stats.latencies.get(n)), default=float("nan"))
    lines.append("")
    lines.append(f"users {args.users} ({args.mode}, values {args.values}), rounds {args.rounds}, think {args.think[0]:g}-{args.think[1]:g} s, "
                 f"ramp {args.ramp:g} s, wall {wall:.0f} s; finished users {stats.finished_users}, "
                 f"lost sessions {stats.lost}, errors {sum(stats.errors.values())}")
    hwm = f"{mem.hwm_kb / 1024:.0f} MB" if mem.hwm_kb else "n/a"
    peak = f"{mem.peak / 2**20:.0f} MB" if mem.peak else "n/a"
    cpu = f", server CPU {mem.cpu_seconds:.0f} s ({mem.cpu_seconds / wall * 100:.0f}% of one core)" if mem.cpu_seconds else ""
    lines.append(f"server peak RSS (incl. children, sampled) {peak}; VmHWM {hwm}{cpu}")
    lo = " ".join(f"{x:.1f}" for x in loads[0])
    hi = " ".join(f"{x:.1f}" for x in loads[-1])
    peak_load = max(x[0] for x in loads)
    lines.append(f"load average: before {lo}, after {hi}, peak 1-min {peak_load:.1f} ({os.cpu_count()} cpus)")
    verdict = ("MET" if stats.lost == 0 and not stats.errors and worst < GOAL_P95 else "MISSED")
    lines.append(f"goal (0 errors, 0 lost, every p95 < {GOAL_P95:g} s): {verdict} (worst p95 {worst:.2f} s)")
    for s in stats.error_samples:
        lines.append(f"error: {s}")
    for s in stats.lost_samples:
        lines.append(f"lost: {s}")
    return "\n".join(lines)


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--users", type=int, default=30)
    ap.add_argument("--rounds", type=int, default=2, help="times each user goes through the lesson")
    ap.add_argument("--port", type=int, default=None, help="server port (default: a free one)")
    ap.add_argument("--mode", choices=("ws", "browser"), default="ws")
    ap.add_argument("--lesson", choices=("lesson", "all"), default="lesson",
                    help="lesson: densities, quantiles, lookup, ranking (default); all: every page of the "
                         "sidebar, one input changed on each, and the score page (FDR level, click a volcano point)")
    ap.add_argument("--app", default=str(REPO / "app.py"))
    ap.add_argument("--think", type=float, nargs=2, default=(0.5, 2.0), metavar=("MIN", "MAX"),
                    help="pause between interactions, seconds (uniform); default 0.5 2.0")
    ap.add_argument("--values", choices=("free", "class"), default="free",
                    help="free: each user its own values (default); class: all type the same values")
    ap.add_argument("--ramp", type=float, default=5.0, help="users join over this many seconds (default 5)")
    ap.add_argument("--timeout", type=float, default=60.0, help="a run longer than this loses the session")
    ap.add_argument("--warm", action="store_true", help="open /densities once before the users start")
    args = ap.parse_args(argv)
    if args.users < 1 or args.rounds < 1:
        ap.error("--users and --rounds must be at least 1")
    if args.mode == "browser" and args.lesson != "lesson":
        ap.error("--mode browser plays the default lesson only")
    if args.mode == "browser" and (harness.find_chromium() is None or not harness.playwright_available()):
        print(harness.SKIP_MESSAGE, file=sys.stderr)
        return 2

    port = args.port or harness.free_port()
    stats = Stats()
    app = Path(args.app).resolve()
    try:
        with harness.start_streamlit(app, port=port, cwd=app.parent, timeout=120) as base:
            mem = MemorySampler(port)
            mem.start()
            if args.warm:
                async def warm():
                    s = WsSession(base, args.timeout)
                    await s.open("densities")
                    await s.close()
                asyncio.run(warm())
            loads = [os.getloadavg()]
            stop_load = threading.Event()

            def sample_load():
                while not stop_load.wait(5):
                    loads.append(os.getloadavg())
            threading.Thread(target=sample_load, daemon=True).start()
            t0 = time.perf_counter()
            print(f"{args.users} users, {args.rounds} round(s), mode {args.mode}, server {base} ...",
                  file=sys.stderr, flush=True)
            if args.mode == "ws":
                asyncio.run(run_ws(base, args, stats))
            else:
                run_browser(base, args, stats)
            wall = time.perf_counter() - t0
            stop_load.set()
            loads.append(os.getloadavg())
            mem.stop()
    except harness.ServerError as exc:
        print(f"harness failure: {exc}", file=sys.stderr)
        return 3
    if not any(stats.latencies.values()) and not stats.errors:
        print("harness failure: no interaction completed\n" + "\n".join(stats.lost_samples), file=sys.stderr)
        return 4
    print(report(stats, args, mem, wall, loads))
    return 0


if __name__ == "__main__":
    sys.exit(main())
