"""The ranking editor (/ranking) in a real Chromium: it loads without an exception, its charts
render, a click in the data editor and a preset change the metrics, and a link reproduces the
ranking and k."""

from __future__ import annotations

import urllib.parse

import numpy as np
import pytest
from playwright.sync_api import TimeoutError as PlaywrightTimeout
from playwright.sync_api import expect

from harness import (
    assert_charts_rendered,
    assert_no_exception,
    expect_rerun,
    goto,
    number_input,
    plotly_charts,
    query_params,
    screenshot,
)

K_LABEL = "k, the cut-off of the @k metrics"
EDITOR = '[data-testid="stDataFrame"]'

_METRICS_JS = """
() => Object.fromEntries(Array.from(document.querySelectorAll('[data-testid="stMetric"]')).map(el => [
  el.querySelector('[data-testid="stMetricLabel"]').innerText.trim(),
  el.querySelector('[data-testid="stMetricValue"]').innerText.trim()]))
"""


def metrics(page) -> dict[str, str]:
    """Label -> shown value of every st.metric card."""
    return page.evaluate(_METRICS_JS)


def area_under_pr_curve(page) -> float:
    """Trapezoid integral of the shaded trace of the PR chart, as drawn (typed arrays read as lists)."""
    x, y = plotly_charts(page).nth(0).evaluate(
        "gd => { const t = gd._fullData.find(t => t.fill === 'tozeroy'); return [Array.from(t.x), Array.from(t.y)]; }")
    return float(np.trapezoid(np.asarray(y, float), np.asarray(x, float)))


def ranking_param(page) -> str | None:
    value = query_params(page).get("r")
    return value if value is None else str(value)


def editor_cells(page) -> list[list[str]]:
    """The ranking editor's cells as text, read from the grid's accessibility table (drawn lazily)."""
    page.wait_for_function(
        "sel => { const g = document.querySelector(sel); return g && g.querySelector('table tbody tr td'); }",
        arg=EDITOR, timeout=15_000)
    return page.locator(EDITOR).first.evaluate(
        "g => Array.from(g.querySelectorAll('table tbody tr')).map("
        "r => Array.from(r.querySelectorAll('td')).map(t => t.textContent))")


def wait_editor_cells(page, expected: list[list[str]], timeout: float = 15_000) -> None:
    """Wait until the editor shows exactly these cells (it is rebuilt after a reorder)."""
    try:
        page.wait_for_function(
            "([sel, want]) => { const g = document.querySelector(sel); if (!g) return false;"
            " const rows = Array.from(g.querySelectorAll('table tbody tr')).map("
            "   r => Array.from(r.querySelectorAll('td')).map(t => t.textContent));"
            " return JSON.stringify(rows) === JSON.stringify(want); }",
            arg=[EDITOR, expected], timeout=timeout, polling=100)
    except PlaywrightTimeout:
        tracker = getattr(page, "_apnull_tracker", None)
        runs = "" if tracker is None else f", runs finished {tracker.finished}, reruns sent {tracker.reruns_sent}"
        raise AssertionError(f"the editor shows {editor_cells(page)}, expected {expected} "
                             f"(URL {page.url}{runs})") from None


def select_editor_cell(page, row: int, column: int) -> None:
    """Select the editor's cell at 1-based row and 0-based column (position, item, relevant).

    The grid is a canvas (glide-data-grid): click the position cell of the row (rows are as
    tall as the 35 px header; a 33 px row-selection column comes first, position is 80 px
    wide), then move right with the arrow keys, which does not depend on the other widths.
    """
    grid = page.locator(EDITOR).first
    page.evaluate("() => document.fonts.ready.then(() => true)")
    box = grid.bounding_box()
    for _ in range(50):  # the layout above the grid may still settle (fonts, wrapped radios)
        page.wait_for_timeout(100)
        again = grid.bounding_box()
        if again == box:
            break
        box = again
    page.mouse.click(box["x"] + 33 + 30, box["y"] + 35 * (row + 0.5))
    for _ in range(column):
        page.keyboard.press("ArrowRight")


def test_loads_with_chart_and_the_precision_recall_example(page, app_url):
    goto(page, app_url, "ranking")
    assert_no_exception(page)
    assert_charts_rendered(page, 2)
    shown = metrics(page)
    assert shown["AP"] == "0.5333"
    assert shown["P@3"] == "0.3333" and shown["R-precision"] == "0.3333"
    assert area_under_pr_curve(page) == pytest.approx(8 / 15)
    assert ranking_param(page) is None  # the default ranking keeps the link clean
    assert page.get_by_text("exact: all 20 placements").is_visible()
    assert not page.page_errors
    screenshot(page, "ranking_default")


