"""apnull.ranking: the ranking editor's model (text form, presets, reordering, PR step curve,
metric cards, null position) against the definitions, apnull.metrics, enumeration and hypothesis."""

from __future__ import annotations

import itertools
from fractions import Fraction

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from sklearn.metrics import average_precision_score

from apnull import metrics as mt
from apnull.limits import MAX_RANKING_ITEMS
from apnull.views import ranking as rk
from apnull.law import NullDistribution
from apnull.significance import null_distribution, null_position
from reference import ap_fraction, enumerate_ap

rankings = st.lists(st.booleans(), min_size=1, max_size=60)
rankings_with_hit = rankings.filter(any)


# --- the precision-recall example, from the definitions -----------------------------------------------------
def test_precision_recall_example_curve_and_ap():
    rows = list(rk.PR_EXAMPLE)
    assert [item for item, _ in rows] == ["x", "a", "y", "b", "c", "z"]
    rel = rk.relevance(rows)
    curve = rk.pr_curve_points(rel, [item for item, _ in rows])
    # precision@k = hits/k, recall@k = hits/3 (the notes' printed table repeats rank 5)
    assert np.allclose(curve.precision, [0, 1 / 2, 1 / 3, 2 / 4, 3 / 5, 3 / 6])
    assert np.allclose(curve.recall, [0, 1 / 3, 1 / 3, 2 / 3, 1, 1])
    assert curve.ap == pytest.approx((1 / 2 + 2 / 4 + 3 / 5) / 3) == pytest.approx(8 / 15)
    assert curve.m == 3 and curve.n == 3
    assert np.allclose(curve.step_x, [0, 1 / 3, 1 / 3, 2 / 3, 2 / 3, 1])
    assert np.allclose(curve.step_y, [1 / 2, 1 / 2, 2 / 4, 2 / 4, 3 / 5, 3 / 5])
    assert np.trapezoid(curve.step_y, curve.step_x) == pytest.approx(8 / 15, abs=1e-15)


@settings(max_examples=300, deadline=None)
@given(rankings_with_hit)
def test_step_area_is_average_precision(rel):
    curve = rk.pr_curve_points(rel)
    area = np.trapezoid(curve.step_y, curve.step_x)
    assert area == pytest.approx(mt.average_precision(rel), abs=1e-12)
    assert curve.ap == pytest.approx(float(ap_fraction(np.flatnonzero(rel) + 1)), abs=1e-12)
    # steps of width 1/m from recall 0 to 1, x never decreases
    assert curve.step_x[0] == 0 and curve.step_x[-1] == pytest.approx(1)
    assert np.all(np.diff(curve.step_x) >= -1e-15)
    assert len(curve.step_x) == 2 * curve.m
    if not all(rel):  # sklearn needs both classes; distinct scores, top = highest
        scores = -np.arange(len(rel))
        assert area == pytest.approx(average_precision_score(rel, scores), abs=1e-12)


def test_pr_curve_needs_a_relevant_item_and_matching_names():
    with pytest.raises(ValueError, match="at least one relevant"):
        rk.pr_curve_points([0, 0, 0])
    with pytest.raises(ValueError, match="empty"):
        rk.pr_curve_points([])
    with pytest.raises(ValueError, match="item names"):
        rk.pr_curve_points([1, 0], ["a"])


# --- metric cards ---------------------------------------------------------------------------------
@settings(max_examples=200, deadline=None)
@given(rankings_with_hit, st.integers(min_value=1, max_value=60))
def test_metric_cards_equal_the_metrics_module(rel, k):
    k = min(k, len(rel))
    values = rk.metric_values(rel, k)
    assert list(values) == list(rk.METRICS)
    assert values["ap"] == mt.average_precision(rel)
    assert values["r_precision"] == mt.r_precision(rel)
    assert values["rr"] == mt.reciprocal_rank(rel)
    assert values["precision_at_k"] == mt.precision_at_k(rel, k)
    assert values["recall_at_k"] == mt.recall_at_k(rel, k)
    assert values["f1_at_k"] == mt.f1_at_k(rel, k)
    assert values["ap_at_k"] == mt.average_precision_at_k(rel, k)
    assert values["ndcg_at_k"] == mt.ndcg_at_k(rel, k)
    if all(rel):
        assert values["auc"] is None
    else:
        assert values["auc"] == mt.auc(rel)


