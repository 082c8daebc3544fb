"""What a copairs user reaches for in ``score_profiles``: several perturbation columns,
positives_differ_by, abs_cosine, missing-value modes, significant / mAP_normalized / active share,
copairs column names. Each against brute force or its definition on small screens."""

from __future__ import annotations

import itertools

import numpy as np
import pandas as pd
import pytest
from score_helpers import tiny_screen

from apnull import expected_ap
from apnull.score import benjamini_hochberg, score_profiles, tie_aware_ap
from apnull.score.results.summary import activity_line, to_copairs_names


def _sims(table, similarity):
    X = table.filter(regex="^f").to_numpy(float)
    if similarity == "correlation":
        X = X - X.mean(axis=1, keepdims=True)
    if similarity in ("cosine", "correlation", "abs_cosine"):
        X = X / np.sqrt(np.sum(X * X, axis=1))[:, None]
        # dot products summed feature by feature, as the kernels do: a BLAS product may round a tie apart
        S = np.array([[sum(float(a) * float(b) for a, b in zip(x, y)) for y in X] for x in X])
        return np.abs(S) if similarity == "abs_cosine" else S
    return -((X[:, None, :] - X[None, :, :]) ** 2).sum(-1)


def brute(table, pert, similarity="cosine", differ=(), exact=True, pcol="Metadata_pert", tol=1e-12):
    """(per-query {row: (m, n, ap)}, observed mAP, exact permutation p) by the definitions:
    positives = the other labelled members not sharing a ``differ`` value with the query, negatives =
    unlabelled pool members of its plate; every assignment enumerated for the p-value."""
    S = _sims(table, similarity)
    lab = table[pcol].astype(str).to_numpy()
    plate = table["Metadata_plate"].to_numpy()
    codes = table[list(differ)].to_numpy() if differ else np.zeros((len(table), 0))
    strata = sorted(set(plate[lab == pert]))
    pools = {s: np.flatnonzero((plate == s) & ((lab == pert) | (lab == "DMSO"))) for s in strata}
    ks = {s: int(np.sum((plate == s) & (lab == pert))) for s in strata}

    def scores(chosen):
        labelled = np.concatenate([chosen[s] for s in strata])
        out = {}
        for q in labelled:
            pos = [x for x in labelled if x != q and not np.any(codes[x] == codes[q])]
            neg = [x for x in pools[plate[q]] if x not in set(labelled)]
            if pos:
                rel = np.r_[np.ones(len(pos), bool), np.zeros(len(neg), bool)]
                out[int(q)] = (len(pos), len(neg), tie_aware_ap(np.r_[S[q, pos], S[q, neg]], rel))
        return out

    def mean_ap(chosen):
        aps = [v[2] for v in scores(chosen).values()]
        return float(np.mean(aps)) if aps else 0.0

    observed_sets = {s: np.flatnonzero((plate == s) & (lab == pert)) for s in strata}
    per_query = scores(observed_sets)
    observed = mean_ap(observed_sets)
    if not exact:
        return per_query, observed, None
    null = np.array([mean_ap({s: np.array(c) for s, c in zip(strata, combo)})
                     for combo in itertools.product(*[itertools.combinations(pools[s], ks[s]) for s in strata])])
    return per_query, observed, float(np.mean(null >= observed - tol))


def _check_against_brute(res, table, similarity="cosine", differ=(), pcol="Metadata_pert"):
    for name in res.groups[pcol]:
        per_query, observed, p = brute(table, str(name), similarity, differ, pcol=pcol)
        g = res.groups.set_index(pcol).loc[name]
        assert g["mAP"] == pytest.approx(observed, abs=1e-12)
        assert g["p_value"] == pytest.approx(p, abs=1e-12)
        q = res.queries[res.queries[pcol] == name].set_index("row")
        assert sorted(q.index) == sorted(per_query)
        for row, (m, n, ap) in per_query.items():
            assert (q.loc[row, "m"], q.loc[row, "n"]) == (m, n)
            assert q.loc[row, "ap"] == pytest.approx(ap, abs=1e-12)


