"""The user's only copy of a screen: outputs never replace the input, writes are atomic, labels stay
text, no column vanishes quietly, any scale and any column name work, integers stay exact, the dask
deadline holds."""

import io
import json
import os
import socket
import threading
import time

import numpy as np
import pandas as pd
import pytest

from apnull.cli import main
from apnull.score import atomic_write, digits_screen, read_table, score_profiles

KW = dict(perturbation="Metadata_perturbation", stratum="Metadata_plate", permutations=19, seed=3)
BASE = ["--perturbation", "Metadata_perturbation", "--stratum", "Metadata_plate", "--permutations", "19"]


def run(argv):
    out, err = io.StringIO(), io.StringIO()
    status = main(argv, out, err)
    return status, out.getvalue(), err.getvalue()


@pytest.fixture
def victim(tmp_path):
    path = tmp_path / "victim.csv"
    digits_screen().to_csv(path, index=False)
    return path


def _same_file_cases(victim, tmp_path):
    sym = tmp_path / "link.csv"
    sym.symlink_to(victim)
    hard = tmp_path / "hard.csv"
    os.link(victim, hard)
    dotted = str(tmp_path / "sub" / ".." / "victim.csv")
    (tmp_path / "sub").mkdir()
    return [str(victim), str(sym), str(hard), dotted]


def test_no_output_is_the_input(victim, tmp_path):
    before = victim.read_bytes()
    for target in _same_file_cases(victim, tmp_path):
        for opt in ("--out-queries", "--out-groups"):
            status, out, err = run(["score", str(victim), *BASE, opt, target])
            assert status == 2 and out == "" and err.count("\n") == 1, (target, err)
            assert "same file as the input file" in err
    assert victim.read_bytes() == before


def test_outputs_differ_from_each_other(victim, tmp_path):
    same = str(tmp_path / "out.csv")
    status, _, err = run(["score", str(victim), *BASE, "--out-queries", same, "--out-groups", same])
    assert status == 2 and "--out-groups" in err and not os.path.exists(same)


def test_failed_write_keeps_the_old_file(tmp_path):
    target = tmp_path / "old.csv"
    target.write_text("a,b\n1,2\n")

    def half(tmp):
        with open(tmp, "w") as fh:
            fh.write("x,y\n1,")
        raise OSError(28, "No space left on device")

    with pytest.raises(ValueError, match="cannot write .*No space left on device.*nothing was changed"):
        atomic_write(str(target), half)
    assert target.read_text() == "a,b\n1,2\n"
    assert os.listdir(tmp_path) == ["old.csv"]  # the temporary file is gone


def test_cli_failed_write_one_line(victim, tmp_path, monkeypatch):
    target = tmp_path / "q.csv"
    target.write_text("keep me\n")
    monkeypatch.setattr(pd.DataFrame, "to_csv", lambda self, path, **k: (_ for _ in ()).throw(OSError(28, "No space left on device")))
    status, _, err = run(["score", str(victim), *BASE, "--out-queries", str(target)])
    last = err.strip().splitlines()[-1]  # a progress line may come first on a loaded machine
    assert status == 2 and last.startswith("apnull: error: ") and "No space left" in last
    assert target.read_text() == "keep me\n"


def _label_screen(labels, controls="0", n_ctl=6, seed=0):
    rng = np.random.default_rng(seed)
    rows = [controls] * n_ctl + [lab for lab in labels for _ in range(2)]
    X = rng.normal(size=(len(rows), 4))
    return pd.concat([pd.DataFrame({"pert": rows}), pd.DataFrame(X, columns=list("abcd"))], axis=1)


def test_labels_are_text_as_written(tmp_path):
    path = tmp_path / "labels.csv"
    ids = ["1", "1.0", "01", "12345678901234567", "12345678901234568"]
    table = _label_screen(ids)
    table.loc[len(table)] = [np.nan, 0.1, 0.2, 0.3, 0.4]  # one blank label
    table.to_csv(path, index=False)
    status, out, err = run(["score", str(path), "--perturbation", "pert", "--control", "0", "--json",
                            "--permutations", "9"])
    assert status == 0, err
    names = sorted(g["pert"] for g in json.loads(out)["groups"])
    assert names == sorted(ids)


