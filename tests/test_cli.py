"""The ``apnull`` command: every subcommand, JSON output against the library, and bad input."""

from __future__ import annotations

import io
import json
import math
import shutil
import subprocess
import sys

import numpy as np
import pandas as pd
import pytest
from scipy import stats

import apnull
from apnull import cli
from apnull import metrics as mt
from apnull import rendle as sm


def run(*argv):
    out, err = io.StringIO(), io.StringIO()
    status = cli.main(list(argv), out=out, err=err)
    return status, out.getvalue(), err.getvalue()


def run_json(*argv):
    status, out, err = run(*argv, "--json")
    assert status == 0, err
    assert err == ""
    return json.loads(out)


# ------------------------------------------------------------------------------------------------
# threshold
# ------------------------------------------------------------------------------------------------
def test_threshold_ap_exact_json():
    res = run_json("threshold", "--metric", "ap", "--m", "4", "--n", "30")
    assert res["method"] == "exact"
    assert res["metric"] == "ap" and res["m"] == 4 and res["n"] == 30 and res["q"] == 0.95
    assert res["threshold"] == apnull.threshold(4, 30, q=0.95)
    assert res["threshold"] == pytest.approx(0.42687908496732024, abs=1e-15)
    assert res["error_bound"] == 0.0
    assert res["exact_mean"] == pytest.approx(apnull.expected_ap(4, 30), abs=1e-15)
    assert res["exact_sd"] == pytest.approx(math.sqrt(apnull.ap_variance(4, 30)), abs=1e-15)
    assert res["null_mean"] == pytest.approx(res["exact_mean"], abs=1e-12)
    assert res["ratio_m_over_N"] == pytest.approx(4 / 34)


def test_threshold_default_metric_and_text_output():
    status, out, err = run("threshold", "--m", "4", "--n", "30")
    assert status == 0 and err == ""
    lines = out.strip().splitlines()
    assert lines[0].startswith("AP threshold (q = 0.95)")
    assert lines[0].split()[-1] == f"{apnull.threshold(4, 30):.6g}"
    assert any("exact (all placements)" in line for line in lines)


def test_threshold_pr_hypergeometric_reference():
    res = run_json("threshold", "--metric", "pr", "--m", "4", "--n", "32")
    assert res["threshold"] == stats.hypergeom(36, 4, 4).ppf(0.95) / 4 == 0.5
    assert res["method"] == "exact"
    status, out, _ = run("threshold", "--metric", "pr", "--m", "4", "--n", "32")
    assert status == 0 and out.startswith("Precision@R threshold (q = 0.95)")


def test_threshold_q_and_alpha():
    a = run_json("threshold", "--m", "4", "--n", "30", "--q", "0.9")
    b = run_json("threshold", "--m", "4", "--n", "30", "--alpha", "0.1")
    assert a["threshold"] == apnull.threshold(4, 30, q=0.9)
    assert b["q"] == pytest.approx(0.9)
    assert b["threshold"] == apnull.threshold(4, 30, q=b["q"])


def test_threshold_mc_and_grid():
    res = run_json("threshold", "--m", "4", "--n", "30", "--method", "mc", "--draws", "20000", "--seed", "5")
    assert res["method"] == "mc" and res["draws"] == 20000 and res["seed"] == 5
    assert res["error_bound"] is None
    assert res["threshold"] == apnull.threshold(4, 30, method="mc", draws=20000, seed=5)
    res = run_json("threshold", "--m", "40", "--n", "300")
    assert res["method"] == "grid"
    assert res["error_bound"] <= 1e-3
    assert res["threshold"] == apnull.threshold(40, 300)
    res = run_json("threshold", "--m", "10", "--n", "100", "--method", "grid", "--tol", "1e-4")
    assert res["method"] == "grid" and res["error_bound"] <= 1e-4
    assert res["threshold"] == apnull.threshold(10, 100, method="grid", tol=1e-4)


def test_integral_float_arguments_accepted():
    res = run_json("threshold", "--m", "4.0", "--n", "30")
    assert res["m"] == 4


