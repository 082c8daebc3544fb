"""Warm the dashboard once per server process, in a background thread: the Monte Carlo kernel and
the views a visitor sees first.

A fresh dashboard process pays about 1.5 s before its first Monte Carlo draw: ``import numba``
(0.3-0.9 s) and loading the cached machine code of ``apnull._kernels.floyd_pieces`` (about 0.6 s,
including the start of numba's thread pool). Its first page then samples the reference experiment's 50 sizes. ``start()``
does that work in a daemon thread as soon as the server starts: the kernel, the figure modules, and
the default views of the first pages (:func:`apnull.ui.cache.warm_default_views`: the densities and
quantiles pages' first view, the threshold lookup's laws; about 0.3 s more), the binning and hypergeometric
pages' default views (0.2 to 0.4 s each), the ranking editor's (milliseconds), and inspect's map of the loaded modules' files
(:func:`map_module_files`, which Streamlit's first element in a process otherwise made). app.py's ``st.App``
lifespan starts it and waits for it (at most 60 s) before the server accepts visitors, so the first
page finds its figures cached. Work left running in the background while the first visitor's
browser loads the page slowed that page down (benchmarks/cold_start.py: 1.44x the one-chart baseline
against 1.27x when the server waits for it). Run without app.py (AppTest, ``streamlit run
dashboard.py``), dashboard.py starts it in the background on its first run and nothing waits for it:
a page that needs the kernel earlier blocks on Python's import lock until the thread's import is done,
and a view being warmed is joined, not computed twice (the caches compute each key once).

A second phase follows in the same thread, which nothing waits for. First, once the server has been quiet
for :data:`QUIET` seconds (no script run started; :func:`start`, which dashboard.py calls on every run,
notes each), or at the latest :data:`MAX_DELAY` seconds after the first phase: the scoring kernels of "Score
your data" on the bundled example (reads the bundled digits, loads or, on a fresh checkout's first start,
compiles the numba kernels: a first visitor of that page paid 14.6 s for it), which leaves the example's
default result in the page's shared cache (a class reaching that page together would otherwise all wait
for it). The rest, :data:`IDLE_STEPS`, runs only while the server is idle: each step starts after
:data:`QUIET` seconds without a script run, however long that takes, and the thread runs them at a lower
CPU priority (nice + :data:`IDLE_NICE`), so a class that arrives meanwhile comes first: the consistency
step's default result, "Compare two pipelines" (on an empty numba cache its first visitor waited about
40 s on this 2-core machine, 60 s beside other work). Under a class those steps (then with the binning
and hypergeometric views, now in the first phase) ran at the 5 s limit and took 9.5% of the server's busy time
(a profile of benchmarks/load.py --lesson all) for pages the lesson computes anyway or never opens.
``wait(everything=True)`` waits for all of it. Started at once, the second phase ran while the first
visitor's browser loaded the densities page and slowed that page's first chart down
(benchmarks/cold_start.py: see docs/serving.md); it now waits for the first visits to finish.

It also sets ``OMP_WAIT_POLICY=PASSIVE`` (unless the environment already sets it) before numba's
OpenMP thread pool starts. By default OpenMP's idle workers spin on a barrier; a server runs many
sessions' kernels at once on few cores, and the spinning doubled the CPU time of the densities
page's sampling on the 2-core machine (1.9 s -> 1.1 s CPU for 50 sizes under load, wall time
4.2 s -> 2.9 s).

It shortens Python's thread switch interval from 5 ms to ``SWITCH_INTERVAL`` (1 ms; unless something
already changed it). A session whose compiled or numpy call gives the GIL back waits up to one
interval to get it again while other sessions' Python runs. benchmarks/page_busy.py, the sampled
metrics page beside one busy thread, new inputs (median of 3 to 4 runs on the shared machine):
2.25 s at 5 ms, 1.64 s at 1 ms (2.45 s at 20 ms); cached reruns 0.55 -> 0.38 s; the hypergeometric
page, whose view is few long calls, the same (0.7 s) at every interval.

The warm-up runs the public ``sample_null`` on a tiny size first, so the kernel is called with exactly
the argument types the pages use (no second compilation, nothing written to numba's cache).
Failures are logged, never raised: the pages then do the same work themselves, as before.

    from apnull.ui import warmup
    warmup.start()          # app.py's lifespan, dashboard.py; returns at once, runs once per process
    warmup.wait(5)          # tests/benchmarks: block until done (True if finished)
    warmup.wait(60, everything=True)   # also the second phase
"""

from __future__ import annotations

import gc
import logging
import os
import sys
import threading
import time

__all__ = ["start", "wait", "status", "note_run", "warm_scoring", "map_module_files", "freeze_heap"]

_LOG = logging.getLogger(__name__)
_lock = threading.Lock()
_thread: threading.Thread | None = None
_done = threading.Event()
_all_done = threading.Event()
_status: dict[str, object] = {"state": "not started"}

#: Python's thread switch interval in a dashboard process (seconds; Python's default is 0.005).
SWITCH_INTERVAL = 0.001

