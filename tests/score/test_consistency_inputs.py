"""Consistency reads its table through score's preparation: names and labels as text, controls matched
with close names, text cells named, any scale, ``--only`` as text, wrong types as TypeError; each class
of the hostile inputs that broke it once, through the library and through ``apnull consistency``."""

import io
import json
import string

import numpy as np
import pandas as pd
import pytest
from hypothesis import HealthCheck, assume, given, settings
from hypothesis import strategies as st

from apnull.cli import main
from apnull.score import score_consistency, score_profiles

FAST = settings(max_examples=15, deadline=None, suppress_health_check=list(HealthCheck))
#: Names and labels as a user may write them: digits, dots, signs, zeros, NA-like words, unicode.
label_text = st.text(alphabet=st.sampled_from(list(string.digits + ".-+eE_xyzNAnul/") + ["é", "µ"]),
                     min_size=1, max_size=12).filter(lambda s: s.strip() == s and "," not in s)


def run(argv):
    out, err = io.StringIO(), io.StringIO()
    status = main(argv, out=out, err=err)
    return status, out.getvalue(), err.getvalue()


def _rows(names, labels, d=4, reps=2, seed=0, scale=1.0):
    """CSV text: ``reps`` rows per name with its label, Gaussian features (written by repr)."""
    rng = np.random.default_rng(seed)
    lines = ["pert,target," + ",".join(f"f{i}" for i in range(d))]
    for name, label in zip(names, labels):
        base = rng.normal(size=d)
        for _ in range(reps):
            lines.append(f"{name},{label}," + ",".join(repr(float(v) * scale) for v in base + 0.5 * rng.normal(size=d)))
    return "\n".join(lines) + "\n"


def _cli(tmp_path, text, *extra, name="t.csv"):
    path = tmp_path / name
    path.write_text(text)
    return run(["consistency", str(path), "--perturbation", "pert", "--annotation", "target", "--permutations", "19",
                "--json", *extra])


@FAST
@given(names=st.lists(label_text, min_size=4, max_size=8, unique=True),
       labels=st.lists(label_text, min_size=2, max_size=3, unique=True))
def test_names_and_labels_stay_as_written(tmp_path_factory, names, labels):
    """Every distinct text is its own perturbation and label: '1', '1.0', '01', 'NA', 'nan', 'N/A'."""
    assume(all(n.strip() for n in names))
    cells = [labels[i % len(labels)] for i in range(len(names))]
    status, out, err = _cli(tmp_path_factory.mktemp("n"), _rows(names, cells))
    assert status == 0, err
    doc = json.loads(out)
    assert doc["settings"]["profiles"] == len(names) and doc["settings"]["unlabelled"] == 0
    assert {r["target"] for r in doc["labels"]} | {r["target"] for r in doc["skipped"]} == set(labels)
    assert {str(q["pert"]) for q in doc["queries"]} <= set(names)


def test_the_issue_names(tmp_path):
    names = ["1", "1.0", "01", "2", "2.0", "02", "NA", "nan", "N/A", "null", "None", "x"]
    status, out, _ = _cli(tmp_path, _rows(names, ["1", "1.0", "01"] * 4))
    doc = json.loads(out)
    assert status == 0 and doc["settings"]["profiles"] == 12
    assert sorted(r["target"] for r in doc["labels"]) == ["01", "1", "1.0"]


@FAST
@given(ids=st.lists(st.integers(10**16, 10**17 - 1), min_size=6, max_size=8, unique=True))
def test_long_ids_keep_their_digits_beside_blank_cells(tmp_path_factory, ids):
    text = _rows([str(i) for i in ids], ["a", "b"] * 4) + ",a,1,2,3,4\n"  # a row without a perturbation
    status, out, _ = _cli(tmp_path_factory.mktemp("i"), text)
    doc = json.loads(out)
    assert status == 0 and doc["settings"]["profiles"] == len(ids)
    assert {q["pert"] for q in doc["queries"]} == {str(i) for i in ids}
    row = 2 * len(ids)
    assert f"1 row with an empty perturbation value was ignored (data row {row + 1} (counting from 1 under the " \
        "header))." in doc["warnings"]


def test_controls_are_matched_as_text_with_close_names(tmp_path):
    text = _rows([str(i) for i in range(1, 9)] + ["0"], ["a", "b"] * 4 + ["c"])
    status, out, _ = _cli(tmp_path, text, "--control", "0")
    assert status == 0 and json.loads(out)["settings"]["profiles"] == 8  # the control 0 found and dropped
    status, _, err = _cli(tmp_path, text, "--control", "00")
    assert status == 2 and "no control rows: column 'pert' never equals '00'; did you mean '0'" in err
    text = _rows([f"c{i}" for i in range(8)] + ["DMSO"], ["a", "b"] * 4 + ["c"])
    status, _, err = _cli(tmp_path, text, "--control", "dmso")
    assert status == 2 and err.count("\n") == 1 and "did you mean 'DMSO'?" in err
    status, out, _ = _cli(tmp_path, text, "--control", "DMSO", "--control", "junk")
    assert status == 0 and "control value 'junk' matches no row of column 'pert'" in json.loads(out)["warnings"][0]


