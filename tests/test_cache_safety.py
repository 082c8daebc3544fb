"""Caches shared between sessions: read-only results, safe under threads.

The dashboard serves every browser session from one process, so a cache is shared by every user:

- ``apnull.significance`` keeps the last laws in a module-level :class:`apnull.memo.Memo` (``_CACHE``)
  and hands out the cached object itself. Whoever gets it must not be able to change what the next caller
  gets (a page that "normalises" ``law.probs`` in place would change every other user's law).
- ``apnull.ui.cache`` keeps per-size summaries and figures in Memos too: read-only arrays, shared.
- Sessions run their scripts in threads, so the caches are hit concurrently: no exception, and the
  same numbers as a serial run.

The race test makes the race deterministic instead of hoping for an unlucky thread switch: it
gives the cache a store whose lookups yield the GIL for a moment, which is exactly the window between
finding a key and moving it to the end in which another thread can evict the key. With a lock around
lookup + insert + eviction the window is closed.
"""

from __future__ import annotations

import threading
import time
from collections import OrderedDict
from concurrent.futures import ThreadPoolExecutor

import numpy as np
import pytest

import apnull
from apnull import significance
from apnull.law import NullDistribution
from apnull.memo import Memo
from apnull.sampling import sample_null

# (m, n, metric, method, draws, seed): cheap laws of every method that the cache stores
LAW_CASES = [
    (4, 30, "ap", "exact", None, None),
    (3, 7, "pr", "exact", None, None),
    (30, 300, "ap", "grid", None, None),
    (5, 40, "ap", "mc", 2_000, 7),
]
ARRAYS = ("values", "probs", "draws", "counts", "_cum")


def _snapshot(law: NullDistribution) -> dict:
    out = {name: np.array(getattr(law, name), copy=True) for name in ARRAYS if getattr(law, name) is not None}
    out["quantile95"] = law.quantile(0.95)
    out["sf"] = law.sf(0.3)
    out["mean"] = law.mean
    return out


def _same(a: dict, b: dict) -> bool:
    return a.keys() == b.keys() and all(np.array_equal(a[k], b[k]) for k in a)


def _vandalise(law: NullDistribution) -> None:
    """What a careless caller might do: write into every array of the law it was given."""
    for name in ARRAYS:
        arr = getattr(law, name)
        if arr is None:
            continue
        try:
            arr[...] = 0
        except ValueError:  # read-only: the fix this test asks for
            pass


def _fresh(monkeypatch, entries: int = significance.CACHE_SIZE, store: OrderedDict | None = None) -> Memo:
    """Give apnull.significance an empty law cache of ``entries`` laws for the test (restored afterwards)."""
    memo = Memo(entries, significance.CACHE_BYTES, sizeof=significance._nbytes)
    if store is not None:
        memo._data = store
    monkeypatch.setattr(significance, "_CACHE", memo)
    return memo


@pytest.fixture
def fresh_cache(monkeypatch):
    """An empty significance cache for the test (the real one is restored afterwards)."""
    _fresh(monkeypatch)
    return significance


# --- read-only -------------------------------------------------------------------------------
@pytest.mark.parametrize("m, n, metric, method, draws, seed", LAW_CASES,
                         ids=[f"{c[2]}-{c[3]}" for c in LAW_CASES])
def test_cached_law_cannot_be_changed_by_a_caller(fresh_cache, m, n, metric, method, draws, seed):
    """Writing into the arrays of a law from null_distribution does not change the next caller's law."""
    first = apnull.null_distribution(m, n, metric, method, draws=draws, seed=seed)
    expected = _snapshot(first)
    _vandalise(first)
    second = apnull.null_distribution(m, n, metric, method, draws=draws, seed=seed)
    assert _same(_snapshot(second), expected), (
        f"a caller that wrote into the cached {metric}/{method} law changed what the next caller gets")


@pytest.mark.parametrize("m, n, metric, method, draws, seed", LAW_CASES,
                         ids=[f"{c[2]}-{c[3]}" for c in LAW_CASES])
def test_cached_law_arrays_are_read_only(fresh_cache, m, n, metric, method, draws, seed):
    """The arrays of a (shared) law refuse writes, so the mistake shows where it is made."""
    law = apnull.null_distribution(m, n, metric, method, draws=draws, seed=seed)
    writable = [name for name in ARRAYS if getattr(law, name) is not None and getattr(law, name).flags.writeable]
    assert not writable, f"writable arrays on a cached {metric}/{method} law: {writable}"


def test_law_does_not_alias_the_callers_arrays():
    """A NullDistribution built from arrays keeps its own copy: changing the inputs later changes nothing."""
    values, probs = np.array([0.2, 0.5, 1.0]), np.array([0.5, 0.25, 0.25])
    law = NullDistribution(metric="ap", m=1, n=2, method="exact", values=values, probs=probs)
    values[:] = 9.0
    probs[:] = 0.0
    assert law.values.tolist() == [0.2, 0.5, 1.0]
    assert law.probs.tolist() == [0.5, 0.25, 0.25]