def test_metric_cards_undefined_values_say_why():
    cards = {c.key: c for c in rk.metric_cards([0, 0, 0], 2)}
    assert cards["precision_at_k"].value == 0.0 and cards["precision_at_k"].reason is None
    for key in ("ap", "r_precision", "auc", "rr", "recall_at_k", "f1_at_k", "ap_at_k", "ndcg_at_k"):
        assert cards[key].value is None
        assert "relevant" in cards[key].reason
    cards = {c.key: c for c in rk.metric_cards([1, 1], 1)}
    assert cards["auc"].value is None and "non-relevant" in cards["auc"].reason
    cards = {c.key: c for c in rk.metric_cards([1, 0, 1], 4)}  # k past the end
    assert cards["ap"].value == pytest.approx((1 + 2 / 3) / 2)
    for key in ("precision_at_k", "recall_at_k", "f1_at_k", "ap_at_k", "ndcg_at_k"):
        assert cards[key].value is None and "at most 3" in cards[key].reason


def test_precision_recall_example_metric_values_by_hand():
    v = rk.metric_values(rk.relevance(rk.PR_EXAMPLE), 3)
    assert v["ap"] == pytest.approx(8 / 15)
    assert v["r_precision"] == pytest.approx(1 / 3)           # top 3 = x, a, y
    assert v["auc"] == pytest.approx(4 / 9)                   # a beats y, z; b and c beat z
    assert v["rr"] == pytest.approx(1 / 2)
    assert v["precision_at_k"] == pytest.approx(1 / 3)
    assert v["recall_at_k"] == pytest.approx(1 / 3)
    assert v["f1_at_k"] == pytest.approx(1 / 3)
    assert v["ap_at_k"] == pytest.approx((1 / 2) / 3)
    assert v["ndcg_at_k"] == pytest.approx((1 / np.log2(3)) / (1 + 1 / np.log2(3) + 1 / np.log2(4)))


# --- text form ------------------------------------------------------------------------------------
def test_text_form_of_the_example():
    assert rk.to_text(rk.PR_EXAMPLE) == "x:0,a:1,y:0,b:1,c:1,z:0"
    assert rk.from_text("x:0,a:1,y:0,b:1,c:1,z:0") == list(rk.PR_EXAMPLE)
    assert rk.from_text(" x : 0 , a:1 ,") == [("x", False), ("a", True)]
    assert rk.from_text("") == [] and rk.to_text([]) == ""


names = st.text(min_size=1, max_size=12).map(str.strip).filter(bool)


@settings(max_examples=300, deadline=None)
@given(st.lists(st.tuples(names, st.booleans()), max_size=30))
def test_text_form_round_trip_with_any_names(rows):
    text = rk.to_text(rows)
    assert rk.from_text(text) == rows


def test_names_with_separators_survive():
    rows = [("a,b", True), ("c:d", False), ("50%", True), ("%2C", False), ("é 🙂", True)]
    assert rk.from_text(rk.to_text(rows)) == rows


def test_bare_labels_name_items_by_rank():
    assert rk.from_text("0,1,1") == [("item 1", False), ("item 2", True), ("item 3", True)]


@pytest.mark.parametrize("text, where", [("x:2", "entry 1"), ("x:0,a", "entry 2"), ("x:0,a:yes", "entry 2"),
                                         ("0,1,2", "entry 1")])
def test_bad_text_names_the_entry(text, where):
    with pytest.raises(ValueError, match=where) as err:
        rk.from_text(text)
    assert "x:0,a:1" in str(err.value)  # says how to write it


def test_too_many_items():
    rk.from_text(",".join(["1"] * MAX_RANKING_ITEMS))
    with pytest.raises(ValueError, match="at most 1,000"):
        rk.from_text(",".join(["1"] * (MAX_RANKING_ITEMS + 1)))


def test_as_rows_checks_labels():
    assert rk.as_rows([["a", 1], ("b", np.bool_(False))]) == [("a", True), ("b", False)]
    with pytest.raises(ValueError, match="row 1"):
        rk.as_rows([("a", 2)])
    with pytest.raises(ValueError, match="pair"):
        rk.as_rows(["abc"])