def test_ticking_a_relevant_box_in_the_editor_changes_the_metrics(page, app_url):
    goto(page, app_url, "ranking")
    assert editor_cells(page)[0] == ["1", "x", "false"]
    tracker = page._apnull_tracker
    for _ in range(4):  # a click while the grid is still settling may select nothing: retry then
        sent = tracker.reruns_sent
        with expect_rerun(page):
            select_editor_cell(page, 1, 2)
            page.keyboard.press("Space")  # x becomes relevant
        if tracker.reruns_sent > sent or editor_cells(page)[0][2] == "true":
            break
    assert_no_exception(page)
    wait_editor_cells(page, [["1", "x", "true"], ["2", "a", "true"], ["3", "y", "false"],
                             ["4", "b", "true"], ["5", "c", "true"], ["6", "z", "false"]])
    shown = metrics(page)
    assert shown["AP"] == f"{(1 + 1 + 3 / 4 + 4 / 5) / 4:.4f}" == "0.8875"
    assert shown["P@3"] == "0.6667"
    assert ranking_param(page) == "x:1,a:1,y:0,b:1,c:1,z:0"
    assert_charts_rendered(page, 2)
    assert area_under_pr_curve(page) == pytest.approx(0.8875)
    screenshot(page, "ranking_after_toggle")


def test_one_click_on_a_pill_toggles_an_item(page, app_url):
    goto(page, app_url, "ranking")
    pills = page.locator('[data-testid="stButtonGroup"]').first
    pill = pills.get_by_role("button", name="1. x", exact=True)
    expect(pill).to_have_attribute("aria-pressed", "false")
    with expect_rerun(page):
        pill.click()  # one click, no selection step first
    assert_no_exception(page)
    expect(pill).to_have_attribute("aria-pressed", "true")
    wait_editor_cells(page, [["1", "x", "true"], ["2", "a", "true"], ["3", "y", "false"],
                             ["4", "b", "true"], ["5", "c", "true"], ["6", "z", "false"]])
    assert metrics(page)["AP"] == "0.8875"
    assert ranking_param(page) == "x:1,a:1,y:0,b:1,c:1,z:0"
    screenshot(page, "ranking_after_pill")
    with expect_rerun(page):
        pill.click()  # and one click back
    expect(pill).to_have_attribute("aria-pressed", "false")
    assert metrics(page)["AP"] == "0.5333"
    assert ranking_param(page) is None  # the default ranking again: the link is clean


def type_position(page, row: int, old: str, new: str, attempts: int = 4) -> None:
    """Type a new position into the editor's row (1-based) and commit it with Enter.

    Glide's cell editor is driven by the keyboard: select the cell, Enter opens the editor,
    type, Enter commits. Two races are retried: a click that lands while the grid is still
    settling does not select the cell (the editor must open showing ``old``), and an Enter that
    follows the typing too closely commits the old value (then no rerun is requested).
    """
    cell_editor = page.locator("input.gdg-input")
    tracker = page._apnull_tracker
    for _ in range(attempts):
        select_editor_cell(page, row, 0)
        page.keyboard.press("Enter")
        try:
            cell_editor.wait_for(state="visible", timeout=3000)
        except PlaywrightTimeout:
            continue
        if cell_editor.input_value() != old:
            page.keyboard.press("Escape")
            cell_editor.wait_for(state="hidden")
            continue
        page.keyboard.press("Control+A")
        page.keyboard.type(new, delay=30)
        expect(cell_editor).to_have_value(new)
        page.wait_for_timeout(150)
        sent = tracker.reruns_sent
        with expect_rerun(page):
            page.keyboard.press("Enter")
        if tracker.reruns_sent > sent:
            return
    raise AssertionError(f"could not type {new} into the position of row {row} in {attempts} attempts")


def test_typing_a_position_in_the_editor_moves_the_row(page, app_url):
    goto(page, app_url, "ranking")
    type_position(page, row=2, old="2", new="5")  # a: 2 -> 5
    assert_no_exception(page)
    # a lands at 5, the rows below it move up, the editor is renumbered 1..6
    wait_editor_cells(page, [["1", "x", "false"], ["2", "y", "false"], ["3", "b", "true"],
                             ["4", "c", "true"], ["5", "a", "true"], ["6", "z", "false"]])
    assert metrics(page)["AP"] == f"{(1 / 3 + 2 / 4 + 3 / 5) / 3:.4f}"
    assert ranking_param(page) == "x:0,y:0,b:1,c:1,a:1,z:0"
    screenshot(page, "ranking_after_move")


def test_a_preset_changes_the_metrics_and_the_link(page, app_url):
    goto(page, app_url, "ranking")
    radio = page.locator('[data-testid="stRadio"]').first
    with expect_rerun(page):
        radio.get_by_text("Worst", exact=True).click()
    assert_no_exception(page)
    shown = metrics(page)
    assert shown["AP"] == f"{(1 / 4 + 2 / 5 + 3 / 6) / 3:.4f}"
    params = query_params(page)
    assert params["rk_preset"] == "Worst" and params["r"] == "x:0,y:0,z:0,a:1,b:1,c:1"
    with expect_rerun(page):
        radio.get_by_text("MAP tutorial models", exact=True).click()
    assert metrics(page)["AP"] == "0.5000"
    assert page.get_by_text("recall@10 = 1").is_visible()
    screenshot(page, "ranking_map_tutorial")