def test_ui_cached_summaries_are_read_only():
    """The shared per-size summaries cannot be changed by one caller: writing raises, the next caller
    gets the same object with the same numbers."""
    from apnull.ui import cache

    first = cache.size_summary(6, 41, 500, 12345)
    expected = {metric: first.curves[metric]["y"].copy() for metric in first.curves}
    for metric, curve in first.curves.items():
        for name in ("x", "y"):
            with pytest.raises(ValueError):
                curve[name][:] = -1.0
    with pytest.raises(AttributeError):  # a frozen dataclass
        first.rows = ()
    with pytest.raises(TypeError):  # read-only mappings
        first.curves["ap"]["y"] = np.zeros(3)
    with pytest.raises(TypeError):
        first.curves["pr"] = {}
    again = cache.size_summary(6, 41, 500, 12345)
    assert again is first
    assert all(np.array_equal(again.curves[m]["y"], expected[m]) for m in expected)

    law = cache.null_law(5, 23, "ap", "exact")
    expected = _snapshot(law)
    _vandalise(law)
    assert _same(_snapshot(cache.null_law(5, 23, "ap", "exact")), expected)


def test_ui_draws_are_extended_not_drawn_again(monkeypatch):
    """More draws of a cached size only draw the new ones; fewer are a slice; the numbers are
    apnull.sample_null's either way, and the arrays handed out are read-only."""
    from apnull import sampling
    from apnull.memo import Memo
    from apnull.ui import cache

    monkeypatch.setattr(cache, "DRAWS", Memo(8, max_bytes=10**8, sizeof=cache._draws_bytes))
    drawn = []
    real = sampling.draw_many

    def counting(requests):
        drawn.extend(stop - start for *_, start, stop in requests)
        return real(requests)

    monkeypatch.setattr(cache, "draw_many", counting)
    full = sample_null(9, 70, 3000, 5)
    for draws in (1000, 3000, 500, 3000, 2000):
        ap, pr = cache.size_draws(9, 70, draws, 5)
        assert np.array_equal(ap, full.ap[:draws]) and np.array_equal(pr, full.pr[:draws])
        with pytest.raises(ValueError):
            ap[:] = 0.0
    assert drawn == [1000, 2000]


def test_ui_summaries_of_a_view_are_the_library_summaries(monkeypatch):
    """Batches (small BATCH_RANKS: several per view), cached and new sizes mixed: each summary equals
    views.null.summarise_size of sample_null's draws."""
    from apnull.memo import Memo
    from apnull.ui import cache
    from apnull.views.null import summarise_size

    monkeypatch.setattr(cache, "SUMMARIES", Memo(100))
    monkeypatch.setattr(cache, "BATCH_RANKS", 20_000)
    sizes = [(3 * i, 11 * i) for i in range(1, 9)]
    cache.size_summaries(sizes[2:5], 700, 9)
    calls = []
    got = cache.size_summaries(sizes, 700, 9, progress=lambda *a: calls.append(a))
    assert calls and calls[-1][:2] == (len(sizes), len(sizes))
    for (m, n), summary in zip(sizes, got):
        s = sample_null(m, n, 700, 9)
        ref = summarise_size(m, n, s.ap, s.pr)
        assert summary.rows == ref.rows
        assert np.array_equal(summary.curves["ap"]["y"], ref.curves["ap"]["y"])


def test_warm_default_views_caches_what_a_first_visitor_sees():
    from apnull.ui import cache
    from apnull.views.null import DEFAULT_VIEW as D

    cache.warm_default_views()
    key = ("density", D["M"], D["N"], D["K"], D["draws"], D["seed"], False)
    assert cache.VIEWS.get(key) is not None
    assert cache.VIEWS.get(("quantiles", D["M"], D["N"], D["K"], D["draws"], D["seed"], "mc")) is not None
    assert all((D["M"] * i, D["N"] * i, D["draws"], D["seed"]) in cache.SUMMARIES for i in range(1, D["K"] + 1))


# --- threads ---------------------------------------------------------------------------------
def _keys(count: int):
    """Overlapping, cheap request keys: more distinct keys than the cache holds, so threads evict
    each other's entries while they read them."""
    out = []
    for i in range(count):
        m = 1 + i % 4
        n = 3 + (i * 7) % 17  # exact AP laws of at most C(24, 4) placements: milliseconds
        if i % 3 == 0:
            out.append((m, n, "pr", "exact", None, None))
        elif i % 3 == 1:
            out.append((m, n, "ap", "exact", None, None))
        else:
            out.append((m, n, "ap", "mc", 300, i % 5))
    return out


