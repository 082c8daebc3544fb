"""What a newcomer meets first, in Chromium: no developer toolbar, a start page that fits a phone, and
charts whose titles, legends and toolbar never cover one another at 390 px and 1400 px."""

from pathlib import Path

import pytest

from harness import (PLOTLY_DIV, assert_charts_rendered, assert_no_exception, expect_rerun, goto, new_page, screenshot,
                     wait_charts)

PHONE = {"width": 390, "height": 844}
# the start page links every other page of the app once
OTHER_PAGES = sum(1 for f in (Path(__file__).parents[2] / "app_pages").glob("*.py") if f.stem != "home")
#: The pages whose every chart is checked in full: every page that shows a chart.
FULL_CHECK = ("densities", "quantiles", "lookup", "binning", "hypergeometric", "ranking", "sampled", "score",
              "compare")

# Boxes of what plotly draws in each chart, and what covers or leaves what: a title, legend item, axis
# title, subplot title or colour bar outside the chart's svg is cut off; two of them overlapping hide
# each other; the toolbar (.modebar, laid out even while hidden until hover) over any of them covers it.
LAYOUT_JS = """() => {
  const meet = (a, b) => !(a.right <= b.left + 1 || b.right <= a.left + 1 || a.bottom <= b.top + 1 || b.bottom <= a.top + 1);
  const out = [];
  document.querySelectorAll('[data-testid="stPlotlyChart"] .js-plotly-plot').forEach((plot, i) => {
    const svg = plot.querySelector('svg.main-svg');
    if (!svg) return;
    const S = svg.getBoundingClientRect();
    const parts = [];
    const add = (kind, el) => {
      const r = el.getBoundingClientRect();
      if (r.width > 0 && r.height > 0) parts.push({kind, r, text: (el.textContent || '').slice(0, 50)});
    };
    plot.querySelectorAll('.g-gtitle .gtitle').forEach(e => add('title', e));
    plot.querySelectorAll('g.legend .traces').forEach(e => add('legend', e));
    plot.querySelectorAll('[class^="g-x"][class$="title"] text, [class^="g-y"][class$="title"] text').forEach(e => add('axis title', e));
    plot.querySelectorAll('g.annotation').forEach(e => add('annotation', e));
    plot.querySelectorAll('g.colorbar').forEach(e => add('colour bar', e));
    const cut = [], overlaps = [], toolbar = [];
    for (const p of parts)
      if (p.r.left < S.left - 1 || p.r.right > S.right + 1 || p.r.top < S.top - 1 || p.r.bottom > S.bottom + 1)
        cut.push(`${p.kind} "${p.text}"`);
    for (let a = 0; a < parts.length; a++)
      for (let b = a + 1; b < parts.length; b++)
        if (meet(parts[a].r, parts[b].r)) overlaps.push(`${parts[a].kind} "${parts[a].text}" / ${parts[b].kind} "${parts[b].text}"`);
    const bar = plot.querySelector('.modebar');
    if (bar) {
      const M = bar.getBoundingClientRect();
      for (const p of parts) if (p.kind !== 'colour bar' && M.width > 0 && meet(M, p.r)) toolbar.push(`${p.kind} "${p.text}"`);
    }
    out.push({chart: i, title: (parts.find(p => p.kind === 'title') || {}).text || null, toolbar: !!bar, cut, overlaps, covered: toolbar});
  });
  return out;
}"""


def _charts(page) -> list[dict]:
    page.wait_for_timeout(300)  # plotly lays out the legend and toolbar after the first paint
    return page.evaluate(LAYOUT_JS)


