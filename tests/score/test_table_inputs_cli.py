"""The command line's side of reading a user's table: one line on stderr and exit 2 for a refused
file, said in the command's own options; the features used listed; rows as the file counts them;
output names that never collide. Each test failed before the change it names."""

from __future__ import annotations

import io
import json

import numpy as np
import pandas as pd
import pytest

from apnull.cli import main
from apnull.score import digits_screen
from apnull.score.example import digits_pipeline_pair

from test_table_inputs import BOOKKEEPING, cellprofiler

SCORE = ["--perturbation", "Metadata_perturbation", "--control", "DMSO", "--stratum", "Metadata_plate",
         "--permutations", "19"]
KEYS = ["--key", "Metadata_plate", "--key", "Metadata_well"]
CONSISTENCY = ["--perturbation", "Metadata_perturbation", "--annotation", "Metadata_shape", "--label-sep", "|",
               "--control", "DMSO", "--permutations", "19"]


def run(*argv):
    out, err = io.StringIO(), io.StringIO()
    status = main([str(a) for a in argv], out=out, err=err)
    return status, out.getvalue(), err.getvalue()


def refused(*argv) -> str:
    status, out, err = run(*argv)
    assert status == 2 and out == "" and err.count("\n") == 1 and err.startswith("apnull: error: "), err
    return err


@pytest.fixture(scope="module")
def files(tmp_path_factory):
    folder = tmp_path_factory.mktemp("inputs")
    a, b = digits_pipeline_pair(seed=1)
    paths = {"a": folder / "a.csv", "b": folder / "b.csv", "screen": folder / "screen.csv",
             "cp": folder / "cp.csv", "folder": folder}
    a.to_csv(paths["a"], index=False)
    b.to_csv(paths["b"], index=False)
    digits_screen().to_csv(paths["screen"], index=False)
    cellprofiler(digits_screen()).to_csv(paths["cp"], index=False)
    return paths


def test_bookkeeping_left_out_named_and_the_features_listed(files):
    status, out, err = run("score", files["cp"], *SCORE)
    assert status == 0, err
    assert "64 features: Cells_px_00, Cells_px_01" in out and "and 52 more (see --json)" in out
    assert "ImageNumber (CellProfiler bookkeeping" in out and "plate_column (not a CellProfiler measurement" in out
    status, out, _ = run("score", files["cp"], *SCORE, "--json")
    doc = json.loads(out)
    assert doc["settings"]["feature_columns"] == [f"Cells_px_{i:02d}" for i in range(64)]
    assert set(BOOKKEEPING) <= {d["column"] for d in doc["settings"]["columns_left_out"]}
    status, out, _ = run("consistency", files["cp"], *CONSISTENCY, "--json")
    assert status == 0 and json.loads(out)["settings"]["feature_columns"] == doc["settings"]["feature_columns"]


def test_compare_key_never_a_feature_and_features_errors_name_the_table(files):
    a, b = (pd.read_csv(files[s]).assign(ImageNumber=lambda t: np.arange(len(t))) for s in "ab")
    pa, pb = files["folder"] / "ka.csv", files["folder"] / "kb.csv"
    a.to_csv(pa, index=False)
    b.to_csv(pb, index=False)
    base = ["compare", pa, pb, "--key", "ImageNumber", *SCORE]
    status, out, err = run(*base, "--features-a", "^px_|Image", "--features-b", "^half_|Image", "--json")
    assert status == 0, err
    doc = json.loads(out)
    status, out, _ = run("compare", files["a"], files["b"], *KEYS, *SCORE, "--features-a", "^px_", "--features-b",
                         "^half_", "--json")
    assert doc["summary"] == json.loads(out)["summary"]
    assert "ImageNumber" not in doc["settings"]["a"]["feature_columns"]
    err = refused(*base, "--features-b", "Metadata_well")
    assert "table B: feature column 'Metadata_well' is not numeric" in err and "--features-b" in err
    assert "features=" not in err and "nan='" not in err