# ------------------------------------------------------------------------------------------------
# pvalue
# ------------------------------------------------------------------------------------------------
def test_pvalue_json_and_text():
    res = run_json("pvalue", "--value", "0.5", "--m", "4", "--n", "30")
    assert res["p_value"] == apnull.p_value(0.5, 4, 30)
    assert res["method"] == "exact"
    assert res["p_value_bounds"] == [res["p_value"], res["p_value"]]
    status, out, err = run("pvalue", "--value", "0.5", "--m", "4", "--n", "30")
    assert status == 0 and err == ""
    assert out.splitlines()[0].startswith("p-value of AP = 0.5")
    assert out.splitlines()[0].split()[-1] == f"{res['p_value']:.6g}"


def test_pvalue_pr_grid_and_mc():
    res = run_json("pvalue", "--metric", "pr", "--value", "0.5", "--m", "4", "--n", "32")
    assert res["p_value"] == pytest.approx(stats.hypergeom(36, 4, 4).sf(1))
    res = run_json("pvalue", "--value", "0.25", "--m", "40", "--n", "300")
    assert res["method"] == "grid"
    lo, hi = res["p_value_bounds"]
    assert lo <= res["p_value"] <= hi
    res = run_json("pvalue", "--value", "0.4", "--m", "4", "--n", "30", "--method", "mc", "--draws", "5000",
                   "--seed", "2")
    draws = apnull.sample_null(4, 30, 5000, seed=2).ap
    assert res["p_value"] == pytest.approx((1 + np.sum(draws >= 0.4 - 1e-9)) / 5001)
    status, out, _ = run("pvalue", "--value", "0.25", "--m", "40", "--n", "300")
    assert status == 0 and "guaranteed range" in out


# ------------------------------------------------------------------------------------------------
# sample
# ------------------------------------------------------------------------------------------------
def test_sample_writes_csv(tmp_path):
    path = tmp_path / "null.csv"
    res = run_json("sample", "--m", "2", "--n", "7", "--draws", "300", "--sizes", "4", "--seed", "9",
                   "--out", str(path))
    assert res == {"rows": 1200, "sizes": 4, "draws": 300, "out": str(path)}
    table = pd.read_csv(path)
    assert list(table.columns) == ["m", "n", "ap", "pr"]
    expected = apnull.sample_grid(2, 7, sizes=4, draws=300, seed=9)
    np.testing.assert_array_equal(table[["m", "n"]].to_numpy(), expected[["m", "n"]].to_numpy())
    np.testing.assert_allclose(table["ap"], expected["ap"], rtol=1e-15)
    np.testing.assert_allclose(table["pr"], expected["pr"], rtol=1e-15)
    # text output
    path2 = tmp_path / "null2.csv.gz"
    status, out, err = run("sample", "--m", "2", "--n", "7", "--draws", "10", "--seed", "9", "--out", str(path2))
    assert status == 0 and err == "" and out.startswith("wrote 10 rows")
    assert len(pd.read_csv(path2)) == 10


# ------------------------------------------------------------------------------------------------
# metrics
# ------------------------------------------------------------------------------------------------
def test_metrics_json_matches_library():
    rel = [0, 1, 0, 1, 1, 0]
    res = run_json("metrics", "--relevant", "0,1,0,1,1,0")
    assert (res["length"], res["m"], res["n"], res["k"]) == (6, 3, 3, 6)
    assert res["ap"] == mt.average_precision(rel) == pytest.approx(8 / 15)
    assert res["r_precision"] == mt.r_precision(rel)
    assert res["precision_at_k"] == mt.precision_at_k(rel, 6)
    assert res["recall_at_k"] == mt.recall_at_k(rel, 6)
    assert res["f1_at_k"] == mt.f1_at_k(rel, 6)
    assert res["ap_at_k"] == mt.average_precision_at_k(rel, 6)
    assert res["ndcg_at_k"] == mt.ndcg_at_k(rel, 6)
    assert res["reciprocal_rank"] == mt.reciprocal_rank(rel)
    assert res["auc"] == mt.auc(rel)
    assert res["null_method"] == "exact"
    assert res["ap_p_value"] == pytest.approx(apnull.p_value(8 / 15, 3, 3))
    res4 = run_json("metrics", "--relevant", "0 1 0 1 1 0", "--k", "4")
    assert res4["k"] == 4
    assert res4["precision_at_k"] == mt.precision_at_k(rel, 4)
    assert res4["ndcg_at_k"] == mt.ndcg_at_k(rel, 4)
    assert res4["f1_at_k"] == pytest.approx(4 / 7)


