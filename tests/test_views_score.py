"""apnull.views.score: the data of the "Score your data" page, on small synthetic tables."""

import numpy as np
import pandas as pd
import pytest

from apnull.views import score as view
from apnull.views import score_report as report

PERT = "Metadata_pert"


def _table():
    return pd.DataFrame({
        "Metadata_plate": ["P1", "P1", "P2", "P2", "P1", "P2"],
        PERT: ["DMSO", "DMSO", "DMSO", "a", "a", "b"],
        "Metadata_dose": [0, 0, 0, 1, 1, 2],
        "f1": np.arange(6.0), "f2": np.ones(6),
    })


def _groups():
    return pd.DataFrame({PERT: ["a", "b", "c", 7], "n_replicates": [4, 4, 3, 4], "mAP": [0.9, 0.2, 0.6, np.nan],
                         "p_value": [0.001, 0.6, 0.02, np.nan], "q_value": [0.004, 0.6, 0.04, np.nan],
                         "null": "permutation"})


def test_label_columns_and_guesses():
    t = _table()
    labels = view.label_columns(t)
    assert labels == ["Metadata_plate", PERT, "Metadata_dose"]  # numeric features are not labels
    assert view.guess_perturbation(labels) == PERT
    assert view.guess_perturbation(["Metadata_x", "Metadata_y"]) == "Metadata_x"
    assert view.guess_stratum(labels, PERT) == "Metadata_plate"
    assert view.guess_stratum([PERT], PERT) == view.NO_STRATUM
    assert view.guess_control(t[PERT]) == "DMSO"
    # no control-like name: the most frequent value
    assert view.guess_control(pd.Series(["x", "y", "y"])) == "y"
    assert view.guess_control(pd.Series([], dtype=object)) is None


def test_resolve_controls_matches_as_text_and_names_the_problem():
    t = _table()
    assert view.resolve_controls(t, PERT, "DMSO") == ["DMSO"]
    assert view.resolve_controls(t, PERT, " DMSO , b, DMSO") == ["DMSO", "b"]
    assert view.resolve_controls(t, "Metadata_dose", "0") == ["0"]  # matches the integer 0 as text
    with pytest.raises(ValueError, match=r"control value\(s\) 'dmso' not found in column 'Metadata_pert'; "
                                         r"its most frequent values are: 'DMSO', 'a', 'b'"):
        view.resolve_controls(t, PERT, "dmso")
    with pytest.raises(ValueError, match=r"'9999999999.*\.\.\.\(100,000 characters\) not found") as err:
        view.resolve_controls(t, PERT, "9" * 100_000)  # a pasted link: the message stays short
    assert len(str(err.value)) < 300
    with pytest.raises(ValueError, match="type the control value"):
        view.resolve_controls(t, PERT, " , ")
    with pytest.raises(ValueError, match="column 'Metadata_nope' is not in the table; its columns are: "):
        view.resolve_controls(t, "Metadata_nope", "DMSO")


def test_make_settings_checks_and_keys():
    t = _table()
    s = view.make_settings(t, PERT, "DMSO", "Metadata_plate", " ^f ", "cosine", "permutation", 999, 3)
    assert s.kwargs() == dict(perturbation=PERT, control="DMSO", stratum="Metadata_plate", features="^f",
                              similarity="cosine", null="permutation", permutations=999, seed=3, nan="error",
                              negatives="controls", positives_differ_by=None, normalize="none")
    assert view.make_settings(t, PERT, "DMSO", "Metadata_plate", "^f", "cosine", "permutation", 999, 3,
                              normalize="controls").kwargs()["normalize"] == "controls"
    assert view.make_settings(t, PERT, "DMSO", "Metadata_plate", "^f", "cosine", "permutation", 999, 3,
                              normalize="controls").key() != s.key()
    with pytest.raises(ValueError, match="normalize must be one of none, controls, plate"):
        view.make_settings(t, PERT, "DMSO", None, None, "cosine", "permutation", 99, 0, normalize="robust")
    assert hash(s.key()) == hash(view.make_settings(t, PERT, "DMSO", "Metadata_plate", "^f", "cosine",
                                                    "permutation", 999, 3).key())
    s2 = view.make_settings(t, PERT, "DMSO, b", view.NO_STRATUM, "", "euclidean", "independent", 999, 0)
    assert s2.stratum is None and s2.features is None and s2.permutations == 0
    assert s2.kwargs()["control"] == ["DMSO", "b"] and "permutations" not in s2.kwargs()
    # B does not matter for the independent null (a convolution): it stays out of the key
    assert s2.key() == view.make_settings(t, PERT, "DMSO, b", None, None, "euclidean", "independent", 5, 0).key()
    # copairs draws B random AP rows per size: B matters
    s3 = view.make_settings(t, PERT, "DMSO", None, None, "cosine", "copairs", 99, 0)
    assert s3.kwargs()["permutations"] == 99
    with pytest.raises(ValueError, match="permutations must be between"):
        view.make_settings(t, PERT, "DMSO", None, None, "cosine", "copairs", 0, 0)
    with pytest.raises(ValueError, match="permutations must be between 1 and 100,000"):
        view.make_settings(t, PERT, "DMSO", None, None, "cosine", "permutation", 0, 0)
    with pytest.raises(ValueError, match="the regular expression has 100,000 characters; use at most 2,000"):
        view.make_settings(t, PERT, "DMSO", None, "x" * 100_000, "cosine", "permutation", 99, 0)
    with pytest.raises(ValueError, match="not a valid regular expression"):
        view.make_settings(t, PERT, "DMSO", None, "([", "cosine", "permutation", 99, 0)
    with pytest.raises(ValueError, match="stratum column 'Metadata_well' is not in the table"):
        view.make_settings(t, PERT, "DMSO", "Metadata_well", None, "cosine", "permutation", 99, 0)
    with pytest.raises(ValueError, match="must differ from the perturbation column"):
        view.make_settings(t, PERT, "DMSO", PERT, None, "cosine", "permutation", 99, 0)
    with pytest.raises(ValueError, match="seed must be at least 0"):
        view.make_settings(t, PERT, "DMSO", None, None, "cosine", "permutation", 99, -1)
    assert view.check_fdr(0.1) == 0.1
    for bad in (0, 1, -0.2):
        with pytest.raises(ValueError, match="FDR level q must lie in"):
            view.check_fdr(bad)


