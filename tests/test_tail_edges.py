"""The null laws at their edges: closed forms, Precision@R's far tail in log space, p-values below the
smallest float, and thresholds at levels no law's own quantile resolves."""

from __future__ import annotations

import math
from fractions import Fraction

import mpmath
import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from apnull.closed import closed_form_law, closed_tail, closed_threshold, grid_law_m1, second_largest_ap
from apnull.exact import ap_law_exact, grid_scan
from apnull.hypergeom import log_comb, log_int, log_tail, tail_hits
from apnull.law import VALUE_TOL
from apnull.significance import null_distribution, resolved_pvalue
from apnull.tail import LOG10_NORMAL_MIN, NORMAL_MIN, TailPValue, _make, pr_tail, tail_bounds
from apnull.thresholds import counted_threshold

from reference import enumerate_ap


def hyper_tail(m: int, n: int, k: int, h: int) -> Fraction:
    """P(H >= h) for the hits H in the top k, exactly."""
    lo, hi = max(0, k - n), min(k, m)
    count = sum(math.comb(m, j) * math.comb(n, k - j) for j in range(max(h, lo), hi + 1))
    return Fraction(count, math.comb(m + n, k))


def ln(p: Fraction) -> float:
    """Natural log of a positive rational to about an ulp, however small."""
    return math.log(float(p)) if p > Fraction(1, 10**300) else log_int(p.numerator) - log_int(p.denominator)


# -- closed forms against enumeration --------------------------------------------------------------
@settings(max_examples=40, deadline=None)
@given(m=st.integers(1, 9), n=st.integers(0, 9))
def test_closed_form_laws_are_the_enumerated_laws(m, n):
    closed = closed_form_law(m, n)
    if m != 1 and n > 1:
        assert closed is None
        return
    values, counts = closed
    ref = enumerate_ap(m, n)
    want = ref.ap_counts()
    assert [int(c) for c in counts] == [c for _, c in want]
    np.testing.assert_allclose(values, [float(v) for v, _ in want], rtol=0, atol=1e-15)
    assert np.all(np.diff(values) > 0)


def test_closed_form_laws_are_quick_at_a_million_items():
    law = ap_law_exact(1, 999_999)  # the scan took O(N^2); the closed form is O(N)
    assert law.values.size == 10**6 and law.values[0] == 1e-6 and law.total == 10**6
    law = ap_law_exact(999_999, 1)
    assert law.values[-1] == 1.0 and law.total == 10**6
    # AP with the negative at rank r: 1 - (H_{m+1} - H_r) / m, summed exactly for a few r
    m = 999_999
    for r in (1, 2, 500_000, 999_990, 999_999):
        exact = 1 - (mpmath.harmonic(m + 1) - mpmath.harmonic(r)) / m
        assert law.values[r - 1] == pytest.approx(float(exact), abs=1e-13)
    law = ap_law_exact(1_000_000, 0)
    assert list(law.values) == [1.0] and law.total == 1


@pytest.mark.parametrize("n, G", [(0, 64), (5, 100), (300, 1000), (3000, 1000)])
def test_grid_law_of_one_positive_is_the_scan(n, G):
    for _, scanned in grid_scan(1, n, G, [0.0]):
        pass
    np.testing.assert_allclose(grid_law_m1(n, G), scanned, rtol=0, atol=2e-15)


@pytest.mark.parametrize("m", [1, 2, 3, 4, 5, 6])
def test_second_largest_ap_is_one_negative_above_the_last_positive(m):
    values = sorted(set(enumerate_ap(m, 3).ap))
    assert values[-1] == 1 and values[-2] == second_largest_ap(m)


@settings(max_examples=80, deadline=None)
@given(m=st.integers(1, 7), n=st.integers(0, 7), x=st.floats(1e-6, 1.0))
def test_closed_tails_hold_where_they_apply(m, n, x):
    ref = enumerate_ap(m, n)
    t = m * (Fraction(x) - Fraction(VALUE_TOL))
    got = closed_tail(t, m, n)
    if got is None:
        assert m > 1 and n > 0 and t <= m * second_largest_ap(m)
        return
    p = ref.pvalue(Fraction(x) - Fraction(VALUE_TOL))
    lo, hi, point = got
    assert lo - 1e-15 <= ln(p) <= hi + 1e-15 and lo <= point <= hi


@settings(max_examples=60, deadline=None)
@given(m=st.integers(1, 7), n=st.integers(0, 7), alpha=st.floats(0.0, 0.999))
def test_closed_thresholds_are_the_exact_quantiles(m, n, alpha):
    got = closed_threshold(alpha, m, n)
    if got is None:
        return
    ref = enumerate_ap(m, n)
    table = ref.ap_cdf_table()
    # the smallest support value t with P(AP > t) <= alpha
    exact = next(v for v, cdf in table if 1 - cdf <= Fraction(alpha))
    low, value = got
    assert low <= float(exact) + 1e-15 and float(exact) <= value + 1e-15
    assert value == pytest.approx(float(exact), abs=1e-15) or low < value


# -- Precision@R: the hypergeometric tail in log space ---------------------------------------------
@settings(max_examples=200, deadline=None)
@given(m=st.integers(1, 120), n=st.integers(0, 120), data=st.data())
def test_log_tail_is_the_exact_hypergeometric_tail(m, n, data):
    k = data.draw(st.integers(1, m + n))
    h = data.draw(st.integers(-1, k + 1))
    v, err = log_tail(m, n, k, h)
    p = hyper_tail(m, n, k, h)
    if p == 0:
        assert v == -math.inf
        return
    assert abs(v - ln(p)) <= err + 2 * math.ulp(max(1.0, abs(ln(p)))), (m, n, k, h)
    assert err < 1e-9 * max(1.0, abs(v))


