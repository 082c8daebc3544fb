"""Far tails of the AP law: counted bounds against enumeration, closed forms and high precision."""

from __future__ import annotations

import json
import math
from fractions import Fraction

import mpmath
import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

import apnull
from apnull.cli import main as cli_main
from apnull.law import VALUE_TOL
from apnull.score.nulls.laws import LawCache
from apnull.significance import null_distribution, null_position, resolved_pvalue, tail_pvalue
from apnull.tail import combine, needs_counting, tail_bounds

from reference import enumerate_ap


def truth(ref, x) -> Fraction:
    """P(AP >= x - VALUE_TOL) exactly: the event every p-value of the package is about."""
    return ref.pvalue(Fraction(float(x)) - Fraction(VALUE_TOL))


def contains(r, p: Fraction, slack=1e-12) -> bool:
    return r.low <= float(p) * (1 + slack) and float(p) <= r.high * (1 + slack)


@pytest.mark.parametrize("m, n", [(1, 0), (1, 7), (2, 5), (3, 6), (4, 4), (5, 7), (6, 3), (3, 12)])
def test_counted_bounds_match_enumeration_at_every_support_value(m, n):
    ref = enumerate_ap(m, n)
    for value, _ in ref.ap_counts():
        r = tail_bounds(float(value), m, n)
        p = truth(ref, float(value))
        assert contains(r, p), (m, n, value, r, p)
        assert r.rel_error < 1e-9  # at the finest cell size the bounds meet
        assert r.p > 0


@settings(max_examples=60, deadline=None)
@given(m=st.integers(1, 6), n=st.integers(0, 8), x=st.floats(0.0, 1.0))
def test_counted_bounds_hold_anywhere(m, n, x):
    ref = enumerate_ap(m, n)
    for work in (2_000, 50_000_000):  # a starved scan gives wider bounds, never wrong ones
        r = tail_bounds(x, m, n, work=work)
        if r is not None:
            assert contains(r, truth(ref, x)), (m, n, x, work, r)
            assert r.low <= r.p <= r.high


@pytest.mark.parametrize("m, n", [(30, 240), (100, 1000), (10, 5000), (500, 5000), (1, 999_999)])
def test_ap_one_is_one_over_the_placements(m, n):
    exact = mpmath.mpf(1) / mpmath.binomial(m + n, m)
    r = tail_pvalue(1.0, m, n, seed=0)
    log10 = float(mpmath.log10(exact))
    assert r.log10_low <= log10 + 1e-9 and log10 - 1e-9 <= r.log10_high
    assert r.rel_error < 1e-9
    assert r.p > 0  # never 0, even below the smallest float (then the smallest float: still >= the truth)
    if log10 > -300:
        assert r.p == pytest.approx(float(exact), rel=1e-9)


@pytest.mark.parametrize("m, n", [(30, 240), (100, 1000), (8, 40)])
def test_near_top_values_count_exactly(m, n):
    """The second-best AP puts the last positive at rank m + 1 (two placements reach it); the third
    puts it at m + 2 (three placements)."""
    total = mpmath.binomial(m + n, m)
    for rank, count in ((m + 1, 2), (m + 2, 3)):
        value = float((Fraction(m - 1) + Fraction(m, rank)) / m)
        r = tail_pvalue(value, m, n, seed=0)
        assert float(mpmath.log10(count / total)) == pytest.approx(r.log10_p, abs=1e-9)
        assert r.rel_error < 1e-9


def test_the_example_of_the_command_line_is_no_longer_zero(capsys):
    assert cli_main(["pvalue", "--metric", "ap", "--value", "1", "--m", "30", "--n", "240", "--json"]) == 0
    res = json.loads(capsys.readouterr().out)
    exact = 1 / math.comb(270, 30)
    lo, hi = res["p_value_bounds"]
    assert lo <= exact * (1 + 1e-12) and exact <= hi * (1 + 1e-12) and lo > 0
    assert res["p_value"] == pytest.approx(exact, rel=1e-9)
    assert res["log10_p_value"] == pytest.approx(math.log10(exact), abs=1e-9)
    assert res["relative_error"] < 1e-9 and res["p_value_source"] == "tail count"
    assert cli_main(["pvalue", "--value", "1", "--m", "30", "--n", "240"]) == 0
    text = capsys.readouterr().out
    assert "1.61963e-40" in text and "log10 p" in text and "relative error" in text


def test_grid_range_counts_trimmed_mass():
    """The grid trims cells far below 1e-16; its range still holds the truth (here 1.6e-40)."""
    law = null_distribution(30, 240, method="grid")
    assert law.dropped_mass > 0
    exact = 1 / math.comb(270, 30)
    lo, hi = law.pvalue_bounds(1.0)
    assert lo <= exact <= hi
    assert bool(needs_counting(law, 1.0))
    r = combine(law, 1.0)
    assert r.source == "tail count" and r.low > 0 and contains(r, Fraction(1, math.comb(270, 30)))


def test_grid_ranges_hold_against_enumeration():
    m, n = 6, 14
    ref = enumerate_ap(m, n)
    law = null_distribution(m, n, method="grid", grid_size=64)
    for value, _ in ref.ap_counts()[::7]:
        lo, hi = law.pvalue_bounds(float(value))
        p = float(truth(ref, float(value)))
        assert lo <= p * (1 + 1e-12) and p <= hi * (1 + 1e-12)
        r = combine(law, float(value))
        assert contains(r, truth(ref, float(value)))


def test_monte_carlo_tail_is_counted_not_floored():
    law = null_distribution(100, 1000, method="mc", draws=10_000, seed=1)
    assert law.pvalue(0.7) == 1 / 10_001  # the draws' floor
    r = resolved_pvalue(0.7, law)
    assert r.source == "tail count" and r.high < 1e-50 and r.low > 0
    pos = null_position(0.7, law)
    assert pos.p == r.p and not pos.at_floor and pos.source == "tail count"
    assert apnull.p_value(0.7, 100, 1000, method="mc", draws=10_000, seed=1) == r.p


def test_exact_law_tail_from_counts():
    r = tail_pvalue(1.0, 4, 30)
    assert r.source == "exact" and r.p == 1 / math.comb(34, 4) and r.rel_error == 0
    assert tail_pvalue(0.0, 4, 30).p == 1.0


def test_score_query_pvalues_resolve_strong_replicates():
    laws = LawCache(0)
    ms, ns = [3, 3, 3, 30], [1000, 1000, 5, 240]
    aps = np.array([1.0, 0.2, 1.0, 1.0])
    p = laws.query_pvalues(ms, ns, aps)
    assert p[0] == pytest.approx(1 / math.comb(1003, 3), rel=1e-9)
    assert p[1] == laws.law(3, 1000).pvalue(0.2)  # resolved by the law: unchanged
    assert p[2] == pytest.approx(1 / math.comb(8, 3), rel=1e-12)
    assert p[3] == pytest.approx(1 / math.comb(270, 30), rel=1e-9)
    assert np.isnan(laws.query_pvalues([3], [10], [np.nan])[0])
    assert laws.query_pvalue(30, 240, 1.0) == p[3]


def test_strong_queries_of_a_grid_law_are_never_zero_and_keep_their_order():
    """m = 9, n = 300 (a grid law): APs from 0.9 to 1 used to get p = 0 (cells trimmed below 1e-16)."""
    aps = np.linspace(0.5, 1.0, 11)
    p = LawCache(0).query_pvalues([9] * 11, [300] * 11, aps)
    assert np.all(p > 0) and np.all(np.diff(p) < 0)
    assert p[-1] == pytest.approx(1 / math.comb(309, 9), rel=1e-9)
