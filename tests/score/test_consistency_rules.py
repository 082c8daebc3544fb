"""Consistency's negatives and pair rule: a profile without a label is a negative of every query, and
``positives_differ_by`` leaves out the positives sharing a value with the query; both against copairs
0.5.5's multilabel AP (skipped without copairs) and against brute force over every labelling."""

import itertools

import numpy as np
import pandas as pd
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from test_consistency import label_null

from apnull.law import permutation_pvalue
from apnull.score import score_consistency, tie_aware_ap
from apnull.score.kernels import labelsets as K
from apnull.score.table.profiles import prepare_profiles

FAST = settings(max_examples=20, deadline=None, suppress_health_check=list(HealthCheck))


def _table(n, cells, plates=3, d=5, seed=0, reps=1):
    """n perturbations of ``reps`` rows, annotation cells cycled from ``cells`` ("" = no label), a plate
    column and Gaussian features."""
    rng = np.random.default_rng(seed)
    names = np.repeat([f"p{i:02d}" for i in range(n)], reps)
    df = pd.DataFrame(rng.normal(size=(n * reps, d)), columns=[f"f{i}" for i in range(d)])
    df.insert(0, "plate", [f"P{int(rng.integers(plates))}" for _ in range(n * reps)])
    df.insert(0, "target", [cells[int(s[1:]) % len(cells)] or None for s in names])
    df.insert(0, "pert", names)
    return df


def _brute(X, sets, codes, label, q_rows=None):
    """Label mAP by definition: cosine; positives = the others carrying ``label`` and differing from the
    query in every pair-rule code; negatives = the profiles sharing no label (the unlabelled too)."""
    Xn = X / np.linalg.norm(X, axis=1, keepdims=True)
    S = Xn @ Xn.T
    aps = []
    for q, Lq in enumerate(sets):
        if label not in Lq:
            continue
        items, rel = [], []
        for j in range(len(sets)):
            if j == q:
                continue
            if label in sets[j]:
                if codes.shape[1] == 0 or not (codes[q] == codes[j]).any():
                    items.append(j)
                    rel.append(True)
            elif not set(sets[j]) & set(Lq):
                items.append(j)
                rel.append(False)
        if any(rel) and not all(rel):
            aps.append(tie_aware_ap(S[q, items], rel))
    return float(np.mean(aps)) if aps else np.nan


def _sets(prof, gperm=None):
    L = prof.lists
    G = L.gm_ptr.size - 1
    gperm = range(G) if gperm is None else gperm
    by_group = [tuple(prof.labels[i] for i in L.grp_lab[L.grp_ptr[o]:L.grp_ptr[o + 1]]) for o in gperm]
    return [by_group[g] for g in L.group]


def _copairs_queries(df, differ):
    from copairs.map import multilabel

    meta = df[["pert", "plate"]].copy()
    meta["target"] = [t.split("|") if isinstance(t, str) else [] for t in df["target"]]
    feats = df[[c for c in df.columns if c.startswith("f")]].to_numpy()
    res = multilabel.average_precision(meta, feats, pos_sameby=["target"], pos_diffby=differ, neg_sameby=[],
                                       neg_diffby=["target"], multilabel_col="target", progress_bar=False)
    return res.set_index(["pert", "target"])


def test_unlabelled_profile_is_a_negative_as_in_copairs():
    """The issue's case: two profiles labelled A and one without a label. Dropping it left A's queries
    without a negative; as a negative it ranks between them, and copairs gives the same APs."""
    pytest.importorskip("copairs")
    X = np.array([[1.0, 0.0], [0.6, 0.8], [0.9, 0.3], [-1.0, 0.1], [-0.8, -0.5]])
    df = pd.DataFrame(X, columns=["f0", "f1"])
    df.insert(0, "plate", "P0")
    df.insert(0, "target", ["A", "A", None, "B", "B"])
    df.insert(0, "pert", [f"p{i}" for i in range(5)])
    res = score_consistency(df, "pert", "target", permutations=9)
    q = res.queries.set_index(["pert", "target"])
    ref = _copairs_queries(df, [])
    assert q.loc[("p0", "A"), "ap"] == 0.5 == ref.loc[("p0", "A"), "average_precision"]
    for key in ref.index:
        assert q.loc[key, "ap"] == pytest.approx(ref.loc[key, "average_precision"], abs=1e-15)
        assert q.loc[key, "n"] == ref.loc[key, "n_total_pairs"] - ref.loc[key, "n_pos_pairs"]
    assert res.settings["unlabelled"] == 1 and "p2" not in set(res.queries["pert"])


