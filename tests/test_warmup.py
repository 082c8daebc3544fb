"""apnull.ui.warmup: the second phase waits for a quiet server, so the first visitors' pages come first."""

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
