"""Browser test of the scoring page's state: a control typed for one upload is not applied, unseen, to
the next; the box shows what is applied and the URL holds it; the example has its own control; the
upload survives the example/upload switch."""

from apnull.score import digits_example
from harness import assert_no_exception, expect_rerun, goto, query_params, screenshot

PERT = "Metadata_perturbation"


def _control(page):
    return page.locator('[data-testid="stTextInput"] input[aria-label="Control value(s)"]')


def _upload(page, path):
    with expect_rerun(page):
        page.locator('[data-testid="stFileUploaderDropzoneInput"]').set_input_files(str(path))
    assert_no_exception(page)


def _choose_data(page, which):
    with expect_rerun(page):
        page.locator('[data-testid="stRadio"]').filter(has_text="Data").get_by_text(which, exact=True).click()
    assert_no_exception(page)


def test_upload_control_upload_sequence(app_url, page, tmp_path):
    first, second = tmp_path / "first.csv", tmp_path / "second.csv"
    digits_example().to_csv(first, index=False)
    other = digits_example()
    other[PERT] = other[PERT].replace({"DMSO": "vehicle"})
    other.to_csv(second, index=False)

    goto(page, app_url, "score", sc_data="upload")
    _upload(page, first)
    assert _control(page).input_value() == "DMSO"
    # type the control explicitly (as a user would), then upload a file without DMSO
    box = _control(page)
    box.fill("DMSO")
    with expect_rerun(page):
        box.press("Enter")
    _upload(page, second)
    assert _control(page).input_value() == "vehicle"  # what is applied is what is shown
    assert query_params(page).get("sc_control") in (None, "vehicle")  # the URL never keeps DMSO
    assert page.get_by_text("not found in column").count() == 0
    assert page.get_by_role("button", name="Score").count() == 1
    screenshot(page, "score_state_second_upload")
    # the example has its own control; the upload and its control come back after the switch
    _choose_data(page, "example")
    assert _control(page).input_value() == "DMSO"
    assert query_params(page).get("sc_control") in (None, "DMSO")
    _choose_data(page, "upload")
    assert _control(page).input_value() == "vehicle"
    assert page.get_by_text("second.csv", exact=False).count() >= 1
    assert query_params(page).get("sc_control") in (None, "vehicle")
    assert not page.page_errors