def test_rows_and_messages_in_the_commands_words(files):
    b = pd.read_csv(files["b"]).drop(index=[3]).reset_index(drop=True)
    b.loc[29, "half_03"] = np.nan
    path = files["folder"] / "b_nan.csv"
    b.to_csv(path, index=False)
    err = refused("compare", files["a"], path, *KEYS, *SCORE, "--unmatched", "drop")
    assert "first: data row 30 (counting from 1 under the header)" in err
    assert "--nan drop-features or --nan drop-rows" in err and "nan='" not in err and "on the command line" not in err
    assert "--features-b" in err


def test_compare_left_out_header_never_repeats_a_name(files):
    names = {"Metadata_plate": "table", "Metadata_well": "reason"}
    a, b = (pd.read_csv(files[s]).rename(columns=names) for s in "ab")
    pa, pb = files["folder"] / "ta.csv", files["folder"] / "tb.csv"
    a.to_csv(pa, index=False)
    b.drop(index=[5]).to_csv(pb, index=False)
    out_left = files["folder"] / "left.csv"
    status, out, err = run("compare", pa, pb, "--key", "table", "--key", "reason", *SCORE[:4], "--stratum", "table",
                           *SCORE[6:], "--unmatched", "drop", "--out-left-out", out_left, "--json")
    assert status == 0 and "Warning" not in err, err
    assert json.loads(out)["left_out"] == [{"table": "A", "table_input": "plate_1", "reason_input": "A06",
                                            "reason": "wells missing from one table"}]
    assert list(pd.read_csv(out_left).columns) == ["table", "table_input", "reason_input", "reason"]


def test_consistency_only_without_a_significance_column_is_refused(files):
    groups = files["folder"] / "compare_groups.csv"
    pd.DataFrame({"Metadata_perturbation": ["digit_3", "digit_8"], "mAP_a": [0.9, 0.8], "q_value_a": [0.01, 0.5],
                  "retrieved": ["both", "A only"]}).to_csv(groups, index=False)
    err = refused("consistency", files["screen"], *CONSISTENCY, "--only", groups)
    assert "the --only table has no significance column: looked for 'significant'" in err and "'q_value'" in err


def test_controls_relabelled_in_b_are_named(files):
    b = pd.read_csv(files["b"]).replace({"Metadata_perturbation": {"DMSO": "dmso"}})
    path = files["folder"] / "b_dmso.csv"
    b.to_csv(path, index=False)
    err = refused("compare", files["a"], path, *KEYS, *SCORE, "--unmatched", "drop")
    assert "control rows were all left out (--unmatched drop)" in err and "'DMSO' in A and 'dmso' in B" in err


def test_encoding_repeated_names_and_separators(files):
    folder = files["folder"]
    (folder / "excel.csv").write_bytes(b"Metadata_perturbation,f1\n" + "caf\u00e9,1\n".encode("cp1252"))
    err = refused("score", folder / "excel.csv", *SCORE)
    assert "is not UTF-8: byte 0xe9 at byte offset 28 (counting from 0; line 2)" in err and "CSV UTF-8" in err
    (folder / "dup.csv").write_text("Metadata_perturbation,f1,f1\na,1,2\n")
    err = refused("score", folder / "dup.csv", *SCORE)
    assert "the header of 'dup.csv' repeats a name: 'f1' (columns 2, 3)" in err
    (folder / "semi.csv").write_text("Metadata_perturbation;f1\na;1,5\n")
    assert "separated by semicolons" in refused("score", folder / "semi.csv", *SCORE)


def test_compare_offers_the_similarities_of_score(files):
    status, out, err = run("compare", files["a"], files["b"], *KEYS, *SCORE, "--similarity", "manhattan", "--json")
    assert status == 0, err
    assert json.loads(out)["settings"]["similarity"] == "manhattan"


def test_one_of_a_kind_is_singular(files):
    one = digits_screen()
    one = one[one["Metadata_perturbation"].isin(["DMSO", "digit_3"])]
    path = files["folder"] / "one.csv"
    one.to_csv(path, index=False)
    status, out, _ = run("score", path, *SCORE)
    assert status == 0 and "\n1 perturbation (" in out and "1 perturbations" not in out