# -- abs_cosine --------------------------------------------------------------------------------------

@pytest.mark.parametrize("seed", [0, 1, 2])
def test_abs_cosine_against_brute_force(seed):
    rng = np.random.default_rng(seed)
    table = tiny_screen(rng, {"p1": (4, {"A": 2, "B": 2}), "p2": (3, {"A": 1, "B": 2})}, d=4)
    table.loc[table["Metadata_pert"] == "A", ["f0", "f1", "f2", "f3"]] *= -1  # anti-correlated profiles
    res = score_profiles(table, "Metadata_pert", "DMSO", "Metadata_plate", similarity="abs_cosine",
                         permutations="all")
    _check_against_brute(res, table, "abs_cosine")


def test_abs_cosine_sees_anti_correlated_replicates():
    rng = np.random.default_rng(5)
    base = rng.normal(size=6)
    rows = [("DMSO", "p", *rng.normal(size=6)) for _ in range(12)]
    rows += [("flip", "p", *(s * base + 0.05 * rng.normal(size=6))) for s in (1, -1, 1, -1)]
    table = pd.DataFrame(rows, columns=["Metadata_pert", "Metadata_plate"] + [f"f{i}" for i in range(6)])
    cos = score_profiles(table, "Metadata_pert", "DMSO", permutations=99)
    absc = score_profiles(table, "Metadata_pert", "DMSO", permutations=99, similarity="abs_cosine")
    assert absc.groups["mAP"].iat[0] == pytest.approx(1.0)
    assert cos.groups["mAP"].iat[0] < 0.9


# -- several perturbation columns ------------------------------------------------------------------

def _dosed(seed=0):
    rng = np.random.default_rng(seed)
    rows = []
    for plate in ("p1", "p2"):
        rows += [("DMSO", np.nan, plate)] * 4
        rows += [("cmpA", 1.0, plate), ("cmpA", 10.0, plate), ("cmpB", 1.0, plate)]
    df = pd.DataFrame(rows, columns=["Metadata_compound", "Metadata_dose", "Metadata_plate"])
    X = pd.DataFrame(rng.normal(size=(len(df), 4)), columns=[f"f{i}" for i in range(4)])
    return pd.concat([df, X], axis=1)


def test_several_columns_make_one_perturbation():
    table = _dosed()
    res = score_profiles(table, ["Metadata_compound", "Metadata_dose"], "DMSO", "Metadata_plate",
                         permutations="all")
    assert list(res.groups.columns[:2]) == ["Metadata_compound", "Metadata_dose"]
    assert sorted(zip(res.groups["Metadata_compound"], res.groups["Metadata_dose"])) == \
        [("cmpA", 1.0), ("cmpA", 10.0), ("cmpB", 1.0)]
    assert list(res.queries.columns[:3]) == ["row", "Metadata_compound", "Metadata_dose"]
    # the same as scoring one column holding the pair
    one = table.assign(Metadata_pert=[c if c == "DMSO" else f"{c}@{d}" for c, d in
                                      zip(table["Metadata_compound"], table["Metadata_dose"])])
    one = one.drop(columns=["Metadata_compound", "Metadata_dose"])
    ref = score_profiles(one, "Metadata_pert", "DMSO", "Metadata_plate", permutations="all")
    for _, g in res.groups.iterrows():
        r = ref.groups.set_index("Metadata_pert").loc[f"{g['Metadata_compound']}@{g['Metadata_dose']}"]
        assert (g["mAP"], g["p_value"]) == (pytest.approx(r["mAP"], abs=1e-15), pytest.approx(r["p_value"]))
    _check_against_brute(ref, one)
    assert len(res.null_maps(("cmpA", 10.0))) > 0


def test_several_columns_dose_is_not_a_feature():
    table = _dosed().rename(columns={"Metadata_dose": "dose"})
    res = score_profiles(table, ["Metadata_compound", "dose"], "DMSO", "Metadata_plate", permutations=9)
    assert res.settings["features"] == 4