@pytest.mark.parametrize("a, b", [(1200, 600), (5000, 17), (200_000, 100_000), (1_000_000, 3), (1_000_000, 500_000)])
def test_log_comb_against_high_precision(a, b):
    v, err = log_comb(a, b)
    exact = mpmath.log(mpmath.binomial(a, b))
    assert abs(v - float(exact)) <= err
    assert err <= 1e-8


@pytest.mark.parametrize("m, n, log10_truth", [(600, 600, -359.598), (100_000, 100_000, -60203.25)])
def test_precision_at_r_of_one_is_counted_not_zero(m, n, log10_truth):
    law = null_distribution(m, n, "pr")
    tail = resolved_pvalue(1.0, law)
    exact = -float(mpmath.log10(mpmath.binomial(m + n, m)))
    assert round(tail.log10_p, 2 if m > 1000 else 3) == log10_truth
    assert tail.log10_low <= exact <= tail.log10_high and tail.rel_error < 1e-8
    assert tail.source == "tail count" and tail.underflows and tail.p > 0
    assert tail.low == 0.0 and tail.low <= tail.p <= tail.high


@settings(max_examples=40, deadline=None)
@given(m=st.integers(1, 40), n=st.integers(0, 40), x=st.floats(0.0, 1.0), mc=st.booleans())
def test_precision_at_r_p_values_are_exact_from_either_law(m, n, x, mc):
    law = null_distribution(m, n, "pr", "mc" if mc else "exact", draws=200, seed=3)
    tail = resolved_pvalue(x, law)
    h = math.ceil(m * (Fraction(x) - Fraction(VALUE_TOL)))
    p = hyper_tail(m, n, m, h)
    if tail.source in ("exact", "tail count"):
        assert tail.low <= float(p) * (1 + 1e-9) and float(p) <= tail.high * (1 + 1e-9)
    if tail.source == "tail count":  # a Monte Carlo law with too few draws above x: counted
        assert tail.log10_low - 1e-12 <= math.log10(p) <= tail.log10_high + 1e-12


def test_pr_tail_far_below_any_float():
    r = pr_tail(1.0, 500_000, 500_000)
    exact = -float(mpmath.log10(mpmath.binomial(10**6, 500_000)))
    assert r.log10_low <= exact <= r.log10_high and r.p > 0 and r.underflows


@settings(max_examples=60, deadline=None)
@given(m=st.integers(1, 60), n=st.integers(0, 60), alpha=st.floats(1e-300, 0.9))
def test_tail_hits_is_the_exact_quantile_of_the_hits(m, n, alpha):
    low, high = tail_hits(m, n, m, math.log(alpha))
    exact = next(h for h in range(max(0, m - n), m + 1) if hyper_tail(m, n, m, h + 1) <= Fraction(alpha))
    assert low <= exact <= high and high - low <= 1


# -- p-values below the smallest normal float ------------------------------------------------------
@settings(max_examples=200, deadline=None)
@given(log_low=st.floats(-2000.0, 0.0), width=st.floats(0.0, 50.0), at=st.floats(0.0, 1.0))
def test_printed_ranges_hold_the_printed_p_and_agree_with_its_log(log_low, width, at):
    log_high = min(0.0, log_low + width)
    log_p = log_low + at * (log_high - log_low)
    r = _make(log_low, log_high, "tail count", log_p)
    assert r.low <= r.p <= r.high and r.p > 0
    if r.underflows:  # the floats are bounds only: [0, a float at or above the exact value]
        assert r.p <= NORMAL_MIN and r.high >= math.exp(log_high) and r.low <= math.exp(log_low)
        assert r.log10_p < LOG10_NORMAL_MIN
    else:
        assert math.log10(r.p) == pytest.approx(r.log10_p, abs=1e-9)


def test_ap_one_at_500_5000_prints_its_log_and_a_range_that_holds():
    r = tail_bounds(1.0, 500, 5000)
    assert isinstance(r, TailPValue) and r.underflows
    assert r.low == 0.0 and r.p == r.high > 0  # not 4.9e-324 inside "[0, 0]"
    assert round(r.log10_p, 2) == -725.93


# -- thresholds from counted tails ---------------------------------------------------------------
@settings(max_examples=30, deadline=None)
@given(m=st.integers(2, 6), n=st.integers(2, 8), alpha=st.floats(1e-12, 0.5))
def test_counted_ap_thresholds_bracket_the_exact_one(m, n, alpha):
    ref = enumerate_ap(m, n)
    exact = next(v for v, cdf in ref.ap_cdf_table() if 1 - cdf <= Fraction(alpha))
    r = counted_threshold(alpha, m, n)
    assert r is not None
    assert r.low - 1e-9 <= float(exact) <= r.value + 1e-9
    # a score above the threshold has p <= alpha; one at a searched threshold too (the search's guarantee)
    assert ref.pvalue(Fraction(r.value) + Fraction(VALUE_TOL)) <= Fraction(alpha)
    if r.low < r.value:
        assert ref.pvalue(Fraction(r.value) - Fraction(VALUE_TOL)) <= Fraction(alpha)


@pytest.mark.parametrize("m, n", [(600, 600), (100_000, 100_000)])
def test_counted_pr_threshold_is_exact(m, n):
    r = counted_threshold(1e-30, m, n, "pr")
    h = round(r.value * m)
    assert r.low == r.value
    assert log_tail(m, n, m, h + 1)[0] <= math.log(1e-30) < log_tail(m, n, m, h)[0]