# --- presets --------------------------------------------------------------------------------------
def test_map_tutorial_models():
    aps = {name: mt.average_precision(rk.relevance(rk.tutorial_ranking(name))) for name in rk.TUTORIAL_MODELS}
    assert aps["model 1"] == pytest.approx(0.5)
    assert aps["model 2"] == pytest.approx(1.0)
    assert aps["model 3"] == pytest.approx((1 / 9 + 2 / 10) / 2)
    rows = rk.tutorial_ranking("model 1")
    assert [i for i, _ in rows] == ["n1", "1", "n2", "2", "n3", "n4", "n5", "n6", "n7", "n8"]
    for name in rk.TUTORIAL_MODELS:  # every model finds both relevant documents in its 10
        assert mt.recall_at_k(rk.relevance(rk.tutorial_ranking(name)), 10) == 1
    with pytest.raises(ValueError, match="model"):
        rk.tutorial_ranking("model 0")


@settings(max_examples=100, deadline=None)
@given(st.lists(st.booleans(), min_size=1, max_size=8).filter(any))
def test_perfect_and_worst_are_the_extremes(rel):
    rows = [(f"i{j}", r) for j, r in enumerate(rel)]
    best, bad = rk.perfect(rows), rk.worst(rows)
    assert sorted(best) == sorted(rows) == sorted(bad)
    assert mt.average_precision(rk.relevance(best)) == 1
    m, n = sum(rel), len(rel) - sum(rel)
    lowest = min(enumerate_ap(m, n).ap)
    assert Fraction(mt.average_precision(rk.relevance(bad))).limit_denominator(10**6) == lowest


def test_shuffle_is_seeded_and_a_permutation():
    rows = [(f"i{j}", j % 3 == 0) for j in range(12)]
    a, b, c = rk.shuffled(rows, 5), rk.shuffled(rows, 5), rk.shuffled(rows, 6)
    assert a == b and a != c and sorted(a) == sorted(rows)


def test_apply_preset():
    rows = [("q", True), ("r", False)]
    assert rk.apply_preset("Precision-recall example", rows) == list(rk.PR_EXAMPLE)
    assert rk.apply_preset("MAP tutorial models", rows, model="model 3") == rk.tutorial_ranking("model 3")
    # the names of links made before the presets were renamed still work
    assert rk.apply_preset("Seed 001 example", rows) == list(rk.PR_EXAMPLE)
    assert rk.apply_preset("Seed 002 models", rows, model="model 3") == rk.tutorial_ranking("model 3")
    assert rk.apply_preset("Worst", rows) == [("r", False), ("q", True)]
    assert rk.apply_preset("Perfect", rk.apply_preset("Worst", rows)) == rows
    assert rk.apply_preset("Random", rows, seed=3) == rk.shuffled(rows, 3)
    with pytest.raises(ValueError, match="preset"):
        rk.apply_preset("Best", rows)


# --- reordering by typed positions ---------------------------------------------------------------
ITEMS = list("xaybcz")
REL = [False, True, False, True, True, False]
BASE = [1, 2, 3, 4, 5, 6]


def _move(pos):
    return [item for item, _ in rk.apply_positions(ITEMS, REL, pos, BASE)]


def test_a_moved_row_lands_at_the_typed_position():
    assert _move([1, 5, 3, 4, 5, 6]) == list("xybcaz")   # a: 2 -> 5
    assert _move([1, 2, 3, 4, 1, 6]) == list("cxaybz")   # c: 5 -> 1
    assert _move([1, 2, 3, 4, 5, 6]) == ITEMS             # nothing moved
    assert _move([1, 2, 3, 4, 5, 99]) == ITEMS            # clamped to the end
    assert _move([1, 2, 0, 4, 5, 6]) == list("yxabcz")    # clamped to the top
    assert _move([7, 2, 3, 4, 5, 6]) == list("aybczx")


def test_two_moves_to_the_same_place_keep_row_order():
    # x (row 1) and z (row 6) both ask for position 2: x takes 2, z is pushed to 3
    assert _move([2, 2, 3, 4, 5, 2]) == list("axzybc")
    # x and c ask for 6 (z stays, unmoved): pushed back up from the end, x -> 5, c -> 6
    assert _move([6, 2, 3, 4, 6, 6]) == list("aybzxc")


