"""score_profiles: per-query values against brute force, permutation p-values against enumeration."""

import numpy as np
import pandas as pd
import pytest
from score_helpers import brute_permutation_p, tiny_screen

import apnull
from apnull.score import ScoreResult, digits_screen, score_profiles

KW = dict(perturbation="Metadata_pert", control="DMSO", stratum="Metadata_plate")


@pytest.mark.parametrize("similarity", ["cosine", "correlation", "euclidean"])
def test_permutation_p_equals_enumeration_of_all_assignments(similarity):
    rng = np.random.default_rng(11)
    layout = {"A": (4, {"t": 2, "u": 2}), "B": (3, {"t": 1, "u": 2})}
    table = tiny_screen(rng, layout)
    res = score_profiles(table, similarity=similarity, permutations="all", **KW)
    for pert in ("t", "u"):
        obs, p, null = brute_permutation_p(table, pert, similarity)
        row = res.groups.set_index("Metadata_pert").loc[pert]
        assert row["mAP"] == pytest.approx(obs, abs=1e-12)
        assert row["p_value"] == p
        np.testing.assert_allclose(np.sort(res.null_maps(pert)), np.sort(null), atol=1e-12)
    assert res.groups["null"].str.contains("exact").all()


def test_permutation_p_with_ties_equals_enumeration():
    rng = np.random.default_rng(5)
    table = tiny_screen(rng, {"A": (3, {"t": 2}), "B": (2, {"t": 2})}, d=2, ties=True)
    res = score_profiles(table, permutations="all", **KW)
    obs, p, _ = brute_permutation_p(table, "t")
    assert res.groups["mAP"].iat[0] == pytest.approx(obs, abs=1e-12)
    assert res.groups["p_value"].iat[0] == p


def test_random_permutations_agree_with_exact_p():
    rng = np.random.default_rng(2)
    table = tiny_screen(rng, {"A": (6, {"t": 2}), "B": (5, {"t": 2})})
    exact = score_profiles(table, permutations="all", **KW).groups["p_value"].iat[0]
    B = 20000
    res = score_profiles(table, permutations=B, seed=4, **KW)
    p = res.groups["p_value"].iat[0]
    assert abs(p - exact) < 4 * np.sqrt(exact * (1 - exact) / B) + 2 / B
    null = res.null_maps("t")
    m_obs = res.groups["mAP"].iat[0]
    assert null.size == B and p == (1 + np.sum(null >= m_obs - 1e-12)) / (1 + B)


def test_queries_match_brute_force_and_exact_law():
    table = digits_screen(seed=1)
    res = score_profiles(table, perturbation="Metadata_perturbation", stratum="Metadata_plate",
                         permutations=99)
    feats = table.filter(regex="^px_").to_numpy(float)
    X = feats / np.linalg.norm(feats, axis=1, keepdims=True)
    lab = table["Metadata_perturbation"].to_numpy()
    plate = table["Metadata_plate"].to_numpy()
    for _, q in res.queries.iterrows():
        i = q["row"]
        pos = np.flatnonzero((lab == lab[i]) & (np.arange(len(lab)) != i))
        neg = np.flatnonzero((lab == "DMSO") & (plate == plate[i]))
        s = X[i] @ X[np.r_[pos, neg]].T
        rel = np.r_[np.ones(pos.size, bool), np.zeros(neg.size, bool)][np.argsort(-s, kind="stable")]
        assert (q["m"], q["n"]) == (pos.size, neg.size)
        assert abs(q["ap"] - apnull.average_precision(rel)) < 1e-12
        assert q["precision_at_r"] == pytest.approx(rel[:pos.size].mean())
        if q["null"] == "exact law":  # all positives on the query's plate
            assert q["p_value"] == apnull.null_distribution(pos.size, neg.size).pvalue(q["ap"])
        else:  # positives on other plates: the conditional permutation null (tests/score/test_score_auto.py)
            assert plate[pos].tolist() != [plate[i]] * pos.size and q["permutations"] == 99
    maps = res.queries.groupby("Metadata_perturbation")["ap"].mean()
    got = res.groups.set_index("Metadata_perturbation")["mAP"]
    np.testing.assert_allclose(got.loc[maps.index], maps, atol=1e-12)


def test_result_shape_and_order():
    res = score_profiles(digits_screen(), perturbation="Metadata_perturbation", stratum="Metadata_plate")
    assert isinstance(res, ScoreResult)
    assert list(res.groups.columns) == ["Metadata_perturbation", "n_replicates", "mAP", "mAP_normalized", "p_value",
                                       "q_value", "significant", "null", "permutations", "p_value_bound"]
    # the scores, then the stratum and metadata of each row, so the table joins back to the screen
    assert list(res.queries.columns) == ["row", "Metadata_perturbation", "m", "n", "ap", "ap_normalized", "precision_at_r",
                                         "p_value", "q_value", "null", "permutations", "p_value_bound", "Metadata_plate",
                                         *[c for c in digits_screen().columns if c.startswith("Metadata_")][2:]]
    assert list(res.skipped.columns) == ["Metadata_perturbation", "reason"]
    key = list(zip(res.groups["p_value"], res.groups["Metadata_perturbation"]))
    assert key == sorted(key)
    expected = dict(perturbation="Metadata_perturbation", control=["DMSO"], stratum="Metadata_plate",
                    features=64, similarity="cosine", null="permutation", permutations="auto", seed=0,
                    nan="error", dropped_features=[], dropped_rows=[], alpha=0.05, positives_differ_by=None)
    assert {k: res.settings[k] for k in expected} == expected
    assert res.settings["perturbation_column"] == "Metadata_perturbation"
    assert res.settings["columns_left_out"] == [
        {"column": c, "reason": "metadata (name starts with Metadata_)"}
        for c in digits_screen().columns if c.startswith("Metadata_") and c not in ("Metadata_perturbation",
                                                                                      "Metadata_plate")]
    assert "0-based" in res.settings["row"]
    top = set(res.groups["Metadata_perturbation"].head(3))
    assert top == {"digit_3", "digit_8", "weak_6"}
    assert (res.groups["p_value"] >= 1 / 1_000_001).all()
    assert (res.groups["permutations"] <= 1_000_000).all()


