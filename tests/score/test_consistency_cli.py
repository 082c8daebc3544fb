"""``apnull consistency``: exit codes, one stderr line on bad input, JSON shape, output files, --only."""

import io
import json

import numpy as np
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


def _near_the_line(path):
    """60 perturbations, labels A and B on 8 each (the others unlabelled negatives); A's signal puts its
    p-value near 0.05, so its BH decision needs rounds after the first 100 draws."""
    rng = np.random.default_rng(0)
    X = rng.normal(size=(60, 8))
    X[:8] += 0.35 * rng.normal(size=8)
    table = pd.DataFrame(X, columns=[f"f{i}" for i in range(8)])
    table.insert(0, "target", ["A"] * 8 + ["B"] * 8 + [None] * 44)
    table.insert(0, "pert", [f"p{i:02d}" for i in range(60)])
    table.to_csv(path, index=False)
    return ["consistency", str(path), "--perturbation", "pert", "--annotation", "target", "--json"]


def test_progress_in_every_round_with_the_draws_spent(tmp_path):
    status, out, err = run(_near_the_line(tmp_path / "near.csv"))
    doc = json.loads(out)
    assert status == 0 and "decision_open" not in doc["labels"][0]
    lines = err.splitlines()
    assert lines[0].startswith("apnull consistency: round 2: 1 label near the decision line, refined to 400 draws "
                               "each (")
    assert len(lines) >= 2 and all("draws so far; at most" in line for line in lines)
    assert max(r["permutations"] for r in doc["labels"]) >= 1600


def test_a_budget_stops_before_spending_it(tmp_path):
    status, out, err = run(_near_the_line(tmp_path / "near.csv") + ["--budget", "0.000001"])
    doc = json.loads(out)
    assert status == 0 and err == ""  # no refinement round started
    a = [r for r in doc["labels"] if r["target"] == "A"][0]
    # the first round's first step (10 draws) always runs; the budget stops the rest of it
    assert a["decision_open"] is True and a["permutations"] == 10
    assert any(w.startswith("the time budget stopped the adaptive permutations (drawing for 2 labels to 30 draws")
               and "(A" in w for w in doc["warnings"])
    assert doc["settings"]["budget"] == 1e-6


def test_a_long_labels_table_written_to_a_file_is_printed_by_its_head(screen, tmp_path, monkeypatch):
    from apnull.cli import tables

    monkeypatch.setattr(tables, "PRINTED_MOST", 1)
    monkeypatch.setattr(tables, "HEAD_ROWS", 1)
    labels = tmp_path / "labels.csv"
    status, out, _ = run(["consistency", screen] + BASE + ["--out-labels", str(labels)])
    assert status == 0 and len(pd.read_csv(labels)) == 2
    assert f"... and 1 more row: all 2 in {labels}" in out
