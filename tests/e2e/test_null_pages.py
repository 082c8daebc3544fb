"""Browser tests of the "Null densities" and "Quantiles vs size" pages."""

import pytest
from harness import (assert_charts_rendered, assert_no_exception, build_url, chart_data, goto, new_page, query_params, screenshot,
                     set_number_input)


def _line_names(page, index):
    return [t.get("name") for t in chart_data(page, index) if t.get("mode") == "lines"]


def test_densities_default_view(app_url, page):
    goto(page, app_url, "densities")
    assert_no_exception(page)
    assert_charts_rendered(page, 2)
    names = _line_names(page, 0)
    assert len(names) == 50 and names[0] == "m=4, n=30"
    assert page.get_by_text("Download the 500,000 draws").count() == 1
    screenshot(page, "densities_default")


#: each chart's margins as set (layout.margin) and as plotly drew them (after its automargin)
_MARGINS = ("() => Array.from(document.querySelectorAll('.js-plotly-plot')).map(gd => "
            "[gd.layout.margin.l, gd.layout.margin.b, gd._fullLayout._size.l, gd._fullLayout._size.b])")


@pytest.mark.parametrize("path", ["densities", "quantiles"])
def test_default_charts_are_drawn_once_at_a_desktop_width(app_url, page, path):
    """The default views' margins are those plotly's automargin makes of them at 1400 px, so plotly does
    not widen a margin and draw every trace again (0.2 s of the AP densities, 0.5 s of the Precision@R steps
    on the 2-core machine, before the page's first chart showed)."""
    goto(page, app_url, path)
    assert_charts_rendered(page, 2 if path == "densities" else 1)
    margins = page.evaluate(_MARGINS)
    assert margins and all(set_l == drawn_l and set_b == drawn_b for set_l, set_b, drawn_l, drawn_b in margins), margins


#: (performance.now(), title) of each plotly chart when it first showed a drawn trace, in the order they did
_DRAWN_AT = """
(() => {
  window.__drawnAt = [];
  const seen = new WeakSet();
  new MutationObserver(() => {
    for (const gd of document.querySelectorAll('.js-plotly-plot')) {
      if (!seen.has(gd) && gd.querySelector('g.trace')) {
        seen.add(gd);
        window.__drawnAt.push([performance.now(), (gd.querySelector('.gtitle') || {}).textContent || '']);
      }
    }
  }).observe(document, {childList: true, subtree: true});
})();
"""


@pytest.mark.parametrize("width", [1400, 390])
def test_densities_first_chart_is_drawn_alone_then_the_second(app_url, browser, width):
    """A new session's first chart comes alone, so the browser draws it as soon as plotly is loaded instead of
    in one task with the second (ui.charts_now); the second follows by itself once the first is drawn, its
    slot keeping the chart's height meanwhile."""
    page = new_page(browser, {"width": width, "height": 844 if width == 390 else 1000})
    try:
        page.add_init_script(_DRAWN_AT)
        page.goto(build_url(app_url, "densities"))
        assert_charts_rendered(page, 2, timeout=60_000)
        drawn = page.evaluate("() => window.__drawnAt")
        ap = [t for t, title in drawn if title.startswith("Average Precision")]
        pr = [t for t, title in drawn if title.startswith("Precision@R")]
        assert ap and pr and min(pr) > min(ap), drawn  # the AP chart first, the Precision@R chart in a later task
        assert page.get_by_text("Drawing the chart...").count() == 0
        assert_no_exception(page)
        assert query_params(page) == {}
        screenshot(page, f"densities_first_visit_{width}")
    finally:
        page.context.close()


