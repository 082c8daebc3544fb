"""Browser tests of the "Compare two pipelines" page (/compare): the bundled pair's scatter and answer, a
changed input, a link that reproduces it, two uploads, and a phone-sized screen."""

from apnull.score import digits_pipeline_pair
from harness import (assert_charts_rendered, assert_no_exception, chart_data, expect_rerun, goto,
                     query_params, screenshot, set_number_input)


def _points(page):
    return sum(len(t.get("x") or []) for t in chart_data(page, 0) if (t.get("name") or "").startswith("by ")
               or (t.get("name") or "").startswith("retrieved by"))


def test_compare_example_and_a_link(app_url, page):
    goto(page, app_url, "compare")
    assert_no_exception(page)
    assert_charts_rendered(page, 1)
    assert _points(page) == 40
    assert page.get_by_text("A retrieves better than B").count() >= 1
    assert page.get_by_text("Download the perturbation table (CSV)").count() == 1
    screenshot(page, "compare_example")
    set_number_input(page, "Seed", 4)
    assert_no_exception(page)
    assert query_params(page).get("cp_seed") == "4"
    goto(page, app_url, "compare", cp_seed="4", cp_stratum="(none)")
    assert_no_exception(page)
    assert page.get_by_text("No test possible").count() >= 1
    assert not page.page_errors


def test_compare_two_uploads(app_url, page, tmp_path):
    a, b = digits_pipeline_pair(seed=3)
    paths = [tmp_path / "pixels.csv", tmp_path / "half.csv"]
    a.to_csv(paths[0], index=False)
    b.sample(frac=1, random_state=1).to_csv(paths[1], index=False)
    goto(page, app_url, "compare", cp_data="upload")
    assert_no_exception(page)
    inputs = page.locator('[data-testid="stFileUploaderDropzoneInput"]')
    for i, path in enumerate(paths):
        with expect_rerun(page):
            inputs.nth(i).set_input_files(str(path))
    assert_no_exception(page)
    with expect_rerun(page):
        page.get_by_role("button", name="Compare").click()
    assert_no_exception(page)
    assert_charts_rendered(page, 1)
    assert _points(page) == 40
    screenshot(page, "compare_upload")


def test_compare_on_a_phone(app_url, page):
    page.set_viewport_size({"width": 390, "height": 900})
    goto(page, app_url, "compare")
    assert_no_exception(page)
    assert_charts_rendered(page, 1)
    page.locator('[data-testid="stPlotlyChart"]').first.scroll_into_view_if_needed()
    screenshot(page, "compare_phone")
