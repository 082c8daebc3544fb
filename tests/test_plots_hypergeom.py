"""Figure data of apnull.plots.hypergeom (built from plain data, no server)."""

from __future__ import annotations

import numpy as np
import plotly.graph_objects as go
import pytest

from apnull import hypergeom as hg
from apnull.views import hypergeometric as hv
from apnull.plots.hypergeom import ap_precision_scatter, histogram_data, precision_histograms

M, N, K = 4, 32, 4


@pytest.fixture(scope="module")
def data():
    sample = hv.shuffled_precision_at_k(M, N, K, 10_000, seed=2022)
    hyper = hg.hypergeom_precision_at_k(M, N, K, 10_000, seed=2022)
    return sample, hyper, hv.thresholds_table(M, N, K, sample.precision), hg.hypergeom_pmf(M, N, K)


def traces(fig, kind=None, name_start=None):
    out = [t for t in fig.data if kind is None or t.type == kind]
    return [t for t in out if name_start is None or (t.name or "").startswith(name_start)]


def test_histograms_bars_are_shares_at_j_over_k(data):
    sample, hyper, thresholds, pmf = data
    fig = precision_histograms(sample.precision, hyper, K, thresholds, pmf=pmf, m=M, n=N)
    assert isinstance(fig, go.Figure)
    bars = traces(fig, "bar")
    assert [b.name for b in bars] == ["shuffled", "hypergeometric"]
    for bar, x, axis in zip(bars, (sample.precision, hyper), ("y", "y2")):
        counts = np.bincount(np.rint(x * K).astype(int))
        np.testing.assert_allclose(bar.x, np.arange(counts.size) / K)
        np.testing.assert_allclose(bar.y, counts / x.size)
        assert np.sum(bar.y) == pytest.approx(1.0)
        np.testing.assert_array_equal(np.asarray(bar.customdata)[:, 1], counts)  # hover: draws
        assert bar.width == pytest.approx(0.6 / K) and bar.yaxis == axis
    # shared x axis: the top panel's x matches the bottom one's
    assert fig.layout.xaxis.matches == "x2"


def test_histograms_exact_pmf_markers_and_threshold_lines(data):
    sample, hyper, thresholds, pmf = data
    fig = precision_histograms(sample.precision, hyper, K, thresholds, pmf=pmf, m=M, n=N)
    marks = traces(fig, "scatter", "exact hypergeometric pmf")
    assert len(marks) == 2 and {t.yaxis for t in marks} == {"y", "y2"}
    for t in marks:
        np.testing.assert_allclose(t.x, pmf[0] / K)
        np.testing.assert_allclose(t.y, pmf[1])
        assert t.mode == "markers"
    assert sum(bool(t.showlegend) for t in marks) == 1
    for name, value in zip(thresholds["name"], thresholds["value"]):
        lines = traces(fig, "scatter", f"{name} = ")
        assert len(lines) == 2, name  # one per panel
        for line in lines:
            assert tuple(line.x) == (value, value) and line.y[0] == 0 and line.y[1] > 0
        assert [bool(t.showlegend) for t in lines] == [True, False]  # one legend entry
    names = [t.name for t in fig.data if t.showlegend is not False]
    assert "m / (m + n) = 0.1111" in names and "95% chance threshold = 0.5000" in names
    # every line reaches above the tallest bar or diamond
    top = max(max(b.y) for b in traces(fig, "bar"))
    assert all(t.y[1] >= top for t in traces(fig, "scatter") if t.mode == "lines")


def test_histogram_data_keeps_empty_bins():
    hits, counts = histogram_data(np.array([0.0, 0.5, 0.5, 1.0]), 2)
    np.testing.assert_array_equal(hits, [0, 1, 2])
    np.testing.assert_array_equal(counts, [1, 2, 1])
    hits, counts = histogram_data(np.array([0.0, 0.75]), 4)
    np.testing.assert_array_equal(counts, [1, 0, 0, 1])


def test_histograms_without_pmf_and_with_tuples():
    fig = precision_histograms([0.0, 0.5], [0.5, 0.5], 2, [("m / (m + n)", 0.25)])
    assert not traces(fig, "scatter", "exact")
    assert len(traces(fig, "scatter", "m / (m + n)")) == 2


def test_scatter_points_hover_exact_values(data):
    sample = data[0]
    fig = ap_precision_scatter(sample.precision, sample.ap, K, max_points=3000, expected_ap=0.19, ap_threshold=0.41)
    points = fig.data[0]
    assert points.type == "scattergl" and len(points.x) == 3000
    cd = np.asarray(points.customdata)
    np.testing.assert_array_equal(cd[:, 0], sample.precision[:3000])
    np.testing.assert_array_equal(cd[:, 1], sample.ap[:3000])
    np.testing.assert_array_equal(points.y, sample.ap[:3000])
    assert np.all(np.abs(np.asarray(points.x) - sample.precision[:3000]) <= 0.3 / K)
    assert not np.array_equal(points.x, sample.precision[:3000])  # jittered
    assert "3,000 of 10,000" in fig.layout.title.text


def test_scatter_group_means_use_every_draw(data):
    sample = data[0]
    fig = ap_precision_scatter(sample.precision, sample.ap, K, max_points=500)
    means = fig.data[1]
    hits = np.rint(sample.precision * K).astype(int)
    seen = np.unique(hits)
    np.testing.assert_allclose(means.x, seen / K)
    np.testing.assert_allclose(means.y, [sample.ap[hits == h].mean() for h in seen])
    cd = np.asarray(means.customdata)
    np.testing.assert_array_equal(cd[:, 1], [np.sum(hits == h) for h in seen])
    assert np.argmax(means.marker.size) == np.argmax(cd[:, 1])  # the biggest marker is the commonest value


def test_scatter_reference_lines():
    p = np.array([0.0, 0.25, 0.25, 0.5])
    ap = np.array([0.1, 0.3, 0.35, 0.6])
    fig = ap_precision_scatter(p, ap, 4, expected_ap=0.19, ap_threshold=0.41)
    names = [t.name for t in fig.data]
    assert "exact E[AP] = 0.1900" in names and "exact AP 95% threshold = 0.4100" in names
    line = next(t for t in fig.data if t.name.startswith("exact AP 95%"))
    assert tuple(line.y) == (0.41, 0.41)
    assert len(ap_precision_scatter(p, ap, 4).data) == 2  # no lines unless given
    assert "4 draws" in fig.layout.title.text
