"""Every ``--json`` of every subcommand is strict JSON (RFC 8259): no NaN, Infinity or -Infinity, which
Python's json module writes by default and every strict parser refuses. Checked over the edge cases where
a value is missing: one unit, too few units for an interval, all-NaN columns, a query with nothing to rank,
p-value bounds that do not apply."""

from __future__ import annotations

import io
import json
import math

import numpy as np
import pandas as pd
import pytest

from apnull.cli import main
from apnull.cli._common import json_line
from apnull.score import digits_screen
from apnull.score.example import digits_pipeline_pair


def _refuse(name):
    raise ValueError(f"not strict JSON: {name}")


def strict(text: str):
    """``text`` parsed as strict JSON: one line, NaN / Infinity refused."""
    assert text.endswith("\n") and text.count("\n") == 1
    return json.loads(text, parse_constant=_refuse)


def run_json(*argv):
    out, err = io.StringIO(), io.StringIO()
    status = main([*argv, "--json"], out=out, err=err)
    assert status == 0, err.getvalue()
    return strict(out.getvalue())


def test_json_line_writes_null_for_every_value_that_is_not_finite():
    doc = {"a": math.nan, "b": [math.inf, -math.inf, 1.5], "c": np.float64("nan"), "d": np.array([1.0, np.nan]),
           "e": np.int64(3), "f": (np.bool_(True), None, "NaN")}
    assert strict(json_line(doc)) == {"a": None, "b": [None, None, 1.5], "c": None, "d": [1.0, None], "e": 3,
                                      "f": [True, None, "NaN"]}
    with pytest.raises(TypeError, match="cannot write object"):
        json_line({"x": object()})


@pytest.mark.parametrize("argv", [
    ["threshold", "--m", "3", "--n", "20"],
    ["pvalue", "--value", "1", "--m", "1", "--n", "0"],
    ["metrics", "--relevant", "1"],
    ["sampled", "--paper-example"],
])
def test_the_law_commands(argv):
    assert isinstance(run_json(*argv), dict)


@pytest.fixture(scope="module")
def folder(tmp_path_factory):
    return tmp_path_factory.mktemp("strict")


SCORE = ["--perturbation", "Metadata_perturbation", "--control", "DMSO", "--permutations", "19"]


def test_score_with_one_perturbation_and_a_ranking_without_positives(folder):
    d = digits_screen()
    one = d[d["Metadata_perturbation"].isin(["DMSO", "digit_3"])]
    path = folder / "one.csv"
    one.to_csv(path, index=False)
    doc = run_json("score", str(path), *SCORE, "--stratum", "Metadata_plate")
    assert len(doc["groups"]) == 1
    rankings = folder / "rankings.csv"
    pd.DataFrame({"query": ["a", "a", "a", "b", "b"], "item": [1, 2, 3, 1, 2], "score": [3.0, 2.0, 1.0, 2.0, 1.0],
                  "relevant": [1, 0, 1, 0, 0]}).to_csv(rankings, index=False)
    doc = run_json("score", str(rankings))
    assert [q["query"] for q in doc["queries"]] == ["a"] and doc["skipped"]


def test_compare_on_one_unit_and_on_too_few_units_for_an_interval(folder):
    a, b = digits_pipeline_pair(seed=1)
    pa, pb = folder / "a.csv", folder / "b.csv"
    a.to_csv(pa, index=False)
    b.to_csv(pb, index=False)
    keys = ["--key", "Metadata_plate", "--key", "Metadata_well"]
    one = folder / "one_stratum"
    for t, p in ((a, pa), (b, pb)):
        t.assign(Metadata_batch="all").to_csv(p.with_suffix(".one.csv"), index=False)
    doc = run_json("compare", str(pa.with_suffix(".one.csv")), str(pb.with_suffix(".one.csv")), *keys, *SCORE,
                   "--stratum", "Metadata_batch")
    assert doc["summary"]["units"] == 1 and doc["summary"]["p_value"] is None and doc["summary"]["ci_low"] is None
    few = [t[t["Metadata_plate"].isin(["plate_1", "plate_2", "plate_3"])] for t in (a, b)]
    for t, p in zip(few, (pa, pb)):
        t.to_csv(p.with_suffix(".few.csv"), index=False)
    doc = run_json("compare", str(pa.with_suffix(".few.csv")), str(pb.with_suffix(".few.csv")), *keys, *SCORE,
                   "--stratum", "Metadata_plate")
    assert doc["summary"]["units"] == 3 and doc["summary"]["ci_low"] is None
    assert 0 < doc["summary"]["p_value"] <= 1
    del one


def test_consistency_with_an_all_nan_feature_dropped(folder):
    d = digits_screen()
    d["px_nan"] = np.nan
    path = folder / "nan.csv"
    d.to_csv(path, index=False)
    doc = run_json("consistency", str(path), "--perturbation", "Metadata_perturbation", "--annotation",
                   "Metadata_shape", "--label-sep", "|", "--control", "DMSO", "--permutations", "19",
                   "--nan", "drop-features")
    assert doc["settings"]["dropped_features"] == ["px_nan"] and doc["labels"]
