"""apnull.ui.warmup: the second phase waits for a quiet server, so the first visitors' pages come first."""

import os
import threading
import time

from apnull.ui import warmup


def test_second_phase_waits_for_a_quiet_moment():
    """_wait_quiet returns once no script run has started for `quiet` seconds: runs noted by note_run()
    (start() notes one; dashboard.py calls it on every run) push it back, and `longest` bounds the wait."""
    quiet = 0.3
    t0 = time.monotonic()
    warmup._wait_quiet(quiet, 5.0)  # nothing runs: returns after `quiet`
    assert quiet - 0.05 <= time.monotonic() - t0 < 2.0

    stop = threading.Event()

    def visitor():  # a run every 0.1 s for 0.8 s
        end = time.monotonic() + 0.8
        while time.monotonic() < end and not stop.is_set():
            warmup.note_run()  # what start() notes on every run of dashboard.py
            time.sleep(0.1)

    thread = threading.Thread(target=visitor)
    t0 = time.monotonic()
    thread.start()
    warmup._wait_quiet(quiet, 5.0)
    waited = time.monotonic() - t0
    thread.join()
    assert 0.8 + quiet - 0.15 <= waited < 4.0  # the visits, then a quiet moment

    t0 = time.monotonic()
    thread = threading.Thread(target=visitor)
    thread.start()
    warmup._wait_quiet(quiet, 0.4)  # busy throughout: `longest` ends the wait
    waited = time.monotonic() - t0
    stop.set()
    thread.join()
    assert 0.35 <= waited < 0.8


def test_only_the_score_example_competes_with_a_class(monkeypatch):
    """Under a steady stream of runs the score page's example starts at the MAX_DELAY limit, but the other
    steps (consistency, compare, binning and hypergeometric views) wait for a quiet moment however long
    the class lasts, and run at a lower priority than the sessions' threads."""
    from apnull.ui import score_cache

    quiet, busy = 0.3, 1.2
    monkeypatch.setattr(warmup, "QUIET", quiet)
    monkeypatch.setattr(warmup, "MAX_DELAY", 0.2)
    started = {}
    t0 = time.monotonic()
    monkeypatch.setattr(score_cache, "warm_example", lambda: started.setdefault("score", time.monotonic() - t0))

    def step(name):
        def run():
            started[name] = time.monotonic() - t0
            started[name + " nice"] = os.getpriority(os.PRIO_PROCESS, threading.get_native_id())
        return run

    monkeypatch.setattr(warmup, "IDLE_STEPS", tuple((name, step(name)) for name in ("pages", "compare")))
    end = t0 + busy

    def visitor():  # a class: a run every 0.05 s
        while time.monotonic() < end:
            warmup.note_run()
            time.sleep(0.05)

    class_ = threading.Thread(target=visitor)
    class_.start()
    worker = threading.Thread(target=warmup._warm_other_pages, args=({}, time.perf_counter()))
    worker.start()
    worker.join(10)
    class_.join()
    assert 0.15 <= started["score"] < busy - 0.3  # at the limit, while the class runs
    assert started["pages"] >= busy + quiet - 0.1 and started["compare"] >= started["pages"]  # idle only
    assert started["pages nice"] >= os.getpriority(os.PRIO_PROCESS, 0) + warmup.IDLE_NICE


def test_nothing_is_imported_before_the_quiet_moment():
    """The second phase imports the scoring modules only after its quiet wait: imported before it, they held
    the GIL and the import lock during the first visitor's first page (0.9 s against 0.45 s, one page)."""
    import subprocess
    import sys

    code = ("import sys\nfrom apnull.ui import warmup\n"
            "def wait(*a, **k):\n    print('apnull.score' in sys.modules, flush=True)\n    raise SystemExit\n"
            "warmup._wait_quiet = wait\nwarmup._warm_other_pages({}, 0.0)\n")
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=120)
    assert out.stdout.strip() == "False", out.stdout + out.stderr


def test_scoring_the_example_does_not_import_scipy_stats():
    """The score page (its example scored, its consistency step), the binning and the hypergeometric pages
    load no scipy.stats:
    importing it took 2.4 to 3 s of the server's GIL, which the warm-up's score step and the first visitor
    of the binning page spent in the middle of a class's lesson (benchmarks/load.py). The few functions that
    need it (the crossed comparison's t test, the binning curve of
    Precision@R, the hypergeometric threshold beyond 2,000 draws) import it when called."""
    import subprocess
    import sys

    code = ("import sys\nfrom apnull.ui import binning_cache, compare_cache, consistency_step, score_cache\n"
            "consistency_step.warm_score_page()\n"
            "binning_cache.binning_view(4, 0.95, 300, 1.3, 'lower', 'ap')\n"
            "from apnull.ui import hypergeom_cache\nhypergeom_cache.hypergeom_view(4, 32, 4, 10_000, 2022)\n"
            "print('scipy.stats' in sys.modules, flush=True)\n")
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=600)
    assert out.stdout.strip() == "False", out.stdout + out.stderr