@pytest.mark.parametrize("bad, match", [([], "empty list"), (["Metadata_compound", "Metadata_compound"], "twice"),
                                        (["Metadata_compound", "Metadata_dos"], "Metadata_dose"),
                                        (["Metadata_compound", "Metadata_plate"], "stratum")])
def test_several_columns_bad_input(bad, match):
    with pytest.raises(ValueError, match=match):
        score_profiles(_dosed(), bad, "DMSO", "Metadata_plate", permutations=9)


# -- positives_differ_by -----------------------------------------------------------------------------

def _wells(seed=0):
    rng = np.random.default_rng(seed)
    rows = []
    for plate in ("p1", "p2", "p3"):
        rows += [("DMSO", plate, f"c{i}") for i in range(4)]
        rows += [("A", plate, "w1"), ("B", plate, "w2" if plate != "p3" else "w9")]
    rows += [("A", "p1", "w5")]
    df = pd.DataFrame(rows, columns=["Metadata_pert", "Metadata_plate", "Metadata_well"])
    X = pd.DataFrame(rng.normal(size=(len(df), 4)), columns=[f"f{i}" for i in range(4)])
    X.loc[df["Metadata_pert"] == "A"] += 0.8  # A's replicates alike, more so than chance
    return pd.concat([df, X], axis=1)


@pytest.mark.parametrize("seed", [0, 1])
def test_positives_differ_by_against_brute_force(seed):
    table = _wells(seed)
    res = score_profiles(table, "Metadata_pert", "DMSO", "Metadata_plate", permutations="all",
                         positives_differ_by="Metadata_well")
    _check_against_brute(res, table, differ=("Metadata_well",))
    q = res.queries.set_index("row")
    a_rows = np.flatnonzero(table["Metadata_pert"] == "A")
    # the three w1 replicates keep only the w5 one; the w5 replicate keeps all three
    assert sorted(q.loc[a_rows, "m"]) == [1, 1, 1, 3]
    # per-query p-values: exact law of the kept m
    from apnull import p_value
    for row in a_rows:
        assert q.loc[row, "p_value"] == pytest.approx(p_value(q.loc[row, "ap"], q.loc[row, "m"], q.loc[row, "n"]))


def test_positives_differ_by_several_columns_any_shared_value_excludes():
    table = _wells(3)
    table["Metadata_row"] = ["r1" if i % 3 == 0 else "r2" for i in range(len(table))]
    res = score_profiles(table, "Metadata_pert", "DMSO", "Metadata_plate", permutations="all",
                         positives_differ_by=["Metadata_well", "Metadata_row"])
    _check_against_brute(res, table, differ=("Metadata_well", "Metadata_row"))


def test_positives_differ_by_query_without_positive_and_skip():
    table = _wells(0)
    res = score_profiles(table, "Metadata_pert", "DMSO", "Metadata_plate", permutations=99,
                         positives_differ_by="Metadata_well")
    # B: w2, w2, w9: the two w2 replicates keep the w9 one, the w9 one keeps both
    b = res.queries[res.queries["Metadata_pert"] == "B"]
    assert sorted(b["m"]) == [1, 1, 2]
    table.loc[table["Metadata_pert"] == "B", "Metadata_well"] = "w2"
    res = score_profiles(table, "Metadata_pert", "DMSO", "Metadata_plate", permutations=99,
                         positives_differ_by="Metadata_well")
    assert "B" in set(res.skipped["Metadata_pert"]) and "no positives left" in res.skipped["reason"].iat[0]


def test_positives_differ_by_without_shared_values_changes_nothing():
    table = _wells(1)
    table["Metadata_well"] = [f"u{i}" for i in range(len(table))]
    a = score_profiles(table, "Metadata_pert", "DMSO", "Metadata_plate", permutations=199, seed=3)
    b = score_profiles(table, "Metadata_pert", "DMSO", "Metadata_plate", permutations=199, seed=3,
                       positives_differ_by="Metadata_well")
    pd.testing.assert_frame_equal(a.groups, b.groups)
    pd.testing.assert_frame_equal(a.queries, b.queries)


