"""The score page's options as the command line has them, with AppTest: the missing-value choice, several
perturbation columns with a two-stage FDR, the download zip's settings, and the URL after an upload and the
consistency step."""

import io
import json
import zipfile
from pathlib import Path

import numpy as np
import pandas as pd
from streamlit.testing.v1 import AppTest

import apnull
from apnull.score import digits_example, score_profiles
from apnull.views import score as view
from apnull.views import score_report as report

PAGE = str(Path(__file__).resolve().parents[1] / "app_pages" / "score.py")
PERT = "Metadata_perturbation"
MORE_KEY = "sc_more_open"
OPTION_KEYS = ("sc_pert_more", "sc_nan", "sc_negatives", "sc_differ", "sc_hier", "sc_copairs")


def _option_widgets(at: AppTest) -> list[str]:
    return [w.key for kind in ("multiselect", "radio", "toggle") for w in at.get(kind) if w.key in OPTION_KEYS]


def _upload(table: pd.DataFrame, name="screen.csv", **params) -> AppTest:
    at = AppTest.from_file(PAGE, default_timeout=300)
    at.query_params["sc_data"] = "upload"
    for key, value in params.items():
        at.query_params["sc_" + key] = str(value)
    at.run()
    return at.file_uploader(key="upload").set_value((name, table.to_csv(index=False).encode(), "text/csv")).run()


def _open_options(at: AppTest) -> AppTest:
    """Open the "More options" box, as a click does (its inputs are built while it is open)."""
    at.session_state[MORE_KEY] = True
    return at.run()


def _with_nan() -> pd.DataFrame:
    table = digits_example()
    table.loc[5, "px_10"] = np.nan
    table.loc[7, "px_11"] = np.inf
    return table


def _groups(at):
    return next(d.value for d in at.dataframe if "n_replicates" in d.value.columns)


def test_a_nan_cell_names_the_page_control_and_each_choice_applies():
    at = _upload(_with_nan())
    assert len(at.error) == 1
    message = at.error[0].value
    assert "'px_10'" in message and "Missing values" in message and "leave out those features" in message
    assert "nan=" not in message and "--nan" not in message
    _open_options(at)
    at.radio(key="sc_nan").set_value("leave out those features").run()
    assert not at.error, [e.value for e in at.error]
    plan = next(m.value for m in at.markdown if "feature column(s)" in m.value)
    assert "2 feature column(s) left out** for missing or infinite values: px_10, px_11" in plan
    at.radio(key="sc_nan").set_value("leave out those rows").run()
    plan = next(m.value for m in at.markdown if "feature column(s)" in m.value)
    assert "2 row(s) left out** for missing or infinite values (data rows 6, 8 (counting from 1" in plan
    at.button(key="score").click().run()
    assert not at.exception and not at.error
    want = score_profiles(_with_nan(), PERT, "DMSO", "Metadata_plate", permutations=999, nan="drop-rows")
    pd.testing.assert_frame_equal(_groups(at).reset_index(drop=True), view.ranked_groups(want.groups, 0.05),
                                  check_dtype=False)


def test_the_zip_holds_the_tables_and_the_settings():
    at = _upload(_with_nan(), nan="leave out those rows", fdr=0.1, seed=3, perms=199)
    at.button(key="score").click().run()
    assert not at.exception and not at.error, [e.value for e in at.error]
    button = next(b for b in at.get("download_button") if b.label == "Download tables + settings (zip)")
    assert button is not None
    # the bytes the button serves, built as the page builds them
    groups = view.ranked_groups(score_profiles(_with_nan(), PERT, "DMSO", "Metadata_plate", permutations=199, seed=3,
                                               nan="drop-rows").groups, 0.1)
    settings = view.make_settings(_with_nan(), PERT, "DMSO", "Metadata_plate", "", "cosine", "permutation", 199, 3,
                                  nan="drop-rows")
    g, q = report.download_tables(groups, groups.head(0), 0.1)
    record = report.settings_record(file="screen", digest="d", settings=settings, alpha=0.1, version=apnull.__version__,
                                    dropped_rows=[5, 7], feature_columns=["px_00", "px_01"])
    data = report.bundle_zip({"screen_perturbations": g, "screen_queries": q}, record)
    assert data == report.bundle_zip({"screen_perturbations": g, "screen_queries": q}, record)  # deterministic
    with zipfile.ZipFile(io.BytesIO(data)) as zf:
        assert zf.namelist() == ["screen_perturbations.csv", "screen_queries.csv", "settings.json"]
        saved = json.loads(zf.read("settings.json"))
        table = pd.read_csv(zf.open("screen_perturbations.csv"))
    assert "significant_at_fdr_0.1" in table.columns and "significant" not in table.columns
    assert saved["nan"] == "drop-rows" and saved["dropped_rows"] == [5, 7] and saved["fdr_level"] == 0.1
    assert saved["seed"] == 3 and saved["permutations"] == 199 and saved["apnull_version"] == apnull.__version__
    assert saved["feature_columns"] == ["px_00", "px_01"]  # the features used, listed
    assert {"file", "perturbation", "control", "stratum", "features", "similarity", "null", "positives_differ_by",
            "negatives", "hierarchical_by"} <= set(saved)


