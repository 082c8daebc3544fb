"""``apnull score`` options of a copairs user: repeated --perturbation, --positives-differ-by,
--similarity abs_cosine, --nan, --alpha and the active line, --copairs-names; bad input exits 2."""

from __future__ import annotations

import io
import json

import numpy as np
import pandas as pd
import pytest

from apnull.cli import main
from apnull.score import score_profiles


def run(argv):
    out, err = io.StringIO(), io.StringIO()
    status = main(argv, out, err)
    return status, out.getvalue(), err.getvalue()


@pytest.fixture(scope="module")
def wells_csv(tmp_path_factory):
    rng = np.random.default_rng(4)
    rows = []
    for plate in ("p1", "p2", "p3"):
        rows += [("DMSO", 0.0, plate, f"c{i}") for i in range(5)]
        rows += [("cmpA", 1.0, plate, "w1"), ("cmpA", 10.0, plate, f"w{plate}"), ("cmpB", 1.0, plate, "w3")]
    df = pd.DataFrame(rows, columns=["Metadata_compound", "Metadata_dose", "Metadata_plate", "Metadata_well"])
    X = pd.DataFrame(rng.normal(size=(len(df), 5)), columns=[f"f{i}" for i in range(5)])
    X.loc[df["Metadata_compound"] == "cmpA"] += 1.0
    table = pd.concat([df, X], axis=1)
    table.loc[2, "f4"] = np.nan
    path = tmp_path_factory.mktemp("act") / "wells.csv"
    table.to_csv(path, index=False)
    return str(path), table


BASE = ["--perturbation", "Metadata_compound", "--perturbation", "Metadata_dose", "--stratum", "Metadata_plate",
        "--permutations", "99", "--nan", "drop-rows"]


def test_json_matches_the_library(wells_csv):
    path, table = wells_csv
    status, out, err = run(["score", path, *BASE, "--positives-differ-by", "Metadata_well",
                            "--similarity", "abs_cosine", "--alpha", "0.2", "--json"])
    assert status == 0, err
    doc = json.loads(out)
    res = score_profiles(table, ["Metadata_compound", "Metadata_dose"], "DMSO", "Metadata_plate", permutations=99,
                         nan="drop-rows", positives_differ_by=["Metadata_well"], similarity="abs_cosine", alpha=0.2)
    groups = pd.DataFrame(doc["groups"])
    assert list(groups.columns) == list(res.groups.columns)
    np.testing.assert_allclose(groups["mAP"], res.groups["mAP"])
    np.testing.assert_allclose(groups["mAP_normalized"], res.groups["mAP_normalized"])
    assert doc["activity"] == res.activity and doc["activity"]["alpha"] == 0.2
    assert doc["settings"]["dropped_rows"] == [2] and doc["settings"]["perturbation"] == ["Metadata_compound",
                                                                                           "Metadata_dose"]
    assert doc["settings"]["positives_differ_by"] == ["Metadata_well"]
    assert any("--nan drop-rows" in w for w in doc["warnings"])
    # cmpA at dose 1 sits in well w1 on every plate: no positive is left, it is skipped
    assert any(s["Metadata_compound"] == "cmpA" and "no positives left" in s["reason"] for s in doc["skipped"])


def test_text_has_the_active_line(wells_csv):
    path, _ = wells_csv
    status, out, err = run(["score", path, *BASE])
    assert status == 0, err
    assert "active: " in out and " of 3 (" in out and "at q <= 0.05" in out
    assert "warning: 1 row with NaN" in out


def test_copairs_names_in_json_and_files(wells_csv, tmp_path):
    path, _ = wells_csv
    groups_csv, queries_csv = tmp_path / "g.csv", tmp_path / "q.csv"
    status, out, err = run(["score", path, *BASE, "--copairs-names", "--json", "--out-groups", str(groups_csv),
                            "--out-queries", str(queries_csv)])
    assert status == 0, err
    doc = json.loads(out)
    assert {"mean_average_precision", "corrected_p_value", "below_p", "below_corrected_p"} <= set(doc["groups"][0])
    assert "mAP" not in doc["groups"][0]
    assert {"average_precision", "n_pos_pairs", "n_total_pairs"} <= set(pd.read_csv(queries_csv).columns)
    assert "mean_average_precision" in pd.read_csv(groups_csv).columns


@pytest.mark.parametrize("extra, needle", [
    (["--alpha", "1.5"], "--alpha"),
    (["--alpha", "x"], "--alpha"),
    (["--nan", "drop"], "--nan"),
    (["--positives-differ-by", "Metadata_wel"], "Metadata_well"),
    (["--positives-differ-by", "Metadata_plate"], "stratum"),
    (["--perturbation", "Metadata_dose"], "twice"),
    (["--similarity", "abs"], "--similarity"),
])
def test_bad_input_one_line_exit_2(wells_csv, extra, needle):
    path, _ = wells_csv
    status, out, err = run(["score", path, *BASE, *extra])
    assert status == 2 and out == ""
    assert err.count("\n") == 1 and err.startswith("apnull: error:") and needle in err


def test_nan_error_by_default(wells_csv):
    path, _ = wells_csv
    status, _, err = run(["score", path, *[a for a in BASE if a not in ("--nan", "drop-rows")]])
    assert status == 2 and "--nan drop-rows" in err and "nan='" not in err and err.count("\n") == 1


def test_ranking_table_refuses_profile_options(tmp_path):
    path = tmp_path / "rank.csv"
    pd.DataFrame({"query": ["q"] * 3, "item": ["a", "b", "c"], "score": [0.3, 0.2, 0.1],
                  "relevant": [1, 0, 1]}).to_csv(path, index=False)
    status, out, err = run(["score", str(path), "--copairs-names", "--json"])
    assert status == 0 and "average_precision" in json.loads(out)["queries"][0]
    status, _, err = run(["score", str(path), "--positives-differ-by", "well"])
    assert status == 2 and "profile tables" in err and err.count("\n") == 1
