"""Browser tests of the "Binning n" page (/binning)."""

import numpy as np

import apnull
from apnull.binning_cost import binning_cost, binning_summary
from plotly_json import decode
from harness import (assert_charts_rendered, assert_no_exception, chart_data, choose_radio, goto, metric_value,
                     number_input, query_params, screenshot, set_number_input)


def trace(page, index, name):
    return next(t for t in chart_data(page, index) if t.get("name") == name)


def as_array(values):
    """A plotly.js array as numpy (a list, or plotly's binary {"dtype", "bdata"} form)."""
    return np.asarray(decode(values), dtype=float)


def test_binning_default_view(app_url, page):
    goto(page, app_url, "binning")
    assert_no_exception(page)
    assert_charts_rendered(page, 3)
    bps = apnull.breakpoints(300, 1.3)
    (bp,) = chart_data(page, 0)
    np.testing.assert_allclose(as_array(bp["x"]), bps[1:])
    np.testing.assert_allclose(as_array(bp["y"]), np.diff(bps))
    assert metric_value(page, "laws to compute (bins)") == "81"
    s = binning_summary(binning_cost(4, 0.95, 300, 1.3, "lower", "ap"))
    assert metric_value(page, "largest threshold shift") == f"{s['max_abs_error']:.4f}"
    assert metric_value(page, "n too lenient") == "0"
    assert page.get_by_text("never below the exact one").count() == 1
    assert not page.page_errors
    screenshot(page, "binning_default")


def test_binning_interaction_changes_the_output(app_url, page):
    goto(page, app_url, "binning")
    choose_radio(page, "middle")
    assert_no_exception(page)
    assert_charts_rendered(page, 3)
    s = binning_summary(binning_cost(4, 0.95, 300, 1.3, "middle", "ap"))
    assert s["n_below"] > 0
    assert metric_value(page, "n too lenient") == str(s["n_below"])
    assert trace(page, 1, "threshold at the bin's representative (middle)")
    lenient = trace(page, 2, "more lenient (binned < exact)")
    assert len(as_array(lenient["x"])) == s["n_below"]
    assert query_params(page).get("bn_rep") == "middle"
    screenshot(page, "binning_middle")
    set_number_input(page, "m (positives)", 8)
    assert_no_exception(page)
    s8 = binning_summary(binning_cost(8, 0.95, 300, 1.3, "middle", "ap"))
    assert metric_value(page, "largest threshold shift") == f"{s8['max_abs_error']:.4f}"
    assert query_params(page).get("bn_m") == "8"


def test_binning_url_reproduces_inputs_and_outputs(app_url, page):
    goto(page, app_url, "binning", bn_power=1.5, bn_max=200, bn_m=6, bn_q=0.9, bn_metric="pr")
    assert_no_exception(page)
    assert_charts_rendered(page, 3)
    assert number_input(page, "power").input_value() == "1.5"
    assert number_input(page, "max (largest n)").input_value() == "200"
    assert number_input(page, "m (positives)").input_value() == "6"
    bps = apnull.breakpoints(200, 1.5)
    np.testing.assert_allclose(as_array(chart_data(page, 0)[0]["x"]), bps[1:])
    cost = binning_cost(6, 0.9, 200, 1.5, "lower", "pr")
    exact = trace(page, 1, "threshold at n")
    np.testing.assert_allclose(as_array(exact["y"]), cost["threshold"])
    assert metric_value(page, "laws to compute (bins)") == str(binning_summary(cost)["bins"])
    assert "Precision@R" in page.locator('[data-testid="stHeading"]').all_inner_texts()[-1]
    screenshot(page, "binning_url_pow15_max200_pr")


def test_binning_bad_input_shows_error(app_url, page):
    goto(page, app_url, "binning", bn_power=0.5)
    assert_no_exception(page)
    alert = page.locator('[data-testid="stAlertContentError"]')
    assert alert.count() == 1 and "power must lie in [1, 5]" in alert.inner_text()
    screenshot(page, "binning_error_power")
    set_number_input(page, "power", 1.3)
    assert_no_exception(page)
    assert_charts_rendered(page, 3)