def test_metrics_text_and_special_rankings():
    status, out, err = run("metrics", "--relevant", "true,false,1,0")
    assert status == 0 and err == ""
    assert any(line.startswith("ap ") for line in out.splitlines())
    # no relevant item: only precision, no error
    res = run_json("metrics", "--relevant", "0,0,0")
    assert res["m"] == 0 and res["precision_at_k"] == 0.0 and "ap" not in res
    # no negative: no AUC
    res = run_json("metrics", "--relevant", "1,1")
    assert res["ap"] == 1.0 and "auc" not in res


# ------------------------------------------------------------------------------------------------
# sampled
# ------------------------------------------------------------------------------------------------
def test_sampled_json_and_text():
    res = run_json("sampled", "--paper-example")
    assert res["items"] == 10000 and res["samples"] == 99 and res["k"] == 10 and res["replace"] is True
    table = sm.sampled_metrics_table(sm.PAPER_EXAMPLE, 10000, 99, k=10, replace=True)
    assert len(res["rows"]) == len(table)
    for row, ref in zip(res["rows"], table.itertuples(index=False)):
        assert row["algorithm"] == ref.algorithm and row["metric"] == ref.metric
        assert row["exact"] == pytest.approx(ref.exact)
        assert row["sampled_mean"] == pytest.approx(ref.sampled_mean)
    res = run_json("sampled", "--ranks", "X=1,5,10", "--items", "100", "--samples", "20", "--k", "5")
    assert {r["algorithm"] for r in res["rows"]} == {"X"}
    status, out, err = run("sampled", "--ranks", "1,5,10", "--items", "100")
    assert status == 0 and err == "" and "algorithm" in out


# ------------------------------------------------------------------------------------------------
# Bad input: status 2, one line on stderr, nothing on stdout
# ------------------------------------------------------------------------------------------------
BAD = {
    "m zero": ["threshold", "--m", "0", "--n", "5"],
    "n negative": ["threshold", "--m", "4", "--n", "-3"],
    "m fraction": ["threshold", "--m", "2.5", "--n", "3"],
    "m text": ["threshold", "--m", "abc", "--n", "3"],
    "metric foo": ["threshold", "--metric", "foo", "--m", "4", "--n", "30"],
    "q 1.5": ["threshold", "--q", "1.5", "--m", "4", "--n", "30"],
    "q and alpha": ["threshold", "--q", "0.9", "--alpha", "0.1", "--m", "4", "--n", "30"],
    "alpha 0": ["threshold", "--alpha", "0", "--m", "4", "--n", "30"],
    "method magic": ["threshold", "--method", "magic", "--m", "4", "--n", "30"],
    "draws 0": ["threshold", "--method", "mc", "--draws", "0", "--m", "4", "--n", "30"],
    "draws too many": ["threshold", "--method", "mc", "--draws", "20000000", "--m", "4", "--n", "30"],
    "seed negative": ["threshold", "--method", "mc", "--seed", "-1", "--m", "4", "--n", "30"],
    "too many items": ["threshold", "--m", "600000", "--n", "600000"],
    "exact too large": ["threshold", "--method", "exact", "--m", "40", "--n", "300"],
    "missing n": ["threshold", "--m", "4"],
    "missing all": ["threshold"],
    "no command": [],
    "unknown command": ["foo"],
    "unknown option": ["threshold", "--m", "4", "--n", "30", "--bogus"],
    "value 1.5": ["pvalue", "--value", "1.5", "--m", "4", "--n", "30"],
    "value abc": ["pvalue", "--value", "abc", "--m", "4", "--n", "30"],
    "missing value": ["pvalue", "--m", "4", "--n", "30"],
    "relevant 0,2": ["metrics", "--relevant", "0,2"],
    "relevant empty": ["metrics", "--relevant", ""],
    "k too large": ["metrics", "--relevant", "0,1", "--k", "3"],
    "k zero": ["metrics", "--relevant", "0,1", "--k", "0"],
    "sample draws 0": ["sample", "--m", "2", "--n", "3", "--draws", "0", "--out", "x.csv"],
    "sample not csv": ["sample", "--m", "2", "--n", "3", "--draws", "5", "--out", "x.txt"],
    "sample sizes 0": ["sample", "--m", "2", "--n", "3", "--draws", "5", "--sizes", "0", "--out", "x.csv"],
    "sampled rank 0": ["sampled", "--ranks", "0,1", "--items", "100"],
    "sampled no ranks": ["sampled"],
    "sampled rank > n": ["sampled", "--ranks", "101", "--items", "100"],
    "sampled --n is not the catalogue": ["sampled", "--ranks", "1", "--n", "100"],
}