def test_the_page_download_is_the_zip_the_settings_describe():
    at = _upload(digits_example(), fdr=0.1)
    at.button(key="score").click().run()
    # the page's own callable: find it through the element's stored data is not possible in AppTest, so check
    # that the CSV download renames the significant column (the same helper builds both)
    g, _q = report.download_tables(_groups(at), _groups(at).head(0), 0.1)
    assert "significant_at_fdr_0.1" in g.columns
    g2, _ = report.download_tables(_groups(at), _groups(at).head(0), 0.1, True, apnull.score.to_copairs_names)
    assert "below_corrected_p" in g2.columns and "mean_average_precision" in g2.columns


def test_several_perturbation_columns_and_families():
    table = digits_example()
    table["Metadata_dose"] = np.where(np.arange(len(table)) % 2, "1", "10")
    at = _upload(table)
    _open_options(at)
    at.multiselect(key="sc_pert_more").set_value(["Metadata_dose"]).run()
    at.button(key="score").click().run()
    assert not at.exception and not at.error, [e.value for e in at.error]
    want = score_profiles(table, [PERT, "Metadata_dose"], "DMSO", "Metadata_plate", permutations=999)
    shown = _groups(at)
    assert len(shown) == len(want.groups) and {PERT, "Metadata_dose"} <= set(shown.columns)
    at.multiselect(key="sc_hier").set_value([PERT]).run()
    assert not at.exception and not at.error, [e.value for e in at.error]
    assert {"stage1_q_value", "q_value_input"} <= set(_groups(at).columns)


def test_url_after_an_upload_and_consistency_holds_what_is_applied():
    at = AppTest.from_file(PAGE, default_timeout=300)
    at.query_params["sc_cs"] = "true"  # the consistency step's expander open
    at.run()
    at.selectbox(key="sc_cs_label").set_value("target_C").run()
    assert at.session_state["sc_cs_label"] == "target_C"
    upload = digits_example().rename(columns={"Metadata_target": "Metadata_moa"})
    upload["Metadata_moa"] = upload["Metadata_moa"].str.replace("target_", "moa_")
    at.radio(key="sc_data").set_value("upload").run()
    at.file_uploader(key="upload").set_value(("moa.csv", upload.to_csv(index=False).encode(), "text/csv")).run()
    at.button(key="score").click().run()
    at.button(key="sc_cs_run").click().run()
    assert not at.exception and not at.error, [e.value for e in at.error]
    assert at.selectbox(key="sc_cs_annotation").value == "Metadata_moa"
    shown = at.selectbox(key="sc_cs_label").value
    assert shown.startswith("moa_")
    assert at.session_state["sc_cs_label"] == shown  # the example's label was forgotten, not kept unseen
    url = at.query_params.get("sc_cs_label")
    assert url in (None, shown, [shown])  # never the example's label
    assert at.query_params.get("sc_cs_annotation") in (None, "Metadata_moa", ["Metadata_moa"])


def test_a_text_cell_is_said_with_the_page_controls():
    table = digits_example()
    table["px_10"] = table["px_10"].astype(object)
    table.loc[4, "px_10"] = "abc"
    at = _upload(table)
    assert len(at.error) == 1
    message = at.error[0].value
    assert "'abc' in data row 5" in message and "**Feature columns (regex)**" in message
    assert "**Missing values** → *leave out those rows*" in message
    assert "features=" not in message and "nan=" not in message and "--nan" not in message


def test_page_words():
    said = report.page_words("drop them or use similarity='euclidean'; leave the columns out with features=, or "
                             "pass nan='drop-features' or nan='drop-rows' (--nan on the command line)")
    assert said == ("drop them or use **Similarity** → *euclidean*; leave the columns out with **Feature columns "
                    "(regex)**, or pass **Missing values** → *leave out those features* or **Missing values** → "
                    "*leave out those rows*")


def test_more_options_are_built_while_open_or_holding_a_setting():
    """Closed and at their defaults, the box's inputs are not built (a run sends one element for it, not 16);
    a setting stays applied and in the URL when the box is closed, and a link carrying one opens the box."""
    at = AppTest.from_file(PAGE, default_timeout=300).run()
    assert not at.exception and not at.error
    assert _option_widgets(at) == []  # closed: nothing built
    _open_options(at)
    assert sorted(_option_widgets(at)) == sorted(OPTION_KEYS)
    at.radio(key="sc_negatives").set_value("every other profile of its plate").run()
    at.session_state[MORE_KEY] = False  # closed by a click, holding a setting: still built and applied (the
    at.run()  # browser test checks the URL keeps it: AppTest has no browser writing bound values to the URL)
    assert at.radio(key="sc_negatives").value == "every other profile of its plate"
    assert "among the other profiles of its plate" in " ".join(c.value for c in at.caption)
    at.radio(key="sc_negatives").set_value("the controls of its plate").run()
    at.run()  # closed and back at the defaults: no longer built
    assert _option_widgets(at) == []
    assert "among its plate's controls" in " ".join(c.value for c in at.caption)
    linked = AppTest.from_file(PAGE, default_timeout=300)
    linked.query_params["sc_negatives"] = "every other profile of its plate"
    linked.run()  # a link holding one of the options: the box opens and the option applies
    assert not linked.exception and not linked.error
    assert linked.session_state[MORE_KEY] is True
    assert linked.radio(key="sc_negatives").value == "every other profile of its plate"
    assert "among the other profiles of its plate" in " ".join(c.value for c in linked.caption)
