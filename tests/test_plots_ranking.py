"""Figure builders of the ranking editor: the PR step curve (its shaded area is AP) and the null law
with the ranking's AP marked."""

from __future__ import annotations

import numpy as np
import plotly.graph_objects as go
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from apnull import metrics as mt
from apnull.views import ranking as rk
from apnull.plots.ranking import MAX_BARS, null_position_figure, pr_curve_figure
from apnull.significance import null_distribution


def _example_curve():
    rows = list(rk.PR_EXAMPLE)
    return rk.pr_curve_points(rk.relevance(rows), [i for i, _ in rows])


def _area(fig):
    return next(t for t in fig.data if t.fill == "tozeroy")


def test_area_trace_integrates_to_ap_of_the_precision_recall_example():
    fig = pr_curve_figure(_example_curve(), k=3)
    assert isinstance(fig, go.Figure)
    area = _area(fig)
    x, y = np.asarray(area.x, float), np.asarray(area.y, float)
    assert np.trapezoid(y, x) == pytest.approx(8 / 15, abs=1e-15)
    # the same area as a step sum: width 1/m at each relevant item's precision
    assert np.sum(np.diff(x)[::2] * y[::2]) == pytest.approx(8 / 15, abs=1e-15)
    assert "AP = 0.533" in " ".join(a.text for a in fig.layout.annotations)
    assert "0.5333" in fig.layout.title.text


@settings(max_examples=100, deadline=None)
@given(st.lists(st.booleans(), min_size=1, max_size=80).filter(any))
def test_area_trace_integrates_to_ap(rel):
    fig = pr_curve_figure(rk.pr_curve_points(rel))
    area = _area(fig)
    assert np.trapezoid(np.asarray(area.y, float), np.asarray(area.x, float)) == pytest.approx(
        mt.average_precision(rel), abs=1e-12)


def test_points_and_hover():
    curve = _example_curve()
    fig = pr_curve_figure(curve, k=3)
    rel = next(t for t in fig.data if t.name == "relevant")
    other = next(t for t in fig.data if t.name == "not relevant")
    assert list(rel.customdata) == [2, 4, 5] and list(other.customdata) == [1, 3, 6]
    assert np.allclose(rel.y, [1 / 2, 2 / 4, 3 / 5]) and np.allclose(rel.x, [1 / 3, 2 / 3, 1])
    assert "rank 4: <b>b</b> (relevant)" in rel.text[1]
    assert "precision@4 = 2/4 = 0.5000" in rel.text[1] and "recall@4 = 2/3 = 0.6667" in rel.text[1]
    ring = next(t for t in fig.data if t.name == "k = 3")
    assert ring.x[0] == pytest.approx(1 / 3) and ring.y[0] == pytest.approx(1 / 3)
    path = next(t for t in fig.data if t.name == "path in rank order")
    assert len(path.x) == 6


def test_k_ring_only_inside_the_ranking():
    curve = _example_curve()
    for k in (None, 0, 7):
        assert not [t for t in pr_curve_figure(curve, k=k).data if (t.name or "").startswith("k =")]


def test_all_relevant_has_no_other_trace():
    fig = pr_curve_figure(rk.pr_curve_points([1, 1, 1]))
    assert [t.name for t in fig.data if t.mode == "markers"] == ["relevant"]
    assert np.trapezoid(_area(fig).y, _area(fig).x) == pytest.approx(1)


@pytest.mark.parametrize("m, n, method", [(3, 3, "exact"), (2, 8, "exact"), (10, 40, "grid")])
def test_null_figure_bars_hold_the_law_and_the_tail(m, n, method):
    law = null_distribution(m, n, "ap", "auto")
    assert law.method == method
    values, probs = law.values, law.probs
    ap = 8 / 15 if m == 3 else 0.4
    p = law.pvalue(ap)
    fig = null_position_figure(values, probs, ap, p, m, n, law.method)
    bars = [t for t in fig.data if isinstance(t, go.Bar)]
    assert sum(np.sum(b.y) for b in bars) == pytest.approx(1)
    tail = next(b for b in bars if "p-value" in b.name)
    if values.size <= MAX_BARS:  # one bar per value: the red bars are exactly P(AP >= ap)
        assert np.sum(tail.y) == pytest.approx(p)
        assert min(tail.x) >= ap - 1e-9
    else:  # binned: the red bins start at the first bin whose centre passes ap
        assert min(tail.x) >= ap
    assert any(abs(s.x0 - ap) < 1e-12 for s in fig.layout.shapes)
    assert f"p = {p:.3g}" in " ".join(a.text for a in fig.layout.annotations)
    assert f"m = {m}, n = {n}" in fig.layout.title.text


def test_null_figure_monte_carlo_and_degenerate_law():
    law = null_distribution(5, 20, "ap", "mc", draws=2000, seed=1)
    fig = null_position_figure(law.values, law.probs, 0.9, law.pvalue(0.9), 5, 20, "mc")
    assert "Monte Carlo" in fig.layout.title.text
    assert sum(np.sum(t.y) for t in fig.data) == pytest.approx(1)
    one = null_distribution(2, 0, "ap", "auto")  # no negatives: AP is always 1
    fig = null_position_figure(one.values, one.probs, 1.0, 1.0, 2, 0, one.method)
    assert [t.name for t in fig.data] == ["AP ≥ this ranking's (p-value)"]


def test_item_names_are_escaped_in_hover():
    fig = pr_curve_figure(rk.pr_curve_points([1, 0], ["<img src=x>", "a&b"]))
    texts = [t for tr in fig.data if tr.text is not None for t in tr.text]
    assert any("&lt;img src=x&gt;" in t for t in texts) and any("a&amp;b" in t for t in texts)
    assert not any("<img" in t for t in texts)


@pytest.mark.parametrize("m, n, ap", [(2, 8, 0.3), (2, 8, 0.9), (10, 40, 0.4)])
def test_null_figure_label_sits_above_the_bars(m, n, ap):
    """The observed AP's label has headroom of its own: every bar stays below 1 - LABEL_ROOM of the
    y range (the label box hid the bar tops, so equal bars of 0.05 looked like 0.043)."""
    from apnull.plots.ranking import LABEL_ROOM

    law = null_distribution(m, n, "ap", "auto")
    fig = null_position_figure(law.values, law.probs, ap, law.pvalue(ap), m, n, law.method)
    top = max(float(np.max(t.y)) for t in fig.data)
    lo, hi = fig.layout.yaxis.range
    assert lo == 0 and top <= (1 - LABEL_ROOM) * hi + 1e-12
    (label,) = fig.layout.annotations
    assert label.yref == "paper" and label.y == 1 and label.yanchor == "top"
