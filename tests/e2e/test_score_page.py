"""Browser tests of the "Score your data" page (/score): upload through the file input, the volcano plot,
a click on a point shows that perturbation's null."""

import re

from apnull.score import digits_example
from harness import (assert_charts_rendered, assert_no_exception, chart_data, expect_rerun, goto, plotly_charts,
                     query_params, screenshot, set_number_input, upload_files)


def volcano_points(page):
    """{name: (trace index, point index)} of the volcano's marker traces (the triangles of p-values that are
    bounds included)."""
    out = {}
    for i, t in enumerate(chart_data(page, 0)):
        if (t.get("name") or "").startswith(("q ", "no shuffle")):
            for j, custom in enumerate(t.get("customdata") or []):
                out[str(custom[0])] = (i, j)
    return out


def null_title(page):
    """The null figure's title as shown (plotly's <b>/<sup> tags removed)."""
    return re.sub(r"<[^>]+>", "", plotly_charts(page).nth(1).evaluate("gd => gd.layout.title.text"))


def click_point(page, trace, point):
    """Click a volcano marker where plotly drew it (pixel position from the axes of the live figure)."""
    chart = plotly_charts(page).nth(0)
    chart.scroll_into_view_if_needed()
    xy = chart.evaluate(
        """(gd, [i, j]) => { const t = gd._fullData[i], L = gd._fullLayout, r = gd.getBoundingClientRect();
             return [r.left + L._size.l + L.xaxis.l2p(t.x[j]), r.top + L._size.t + L.yaxis.l2p(t.y[j])]; }""",
        [trace, point])
    with expect_rerun(page):
        page.mouse.click(xy[0], xy[1])


def test_score_example_volcano_and_click(app_url, page):
    goto(page, app_url, "score")
    assert_no_exception(page)
    assert_charts_rendered(page, 2)
    points = volcano_points(page)
    assert len(points) >= 10
    first = null_title(page).split(":")[0]
    screenshot(page, "score_example")
    # click another perturbation's point: its null replaces the first one's
    name = next(n for n in points if n != first)
    click_point(page, *points[name])
    assert_no_exception(page)
    assert_charts_rendered(page, 2)
    assert null_title(page).startswith(f"{name}: mAP = ")
    assert query_params(page).get("sc_inspect") == name
    assert any((t.get("name") or "") == f"selected: {name}" for t in chart_data(page, 0))
    assert not page.page_errors
    screenshot(page, "score_example_clicked")


def test_click_after_a_link_notice_and_another_fdr_level(app_url, page):
    """A link value the page cannot use is named above the inspected perturbation, which moves that part of
    the page (an st.fragment) one place down; changing the input takes the notice away and moves it back.
    A click on the volcano then still shows the clicked perturbation's null."""
    goto(page, app_url, "score", sc_fdr="abc")
    assert_no_exception(page)
    assert_charts_rendered(page, 2)
    notices = [t for t in page.locator('[data-testid="stAlertContentWarning"]').all_inner_texts() if "was not used:" in t]
    assert len(notices) == 1 and "sc_fdr=abc" in notices[0] and notices[0].endswith("; showing 0.05."), notices
    set_number_input(page, "FDR level q", 0.1)
    assert_no_exception(page)
    assert_charts_rendered(page, 2)
    assert not [t for t in page.locator('[data-testid="stAlertContentWarning"]').all_inner_texts() if "was not used:" in t]
    assert query_params(page).get("sc_fdr") == "0.1"
    points = volcano_points(page)
    first = null_title(page).split(":")[0]
    name = next(n for n in points if n != first)
    click_point(page, *points[name])
    assert_no_exception(page)
    assert null_title(page).startswith(f"{name}: mAP = ")
    assert query_params(page).get("sc_inspect") == name


def test_score_upload_csv(app_url, page, tmp_path):
    csv = tmp_path / "my_screen.csv"
    digits_example().to_csv(csv, index=False)
    goto(page, app_url, "score", sc_data="upload")
    assert_no_exception(page)
    upload_files(page, [csv])
    assert_no_exception(page)
    assert page.get_by_text("my_screen.csv:").count() == 1
    with expect_rerun(page):
        page.get_by_role("button", name="Score").click()
    assert_no_exception(page)
    assert_charts_rendered(page, 2)
    assert len(volcano_points(page)) >= 10
    assert page.get_by_text("Download the perturbation table (CSV)").count() == 1
    screenshot(page, "score_upload")
    # choose a perturbation with the select box instead of a click: type its name, Enter
    name = list(volcano_points(page))[-1]
    box = page.locator('[data-testid="stSelectbox"]').filter(has_text="Perturbation to inspect").locator("input")
    box.click()
    box.fill(name)
    page.get_by_role("option", name=name, exact=True).wait_for()
    with expect_rerun(page):
        page.keyboard.press("Enter")
    assert_no_exception(page)
    assert_charts_rendered(page, 2)
    assert query_params(page).get("sc_inspect") == name
    assert null_title(page).startswith(f"{name}: mAP = ")


def test_score_bad_input_shows_error(app_url, page):
    goto(page, app_url, "score", sc_control="nope")
    assert_no_exception(page)
    alert = page.locator('[data-testid="stAlertContentError"]')
    assert alert.count() == 1 and "'nope' not found in column" in alert.inner_text()
    screenshot(page, "score_error_control")


def test_p_and_q_columns_are_seen_on_a_phone(app_url, browser):
    """At 390 px a table shows three or four columns at once: the perturbation, query and label tables
    show each row's name, its score and its p- and q-values first (they were off to the right), and
    no title is wider than the screen."""
    from harness import new_page

    page = new_page(browser, {"width": 390, "height": 844})
    try:
        goto(page, app_url, "score", sc_cs="true", timeout=180_000)  # the consistency step open
        assert_no_exception(page)
        page.wait_for_function(  # the grids have drawn their cells
            "() => Array.from(document.querySelectorAll('[data-testid=\"stDataFrame\"]'))"
            ".filter(g => g.querySelector('table thead th')).length >= 4",
            timeout=60_000)
        heads = page.evaluate("""() => Array.from(document.querySelectorAll('[data-testid="stDataFrame"]'))
            .filter(g => g.getClientRects().length > 0).map(g => Array.from(g.querySelectorAll('table thead th')).map(h => h.textContent))""")
        tables = [h for h in heads if h]  # perturbations, queries, labels, a label's queries (no q-value)
        assert len(tables) == 4, heads
        for h in tables:
            assert any(c in ("p-value", "p_value") for c in h), heads
        for h in tables[:3]:
            assert any(c in ("q-value", "q_value") for c in h), heads
        wide = page.evaluate("""() => Array.from(document.querySelectorAll('h1, h2, h3'))
            .filter(e => e.getBoundingClientRect().right > window.innerWidth + 1 || e.scrollWidth > e.clientWidth + 1)
            .map(e => e.innerText)""")
        assert not wide, wide
        screenshot(page, "score_390")
    finally:
        page.context.close()
