"""``apnull compare``: equal to ``apnull score`` on each side, order- and thread-free, hostile inputs refused."""

import io
import json
import os

import numpy as np
import pytest

from apnull.cli import main
from apnull.score.example import digits_pipeline_pair

COMMON = ["--perturbation", "Metadata_perturbation", "--control", "DMSO", "--stratum", "Metadata_plate",
          "--permutations", "199", "--seed", "2"]
KEYS = ["--key", "Metadata_plate", "--key", "Metadata_well"]


def run(argv):
    out, err = io.StringIO(), io.StringIO()
    status = main(argv, out, err)
    return status, out.getvalue(), err.getvalue()


@pytest.fixture(scope="module")
def files(tmp_path_factory):
    folder = tmp_path_factory.mktemp("compare")
    a, b = digits_pipeline_pair(seed=2)
    paths = {"a": folder / "a.csv", "b": folder / "b.parquet", "b_shuffled": folder / "b_shuffled.csv",
             "folder": folder}
    a.to_csv(paths["a"], index=False)
    b.to_parquet(paths["b"], index=False)
    b.sample(frac=1, random_state=9).to_csv(paths["b_shuffled"], index=False)
    return {k: str(v) for k, v in paths.items()}


@pytest.fixture(scope="module")
def compared(files):
    status, out, err = run(["compare", files["a"], files["b"], *KEYS, *COMMON, "--json"])
    assert status == 0, err
    return json.loads(out)


def test_each_side_equals_apnull_score(files, compared):
    rows = {g["Metadata_perturbation"]: g for g in compared["groups"]}
    for side in "ab":
        status, out, err = run(["score", files[side], *COMMON, "--json"])
        assert status == 0, err
        own = {g["Metadata_perturbation"]: g for g in json.loads(out)["groups"]}
        assert set(own) == set(rows)
        for name, g in own.items():
            for col in ("mAP", "p_value", "q_value"):
                assert rows[name][f"{col}_{side}"] == g[col], (side, name, col)


def test_json_shape(compared):
    assert set(compared) == {"settings", "summary", "groups", "left_out", "warnings"}
    s = compared["summary"]
    assert s["units"] == 8 and s["flips"] == 256 and s["exact"] is True and s["mean_delta"] < 0
    assert compared["settings"]["key"] == ["Metadata_plate", "Metadata_well"]
    assert compared["left_out"] == [] and compared["settings"]["a"]["features"] == 64


def test_row_order_threads_and_text(files, compared):
    base = run(["compare", files["a"], files["b"], *KEYS, *COMMON])
    for other in (run(["compare", files["a"], files["b_shuffled"], *KEYS, *COMMON, "--threads", "1"]),
                  run(["compare", files["a"], files["b"], *KEYS, *COMMON, "--threads", "2"])):
        assert other[0] == 0 and other[1].replace("b_shuffled.csv", "b.parquet") == base[1]
    assert "A retrieves better than B: mean delta (B - A) = " in base[1]
    assert "retrieved at q <= 0.05: A " in base[1] and "(all 256 sign flips of 8 units)" in base[1]


@pytest.mark.slow
def test_dask_workers_change_nothing(files, compared):
    status, out, err = run(["compare", files["a"], files["b"], *KEYS, *COMMON, "--json", "--workers", "2"])
    assert status == 0, err
    doc = json.loads(out)
    assert doc["groups"] == compared["groups"] and doc["summary"] == compared["summary"]


def test_output_files(files, compared, tmp_path):
    out = tmp_path / "groups.csv"
    status, _, err = run(["compare", files["a"], files["b"], *KEYS, *COMMON, "--out-groups", str(out)])
    assert status == 0, err
    import pandas as pd

    written = pd.read_csv(out)
    assert written["Metadata_perturbation"].tolist() == [g["Metadata_perturbation"] for g in compared["groups"]]


def _hostile(files, tmp_path, name, change):
    """A copy of B changed by ``change`` (a DataFrame function), written as CSV."""
    import pandas as pd

    b = pd.read_parquet(files["b"])
    path = tmp_path / f"{name}.csv"
    change(b).to_csv(path, index=False)
    return str(path)


def _drop_rows(b):
    return b.drop(index=[3])


