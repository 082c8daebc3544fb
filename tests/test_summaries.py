import numpy as np
import pandas as pd
import pytest

import apnull
from apnull.views import null as summaries
from apnull.sampling import sample_null


def test_check_grid_request_returns_sizes():
    assert summaries.check_grid_request(4, 30, 3, 1000) == [(4, 30), (8, 60), (12, 90)]


@pytest.mark.parametrize("args, message", [
    ((0, 30, 5, 1000), "M"),
    ((4, -1, 5, 1000), "N"),
    ((4, 30, 0, 1000), "number of sizes K"),
    ((4, 30, 201, 1000), "at most 200"),
    ((4, 30, 5, 50), "draws must be at least 100"),
    ((4, 30, 50, 100_000), "K x draws"),
    ((4, 30, 2.5, 1000), "whole number"),
])
def test_check_grid_request_errors_say_what_to_change(args, message):
    with pytest.raises(ValueError, match=message):
        summaries.check_grid_request(*args)


def _samples(M=4, N=30, K=3, draws=2000, seed=5):
    out = []
    for m, n in summaries.check_grid_request(M, N, K, draws):
        s = sample_null(m, n, draws, seed)
        out.append((m, n, s.ap, s.pr))
    return out


def test_summarise_draws_uses_type7_quantiles_and_mean():
    samples = _samples()
    long = summaries.summarise_draws(samples)
    assert set(long.columns) == {"m", "n", "metric", "statistic", "value"}
    m, n, ap, pr = samples[1]
    row = long[(long.m == m) & (long.metric == "ap")].set_index("statistic")["value"]
    assert row["q95"] == pytest.approx(np.quantile(ap, 0.95))
    assert row["q75"] == pytest.approx(np.quantile(ap, 0.75))
    assert row["avg"] == pytest.approx(ap.mean())
    row = long[(long.m == m) & (long.metric == "pr")].set_index("statistic")["value"]
    assert row["q90"] == pytest.approx(np.quantile(pr, 0.90))


def test_wide_summary_has_the_reference_columns():
    wide = summaries.wide_summary(summaries.summarise_draws(_samples()))
    assert list(wide.columns) == ["m", "n", "metric", "q75", "q90", "q95", "avg"]
    assert len(wide) == 6


def test_exact_summary_matches_the_laws():
    long = summaries.exact_summary(4, 30, 2)
    first = long[(long.m == 4) & (long.metric == "ap")].set_index("statistic")["value"]
    assert first["q95"] == apnull.threshold(4, 30, q=0.95, method="exact")
    assert first["avg"] == pytest.approx(apnull.expected_ap(4, 30), abs=1e-15)
    pr = long[(long.m == 8) & (long.metric == "pr")].set_index("statistic")["value"]
    assert pr["q90"] == apnull.threshold(8, 60, metric="pr", q=0.90)
    assert pr["avg"] == pytest.approx(8 / 68)


def test_exact_summary_leaves_out_costly_ap_sizes_but_keeps_pr():
    long = summaries.exact_size_summary(300, 3000)
    assert set(long["metric"]) == {"pr"}


def test_monte_carlo_and_exact_summaries_agree():
    mc = summaries.summarise_draws(_samples(K=2, draws=200_000)).set_index(["m", "metric", "statistic"])["value"]
    ex = summaries.exact_summary(4, 30, 2).set_index(["m", "metric", "statistic"])["value"]
    for key in ex.index:
        assert mc[key] == pytest.approx(ex[key], abs=0.01), key


def test_density_curves_integrate_to_one_and_exact_overlay_is_close():
    samples = _samples(K=2, draws=100_000)
    curves = summaries.density_curves(samples, "ap")
    assert [(c["m"], c["n"]) for c in curves] == [(4, 30), (8, 60)]
    for c in curves:
        assert np.trapezoid(c["y"], c["x"]) == pytest.approx(1, abs=0.02)
    exact = summaries.exact_density_curves(curves, "ap")
    assert [e["method"] for e in exact] == ["exact", "grid"]
    for c, e in zip(curves, exact):
        # the KDE of 10^5 draws is close to the exact law smoothed with the same kernel
        assert np.max(np.abs(c["y"] - e["y"])) < 0.05 * e["y"].max()


def test_exact_density_curves_skip_costly_sizes():
    curves = [{"m": 300, "n": 3000, "x": summaries.DENSITY_GRID, "y": None, "bw": 0.01}]
    assert summaries.exact_density_curves(curves, "ap") == []
    assert len(summaries.exact_density_curves(curves, "pr")) == 1


def test_exact_mean_curve():
    frame = summaries.exact_mean_curve(4, 30, 3)
    assert isinstance(frame, pd.DataFrame)
    assert frame["value"].tolist() == [apnull.expected_ap(4 * i, 30 * i) for i in (1, 2, 3)]
