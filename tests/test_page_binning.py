"""app_pages/binning.py with AppTest: breakpoints, bins and the cost of binning come from the library."""

import numpy as np
import pytest

import apnull
import apnull.significance as sg
from apnull.binning import bin_table
from apnull.binning_cost import binning_cost, binning_summary
from apptest import decode, figures, metrics, run_page, trace


def _run(**widgets):
    return run_page("binning", timeout=120, **widgets)


_metrics = metrics


def test_defaults_show_the_reference_breakpoints_and_bins():
    at = _run()
    assert not at.exception and not at.error
    bp_fig, thr_fig, err_fig = figures(at)
    bps = apnull.breakpoints(300, 1.3)
    (tr,) = bp_fig["data"]
    np.testing.assert_allclose(decode(tr["x"]), bps[1:])
    np.testing.assert_allclose(decode(tr["y"]), np.diff(bps))
    bins = at.dataframe[0].value
    expected = bin_table(300, 1.3)
    assert list(bins.columns) == ["bin", "break_point", "break_width", "first_n", "last_n"]
    assert len(bins) == 80
    np.testing.assert_allclose(bins["break_point"], expected["break_point"])
    assert list(bins["first_n"]) == list(expected["first_n"])


def test_defaults_cost_matches_library():
    at = _run()
    cost = binning_cost(4, 0.95, 300, 1.3, "lower", "ap")
    s = binning_summary(cost)
    metrics = _metrics(at)
    assert metrics["laws to compute (bins)"] == "81"
    assert metrics["largest threshold shift"] == f"{s['max_abs_error']:.4f}"
    assert metrics["average threshold shift"] == f"{s['mean_abs_error']:.4f}"
    assert metrics["n too lenient"] == "0"
    _, thr_fig, err_fig = figures(at)
    exact = trace(thr_fig, "threshold at n")
    np.testing.assert_allclose(decode(exact["y"]), cost["threshold"])
    # the AP threshold at n = 30 is the library's 0.42688 (exact law)
    assert decode(exact["y"])[30] == pytest.approx(apnull.threshold(4, 30), abs=1e-12)
    binned = trace(thr_fig, "threshold at the bin's representative (lower)")
    np.testing.assert_allclose(decode(binned["y"]), cost["binned_threshold"])
    assert len(decode(trace(err_fig, "more lenient (binned < exact)")["x"])) == 0
    words = [md.value for md in at.markdown if "null laws" in md.value][0]
    assert "**81 null laws**" in words and "never below the exact one" in words
    last_exact = max(n for n in range(301) if sg.choose_method(4, n, "ap") == "exact")
    # plain words on the page, the usual terms in the caption's tooltip
    caption = next(c for c in at.caption if c.value.startswith("Thresholds:"))
    assert f"counted over every placement for n = 0..{last_exact}" in caption.value
    assert f"exact laws (all placements) for n = 0..{last_exact}" in caption.proto.help


def test_changing_widgets_changes_outputs():
    at = _run(m=6, q=0.9, rep="middle", metric="pr", power=1.5, max=200)
    assert not at.exception and not at.error
    cost = binning_cost(6, 0.9, 200, 1.5, "middle", "pr")
    s = binning_summary(cost)
    metrics = _metrics(at)
    assert metrics["laws to compute (bins)"] == str(s["bins"])
    assert metrics["n too lenient"] == str(s["n_below"])
    bp_fig, thr_fig, err_fig = figures(at)
    np.testing.assert_allclose(decode(bp_fig["data"][0]["x"]), apnull.breakpoints(200, 1.5)[1:])
    binned = trace(thr_fig, "threshold at the bin's representative (middle)")
    np.testing.assert_allclose(decode(binned["y"]), cost["binned_threshold"])
    assert "Precision@R" in thr_fig["layout"]["title"]["text"]
    assert len(at.dataframe[0].value) == len(apnull.breakpoints(200, 1.5))


@pytest.mark.parametrize("widgets, message", [
    (dict(power=0.9), "power must lie in [1, 5]"),
    (dict(max=0), "max_value must lie in [1, 1,000,000], got 0"),
    (dict(max=20_000), "must be at most 5,000"),
    (dict(q=1.5), "q must lie in [0, 1], got 1.5"),
    (dict(q=-0.5), "q must lie in [0, 1], got -0.5"),
    (dict(m=60), "needs Monte Carlo from n = "),
])
def test_bad_input_shows_error_not_exception(widgets, message):
    at = _run(**widgets)
    assert not at.exception
    assert len(at.error) == 1 and message in at.error[0].value
    assert not at.get("plotly_chart")
