"""Reading a user's table without losing or inventing anything: the library's side of the findings on
key and bookkeeping columns, row numbers, output names, ``only=`` tables, relabelled controls, encodings,
repeated header names and separators. Each test failed before the change it names."""

from __future__ import annotations

import io

import numpy as np
import pandas as pd
import pytest

from apnull.score import digits_screen, read_table, score_compare, score_consistency, score_profiles
from apnull.score.table.names import count_text
from apnull.score.example import digits_pipeline_pair
from apnull.score.table.columns import bookkeeping, select_features
from apnull.score.table.missing import rows_text

KEY = ["Metadata_plate", "Metadata_well"]
CMP = dict(key=KEY, perturbation="Metadata_perturbation", control="DMSO", stratum="Metadata_plate", permutations=19,
           seed=1)
SCORE = dict(perturbation="Metadata_perturbation", control="DMSO", stratum="Metadata_plate", permutations=19, seed=1)
BOOKKEEPING = ["ImageNumber", "ObjectNumber", "TableNumber", "Number_Object_Number", "Location_Center_X",
               "Cells_Location_Center_Y", "Nuclei_Number_Object_Number", "Cells_Parent_Nuclei"]


@pytest.fixture(scope="module")
def pair():
    return digits_pipeline_pair(seed=1)


def cellprofiler(table: pd.DataFrame) -> pd.DataFrame:
    """``table`` with its pixel features named as CellProfiler measurements and CellProfiler's
    bookkeeping beside them (numbers that index or place objects), plus a numeric column outside the
    compartments."""
    rng = np.random.default_rng(0)
    out = table.rename(columns={c: f"Cells_{c}" for c in table.columns if c.startswith("px_")})
    n = len(out)
    extra = {name: rng.integers(1, 500, n) for name in BOOKKEEPING}
    extra["ImageNumber"] = np.arange(1, n + 1)
    extra["plate_column"] = rng.integers(1, 24, n)
    return pd.concat([out, pd.DataFrame(extra, index=out.index)], axis=1)


# -- finding 7: CellProfiler's bookkeeping is never a feature by default, and the features are listed --

def test_bookkeeping_names():
    assert all(bookkeeping(c) for c in BOOKKEEPING)
    assert not any(bookkeeping(c) for c in ["Cells_AreaShape_Area", "Image_Count_Cells", "Nuclei_Intensity_Mean",
                                            "Cells_Children_Cytoplasm_Count", "imagenumber", "x"])


def test_bookkeeping_and_columns_outside_the_compartments_are_left_out_and_named():
    table = cellprofiler(digits_screen())
    chosen, left = select_features(table, None, {"Metadata_perturbation", "Metadata_plate"})
    assert chosen == [c for c in table.columns if c.startswith("Cells_px_")]
    reasons = dict(left)
    assert all("CellProfiler bookkeeping" in reasons[c] for c in BOOKKEEPING)
    assert "not a CellProfiler measurement" in reasons["plate_column"]
    # without a compartment column the table is not CellProfiler's: a plain numeric column stays a feature
    plain = digits_screen().assign(plate_column=1.0)
    assert "plate_column" in select_features(plain, None, {"Metadata_perturbation"})[0]
    # a regex or a list chooses exactly what it names
    assert select_features(table, "^ImageNumber$", set())[0] == ["ImageNumber"]


def test_score_and_consistency_use_the_measurements_only_and_list_them():
    screen = digits_screen()
    table = cellprofiler(screen)
    res = score_profiles(table, **SCORE)
    ref = score_profiles(screen, **SCORE)
    pd.testing.assert_frame_equal(res.groups, ref.groups)
    assert res.settings["features"] == 64
    assert res.settings["feature_columns"] == [c for c in table.columns if c.startswith("Cells_px_")]
    assert ref.settings["feature_columns"] == [c for c in screen.columns if c.startswith("px_")]
    left = {d["column"] for d in res.settings["columns_left_out"]}
    assert set(BOOKKEEPING) | {"plate_column"} <= left
    kw = dict(perturbation="Metadata_perturbation", annotation="Metadata_shape", label_sep="|", control="DMSO",
              permutations=19)
    cons = score_consistency(table, **kw)
    pd.testing.assert_frame_equal(cons.labels, score_consistency(screen, **kw).labels)
    assert cons.settings["feature_columns"] == res.settings["feature_columns"]


