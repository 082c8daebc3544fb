"""copairs's own tests (its tests/ folder), as the cases a copairs user relies on, held for apnull.

Each test takes the inputs of a copairs test (AP values, per-query counts, pair rules, multilabel,
missing values, similarities, the null, normalization) and checks apnull on them: against scikit-learn
where copairs's test does, and against copairs 0.5.5 itself where apnull computes the same quantity.
Where apnull means to differ (tied similarities, a row with an empty label, the clip of normalized AP),
the test pins both answers.
"""

from __future__ import annotations

import numpy as np
import pandas as pd
import pytest
from sklearn.metrics import average_precision_score

import apnull
from apnull.score import score_consistency, score_profiles, score_rankings, tie_aware_ap
from apnull.score.kernels.similarity import sim
from apnull.score.table.matrix import scale_in_place
from apnull.score.table.screen import KINDS, SCORE_SIMILARITIES

copairs = pytest.importorskip("copairs")
from copairs import compute  # noqa: E402
from copairs.map import average_precision as copairs_ap  # noqa: E402
from copairs.map.multilabel import average_precision as copairs_multilabel_ap  # noqa: E402
from copairs.map.normalization import expected_ap as copairs_expected_ap, normalize_ap  # noqa: E402
from copairs.matching import UnpairedException  # noqa: E402

SEED = 0


def random_frame(length, vocab, rng):
    """copairs's ``simulate_random_dframe``: columns of random words, duplicates dropped."""
    df = pd.DataFrame({c: [f"{c}{v}" for v in rng.integers(1, size + 1, size=length)] for c, size in vocab.items()})
    return df.sort_values(list(vocab)).drop_duplicates().reset_index(drop=True)


def test_ap_equals_scikit_learn():
    """copairs ``test_compute_ap``: 100 random rankings of 5 positives and 6 negatives."""
    rng = np.random.default_rng(SEED)
    y = np.r_[np.ones(5, bool), np.zeros(6, bool)]
    for _ in range(100):
        scores = rng.uniform(size=11)
        want = average_precision_score(y, scores)
        assert apnull.average_precision(y[np.argsort(-scores)]) == pytest.approx(want, abs=1e-15)
        assert tie_aware_ap(scores, y) == pytest.approx(want, abs=1e-15)


def test_per_query_ap_and_counts():
    """copairs ``test_compute_ap_contiguous``: queries of 2-8 positives and 10-19 negatives; AP and
    (m, m + n) per query, from a long ranking table, against scikit-learn and copairs's ``ap_contiguous``."""
    rng = np.random.default_rng(SEED)
    rows, want, rel_lists, counts = [], {}, [], []
    for q in range(30):
        m, n = int(rng.integers(2, 9)), int(rng.integers(10, 20))
        y = np.r_[np.ones(m, int), np.zeros(n, int)]
        s = rng.uniform(size=m + n)
        want[f"q{q:02d}"] = (average_precision_score(y, s), m, n)
        rows += [(f"q{q:02d}", f"i{i}", s[i], y[i]) for i in range(m + n)]
        rel_lists.append(y[np.argsort(-s)])
        counts.append(m + n)
    res = score_rankings(pd.DataFrame(rows, columns=["query", "item", "score", "relevant"])).set_index("query")
    cp_ap, cp_conf = compute.ap_contiguous(np.concatenate(rel_lists), np.asarray(counts))
    for i, (q, (ap, m, n)) in enumerate(sorted(want.items())):
        assert res.loc[q, "ap"] == pytest.approx(ap, abs=1e-12) == pytest.approx(cp_ap[i], abs=1e-12)
        assert (res.loc[q, "m"], res.loc[q, "m"] + res.loc[q, "n"]) == (m, m + n) == tuple(cp_conf[i])


@pytest.mark.parametrize("stratum", [None, "p"])
def test_pair_rules_against_copairs(stratum):
    """copairs ``test_pipeline``: positives share ``l`` and differ in ``w`` (positives_differ_by);
    negatives differ in ``l`` (negatives="others"), and with neg_sameby=[p] share the plate (stratum)."""
    rng = np.random.default_rng(SEED)
    meta = random_frame(60, {"p": 3, "w": 5, "l": 6}, rng)
    X = rng.uniform(size=(len(meta), 5))
    table = pd.concat([meta, pd.DataFrame(X, columns=[f"f{i}" for i in range(5)])], axis=1)
    res = score_profiles(table, perturbation="l", control=None, stratum=stratum, negatives="others",
                         positives_differ_by="w", features=[f"f{i}" for i in range(5)], permutations=9)
    cp = copairs_ap(meta, X, pos_sameby=["l"], pos_diffby=["w"], neg_sameby=[stratum] if stratum else [],
                    neg_diffby=["l"], progress_bar=False)
    cp = cp[cp["n_pos_pairs"] > 0]
    q = res.queries.set_index("row")
    # copairs leaves a query without negatives in (AP 1 of m + 0); apnull leaves out such replicates
    assert set(q.index) <= set(cp.index)
    cp = cp.loc[q.index]
    assert (q["m"].to_numpy() == cp["n_pos_pairs"].to_numpy()).all()
    assert (q["n"].to_numpy() == (cp["n_total_pairs"] - cp["n_pos_pairs"]).to_numpy()).all()
    assert np.allclose(q["ap"], cp["average_precision"], atol=1e-6)  # copairs's similarities are float32
    assert np.allclose(q["ap_normalized"], cp["normalized_average_precision"], atol=1e-6)