def test_deleted_and_added_rows():
    # z deleted (a gap), a new unnamed row with no position, a named one asking for the top
    rows = rk.apply_positions(["x", "a", "y", "b", "c", None, "new"], [0, 1, 0, 1, 1, None, True],
                              [1, 2, 3, 4, 5, None, 1], [1, 2, 3, 4, 5, None, None])
    assert rows == [("new", True), ("x", False), ("a", True), ("y", False), ("b", True), ("c", True),
                    ("item 7", False)]
    nan = float("nan")
    rows = rk.apply_positions([nan, " p "], [nan, 1], [nan, nan], [nan, nan])
    assert rows == [("item 1", False), ("p", True)]
    assert rk.apply_positions([], [], [], []) == []


@settings(max_examples=200, deadline=None)
@given(st.data())
def test_positions_give_a_permutation_and_exact_single_moves(data):
    n = data.draw(st.integers(min_value=1, max_value=15))
    items = [f"i{j}" for j in range(n)]
    rel = data.draw(st.lists(st.booleans(), min_size=n, max_size=n))
    base = list(range(1, n + 1))
    pos = list(base)
    moved = data.draw(st.sets(st.integers(0, n - 1), max_size=n))
    for j in moved:
        pos[j] = data.draw(st.integers(-3, n + 3))
    out = rk.apply_positions(items, rel, pos, base)
    assert sorted(out) == sorted(zip(items, rel))
    assert out == rk.apply_positions(items, rel, pos, base)  # deterministic
    if len(moved) == 1:
        (j,) = moved
        want = min(max(pos[j], 1), n)
        got = [i for i, _ in out]
        assert got.index(items[j]) == want - 1
        rest = [i for i in items if i != items[j]]
        assert [i for i in got if i != items[j]] == rest


# --- null position --------------------------------------------------------------------------------
def test_null_position_exact_precision_recall_example():
    law = null_distribution(3, 3, "ap", "exact")
    pos = null_position(8 / 15, law)
    enum = enumerate_ap(3, 3)
    at_least = sum(1 for a in enum.ap if a >= Fraction(8, 15))
    assert pos.placements == 20 and pos.placements_at_least == at_least == 14
    assert pos.p == pytest.approx(14 / 20) and pos.percentile == pytest.approx(30)
    assert pos.p_low == pos.p_high == pytest.approx(pos.p)
    assert pos.method == "exact" and not pos.at_floor
    assert pos.mean == pytest.approx(float(enum.mean()))


@pytest.mark.parametrize("m, n", [(1, 4), (2, 5), (3, 6), (4, 4)])
def test_exact_percentile_and_p_add_to_100(m, n):
    law = null_distribution(m, n, "ap", "exact")
    enum = enumerate_ap(m, n)
    for ranks in itertools.islice(itertools.combinations(range(1, m + n + 1), m), 12):
        ap = float(ap_fraction(ranks, m))
        pos = null_position(ap, law)
        assert pos.p + pos.percentile / 100 == pytest.approx(1)
        below = sum(1 for a in enum.ap if a < ap_fraction(ranks, m)) / enum.total
        assert pos.percentile == pytest.approx(100 * below)


def test_null_position_monte_carlo():
    draws = np.array([0.1, 0.2, 0.2, 0.5, 0.9] * 4)  # 20 draws, 16 of them reach 0.2
    law = NullDistribution.from_draws("ap", 2, 3, draws, seed=1)
    pos = null_position(0.2, law)
    assert pos.p == pytest.approx((1 + 16) / (1 + 20)) and pos.percentile == pytest.approx(20)
    assert pos.method == "mc" and pos.placements is None and not pos.at_floor
    # no draw reaches 0.95: the far tail is counted instead of floored at 1 / (1 + draws):
    # P(AP >= 0.95) = P(AP = 1) = 1 / C(5, 2) for 2 positives among 5
    top = null_position(0.95, law)
    assert not top.at_floor and top.p == pytest.approx(0.1) and top.percentile == 100
    assert 0 <= top.p_low <= 0.1 <= top.p_high <= 1


def test_null_position_grid_bounds_hold_the_exact_p():
    law = null_distribution(6, 30, "ap", "grid")
    exact = null_distribution(6, 30, "ap", "exact")
    for ap in (0.2, 0.35, 0.5, 0.8):
        pos = null_position(ap, law)
        assert pos.p_low - 1e-12 <= exact.pvalue(ap) <= pos.p_high + 1e-12
