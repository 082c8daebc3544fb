"""``apnull score``: exit codes, one stderr line on bad input, JSON shape, output files."""

import argparse
import importlib
import importlib.util
import io
import json
from pathlib import Path

import pandas as pd
import pytest

import apnull
from apnull.score import digits_screen


def _score_cmd():
    try:
        return importlib.import_module("apnull.cli.score_cmd")
    except ImportError:  # the cli package is not wired in yet: load the module from its file
        path = Path(apnull.__file__).parent / "cli" / "score_cmd.py"
        spec = importlib.util.spec_from_file_location("apnull_cli_score_cmd", path)
        mod = importlib.util.module_from_spec(spec)
        spec.loader.exec_module(mod)
        return mod


class _Usage(Exception):
    pass


class _Parser(argparse.ArgumentParser):
    def error(self, message):
        raise _Usage(message)


def cli(argv):
    """What the main wrapper does: parse, run, one 'apnull: error:' line and status 2 on bad input."""
    parser = _Parser(prog="apnull")
    sub = parser.add_subparsers(dest="command", parser_class=_Parser)
    _score_cmd().add_parser(sub)
    out, err = io.StringIO(), io.StringIO()
    try:
        args = parser.parse_args(argv)
        status = args.run(args, out, err)
    except (_Usage, ValueError) as exc:
        err.write(f"apnull: error: {' '.join(str(exc).split())}\n")
        status = 2
    return status, out.getvalue(), err.getvalue()


@pytest.fixture(scope="module")
def screen_csv(tmp_path_factory):
    path = tmp_path_factory.mktemp("cli") / "screen.csv"
    digits_screen().to_csv(path, index=False)
    return str(path)


BASE = ["--perturbation", "Metadata_perturbation", "--stratum", "Metadata_plate", "--permutations", "99"]


def test_table_output_and_files(screen_csv, tmp_path):
    q, g = tmp_path / "q.csv", tmp_path / "g.parquet"
    status, out, err = cli(["score", screen_csv, *BASE, "--control", "DMSO",
                            "--out-queries", str(q), "--out-groups", str(g)])
    assert status == 0 and "error" not in err  # a progress line may appear on a loaded machine
    assert "digit_3" in out and "p_value" in out
    assert len(pd.read_csv(q)) == 44 and len(pd.read_parquet(g)) == 11


def test_json_document(screen_csv):
    status, out, _ = cli(["score", screen_csv, *BASE, "--json", "--null", "copairs", "--features", "^px_"])
    doc = json.loads(out)
    assert status == 0 and set(doc) >= {"settings", "groups", "queries"}
    assert doc["settings"]["null"] == "copairs" and doc["settings"]["features"] == 64
    assert set(doc["groups"][0]) == {"Metadata_perturbation", "n_replicates", "mAP", "mAP_normalized", "p_value",
                                     "q_value", "significant", "null", "permutations", "p_value_bound"}
    assert len(doc["queries"]) == 44 and "precision_at_r" in doc["queries"][0]


def test_permutations_auto(tmp_path):
    # three null perturbations: digit_3 refined to 1,600 draws in 0.2 s (the default screen draws 1,000,000
    # for another perturbation: 4.7 s)
    path = tmp_path / "screen.csv"
    digits_screen(n_null=3).to_csv(path, index=False)
    status, out, _ = cli(["score", str(path), *BASE, "--permutations", "auto", "--json"])
    doc = json.loads(out)
    assert status == 0 and doc["settings"]["permutations"] == "auto"
    top = {g["Metadata_perturbation"]: g for g in doc["groups"]}["digit_3"]
    assert top["permutations"] > 999 and top["p_value"] < 1e-3
    assert {q["null"] for q in doc["queries"]} == {"conditional permutation"}


