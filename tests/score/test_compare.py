"""``score_compare``: each side is exactly ``score_profiles``; the units, the test and the answer."""

import itertools
import math

import numpy as np
import pandas as pd
import pytest

from apnull.score import benjamini_hochberg, score_compare, score_profiles, summary_line
from apnull.score.example import digits_pipeline_pair

KEY = ["Metadata_plate", "Metadata_well"]
KW = dict(key=KEY, perturbation="Metadata_perturbation", control="DMSO", stratum="Metadata_plate", permutations=199,
          seed=3)
SCORE = dict(perturbation="Metadata_perturbation", control="DMSO", stratum="Metadata_plate", permutations=199, seed=3)


@pytest.fixture(scope="module")
def pair():
    return digits_pipeline_pair(seed=1)


@pytest.fixture(scope="module")
def result(pair):
    return score_compare(*pair, **KW)


def _by_name(groups):
    return groups.set_index("Metadata_perturbation").sort_index()


def test_each_side_is_exactly_score_profiles(pair, result):
    g = _by_name(result.groups)
    for side, table in zip("ab", pair):
        own = _by_name(score_profiles(table, **SCORE).groups).loc[g.index]
        for col in ("mAP", "p_value", "q_value"):
            assert (g[f"{col}_{side}"].to_numpy() == own[col].to_numpy()).all(), (side, col)
    assert (g["delta"] == g["mAP_b"] - g["mAP_a"]).all()
    assert (g["n_replicates"] == 3).all() and len(g) == 40


def test_the_summary_reads_the_table(result):
    g, s = result.groups, result.summary
    assert s["n_perturbations"] == len(g) and s["mean_delta"] == pytest.approx(g["delta"].mean(), abs=1e-15)
    sig_a = g["q_value_a"] <= 0.05
    sig_b = g["q_value_b"] <= 0.05
    assert s["retrieved_a"] == sig_a.sum() and s["retrieved_b"] == sig_b.sum()
    assert s["a_only"] == (sig_a & ~sig_b).sum() and s["b_only"] == (sig_b & ~sig_a).sum()
    assert (g.loc[sig_a & ~sig_b, "retrieved"] == "A only").all() and (g.loc[~sig_a & ~sig_b, "retrieved"] == "neither").all()
    assert s["retrieved_difference"] == (s["retrieved_b"] - s["retrieved_a"]) / len(g)
    assert s["ci_low"] <= s["mean_delta"] <= s["ci_high"]
    assert list(g["delta"]) == sorted(g["delta"])


def test_the_p_values_are_every_flip_of_the_plates(result):
    """An independent count: the plates' sums of delta (pandas), every sign vector (itertools); for the
    retrieved counts, each flip swaps the plates' p-values and BH is run again on both sides."""
    g = result.groups
    sums = g.groupby("unit")["delta"].sum().to_numpy()
    assert result.summary["units"] == 8 == sums.size and result.summary["exact"]
    signs = np.array(list(itertools.product([1, -1], repeat=8)))
    p = np.mean(np.abs(signs @ sums) >= abs(sums.sum()) - 1e-12)
    assert result.summary["p_value"] == p and result.summary["flips"] == 256
    unit = g["unit"].map({u: i for i, u in enumerate(sorted(set(g["unit"])))}).to_numpy()
    pa, pb = g["p_value_a"].to_numpy(), g["p_value_b"].to_numpy()

    def diff(flipped):
        swap = flipped[unit]
        a, b = np.where(swap, pb, pa), np.where(swap, pa, pb)
        return int((benjamini_hochberg(b) <= 0.05).sum()) - int((benjamini_hochberg(a) <= 0.05).sum())

    observed = diff(np.zeros(8, dtype=bool))
    assert observed == result.summary["retrieved_b"] - result.summary["retrieved_a"]
    reach = [abs(diff(s < 0)) >= abs(observed) for s in signs]
    assert result.summary["retrieved_p_value"] == np.mean(reach)


