"""The consistency step of the score page with AppTest: the bundled example's labels table equals the
library's, the active-only scope, the separator, a label's null, and bad choices shown as st.error."""

from pathlib import Path

import numpy as np
import pandas as pd
import pytest
from streamlit.testing.v1 import AppTest

from apnull.score import digits_example, score_consistency
from apnull.ui.consistency_step import KEYS, OPEN_KEY, TITLE
from apnull.views import consistency as view
from plotly_json import decode, figures

PAGE = str(Path(__file__).resolve().parents[1] / "app_pages" / "score.py")
PERT, ANN = "Metadata_perturbation", "Metadata_target"


def _run(**params):
    """The score page with the consistency step's expander open (``sc_cs=true``) and ``params`` in its URL."""
    at = AppTest.from_file(PAGE, default_timeout=300)
    for key, value in {"sc_cs": "true", **params}.items():
        at.query_params[key] = str(value)
    return at.run()


def _labels(at):
    return next(d.value for d in at.dataframe if "n_perturbations" in d.value.columns)


def _titles(at):
    return [f.get("layout", {}).get("title", {}).get("text", "") for f in figures(at)]


def test_example_labels_equal_the_library():
    at = _run()
    assert not at.exception and not at.error, [e.value for e in at.error]
    assert at.selectbox(key="sc_cs_annotation").value == ANN      # guessed
    assert at.selectbox(key="sc_cs_sep").value == "|"             # guessed from the cells
    expected = score_consistency(digits_example(), PERT, ANN, label_sep="|", control="DMSO", permutations=999)
    shown = _labels(at)
    pd.testing.assert_frame_equal(shown[list(expected.labels.columns)], expected.labels, check_dtype=False)
    titles = _titles(at)
    assert any("Consistency: label mAP" in t for t in titles)
    assert any(t.startswith("target_A: mAP = ") for t in titles)  # the first label's null


def test_active_only_and_picking_a_label():
    at = _run()
    at.radio(key="sc_cs_scope").set_value(view.ACTIVE).run()
    assert not at.exception and not at.error, [e.value for e in at.error]
    groups = next(d.value for d in at.dataframe if "n_replicates" in d.value.columns)
    assert at.metric[-1].value == str(int(groups["significant"].sum()))  # the active ones only
    at.selectbox(key="sc_cs_label").set_value("target_C").run()
    assert any(t.startswith("target_C: mAP") for t in _titles(at))


def test_no_separator_makes_whole_cells_labels():
    at = _run(sc_cs_sep=view.NO_SEPARATOR)
    assert not at.error
    # whole cells: "target_B|target_D" is on one perturbation only, so it is skipped
    assert set(_labels(at)[ANN]) == {"target_A", "target_B", "target_C", "target_D"}


@pytest.mark.parametrize("params, message", [
    (dict(sc_cs_annotation="Metadata_plate"), "different annotations"),
    (dict(sc_cs_perms=0), "permutations must be between 1"),
])
def test_bad_choices_are_errors(params, message):
    at = _run(**params)
    assert not at.exception
    assert any(message in e.value for e in at.error), [e.value for e in at.error]


def test_guesses():
    table = digits_example()
    assert view.guess_annotation(table, PERT) == ANN
    assert view.guess_separator(table[ANN]) == "|"
    assert view.guess_separator(pd.Series(["a", "b"])) == view.NO_SEPARATOR


def test_example_teaches_a_contrast():
    """The example's labels: target_A (3, 5, 8, 9: alike) consistent, target_C (1, 2, 4 and a null: unlike) not;
    the figure's axis spans a real range and no cell shows None."""
    at = _run()
    labels = _labels(at).set_index(ANN)
    assert labels.loc["target_A", "significant"] and labels.loc["target_A", "mAP"] > 0.7
    assert not labels.loc["target_C", "significant"] and labels.loc["target_C", "p_value"] > 0.5
    assert labels["n_perturbations"].max() < 13  # no label carried by (almost) every perturbation
    assert not labels.reset_index().isna().any().any()
    fig = next(f for f in figures(at) if f["layout"]["title"]["text"].startswith("Consistency"))
    xs = np.concatenate([decode(t["x"]) for t in fig["data"] if t.get("mode") == "markers"])
    assert xs.max() - xs.min() > 0.3


def test_no_annotation_column_is_a_quiet_note():
    table = digits_example().drop(columns=["Metadata_shape", "Metadata_target", "Metadata_digit", "Metadata_kind"])
    at = AppTest.from_file(PAGE, default_timeout=300)
    at.query_params["sc_data"] = "upload"
    at.query_params["sc_cs"] = "true"
    at.run()
    at.file_uploader(key="upload").set_value(("plain.csv", table.to_csv(index=False).encode(), "text/csv")).run()
    at.button(key="score").click().run()
    assert not at.exception and not at.error, [e.value for e in at.error]
    assert any("looks like an annotation" in i.value for i in at.info)


def test_the_step_is_built_only_while_its_expander_is_open():
    """Closed (the default), the step adds one expander and none of its inputs or results to a rerun; opened,
    or opened by a link carrying one of its inputs, it shows them."""
    at = AppTest.from_file(PAGE, default_timeout=300).run()
    assert not at.exception and not at.error
    assert [e for e in at.expander if e.label == TITLE]
    keys = {w.key for w in at.selectbox} | {w.key for w in at.number_input}
    assert not keys & set(KEYS)
    assert not any("n_perturbations" in d.value.columns for d in at.dataframe)
    at.session_state[OPEN_KEY] = True
    at.run()
    assert at.selectbox(key="sc_cs_annotation").value == ANN and len(_labels(at))
    linked = AppTest.from_file(PAGE, default_timeout=300)
    linked.query_params["sc_cs_label"] = "target_C"
    linked.run()
    assert linked.selectbox(key="sc_cs_label").value == "target_C"
    assert any(t.startswith("target_C: mAP") for t in _titles(linked))
