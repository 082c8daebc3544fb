"""apnull.plots.score: the volcano plot and one perturbation's permutation null."""

import numpy as np
import pandas as pd
import pytest

from apnull.plots.score import MAX_SVG_POINTS, NOT_SIGNIFICANT, SIGNIFICANT, null_figure, volcano_figure
from apnull.views import score as view

PERT = "Metadata_pert"


def _points(n=4, fdr=0.05):
    groups = pd.DataFrame({PERT: [f"t{i}" for i in range(n)], "n_replicates": 4,
                           "mAP": np.linspace(0.9, 0.1, n), "p_value": np.geomspace(0.001, 0.9, n),
                           "null": "permutation"})
    groups["q_value"] = np.minimum(1, groups["p_value"] * n / np.arange(1, n + 1))
    return view.volcano_data(groups, PERT, fdr)


def _named(fig, prefix):
    return [t for t in fig.data if (t.name or "").startswith(prefix)]


def test_volcano_points_colours_and_hover():
    d = _points()
    fig = volcano_figure(d, 0.05, cutoff=view.p_cutoff(d), p_floor=0.001, highlight="t1", method="permutation")
    (sig,) = _named(fig, "q ≤ 0.05")
    (rest,) = _named(fig, "q > 0.05")
    assert sig.marker.color == SIGNIFICANT and rest.marker.color == NOT_SIGNIFICANT
    assert sig.type == "scatter"
    assert len(sig.x) + len(rest.x) == len(d)
    assert sig.name == f"q ≤ 0.05 ({int(d['significant'].sum())})"
    np.testing.assert_allclose(sig.y, d.loc[d["significant"], "neg_log10_p"])
    custom = np.asarray(sig.customdata, dtype=object)
    assert custom[0, 0] == "t0" and custom[0, 1] == 4 and custom[0, 2] == pytest.approx(0.001)
    for part in ("customdata[0]", "replicates", "mAP = %{x", "p = ", "q = "):
        assert part in sig.hovertemplate
    (cut,) = _named(fig, "BH cutoff")
    assert cut.y[0] == pytest.approx(-np.log10(view.p_cutoff(d)))
    (floor,) = _named(fig, "smallest p")
    assert floor.y[0] == pytest.approx(3.0)
    (ring,) = _named(fig, "selected: t1")
    assert ring.x[0] == d.loc[1, "mAP"] and np.asarray(ring.customdata, dtype=object)[0, 0] == "t1"
    assert "permutation null" in fig.layout.title.text
    assert fig.layout.xaxis.title.text.startswith("mAP") and fig.layout.yaxis.title.text == "-log10 p-value"


def test_volcano_without_hits_or_highlight_and_many_points():
    d = _points(fdr=1e-9)
    fig = volcano_figure(d, 1e-9)
    assert not _named(fig, "BH cutoff") and not _named(fig, "selected") and not _named(fig, "smallest p")
    (sig,) = _named(fig, "q ≤ 1e-09")
    assert len(sig.x) == 0
    big = _points(MAX_SVG_POINTS + 1)
    assert {t.type for t in volcano_figure(big, 0.05).data} == {"scattergl"}


def test_null_figure_has_bars_observed_line_and_p_in_title():
    null = np.random.default_rng(0).beta(2, 8, 999)
    hist = view.null_histogram(null, 0.7)
    fig = null_figure(hist, 0.7, "t0", 0.001, 0.004, permutations=999, n_replicates=4, null_mean=float(null.mean()))
    (bars,) = [t for t in fig.data if t.name == "null"]
    np.testing.assert_allclose(bars.y, hist["share"])
    assert np.asarray(bars.customdata)[:, 2].sum() == 999
    (obs,) = _named(fig, "observed mAP")
    assert obs.x[0] == obs.x[1] == 0.7 and obs.line.dash == "dash"
    assert obs.y[1] == pytest.approx(1.08 * hist["share"].max())
    (mean,) = _named(fig, "null mean")
    assert mean.x[0] == pytest.approx(null.mean())
    title = fig.layout.title.text
    assert title.startswith("t0: mAP = 0.7000, p = 0.001, q = 0.004")
    assert "999 label permutations" in title and "4 replicates" in title