def test_ranking_form(tmp_path):
    path = tmp_path / "rank.csv"
    pd.DataFrame({"query": ["a"] * 4 + ["b"] * 3, "item": range(7), "score": [4, 3, 2, 1, 3, 2, 1],
                  "relevant": [1, 0, 1, 0, 0, 0, 1]}).to_csv(path, index=False)
    out_q = tmp_path / "rq.csv"
    status, out, _ = cli(["score", str(path), "--out-queries", str(out_q), "--json"])
    doc = json.loads(out)
    assert status == 0 and doc["settings"]["form"] == "rankings" and len(doc["queries"]) == 2
    assert list(pd.read_csv(out_q)["query"]) == ["a", "b"]


@pytest.mark.parametrize("extra, msg", [
    (["--permutations", "0"], "--permutations must be at least 1"),
    (["--permutations", "automatic"], "--permutations must be 'auto', 'all' or a whole number from 1 to 1,000,000"),
    (["--permutations", "2.5"], "--permutations must be 'auto', 'all' or a whole number"),
    (["--seed", "x"], "--seed must be a whole number"),
    (["--workers", "2", "--scheduler", "tcp://h:1"], "not allowed with argument"),
    (["--similarity", "minkowski"], "invalid choice"),
    (["--features", "(("], "not a valid regex"),
    (["--out-queries", "/nonexistent-dir/q.csv"], "folder '/nonexistent-dir' does not exist"),
    (["--control", "DMS0"], "did you mean 'DMSO'"),
    (["--stratum", "Metadata_plat"], "did you mean 'Metadata_plate'"),
])
def test_bad_input_one_line_exit_2(screen_csv, extra, msg):
    status, out, err = cli(["score", screen_csv, *BASE, *extra])
    assert status == 2 and out == ""
    assert err.count("\n") == 1 and err.startswith("apnull: error: ") and msg in err


def test_bad_files(tmp_path, screen_csv):
    empty = tmp_path / "e.csv"
    empty.write_text("")
    for argv, msg in ((["score", str(empty), *BASE], "empty"),
                      (["score", str(tmp_path / "none.csv")], "does not exist"),
                      (["score", screen_csv], "give --perturbation COL")):
        status, _, err = cli(argv)
        assert status == 2 and msg in err and err.count("\n") == 1


def test_out_path_checked_before_computing(screen_csv, tmp_path, monkeypatch):
    import apnull.score as score

    called = []
    monkeypatch.setattr(score, "score_profiles", lambda *a, **k: called.append(1))
    status, _, err = cli(["score", screen_csv, *BASE, "--out-groups", str(tmp_path)])
    assert status == 2 and "is a folder" in err and not called


def test_a_long_table_written_to_a_file_is_printed_by_its_head(screen_csv, tmp_path, monkeypatch):
    """With --out-groups the file holds the whole table; past PRINTED_MOST rows the terminal gets its first
    HEAD_ROWS rows and a line naming the rest and the file (a JUMP screen's 116,000 rows were all printed)."""
    from apnull.cli import tables

    monkeypatch.setattr(tables, "PRINTED_MOST", 5)
    monkeypatch.setattr(tables, "HEAD_ROWS", 3)
    g = tmp_path / "g.csv"
    status, out, _ = cli(["score", screen_csv, *BASE, "--control", "DMSO", "--out-groups", str(g)])
    groups = pd.read_csv(g)
    assert status == 0 and len(groups) == 11
    shown = [name for name in groups["Metadata_perturbation"] if f" {name} " in f" {out} ".replace("\n", " ")]
    assert shown == list(groups["Metadata_perturbation"][:3])  # the file's first rows, in its order
    assert f"... and 8 more rows: all 11 in {g}" in out
    status, out, _ = cli(["score", screen_csv, *BASE, "--control", "DMSO"])  # no file: the whole table
    assert status == 0 and "more rows" not in out
    assert all(f" {name} " in f" {out} ".replace("\n", " ") for name in groups["Metadata_perturbation"])
    monkeypatch.setattr(tables, "PRINTED_MOST", 11)  # at the bound: printed whole
    status, out, _ = cli(["score", screen_csv, *BASE, "--control", "DMSO", "--out-groups", str(tmp_path / "h.csv")])
    assert status == 0 and "more rows" not in out
