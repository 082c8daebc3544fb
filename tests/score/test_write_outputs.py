"""Writing a run's outputs: all replaced together or none (a full disk, an interrupt), the format the
name says (Parquet for .parquet/.pq/.parq), and options a run would ignore refused or named."""

import io
import json
import os

import numpy as np
import pandas as pd
import pytest

from apnull.cli import main
from apnull.score import digits_screen, read_table, score_consistency, score_profiles, write_table, write_tables
from apnull.score.results import write as W

TABLE = pd.DataFrame({"name": ["01", "1", "1.0"], "value": [0.5, 1.5, np.nan]})


def run(argv):
    out, err = io.StringIO(), io.StringIO()
    status = main(argv, out=out, err=err)
    return status, out.getvalue(), err.getvalue()


def _full_disk_after(monkeypatch, allowed: int):
    """Make every table write after the first ``allowed`` fail as a full disk would, half written."""
    calls = {"n": 0}
    real = W.table_writer

    def writer(df, path):
        write = real(df, path)

        def maybe(tmp):
            calls["n"] += 1
            if calls["n"] > allowed:
                with open(tmp, "w") as fh:
                    fh.write("half a ta")
                raise OSError(28, "No space left on device")
            write(tmp)
        return maybe
    monkeypatch.setattr(W, "table_writer", writer)


def test_the_second_failure_leaves_the_first_old_file(tmp_path, monkeypatch):
    a, b = tmp_path / "a.csv", tmp_path / "b.csv"
    a.write_text("old a\n")
    b.write_text("old b\n")
    _full_disk_after(monkeypatch, 1)
    with pytest.raises(ValueError, match=r"cannot write .*b\.csv: No space left on device; no output file was changed"):
        write_tables([(str(a), TABLE), (str(b), TABLE)])
    assert a.read_text() == "old a\n" and b.read_text() == "old b\n"
    assert sorted(os.listdir(tmp_path)) == ["a.csv", "b.csv"]  # no temporary file left


def test_an_interrupt_leaves_every_old_file(tmp_path):
    a, b = tmp_path / "a.csv", tmp_path / "b.parquet"
    a.write_text("old a\n")

    def interrupted(tmp):
        raise KeyboardInterrupt

    with pytest.raises(KeyboardInterrupt):
        write_tables([(str(a), TABLE), (str(b), interrupted)])
    assert a.read_text() == "old a\n" and sorted(os.listdir(tmp_path)) == ["a.csv"]


def test_all_written_replaces_all(tmp_path):
    a, b = tmp_path / "a.csv", tmp_path / "b.tsv"
    a.write_text("old a\n")
    os.chmod(a, 0o640)
    write_tables([(str(a), TABLE), (str(b), TABLE), (None, TABLE)])
    assert os.stat(a).st_mode & 0o777 == 0o640  # an existing file keeps its mode
    for path in (a, b):
        back = read_table(str(path), labels=["name"])
        assert back["name"].tolist() == ["01", "1", "1.0"] and back["value"].isna().tolist() == [False, False, True]


@pytest.mark.parametrize("name", ["x.parq", "x.PARQUET", "x.pq", "x.parquet", "x.csv", "x.csv.gz", "x.tsv", "x.tab.gz"])
def test_the_name_says_the_format_and_it_reads_back(tmp_path, name):
    path = tmp_path / name
    write_table(TABLE, str(path))
    head = path.read_bytes()[:4]
    lower = name.lower()
    assert (head == b"PAR1") == lower.endswith((".parq", ".parquet", ".pq"))
    assert (head[:2] == b"\x1f\x8b") == lower.endswith(".gz")
    back = read_table(str(path), labels=["name"])
    assert list(back.columns) == ["name", "value"] and back["name"].tolist() == ["01", "1", "1.0"]


def test_a_table_the_format_cannot_hold_is_one_sentence(tmp_path):
    bad = pd.DataFrame({"x": [1, "a", 2.5]})  # mixed types: Parquet refuses them
    with pytest.raises(ValueError, match=r"cannot write .*x\.parquet: .*nothing was changed there"):
        write_table(bad, str(tmp_path / "x.parquet"))
    assert os.listdir(tmp_path) == []