def test_link_reproduces_ranking_and_k(page, app_url):
    r = "p:1,q:0,r%2Cs:1,t:0"  # item "r,s" written with its comma escaped
    goto(page, app_url, "ranking", r=r, rk_k=2)
    assert_no_exception(page)
    expect(number_input(page, K_LABEL)).to_have_value("2", timeout=15_000)
    shown = metrics(page)
    assert shown["AP"] == f"{(1 + 2 / 3) / 2:.4f}"
    assert shown["P@2"] == "0.5000" and shown["R@2"] == "0.5000"
    assert area_under_pr_curve(page) == pytest.approx((1 + 2 / 3) / 2)
    params = query_params(page)
    assert params["rk_k"] == "2" and urllib.parse.unquote(str(params["r"])) == urllib.parse.unquote(r)
    table = page.locator(EDITOR).nth(1)
    assert "r,s" in table.locator("table").inner_text()
    screenshot(page, "ranking_from_link")


def test_bad_input_shows_errors_not_exceptions(page, app_url):
    goto(page, app_url, "ranking", r="")
    assert_no_exception(page)
    assert page.get_by_text("The ranking is empty: add at least one item").is_visible()
    screenshot(page, "ranking_empty")
    goto(page, app_url, "ranking", r="x:0,a:0,y:0")
    assert_no_exception(page)
    assert page.get_by_text("No item is marked relevant").is_visible()
    assert metrics(page)["AP"] == "—"
    goto(page, app_url, "ranking", rk_k=9)
    assert page.get_by_text("choose k between 1 and 6").is_visible()
    goto(page, app_url, "ranking", r="x:0,a:maybe")
    assert page.get_by_text("could not be read").is_visible()
    assert metrics(page)["AP"] == "0.5333"
    assert_no_exception(page)


def _boxes(page, selector):
    return page.evaluate(
        "sel => Array.from(document.querySelectorAll(sel)).map(e => { const r = e.getBoundingClientRect();"
        " return [r.left, r.top, r.right, r.bottom, getComputedStyle(e).opacity]; })", selector)


def _overlap(a, b):
    return a[0] < b[2] and b[0] < a[2] and a[1] < b[3] and b[1] < a[3]


def test_phone_width_table_toolbar_leaves_the_pills_free(app_url, browser):
    """At 390 px the table's toolbar, shown once the table is touched, covered the last pills (a tap
    on "6. z" opened "Show/hide columns"); the null chart's title was clipped."""
    from harness import track_runs

    context = browser.new_context(viewport={"width": 390, "height": 844}, has_touch=True, is_mobile=True)
    try:
        page = context.new_page()
        track_runs(page)
        goto(page, app_url, "ranking")
        assert_no_exception(page)
        editor = page.locator(EDITOR).first
        editor.scroll_into_view_if_needed()
        box = editor.bounding_box()
        page.touchscreen.tap(box["x"] + box["width"] / 2, box["y"] + 60)
        page.wait_for_timeout(500)
        toolbars = [b for b in _boxes(page, '[data-testid="stElementToolbar"]') if float(b[4]) > 0]
        pills = _boxes(page, '[data-testid="stButtonGroup"] button')
        assert toolbars and len(pills) >= 6
        assert not [(t, p) for t in toolbars for p in pills if _overlap(t, p)]
        # the null chart's title lies inside its chart
        chart = plotly_charts(page).last
        chart.scroll_into_view_if_needed()
        outer = chart.bounding_box()
        title = chart.locator(".gtitle").first.bounding_box()
        assert title["x"] >= outer["x"] and title["x"] + title["width"] <= outer["x"] + outer["width"] + 1
        screenshot(page, "ranking_390")
    finally:
        context.close()


@pytest.mark.parametrize("width", [1400, 390])
def test_null_chart_label_leaves_the_bar_tops_free(app_url, browser, width):
    """The observed AP's label box on the null chart covers no bar: it hid the bar tops, so two equal
    bars of 0.05 looked like 0.043."""
    from harness import track_runs

    context = browser.new_context(viewport={"width": width, "height": 1000})
    try:
        page = context.new_page()
        track_runs(page)
        goto(page, app_url, "ranking")
        assert_no_exception(page)
        chart = plotly_charts(page).last
        chart.scroll_into_view_if_needed()
        page.wait_for_timeout(300)
        label = chart.locator(".annotation").first.bounding_box()
        bars = chart.evaluate("gd => Array.from(gd.querySelectorAll('.bars path')).map(p => {"
                              " const r = p.getBoundingClientRect(); return [r.left, r.top, r.right, r.bottom]; })")
        bars = [b for b in bars if b[3] - b[1] > 0.5]
        assert label and bars
        box = [label["x"], label["y"], label["x"] + label["width"], label["y"] + label["height"]]
        assert not [b for b in bars if _overlap(b, box)], (box, bars)
        screenshot(page, f"ranking_null_label_{width}", full_page=False)
    finally:
        context.close()