def test_multilabel_against_copairs():
    """copairs multilabel AP (``test_pipeline_multilabel``): a profile's positives share one of its labels,
    its negatives share none; every profile carries one or two labels."""
    rng = np.random.default_rng(SEED)
    n, labels = 30, [f"L{i}" for i in range(5)]
    sets = [sorted(set(rng.choice(labels, size=int(rng.integers(1, 3))).tolist())) for _ in range(n)]
    X = rng.normal(size=(n, 6))
    table = pd.concat([pd.DataFrame({"Metadata_pert": [f"p{i:02d}" for i in range(n)],
                                     "Metadata_target": ["|".join(s) for s in sets]}),
                       pd.DataFrame(X, columns=[f"f{i}" for i in range(6)])], axis=1)
    res = score_consistency(table, "Metadata_pert", "Metadata_target", label_sep="|", permutations=9,
                            query_pvalues=False)
    cp = copairs_multilabel_ap(pd.DataFrame({"Metadata_pert": table["Metadata_pert"], "lab": sets}), X,
                               pos_sameby=["lab"], pos_diffby=[], neg_sameby=[], neg_diffby=["lab"],
                               multilabel_col="lab", progress_bar=False)
    mine = res.queries.set_index(["Metadata_pert", "Metadata_target"]).sort_index()
    theirs = cp.set_index(["Metadata_pert", "lab"]).sort_index()
    assert list(mine.index) == list(theirs.index)
    assert (mine["m"].to_numpy() == theirs["n_pos_pairs"].to_numpy()).all()
    assert (mine["n"].to_numpy() == (theirs["n_total_pairs"] - theirs["n_pos_pairs"]).to_numpy()).all()
    assert np.allclose(mine["ap"], theirs["average_precision"], atol=1e-6)


def test_no_pairs_is_an_error_naming_why():
    """copairs ``test_raise_no_pairs``: every label once, so no positive pair. copairs raises
    UnpairedException; apnull a ValueError naming the reason."""
    rng = np.random.default_rng(SEED)
    meta = random_frame(10, {"p": 3, "w": 3, "l": 10}, rng).drop_duplicates(subset=["l"]).reset_index(drop=True)
    X = rng.uniform(size=(len(meta), 5))
    with pytest.raises(UnpairedException, match="Unable to find positive pairs"):
        copairs_ap(meta, X, ["l"], ["p"], [], ["l"], progress_bar=False)
    table = pd.concat([meta, pd.DataFrame(X, columns=[f"f{i}" for i in range(5)])], axis=1)
    with pytest.raises(ValueError, match="nothing to score.*only one replicate: no positives to rank"):
        score_profiles(table, perturbation="l", control=None, negatives="others", permutations=9)


def test_missing_values():
    """copairs ``test_raise_nan_error``: a NaN feature is an error in both (apnull names the column and
    offers nan= modes); a row with an empty label is an error in copairs and, in apnull, left out and named."""
    rng = np.random.default_rng(SEED)
    meta = random_frame(40, {"p": 5, "w": 3, "l": 4}, rng)
    X = rng.uniform(size=(len(meta), 8))
    table = pd.concat([meta, pd.DataFrame(X, columns=[f"f{i}" for i in range(8)])], axis=1)
    nan_feature = table.copy()
    nan_feature.loc[2, "f2"] = np.nan
    with pytest.raises(ValueError, match="features should not have null values"):
        copairs_ap(meta, nan_feature.filter(regex="^f").to_numpy(), ["l"], ["p"], [], ["l"], progress_bar=False)
    with pytest.raises(ValueError, match="'f2'"):
        score_profiles(nan_feature, perturbation="l", control=None, negatives="others", permutations=9)
    nan_label = table.copy()
    nan_label.loc[1, "l"] = None
    with pytest.raises(ValueError, match="metadata columns should not have null values"):
        copairs_ap(nan_label[["p", "w", "l"]], X, ["l"], ["p"], [], ["l"], progress_bar=False)
    res = score_profiles(nan_label, perturbation="l", control=None, negatives="others", permutations=9)
    assert any("1 row with an empty perturbation value was ignored (data row 2 (counting from 1" in w for w in res.warnings)
    assert 1 not in set(res.queries["row"])


