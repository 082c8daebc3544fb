"""apnull.metrics against the definitions in DESIGN.md, hand-worked examples, scikit-learn and
hypothesis properties."""

from __future__ import annotations

import math
from fractions import Fraction

import numpy as np
import pandas as pd
import pytest
from hypothesis import HealthCheck, assume, given, settings
from hypothesis import strategies as st
from sklearn.metrics import average_precision_score, ndcg_score, roc_auc_score

import apnull
from apnull import metrics as mt
from reference import ap_fraction

# ------------------------------------------------------------------------------------------------
# The precision-recall example: ranking x, a, y, b, c, z with a, b, c relevant.
# The notes' printed table repeats rank 5 and shifts the last rows; recomputed by hand:
#   rank item rel  precision  recall
#    1    x    0     0/1       0/3
#    2    a    1     1/2       1/3
#    3    y    0     1/3       1/3
#    4    b    1     2/4       2/3
#    5    c    1     3/5       3/3
#    6    z    0     3/6       3/3
# AP = (1/3)(1/2 + 2/4 + 3/5) = 8/15.
# ------------------------------------------------------------------------------------------------
SEED1_ITEMS = ["x", "a", "y", "b", "c", "z"]
SEED1_REL = [0, 1, 0, 1, 1, 0]
SEED1_PREC = [Fraction(0, 1), Fraction(1, 2), Fraction(1, 3), Fraction(2, 4), Fraction(3, 5), Fraction(3, 6)]
SEED1_REC = [Fraction(0, 3), Fraction(1, 3), Fraction(1, 3), Fraction(2, 3), Fraction(3, 3), Fraction(3, 3)]


def test_precision_recall_example_ranking_table():
    table = apnull.ranking_table(SEED1_REL, items=SEED1_ITEMS)
    assert list(table.columns) == ["rank", "item", "relevant", "precision", "recall"]
    assert table["rank"].tolist() == [1, 2, 3, 4, 5, 6]
    assert table["item"].tolist() == SEED1_ITEMS
    assert table["relevant"].tolist() == [False, True, False, True, True, False]
    assert table["relevant"].dtype == bool
    np.testing.assert_allclose(table["precision"], [float(p) for p in SEED1_PREC], rtol=0, atol=1e-15)
    np.testing.assert_allclose(table["recall"], [float(r) for r in SEED1_REC], rtol=0, atol=1e-15)
    # each row agrees with the scalar functions
    for k in range(1, 7):
        assert table["precision"].iloc[k - 1] == pytest.approx(apnull.precision_at_k(SEED1_REL, k), abs=1e-15)
        assert table["recall"].iloc[k - 1] == pytest.approx(apnull.recall_at_k(SEED1_REL, k), abs=1e-15)


def test_precision_recall_example_metrics():
    rel = SEED1_REL
    assert apnull.average_precision(rel) == pytest.approx(8 / 15, abs=1e-15)
    assert ap_fraction([2, 4, 5]) == Fraction(8, 15)
    # AP is the mean of precision at the relevant ranks
    assert apnull.average_precision(rel) == pytest.approx(float((SEED1_PREC[1] + SEED1_PREC[3] + SEED1_PREC[4]) / 3))
    assert apnull.r_precision(rel) == pytest.approx(1 / 3)
    assert apnull.precision_at_k(rel, 4) == pytest.approx(0.5)
    assert apnull.recall_at_k(rel, 4) == pytest.approx(2 / 3)
    # F1@4 = 2 * (1/2)(2/3) / (1/2 + 2/3) = 4/7
    assert mt.f1_at_k(rel, 4) == pytest.approx(4 / 7)
    assert mt.f1_at_k(rel, 1) == 0.0  # P = R = 0
    # AP@k = (1/min(m, k)) sum_{i<=k} rel_i P@i
    assert mt.average_precision_at_k(rel, 1) == 0.0
    assert mt.average_precision_at_k(rel, 2) == pytest.approx((1 / 2) / 2)
    assert mt.average_precision_at_k(rel, 4) == pytest.approx((1 / 2 + 2 / 4) / 3)
    assert mt.average_precision_at_k(rel, 6) == pytest.approx(8 / 15)
    # NDCG@3: DCG = 1/log2(3); ideal = 1 + 1/log2(3) + 1/log2(4)
    assert mt.ndcg_at_k(rel, 3) == pytest.approx((1 / math.log2(3)) / (1 + 1 / math.log2(3) + 0.5))
    # NDCG@6: hits at ranks 2, 4, 5
    dcg = 1 / math.log2(3) + 1 / math.log2(5) + 1 / math.log2(6)
    assert mt.ndcg_at_k(rel, 6) == pytest.approx(dcg / (1 + 1 / math.log2(3) + 0.5))
    # AUC: a beats y, z; b beats z; c beats z -> 4 of 3*3 pairs
    assert mt.auc(rel) == pytest.approx(4 / 9)
    assert mt.reciprocal_rank(rel) == 0.5


