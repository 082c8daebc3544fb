"""Browser test of the consistency step on "Score your data": the labels figure renders, a click on a
label's point shows that label's null and puts it in the URL."""

import re

from harness import (assert_charts_rendered, assert_no_exception, chart_data, expect_rerun, goto, plotly_charts,
                     query_params, screenshot)

FIGURE, NULL = 2, 3  # the activity step's volcano and null come first


def label_points(page):
    """{label: (trace index, point index)} of the labels figure's two marker traces."""
    out = {}
    for i, t in enumerate(chart_data(page, FIGURE)):
        if (t.get("name") or "").startswith("q "):
            for j, custom in enumerate(t.get("customdata") or []):
                out[str(custom[0])] = (i, j)
    return out


def null_title(page):
    return re.sub(r"<[^>]+>", "", plotly_charts(page).nth(NULL).evaluate("gd => gd.layout.title.text"))


def test_consistency_example_and_click(app_url, page):
    goto(page, app_url, "score", sc_cs="true")  # the step's expander open
    assert_no_exception(page)
    assert_charts_rendered(page, 4)
    points = label_points(page)
    assert set(points) == {"target_A", "target_B", "target_C", "target_D"}
    assert null_title(page).startswith("target_A: mAP = ")
    chart = plotly_charts(page).nth(FIGURE)
    chart.scroll_into_view_if_needed()
    xy = chart.evaluate(
        """(gd, [i, j]) => { const t = gd._fullData[i], L = gd._fullLayout, r = gd.getBoundingClientRect();
             return [r.left + L._size.l + L.xaxis.l2p(t.x[j]), r.top + L._size.t + L.yaxis.l2p(t.y[j])]; }""",
        list(points["target_C"]))
    with expect_rerun(page):
        page.mouse.click(xy[0], xy[1])
    assert_no_exception(page)
    assert_charts_rendered(page, 4)
    assert null_title(page).startswith("target_C: mAP = ")
    assert query_params(page).get("sc_cs_label") == "target_C"
    assert not page.page_errors
    screenshot(page, "consistency_example_clicked")
