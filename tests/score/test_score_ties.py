"""Tie-aware AP: the mean over all tie orders; the usual AP without ties."""

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from score_helpers import brute_tie_ap
from sklearn.metrics import average_precision_score

import apnull
from apnull.law import VALUE_TOL
from apnull.score import tie_aware_ap
from apnull.score.ties import tie_aware_precision_at_r


@given(st.lists(st.tuples(st.integers(0, 2), st.booleans()), min_size=1, max_size=7))
@settings(max_examples=60, deadline=None)
def test_tie_aware_ap_is_mean_over_tie_orders(items):
    scores = [s for s, _ in items]
    rel = [r for _, r in items]
    if not any(rel):
        with pytest.raises(ValueError, match="no relevant"):
            tie_aware_ap(scores, rel)
        return
    assert tie_aware_ap(scores, rel) == pytest.approx(brute_tie_ap(scores, rel), abs=1e-12)


def test_large_tied_block_uses_closed_form():
    # 100 tied items (> 64: harmonic-number branch) after 30 distinct ones
    rng = np.random.default_rng(3)
    scores = np.r_[np.linspace(2, 3, 30), np.zeros(100)]
    rel = rng.random(130) < 0.2
    rel[0] = True
    # expectation by Monte Carlo over random tie orders is noisy; compare to the exact finite sum instead
    srt = np.argsort(-scores, kind="stable")
    s, r = scores[srt], rel[srt]
    m = r.sum()
    head = r[:30]
    before = head.sum()
    exact = sum((i + 1) / (np.flatnonzero(head)[i] + 1) for i in range(before))
    a, L = r[30:].sum(), 100
    exact += sum((a / L) * (before + 1 + (p - 1) * (a - 1) / (L - 1)) / (30 + p) for p in range(1, L + 1))
    assert tie_aware_ap(s, r) == pytest.approx(exact / m, abs=1e-13)


@given(st.lists(st.floats(-1, 1, allow_nan=False), min_size=2, max_size=40, unique=True),
       st.data())
@settings(max_examples=80, deadline=None)
def test_no_ties_equals_average_precision_and_sklearn(scores, data):
    rel = data.draw(st.lists(st.booleans(), min_size=len(scores), max_size=len(scores)))
    if not any(rel):
        rel[0] = True
    scores, rel = np.array(scores), np.array(rel)
    ours = tie_aware_ap(scores, rel)
    ranked = rel[np.argsort(-scores)]
    assert abs(ours - apnull.average_precision(ranked)) <= VALUE_TOL
    assert abs(ours - average_precision_score(rel, scores)) <= 1e-9
    m = rel.sum()
    assert tie_aware_precision_at_r(scores, rel) == pytest.approx(ranked[:m].sum() / m)


def test_precision_at_r_with_ties_is_expected_hits():
    # 1 positive tied with 3 negatives at the top: expected hits in top 1 = 1/4
    assert tie_aware_precision_at_r([1, 1, 1, 1, 0], [1, 0, 0, 0, 0]) == pytest.approx(0.25)


@pytest.mark.parametrize("scores, rel, msg", [
    ([1, 2], [1], "same length"), ([], [], "empty"), ([np.nan, 1], [1, 0], "finite"),
    ([1, 2], [0, 0], "no relevant"), ([1, 2], [2, 0], "0/1")])
def test_bad_rankings(scores, rel, msg):
    with pytest.raises(ValueError, match=msg):
        tie_aware_ap(scores, rel)


@pytest.mark.parametrize("n", [1, 2, 63, 64, 65, 100, 1000, 12_345, 10**6])
def test_compiled_harmonic_agrees_with_the_exact_one(n):
    from apnull.exact import harmonic as reference
    from apnull.score.kernels.ranking import compiled_harmonic as compiled

    assert compiled(n) == pytest.approx(reference(n), rel=1e-15)


def test_compiled_harmonic_reads_the_exact_one_below_64():
    from apnull.exact import harmonic as reference
    from apnull.score.kernels.ranking import compiled_harmonic as compiled

    assert [compiled(n) for n in range(64)] == [reference(n) for n in range(64)]