# The MAP tutorial: ground truth of two items; printed AP (3 decimals) for item "1" at rank i and item "2" at
# rank j in a list of 10 (the tutorial's double loop). E.g. [1, 0, 2, 0, ...] => 0.833.
SEED2_PRINTED = {
    (1, 2): 1.0, (1, 3): 0.833, (1, 4): 0.75, (1, 5): 0.7, (1, 6): 0.667, (1, 7): 0.643, (1, 8): 0.625,
    (1, 9): 0.611, (1, 10): 0.6, (2, 3): 0.583, (2, 4): 0.5, (2, 5): 0.45, (2, 6): 0.417, (2, 7): 0.393,
    (2, 8): 0.375, (2, 9): 0.361, (2, 10): 0.35, (3, 4): 0.417, (3, 5): 0.367, (3, 6): 0.333, (3, 7): 0.31,
    (3, 8): 0.292, (3, 9): 0.278, (3, 10): 0.267, (4, 5): 0.325, (4, 6): 0.292, (4, 7): 0.268, (4, 8): 0.25,
    (4, 9): 0.236, (4, 10): 0.225, (5, 6): 0.267, (5, 7): 0.243, (5, 8): 0.225, (5, 9): 0.211, (5, 10): 0.2,
    (6, 7): 0.226, (6, 8): 0.208, (6, 9): 0.194, (6, 10): 0.183, (7, 8): 0.196, (7, 9): 0.183,
    (7, 10): 0.171, (8, 9): 0.174, (8, 10): 0.163, (9, 10): 0.156,
}


@pytest.mark.parametrize("ranks, printed", sorted(SEED2_PRINTED.items()))
def test_map_tutorial_two_item_examples(ranks, printed):
    i, j = ranks
    rel = [0] * 10
    rel[i - 1] = rel[j - 1] = 1
    ap = apnull.average_precision(rel)
    assert ap == pytest.approx(float(ap_fraction([i, j])), abs=1e-15)
    assert abs(ap - printed) <= 0.0005 + 1e-12


def test_map_tutorial_verbose_example():
    # [0, 1, 0, 2, 0, ...]: precision 0.5 at rank 2 and at rank 4 -> (0.5 + 0.5) / 2
    assert apnull.average_precision([0, 1, 0, 1, 0, 0, 0, 0, 0, 0]) == 0.5
    # [0, ..., 0, 1, 2]: (1/9 + 2/10) / 2 = 0.15555...
    assert apnull.average_precision([0] * 8 + [1, 1]) == pytest.approx(0.15555555555555556, abs=1e-15)


# ------------------------------------------------------------------------------------------------
# Definitions, exhaustively on small rankings
# ------------------------------------------------------------------------------------------------
def _all_rankings(max_len=7):
    for size in range(1, max_len + 1):
        for bits in range(2**size):
            yield [(bits >> i) & 1 for i in range(size)]


def _def_ap(rel):
    ranks = [r for r, x in enumerate(rel, 1) if x]
    return ap_fraction(ranks)


def test_definitions_exhaustive_small():
    for rel in _all_rankings(7):
        size = len(rel)
        m = sum(rel)
        for k in range(1, size + 1):
            hits = sum(rel[:k])
            assert apnull.precision_at_k(rel, k) == pytest.approx(hits / k, abs=1e-15)
            if m:
                assert apnull.recall_at_k(rel, k) == pytest.approx(hits / m, abs=1e-15)
                prec = [sum(rel[:i]) / i for i in range(1, k + 1)]
                apk = sum(p for p, x in zip(prec, rel[:k]) if x) / min(m, k)
                assert mt.average_precision_at_k(rel, k) == pytest.approx(apk, abs=1e-14)
                dcg = sum(x / math.log2(i + 1) for i, x in enumerate(rel[:k], 1))
                idcg = sum(1 / math.log2(i + 1) for i in range(1, min(m, k) + 1))
                assert mt.ndcg_at_k(rel, k) == pytest.approx(dcg / idcg, abs=1e-14)
                p, r = hits / k, hits / m
                f1 = 0.0 if p + r == 0 else 2 * p * r / (p + r)
                assert mt.f1_at_k(rel, k) == pytest.approx(f1, abs=1e-14)
        if not m:
            continue
        assert apnull.average_precision(rel) == pytest.approx(float(_def_ap(rel)), abs=1e-15)
        assert apnull.r_precision(rel) == pytest.approx(sum(rel[:m]) / m, abs=1e-15)
        assert mt.reciprocal_rank(rel) == pytest.approx(1 / (rel.index(1) + 1), abs=1e-15)
        n = size - m
        if n:
            pairs = sum(1 for a in range(size) for b in range(size) if rel[a] and not rel[b] and a < b)
            assert mt.auc(rel) == pytest.approx(pairs / (m * n), abs=1e-15)