def test_the_half_resolution_pipeline_loses(result):
    s = result.summary
    assert s["mean_delta"] < 0 and s["p_value"] <= 0.05 and s["ci_high"] < 0
    assert summary_line(s).startswith("A retrieves better than B")


def test_row_order_of_b_changes_nothing(pair, result):
    a, b = pair
    again = score_compare(a, b.sample(frac=1, random_state=5), **KW)
    pd.testing.assert_frame_equal(again.groups, result.groups, check_exact=True)
    assert again.summary == result.summary


def test_threads_change_nothing(pair, result):
    one = score_compare(*pair, **KW, threads=1)
    two = score_compare(*pair, **KW, threads=2)
    pd.testing.assert_frame_equal(one.groups, two.groups, check_exact=True)
    pd.testing.assert_frame_equal(one.groups, result.groups, check_exact=True)
    assert one.summary == two.summary


def test_the_same_table_twice_is_no_difference(pair):
    a, _ = pair
    res = score_compare(a, a.copy(), **KW)
    assert (res.groups["delta"] == 0).all()
    s = res.summary
    assert s["p_value"] == 1.0 and s["retrieved_p_value"] == 1.0 and (s["ci_low"], s["ci_high"]) == (0.0, 0.0)
    assert s["a_only"] == s["b_only"] == 0 and summary_line(s).startswith("no difference shown")


def test_a_perturbation_on_two_plates_ties_them(pair):
    a, b = (t.copy() for t in pair)
    for t in (a, b):  # one replicate of a plate-1 perturbation moved to plate 2 (same well, in both tables)
        row = t.index[t["Metadata_perturbation"] == "digit_1_p1"][0]
        t.loc[row, ["Metadata_plate", "Metadata_well"]] = ["plate_2", "H12"]
    res = score_compare(a, b, **KW)
    assert res.summary["units"] == 7 and res.summary["flips"] == 128
    tied = res.groups.loc[res.groups["Metadata_perturbation"].str.endswith(("_p1", "_p2")), "unit"]
    assert set(tied) == {"plate_1 (+1 strata)"}


def test_one_unit_is_no_test(pair):
    res = score_compare(*pair, **dict(KW, stratum=None))
    s = res.summary
    assert s["units"] == 1 and math.isnan(s["p_value"]) and math.isnan(s["ci_low"]) and math.isnan(s["retrieved_p_value"])
    assert "one unit" in s["note"] and any("no p-value" in w for w in res.warnings)
    assert summary_line(s).startswith("no test possible: mean delta (B - A) = ")
    assert set(res.groups["unit"]) == {"(whole table)"}


def test_too_few_units_for_the_level(pair):
    a, b = (t[t["Metadata_plate"].isin(["plate_1", "plate_2", "plate_3"])] for t in pair)
    s = score_compare(a, b, **KW).summary
    assert s["units"] == 3 and s["p_value"] >= 0.25 and s["smallest_p"] == 0.25
    assert math.isnan(s["ci_low"]) and "at least 6 units" in s["note"]


# -- the wells: every mismatch named ------------------------------------------------------------------

def _err(a, b, match, **kw):
    with pytest.raises(ValueError, match=match):
        score_compare(a, b, **dict(KW, **kw))


def test_missing_wells_are_named(pair):
    a, b = pair
    _err(a, b.drop(index=[5, 7]), r"wells missing from one table: \('plate_1', 'A06'\), \('plate_1', 'A08'\)")
    res = score_compare(a, b.drop(index=[5]), **KW, unmatched="drop")
    assert res.left_out[["table", *KEY]].values.tolist() == [["A", "plate_1", "A06"]]
    assert any("left out of both" in w for w in res.warnings)
    ref = score_compare(a.drop(index=[5]), b.drop(index=[5]), **KW)
    pd.testing.assert_frame_equal(res.groups, ref.groups, check_exact=True)