@pytest.mark.parametrize("bad, match", [("Metadata_wel", "Metadata_well"), ("Metadata_plate", "stratum"),
                                        (["Metadata_well", "Metadata_well"], "twice")])
def test_positives_differ_by_bad_input(bad, match):
    with pytest.raises(ValueError, match=match):
        score_profiles(_wells(), "Metadata_pert", "DMSO", "Metadata_plate", positives_differ_by=bad)


def test_positives_differ_by_missing_value_is_an_error():
    table = _wells()
    table.loc[3, "Metadata_well"] = np.nan
    with pytest.raises(ValueError, match="empty in 1 scored rows"):
        score_profiles(table, "Metadata_pert", "DMSO", "Metadata_plate", positives_differ_by="Metadata_well")


# -- missing values ----------------------------------------------------------------------------------

def _holes():
    rng = np.random.default_rng(7)
    table = tiny_screen(rng, {"p1": (5, {"A": 2, "B": 2}), "p2": (5, {"A": 2, "B": 1})}, d=5)
    table.loc[2, "f1"] = np.nan
    table.loc[7, "f3"] = np.inf
    return table


def test_nan_error_is_the_default():
    with pytest.raises(ValueError, match="nan='drop-features'"):
        score_profiles(_holes(), "Metadata_pert", "DMSO", "Metadata_plate")


def test_nan_drop_features_equals_leaving_them_out():
    table = _holes()
    res = score_profiles(table, "Metadata_pert", "DMSO", "Metadata_plate", permutations="all", nan="drop-features")
    ref = score_profiles(table, "Metadata_pert", "DMSO", "Metadata_plate", permutations="all",
                         features=["f0", "f2", "f4"])
    pd.testing.assert_frame_equal(res.groups, ref.groups)
    assert res.settings["dropped_features"] == ["f1", "f3"] and res.settings["dropped_rows"] == []
    assert any("2 feature columns" in w and "'f1'" in w for w in res.warnings)


def test_nan_drop_rows_equals_deleting_them():
    table = _holes()
    res = score_profiles(table, "Metadata_pert", "DMSO", "Metadata_plate", permutations="all", nan="drop-rows")
    ref = score_profiles(table.drop(index=[2, 7]).reset_index(drop=True), "Metadata_pert", "DMSO",
                         "Metadata_plate", permutations="all")
    pd.testing.assert_frame_equal(res.groups, ref.groups)
    assert res.settings["dropped_rows"] == [2, 7] and res.settings["dropped_features"] == []
    assert any("data rows 3, 8 (" in w for w in res.warnings)
    assert not set(res.queries["row"]) & {2, 7}


def test_nan_bad_mode_and_nothing_left():
    with pytest.raises(ValueError, match="nan must be one of"):
        score_profiles(_holes(), "Metadata_pert", "DMSO", "Metadata_plate", nan="drop")
    table = _holes()
    table["f0"] = np.nan
    with pytest.raises(ValueError, match="leaves none"):
        score_profiles(table, "Metadata_pert", "DMSO", "Metadata_plate", nan="drop-rows")


# -- significant, mAP_normalized, the active share, copairs names -----------------------------------

def test_significant_normalized_and_activity():
    rng = np.random.default_rng(2)
    table = tiny_screen(rng, {"p1": (6, {"A": 2, "B": 3}), "p2": (6, {"A": 2, "B": 1})}, d=5)
    res = score_profiles(table, "Metadata_pert", "DMSO", "Metadata_plate", permutations=199, alpha=0.5)
    g = res.groups.set_index("Metadata_pert")
    assert (g["significant"] == (g["q_value"] <= 0.5)).all()
    np.testing.assert_allclose(g["q_value"], benjamini_hochberg(g["p_value"].to_numpy()))
    for name, grp in res.queries.groupby("Metadata_pert"):
        E = np.mean([expected_ap(m, n) for m, n in zip(grp["m"], grp["n"])])
        assert g.loc[name, "mAP_normalized"] == pytest.approx((g.loc[name, "mAP"] - E) / (1 - E), abs=1e-14)
    act = res.activity
    assert act == {"active": int(g["significant"].sum()), "scored": 2, "fraction": act["active"] / 2, "alpha": 0.5}
    assert activity_line(act).startswith(f"active: {act['active']} of 2 (")