def test_text_cell_in_numeric_column_is_named(tmp_path):
    table = digits_screen()
    table["px_10"] = table["px_10"].astype(object)
    table.loc[7, "px_10"] = "null"
    table.loc[9, "px_10"] = "abc"
    with pytest.raises(ValueError, match=r"'px_10' is not numeric in 2 cell\(s\): 'null' in data row 8, 'abc' in data row 10"):
        score_profiles(table, **KW)
    path = tmp_path / "t.csv"
    table.to_csv(path, index=False)
    status, _, err = run(["score", str(path), *BASE])
    assert status == 2 and "'null' in data row 8" in err


def test_blank_cells_go_to_the_nan_choice(tmp_path):
    table = digits_screen()
    table["px_10"] = table["px_10"].astype(object)
    table.loc[9, "px_10"] = "abc"
    with pytest.raises(ValueError, match=r"'abc' in data row 10 .*blank cells are missing values, left out by nan='drop-rows'"):
        score_profiles(table, **KW, nan="drop-rows")
    table.loc[9, "px_10"] = None  # blanked: numbers held as text with a blank are a numeric column
    with pytest.raises(ValueError, match="NaN or infinite"):
        score_profiles(table, **KW)
    assert score_profiles(table, **KW, nan="drop-rows").settings["dropped_rows"] == [9]
    as_text = digits_screen()
    as_text["px_10"] = as_text["px_10"].astype(str).astype(object)
    pd.testing.assert_frame_equal(score_profiles(as_text, **KW).groups, score_profiles(digits_screen(), **KW).groups)


def test_columns_left_out_are_said(victim):
    table = digits_screen()
    table["note"] = "free text"
    res = score_profiles(table, **KW)
    assert {"column": "note", "reason": "text"} in res.settings["columns_left_out"]
    assert res.queries["note"].eq("free text").all()  # metadata carried
    status, out, _ = run(["score", str(victim), *BASE])
    assert "columns left out (" in out and "Metadata_kind (metadata" in out


@pytest.mark.parametrize("similarity", ["cosine", "correlation", "euclidean"])
@pytest.mark.parametrize("scale", [2.0**-1000, 2.0**1000, 1e300, 1e-300])
def test_any_scale(similarity, scale):
    table = digits_screen()
    feats = [c for c in table.columns if c.startswith("px_")]
    base = score_profiles(table, similarity=similarity, **KW).groups
    big = table.copy()
    big[feats] = big[feats].astype(float) * scale
    got = score_profiles(big, similarity=similarity, **KW).groups
    if similarity != "euclidean" or scale in (2.0**-1000, 2.0**1000):  # exact: power of two, or scale-free
        pd.testing.assert_frame_equal(got, base)
    else:  # distances round differently at 1e300 as at 3.7, but they never overflow or vanish
        assert np.all(np.isfinite(got["mAP"])) and got["mAP"].std() > 0


def test_constant_rows_caught_exactly():
    table = _label_screen(["a", "b"], controls="DMSO")
    for value in (0.1, 2.5, 1e-300):
        bad = table.copy()
        bad.loc[3, list("abcd")] = value
        with pytest.raises(ValueError, match=r"data row 4 \(counting from 1 under the header\) has the same value in every feature"):
            score_profiles(bad, perturbation="pert", similarity="correlation", permutations=9)
    bad = table.copy()
    bad.loc[3, list("abcd")] = 1e-310  # tiny but not zero: cosine is defined
    score_profiles(bad, perturbation="pert", permutations=9)


@pytest.mark.parametrize("name", ["null", "mAP", "ap", "m", "row", "p_value", "n_replicates"])
def test_any_perturbation_column_name(name, tmp_path):
    table = digits_screen().rename(columns={"Metadata_perturbation": name})
    res = score_profiles(table, perturbation=name, stratum="Metadata_plate", permutations=9)
    col = res.settings["perturbation_column"]
    assert col == f"{name}_input"
    assert set(res.groups[col]) == set(table[name]) - {"DMSO"}
    assert {"n_replicates", "mAP", "p_value", "q_value", "null"} <= set(res.groups.columns[1:])
    assert len(set(res.groups.columns)) == len(res.groups.columns)
    path = tmp_path / "t.csv"
    table.to_csv(path, index=False)
    status, out, err = run(["score", str(path), "--perturbation", name, "--stratum", "Metadata_plate",
                            "--permutations", "9", "--json"])
    assert status == 0, err
    assert json.loads(out)["groups"][0][col]