@pytest.fixture(scope="module")
def screen_csv(tmp_path_factory):
    path = tmp_path_factory.mktemp("w") / "screen.csv"
    digits_screen().to_csv(path, index=False)
    return str(path)


@pytest.mark.parametrize("command", ["score", "consistency"])
def test_cli_full_disk_changes_no_output(screen_csv, tmp_path, monkeypatch, command):
    first, second = tmp_path / "first.csv", tmp_path / "second.parq"
    first.write_text("old first\n")
    second.write_text("old second\n")
    if command == "score":
        argv = ["score", screen_csv, "--perturbation", "Metadata_perturbation", "--stratum", "Metadata_plate",
                "--permutations", "19", "--out-queries", str(first), "--out-groups", str(second)]
    else:
        argv = ["consistency", screen_csv, "--perturbation", "Metadata_perturbation", "--annotation",
                "Metadata_shape", "--label-sep", "|", "--control", "DMSO", "--permutations", "19",
                "--out-labels", str(first), "--out-queries", str(second)]
    _full_disk_after(monkeypatch, 1)
    status, out, err = run(argv)
    assert status == 2 and out == "" and err.count("\n") == 1 and "No space left on device" in err
    assert first.read_text() == "old first\n" and second.read_text() == "old second\n"
    assert sorted(os.listdir(tmp_path)) == ["first.csv", "second.parq"]
    monkeypatch.undo()
    status, _, _ = run(argv)
    assert status == 0 and second.read_bytes()[:4] == b"PAR1" and len(read_table(str(second))) > 0


def test_output_equal_to_the_only_file_is_refused(screen_csv, tmp_path):
    groups = tmp_path / "g.csv"
    pd.DataFrame({"Metadata_perturbation": ["digit_3"], "significant": [True]}).to_csv(groups, index=False)
    status, _, err = run(["consistency", screen_csv, "--perturbation", "Metadata_perturbation", "--annotation",
                          "Metadata_shape", "--only", str(groups), "--out-queries", str(groups)])
    assert status == 2 and "is the same file as the input file" in err and groups.read_text().startswith("Metadata")


def test_ignored_permutations_are_named(screen_csv):
    """--null independent draws no mAP permutations; where no query draws either, a fixed B is named."""
    status, out, _ = run(["score", screen_csv, "--perturbation", "Metadata_perturbation", "--null", "independent",
                          "--permutations", "9999", "--json"])
    doc = json.loads(out)
    assert status == 0 and any(w.startswith("--permutations 9999 was not used") for w in doc["warnings"])
    status, out, _ = run(["score", screen_csv, "--perturbation", "Metadata_perturbation", "--null", "independent",
                          "--stratum", "Metadata_plate", "--permutations", "99", "--json"])
    doc = json.loads(out)  # positives on other plates: their queries draw the conditional null
    assert status == 0 and not any("was not used" in w for w in doc["warnings"])
    assert max(q["permutations"] for q in doc["queries"]) == 99


@pytest.mark.parametrize("scorer", ["score", "consistency"])
def test_a_budget_with_fixed_permutations_is_refused(screen_csv, scorer):
    table = digits_screen()
    with pytest.raises(ValueError, match="budget applies to permutations='auto'"):
        if scorer == "score":
            score_profiles(table, "Metadata_perturbation", permutations=99, budget=5)
        else:
            score_consistency(table, "Metadata_perturbation", "Metadata_shape", label_sep="|", control="DMSO",
                              permutations=99, budget=5)
    status, _, err = run([scorer, screen_csv, "--perturbation", "Metadata_perturbation", "--permutations", "99",
                          "--budget", "5"] + (["--annotation", "Metadata_shape"] if scorer == "consistency" else []))
    assert status == 2 and "budget applies to --permutations auto" in err and "--permutations 99 has" in err
