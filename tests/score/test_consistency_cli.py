"""``apnull consistency``: exit codes, one stderr line on bad input, JSON shape, output files, --only."""

import io
import json

import pandas as pd
import pytest

from apnull.cli import main
from apnull.score import digits_screen

BASE = ["--perturbation", "Metadata_perturbation", "--annotation", "Metadata_shape", "--label-sep", "|",
        "--control", "DMSO", "--permutations", "49"]


def run(argv):
    out, err = io.StringIO(), io.StringIO()
    status = main(argv, out=out, err=err)
    return status, out.getvalue(), err.getvalue()


@pytest.fixture(scope="module")
def screen(tmp_path_factory):
    path = tmp_path_factory.mktemp("c") / "screen.csv"
    digits_screen().to_csv(path, index=False)
    return str(path)


def test_text_json_and_files(screen, tmp_path):
    status, out, err = run(["consistency", screen] + BASE)
    assert status == 0 and "consistent: 1 of 2 labels" in out and "loop" in out
    labels, queries = tmp_path / "labels.csv", tmp_path / "q.parquet"
    status, out, _ = run(["consistency", screen] + BASE + ["--json", "--out-labels", str(labels),
                                                           "--out-queries", str(queries)])
    doc = json.loads(out)
    assert status == 0 and set(doc) == {"settings", "summary", "labels", "queries", "skipped", "warnings"}
    assert doc["summary"] == {"consistent": 1, "labels": 2, "fraction": 0.5}
    assert list(pd.read_csv(labels).columns) == ["Metadata_shape", "n_perturbations", "mAP", "p_value", "q_value",
                                                 "significant", "permutations", "p_value_bound"]
    assert list(pd.read_parquet(queries).columns) == ["Metadata_perturbation", "Metadata_shape", "m", "n", "ap",
                                                      "p_value"]
    assert doc["skipped"] == [{"Metadata_shape": "stem", "reason": "carried by one perturbation: nothing to compare it with"}]


def test_only_keeps_the_active(screen, tmp_path):
    groups = tmp_path / "groups.csv"
    pd.DataFrame({"Metadata_perturbation": ["digit_3", "digit_8", "weak_6", "null_01"],
                  "q_value": [0.01, 0.01, 0.02, 0.9]}).to_csv(groups, index=False)
    status, out, _ = run(["consistency", screen] + BASE + ["--only", str(groups), "--json"])
    assert status == 0 and json.loads(out)["settings"]["profiles"] == 3


@pytest.mark.parametrize("extra, message", [
    (["--annotation", "Metadata_shap"], "did you mean 'Metadata_shape'"),
    (["--label-sep", ";"], "splits no annotation cell"),
    (["--annotation", "Metadata_plate", "--label-sep", "_"], "different annotations"),
    (["--permutations", "0"], "--permutations must be at least 1"),
    (["--permutations", "fast"], "--permutations must be 'auto' or a whole number"),
    (["--aggregate", "max"], "invalid choice"),
])
def test_bad_input_one_line_exit_2(screen, extra, message):
    status, out, err = run(["consistency", screen] + BASE + extra)
    assert status == 2 and out == "" and err.count("\n") == 1 and message in err, err


def test_only_without_the_perturbation_column(screen, tmp_path):
    groups = tmp_path / "g.csv"
    pd.DataFrame({"compound": ["digit_3"]}).to_csv(groups, index=False)
    status, _, err = run(["consistency", screen] + BASE + ["--only", str(groups)])
    assert status == 2 and "has no column 'Metadata_perturbation'" in err and err.count("\n") == 1


def test_all_labels_skipped(tmp_path):
    path = tmp_path / "s.csv"
    table = digits_screen()
    table["Metadata_target"] = table["Metadata_perturbation"]  # every label on one perturbation
    table.to_csv(path, index=False)
    argv = ["consistency", str(path), "--perturbation", "Metadata_perturbation", "--annotation", "Metadata_target",
            "--control", "DMSO"]
    status, _, err = run(argv)
    assert status == 2 and "nothing to score" in err and err.count("\n") == 1


def test_output_never_replaces_the_input(screen):
    status, _, err = run(["consistency", screen] + BASE + ["--out-labels", screen])
    assert status == 2 and "input file" in err


def test_auto_is_the_default(screen):
    base = [a for a in BASE if a not in ("--permutations", "49")]
    status, out, _ = run(["consistency", screen] + base + ["--json"])
    doc = json.loads(out)
    assert status == 0 and doc["settings"]["permutations"] == "auto"
    assert all(row["permutations"] >= 20 for row in doc["labels"])
    status, text, _ = run(["consistency", screen] + base + ["--permutations", "auto"])
    assert status == 0 and "p-value: adaptive" in text