#: The second phase starts once no script run has started for this many seconds (the first visitors'
#: pages are served first) ...
QUIET = 3.0
#: ... or this many seconds after the first phase, however busy the server is (the score page's example only;
#: the other steps wait for a quiet moment without a limit).
MAX_DELAY = 5.0
#: How much lower the CPU priority (Linux nice, of this thread only) of the steps run while idle is.
IDLE_NICE = 10
_last_run = [time.monotonic()]

#: Modules the pages import; imported after the kernel (which is what the first page waits for). scipy.stats
#: (the sampled metrics' rank laws) takes 1.5 to 3 s of the GIL to import: here the server pays it before
#: its first visitor, not a class in the middle of a lesson (it came with the score step of the second phase,
#: then with the sampled page's first visitor: benchmarks/load.py --lesson all, docs/serving.md).
MODULES = ("apnull.sampling", "apnull.views.null", "apnull.plots", "plotly.graph_objects", "pandas", "scipy.stats")


def _warm() -> None:
    t0 = time.perf_counter()
    steps: dict[str, float] = {}
    try:
        from apnull.sampling import sample_null

        sample_null(2, 3, draws=8, seed=0)  # import numba, load the cached kernel, start its threads
        steps["kernel"] = time.perf_counter() - t0
        import importlib

        for name in MODULES:
            importlib.import_module(name)
        steps["modules"] = time.perf_counter() - t0
        _first_figure()
        steps["figure"] = time.perf_counter() - t0
        map_module_files()
        steps["inspect"] = time.perf_counter() - t0
        from apnull.ui.cache import warm_default_views

        warm_default_views()
        steps["views"] = time.perf_counter() - t0
        _other_default_views()
        steps["pages"] = time.perf_counter() - t0
        _status.update(state="done", seconds=steps)
    except Exception as exc:  # noqa: BLE001 - a warm-up must never break the app
        _status.update(state="failed", error=f"{type(exc).__name__}: {exc}", seconds=steps)
        _LOG.warning("apnull warm-up failed (the pages will load the kernel themselves): %s", exc)
    finally:
        _done.set()
    try:
        _warm_other_pages(steps, t0)
    except Exception as exc:  # noqa: BLE001
        _LOG.warning("apnull warm-up of the other pages failed (they will do it themselves): %s", exc)
    finally:
        _status["rest"] = "done"
        _all_done.set()


def _warm_other_pages(steps: dict, t0: float) -> None:
    """The second phase, which the server does not wait for: the score page's example at the first quiet
    moment (or after :data:`MAX_DELAY` s), then each of :data:`IDLE_STEPS` at a quiet moment only, at a lower
    priority. Nothing is imported before the quiet moment: the scoring modules' imports (the score
    package; scipy.stats, then with it, is now imported in the first phase) held the GIL and the import lock
    for 0.5 s of the first visitor's first page."""
    _wait_quiet(QUIET, MAX_DELAY)
    steps["quiet"] = time.perf_counter() - t0
    from apnull.ui import score_cache

    score_cache.warm_example()
    if gc.get_freeze_count():  # a server's heap (app.py froze it): the scoring modules live as long
        freeze_heap()
    steps["score"] = time.perf_counter() - t0
    _lower_priority(IDLE_NICE)
    for name, step in IDLE_STEPS:
        _wait_quiet(QUIET)
        step()
        steps[name] = time.perf_counter() - t0


def _other_default_views() -> None:
    """The other pages' default views the first phase builds: the binning and hypergeometric pages' (0.2 to
    0.4 s each on the 2-core machine, alone) and the ranking editor's
    (:func:`apnull.ui.ranking_cache.warm_default_view`).
    In the first phase: as a step run only while the server was idle they never ran under a class, and the
    class's first visitor of the binning page computed its view while the others waited for it
    (``to_binning``, 0.73 s p95 of benchmarks/load.py --lesson all quiet)."""
    from apnull.ui import binning_cache, hypergeom_cache, ranking_cache

    binning_cache.binning_view(4, 0.95, 300, 1.3, "lower", "ap")
    hypergeom_cache.hypergeom_view(4, 32, 4, 10_000, 2022)
    ranking_cache.warm_default_view()  # milliseconds alone; under a class its first visitor's build was waited for


def _consistency() -> None:
    from apnull.ui import consistency_step

    consistency_step.warm_score_page()  # the example is cached already: its consistency step's default


def _compare() -> None:
    from apnull.ui import compare_cache

    compare_cache.warm_comparison()


#: The second phase's steps run only while the server is idle, in this order: (name, step).
IDLE_STEPS = (("consistency", _consistency), ("compare", _compare))


def _lower_priority(nice: int) -> None:
    """Lower the calling thread's CPU priority by ``nice`` (Linux: nice is per thread); elsewhere nothing."""
    try:
        os.setpriority(os.PRIO_PROCESS, threading.get_native_id(), os.getpriority(os.PRIO_PROCESS, 0) + nice)
    except (AttributeError, OSError):  # not Linux, or not allowed: the steps still wait for idle moments
        pass


