"""The scoring page keeps no hidden state: what the widgets show is applied and is what the URL holds,
across uploads and the example/upload switch; the upload is kept; a link waits for its file."""

from pathlib import Path

import pandas as pd
from streamlit.testing.v1 import AppTest

from apnull.score import digits_example

PAGE = str(Path(__file__).resolve().parents[1] / "app_pages" / "score.py")
PERT = "Metadata_perturbation"


def _csv(frame, name):
    return (name, frame.to_csv(index=False).encode(), "text/csv")


def _second_screen():
    """The digits screen with its controls called 'vehicle' and a 'dmso_like' perturbation."""
    table = digits_example()
    table[PERT] = table[PERT].replace({"DMSO": "vehicle"})
    return table


def test_control_typed_for_one_upload_is_not_applied_to_the_next():
    at = AppTest.from_file(PAGE, default_timeout=300)
    at.query_params["sc_data"] = "upload"
    at.run()
    at.file_uploader(key="upload").set_value(_csv(digits_example(), "first.csv")).run()
    assert at.text_input(key="sc_control").value == "DMSO"
    at.text_input(key="sc_control").set_value("DMSO").run()
    # a second file whose controls are called 'vehicle'
    at.file_uploader(key="upload").set_value(_csv(_second_screen(), "second.csv")).run()
    assert not at.exception and not at.error, [e.value for e in at.error]
    assert at.text_input(key="sc_control").value == "vehicle"  # shown = applied
    assert at.query_params.get("sc_control", ["vehicle"]) in (["vehicle"], "vehicle")  # the URL never says DMSO
    assert at.button(key="score")  # the Score button is there: the applied control is found
    at.button(key="score").click().run()
    assert not at.error and any("n_replicates" in d.value.columns for d in at.dataframe)
    # the example shows its own control, not the upload's
    at.radio(key="sc_data").set_value("example").run()
    assert at.text_input(key="sc_control").value == "DMSO" and not at.error
    # back to the upload: the file is still there, with the control it had
    at.radio(key="sc_data").set_value("upload").run()
    assert not at.exception and not at.error, [e.value for e in at.error]
    assert at.text_input(key="sc_control").value == "vehicle"
    assert any("second.csv" in c.value for c in at.caption)


def test_link_in_upload_mode_waits_for_its_file():
    at = AppTest.from_file(PAGE, default_timeout=300)
    at.query_params["sc_data"] = "upload"
    at.query_params["sc_control"] = "vehicle"
    at.query_params["sc_perms"] = "99"
    at.run()
    assert any("wait for the file" in i.value and "control = vehicle" in i.value for i in at.info)
    at.file_uploader(key="upload").set_value(_csv(_second_screen(), "second.csv")).run()
    assert not at.error and at.text_input(key="sc_control").value == "vehicle"
    assert at.number_input(key="sc_perms").value == 99


def test_plan_is_shown_before_scoring():
    at = AppTest.from_file(PAGE, default_timeout=300)
    at.query_params["sc_data"] = "upload"
    at.run()
    table = digits_example()
    table["note"] = "text"
    at.file_uploader(key="upload").set_value(_csv(table, "s.csv")).run()
    assert any("64 feature column(s)" in m.value and "5 column(s) left out" in m.value for m in at.markdown)
    assert not any("controls" in d.value.columns for d in at.dataframe)  # the plan's tables: built when opened
    at.session_state["sc_plan_open"] = True  # the plan's expander opened
    at.run()
    strata = next(d.value for d in at.dataframe if "controls" in d.value.columns)
    assert list(strata.columns) == ["stratum", "controls", "perturbations", "replicates"]
    left = next(d.value for d in at.dataframe if list(d.value.columns) == ["column", "reason"])
    assert "note" in set(left["column"])
    assert not any("n_replicates" in d.value.columns for d in at.dataframe)  # not scored yet