def test_the_same_control_message_as_score():
    """One home: score and consistency say the same about a control value that matches nothing."""
    rng = np.random.default_rng(0)
    df = pd.DataFrame(rng.normal(size=(12, 3)), columns=["f0", "f1", "f2"])
    df.insert(0, "target", ["a", "b"] * 6)
    df.insert(0, "pert", ["DMSO"] * 4 + [f"c{i // 2}" for i in range(8)])
    with pytest.raises(ValueError) as a:
        score_profiles(df, "pert", control="DMS0", permutations=9)
    with pytest.raises(ValueError) as b:
        score_consistency(df, "pert", "target", control="DMS0", permutations=9)
    assert str(a.value) == str(b.value) and "did you mean 'DMSO'?" in str(a.value)


def test_na_words_are_labels_and_blank_rows_are_named(tmp_path):
    text = _rows(["p1", "p2", "p3", "p4", "p5", "p6"], ["NA", "nan", "N/A"] * 2)
    status, out, _ = _cli(tmp_path, text)
    assert status == 0 and sorted(r["target"] for r in json.loads(out)["labels"]) == ["N/A", "NA", "nan"]


def test_a_text_cell_in_a_feature_column_is_named(tmp_path):
    lines = _rows([f"c{i}" for i in range(8)], ["a", "b"] * 4).splitlines()
    cells = lines[5].split(",")  # data row 5, counting from 1 (line 0 is the header)
    cells[3] = "abc"             # its f1
    lines[5] = ",".join(cells)
    status, _, err = _cli(tmp_path, "\n".join(lines) + "\n")
    assert status == 2 and err.count("\n") == 1
    assert "feature column 'f1' is not numeric in 1 cell(s): 'abc' in data row 5" in err