def warm_scoring() -> None:
    """The scoring kernels (about 1.5 s loaded from numba's disk cache; 40-60 s compiled on the very
    first start of a fresh install) on the bundled examples, with each page's default inputs, into the
    pages' caches: "Score your data" and its consistency step, then "Compare two pipelines" (its
    sign-flip kernels). The first visitors of those pages find their results ready. The browser tests
    call it once before their server starts, so that no test waits for numba's compiler."""
    from apnull.ui import compare_cache, consistency_step

    consistency_step.warm_score_page()  # into the page's own caches, with the page's default inputs
    compare_cache.warm_comparison()


def _wait_quiet(quiet: float, longest: float | None = None) -> None:
    """Return once no script run has started for ``quiet`` seconds (counted from now at the earliest),
    or after ``longest`` seconds (None: no limit)."""
    start = time.monotonic()
    _last_run[0] = max(_last_run[0], start)
    while True:
        now = time.monotonic()
        if now - _last_run[0] >= quiet or (longest is not None and now - start >= longest):
            return
        time.sleep(min(0.1, quiet - (now - _last_run[0]) + 0.01))


def note_run() -> None:
    """Note that a script run starts now (the second phase waits for :data:`QUIET` seconds without one)."""
    _last_run[0] = time.monotonic()


def _first_figure() -> None:
    """Build and serialise one small density figure as st.plotly_chart does: plotly loads its
    validators and JSON engine on first use (about 0.2 s)."""
    import numpy as np
    import plotly.io as pio

    from apnull.plots import density_figure

    grid = np.linspace(0.0, 1.0, 5)
    pio.to_json(density_figure([dict(m=1, n=1, x=grid, y=grid)], "ap", 1, 1))


def map_module_files() -> None:
    """Map every loaded module's file for :mod:`inspect`, as Streamlit's first element in a process does.

    The first element a Streamlit process sends checks whether it runs in a Python REPL
    (``streamlit.env_util.is_repl``: ``inspect.stack()``), and ``inspect`` finds each frame's module by
    mapping the file of every module loaded, once; later calls map only the modules loaded since. With
    the dashboard's imports (numba, scipy.stats, pandas, plotly: about 2,400 modules) that first walk took
    0.4 to 1.2 s of the GIL inside the sidebar's first caption, on the run of the first visitor's page
    after a server start (docs/serving.md). Walking the stack here, in the warm-up the server waits for,
    leaves that run only the modules its pages import."""
    import inspect

    inspect.stack()  # as Streamlit calls it: with context=0 frames of files on disk map nothing


def freeze_heap() -> None:
    """Collect the garbage, then move every object alive into the garbage collector's permanent
    generation (``gc.freeze``), which its full collections no longer walk. app.py's lifespan calls it once
    the first phase is done, before the server takes visitors; the second phase calls it again after the
    score page's example (whose modules it imports) when the heap was frozen before, so only a server's
    heap is frozen, never a test's (AppTest runs dashboard.py, which starts the warm-up too).

    Python's cyclic garbage collector walks every tracked object in a full (generation 2) collection,
    holding the GIL: once a server has imported numba, scipy.stats, pandas and plotly and warmed its
    views, that took 0.26 to 1.04 s on the shared 2-core machine, 3 times in each run of
    benchmarks/load.py --lesson all (timed with ``gc.callbacks``), and every session's run waited for it.
    The modules, their functions and the warmed views live as long as the server, so the collector has
    nothing to find among them; frozen, a full collection walks only what was made since (the sessions,
    the caches' later entries): 0.04 to 0.16 s in the same benchmark (docs/serving.md). An object frozen while alive that
    later becomes garbage in a reference cycle is never freed: at the second call, the objects of the
    sessions running then (once per server).
    """
    gc.collect()
    gc.freeze()


def start() -> threading.Thread | None:
    """Start the warm-up thread unless it was started before in this process; never blocks. Each call
    also notes a script run (dashboard.py calls it on every run): the second phase waits for a quiet
    moment.

    Returns the thread when this call started it, else None.
    """
    global _thread
    note_run()
    with _lock:
        if _thread is not None:
            return None
        os.environ.setdefault("OMP_WAIT_POLICY", "PASSIVE")  # read when numba's OpenMP pool starts
        if sys.getswitchinterval() == 0.005:  # Python's default: nobody chose another
            sys.setswitchinterval(SWITCH_INTERVAL)
        _thread = threading.Thread(target=_warm, name="apnull-warmup", daemon=True)
        _status["state"] = "running"
        _thread.start()
        return _thread


def wait(timeout: float | None = None, everything: bool = False) -> bool:
    """Block until the warm-up has finished (True) or timeout seconds passed (False). The server
    waits for the first phase (the lesson pages); ``everything=True`` also waits for the second
    (the scoring kernels)."""
    return (_all_done if everything else _done).wait(timeout)


def status() -> dict[str, object]:
    """{"state": "not started" | "running" | "done" | "failed", "seconds": {...}, "error": ...}."""
    return dict(_status)
