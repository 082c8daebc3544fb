"""``apnull score`` for a copairs user: --negatives others (with and without --control), --hierarchical-by
(the groups table gets ``hierarchical_bh``'s columns, under copairs's names with --copairs-names),
--similarity of the new kinds, ap_normalized in the query table; bad combinations exit 2."""

from __future__ import annotations

import io
import json

import numpy as np
import pandas as pd
import pytest

from apnull.cli import main
from apnull.score import hierarchical_bh, score_profiles


def run(argv):
    out, err = io.StringIO(), io.StringIO()
    status = main(argv, out, err)
    return status, out.getvalue(), err.getvalue()


@pytest.fixture(scope="module")
def doses_csv(tmp_path_factory):
    """3 plates, 6 controls each, 4 compounds x 3 doses, one replicate a plate; cmpA active at dose 10."""
    rng = np.random.default_rng(8)
    rows = []
    for plate in ("p1", "p2", "p3"):
        rows += [("DMSO", 0.0, plate)] * 6
        rows += [(f"cmp{c}", d, plate) for c in "ABCD" for d in (1.0, 3.0, 10.0)]
    df = pd.DataFrame(rows, columns=["Metadata_compound", "Metadata_dose", "Metadata_plate"])
    X = pd.DataFrame(rng.normal(size=(len(df), 6)), columns=[f"f{i}" for i in range(6)])
    hot = ((df["Metadata_compound"] == "cmpA") & (df["Metadata_dose"] == 10.0)).to_numpy()
    X.loc[hot] += 3.0 * rng.normal(size=6)
    table = pd.concat([df, X], axis=1)
    path = tmp_path_factory.mktemp("cp") / "doses.csv"
    table.to_csv(path, index=False)
    return str(path), table


BASE = ["--perturbation", "Metadata_compound", "--perturbation", "Metadata_dose", "--stratum", "Metadata_plate",
        "--permutations", "199", "--json"]


def test_hierarchical_by_adds_the_two_stages(doses_csv):
    path, table = doses_csv
    status, out, err = run(["score", path, *BASE, "--hierarchical-by", "Metadata_compound"])
    assert status == 0, err
    doc = json.loads(out)
    groups = pd.DataFrame(doc["groups"])
    res = score_profiles(table, ["Metadata_compound", "Metadata_dose"], "DMSO", "Metadata_plate", permutations=199)
    want = hierarchical_bh(res.groups, "Metadata_compound")
    for col in ("stage1_p_value", "stage1_q_value", "stage1_significant", "stage2_q_value", "q_value",
                "significant", "q_value_input", "significant_input"):
        assert groups[col].tolist() == pytest.approx(want[col].tolist())
    assert doc["activity"]["active"] == int(want["significant"].sum())
    status, out, _ = run(["score", path, *BASE, "--hierarchical-by", "Metadata_compound", "--copairs-names"])
    cols = list(pd.DataFrame(json.loads(out)["groups"]).columns)
    assert {"stage1_p_value", "stage1_corrected_p_value", "stage1_significant", "corrected_p_value",
            "below_corrected_p", "below_p"} <= set(cols)
    assert "stage1_q_value" not in cols and "q_value" not in cols


@pytest.mark.parametrize("extra, message", [
    (["--hierarchical-by", "Metadata_plate"], "--hierarchical-by 'Metadata_plate' is not a --perturbation column"),
    (["--hierarchical-by", "Metadata_compound", "--hierarchical-by", "Metadata_dose"], "names every --perturbation"),
])
def test_hierarchical_by_must_name_families(doses_csv, extra, message):
    status, _, err = run(["score", doses_csv[0], *BASE, *extra])
    assert status == 2 and err.startswith("apnull: error:") and message in err


def test_negatives_others_without_and_with_controls(doses_csv, tmp_path):
    path, table = doses_csv
    no_ctl = table[table["Metadata_compound"] != "DMSO"]
    p2 = tmp_path / "no_controls.csv"
    no_ctl.to_csv(p2, index=False)
    status, out, err = run(["score", str(p2), *BASE, "--negatives", "others", "--similarity", "manhattan"])
    assert status == 0, err
    doc = json.loads(out)
    assert doc["settings"]["negatives"] == "others" and doc["settings"]["control"] == []
    q = pd.DataFrame(doc["queries"])
    assert set(q["n"]) == {11}  # 12 profiles a plate, the query's own one left out
    res = score_profiles(no_ctl, ["Metadata_compound", "Metadata_dose"], None, "Metadata_plate",
                         negatives="others", similarity="manhattan", permutations=199)
    assert q["ap"].tolist() == pytest.approx(res.queries["ap"].tolist())
    assert q["ap_normalized"].tolist() == pytest.approx(res.queries["ap_normalized"].tolist())
    # the controls given: negatives too, and not scored
    status, out, _ = run(["score", path, *BASE, "--negatives", "others", "--control", "DMSO"])
    q = pd.DataFrame(json.loads(out)["queries"])
    assert set(q["n"]) == {17} and "DMSO" not in set(q["Metadata_compound"])
    # without --control the controls are one more perturbation
    status, out, _ = run(["score", path, *BASE, "--negatives", "others"])
    assert "DMSO" in set(pd.DataFrame(json.loads(out)["groups"])["Metadata_compound"])


def test_query_table_names_for_copairs(doses_csv):
    status, out, _ = run(["score", doses_csv[0], *BASE, "--copairs-names"])
    q = pd.DataFrame(json.loads(out)["queries"])
    assert {"average_precision", "normalized_average_precision", "n_pos_pairs", "n_total_pairs"} <= set(q.columns)


def test_ranking_tables_refuse_profile_options(tmp_path):
    path = tmp_path / "r.csv"
    pd.DataFrame({"query": ["a", "a"], "item": ["x", "y"], "score": [1.0, 0.5], "relevant": [1, 0]}).to_csv(path, index=False)
    for extra in (["--negatives", "others"], ["--hierarchical-by", "c"]):
        status, _, err = run(["score", str(path), *extra])
        assert status == 2 and "apply to profile tables" in err