@pytest.mark.parametrize("names", [["m", "null"], ["Metadata_perturbation", "reason"], ["m", "m_input"]])
def test_any_names_of_several_perturbation_columns(names):
    table = digits_screen().rename(columns={"Metadata_perturbation": names[0]})
    table[names[1]] = table["Metadata_shape"]
    res = score_profiles(table, perturbation=names, control="DMSO", stratum="Metadata_plate", permutations=9)
    cols = res.settings["perturbation_column"]
    assert len(cols) == 2 and not set(cols) & {"m", "null", "reason"} and len(set(cols) | set(names)) > 2
    for frame in (res.groups, res.queries, res.skipped):
        assert len(set(frame.columns)) == len(frame.columns)
    assert {"n_replicates", "mAP", "p_value", "q_value", "null"} <= set(res.groups.columns)
    assert set(res.groups[cols[0]]) == set(table[names[0]]) - {"DMSO"}
    pairs = set(zip(table[names[0]], table[names[1]]))
    assert set(zip(res.groups[cols[0]], res.groups[cols[1]])) <= pairs
    assert set(zip(res.queries[cols[0]], res.queries[cols[1]])) <= pairs


def test_seed_beyond_2_53_is_exact(victim):
    seed = 9007199254740993
    status, out, _ = run(["score", str(victim), *BASE, "--seed", str(seed), "--json"])
    doc = json.loads(out)
    lib = score_profiles(digits_screen(), perturbation="Metadata_perturbation", stratum="Metadata_plate",
                         permutations=19, seed=seed)
    assert doc["settings"]["seed"] == seed
    assert [g["p_value"] for g in doc["groups"]] == list(lib.groups["p_value"])


@pytest.mark.parametrize("text, value", [("9007199254740993", 9007199254740993), ("4.0", 4), ("1e3", 1000),
                                         (" 7 ", 7), ("4.5", None), ("nan", None), ("inf", None), ("x", None),
                                         ("1e999999", None)])
def test_integer_arguments_exact(text, value):
    from apnull.cli._common import exact_int

    assert exact_int(text) == value


def test_silent_scheduler_hits_the_deadline(victim, monkeypatch):
    """A scheduler that accepts and never answers: the command gives up at the connection deadline (here
    1 s instead of the default 10 s, so the test does not idle its worker) with one line."""
    from apnull.score.engine import connect

    monkeypatch.setattr(connect, "CONNECT_SECONDS", 1.0)
    srv = socket.socket()
    srv.bind(("127.0.0.1", 0))
    srv.listen(8)
    held = []

    def accept():
        while True:
            try:
                held.append(srv.accept()[0])  # accept, never answer
            except OSError:
                return

    threading.Thread(target=accept, daemon=True).start()
    start = time.monotonic()
    status, _, err = run(["score", str(victim), *BASE, "--scheduler", f"tcp://127.0.0.1:{srv.getsockname()[1]}"])
    took = time.monotonic() - start
    srv.close()
    assert status == 2 and "cannot reach the dask scheduler" in err and "within 1 s" in err and err.count("\n") == 1
    assert took < 6


def test_floor_warning_and_p_text():
    res = score_profiles(digits_screen(), perturbation="Metadata_perturbation", stratum="Metadata_plate",
                         permutations=9, seed=0)
    assert any("smallest p-value B = 9 permutations allow, 0.1" in w for w in res.warnings)
    from apnull.score import p_text

    assert p_text(0.001) == "0.001" and p_text(1e-5) == "1e-05" and p_text(0.0) != "0"


def test_special_files_are_written_in_place(tmp_path, monkeypatch):
    """A device or pipe target (/dev/stdout, /dev/full) is written into, never renamed over."""
    import apnull.score.results.write as atomic

    target = tmp_path / "device"
    target.write_text("")
    inode = target.stat().st_ino
    monkeypatch.setattr(atomic.os.path, "isfile", lambda p: False)
    atomic_write(str(target), lambda p: open(p, "w").write("a,b\n"))
    assert target.stat().st_ino == inode and target.read_text() == "a,b\n"

    def full(p):
        raise OSError(28, "No space left on device")

    with pytest.raises(ValueError, match="cannot write .*No space left"):
        atomic_write(str(target), full)
    assert target.stat().st_ino == inode


def test_ranking_queries_are_text(tmp_path):
    path = tmp_path / "r.csv"
    path.write_text("query,item,score,relevant\n1,a,3,1\n1,b,2,0\n1.0,a,3,0\n1.0,b,2,1\n01,a,1,1\n01,b,2,0\n")
    status, out, _ = run(["score", str(path), "--json"])
    assert status == 0 and [q["query"] for q in json.loads(out)["queries"]] == ["1", "1.0", "01"]