@pytest.mark.parametrize("name", SCORE_SIMILARITIES)
def test_similarities_rank_pairs_as_copairs(name):
    """copairs ``test_compute``'s similarities: apnull ranks by an increasing function of copairs's value
    (minus a distance where copairs has 1 / (1 + distance) or 1 - distance), so every two pairs come in
    the same order wherever copairs's float32 values tell them apart."""
    rng = np.random.default_rng(SEED)
    binary = name in ("jaccard", "hamming")
    X = rng.integers(0, 2, size=(10, 5)).astype(float) if binary else rng.uniform(0, 1, size=(10, 5))
    X[X.sum(axis=1) == 0, 0] = 1.0
    pairs = np.array([(i, j) for i in range(10) for j in range(i + 1, 10)])
    theirs = compute.get_similarity_fn(name, progress_bar=False)(X, pairs, 8).astype(float)
    P = scale_in_place(X.copy(), name)
    mine = np.array([sim(P, i, P, j, KINDS[name]) for i, j in pairs])
    for a in range(len(pairs)):
        apart = np.abs(theirs - theirs[a]) > 1e-6
        assert np.array_equal(np.sign(mine[apart] - mine[a]), np.sign(theirs[apart] - theirs[a]))
        if binary:  # exact values: equal in one, equal in the other
            assert np.array_equal(np.isclose(mine, mine[a], rtol=0, atol=1e-12), ~apart)


def test_identical_profiles_tie():
    """Two replicates and two controls, all four profiles identical: every order of the tied block is
    equally likely, AP = (1 + 1/2 + 1/3) / 3 = 0.611 (the null mean); copairs ranks the tied positive
    first and reports 1.0."""
    x = [1.0, 2.0, 3.0]
    table = pd.DataFrame({"Metadata_pert": ["a", "a", "DMSO", "DMSO"], "f0": x[0], "f1": x[1], "f2": x[2]})
    res = score_profiles(table, perturbation="Metadata_pert", control="DMSO", permutations=9)
    assert res.queries["ap"].tolist() == pytest.approx([11 / 18, 11 / 18], abs=1e-15)
    meta = table[["Metadata_pert"]].assign(ref=[-1, -1, 2, 3])
    cp = copairs_ap(meta, table[["f0", "f1", "f2"]].to_numpy(), ["Metadata_pert", "ref"], [], [],
                    ["Metadata_pert", "ref"], progress_bar=False)
    assert cp["average_precision"].iloc[:2].tolist() == [1.0, 1.0]


def test_normalization_against_copairs():
    """copairs's normalization: E[AP](M, N) exactly as apnull's; the normalized AP equal to copairs's
    where copairs does not clip to [-1, 1], and below -1 where it does (m = 2, n = 1: lowest AP 7/12)."""
    for M in range(1, 12):
        for N in range(0, 30):
            assert apnull.expected_ap(M, N) == pytest.approx(copairs_expected_ap(M, N), rel=1e-13)
    rng = np.random.default_rng(SEED)
    ap = rng.uniform(0.2, 1.0, size=200)
    M, N = rng.integers(1, 10, size=200), rng.integers(1, 40, size=200)
    from apnull.score.results.summary import normalized_ap
    mine, theirs = normalized_ap(ap, M, N), normalize_ap(ap, M, N)
    inside = (mine >= -1) & (mine <= 1)
    assert np.allclose(mine[inside], theirs[inside], rtol=0, atol=1e-12)
    low = normalized_ap(np.array([7 / 12]), np.array([2]), np.array([1]))[0]
    assert low == pytest.approx((7 / 12 - apnull.expected_ap(2, 1)) / (1 - apnull.expected_ap(2, 1)))
    assert low < -1 and normalize_ap(7 / 12, 2, 1) == -1.0


def test_null_of_a_query_is_the_exact_law():
    """copairs's null (``random_ap``: m positives placed uniformly among m + n) follows the exact AP
    law apnull's per-query p-values use: a Kolmogorov distance within the 0.1% critical value."""
    m, n, draws = 5, 15, 20000
    sample = np.sort(compute.random_ap(draws, m, m + n, SEED).astype(float))
    law = apnull.null_distribution(m, n, method="exact")
    emp = np.arange(1, draws + 1) / draws
    dist = np.max(np.abs(emp - law.cdf(sample + 1e-6)))  # copairs's APs are float32
    assert dist < 1.95 / np.sqrt(draws)
    assert np.mean(sample) == pytest.approx(apnull.expected_ap(m, n), abs=5 * np.std(sample) / np.sqrt(draws))
