"""Browser tests of the "Hypergeometric check" page."""

import base64

import numpy as np
from harness import (assert_charts_rendered, assert_no_exception, chart_data, goto, number_input, query_params,
                     screenshot, set_number_input)

from apnull import hypergeom as hg
from apnull.views import hypergeometric as hv


def _array(value):
    """A trace array as the browser's gd.data holds it: a list, plotly's typed-array form
    {"dtype", "bdata"}, or a typed array serialised as {"0": .., "1": ..}."""
    if isinstance(value, dict) and "bdata" in value:
        return np.frombuffer(base64.b64decode(value["bdata"]), dtype=np.dtype(value["dtype"])).tolist()
    if isinstance(value, dict):
        return [value[str(i)] for i in range(len(value))]
    return list(value)


def _names(page, index=0):
    return [t.get("name") for t in chart_data(page, index)]


def _bars(page, name):
    return next(t for t in chart_data(page, 0) if t.get("type") == "bar" and t.get("name") == name)


def test_default_view(app_url, page):
    goto(page, app_url, "hypergeometric")
    assert_no_exception(page)
    assert_charts_rendered(page, 2)
    names = _names(page, 0)
    assert "m / (m + n) = 0.1111" in names and "95% chance threshold = 0.5000" in names
    sample = hv.shuffled_precision_at_k(4, 32, 4, 10_000, seed=2022)
    assert f"empirical mean = {sample.precision.mean():.4f}" in names
    shares = _array(_bars(page, "shuffled")["y"])
    assert abs(sum(shares) - 1) < 1e-9 and len(shares) >= 4
    assert page.get_by_text("Chance thresholds", exact=True).count() == 1
    screenshot(page, "hypergeometric_default")
    # the lower half of the page: tables and the scatter
    page.get_by_text("Simulated versus exact").scroll_into_view_if_needed()
    screenshot(page, "hypergeometric_default_viewport", full_page=False)


def test_changing_k_changes_the_output(app_url, page):
    goto(page, app_url, "hypergeometric")
    before = _names(page, 0)
    set_number_input(page, "k (top positions)", 9)
    assert_no_exception(page)
    assert_charts_rendered(page, 2)
    after = _names(page, 0)
    assert after != before
    assert f"95% chance threshold = {hg.hypergeom_ppf(4, 32, 9):.4f}" in after
    assert len(_array(next(t for t in chart_data(page, 0) if t.get("name") == "exact hypergeometric pmf")["x"])) == 5
    assert query_params(page).get("hg_k") == "9"
    screenshot(page, "hypergeometric_k9")


def test_url_reproduces_the_inputs(app_url, page):
    goto(page, app_url, "hypergeometric", hg_m=6, hg_n=20, hg_k=3, hg_draws=2000, hg_seed=7)
    assert_no_exception(page)
    assert_charts_rendered(page, 2)
    for label, value in (("m (positives)", "6"), ("n (negatives)", "20"), ("k (top positions)", "3"),
                         ("draws", "2000"), ("seed", "7")):
        assert number_input(page, label).input_value().replace(",", "") == value
    sample = hv.shuffled_precision_at_k(6, 20, 3, 2000, seed=7)
    names = _names(page, 0)
    assert f"empirical mean = {sample.precision.mean():.4f}" in names
    assert f"95% chance threshold = {hg.hypergeom_ppf(6, 20, 3):.4f}" in names
    counts = [round(v * 2000) for v in _array(_bars(page, "shuffled")["y"])]
    assert sum(counts) == 2000
    screenshot(page, "hypergeometric_url")


def test_bad_input_shows_an_error(app_url, page):
    goto(page, app_url, "hypergeometric", hg_k=40)
    assert_no_exception(page)
    alert = page.locator('[data-testid="stAlertContentError"]')
    assert alert.count() == 1
    assert "k (top positions counted) must lie between 1 and m + n = 36, got 40" in alert.inner_text()
    screenshot(page, "hypergeometric_error")