def test_group_table_and_volcano_data():
    g = view.ranked_groups(_groups(), 0.05)
    assert g[PERT].tolist() == ["a", "c", "b", 7]  # by p, NaN last
    assert g["significant"].tolist() == [True, True, False, False]
    d = view.volcano_data(g, PERT, 0.05)
    assert d["name"].tolist() == ["a", "c", "b"]  # the unscored one has no point
    np.testing.assert_allclose(d["neg_log10_p"], -np.log10([0.001, 0.02, 0.6]))
    assert view.p_cutoff(d) == 0.02
    assert view.p_cutoff(view.volcano_data(g, PERT, 0.001)) is None
    # p = 0 from an approximate null stays finite on the log axis
    zero = _groups().assign(p_value=[0.0, 0.5, 0.5, 0.5])
    assert np.isfinite(view.volcano_data(zero, PERT, 0.05)["neg_log10_p"]).all()
    assert view.names(g, PERT) == ["a", "c", "b", "7"]
    assert view.original_name(g, PERT, "7") == 7
    with pytest.raises(ValueError, match="'zz' is not a scored perturbation"):
        view.row_of(g, PERT, "zz")


def test_queries_of_and_selected_name():
    q = pd.DataFrame({"row": [0, 1, 2], PERT: ["a", 7, "a"], "ap": [0.5, 0.1, 1.0]})
    assert view.queries_of(q, PERT, "a")["row"].tolist() == [0, 2]
    assert view.queries_of(q, PERT, "7")["row"].tolist() == [1]
    sel = {"points": [{"curve_number": 0, "point_index": 1, "customdata": ["c", 3, 0.02, 0.04]}],
           "point_indices": [1], "box": [], "lasso": []}
    assert view.selected_name(sel) == "c"
    assert view.selected_name({"points": [{"x": 1}]}) is None
    assert view.selected_name({"points": []}) is None
    assert view.selected_name(None) is None


def test_null_histogram_and_summary():
    null = np.array([0.1, 0.1, 0.2, 0.3, 0.4])
    h = view.null_histogram(null, 0.9, bins=8)
    assert len(h) == 8 and h["count"].sum() == 5
    assert h["left"].iloc[0] == 0.1 and h["right"].iloc[-1] == pytest.approx(0.9)  # the observed mAP is inside
    assert h["share"].sum() == pytest.approx(1.0)
    assert view.null_histogram(np.full(3, 0.25), 0.25)["count"].sum() == 3  # a point mass gets a window
    with pytest.raises(ValueError, match="empty"):
        view.null_histogram([], 0.5)
    s = view.null_summary(null, 0.3)
    assert s["permutations"] == 5 and s["reached"] == 2 and s["share_above"] == pytest.approx(0.4)
    assert s["mean"] == pytest.approx(0.22)


def test_calibration_table_and_formatting():
    cal = report.calibration_table()
    assert list(cal.columns) == ["method", "fpr_05", "fpr_01", "verdict"]
    verdicts = dict(zip(cal["method"], cal["verdict"]))
    assert verdicts["mAP: labels shuffled within plates, fixed number of shuffles"] == "calibrated"
    assert "over-rejects" in verdicts["mAP: the replicates' APs treated as independent"]
    assert "benchmarks/calibration.py" in report.CALIBRATION_SOURCE
    assert float(cal.loc[0, "fpr_05"].split(" / ")[0]) == pytest.approx(0.05, abs=0.01)
    assert view.p_label(0.06) == "0.060" and view.p_label(0.00297) == "0.00297" and view.p_label(np.nan) == "n/a"
    assert view.p_label(0.0) != "0" and view.p_label(1e-5) == "1e-05"


def test_p_shown_never_a_bare_zero():
    t = pd.DataFrame({"x": ["a", "b"], "p_value": [0.0, 1e-5], "q_value": [0.5, 1e-5], "mAP": [0.0, 0.2]})
    shown = view.p_shown(t)
    assert "0" not in set(shown["p_value"]) and shown["p_value"].iloc[1] == "1e-05"
    assert shown["q_value"].dtype == float and shown["mAP"].tolist() == [0.0, 0.2]  # no 0 p: numbers kept
    assert t["p_value"].dtype == float  # the input is not changed
    assert view.p_shown(t.iloc[1:]) is not None and view.p_shown(t.iloc[1:])["p_value"].dtype == float
    assert view.file_digest(b"abc") == view.file_digest(b"abc") != view.file_digest(b"abd")
