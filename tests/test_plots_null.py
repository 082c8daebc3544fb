import numpy as np
import pytest
import pandas as pd
import plotly.graph_objects as go

from apnull import plots
from apnull.views import null as summaries
from apnull.sampling import sample_null
from plotly_json import decode


def _curves():
    samples = []
    for m, n in [(4, 30), (8, 60), (12, 90)]:
        s = sample_null(m, n, 3000, 1)
        samples.append((m, n, s.ap, s.pr))
    return summaries.density_curves(samples, "ap")


def test_size_colors_run_along_the_scale():
    colors = plots.size_colors([34, 68, 102])
    assert len(colors) == 3 and len(set(colors)) == 3


def test_density_figure_one_line_per_size_plus_colorbar():
    curves = _curves()
    fig = plots.density_figure(curves, "ap", 4, 30, draws=3000)
    assert isinstance(fig, go.Figure)
    lines = [t for t in fig.data if t.mode == "lines"]
    assert [t.name for t in lines] == ["m=4, n=30", "m=8, n=60", "m=12, n=90"]
    # arrays go out as float32 typed arrays, encoded once when the figure is built
    assert np.allclose(decode(lines[0].y), curves[0]["y"], rtol=1e-6, atol=1e-6)
    assert np.array_equal(decode(lines[2].x), np.float32(curves[2]["x"]))
    bar = [t for t in fig.data if t.mode == "markers"][0]
    assert bar.marker.showscale and bar.marker.cmin == 34 and bar.marker.cmax == 102
    assert "Average Precision" in fig.layout.title.text


def test_density_figure_exact_overlay_is_dashed_and_in_legend_once():
    curves = _curves()
    exact = summaries.exact_density_curves(curves, "ap")
    fig = plots.density_figure(curves, "ap", 4, 30, exact=exact)
    dashed = [t for t in fig.data if t.line.dash == "dash"]
    assert len(dashed) == len(exact)
    assert sum(bool(t.showlegend) for t in dashed) == 1


def test_quantile_figure_traces():
    long = summaries.exact_summary(4, 30, 3)
    fig = plots.quantile_figure(long, 4, 30, exact_mean=summaries.exact_mean_curve(4, 30, 3))
    names = [t.name for t in fig.data]
    assert "Average Precision: 95th percentile" in names and "Precision@R: mean" in names
    assert "exact E[AP]" in names
    q95 = next(t for t in fig.data if t.name == "Average Precision: 95th percentile")
    expected = long[(long.metric == "ap") & (long.statistic == "q95")].sort_values("m")["value"]
    assert np.allclose(q95.y, expected)
    # the grey M/(M+N) line
    assert any(abs(s.y0 - 4 / 34) < 1e-12 for s in fig.layout.shapes)


def test_quantile_figure_skips_missing_metric():
    long = pd.DataFrame({"m": [4], "n": [30], "metric": ["pr"], "statistic": ["q95"], "value": [0.5]})
    fig = plots.quantile_figure(long, 4, 30)
    assert [t.name for t in fig.data if t.name and "Average" in t.name] == []


def _parts():
    parts = []
    for m, n in [(4, 30), (8, 60)]:
        s = sample_null(m, n, 3000, 1)
        parts.append(summaries.summarise_size(m, n, s.ap, s.pr))
    return parts


def test_discrete_pr_laws_are_the_sample_shares_and_the_hypergeometric_pmf():
    from apnull.hypergeom import hypergeom_pmf

    laws = summaries.discrete_pr_laws(_parts())
    s = sample_null(8, 60, 3000, 1)
    law = laws[1]
    assert law["m"] == 8 and law["x"].tolist() == [j / 8 for j in range(9)]
    np.testing.assert_allclose(law["share"], np.bincount(np.rint(s.pr * 8).astype(int), minlength=9) / 3000)
    hits, probs = hypergeom_pmf(8, 60, 8)
    np.testing.assert_allclose(law["exact"][hits], probs)
    assert law["exact"].sum() == pytest.approx(1) and law["share"].sum() == pytest.approx(1)


def test_pmf_figure_steps_per_size_and_exact_dots():
    laws = summaries.discrete_pr_laws(_parts())
    fig = plots.pmf_figure(laws, 4, 30, draws=3000)
    steps = [t for t in fig.data if t.mode == "lines" and t.name.startswith("m=")]
    assert [t.name for t in steps] == ["m=4, n=30", "m=8, n=60"]
    # the outline of a histogram with one bar of width 1/m per value j/m, height share x m, cut at 0 and 1
    x, y = decode(steps[0].x), decode(steps[0].y)
    assert x[0] == 0 and x[-1] == 1 and y[0] == y[-1] == 0
    np.testing.assert_allclose(x[2:-2:2], (np.arange(1, 5) - 0.5) / 4, rtol=1e-6)  # inner edges (j - 1/2) / m
    np.testing.assert_allclose(y[1:-1:2], laws[0]["share"] * 4, rtol=1e-6)
    dots = next(t for t in fig.data if t.mode == "markers")
    kept = [law["exact"][law["exact"] >= 1e-3 * law["exact"].max()] * law["m"] for law in laws]
    assert len(kept[0]) == 4  # four hits in the top 4 (P = 2e-5) gets no dot
    np.testing.assert_allclose(decode(dots.y), np.concatenate(kept), rtol=1e-6, atol=1e-9)
    assert dots.marker.showscale and "discrete" in fig.layout.title.text
    assert dots.cliponaxis is False  # the dots at 0 and 1 are drawn whole over the axis ends


@pytest.mark.parametrize("M, N", [(1, 1), (1, 30), (3, 5), (4, 30), (7, 2)])
def test_pmf_figure_never_draws_precision_at_r_below_0_or_above_1(M, N):
    parts = []
    for i in (1, 2, 3):
        s = sample_null(M * i, N * i, 500, 2)
        parts.append(summaries.summarise_size(M * i, N * i, s.ap, s.pr))
    fig = plots.pmf_figure(summaries.discrete_pr_laws(parts), M, N, draws=500)
    drawn = [decode(t.x) for t in fig.data if isinstance(t.x, dict)]  # the steps and the dots
    assert len(drawn) == 3 + 1
    assert all(x.min() >= 0 and x.max() <= 1 for x in drawn)
    lo, hi = fig.layout.xaxis.range
    assert lo == 0 and hi <= 1


def test_quantile_figure_has_one_panel_per_metric_and_one_legend_entry_per_statistic():
    long = summaries.exact_summary(4, 30, 3)
    fig = plots.quantile_figure(long, 4, 30, exact_mean=summaries.exact_mean_curve(4, 30, 3))
    pr = next(t for t in fig.data if t.name == "Precision@R: 95th percentile")
    ap = next(t for t in fig.data if t.name == "Average Precision: 95th percentile")
    assert ap.xaxis == "x" and pr.xaxis == "x2"
    shown = [t.name for t in fig.data if t.showlegend is not False]
    assert shown == ["95th percentile", "90th percentile", "75th percentile", "mean", "exact E[AP]",
                     "M/(M+N) = 0.1176"]
    assert {t.legendgroup for t in fig.data if t.name.endswith("95th percentile")} == {"q95"}