@pytest.mark.parametrize("argv", list(BAD.values()), ids=list(BAD))
def test_bad_input_gives_one_line_and_status_2(argv, tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)  # a stray x.csv would land here
    status, out, err = run(*argv)
    assert status == 2
    assert out == ""
    assert err.endswith("\n") and err.count("\n") == 1, err
    assert err.startswith("apnull: error: ")
    assert "Traceback" not in err
    assert len(err) > len("apnull: error: ") + 10
    assert not (tmp_path / "x.csv").exists()


def test_error_messages_say_what_is_wrong():
    assert "--m must be at least 1, got 0" in run("threshold", "--m", "0", "--n", "5")[2]
    assert "--n must be at least 0, got -3" in run("threshold", "--m", "4", "--n", "-3")[2]
    assert "whole number" in run("threshold", "--m", "2.5", "--n", "3")[2]
    assert "invalid choice: 'foo'" in run("threshold", "--metric", "foo", "--m", "4", "--n", "30")[2]
    assert "q must lie in [0, 1]" in run("threshold", "--q", "1.5", "--m", "4", "--n", "30")[2]
    assert "--relevant takes 0/1 (or true/false) labels; label 2 is '2'" in run("metrics", "--relevant", "0,2")[2]
    assert "invalid choice" in run("foo")[2]
    assert "required" in run("threshold")[2]


def test_unwritable_out_path(tmp_path):
    path = tmp_path / "no_such_dir" / "null.csv"
    status, out, err = run("sample", "--m", "2", "--n", "3", "--draws", "10", "--seed", "1", "--out", str(path))
    assert status == 2 and out == ""
    assert err.startswith("apnull: error: argument --out: cannot write") and err.count("\n") == 1
    assert str(path) in err
    # the reason is given, not Python's None for a missing errno string
    assert not err.rstrip().endswith("None"), err
    # a directory where the file should go
    target = tmp_path / "adir.csv"
    target.mkdir()
    status, out, err = run("sample", "--m", "2", "--n", "3", "--draws", "10", "--seed", "1", "--out", str(target))
    assert status == 2 and out == "" and "cannot write" in err and "folder" in err
    assert not err.rstrip().endswith("None"), err