@pytest.mark.parametrize("seed, differ, similarity", [(0, [], "cosine"), (1, ["plate"], "cosine"),
                                                     (2, ["plate"], "cosine"), (3, ["plate", "pert"], "cosine")])
def test_equal_to_copairs_multilabel(seed, differ, similarity):
    """Per query (profile, label): AP, positives and negatives equal copairs's multilabel AP with
    pos_sameby = neg_diffby = [annotation], pos_diffby = ``differ``, unlabelled rows included. copairs
    has no row for a query without a positive; apnull keeps it with AP NaN."""
    pytest.importorskip("copairs")
    df = _table(45, ["A", "B", "A|B", "C", "", "A|C", "B", "D|C", ""], plates=4, seed=seed)
    res = score_consistency(df, "pert", "target", label_sep="|", aggregate="none", permutations=9,
                            positives_differ_by=differ or None, similarity=similarity, query_pvalues=False)
    ours = res.queries.set_index(["pert", "target"])
    ref = _copairs_queries(df, differ)
    kept = ours[ours["m"] > 0]
    assert sorted(kept.index) == sorted(ref.index)
    joined = kept.join(ref)
    np.testing.assert_allclose(joined["ap"], joined["average_precision"], rtol=0, atol=1e-15)
    assert (joined["m"] == joined["n_pos_pairs"]).all()
    assert (joined["n"] == joined["n_total_pairs"] - joined["n_pos_pairs"]).all()
    assert ours.loc[ours["m"] == 0, "ap"].isna().all()


@FAST
@given(seed=st.integers(0, 10**6), plates=st.integers(1, 4), unlabelled=st.integers(0, 3))
def test_observed_equals_brute_force(seed, plates, unlabelled):
    """Observed label mAPs with the pair rule and unlabelled profiles equal the definition."""
    cells = ["A", "B", "A|B", "C", "A|C"] + [""] * unlabelled
    df = _table(12, cells, plates=plates, seed=seed)
    prof = prepare_profiles(df, "pert", "target", "|", "median", None, None, None, "cosine", 0.05,
                            positives_differ_by="plate")
    brute = {label: _brute(prof.X, _sets(prof), prof.lists.codes, label) for label in prof.labels}
    try:
        res = score_consistency(df, "pert", "target", label_sep="|", permutations=9, positives_differ_by="plate",
                                query_pvalues=False)
    except ValueError as exc:  # every label without a query keeping a positive (one plate, say)
        assert "nothing to score" in str(exc) and all(np.isnan(v) for v in brute.values())
        return
    for label, mAP in zip(res.labels["target"], res.labels["mAP"]):
        assert mAP == pytest.approx(brute[label], abs=1e-12)
    assert set(res.skipped["target"]) == {k for k, v in brute.items() if np.isnan(v)}


def test_every_labelling_with_the_rule_and_an_unlabelled_profile():
    """6 perturbations (one without a label) on 2 plates: under each of the 720 labellings (the empty set
    moves too) the kernel's label mAP equals brute force with the pair rule applied to the relabelled
    screen, so drawing every labelling gives the exact permutation p-value."""
    df = _table(6, ["A", "A|B", "B", "", "A", "B"], plates=2, seed=4)
    prof = prepare_profiles(df, "pert", "target", "|", "median", None, None, None, "cosine", 0.05,
                            positives_differ_by=["plate"])
    assert prof.unlabelled == ["p03"] and prof.lists.codes.shape == (6, 1)
    rows = K.similarity_rows(prof.X, prof.kind)
    perms = np.array(list(itertools.permutations(range(6))), dtype=np.int64)
    for t, label in enumerate(prof.labels):
        null = label_null(t, 0, 0, rows, prof.lists, perms)
        brute = np.array([_brute(prof.X, _sets(prof, perm), prof.lists.codes, label) for perm in perms])
        np.testing.assert_allclose(null, brute, atol=1e-12)  # NaN where no query keeps a positive, in both
        obs = _brute(prof.X, _sets(prof), prof.lists.codes, label)
        exact = np.mean(np.nan_to_num(brute, nan=-1.0) >= obs - 1e-12)
        assert permutation_pvalue(null, obs, exact=True) == pytest.approx(exact)


