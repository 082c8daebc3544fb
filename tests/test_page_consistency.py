"""The consistency step of the score page with AppTest: the bundled example's labels table equals the
library's, the active-only scope, the separator, a label's null, and bad choices shown as st.error."""

from pathlib import Path

import pandas as pd
import pytest
from streamlit.testing.v1 import AppTest

from apnull.score import digits_screen, score_consistency
from apnull.views import consistency as view
from plotly_json import figures

PAGE = str(Path(__file__).resolve().parents[1] / "app_pages" / "score.py")
PERT, ANN = "Metadata_perturbation", "Metadata_shape"


def _run(**params):
    at = AppTest.from_file(PAGE, default_timeout=300)
    for key, value in params.items():
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
    expected = score_consistency(digits_screen(), PERT, ANN, label_sep="|", control="DMSO", permutations=999)
    shown = _labels(at)
    pd.testing.assert_frame_equal(shown[list(expected.labels.columns)], expected.labels, check_dtype=False)
    titles = _titles(at)
    assert any("Consistency: label mAP" in t for t in titles)
    assert any(t.startswith("loop: mAP = 1.0000") for t in titles)  # the first label's null


def test_active_only_and_picking_a_label():
    at = _run()
    at.radio(key="sc_cs_scope").set_value(view.ACTIVE).run()
    assert not at.exception and not at.error, [e.value for e in at.error]
    groups = next(d.value for d in at.dataframe if "n_replicates" in d.value.columns)
    assert at.metric[-1].value == str(int(groups["significant"].sum()))  # the active ones only
    at.selectbox(key="sc_cs_label").set_value("bowls").run()
    assert any(t.startswith("bowls: mAP") for t in _titles(at))


def test_no_separator_makes_whole_cells_labels():
    at = _run(sc_cs_sep=view.NO_SEPARATOR)
    assert not at.error
    assert set(_labels(at)[ANN]) == {"loop"}  # "bowls|loop" and "loop|stem" are each on one perturbation


@pytest.mark.parametrize("params, message", [
    (dict(sc_cs_annotation="Metadata_plate"), "different annotations"),
    (dict(sc_cs_perms=0), "permutations must be between 1"),
])
def test_bad_choices_are_errors(params, message):
    at = _run(**params)
    assert not at.exception
    assert any(message in e.value for e in at.error), [e.value for e in at.error]


def test_guesses():
    table = digits_screen()
    assert view.guess_annotation(table, PERT) == ANN
    assert view.guess_separator(table[ANN]) == "|"
    assert view.guess_separator(pd.Series(["a", "b"])) == view.NO_SEPARATOR