@pytest.mark.parametrize("alpha", [0, 1, -0.1, "x", True])
def test_bad_alpha(alpha):
    with pytest.raises(ValueError, match="alpha"):
        score_profiles(_wells(), "Metadata_pert", "DMSO", "Metadata_plate", alpha=alpha)


def test_copairs_names():
    res = score_profiles(_wells(), "Metadata_pert", "DMSO", "Metadata_plate", permutations=19)
    g, q = to_copairs_names(res.groups, res.queries, 0.05)
    assert {"mean_average_precision", "corrected_p_value", "below_p", "below_corrected_p", "p_value"} <= set(g.columns)
    assert (g["below_p"] == (res.groups["p_value"] <= 0.05)).all()
    assert {"average_precision", "n_pos_pairs", "n_total_pairs", "corrected_p_value"} <= set(q.columns)
    assert (q["n_total_pairs"] == res.queries["m"] + res.queries["n"]).all()
    assert "mAP" in res.groups  # the result itself is unchanged


def test_positives_differ_by_on_dask_threads_and_null_maps():
    from dask.distributed import Client, LocalCluster
    from apnull.score.engine.connect import LOCAL_CLUSTER_HTTP

    table = _wells(2)
    kw = dict(perturbation="Metadata_pert", control="DMSO", stratum="Metadata_plate", permutations=199, seed=1,
              positives_differ_by="Metadata_well")
    local = score_profiles(table, threads=1, **kw)
    threaded = score_profiles(table, threads=2, **kw)
    with LocalCluster(n_workers=2, threads_per_worker=1, processes=False, **LOCAL_CLUSTER_HTTP) as cluster, \
            Client(cluster) as client:
        remote = score_profiles(table, scheduler=client, **kw)
    for other in (threaded, remote):
        pd.testing.assert_frame_equal(local.groups, other.groups, check_exact=True)
        pd.testing.assert_frame_equal(local.queries, other.queries, check_exact=True)
    null = local.null_maps("A")
    g = local.groups.set_index("Metadata_pert").loc["A"]
    assert g["p_value"] == pytest.approx((1 + np.sum(null >= g["mAP"] - 1e-12)) / 200)


def test_positives_differ_by_row_order_invariance():
    table = _wells(4)
    kw = dict(perturbation="Metadata_pert", control="DMSO", stratum="Metadata_plate", permutations=99,
              positives_differ_by="Metadata_well")
    a = score_profiles(table, **kw)
    perm = np.random.default_rng(0).permutation(len(table))
    b = score_profiles(table.iloc[perm].reset_index(drop=True), **kw)
    pd.testing.assert_frame_equal(a.groups, b.groups)


@pytest.mark.parametrize("seed", [0, 1, 2])
def test_positives_differ_by_with_tied_similarities(seed):
    rng = np.random.default_rng(seed)
    table = tiny_screen(rng, {"p1": (3, {"A": 2}), "p2": (3, {"A": 2}), "p3": (2, {"A": 1})}, d=3, ties=True)
    table["Metadata_well"] = rng.choice(["w1", "w2", "w3"], size=len(table))
    table.loc[table["Metadata_pert"] == "A", "Metadata_well"] = ["w1", "w2", "w1", "w3", "w1"]
    res = score_profiles(table, "Metadata_pert", "DMSO", "Metadata_plate", permutations="all",
                         positives_differ_by="Metadata_well")
    _check_against_brute(res, table, differ=("Metadata_well",))
