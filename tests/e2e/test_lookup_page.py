"""Browser tests of the "Threshold lookup" page (/lookup)."""

import apnull
from harness import (assert_charts_rendered, assert_no_exception, chart_data, choose_radio, goto, metric_value,
                     number_input, query_params, screenshot, set_number_input)


def line_x(page, index, prefix):
    (t,) = [t for t in chart_data(page, index) if (t.get("name") or "").startswith(prefix)]
    return t["x"][0]


def test_lookup_default_view(app_url, page):
    goto(page, app_url, "lookup")
    assert_no_exception(page)
    assert_charts_rendered(page, 2)
    assert metric_value(page, "AP threshold (95%)") == "0.42688"
    assert metric_value(page, "p-value of AP = 0.41") == "0.060"
    assert page.get_by_text("method: exact (all placements)").count() == 2
    assert page.get_by_text("is less than the 95% null threshold 0.427").count() == 1
    assert page.get_by_text("equals the 95% null threshold 0.5; a score must be greater").count() == 1
    assert metric_value(page, "P@R threshold (95%)") == "0.5"
    assert line_x(page, 0, "threshold") == apnull.threshold(4, 30)
    assert line_x(page, 0, "observed") == 0.41
    assert not page.page_errors
    screenshot(page, "lookup_default")


def test_lookup_interaction_changes_the_output(app_url, page):
    goto(page, app_url, "lookup")
    set_number_input(page, "n (negatives)", 300)
    assert_no_exception(page)
    assert_charts_rendered(page, 2)
    law = apnull.null_distribution(4, 300)
    assert metric_value(page, "AP threshold (95%)") == f"{law.quantile(0.95):.5g}"
    # plain words on the page; the technical description (G, error bound) is the caption's tooltip
    assert page.get_by_text("method: computed on a fine grid, thresholds within ±0.001 of the exact ones").count() == 1
    assert page.get_by_text("guaranteed interval").count() == 1
    assert line_x(page, 0, "threshold") == law.quantile(0.95)
    assert query_params(page).get("lk_n") == "300"
    screenshot(page, "lookup_grid_n300")
    # switch the method to Monte Carlo with its radio
    choose_radio(page, "mc")
    assert_no_exception(page)
    assert_charts_rendered(page, 2)
    assert page.get_by_text("method: Monte Carlo, 100,000 draws, seed 0").count() == 2
    assert query_params(page).get("lk_method") == "mc"
    screenshot(page, "lookup_mc")


def test_lookup_url_reproduces_inputs_and_outputs(app_url, page):
    goto(page, app_url, "lookup", lk_m=6, lk_n=40, lk_level="alpha", lk_alpha=0.01, lk_ap=0.5)
    assert_no_exception(page)
    assert_charts_rendered(page, 2)
    assert number_input(page, "m (positives)").input_value() == "6"
    assert number_input(page, "n (negatives)").input_value() == "40"
    assert number_input(page, "α (false positive rate)").input_value() == "0.01"
    t = apnull.threshold(6, 40, q=0.99)
    assert metric_value(page, "AP threshold (99%)") == f"{t:.5g}"
    p = apnull.p_value(0.5, 6, 40)
    assert metric_value(page, "p-value of AP = 0.5") == (f"{p:.3f}" if p >= 0.01 else f"{p:.3g}")
    assert line_x(page, 0, "threshold") == t
    assert query_params(page) == {"lk_m": "6", "lk_n": "40", "lk_level": "alpha", "lk_alpha": "0.01", "lk_ap": "0.5"}
    screenshot(page, "lookup_url_m6_n40_alpha001")


def test_lookup_bad_input_shows_error(app_url, page):
    goto(page, app_url, "lookup", lk_m=40, lk_n=300, lk_method="exact")
    assert_no_exception(page)
    alert = page.locator('[data-testid="stAlertContentError"]')
    assert alert.count() == 1
    assert "exact AP law for m=40, n=300" in alert.inner_text()
    screenshot(page, "lookup_error_exact_too_big")
    set_number_input(page, "your AP", 1.3)
    assert_no_exception(page)
    assert "your AP must lie in [0, 1], got 1.3" in page.locator('[data-testid="stAlertContentError"]').inner_text()
    # the server keeps running: a good URL works again
    goto(page, app_url, "lookup", lk_m=3, lk_n=10)
    assert_charts_rendered(page, 2)


def test_lookup_walk_through_the_edges(app_url, page):
    """The hostile sizes and levels of the null laws, one after another in the same tab: each gives the
    library's answer, never 0 and never a float that underflowed."""
    goto(page, app_url, "lookup", lk_ap=0.7)
    assert page.get_by_text("scored AP = 0.7").count() == 1
    goto(page, app_url, "lookup", lk_m=600, lk_n=600, lk_ap=1, lk_pr=1)
    assert_no_exception(page)
    assert metric_value(page, "p-value of P@R = 1") == "10^-359.60"
    assert metric_value(page, "p-value of AP = 1") == "10^-359.60"
    screenshot(page, "lookup_pr_underflow")
    goto(page, app_url, "lookup", lk_m=10, lk_n=100, lk_level="alpha", lk_alpha=1e-5, lk_method="mc", lk_draws=1000,
         lk_seed=1)
    assert_no_exception(page)
    law = apnull.null_distribution(10, 100, method="mc", draws=1000, seed=1)
    thr = apnull.significance.resolved_threshold(law, alpha=1e-5)
    assert metric_value(page, "AP threshold (99.999%)") == f"{thr.value:.5g}"
    assert page.get_by_text("counted from the far tail: the exact threshold lies in").count() == 1
    screenshot(page, "lookup_alpha_counted")
    goto(page, app_url, "lookup", lk_m=1000000, lk_n=0, lk_ap=1, lk_pr=1)
    assert_no_exception(page)
    assert metric_value(page, "AP threshold (95%)") == "1"
    assert metric_value(page, "p-value of AP = 1") == "1.000"
    goto(page, app_url, "lookup", lk_m=3000, lk_n=3000, lk_level="alpha", lk_alpha=1e-6, lk_method="mc", lk_draws=1000)
    assert page.locator('[data-testid="stAlert"]').filter(has_text="0.01, or more draws or a finer law").count() == 1
