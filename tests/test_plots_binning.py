"""apnull.plots.binning: breakpoint diagram and the cost-of-binning figures."""

import numpy as np
import pytest

import apnull
from apnull.binning import bin_table
from apnull.binning_cost import binning_cost
from apnull.plots.binning import bin_edge_trace, breakpoint_figure, threshold_binning_figure, threshold_error_figure


def _trace(fig, name):
    return next(t for t in fig.data if t.name == name)


def test_breakpoint_figure_is_the_reference_diagram():
    bps = apnull.breakpoints(300, 1.3)
    fig = breakpoint_figure(bps, 300, 1.3)
    (tr,) = fig.data
    assert tr.mode == "lines+markers"
    np.testing.assert_array_equal(tr.x, bps[1:])
    np.testing.assert_array_equal(tr.y, np.diff(bps))
    assert len(tr.x) == 79
    assert "i to the power 1.3, for i = 1, 2, 3, ...<br>while it stays at most 300: 80 breakpoints" in fig.layout.title.text
    assert "seq(" not in fig.layout.title.text and "^" not in fig.layout.title.text
    assert fig.layout.xaxis.title.text == "break point" and fig.layout.yaxis.title.text == "break width"


def test_one_breakpoint_says_why_there_is_nothing_to_draw():
    """max below 2^power leaves breakpoint 1 alone: no width exists, and the chart says so instead of
    showing empty axes."""
    bps = apnull.breakpoints(3, 2.5)
    assert bps.tolist() == [1.0]
    fig = breakpoint_figure(bps, 3, 2.5)
    assert len(fig.data[0].x) == 0
    (note,) = fig.layout.annotations
    assert "no width" in note.text and "5.657" in note.text and "raise max" in note.text
    assert "at most 3: 1 breakpoint, the last at 1.0" in fig.layout.title.text
    assert not breakpoint_figure(apnull.breakpoints(6, 2.5), 6, 2.5).layout.annotations


def test_bin_edge_trace_sits_between_whole_numbers():
    tr = bin_edge_trace([1, 3, 5], top=0.9, bottom=0.1)
    assert list(tr.x) == [0.5, 0.5, None, 2.5, 2.5, None, 4.5, 4.5, None]
    assert list(tr.y) == [0.1, 0.9, None] * 3


@pytest.fixture(scope="module")
def cost():
    return binning_cost(4, 0.95, 300, 1.3, "lower", "ap")


def test_threshold_binning_figure(cost):
    first = bin_table(300, 1.3)["first_n"].to_numpy()
    fig = threshold_binning_figure(cost, first, 4, 0.95, "ap", "lower")
    exact = _trace(fig, "threshold at n")
    np.testing.assert_array_equal(exact.x, np.arange(301))
    np.testing.assert_array_equal(exact.y, cost["threshold"])
    binned = _trace(fig, "threshold at the bin's representative (lower)")
    assert binned.line.shape == "hv"
    np.testing.assert_array_equal(binned.y, cost["binned_threshold"])
    reps = _trace(fig, "representatives")
    np.testing.assert_array_equal(reps.x, np.unique(cost["representative_n"]))
    np.testing.assert_allclose(reps.y, [apnull.threshold(4, int(r)) for r in reps.x], atol=1e-12)
    edges = _trace(fig, "bin edges")
    assert len(edges.x) == 3 * 80
    assert edges.x[0] == 0.5 and edges.x[3] == first[1] - 0.5
    # hover carries the exact numbers of each n
    np.testing.assert_allclose(np.asarray(exact.customdata)[:, 4], cost["difference"])


def test_threshold_error_figure(cost):
    first = bin_table(300, 1.3)["first_n"].to_numpy()
    fig = threshold_error_figure(cost, first, 4, 0.95, "ap", "lower")
    stricter = _trace(fig, "stricter (binned > exact)")
    lenient = _trace(fig, "more lenient (binned < exact)")
    same = _trace(fig, "no change")
    diff = cost["difference"].to_numpy()
    assert len(lenient.x) == 0  # lower representative: never too lenient
    assert len(stricter.x) + len(same.x) == 301
    np.testing.assert_allclose(stricter.y, diff[diff > 1e-12])
    np.testing.assert_array_equal(same.x, np.flatnonzero(np.abs(diff) <= 1e-12))
    assert _trace(fig, "bin edges")
    assert fig.layout.yaxis.range[1] == pytest.approx(1.1 * np.abs(diff).max())


def test_threshold_error_figure_shows_lenient_bars_for_middle():
    cost = binning_cost(4, 0.95, 300, 1.3, "middle", "ap")
    first = bin_table(300, 1.3)["first_n"].to_numpy()
    fig = threshold_error_figure(cost, first, 4, 0.95, "ap", "middle")
    lenient = _trace(fig, "more lenient (binned < exact)")
    assert len(lenient.x) == int((cost["difference"] < -1e-12).sum()) > 0
    assert np.all(np.asarray(lenient.y) < 0)
    assert fig.layout.yaxis.range[0] < 0