def test_repeated_blank_and_mismatched_keys(pair):
    a, b = pair
    _err(a, pd.concat([b, b.iloc[[3]]]), r"keys repeated within a table: \('plate_1', 'A04'\)")
    blank = b.copy()
    blank.loc[4, "Metadata_well"] = np.nan
    _err(a, blank, r"blank key cells: \('plate_1', '\(blank\)'\)")
    _err(a, b.rename(columns={"Metadata_well": "Metadata_Well"}), r"table B: key column 'Metadata_well' is not in the table; "
         "did you mean 'Metadata_Well'")
    _err(a, b, r"table A: key column 'well' is not in the table", key=["Metadata_plate", "well"])


def test_labels_that_differ_are_named(pair):
    a, b = pair
    other = b.copy()
    other.loc[12, "Metadata_perturbation"] = "weak_9_p1"
    _err(a, other, r"labels differ between the tables \(first: 'Metadata_perturbation' is '\w+' in A and "
         r"'weak_9_p1' in B\): \('plate_1', 'B01'\)")
    res = score_compare(a, other, **KW, unmatched="drop")
    assert res.left_out["table"].tolist() == ["A", "B"]


def test_nan_on_one_side(pair):
    a, b = pair
    holed = b.copy()
    holed.loc[20, "half_03"] = np.nan
    _err(a, holed, r"^table B: feature columns with NaN or infinite values: 'half_03'")
    res = score_compare(a, holed, **KW, nan="drop-rows")
    assert res.left_out["reason"].tolist() == ["NaN or infinite feature value in the other table",
                                               "NaN or infinite feature value in this table"]
    ref = score_compare(a.drop(index=[20]), b.drop(index=[20]), **KW)
    pd.testing.assert_frame_equal(res.groups, ref.groups, check_exact=True)
    dropped = score_compare(a, holed, **KW, nan="drop-features")
    assert dropped.b.settings["dropped_features"] == ["half_03"] and dropped.a.settings["dropped_features"] == []


def test_a_numeric_key_is_never_a_feature(pair):
    a, b = (t.copy() for t in pair)
    for t in (a, b):
        t["well_id"] = np.arange(len(t))
    res = score_compare(a, b, **dict(KW, key="well_id"))
    assert res.a.settings["features"] == 64 and res.b.settings["features"] == 16
    assert {"column": "well_id", "reason": "key column: it pairs the wells of A and B, never a feature"} \
        in res.a.settings["columns_left_out"]


def test_bad_options_are_named(pair):
    _err(*pair, "unmatched must be one of", unmatched="skip")
    _err(*pair, "nan must be one of", nan="zero")
    _err(*pair, "table A: perturbation column .nope. is not in the table", perturbation="nope")
    _err(*pair, "no control rows", control="water")


def test_the_readme_shows_the_example_s_answer():
    """The answer the README quotes is what the built-in pair gives (the mAPs and the flips do not depend on
    the permutations behind each side's p-values)."""
    from pathlib import Path

    readme = (Path(__file__).resolve().parents[2] / "README.md").read_text(encoding="utf-8")
    quoted = readme.split("```text\n", 1)[1].split("\n", 1)[0]
    res = score_compare(*digits_pipeline_pair(), **dict(KW, permutations=99, seed=0))
    assert quoted == summary_line(res.summary)


def test_every_assignment_on_each_side(pair):
    """permutations='all': each side's p-values are score_profiles's exact ones; the plates' flips are all
    enumerated as always when there are at most 17 units."""
    a, b = (t[t["Metadata_plate"].isin([f"plate_{i}" for i in range(1, 7)])] for t in pair)
    res = score_compare(a, b, **dict(KW, permutations="all"))
    own = _by_name(score_profiles(b, **dict(SCORE, permutations="all")).groups)
    g = _by_name(res.groups)
    assert (g["p_value_b"].to_numpy() == own.loc[g.index, "p_value"].to_numpy()).all()
    assert res.summary["exact"] and res.summary["flips"] == 64 and res.summary["smallest_p"] == 2 / 64