def test_compare_leaves_bookkeeping_out_on_both_sides(pair):
    a, b = pair
    res = score_compare(cellprofiler(a), b.assign(ObjectNumber=np.arange(len(b))), **CMP)
    ref = score_compare(a, b, **CMP)
    assert res.summary == ref.summary
    assert res.settings["a"]["feature_columns"] == [f"Cells_px_{i:02d}" for i in range(64)]
    assert "ObjectNumber" not in res.settings["b"]["feature_columns"]


# -- finding 6: a key column is never a feature, whatever the regex or list -----------------------------

def test_a_numeric_key_is_never_a_feature(pair):
    a, b = (t.assign(ImageNumber=np.arange(len(t))) for t in pair)
    kw = dict(CMP, key=["ImageNumber"])
    ref = score_compare(*pair, **dict(kw, key=KEY), features_a="^px_", features_b="^half_")
    by_regex = score_compare(a, b, **kw, features_a="^px_|Image", features_b="^half_|Image")
    assert by_regex.summary == ref.summary
    for side in "ab":
        s = by_regex.settings[side]
        assert "ImageNumber" not in s["feature_columns"]
        assert {"column": "ImageNumber", "reason": "key column: it pairs the wells of A and B, never a feature"} \
            in s["columns_left_out"]
        assert {"column": "Metadata_well", "reason": "not matched by the features regex "
                f"{'^px_|Image' if side == 'a' else '^half_|Image'!r}"} in s["columns_left_out"]
    by_list = score_compare(a, b, **kw, features_a=[f"px_{i:02d}" for i in range(64)] + ["ImageNumber"],
                            features_b=[f"half_{i:02d}" for i in range(16)] + ["ImageNumber"])
    assert by_list.summary == ref.summary
    with pytest.raises(ValueError, match="table B: its features are only key columns"):
        score_compare(a, b, **kw, features_b=["ImageNumber"])


# -- finding 8: rows are the file's own data rows, counted from 1 ---------------------------------------

def test_rows_are_named_as_the_file_counts_them():
    assert rows_text([29]) == "data row 30 (counting from 1 under the header)"
    assert rows_text(range(7)) == "data rows 1, 2, 3, 4, 5 and 2 more (counting from 1 under the header)"
    table = digits_screen()
    table.loc[29, "px_10"] = np.nan
    with pytest.raises(ValueError, match=r"first: data row 30 \(counting from 1 under the header\)"):
        score_profiles(table, **SCORE)


def test_compare_names_the_file_row_after_wells_were_dropped(pair):
    a, b = pair
    b = b.drop(index=[3]).reset_index(drop=True)   # a well of plate 1 missing from B
    b.loc[29, "half_03"] = np.nan                    # B's data row 30
    with pytest.raises(ValueError, match=r"table B: .*'half_03' \(1 row\) \(first: data row 30 \("):
        score_compare(a, b, **CMP, unmatched="drop")
    res = score_compare(a, b, **CMP, unmatched="drop", nan="drop-rows")
    assert any("in A: data row 31 (" in w and "in B: data row 30 (" in w for w in res.warnings)
    assert not any("empty perturbation" in w for w in res.warnings)
    # the rows scored keep their own numbers; the scores are those of the tables without those wells
    assert 3 not in set(res.a.queries["row"]) and 30 not in set(res.a.queries["row"])
    assert 29 not in set(res.b.queries["row"]) and res.b.queries["row"].max() == len(b) - 1
    ref = score_compare(a.drop(index=[3, 30]), b.drop(index=[29]), **CMP)
    pd.testing.assert_frame_equal(res.groups, ref.groups)


# -- finding 9: output names never collide with input names ---------------------------------------------

def test_left_out_keys_named_table_and_reason_keep_their_own_columns(pair):
    a, b = (t.rename(columns={"Metadata_plate": "table", "Metadata_well": "reason"}) for t in pair)
    res = score_compare(a, b.drop(index=[5]), **dict(CMP, key=["table", "reason"], stratum="table"),
                        unmatched="drop")
    assert list(res.left_out.columns) == ["table", "table_input", "reason_input", "reason"]
    assert res.left_out.iloc[0].tolist() == ["A", "plate_1", "A06", "wells missing from one table"]