def test_accepts_bool_int_float_and_numpy_labels():
    expected = 8 / 15
    for rel in (SEED1_REL, [bool(x) for x in SEED1_REL], [float(x) for x in SEED1_REL],
                np.array(SEED1_REL), np.array(SEED1_REL, dtype=bool), np.array(SEED1_REL, dtype=np.uint8),
                tuple(SEED1_REL)):
        assert apnull.average_precision(rel) == pytest.approx(expected)


def test_input_not_modified():
    rel = np.array(SEED1_REL, dtype=bool)
    before = rel.copy()
    apnull.ranking_table(rel)
    apnull.average_precision(rel)
    np.testing.assert_array_equal(rel, before)


# ------------------------------------------------------------------------------------------------
# scikit-learn
# ------------------------------------------------------------------------------------------------
def _random_rankings(rng, count, max_len=40, need_negative=False):
    out = []
    while len(out) < count:
        size = int(rng.integers(2 if need_negative else 1, max_len + 1))
        rel = rng.random(size) < rng.uniform(0.05, 0.9)
        if rel.sum() == 0 or (need_negative and rel.all()):
            continue
        out.append(rel)
    return out


def test_ap_matches_sklearn_without_ties():
    rng = np.random.default_rng(20240101)
    for rel in _random_rankings(rng, 150):
        scores = -np.arange(rel.size, dtype=float)  # distinct, decreasing with rank
        ours = apnull.average_precision(rel)
        theirs = average_precision_score(rel.astype(int), scores) if rel.size > 1 else 1.0
        assert ours == pytest.approx(theirs, abs=1e-12)
        # shuffled presentation: sklearn sorts by score, we are given rank order
        perm = rng.permutation(rel.size)
        assert average_precision_score(rel[perm].astype(int), scores[perm]) == pytest.approx(ours, abs=1e-12)


def test_auc_matches_sklearn():
    rng = np.random.default_rng(7)
    for rel in _random_rankings(rng, 150, need_negative=True):
        scores = -np.arange(rel.size, dtype=float)
        assert mt.auc(rel) == pytest.approx(roc_auc_score(rel.astype(int), scores), abs=1e-12)