def test_visitors_get_no_developer_toolbar(app_url, page):
    """.streamlit/config.toml sets toolbarMode = "viewer": no Deploy button, no rerun or clear-cache item."""
    goto(page, app_url, "")
    assert_no_exception(page)
    assert page.locator('[data-testid="stMainMenu"]').count() == 1  # the header is there ...
    assert page.get_by_text("Deploy", exact=True).count() == 0  # ... without the Deploy button
    assert page.locator('[data-testid="stAppDeployButton"]').count() == 0
    page.locator('[data-testid="stMainMenu"]').click()
    menu = page.get_by_text("Print", exact=True)
    menu.wait_for(state="visible")
    assert page.get_by_text("Clear cache", exact=True).count() == 0 and page.get_by_text("Rerun", exact=True).count() == 0


def test_start_page_fits_a_phone(app_url, browser):
    page = new_page(browser, PHONE)
    try:
        goto(page, app_url, "")
        assert_no_exception(page)
        links = page.locator('[data-testid="stPageLink"]')
        assert links.count() == OTHER_PAGES
        # every "Where to go" description is whole: inside the screen, and not cut by its own box
        texts = page.evaluate("""() => [...document.querySelectorAll('[data-testid="stPageLink"]')].map(link => {
            const card = link.closest('[data-testid="stVerticalBlock"]');
            const caption = card.querySelector('[data-testid="stCaptionContainer"]');
            const r = caption.getBoundingClientRect();
            return {text: caption.innerText, right: r.right, left: r.left,
                    cut: caption.scrollWidth > caption.clientWidth + 1 || link.scrollWidth > link.clientWidth + 1};
        })""")
        assert len(texts) == OTHER_PAGES and all(t["text"] for t in texts)
        assert all(t["left"] >= 0 and t["right"] <= PHONE["width"] and not t["cut"] for t in texts), texts
        assert page.evaluate("document.scrollingElement.scrollWidth") <= PHONE["width"]  # no sideways scrolling
        screenshot(page, "home_390")
    finally:
        page.context.close()


@pytest.mark.parametrize("width", [390, 1400])
def test_charts_keep_titles_legends_and_toolbar_apart(app_url, browser, width):
    page = new_page(browser, PHONE if width == 390 else {"width": width, "height": 1000})
    try:
        problems = {}
        for path in FULL_CHECK:
            goto(page, app_url, path)
            assert_no_exception(page)
            # every chart of the page (a session's first densities chart comes alone, the second after it)
            assert_charts_rendered(page, 2 if path == "densities" else 1)
            tabs = page.get_by_role("tab")
            for t in range(max(tabs.count(), 1)):  # open each tab: the page builds the tab shown alone
                if tabs.count():
                    with expect_rerun(page):  # a tab bound to the URL reruns the page
                        tabs.nth(t).click()
                    page.wait_for_timeout(600)  # plotly draws a chart when its tab shows it
                charts = [c for c in _charts(page) if c["title"] is not None]  # drawn (hidden ones have no title box)
                assert all(c["toolbar"] for c in charts)
                for c in charts:
                    found = c["cut"] + c["overlaps"] + c["covered"]
                    if found:
                        problems[f"{path} tab {t} chart {c['chart']} ({c['title']})"] = found
                # every chart on the page was seen drawn
                assert len({c["chart"] for c in charts}) == page.locator(PLOTLY_DIV).count(), (path, t, charts)
        assert not problems, problems
        screenshot(page, f"sampled_charts_{width}")
    finally:
        page.context.close()


@pytest.mark.parametrize("path", ["lookup", "ranking", "score"])
def test_the_toolbar_clears_the_titles_on_the_other_pages_at_390(app_url, browser, path):
    """The strip kept for the toolbar is added where every page shows a figure (ui.show_figure)."""
    page = new_page(browser, PHONE)
    try:
        goto(page, app_url, path, timeout=180_000)
        assert_no_exception(page)
        wait_charts(page, 1, timeout=180_000)
        charts = _charts(page)
        assert charts and all(c["toolbar"] for c in charts)
        assert all(not c["covered"] for c in charts), [(c["title"], c["covered"]) for c in charts]
    finally:
        page.context.close()