def _repeat_row(b):
    import pandas as pd

    return pd.concat([b, b.iloc[[7]]])


def _relabel(b):
    b.loc[30, "Metadata_perturbation"] = "something_else"
    return b


def _hole(b):
    b.loc[40, "half_02"] = np.nan
    return b


def _rename_key(b):
    return b.rename(columns={"Metadata_well": "well"})


@pytest.mark.parametrize("name, change, message", [
    ("missing", _drop_rows, "wells missing from one table: ('plate_1', 'A04')"),
    ("repeated", _repeat_row, "keys repeated within a table: ('plate_1', 'A08')"),
    ("relabelled", _relabel, "labels differ between the tables (first: 'Metadata_perturbation'"),
    ("hole", _hole, "table B: feature columns with NaN or infinite values: 'half_02'"),
    ("renamed", _rename_key, "table B: key column 'Metadata_well' is not in the table"),
])
def test_hostile_inputs_are_one_line_and_exit_2(files, tmp_path, name, change, message):
    b = _hostile(files, tmp_path, name, change)
    out = tmp_path / "groups.csv"
    status, stdout, err = run(["compare", files["a"], b, *KEYS, *COMMON, "--out-groups", str(out)])
    assert status == 2 and stdout == ""
    assert err.startswith("apnull: error: ") and err.count("\n") == 1 and message in err, err
    assert not out.exists()


def test_hostile_inputs_can_be_left_out(files, tmp_path):
    b = _hostile(files, tmp_path, "missing", _drop_rows)
    left = tmp_path / "left.csv"
    status, out, err = run(["compare", files["a"], b, *KEYS, *COMMON, "--unmatched", "drop", "--json",
                            "--out-left-out", str(left)])
    assert status == 0, err
    doc = json.loads(out)
    assert doc["left_out"] == [{"table": "A", "Metadata_plate": "plate_1", "Metadata_well": "A04",
                                "reason": "wells missing from one table"}]
    assert left.exists()
    hole = _hostile(files, tmp_path, "hole", _hole)
    status, out, err = run(["compare", files["a"], hole, *KEYS, *COMMON, "--nan", "drop-rows", "--json"])
    assert status == 0, err
    assert [r["table"] for r in json.loads(out)["left_out"]] == ["A", "B"]


def test_an_output_never_replaces_an_input(files):
    before = os.path.getmtime(files["b_shuffled"])
    for target in (files["a"], files["b_shuffled"]):
        status, out, err = run(["compare", files["a"], files["b_shuffled"], *KEYS, *COMMON, "--out-groups", target])
        assert status == 2 and out == "" and "is the same file as the input file" in err and err.count("\n") == 1
    assert os.path.getmtime(files["b_shuffled"]) == before


def test_usage_errors(files):
    status, _, err = run(["compare", files["a"], files["b"], *COMMON])
    assert status == 2 and "--key" in err
    status, _, err = run(["compare", files["a"], files["folder"] + "/nothing.csv", *KEYS, *COMMON])
    assert status == 2 and "does not exist" in err
    status, _, err = run(["compare", files["a"], files["b"], *KEYS, *COMMON, "--unmatched", "ignore"])
    assert status == 2 and "invalid choice" in err


def test_a_crossed_screen_gets_a_p_value_and_says_which_test(tmp_path):
    """Every compound on several plates (one unit): the plate-clustered t test, named in the summary."""
    from apnull.score.example import digits_crossed_screen

    w = digits_crossed_screen(4, compounds=30, replicates=3, plates=12, controls=4)
    b = w.copy()
    cols = [c for c in w.columns if c.startswith("px_")]
    b[cols] = b[cols].to_numpy() + np.random.default_rng(4).normal(scale=3.0, size=(len(w), len(cols)))
    w.to_csv(tmp_path / "a.csv", index=False)
    b.to_csv(tmp_path / "b.csv", index=False)
    status, out, err = run(["compare", str(tmp_path / "a.csv"), str(tmp_path / "b.csv"), *KEYS, *COMMON])
    assert status == 0, err
    assert "plate-clustered t test, 12 plates, 11 degrees of freedom" in out and "interval" in out
    assert "no paired test: on a crossed screen Benjamini-Hochberg couples every plate" in out