def test_seed_invariance_to_row_order_and_other_perturbations():
    table = digits_screen(seed=2)
    kw = dict(perturbation="Metadata_perturbation", stratum="Metadata_plate", permutations=199, seed=7)
    base = score_profiles(table, **kw).groups.set_index("Metadata_perturbation")
    shuffled = table.sample(frac=1.0, random_state=3)
    keep = table["Metadata_perturbation"].isin(["DMSO", "null_02", "weak_6"])
    for other in (shuffled, table[keep].iloc[::-1]):
        g = score_profiles(other, **kw).groups.set_index("Metadata_perturbation")
        for name in g.index:
            assert g.loc[name, "p_value"] == base.loc[name, "p_value"]
            assert g.loc[name, "mAP"] == base.loc[name, "mAP"]
    q1 = score_profiles(shuffled, **kw).queries
    q0 = score_profiles(table, **kw).queries
    merged = q0.merge(q1.assign(row=shuffled.index.to_numpy()[q1["row"]]), on="row")
    np.testing.assert_array_equal(merged["ap_x"], merged["ap_y"])
    different = score_profiles(table, **dict(kw, seed=8)).groups.set_index("Metadata_perturbation")
    assert not np.array_equal(different["p_value"].loc[base.index], base["p_value"])


@pytest.mark.parametrize("threads", [1, 3])
def test_results_do_not_depend_on_threads(threads):
    table = digits_screen(seed=1)
    kw = dict(perturbation="Metadata_perturbation", stratum="Metadata_plate", permutations=299, seed=4)
    base = score_profiles(table, **kw, threads=2)
    other = score_profiles(table, **kw, threads=threads)
    pd.testing.assert_frame_equal(other.groups, base.groups, check_exact=True)
    pd.testing.assert_frame_equal(other.queries, base.queries, check_exact=True)
    with pytest.raises(ValueError, match="threads must be"):
        score_profiles(table, **kw, threads=0)


@pytest.mark.parametrize("null, label", [("independent", "independent (approximate)"),
                                         ("copairs", "copairs (approximate)")])
def test_approximate_nulls(null, label):
    table = digits_screen()
    res = score_profiles(table, perturbation="Metadata_perturbation", stratum="Metadata_plate", null=null)
    assert (res.groups["null"] == label).all()
    assert res.groups["p_value"].between(0, 1).all()
    assert set(res.groups["Metadata_perturbation"].head(3)) == {"digit_3", "digit_8", "weak_6"}
    with pytest.raises(ValueError, match="null='permutation' only"):
        res.null_maps("digit_3")


def test_copairs_null_shares_rows_across_equal_sizes():
    # every query has the same (m, n): the copairs null mAP is exactly one AP row
    from apnull.score.nulls.copairs import CopairsRows

    rows = CopairsRows(0)
    row = rows.row(3, 20, 500)
    np.testing.assert_array_equal(rows.null([3] * 4, [20] * 4, 500), row)
    law = apnull.null_distribution(3, 20)
    assert abs(row.mean() - law.mean) < 4 * law.std / np.sqrt(500)


def test_no_strata_and_control_list():
    table = digits_screen().assign(Metadata_perturbation=lambda d: d["Metadata_perturbation"].where(
        ~((d["Metadata_perturbation"] == "DMSO") & (d["Metadata_plate"] == "plate_1")), "DMSO2"))
    res = score_profiles(table, perturbation="Metadata_perturbation", control=["DMSO", "DMSO2"],
                         permutations=99)
    assert (res.queries["n"] == 80).all() and (res.queries["m"] == 3).all()
    with pytest.raises(ValueError, match="not a scored"):
        res.null_maps("nope")


def test_progress_callback_called():
    calls = []
    score_profiles(digits_screen(), perturbation="Metadata_perturbation", stratum="Metadata_plate",
                   permutations=9, progress=lambda d, t: calls.append((d, t)))
    assert calls[0] == (0, 11) and calls[-1] == (11, 11)


def test_score_rankings_long_table():
    from apnull.score import score_rankings

    table = pd.DataFrame({"query": ["a"] * 5 + ["b"] * 4 + ["c"] * 2,
                          "item": list(range(11)),
                          "score": [5, 4, 4, 2, 1, 9, 8, 7, 6, 1, 0],
                          "relevant": [1, 0, 1, 0, 1, 0, 0, 1, 1, 0, 0]})
    rq = score_rankings(table)
    assert list(rq.columns) == ["query", "m", "n", "ap", "precision_at_r", "p_value", "q_value"]
    assert list(rq["query"]) == ["a", "b"]
    a = rq.iloc[0]
    assert a["ap"] == pytest.approx((1 + (0.5 * 2 / 2 + 0.5 * 2 / 3) + 3 / 5) / 3)
    assert a["p_value"] == apnull.null_distribution(3, 2).pvalue(a["ap"])
    assert rq.attrs["skipped"] == [("c", "no relevant item: AP is undefined")]