def _summary(law: NullDistribution):
    return (law.method, law.values.tobytes(), law.probs.tobytes(),
            None if law.draws is None else law.draws.tobytes(), float(law.quantile(0.9)))


class _SlowLookupDict(OrderedDict):
    """OrderedDict whose lookups let other threads run before the caller acts on the answer."""

    def __contains__(self, key):
        found = super().__contains__(key)
        time.sleep(0.0005)
        return found

    def get(self, key, default=None):
        found = super().get(key, default)
        time.sleep(0.0005)
        return found


def _hammer(keys, threads: int = 8, rounds: int = 3):
    barrier = threading.Barrier(threads)

    def worker(t):
        barrier.wait()
        out = {}
        for r in range(rounds):
            order = keys[t::1] if (t + r) % 2 == 0 else keys[::-1]  # overlapping, different orders
            for key in order:
                m, n, metric, method, draws, seed = key
                out[key] = _summary(apnull.null_distribution(m, n, metric, method, draws=draws, seed=seed))
        return out

    with ThreadPoolExecutor(threads) as pool:
        return list(pool.map(worker, range(threads)))


def _serial(keys):
    significance._CACHE.clear()
    return {k: _summary(apnull.null_distribution(k[0], k[1], k[2], k[3], draws=k[4], seed=k[5])) for k in keys}


@pytest.mark.timeout(120)
def test_null_distribution_from_8_threads_matches_serial(monkeypatch):
    """8 threads asking for overlapping laws (with evictions) get no exception and the serial answers."""
    memo = _fresh(monkeypatch, entries=8)
    keys = _keys(40)
    serial = _serial(keys)
    significance._CACHE.clear()
    for result in _hammer(keys):
        for key, summary in result.items():
            assert summary == serial[key], f"thread result differs from the serial run for {key}"
    assert len(memo) <= 8


@pytest.mark.timeout(120)
def test_null_distribution_cache_has_no_lookup_race(monkeypatch):
    """Lookup-then-read is atomic: a key evicted by another thread between the membership test and the
    read must not raise KeyError (widened race window, see the module docstring)."""
    memo = _fresh(monkeypatch, entries=4, store=_SlowLookupDict())
    keys = _keys(24)
    serial = _serial(keys)
    significance._CACHE.clear()
    for result in _hammer(keys, threads=8, rounds=2):
        for key, summary in result.items():
            assert summary == serial[key]
    assert len(memo) <= 4


@pytest.mark.timeout(120)
def test_monte_carlo_kernel_from_8_threads_matches_serial():
    """The compiled kernel (parallel=True) called from 8 threads at once, as 8 sessions would."""
    sizes = [(m, n) for m in (1, 3, 7, 20) for n in (0, 5, 60)]
    serial = {s: sample_null(*s, draws=3_000, seed=11) for s in sizes}

    def worker(t):
        return {s: sample_null(*s, draws=3_000, seed=11) for s in sizes[t % len(sizes):] + sizes[:t % len(sizes)]}

    with ThreadPoolExecutor(8) as pool:
        for result in pool.map(worker, range(8)):
            for s, sample in result.items():
                assert np.array_equal(sample.ap, serial[s].ap) and np.array_equal(sample.pr, serial[s].pr)


def test_pages_leave_the_shared_figures_as_they_found_them():
    """Cached views are shared by every session and handed out as they are: running the pages that show
    them (twice, with changed inputs in between) must not change a cached figure or table."""
    import json

    import plotly.graph_objects as go
    import plotly.io as pio
    import pandas as pd

    from apnull.ui import cache
    from apptest import run_page, set_widgets

    def snapshot():
        out = {}
        for key, value in zip(list(cache.VIEWS._data), cache.VIEWS.values()):
            for i, item in enumerate(value if isinstance(value, tuple) else (value,)):
                for j, part in enumerate(item if isinstance(item, tuple) else (item,)):
                    if isinstance(part, go.Figure):
                        out[(key, i, j)] = json.loads(pio.to_json(part, validate=False))
                    elif isinstance(part, pd.DataFrame):
                        out[(key, i, j)] = part.to_json()
        return out

    runs = [("densities", {"K": 6, "draws": 500}), ("quantiles", {"K": 6, "draws": 500}), ("lookup", {"m": 5})]
    for page, widgets in runs:
        at = run_page(page, **widgets)
        assert not at.exception
    before = snapshot()
    assert any(key[0][0] == "density" for key in before) and any(key[0][0] == "law" for key in before)
    for page, widgets in runs:
        at = run_page(page, **widgets)
        set_widgets(at, {"seed": 3} if page != "lookup" else {"m": 6}, {"densities": "dn_", "quantiles": "qt_",
                                                                       "lookup": "lk_"}[page])
        assert not at.exception
    after = snapshot()
    assert {k: v for k, v in after.items() if k in before} == before
