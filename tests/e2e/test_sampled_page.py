"""Browser tests of the "Sampled metrics" page (Rendle 2020)."""

from harness import (assert_charts_rendered, assert_no_exception, chart_data, expect_rerun, goto, number_input,
                     plotly_charts, query_params, screenshot, set_number_input)

from apnull import rendle as sm


def _names(page, index):
    return [t.get("name") for t in chart_data(page, index)]


def _flips(page):
    """The order changes on the chart of the tab 'Order versus the number of samples' (shown)."""
    return [t["x"][0] for t in chart_data(page, 0) if t.get("name") == "order changes"]


def _text_input(page, label):
    return page.locator(f'[data-testid="stTextInput"] input[aria-label="{label}"]')


def _tab(page, name):
    """Show one of the page's tabs: the page reruns and builds that tab alone."""
    with expect_rerun(page):
        page.get_by_role("tab", name=name).click()
    page.wait_for_function(  # the grids of the tab shown have drawn their cells
        "() => Array.from(document.querySelectorAll('[data-testid=\"stDataFrame\"]'))"
        ".filter(g => g.getClientRects().length > 0).every(g => g.querySelector('table tbody tr td'))",
        timeout=15_000)
    page.wait_for_timeout(300)


EXAMPLE = "Algorithms A, B and C"
SAMPLES = "Order versus the number of samples"
PAPER = "The paper's tables"


def test_default_view(app_url, page):
    goto(page, app_url, "sampled")
    assert_no_exception(page)
    assert_charts_rendered(page, 2)
    assert _names(page, 0)[:5] == ["AUC", "AP", "NDCG", "Recall@10", "Precision@10"]
    assert "sampled, s = 99" in _names(page, 1) and "exact AP" in _names(page, 1)
    screenshot(page, "sampled_default")
    _tab(page, SAMPLES)
    assert_charts_rendered(page, 1)
    assert plotly_charts(page).count() == 1  # the tab shown alone is built
    assert _flips(page) == [73, 281, 438, 954]
    screenshot(page, "sampled_default_samples")
    # the tables: the sampled one as printed by the paper's layout, and the paper comparison
    _tab(page, EXAMPLE)
    assert plotly_charts(page).count() == 0
    assert page.get_by_text("0.3407 ± 0.0711").count() >= 1
    page.get_by_text("3. The running example").scroll_into_view_if_needed()
    screenshot(page, "sampled_default_tables", full_page=False)
    _tab(page, PAPER)
    assert page.get_by_text("simulation of 1,000 repetitions", exact=False).count() == 1


def test_changing_s_and_metric_changes_the_output(app_url, page):
    goto(page, app_url, "sampled")
    set_number_input(page, "s (sampled irrelevant items)", 50)
    assert_no_exception(page)
    assert_charts_rendered(page, 2)
    assert "sampled, s = 50" in _names(page, 1) and "sampled, s = 99" not in _names(page, 1)
    assert query_params(page).get("sm_s") == "50"
    mean, sd = sm.algorithm_sampled_metric(sm.PAPER_EXAMPLE["B"], sm.PAPER_N, 50, "ap")
    _tab(page, EXAMPLE)
    assert page.get_by_text(f"{mean:.4f} ± {sd:.4f}").count() >= 1
    with expect_rerun(page):
        page.locator('[data-testid="stRadio"]').filter(has_text="Metric for the figures") \
            .get_by_text("NDCG", exact=True).click()
    assert_no_exception(page)
    _tab(page, SAMPLES)
    assert_charts_rendered(page, 1)
    assert _flips(page) == [692]
    assert query_params(page).get("sm_metric") == "NDCG"
    screenshot(page, "sampled_s50_ndcg")


def test_url_reproduces_the_inputs(app_url, page):
    goto(page, app_url, "sampled", sm_n=20000, sm_s=200, sm_k=5, sm_metric="Recall@k", sm_ranks_A="1, 2, 3",
         sm_sampling="without replacement")
    assert_no_exception(page)
    assert_charts_rendered(page, 2)
    for label, value in (("n (items in the catalogue)", "20000"), ("s (sampled irrelevant items)", "200"),
                         ("k (cut-off)", "5")):
        assert number_input(page, label).input_value().replace(",", "") == value
    assert "Recall@5" in _names(page, 0) and "exact Recall@5" in _names(page, 1)
    _tab(page, EXAMPLE)
    assert _text_input(page, "Algorithm A: true ranks").input_value() == "1, 2, 3"
    checked = page.locator('[data-testid="stRadio"] input[type="radio"]:checked')
    assert checked.count() == 3  # sampling, metric, ranks range
    rankings = {"A": [1, 2, 3], "B": list(sm.PAPER_EXAMPLE["B"]), "C": list(sm.PAPER_EXAMPLE["C"])}
    mean, sd = sm.algorithm_sampled_metric(rankings["C"], 20000, 200, "recall", k=5, replace=False)
    assert page.get_by_text(f"{mean:.4f} ± {sd:.4f}").count() >= 1
    screenshot(page, "sampled_url")


def test_typed_ranks_and_bad_ranks(app_url, page):
    goto(page, app_url, "sampled")
    _tab(page, EXAMPLE)
    box = _text_input(page, "Algorithm C: true ranks")
    with expect_rerun(page):
        box.fill("a,b")
        box.press("Enter")
    assert_no_exception(page)
    alert = page.locator('[data-testid="stAlertContentError"]')
    assert alert.count() == 1 and "ranks of C: 'a' is not a whole number" in alert.inner_text()
    assert query_params(page).get("sm_ranks_C") == "a,b"
    screenshot(page, "sampled_error")
    with expect_rerun(page):
        box.fill("2, 2, 2")
        box.press("Enter")
    assert_no_exception(page)
    assert page.locator('[data-testid="stAlertContentError"]').count() == 0
    # the ranks are inputs of the next tab too: typed here, they are there, and stay in the URL
    _tab(page, SAMPLES)
    assert_charts_rendered(page, 1)
    assert _text_input(page, "Algorithm C: true ranks").input_value() == "2, 2, 2"
    assert query_params(page).get("sm_ranks_C") == "2, 2, 2"
    assert query_params(page).get("sm_tab") == SAMPLES
    screenshot(page, "sampled_samples_tab_typed_ranks")


def test_the_tab_shown_is_in_the_url(app_url, page):
    """Choosing a tab puts it in the URL (sm_tab); that URL opens on the same tab."""
    goto(page, app_url, "sampled")
    assert "sm_tab" not in query_params(page)  # the first tab is the default: nothing in the URL
    with expect_rerun(page):
        page.get_by_role("tab", name=EXAMPLE).click()
    assert query_params(page).get("sm_tab") == EXAMPLE
    fresh = page.context.new_page()
    try:
        goto(fresh, app_url, "sampled", sm_tab=EXAMPLE)  # the link a teacher copies
        tab = fresh.get_by_role("tab", name=EXAMPLE)
        tab.wait_for(timeout=30_000)
        assert tab.get_attribute("aria-selected") == "true"
        assert fresh.get_by_text("3. The running example").first.is_visible()
        screenshot(fresh, "sampled_tab_from_link", full_page=False)
    finally:
        fresh.close()
