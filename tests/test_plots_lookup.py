"""apnull.plots.lookup: the null law figure of the threshold lookup page."""

import numpy as np
import pytest

import apnull
from apnull.plots.lookup import MAX_STEMS, law_figure, law_window, pmf_bars


def _named(fig, prefix):
    return [t for t in fig.data if (t.name or "").startswith(prefix)]


def _line_x(fig, prefix):
    (t,) = _named(fig, prefix)
    assert t.x[0] == t.x[1]
    return t.x[0]


def test_pr_law_is_drawn_as_stems_with_exact_probabilities():
    law = apnull.null_distribution(4, 30, "pr")
    fig = law_figure(law, 0.5, 0.75, mean=4 / 34, q=0.95)
    (pmf,) = [t for t in fig.data if t.name == "pmf"]
    assert pmf.mode == "markers"
    np.testing.assert_allclose(pmf.x, law.values)
    np.testing.assert_allclose(pmf.y, law.probs)
    (stems,) = _named(fig, "pmf stems")
    assert len(stems.x) == 3 * law.values.size
    assert _line_x(fig, "threshold") == 0.5
    assert _line_x(fig, "observed") == 0.75
    assert _line_x(fig, "M/(M+N)") == pytest.approx(4 / 34)
    assert _line_x(fig, "mean") == pytest.approx(4 / 34)
    (thr,) = _named(fig, "threshold")
    assert thr.line.color == "#e45756" and thr.name == "threshold 95% = 0.5"
    (obs,) = _named(fig, "observed")
    assert obs.line.color == "#2ca02c"
    (mean,) = _named(fig, "mean")
    assert mean.line.dash == "dot"
    # lines reach just above the tallest stem
    assert thr.y[1] == pytest.approx(1.08 * law.probs.max())


def test_small_exact_ap_law_hover_gives_placement_counts():
    law = apnull.null_distribution(2, 5, "ap")
    assert law.values.size <= MAX_STEMS
    fig = law_figure(law, law.quantile(0.9), 0.6)
    (pmf,) = [t for t in fig.data if t.name == "pmf"]
    np.testing.assert_allclose(np.asarray(pmf.customdata)[:, 0], law.counts)
    assert np.all(np.asarray(pmf.customdata)[:, 1] == 21)  # C(7, 2)
    assert "placements" in pmf.hovertemplate
    # without an exact mean the law's own mean is drawn and said so
    (mean,) = _named(fig, "mean of the law")
    assert mean.x[0] == pytest.approx(apnull.expected_ap(2, 5))


def test_wide_exact_law_is_binned_without_losing_probability():
    law = apnull.null_distribution(4, 30, "ap")
    assert law.values.size > MAX_STEMS
    t = law.quantile(0.95)
    fig = law_figure(law, t, 0.41, mean=apnull.expected_ap(4, 30), q=0.95)
    (bars,) = [tr for tr in fig.data if tr.name == "pmf"]
    assert bars.type == "bar"
    assert np.sum(bars.y) == pytest.approx(1.0, abs=1e-12)
    lo, hi = fig.layout.xaxis.range
    width = bars.width
    assert (hi - lo) / width == pytest.approx(100, rel=1e-9)
    assert 60 <= np.sum((np.asarray(bars.x) > lo) & (np.asarray(bars.x) < hi)) <= 101
    assert _line_x(fig, "threshold") == t == pytest.approx(0.42687908496732)
    assert _line_x(fig, "mean") == pytest.approx(0.2010216575)
    assert "exact (all placements)" in fig.layout.title.text


def test_grid_law_bars_and_title():
    law = apnull.null_distribution(10, 300, "ap")
    assert law.method == "grid"
    t = law.quantile(0.95)
    fig = law_figure(law, t, 0.2, mean=apnull.expected_ap(10, 300))
    (bars,) = [tr for tr in fig.data if tr.name == "pmf"]
    assert np.sum(bars.y) == pytest.approx(1.0, abs=1e-9)
    assert len(bars.x) <= 2000
    assert "grid law" in fig.layout.title.text
    assert _line_x(fig, "threshold") == t


def test_monte_carlo_law_is_a_histogram_of_the_draws():
    law = apnull.null_distribution(4, 30, "ap", method="mc", draws=20_000, seed=3)
    fig = law_figure(law, law.quantile(0.95), 0.41)
    (bars,) = [tr for tr in fig.data if tr.name == "pmf"]
    counts = np.rint(np.asarray(bars.y) * 20_000)
    assert counts.sum() == 20_000
    assert "share of draws" in fig.layout.yaxis.title.text
    assert "Monte Carlo, 20,000 draws, seed 3" in fig.layout.title.text
    assert _named(fig, "mean of the sample")


def test_pmf_bars_and_window():
    bars = pmf_bars([0.1, 0.12, 0.5, 0.95], [0.25, 0.25, 0.25, 0.25], 0.0, 1.0, bars=10)
    assert list(bars["prob"]) == [0.5, 0.25, 0.25]
    assert list(bars["points"]) == [2, 1, 1]
    np.testing.assert_allclose(bars["left"], [0.1, 0.5, 0.9])
    law = apnull.null_distribution(40, 300, "ap")
    lo, hi = law_window(law, (0.9,))
    assert lo < law.quantile(1e-4) and hi >= 0.9 and 0 <= lo < hi <= 1
    lo, hi = law_window(law, ())
    assert lo < law.quantile(1e-4) < law.quantile(1 - 1e-4) < hi < 0.5


def test_no_observed_value():
    law = apnull.null_distribution(3, 3, "pr")
    fig = law_figure(law, 2 / 3)
    assert not _named(fig, "observed")
