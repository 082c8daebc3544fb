import numpy as np
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
