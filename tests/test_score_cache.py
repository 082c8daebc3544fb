"""The scoring page's shared caches: one scoring for a class pressing Score together (uploads: test_uploads.py)."""

import threading
import time
from types import SimpleNamespace

import pandas as pd

from apnull.ui import score_cache as cache


def test_thirty_sessions_score_once(monkeypatch):
    calls = []

    result = SimpleNamespace(groups=pd.DataFrame({"p": [0.1]}), queries=pd.DataFrame({"p": [0.2]}), held_bytes=256)

    def slow_score(table, progress=None, **kwargs):
        calls.append(1)
        time.sleep(0.5)
        return result

    monkeypatch.setattr(cache, "score_profiles", slow_score)
    cache.SCORES.clear()
    class Bar:  # a stand-in for st.progress (no script context in these threads)
        def progress(self, *a, **k):
            return self

        def empty(self):
            pass

    out = []
    threads = [threading.Thread(target=lambda: out.append(cache.score_once("example", ("k",), None, {},
                                                                           container=Bar())))
               for _ in range(30)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert len(out) == 30 and all(r is result for r in out) and len(calls) == 1
    cache.SCORES.clear()


def test_the_warm_up_fills_the_page_caches_the_page_reads(monkeypatch):
    """The server's warm-up scores the example into the same cache entries the page then reads: the
    page's first visit (its consistency step opened) neither scores nor runs the consistency step again."""
    import sys
    from pathlib import Path

    sys.path.insert(0, str(Path(__file__).parent))
    from apptest import open_page

    from apnull.ui import consistency_step

    cache.SCORES.clear()
    consistency_step.RESULTS.clear()
    consistency_step.warm_score_page()

    def computed_again(*args, **kwargs):
        raise AssertionError("the page computed what the warm-up had left in its cache")

    monkeypatch.setattr(cache, "score_profiles", computed_again)
    monkeypatch.setattr(consistency_step, "score_consistency", computed_again)
    at = open_page("score", {"sc_cs": "true"}, timeout=300)  # the consistency step's expander open
    assert not at.exception and not at.error, [e.value for e in at.error]
    assert any("n_replicates" in d.value.columns for d in at.dataframe)  # the activity results
    assert any("n_perturbations" in d.value.columns for d in at.dataframe)  # the consistency step's labels
    assert len(cache.SCORES) == 1 and len(consistency_step.RESULTS) == 1
