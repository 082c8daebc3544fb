"""Browser tests of the "Compare two pipelines" page (/compare): the bundled pair's scatter and answer, a
changed input, a link that reproduces it, two uploads (one with NaN cells, at 1400 and 390 px), and a
phone-sized screen."""

import numpy as np
import pytest

from apnull.score import digits_pipeline_pair
from harness import (assert_charts_rendered, assert_no_exception, chart_data, choose_radio, expect_rerun, goto,
                     query_params, screenshot, set_number_input, upload_files)


def _points(page):
    return sum(len(t.get("x") or []) for t in chart_data(page, 0) if (t.get("name") or "").startswith("by ")
               or (t.get("name") or "").startswith("retrieved by"))


def test_compare_example_and_a_link(app_url, page):
    goto(page, app_url, "compare")
    assert_no_exception(page)
    assert_charts_rendered(page, 1)
    assert _points(page) == 40
    assert page.get_by_text("A retrieves replicates better than B").count() >= 1
    assert page.get_by_text("Test: sign flips of whole units").count() == 1
    assert page.get_by_text("Paired test of the difference").count() >= 1
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
    upload_files(page, paths)
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


@pytest.mark.parametrize("width", [1400, 390])
def test_compare_an_upload_with_nan(app_url, page, tmp_path, width):
    """NaN cells in table B: the error names the page's Missing values choice; leaving those rows out
    compares the rest, and the page says which test it used and which wells it left out."""
    page.set_viewport_size({"width": width, "height": 1000})
    a, b = digits_pipeline_pair(seed=3)
    b.loc[b.index[[3, 17]], "half_05"] = np.nan
    paths = [tmp_path / "pixels.csv", tmp_path / "half_nan.csv"]
    a.to_csv(paths[0], index=False)
    b.to_csv(paths[1], index=False)
    goto(page, app_url, "compare", cp_data="upload")
    upload_files(page, paths)
    assert_no_exception(page)
    assert page.get_by_text("Test: sign flips of whole units").count() == 1  # said before Compare
    with expect_rerun(page):
        page.get_by_role("button", name="Compare").click()
    error = page.locator('[data-testid="stAlertContentError"]')
    assert error.count() == 1 and "Missing values" in error.inner_text() and "nan=" not in error.inner_text()
    screenshot(page, f"compare_nan_error_{width}")
    page.locator("summary").filter(has_text="More options").click()
    choose_radio(page, "leave out those rows", group="Missing values")
    assert query_params(page).get("cp_nan") == "leave out those rows"
    with expect_rerun(page):
        page.get_by_role("button", name="Compare").click()
    assert_no_exception(page)
    assert_charts_rendered(page, 1)
    assert _points(page) == 40
    assert page.get_by_text("2 well(s) with NaN or infinite feature values left out of both tables").count() >= 1
    assert page.get_by_text("4 row(s) left out").count() == 1
    screenshot(page, f"compare_nan_dropped_{width}")