def test_sample_out_is_written_atomically(tmp_path, monkeypatch):
    """``sample --out`` over an existing file: a write failing halfway (a full disk) leaves the old file
    byte for byte, names it in one line, and leaves no temporary file beside it."""
    import pandas as pd

    target = tmp_path / "null.csv"
    target.write_text("m,n,ap,pr\nkeep,me,1,1\n")
    real = pd.DataFrame.to_csv

    def half_then_full_disk(self, path, *a, **k):
        real(self.iloc[:3], path, *a, **k)  # some rows reach the file, then the disk is full
        raise OSError(28, "No space left on device")

    monkeypatch.setattr(pd.DataFrame, "to_csv", half_then_full_disk)
    status, out, err = run("sample", "--m", "2", "--n", "3", "--draws", "10", "--seed", "1", "--out", str(target))
    assert status == 2 and out == "" and err.count("\n") == 1
    assert "No space left on device" in err and "nothing was changed there" in err
    assert target.read_text() == "m,n,ap,pr\nkeep,me,1,1\n"
    assert [p.name for p in tmp_path.iterdir()] == ["null.csv"]

# ------------------------------------------------------------------------------------------------
# The installed console script
# ------------------------------------------------------------------------------------------------
@pytest.mark.parametrize("form", ["script", pytest.param("apnull", marks=pytest.mark.slow),
                                  pytest.param("apnull.cli", marks=pytest.mark.slow)])
def test_console_script_subprocess(form):
    """One real process: the console script (when on PATH), ``python -m apnull`` and ``python -m
    apnull.cli`` run, print JSON and exit 0 (startup is import-bound; the two ``-m`` forms' modules are
    also run in this process by the quick test below)."""
    if form == "script":
        exe = shutil.which("apnull")
        if exe is None:
            pytest.skip("the apnull script is not on PATH (python -m apnull is tested instead)")
        cmd = [exe]
    else:
        cmd = [sys.executable, "-m", form]
    proc = subprocess.run(cmd + ["threshold", "--m", "4", "--n", "30", "--json"], capture_output=True,
                          text=True, timeout=60)
    assert proc.returncode == 0, proc.stderr
    res = json.loads(proc.stdout)
    assert res["method"] == "exact"
    assert res["threshold"] == apnull.threshold(4, 30)


@pytest.mark.parametrize("module", ["apnull", "apnull.cli"])
def test_python_m_runs_the_command(module, monkeypatch, capsys):
    """``python -m apnull`` and ``python -m apnull.cli``: their ``__main__`` modules, run as Python runs
    them (``runpy``, with the command's arguments), print the command's JSON and exit 0."""
    import runpy

    monkeypatch.setattr(sys, "argv", [module, "threshold", "--m", "4", "--n", "30", "--json"])
    with pytest.raises(SystemExit) as done:
        runpy.run_module(module, run_name="__main__", alter_sys=True)
    assert done.value.code in (0, None)
    res = json.loads(capsys.readouterr().out)
    assert res["method"] == "exact" and res["threshold"] == apnull.threshold(4, 30)


def test_metrics_and_ranking_page_report_the_same_null_percentile():
    """One definition, 100 * P(AP_null < ap), on both surfaces; checked against enumeration."""
    from fractions import Fraction

    from reference import enumerate_ap

    from apnull.significance import null_distribution, null_position

    res = run_json("metrics", "--relevant", "0,1,0,1,1,0")
    ref = enumerate_ap(3, 3)
    ap = Fraction(1, 3) * (Fraction(1, 2) + Fraction(2, 4) + Fraction(3, 5))
    below = sum(1 for v in ref.ap if v < ap)
    assert res["ap_null_percentile"] == pytest.approx(100 * below / len(ref.ap))
    assert res["ap_null_percentile"] == pytest.approx(30.0)
    page = null_position(res["ap"], null_distribution(3, 3))
    assert page.percentile == res["ap_null_percentile"]
    assert res["ap_null_percentile"] + 100 * res["ap_p_value"] == pytest.approx(100)


def test_sample_checks_out_before_drawing(tmp_path, monkeypatch):
    """An unwritable --out fails at once: no drawing happens."""
    from apnull import sampling

    called = []
    monkeypatch.setattr(sampling, "iter_sample_grid", lambda *a, **k: called.append(a) or iter(()))
    status, out, err = run("sample", "--m", "2", "--n", "3", "--draws", "10", "--out", str(tmp_path / "no" / "x.csv"))
    assert status == 2 and not called and "does not exist" in err