def test_ndcg_at_k_matches_sklearn():
    """sklearn's ndcg_score with binary relevance, distinct scores and k is our NDCG@k: both use
    gain rel_i, discount 1/log2(i + 1) and the ideal DCG of the true labels sorted, cut at k."""
    rng = np.random.default_rng(11)
    for rel in _random_rankings(rng, 80, max_len=30):
        if rel.size < 2:
            continue
        scores = -np.arange(rel.size, dtype=float)
        for k in sorted({1, 2, 3, int(rel.sum()), rel.size // 2 or 1, rel.size} & set(range(1, rel.size + 1))):
            ours = mt.ndcg_at_k(rel, k)
            theirs = ndcg_score(rel.astype(float)[None, :], scores[None, :], k=k)
            assert ours == pytest.approx(theirs, abs=1e-12), (rel.astype(int).tolist(), k)


# ------------------------------------------------------------------------------------------------
# ranking_table
# ------------------------------------------------------------------------------------------------
def test_ranking_table_defaults_and_types():
    table = apnull.ranking_table([True, False, True])
    assert isinstance(table, pd.DataFrame)
    assert list(table.columns) == ["rank", "item", "relevant", "precision", "recall"]
    assert table["item"].tolist() == ["item 1", "item 2", "item 3"]
    assert table["rank"].tolist() == [1, 2, 3]
    np.testing.assert_allclose(table["precision"], [1, 0.5, 2 / 3])
    np.testing.assert_allclose(table["recall"], [0.5, 0.5, 1])
    # last row: precision = m / len, recall = 1
    assert table["recall"].iloc[-1] == 1.0


def test_ranking_table_without_relevant_items_has_nan_recall():
    table = apnull.ranking_table([0, 0, 0])
    assert table["precision"].tolist() == [0, 0, 0]
    assert table["recall"].isna().all()


def test_ranking_table_item_names_checked():
    table = apnull.ranking_table([1, 0], items=[10, 20])
    assert table["item"].tolist() == ["10", "20"]
    with pytest.raises(ValueError, match="item names"):
        apnull.ranking_table([1, 0, 1], items=["a", "b"])


# ------------------------------------------------------------------------------------------------
# Validation
# ------------------------------------------------------------------------------------------------
NEEDS_RELEVANT = [
    ("average_precision", lambda r: mt.average_precision(r)),
    ("recall_at_k", lambda r: mt.recall_at_k(r, 1)),
    ("r_precision", lambda r: mt.r_precision(r)),
    ("average_precision_at_k", lambda r: mt.average_precision_at_k(r, 1)),
    ("f1_at_k", lambda r: mt.f1_at_k(r, 1)),
    ("ndcg_at_k", lambda r: mt.ndcg_at_k(r, 1)),
    ("auc", lambda r: mt.auc(r)),
    ("reciprocal_rank", lambda r: mt.reciprocal_rank(r)),
]
ALL_FUNCS = NEEDS_RELEVANT + [
    ("precision_at_k", lambda r: mt.precision_at_k(r, 1)),
    ("ranking_table", lambda r: mt.ranking_table(r)),
]


@pytest.mark.parametrize("name, func", ALL_FUNCS, ids=[n for n, _ in ALL_FUNCS])
def test_empty_ranking_rejected(name, func):
    with pytest.raises(ValueError, match="empty"):
        func([])


@pytest.mark.parametrize("name, func", NEEDS_RELEVANT, ids=[n for n, _ in NEEDS_RELEVANT])
def test_no_relevant_item_rejected(name, func):
    with pytest.raises(ValueError, match="relevant"):
        func([0, 0, 0])


def test_precision_without_relevant_is_zero():
    assert mt.precision_at_k([0, 0, 0], 2) == 0.0


def test_auc_needs_a_negative():
    with pytest.raises(ValueError, match="non-relevant"):
        mt.auc([1, 1, 1])


K_FUNCS = [
    ("precision_at_k", mt.precision_at_k),
    ("recall_at_k", mt.recall_at_k),
    ("average_precision_at_k", mt.average_precision_at_k),
    ("f1_at_k", mt.f1_at_k),
    ("ndcg_at_k", mt.ndcg_at_k),
]


@pytest.mark.parametrize("name, func", K_FUNCS, ids=[n for n, _ in K_FUNCS])
@pytest.mark.parametrize("k, words", [(0, "at least 1"), (-1, "at least 1"), (5, "at most 4"),
                                      (2.5, "whole number"), ("2", "whole number"), (True, "whole number"),
                                      (float("nan"), "whole number")])
def test_k_out_of_range_rejected(name, func, k, words):
    with pytest.raises(ValueError, match="k") as info:
        func([1, 0, 1, 0], k)
    assert words in str(info.value)


@pytest.mark.parametrize("name, func", K_FUNCS, ids=[n for n, _ in K_FUNCS])
def test_integral_k_accepted(name, func):
    assert func([1, 0, 1, 0], 2.0) == func([1, 0, 1, 0], 2) == func([1, 0, 1, 0], np.int64(2))


@pytest.mark.parametrize("labels", [[1, 2, 0], [0.5, 1], [1, -1], ["a", "b"], ["1", "0"], ["yes", "no"],
                                    [1.0, float("nan")], [None, 1]])
def test_non_boolean_labels_rejected(labels):
    with pytest.raises(ValueError, match="0/1 or True/False"):
        apnull.average_precision(labels)
    with pytest.raises(ValueError, match="0/1 or True/False"):
        apnull.ranking_table(labels)


def test_two_dimensional_ranking_rejected():
    with pytest.raises(ValueError, match="flat list"):
        apnull.average_precision([[1, 0], [0, 1]])


# ------------------------------------------------------------------------------------------------
# Hypothesis properties
# ------------------------------------------------------------------------------------------------
def _with_relevant(draw):
    rel, where = draw
    rel = list(rel)
    rel[where % len(rel)] = True  # at least one relevant item, anywhere
    return rel


rankings = st.tuples(st.lists(st.booleans(), min_size=1, max_size=40), st.integers(0, 39)).map(_with_relevant)
mixed_rankings = st.tuples(rankings, st.integers(0, 40)).map(
    lambda t: t[0] + [False] if all(t[0]) else t[0])


@settings(max_examples=120, deadline=None)
@given(rel=rankings, data=st.data())
def test_metric_ranges(rel, data):
    k = data.draw(st.integers(1, len(rel)))
    values = [
        apnull.average_precision(rel), apnull.precision_at_k(rel, k), apnull.recall_at_k(rel, k),
        apnull.r_precision(rel), mt.average_precision_at_k(rel, k), mt.f1_at_k(rel, k),
        mt.ndcg_at_k(rel, k), mt.reciprocal_rank(rel),
    ]
    if not all(rel):
        values.append(mt.auc(rel))
    for v in values:
        assert 0.0 <= v <= 1.0 + 1e-12
    assert apnull.average_precision(rel) > 0  # at least 1/N


@settings(max_examples=120, deadline=None)
@given(rel=mixed_rankings, data=st.data())
def test_moving_a_relevant_item_up_never_lowers_metrics(rel, data):
    rel = list(rel)
    pos = [i for i, x in enumerate(rel) if x]
    neg = [i for i, x in enumerate(rel) if not x]
    pairs = [(j, i) for i in pos for j in neg if j < i]  # irrelevant j above relevant i
    assume(pairs)
    j, i = data.draw(st.sampled_from(pairs))
    moved = rel.copy()
    moved[j], moved[i] = True, False
    k = data.draw(st.integers(1, len(rel)))
    tol = 1e-12
    assert apnull.average_precision(moved) >= apnull.average_precision(rel) - tol
    assert mt.ndcg_at_k(moved, k) >= mt.ndcg_at_k(rel, k) - tol
    assert mt.average_precision_at_k(moved, k) >= mt.average_precision_at_k(rel, k) - tol
    assert mt.auc(moved) > mt.auc(rel)  # a swap across a negative strictly gains pairs
    assert mt.reciprocal_rank(moved) >= mt.reciprocal_rank(rel)
    assert apnull.precision_at_k(moved, k) >= apnull.precision_at_k(rel, k)
    # AP strictly increases: the moved item's precision term grows
    assert apnull.average_precision(moved) > apnull.average_precision(rel)


@settings(max_examples=120, deadline=None)
@given(rel=rankings)
def test_ap_is_one_iff_relevant_items_on_top(rel):
    m = sum(rel)
    on_top = all(rel[:m])
    ap = apnull.average_precision(rel)
    assert (ap == 1.0) == on_top
    if not on_top:
        assert ap < 1.0 - 1e-12


@settings(max_examples=120, deadline=None)
@given(rel=rankings)
def test_ap_at_full_length_is_ap(rel):
    assert mt.average_precision_at_k(rel, len(rel)) == pytest.approx(apnull.average_precision(rel), abs=1e-12)
    assert apnull.average_precision(rel) == pytest.approx(float(_def_ap(rel)), abs=1e-12)


@settings(max_examples=120, deadline=None)
@given(rel=rankings)
def test_r_precision_is_precision_and_recall_at_m(rel):
    m = sum(rel)
    rp = apnull.r_precision(rel)
    assert rp == apnull.precision_at_k(rel, m) == apnull.recall_at_k(rel, m)
    assert mt.f1_at_k(rel, m) == pytest.approx(rp, abs=1e-12)


@settings(max_examples=80, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(rel=rankings)
def test_ranking_table_matches_scalars(rel):
    table = apnull.ranking_table(rel)
    assert len(table) == len(rel)
    for k in (1, len(rel), (len(rel) + 1) // 2):
        assert table["precision"].iloc[k - 1] == pytest.approx(apnull.precision_at_k(rel, k), abs=1e-15)
        assert table["recall"].iloc[k - 1] == pytest.approx(apnull.recall_at_k(rel, k), abs=1e-15)
    # AP = mean of precision over relevant rows
    assert table.loc[table["relevant"], "precision"].mean() == pytest.approx(apnull.average_precision(rel),
                                                                             abs=1e-12)


def test_relevance_from_text_reads_the_words_of_a_table_column():
    """The command line's --relevant reads the same words as a file's relevant column (one table of words)."""
    from apnull.metrics import RELEVANCE_TEXT, as_relevance, relevance_from_text

    assert relevance_from_text("0,1 TRUE, false 1.0").tolist() == [False, True, True, False, True]
    words = list(RELEVANCE_TEXT)
    assert relevance_from_text(" ".join(words)).tolist() == as_relevance(words, column="rel").tolist()
    with pytest.raises(ValueError, match="label 2 is 'y'"):
        relevance_from_text("1 y 0", "--relevant")
    with pytest.raises(ValueError, match="empty"):
        relevance_from_text(" , ")
