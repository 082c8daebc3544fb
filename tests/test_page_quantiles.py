import threading

import numpy as np
import pytest

import apnull
from apptest import decode, figures, run_page, trace


def _run(method=None, **numbers):
    return run_page("quantiles", **({"method": method} if method else {}), **numbers)


def _trace(at, name):
    return trace(figures(at)[0], name)


def test_monte_carlo_defaults_table_and_figure_agree():
    at = _run(K=5)
    assert not at.exception and not at.error
    table = at.dataframe[0].value
    assert list(table.columns) == ["m", "n", "metric", "q75", "q90", "q95", "avg"]
    assert len(table) == 10
    # the table is the library's draws summarised
    s = apnull.sample_null(8, 60, 10_000, 2022)
    row = table[(table.m == 8) & (table.metric == "ap")].iloc[0]
    assert row["q95"] == pytest.approx(np.quantile(s.ap, 0.95))
    assert row["avg"] == pytest.approx(s.ap.mean())
    q95 = _trace(at, "Average Precision: 95th percentile")
    assert decode(q95["x"]).tolist() == [4, 8, 12, 16, 20]
    exact_mean = _trace(at, "exact E[AP]")
    assert decode(exact_mean["y"])[0] == pytest.approx(apnull.expected_ap(4, 30))


def test_exact_method_gives_exact_thresholds():
    at = _run(method="exact", K=3)
    assert not at.exception and not at.error
    table = at.dataframe[0].value
    row = table[(table.m == 4) & (table.metric == "ap")].iloc[0]
    assert row["q95"] == apnull.threshold(4, 30, q=0.95, method="exact")
    row = table[(table.m == 12) & (table.metric == "pr")].iloc[0]
    assert row["q90"] == apnull.threshold(12, 90, metric="pr", q=0.9)


def test_exact_method_says_when_ap_sizes_are_left_out():
    at = _run(method="exact", K=12, M=4, N=30)
    assert not at.exception and not at.error
    assert any("first 10 of 12 sizes" in i.value for i in at.info)


def test_bad_input_shows_error():
    at = _run(K=201)
    assert not at.exception
    assert any("at most 200" in e.value for e in at.error), [e.value for e in at.error]
    assert not at.get("plotly_chart")


def test_a_large_new_view_shows_its_preview_then_the_whole_view():
    """Monte Carlo, 6.5 million ranks not yet drawn: the table and chart of the first 6,000 draws per size
    at once, the whole view made in the background (the densities page's preview mechanism)."""
    from apnull.ui import cache

    args = (3, 31, 20, 10_000, 8, "mc")
    assert not cache.QUANTILE_VIEWS.ready(*args)
    gate = threading.Event()  # the one background thread waits, so the whole view cannot be stored before the
    cache._background_worker().submit(gate.wait, 120)  # page shows its preview (on a busy machine it could be)
    try:
        at = _run(M=3, N=31, K=20, seed=8)
        assert not at.exception and not at.error
        assert len(at.info) == 1 and "Preview from the first 6,000 random rankings per size" in at.info[0].value
        row = at.dataframe[0].value.query("m == 3 and metric == 'ap'").iloc[0]
        assert row["q95"] == pytest.approx(np.quantile(apnull.sample_null(3, 31, 6000, 8).ap, 0.95))
    finally:
        gate.set()
    cache.quantile_view(*args, progress=False)  # joins the background computation
    assert cache.QUANTILE_VIEWS.ready(*args)
    at.run()  # what the page's look at the view does when it is stored
    assert not at.exception and not at.error and not at.info
    row = at.dataframe[0].value.query("m == 3 and metric == 'ap'").iloc[0]
    assert row["q95"] == pytest.approx(np.quantile(apnull.sample_null(3, 31, 10_000, 8).ap, 0.95))


def test_the_exact_method_has_no_preview():
    from apnull.ui import cache

    assert cache.quantile_preview(3, 31, 3, 10_000, 8, "exact")[1] == 10_000


def test_a_view_whose_sizes_the_densities_page_drew_needs_no_preview():
    """A class sets a new M on the densities page, then on the quantiles page: the densities page's whole
    view left every size summarised, so the quantiles page shows its whole view at once (no preview, no
    second build in the background, no later rerun of every session), with the numbers of the draws."""
    from apnull.ui import cache

    args = (3, 29, 20, 10_000, 9)
    assert cache.preview_draws(*args[:4]) is not None  # large enough for a preview
    assert not cache.summarised(*args)
    cache.density_figures(*args, False, progress=False)
    assert cache.summarised(*args)
    at = _run(M=3, N=29, K=20, seed=9)
    assert not at.exception and not at.error and not at.info
    row = at.dataframe[0].value.query("m == 6 and metric == 'ap'").iloc[0]
    assert row["q95"] == pytest.approx(np.quantile(apnull.sample_null(6, 58, 10_000, 9).ap, 0.95))
    assert cache.quantile_preview(*args, "mc")[1] == 10_000
