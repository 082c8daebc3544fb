"""Browser tests of the normalise choice: a raw CellProfiler-like upload on the score and compare pages
says its features look un-normalised, and one click normalises them (1400 and 390 px)."""

import sys
from pathlib import Path

import pytest

from harness import assert_charts_rendered, assert_no_exception, expect_rerun, goto, query_params, screenshot, upload_files

sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "score"))
from raw_screen import FEATURES, raw_screen  # noqa: E402

RAW = "un-normalised"
FIX = "Normalise against each plate's controls"
CONTROLS = "per plate, against its controls"


def warnings_text(page) -> str:
    return " ".join(page.locator('[data-testid="stAlertContentWarning"]').all_inner_texts())


@pytest.mark.parametrize("width", [1400, 390])
def test_score_page_raw_upload_fixed_in_one_click(app_url, page, tmp_path, width):
    page.set_viewport_size({"width": width, "height": 1000})
    csv = tmp_path / "raw_screen.csv"
    raw_screen(seed=0).to_csv(csv, index=False)
    goto(page, app_url, "score", sc_data="upload", sc_nan="leave out those rows")
    upload_files(page, [csv])
    assert_no_exception(page)
    assert RAW in warnings_text(page)
    page.get_by_text(RAW).first.scroll_into_view_if_needed()
    screenshot(page, f"normalize_score_raw_{width}")
    with expect_rerun(page):
        page.get_by_role("button", name=FIX).click()
    assert_no_exception(page)
    assert RAW not in warnings_text(page)
    assert query_params(page).get("sc_normalize") == CONTROLS
    with expect_rerun(page):
        page.get_by_role("button", name="Score", exact=True).click()
    assert_no_exception(page)
    assert_charts_rendered(page, 2)
    assert not page.page_errors
    screenshot(page, f"normalize_score_fixed_{width}")


@pytest.mark.parametrize("width", [1400, 390])
def test_compare_page_raw_uploads_fixed_in_one_click(app_url, page, tmp_path, width):
    page.set_viewport_size({"width": width, "height": 1000})
    a = raw_screen(seed=1, nan_cells=False)
    b = a.copy()
    b[list(FEATURES)] = b[list(FEATURES)] * 3.0 + 1.0
    paths = [tmp_path / "a.csv", tmp_path / "b.csv"]
    a.to_csv(paths[0], index=False)
    b.to_csv(paths[1], index=False)
    goto(page, app_url, "compare", cp_data="upload", cp_key="Metadata_Well", cp_key2="Metadata_Plate")
    upload_files(page, paths)
    assert_no_exception(page)
    with expect_rerun(page):
        page.get_by_role("button", name="Compare", exact=True).click()
    assert_no_exception(page)
    assert RAW in warnings_text(page)
    page.get_by_text(RAW).first.scroll_into_view_if_needed()
    screenshot(page, f"normalize_compare_raw_{width}")
    with expect_rerun(page):
        page.get_by_role("button", name=FIX).click()
    assert query_params(page).get("cp_normalize") == CONTROLS
    with expect_rerun(page):
        page.get_by_role("button", name="Compare", exact=True).click()
    assert_no_exception(page)
    assert RAW not in warnings_text(page)
    assert_charts_rendered(page, 1)
    assert not page.page_errors
    screenshot(page, f"normalize_compare_fixed_{width}")