@pytest.mark.parametrize("similarity", ["cosine", "correlation", "euclidean", "abs_cosine"])
def test_any_magnitude_gives_the_same_results(similarity):
    """x1e300, x1e200, x1e-200, x1e-300: the rankings (so every AP, mAP and p-value) of x1."""
    rng = np.random.default_rng(3)
    X = rng.normal(size=(36, 6))
    df = pd.DataFrame(X, columns=[f"f{i}" for i in range(6)])
    df.insert(0, "target", [["a", "b", "c"][i // 3 % 3] for i in range(36)])
    df.insert(0, "pert", [f"c{i // 3:02d}" for i in range(36)])
    kw = dict(permutations=49, seed=2, similarity=similarity)
    base = score_consistency(df, "pert", "target", **kw)
    for scale in (1e300, 1e200, 1e-200, 1e-300):
        scaled = df.assign(**{f"f{i}": df[f"f{i}"] * scale for i in range(6)})
        res = score_consistency(scaled, "pert", "target", **kw)
        np.testing.assert_allclose(res.labels["mAP"], base.labels["mAP"], rtol=0, atol=1e-12)
        assert res.labels["p_value"].tolist() == base.labels["p_value"].tolist(), scale
        assert res.queries["ap"].round(12).tolist() == base.queries["ap"].round(12).tolist()


@FAST
@given(exponent=st.integers(-1000, 1000), similarity=st.sampled_from(["cosine", "euclidean", "correlation"]))
def test_power_of_two_scale_changes_nothing(exponent, similarity):
    rng = np.random.default_rng(5)
    df = pd.DataFrame(rng.normal(size=(24, 4)), columns=["f0", "f1", "f2", "f3"])
    df.insert(0, "target", [["a", "b", "c"][i // 2 % 3] for i in range(24)])
    df.insert(0, "pert", [f"c{i // 2:02d}" for i in range(24)])
    scaled = df.assign(**{f"f{i}": np.ldexp(df[f"f{i}"].to_numpy(), exponent) for i in range(4)})
    kw = dict(permutations=19, seed=1, similarity=similarity, aggregate="mean")
    a = score_consistency(df, "pert", "target", **kw)
    b = score_consistency(scaled, "pert", "target", **kw)
    pd.testing.assert_frame_equal(a.labels, b.labels)


def test_zero_profile_is_named_with_its_rows():
    df = pd.DataFrame({"pert": ["a", "a", "b", "b", "c", "c"], "target": ["x", "x", "x", "x", "y", "y"],
                       "f0": [1.0, 2.0, 0.0, 0.0, 1.0, 3.0], "f1": [1.0, 0.5, 0.0, 0.0, 2.0, 1.0]})
    with pytest.raises(ValueError, match=r"the profile of 'b' \(data rows 3, 4 \(counting from 1 under the header\)\) has all-zero features"):
        score_consistency(df, "pert", "target", permutations=9)


def test_nan_modes():
    rng = np.random.default_rng(1)
    df = pd.DataFrame(rng.normal(size=(24, 3)), columns=["f0", "f1", "f2"])
    df.insert(0, "target", ["a", "b", "c"] * 8)
    df.insert(0, "pert", [f"c{i:02d}" for i in range(12)] * 2)
    df.loc[5, "f1"] = np.nan
    with pytest.raises(ValueError, match="feature columns with NaN or infinite values: 'f1'"):
        score_consistency(df, "pert", "target", permutations=9)
    rows = score_consistency(df, "pert", "target", permutations=9, nan="drop-rows")
    assert rows.settings["dropped_rows"] == [5] and rows.settings["features"] == 3
    feats = score_consistency(df, "pert", "target", permutations=9, nan="drop-features")
    assert feats.settings["dropped_features"] == ["f1"] and feats.settings["features"] == 2
    assert {"column": "f1", "reason": "missing values (nan='drop-features')"} in feats.settings["columns_left_out"]


def test_only_is_read_as_text_with_copairs_names(tmp_path):
    names = [f"{i:03d}" for i in range(12)]
    text = _rows(names + ["DMSO"], ["a", "b", "c"] * 4 + ["x"])
    groups = tmp_path / "g.csv"
    groups.write_text("pert,q_value,significant\n" + "".join(f"{n},0.01,{i < 9}\n" for i, n in enumerate(names)))
    status, out, _ = _cli(tmp_path, text, "--control", "DMSO", "--only", str(groups))
    assert status == 0 and json.loads(out)["settings"]["profiles"] == 9  # 011 matches 011, not 11
    copairs = tmp_path / "gc.csv"
    copairs.write_text("pert,mean_average_precision,corrected_p_value,below_corrected_p\n"
                       + "".join(f"{n},0.5,0.9,{i < 6}\n" for i, n in enumerate(names)))
    status, out, _ = _cli(tmp_path, text, "--control", "DMSO", "--only", str(copairs))
    assert status == 0 and json.loads(out)["settings"]["profiles"] == 6
    extra = tmp_path / "ge.csv"
    extra.write_text("pert,significant\n" + "".join(f"{n},True\n" for n in names[:8] + ["zzz", "yyy"]))
    status, out, _ = _cli(tmp_path, text, "--control", "DMSO", "--only", str(extra))
    doc = json.loads(out)
    assert status == 0 and doc["settings"]["profiles"] == 8
    assert "2 of the 10 perturbations kept by --only are not in the table (or only as controls): 'yyy', 'zzz'." \
        in doc["warnings"]
    none = tmp_path / "gn.csv"
    none.write_text("pert,significant\nzzz,True\n11,True\n")
    status, _, err = _cli(tmp_path, text, "--control", "DMSO", "--only", str(none))
    assert status == 2 and err.count("\n") == 1 and "'11', 'zzz'" in err and "did you mean" in err


@pytest.mark.parametrize("call, message", [
    (lambda df: score_consistency(df, "pert", "target", control=5), "control must be text"),
    (lambda df: score_consistency(df, "pert", "target", control=["DMSO", 0]), "control values must be text"),
    (lambda df: score_consistency(df, "pert", "target", features=5), "features must be None"),
    (lambda df: score_consistency(df.to_dict(), "pert", "target"), "table must be a pandas DataFrame"),
    (lambda df: score_consistency(df, "pert", "target", only="c1"), "only must be a groups table"),
    (lambda df: score_profiles(df, "pert", control=5), "control must be text"),
    (lambda df: score_profiles(df, "pert", control="DMSO", features=5), "features must be None"),
    (lambda df: score_profiles(df.to_numpy(), "pert", control="DMSO"), "table must be a pandas DataFrame"),
])
def test_wrong_types_are_type_errors(call, message):
    df = pd.DataFrame({"pert": ["DMSO"] * 3 + ["c1", "c1", "c2", "c2"], "target": ["x"] * 3 + ["a"] * 4,
                       "f0": np.arange(7.0) + 1, "f1": np.arange(7.0) ** 2 + 1})
    with pytest.raises(TypeError, match=message):
        call(df)


def test_input_names_never_collide_with_the_tables_own():
    rng = np.random.default_rng(2)
    df = pd.DataFrame(rng.normal(size=(16, 3)), columns=["f0", "f1", "f2"])
    df.insert(0, "mAP", [["a", "b"][i // 2 % 2] for i in range(16)])
    df.insert(0, "m", [f"c{i // 2}" for i in range(16)])
    res = score_consistency(df, "m", "mAP", permutations=9)
    assert res.settings["perturbation_column"] == "m_input" and res.settings["annotation_column"] == "mAP_input"
    for table in (res.labels, res.queries, res.skipped):
        assert table.columns.is_unique
    assert list(res.queries.columns[:3]) == ["m_input", "mAP_input", "m"]
    assert res.null_maps("a").size == 9