def test_the_first_element_of_a_process_maps_no_module_after_the_warm_up(tmp_path):
    """Streamlit's first element in a process walks the stack with inspect (is it a REPL?), and inspect maps
    the file of every loaded module on its first walk: 0.4 to 1.2 s of the GIL in the first visitor's run
    after a server start, with the dashboard's 2,400 modules. The warm-up does that walk before the server
    takes visitors; a walk after it, from another thread of a script on disk as Streamlit's script runner
    is, maps no module loaded before it (without it, every one)."""
    import subprocess
    import sys

    def modules_mapped(warm: bool) -> int:
        script = tmp_path / f"first_element_{warm}.py"
        script.write_text(
            "import inspect, threading, pandas, plotly.graph_objects\nfrom apnull.ui import warmup\n"
            "def in_thread(f):\n    t = threading.Thread(target=f)\n    t.start()\n    t.join()\n"
            + ("in_thread(warmup.map_module_files)\n" if warm else "")
            + "calls = []\nreal = inspect.getabsfile\n"
            "inspect.getabsfile = lambda obj, _f=None: (calls.append(obj), real(obj, _f))[1]\n"
            "in_thread(inspect.stack)\nprint(sum(inspect.ismodule(c) for c in calls), flush=True)\n")
        out = subprocess.run([sys.executable, str(script)], capture_output=True, text=True, timeout=120)
        assert out.returncode == 0, out.stderr
        return int(out.stdout.strip())

    assert modules_mapped(warm=False) > 500
    assert modules_mapped(warm=True) == 0


def test_the_server_waits_for_the_other_default_views_views(monkeypatch):
    """The binning and hypergeometric pages' default views are made in the first phase, which the server waits
    for: as a step of the second phase run only while the server was idle, they never ran under a class and
    the class's first visitor of the binning page made its view while the others waited for it."""
    import apnull.sampling
    from apnull.ui import cache

    calls = []
    done = threading.Event()
    monkeypatch.setattr(warmup, "_done", done)
    monkeypatch.setattr(warmup, "_all_done", threading.Event())
    monkeypatch.setattr(warmup, "_status", {})
    monkeypatch.setattr(warmup, "MODULES", ())
    monkeypatch.setattr(apnull.sampling, "sample_null", lambda *a, **k: calls.append("kernel"))
    monkeypatch.setattr(warmup, "_first_figure", lambda: calls.append("figure"))
    monkeypatch.setattr(warmup, "map_module_files", lambda: calls.append("inspect"))
    monkeypatch.setattr(cache, "warm_default_views", lambda: calls.append("views"))
    monkeypatch.setattr(warmup, "_other_default_views", lambda: calls.append(("pages", done.is_set())))
    monkeypatch.setattr(warmup, "_warm_other_pages", lambda steps, t0: calls.append(("second", done.is_set())))
    warmup._warm()
    assert ("pages", False) in calls and ("second", True) in calls, calls
    assert "inspect" in calls
    assert all(name != "pages" for name, _ in warmup.IDLE_STEPS)


def _run(code: str, cwd=None) -> str:
    import subprocess
    import sys

    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=120, cwd=cwd)
    assert out.returncode == 0, out.stdout + out.stderr
    return out.stdout.strip()


def test_the_server_freezes_its_heap_before_taking_visitors():
    """app.py's lifespan, once the warm-up's first phase is done, moves the objects alive into the garbage
    collector's permanent generation: a full collection then walks none of the modules and warmed views (it
    walked them all, 0.26 to 0.57 s of the GIL each time under a class, while every session waited)."""
    from pathlib import Path

    code = ("import asyncio, gc\nfrom apnull.ui import warmup\n"
            "warmup.start = lambda: None\nwarmup.wait = lambda *a, **k: True\n"
            "import pandas, plotly.graph_objects\nimport app\n"
            "before = len(gc.get_objects(2))\n"
            "async def serve():\n    async with app.lifespan(None):\n        pass\n"
            "asyncio.run(serve())\n"
            "print(before, len(gc.get_objects(2)), gc.get_freeze_count(), flush=True)\n")
    before, walked, frozen = map(int, _run(code, cwd=Path(__file__).resolve().parents[1]).split())
    assert before > 50_000 and walked < before // 20 and frozen > before // 2, (before, walked, frozen)


def test_the_second_phase_freezes_again_only_a_frozen_heap():
    """After the score page's example the second phase freezes again what it loaded (the scoring package's
    modules), but only in a process whose heap was frozen already (a server, app.py): AppTest runs
    dashboard.py, which starts the warm-up too, and a test's heap is never frozen."""
    def frozen_after(before: str) -> list[int]:
        return [int(x) for x in _run(
            "import gc\nfrom apnull.ui import score_cache, warmup\n"
            "warmup._wait_quiet = lambda *a, **k: None\nwarmup.IDLE_STEPS = ()\n"
            "loaded = []\nscore_cache.warm_example = lambda: loaded.extend([] for _ in range(5000))\n"
            + before + "warmup._warm_other_pages({}, 0.0)\nprint(gc.get_freeze_count(), flush=True)\n").split()]

    assert frozen_after("") == [0]
    first, again = frozen_after("gc.freeze()\nprint(gc.get_freeze_count())\n")
    assert again >= first + 5000, (first, again)