def test_replicates_are_not_positives_of_their_siblings():
    """aggregate="none" with the perturbation column as the pair rule: a replicate's positives are the
    other perturbations' replicates carrying the label (m shrinks by the siblings), as copairs does
    with pos_diffby=[perturbation]; the null still moves whole perturbations."""
    df = _table(10, ["A", "B", "A", "C", "B"], reps=3, seed=6)
    plain = score_consistency(df, "pert", "target", aggregate="none", permutations=19, seed=1)
    rule = score_consistency(df, "pert", "target", aggregate="none", permutations=19, seed=1,
                             positives_differ_by="pert")
    a = plain.queries[plain.queries["target"] == "A"]
    b = rule.queries[rule.queries["target"] == "A"]
    assert (a["m"] == 3 * 4 - 1).all() and (b["m"] == 3 * 4 - 3).all()
    assert (a["n"] == b["n"]).all()
    assert not np.allclose(plain.labels["mAP"], rule.labels["mAP"])
    assert rule.settings["positives_differ_by"] == "pert"


def test_a_label_left_without_positives_is_skipped_with_its_reason():
    df = _table(6, ["A", "B", "A", "B", "C", "C"], plates=1, seed=2)  # one plate: every A shares it
    res = score_consistency(df.assign(plate=["x", "y", "x", "z", "x", "z"]), "pert", "target", permutations=9,
                            positives_differ_by="plate")
    reasons = dict(zip(res.skipped["target"], res.skipped["reason"]))
    assert "no query keeps a positive" in reasons["A"] and "B" not in reasons


@pytest.mark.parametrize("kw, message", [
    (dict(positives_differ_by="plate"), "several values for perturbation"),  # aggregated, plates differ
    (dict(positives_differ_by="target"), "is the annotation column"),
    (dict(positives_differ_by="plat"), "did you mean 'plate'"),
    (dict(positives_differ_by=["plate", "plate"]), "lists a column twice"),
])
def test_pair_rule_errors(kw, message):
    df = _table(8, ["A", "B"], plates=3, reps=2, seed=1)
    with pytest.raises(ValueError, match=message):
        score_consistency(df, "pert", "target", permutations=9, **kw)


def test_unlabelled_rows_beside_labelled_rows_take_the_label():
    df = _table(8, ["A", "B"], reps=2, seed=3)
    df.loc[1, "target"] = None  # p00's second replicate
    res = score_consistency(df, "pert", "target", permutations=9, aggregate="none")
    assert any("1 row with an empty annotation" in w and "(data row 2 (" in w for w in res.warnings)
    assert res.settings["unlabelled"] == 0 and len(res.queries[res.queries["pert"] == "p00"]) == 2


def test_valid_on_random_labels_of_real_profiles_with_unlabelled_and_the_rule():
    """True nulls on real profiles (digits images): 30% of the perturbations without a label, the rest
    with random labels, random plates as the pair rule. P(p <= a) <= a within the binomial band."""
    from scipy.stats import binom

    from apnull.score.example import load_digits_arrays

    X, y = load_digits_arrays()
    ps = []
    for s in range(10):
        rng = np.random.default_rng(500 + s)
        pick = rng.choice(len(X), 160, replace=False)
        cells = [None if rng.random() < 0.3 else f"T{int(rng.integers(30)):02d}" for _ in pick]
        df = pd.DataFrame(X[pick].astype(float), columns=[f"px{j:02d}" for j in range(X.shape[1])])
        df.insert(0, "plate", [f"P{int(rng.integers(4))}" for _ in pick])
        df.insert(0, "target", cells)
        df.insert(0, "pert", [f"p{i:03d}" for i in range(len(pick))])
        res = score_consistency(df, "pert", "target", permutations=99, seed=s, positives_differ_by="plate",
                                query_pvalues=False)
        ps.extend(res.labels["p_value"].tolist())
    ps = np.array(ps)
    assert ps.size > 200
    for a in (0.05, 0.2):
        assert int((ps <= a).sum()) <= binom.ppf(0.999, ps.size, a), (a, ps.size)
