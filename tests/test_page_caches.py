"""The hypergeometric, binning and sampled-metrics pages' caches: shared, bounded, read-only values."""

import numpy as np
import pytest

from apnull.memo import Memo, freeze, rough_nbytes
from apnull.ui import binning_cache, hypergeom_cache, lookup_cache, ranking_cache, sampled_cache


def test_freeze_makes_nested_arrays_read_only():
    value = (np.zeros(3), [np.ones(2)], {"a": np.arange(4)})
    assert freeze(value) is value
    for arr in (value[0], value[1][0], value[2]["a"]):
        with pytest.raises(ValueError):
            arr[0] = 5


def test_rough_nbytes_counts_arrays_and_frames():
    import pandas as pd

    assert rough_nbytes(np.zeros(10)) == 80
    assert rough_nbytes((np.zeros(10), "abcd")) == 84
    assert rough_nbytes(pd.DataFrame({"x": np.zeros(10)})) >= 80


def test_every_page_cache_is_bounded_in_entries_and_bytes():
    memos = [hypergeom_cache.BLOCKS, hypergeom_cache.HYPER, hypergeom_cache.VIEWS, binning_cache.VIEWS,
             sampled_cache.FIGURE1, sampled_cache.CURVES, sampled_cache.TABLES, sampled_cache.CHUNKS,
             sampled_cache.CHANGES, sampled_cache.SIMULATIONS, sampled_cache.FIGURES]
    for memo in memos:
        assert isinstance(memo, Memo) and memo.max_bytes is not None and memo.max_entries <= 512
    assert sum(m.max_bytes for m in memos) <= 512 * 2**20
    # the views ready to display (tables, packed figures) of the sampled, lookup and ranking pages
    views = [sampled_cache.VIEWS, lookup_cache.VIEWS, ranking_cache.RANKINGS, ranking_cache.NULLS,
             ranking_cache.FRAMES]
    for memo in views:
        assert isinstance(memo, Memo) and memo.max_bytes is not None and memo.max_entries <= 512
    assert sum(m.max_bytes for m in views) <= 80 * 2**20


def test_page_views_are_shared_and_keyed_by_what_they_depend_on():
    """A rerun with the same inputs gets the same objects; the sampled page's AP curves serve every k."""
    items = (("A", (1, 3)), ("B", (2, 40)))
    tables = sampled_cache.example_tables(items, 50, 10, 5, True)
    assert sampled_cache.example_tables(items, 50, 10, 5, True) is tables
    ap = sampled_cache.samples_view(items, 50, "ap", 5, True, "AP")
    assert sampled_cache.samples_view(items, 50, "ap", 7, True, "AP") is ap  # AP ignores k
    recall = sampled_cache.samples_view(items, 50, "recall", 5, True, "Recall@5")
    assert sampled_cache.samples_view(items, 50, "recall", 7, True, "Recall@7") is not recall
    rows = (("x", False), ("a", True), ("b", True))
    view = ranking_cache.ranking_view(rows, 2)
    assert ranking_cache.ranking_view(rows, 2) is view and view.k_ok and list(view.shown["in top k"]) == [
        True, True, False]
    assert ranking_cache.position_view(2, 1, view.curve.ap) is ranking_cache.position_view(2, 1, view.curve.ap)
    observed = {"ap": 0.5, "pr": 0.5}
    first = lookup_cache.lookup_view(3, 10, 0.95, "auto", observed, 1000, 0)
    assert lookup_cache.lookup_view.ready(3, 10, 0.95, "auto", observed, 1000, 0)
    assert lookup_cache.lookup_view(3, 10, 0.95, "auto", observed, 1000, 0) is first


def test_hypergeometric_view_is_shared_and_read_only():
    first = hypergeom_cache.hypergeom_view(3, 10, 3, 200, 7)
    assert hypergeom_cache.hypergeom_view.ready(3, 10, 3, 200, 7)
    assert hypergeom_cache.hypergeom_view(3, 10, 3, 200, 7) is first
    assert len(first.sample.precision) == 200 and len(first.hyper) == 200
    with pytest.raises(ValueError):
        first.sample.ap[0] = 1.0
    with pytest.raises(ValueError):
        first.hyper[0] = 1.0


def test_binning_view_is_shared_and_errors_are_not_cached():
    first = binning_cache.binning_view(3, 0.95, 60, 1.3, "lower", "ap")
    assert binning_cache.binning_view(3, 0.95, 60, 1.3, "lower", "ap") is first
    before = len(binning_cache.VIEWS)
    with pytest.raises(ValueError):
        binning_cache.binning_view(3, 0.95, 60, 0.5, "lower", "ap")
    assert len(binning_cache.VIEWS) == before


def test_sampled_caches_share_results():
    full, top = sampled_cache.figure1_data(50, 5)
    assert sampled_cache.figure1_data(50, 5)[0] is full
    items = (("A", (1, 3, 7)), ("B", (2, 2, 9)))
    table = sampled_cache.table_long(items, 50, 10, 5, True)
    assert sampled_cache.table_long(items, 50, 10, 5, True) is table
    chunk = sampled_cache.curve_chunk(items, 50, (5, 10), "AP", 5, True)
    assert sampled_cache.curve_chunk(items, 50, (5, 10), "AP", 5, True) is chunk


def test_a_page_view_is_built_once_ready_after_and_errors_are_not_stored():
    from apnull.ui.pageview import PageView

    built = []

    def build(a, b):
        built.append((a, b))
        if b < 0:
            raise ValueError("b must be at least 0")
        return {"sum": a + b}

    view = PageView(Memo(4), build, key=lambda a, b: ("sum", a, b))
    assert not view.ready(1, 2) and view.key(1, 2) == ("sum", 1, 2)
    first = view.shown(1, 2, spinner="adding...")
    assert first == {"sum": 3} and view.ready(1, 2) and view.shown(1, 2, spinner="adding...") is first
    assert view(1, 2) is first and built == [(1, 2)]
    assert view.shown(5, 5, spinner="adding...", quick=True) == {"sum": 10} and view.ready(5, 5)
    for _ in range(2):
        with pytest.raises(ValueError):
            view(1, -1)
    assert not view.ready(1, -1) and built.count((1, -1)) == 2
    assert PageView(Memo(2), build).key(1, 2) == (1, 2)
