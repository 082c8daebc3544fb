"""The normalise choice on the score and compare pages (AppTest): raw-looking features are said above the
plan (score) or the answer (compare) with a one-click fix, the choice reaches the library, the URL and
the download zip's settings."""

import io
import json
import sys
import zipfile
from pathlib import Path

import pandas as pd
from streamlit.testing.v1 import AppTest

from apnull.score import score_compare, score_profiles
from apnull.views import score as view
from apnull.views import score_report as report

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT / "tests" / "score"))
from raw_screen import FEATURES, raw_screen  # noqa: E402

SCORE = str(ROOT / "app_pages" / "score.py")
COMPARE = str(ROOT / "app_pages" / "compare.py")
CONTROLS = report.NORMALIZE_WORDS["controls"]


def _csv(frame, name):
    return (name, frame.to_csv(index=False).encode(), "text/csv")


def _groups(at):
    return next(d.value for d in at.dataframe if "n_replicates" in d.value.columns)


def test_score_page_says_raw_and_fixes_it_in_one_click():
    table = raw_screen(seed=0, nan_cells=False)
    at = AppTest.from_file(SCORE, default_timeout=300)
    at.query_params["sc_data"] = "upload"
    at.run()
    at = at.file_uploader(key="upload").set_value(_csv(table, "raw.csv")).run()
    assert not at.exception and not at.error, [e.value for e in at.error]
    assert at.selectbox(key="sc_stratum").value == "Metadata_Plate"
    raw = [w.value for w in at.warning if "un-normalised" in w.value]
    assert len(raw) == 1 and report.NORMALIZE_FIX in raw[0] and "normalize=" not in raw[0]
    at.button(key="sc_normalize_fix").click().run()
    assert at.selectbox(key="sc_normalize").value == CONTROLS
    assert at.query_params["sc_normalize"] == [CONTROLS] or at.query_params["sc_normalize"] == CONTROLS
    assert not [w for w in at.warning if "un-normalised" in w.value]
    at.button(key="score").click().run()
    assert not at.exception and not at.error
    want = score_profiles(table, "Metadata_Compound", "DMSO", "Metadata_Plate", permutations=999,
                          normalize="controls")
    pd.testing.assert_frame_equal(_groups(at).reset_index(drop=True), view.ranked_groups(want.groups, 0.05),
                                  check_dtype=False)
    zipped = next(b for b in at.get("download_button") if b.proto.label.startswith("Download tables"))
    assert zipped is not None
    settings = report.settings_record(file="raw", digest="x", settings=view.make_settings(
        table, "Metadata_Compound", "DMSO", "Metadata_Plate", None, "cosine", "permutation", 999, 0,
        normalize="controls"), alpha=0.05, version="v")
    assert settings["normalize"] == "controls"
    data = report.bundle_zip({"t": want.groups}, settings)
    assert json.loads(zipfile.ZipFile(io.BytesIO(data)).read("settings.json"))["normalize"] == "controls"


def test_score_page_quiet_on_the_example_and_normalised_tables():
    at = AppTest.from_file(SCORE, default_timeout=300).run()
    assert not at.exception
    assert not [w for w in at.warning if "un-normalised" in w.value]
    assert at.selectbox(key="sc_normalize").value == report.NORMALIZE_WORDS["none"]


def test_compare_page_normalises_both_tables():
    a = raw_screen(seed=1, nan_cells=False)
    b = a.copy()
    b[list(FEATURES)] = b[list(FEATURES)] * 3.0 + 1.0
    at = AppTest.from_file(COMPARE, default_timeout=300)
    at.query_params["cp_data"] = "upload"
    at.run()
    at.file_uploader(key="cp_upload_a").set_value(_csv(a, "a.csv")).run()
    at.file_uploader(key="cp_upload_b").set_value(_csv(b, "b.csv")).run()
    assert not at.exception and not at.error, [e.value for e in at.error]
    at.selectbox(key="cp_key2").set_value("Metadata_Well").run()
    at.button(key="cp_run").click().run()
    assert not at.exception and not at.error, [e.value for e in at.error]
    raw = [w.value for w in at.warning if "un-normalised" in w.value]
    assert len(raw) == 1 and "Table A" in raw[0] and "table B" in raw[0]
    at.button(key="cp_normalize_fix").click().run()
    assert at.selectbox(key="cp_normalize").value == CONTROLS
    at.button(key="cp_run").click().run()
    assert not at.exception and not at.error
    assert not [w for w in at.warning if "un-normalised" in w.value]
    want = score_compare(a, b, key=["Metadata_Plate", "Metadata_Well"], perturbation="Metadata_Compound",
                         control="DMSO", stratum="Metadata_Plate", permutations=999, seed=0, normalize="controls")
    table = next(d.value for d in at.dataframe if "mAP_a" in d.value.columns)
    assert sorted(table["mAP_b"].round(9)) == sorted(want.groups["mAP_b"].round(9))


def test_without_a_stratum_the_page_says_the_table_is_one_plate():
    assert report.normalize_note("none", None) == ""
    assert "whole table is normalised as one plate" in report.normalize_note("controls", None)
    assert "Each plate (Metadata_Plate)" in report.normalize_note("plate", "Metadata_Plate")
    table = raw_screen(seed=2, nan_cells=False)
    at = AppTest.from_file(SCORE, default_timeout=300)
    at.query_params["sc_data"] = "upload"
    at.query_params["sc_stratum"] = "(none)"
    at.query_params["sc_normalize"] = CONTROLS
    at.run()
    at = at.file_uploader(key="upload").set_value(_csv(table, "raw.csv")).run()
    assert not at.exception and not at.error, [e.value for e in at.error]
    plan = next(m.value for m in at.markdown if "feature column(s)" in m.value)
    assert "whole table is normalised as one plate" in plan