@pytest.mark.parametrize("width", [1400, 390])
def test_densities_new_large_view_shows_a_preview_then_the_whole_view(app_url, browser, width):
    """A view of 184 million ranks not computed yet (about 2.6 s of one core): a preview from its first
    200 draws per size at once, then the whole view by itself (the page looks every 0.5 s), the URL
    unchanged."""
    page = new_page(browser, {"width": width, "height": 844 if width == 390 else 1000})
    try:
        params = dict(dn_M=10, dn_K=60, dn_seed=1000 + width)  # N = 30; a new view for each width
        page.goto(build_url(app_url, "densities", **params))  # not goto: it waits until the page is quiet
        info = page.locator('[data-testid="stAlertContentInfo"]')
        info.wait_for(timeout=120_000)
        assert "Preview from the first 200 random rankings per size" in info.inner_text()
        screenshot(page, f"densities_preview_{width}", full_page=False)
        # the preview's charts (their content: tests/test_page_densities.py) may be replaced by the whole
        # view's before a loaded browser has drawn them; the whole view must come by itself
        info.wait_for(state="detached", timeout=120_000)
        page.wait_for_function("() => document.querySelector('.gtitle')"
                               " && document.querySelector('.gtitle').textContent.includes('10,000 draws each')",
                               timeout=120_000)
        assert_charts_rendered(page, 2, timeout=120_000)
        assert_no_exception(page)
        assert len(_line_names(page, 0)) == 60
        assert query_params(page) == {k: str(v) for k, v in params.items()}
        screenshot(page, f"densities_after_preview_{width}")
    finally:
        page.context.close()


def test_densities_interaction_and_url(app_url, page):
    goto(page, app_url, "densities", dn_K=5, dn_draws=2000)
    assert_no_exception(page)
    assert_charts_rendered(page, 2)
    assert len(_line_names(page, 0)) == 5
    set_number_input(page, "number of sizes K", 3)
    assert_no_exception(page)
    assert_charts_rendered(page, 2)
    assert _line_names(page, 0) == ["m=4, n=30", "m=8, n=60", "m=12, n=90"]
    assert query_params(page).get("dn_K") == "3"
    screenshot(page, "densities_k3")


def test_densities_url_reproduces_inputs(app_url, page):
    goto(page, app_url, "densities", dn_M=3, dn_N=12, dn_K=4, dn_draws=1000, dn_seed=7, dn_exact="true")
    assert_no_exception(page)
    assert_charts_rendered(page, 2)
    assert _line_names(page, 0)[:4] == ["m=3, n=12", "m=6, n=24", "m=9, n=36", "m=12, n=48"]
    dashed = [t for t in chart_data(page, 0) if t.get("line", {}).get("dash") == "dash"]
    assert len(dashed) == 4
    screenshot(page, "densities_url_exact")


def test_densities_bad_input_shows_error(app_url, page):
    goto(page, app_url, "densities", dn_K=100, dn_draws=100000)
    assert_no_exception(page)
    alert = page.locator('[data-testid="stAlertContentError"]')
    assert alert.count() == 1
    assert "K x draws" in alert.inner_text()
    screenshot(page, "densities_error")
    # the server keeps running: a good URL works again
    goto(page, app_url, "densities", dn_K=2, dn_draws=500)
    assert_charts_rendered(page, 2)


def test_quantiles_page(app_url, page):
    goto(page, app_url, "quantiles", qt_K=10)
    assert_no_exception(page)
    assert_charts_rendered(page, 1)
    traces = chart_data(page, 0)
    names = [t.get("name") for t in traces]
    assert "Average Precision: 95th percentile" in names and "exact E[AP]" in names
    screenshot(page, "quantiles_mc")
    page.get_by_text("exact law", exact=True).click()
    page.wait_for_timeout(200)
    from harness import wait_idle
    wait_idle(page)
    assert_no_exception(page)
    assert_charts_rendered(page, 1)
    assert query_params(page).get("qt_method") == "exact law"  # a bound radio puts its label in the URL
    screenshot(page, "quantiles_exact")


def test_quantiles_url_reproduces_exact_method(app_url, page):
    goto(page, app_url, "quantiles", qt_M=2, qt_N=10, qt_K=4, qt_method="exact law")
    assert_no_exception(page)
    assert_charts_rendered(page, 1)
    checked = page.locator('[data-testid="stRadio"] input[type="radio"]:checked')
    assert checked.count() == 1
    x = [t for t in chart_data(page, 0) if t.get("name") == "Average Precision: 95th percentile"][0]["x"]
    assert list(x) == [2, 4, 6, 8]