# -- finding 10: an only= table without a significance column -------------------------------------------

def test_only_without_a_significance_column_is_refused():
    groups = pd.DataFrame({"Metadata_perturbation": ["digit_3", "digit_8"], "q_value_a": [0.01, 0.5]})
    with pytest.raises(ValueError, match="no significance column: looked for 'significant', 'below_corrected_p' "
                                         "and 'q_value', 'corrected_p_value'"):
        score_consistency(digits_screen(), "Metadata_perturbation", "Metadata_shape", label_sep="|",
                          control="DMSO", only=groups, permutations=9)


# -- finding 11: controls relabelled in one table --------------------------------------------------------

def test_controls_spelt_differently_are_named_with_both_spellings(pair):
    a, b = pair
    b = b.replace({"Metadata_perturbation": {"DMSO": "dmso"}})
    with pytest.raises(ValueError, match=r"table A: its 80 control rows were all left out \(unmatched='drop'\) "
                                         r"because table B spells their perturbation differently \(80 well\(s\) "
                                         r"'DMSO' in A and 'dmso' in B\)"):
        score_compare(a, b, **CMP, unmatched="drop")


# -- findings 12, 13 and the separator: reading the file -------------------------------------------------

def test_a_cp1252_file_is_named_as_not_utf8_with_the_byte_offset(tmp_path):
    data = "pert,f1\n".encode() + b"a,1\n" * 29 + "caf\u00e9,2\n".encode("cp1252")
    path = tmp_path / "excel.csv"
    path.write_bytes(data)
    offset = data.index(b"\xe9")
    message = (rf"'excel.csv' is not UTF-8: byte 0xe9 at byte offset {offset} \(counting from 0; line 31\) "
               r"is not valid UTF-8; the file looks like Windows-1252.*CSV UTF-8")
    with pytest.raises(ValueError, match=message):
        read_table(path, labels=["pert"])
    with pytest.raises(ValueError, match=message.replace("excel", "upload")):
        read_table(io.BytesIO(data), name="upload.csv")


def test_a_repeated_header_name_is_refused_and_named(tmp_path):
    path = tmp_path / "dup.csv"
    path.write_text("pert,f1,f2,f1\na,1,2,3\n")
    with pytest.raises(ValueError, match=r"the header of 'dup.csv' repeats a name: 'f1' \(columns 2, 4\)"):
        read_table(path)
    import pyarrow as pa
    import pyarrow.parquet as pq
    pq.write_table(pa.table([pa.array(["a"]), pa.array([1]), pa.array([2])], names=["pert", "f1", "f1"]),
                   tmp_path / "dup.parquet")
    with pytest.raises(ValueError, match=r"repeats a name: 'f1' \(columns 2, 3\)"):
        read_table(tmp_path / "dup.parquet", labels=["pert"])


def test_a_semicolon_separated_csv_gets_a_hint(tmp_path):
    path = tmp_path / "semi.csv"
    path.write_text("pert;f1;f2\na;1,5;2\n")
    with pytest.raises(ValueError, match="seem separated by semicolons; save it as a comma-separated CSV"):
        read_table(path)
    path.write_text("pert\na\n")  # a one-column table without another separator is read as it is
    assert read_table(path).shape == (1, 1)


def test_counts_have_their_singular():
    assert [count_text(1, "perturbations"), count_text(2, "queries"), count_text(1, "queries")] == \
        ["1 perturbation", "2 queries", "1 query"]


def test_rows_set_aside_keep_the_labels_text():
    from apnull.score.table.labels import text_codes
    from apnull.score.table.wells import set_aside

    table = pd.DataFrame({"p": np.array([1, 22, 1, 303], dtype=np.int64), "f": [1.0, 2.0, 3.0, 4.0]})
    out = set_aside(table, np.array([0, 2, 3]), ["p"])
    codes, texts = text_codes(out["p"])
    assert [texts[c] if c >= 0 else None for c in codes] == ["1", None, "1", "303"]
    assert table["p"].tolist() == [1, 22, 1, 303] and set_aside(table, np.arange(4), ["p"]) is table
