"""apnull.significance: method choice, thresholds and p-values against brute force and scipy."""

from __future__ import annotations

import math
from fractions import Fraction

import numpy as np
import pytest
from scipy import stats

import apnull
from apnull import significance as sg
from reference import enumerate_ap


# ------------------------------------------------------------------------------------------------
# Method choice
# ------------------------------------------------------------------------------------------------
@pytest.mark.parametrize("m, n, expected", [
    (4, 30, "exact"), (5, 12, "exact"), (1, 0, "exact"), (3, 40, "exact"),
    (10, 30, "grid"), (40, 300, "grid"), (20, 200, "grid"),
    (300, 3000, "mc"), (100, 1000, "mc"),
])
def test_auto_method_choice(m, n, expected):
    assert sg.choose_method(m, n, "ap") == expected
    assert sg.choose_method(m, n, "pr") == "exact"  # Precision@R is always exact
    for method in ("exact", "grid", "mc"):
        assert sg.choose_method(m, n, "ap", method) == method


def test_auto_thresholds_of_method_choice():
    # exact while the counting programme's cost (m+n) * C(m+n, m) is at most AUTO_EXACT_WORK
    assert 34 * math.comb(34, 4) <= sg.AUTO_EXACT_WORK
    assert sg.choose_method(4, 30, "ap") == "exact"
    assert 40 * math.comb(40, 10) > sg.AUTO_EXACT_WORK
    assert sg.choose_method(10, 30, "ap") == "grid"
    assert sg.choose_method(2, 600, "ap") == "grid"  # few placements, but long to scan


@pytest.mark.parametrize("m, n, method", [(4, 30, "exact"), (40, 300, "grid")])
def test_null_distribution_reports_its_method(m, n, method):
    law = apnull.null_distribution(m, n)
    assert law.method == method and law.metric == "ap" and (law.m, law.n) == (m, n)
    assert law.mean == pytest.approx(apnull.expected_ap(m, n), abs=1e-9)
    assert law.std == pytest.approx(math.sqrt(apnull.ap_variance(m, n)), abs=law.error_bound + 1e-9)
    pr = apnull.null_distribution(m, n, "pr")
    assert pr.method == "exact" and pr.metric == "pr"
    assert pr.mean == pytest.approx(m / (m + n))


def test_null_distribution_mc_beyond_grid():
    law = apnull.null_distribution(300, 3000, draws=2000, seed=4)
    assert law.method == "mc" and law.seed == 4 and law.draws.size == 2000
    assert law.error_bound is None
    mu, sd = apnull.expected_ap(300, 3000), math.sqrt(apnull.ap_variance(300, 3000))
    assert abs(law.mean - mu) < 5 * sd / math.sqrt(2000)
    # Monte Carlo Precision@R on request
    pr = apnull.null_distribution(300, 3000, "pr", method="mc", draws=2000, seed=4)
    assert pr.method == "mc" and pr.metric == "pr"
    s = apnull.sample_null(300, 3000, 2000, seed=4)
    np.testing.assert_array_equal(np.sort(s.pr), pr.draws)
    np.testing.assert_array_equal(np.sort(s.ap), law.draws)


def test_grid_method_for_pr_means_exact():
    law = apnull.null_distribution(4, 30, "pr", method="grid")
    assert law.method == "exact"


def test_explicit_methods():
    ex = apnull.null_distribution(4, 30, method="exact")
    gr = apnull.null_distribution(4, 30, method="grid")
    mc = apnull.null_distribution(4, 30, method="mc", draws=50_000, seed=1)
    assert (ex.method, gr.method, mc.method) == ("exact", "grid", "mc")
    assert gr.error_bound <= 1e-3
    for q in (0.5, 0.9, 0.95, 0.99):
        assert abs(gr.quantile(q) - ex.quantile(q)) <= gr.error_bound + 1e-12
    gr_fine = apnull.null_distribution(4, 30, method="grid", tol=1e-4)
    assert gr_fine.error_bound <= 1e-4
    gr_g = apnull.null_distribution(4, 30, method="grid", grid_size=4000)
    assert gr_g.grid_size == 4000


def test_exact_method_too_large_names_alternative():
    with pytest.raises(ValueError, match="grid|mc"):
        apnull.null_distribution(40, 300, method="exact")


# ------------------------------------------------------------------------------------------------
# Thresholds
# ------------------------------------------------------------------------------------------------
def test_hyper_95pct_threshold():
    """qhyper(0.95, m = 4, n = 32, k = 4) / 4. In scipy: hypergeom(M=36, n=4, N=4)."""
    m, n = 4, 32
    hg = stats.hypergeom(m + n, m, m)
    expected = hg.ppf(0.95) / m
    # check the quantile by hand: smallest x with P(X <= x) >= 0.95
    x = next(h for h in range(m + 1) if hg.cdf(h) >= 0.95)
    assert expected == x / m == 0.5
    assert hg.cdf(1) < 0.95 <= hg.cdf(2)
    assert apnull.threshold(m, n, metric="pr", q=0.95) == expected
    assert apnull.threshold(m, n, metric="pr") == expected  # q defaults to 0.95
    # the same from exact rationals: P(hits = h) = C(m, h) C(n, m - h) / C(m + n, m)
    cum = Fraction(0)
    for h in range(m + 1):
        cum += Fraction(math.comb(m, h) * math.comb(n, m - h), math.comb(m + n, m))
        if cum >= Fraction(95, 100):
            assert h / m == expected
            break


@pytest.mark.parametrize("m, n", [(4, 32), (4, 30), (10, 90), (3, 3), (7, 1)])
@pytest.mark.parametrize("q", [0.5, 0.75, 0.9, 0.95, 0.99])
def test_pr_threshold_is_qhyper(m, n, q):
    assert apnull.threshold(m, n, "pr", q=q) == stats.hypergeom(m + n, m, m).ppf(q) / m


@pytest.mark.parametrize("q", [0.5, 0.75, 0.9, 0.95, 0.99, 0.999])
def test_ap_threshold_exact_matches_brute_force(q):
    ref = enumerate_ap(4, 30)
    law = apnull.null_distribution(4, 30)
    assert law.method == "exact"
    thr = apnull.threshold(4, 30, q=q)
    assert thr == pytest.approx(float(ref.quantile(Fraction(str(q)))), abs=1e-15)
    # a random ranking reaches the threshold with probability <= 1 - q ... at the next support point
    assert float(ref.cdf(Fraction(thr) + Fraction(1, 10**12))) >= q - 1e-12
    below = Fraction(thr) - Fraction(1, 10**12)
    assert float(ref.cdf(below)) < q


def test_ap_threshold_known_value():
    # the CLI prints this; it is also the exact 95% quantile by enumeration above
    assert apnull.threshold(4, 30) == pytest.approx(0.42687908496732024, abs=1e-15)


def test_mc_threshold_close_to_exact():
    ex = apnull.threshold(4, 30, q=0.95, method="exact")
    mc = apnull.threshold(4, 30, q=0.95, method="mc", draws=200_000, seed=2024)
    law = apnull.null_distribution(4, 30, method="mc", draws=200_000, seed=2024)
    assert mc == pytest.approx(float(np.quantile(law.draws, 0.95)))  # type-7 interpolation
    # the standard error of a quantile is sqrt(q(1-q)/D) / density; a 0.01 window is ~10 SE here
    assert abs(mc - ex) < 0.01
    for q in (0.5, 0.9, 0.99):
        assert abs(law.quantile(q) - apnull.threshold(4, 30, q=q)) < 0.015


def test_grid_threshold_within_tolerance_of_mc_for_large():
    thr_grid = apnull.threshold(40, 300, q=0.95)
    thr_mc = apnull.threshold(40, 300, q=0.95, method="mc", draws=200_000, seed=3)
    assert abs(thr_grid - thr_mc) < 0.005


# ------------------------------------------------------------------------------------------------
# p-values
# ------------------------------------------------------------------------------------------------
@pytest.mark.parametrize("m, n", [(3, 7), (4, 30), (5, 12)])
def test_exact_p_value_matches_brute_force(m, n):
    ref = enumerate_ap(m, n)
    support = [v for v, _ in ref.ap_counts()]
    for value in support[:: max(1, len(support) // 150)] + [support[-1]]:
        p = apnull.p_value(float(value), m, n)
        assert p == pytest.approx(float(ref.pvalue(value)), abs=1e-13)
    assert apnull.p_value(0.0, m, n) == pytest.approx(1.0)
    assert apnull.p_value(1.0, m, n) == pytest.approx(1 / math.comb(m + n, m))
    # between support points: P(X >= x) counts only values above x
    a, b = float(support[0]), float(support[1])
    assert apnull.p_value((a + b) / 2, m, n) == pytest.approx(float(ref.pvalue(Fraction((a + b) / 2))), abs=1e-13)


@pytest.mark.parametrize("m, n", [(4, 32), (6, 6)])
def test_pr_p_value_is_hypergeometric_sf(m, n):
    hg = stats.hypergeom(m + n, m, m)
    for h in range(m + 1):
        p = apnull.p_value(h / m, m, n, metric="pr")
        assert p == pytest.approx(hg.sf(h - 1), abs=1e-12)


def test_mc_p_values_follow_the_formula_and_are_never_zero():
    m, n, draws, seed = 4, 30, 20_000, 3
    sample = apnull.sample_null(m, n, draws, seed=seed).ap
    values = [0.0, 0.1, 0.2, 0.3, 0.5, 0.75, 0.99, 1.0, float(np.max(sample)), float(sample[17]),
              float(np.median(sample))]
    law = apnull.null_distribution(m, n, method="mc", draws=draws, seed=seed)
    for x in values:
        count = int(np.sum(sample >= x - 1e-9))
        assert law.pvalue(x) == pytest.approx((1 + count) / (1 + draws), abs=1e-15), x
        p = apnull.p_value(x, m, n, method="mc", draws=draws, seed=seed)
        if count >= 10:  # resolved by the draws: the Monte Carlo formula
            assert p == pytest.approx((1 + count) / (1 + draws), abs=1e-15), x
        else:  # a tail the draws cannot resolve is counted, not floored
            assert p == pytest.approx(apnull.p_value(x, m, n, method="exact"), rel=1e-9), x
        assert p > 0
    assert apnull.p_value(0.0, m, n, method="mc", draws=draws, seed=seed) == 1.0
    # nothing reaches 1.0 in 20,000 draws (P = 1/46376 each): the law's p-value is 1/(1 + draws), not 0,
    # and the resolved p-value counts the one placement
    if not np.any(sample >= 1.0):
        assert law.pvalue(1.0) == 1 / (1 + draws)
    assert apnull.p_value(1.0, m, n, method="mc", draws=draws, seed=seed) == pytest.approx(1 / 46376, rel=1e-9)
    # the Monte Carlo p-value is close to the exact one
    for x in (0.3, 0.4, 0.5):
        exact_p = apnull.p_value(x, m, n, method="exact")
        mc_p = apnull.p_value(x, m, n, method="mc", draws=draws, seed=seed)
        assert abs(mc_p - exact_p) < 5 * math.sqrt(exact_p * (1 - exact_p) / draws) + 2 / draws


def test_mc_p_value_matches_draws_computed_in_another_order():
    """A draw's own value (tiny rounding differences aside) counts as reaching itself."""
    m, n, draws, seed = 5, 40, 5000, 8
    law = apnull.null_distribution(m, n, method="mc", draws=draws, seed=seed)
    x = float(law.draws[2500])
    for y in (x, x + 1e-13, x - 1e-13):
        p = apnull.p_value(y, m, n, method="mc", draws=draws, seed=seed)
        assert p == pytest.approx((1 + np.sum(law.draws >= x)) / (1 + draws))


def test_p_value_grid_bounds():
    law = apnull.null_distribution(40, 300)
    assert law.method == "grid"
    for x in (0.15, 0.2, 0.25, 0.3):
        lo, hi = law.pvalue_bounds(x)
        assert lo <= law.pvalue(x) <= hi
        mc = apnull.p_value(x, 40, 300, method="mc", draws=100_000, seed=6)
        assert lo - 0.01 <= mc <= hi + 0.01


# ------------------------------------------------------------------------------------------------
# Validation
# ------------------------------------------------------------------------------------------------
@pytest.mark.parametrize("value", [1.5, -0.2, "abc", None, float("nan"), float("inf")])
def test_p_value_rejects_bad_values(value):
    with pytest.raises(ValueError, match="value must be a number between 0 and 1"):
        apnull.p_value(value, 4, 30)


def test_p_value_accepts_numeric_strings_and_edges():
    assert apnull.p_value("0.5", 4, 30) == apnull.p_value(0.5, 4, 30)
    assert apnull.p_value(1 + 1e-13, 4, 30) == pytest.approx(apnull.p_value(1.0, 4, 30))


@pytest.mark.parametrize("q", [-0.01, 1.5, "abc", float("nan")])
def test_threshold_rejects_bad_q(q):
    with pytest.raises(ValueError, match="q must"):
        apnull.threshold(4, 30, q=q)


@pytest.mark.parametrize("q, expected_index", [(0.0, 0), (1.0, -1)])
def test_threshold_q_edges(q, expected_index):
    law = apnull.null_distribution(4, 30)
    assert apnull.threshold(4, 30, q=q) == law.values[expected_index]


@pytest.mark.parametrize("func", [
    lambda **kw: apnull.threshold(4, 30, **kw),
    lambda **kw: apnull.p_value(0.5, 4, 30, **kw),
    lambda **kw: apnull.null_distribution(4, 30, **kw),
])
def test_unknown_metric_or_method(func):
    with pytest.raises(ValueError, match="metric must be 'ap'"):
        func(metric="foo")
    with pytest.raises(ValueError, match="method must be one of"):
        func(method="magic")
    with pytest.raises(ValueError, match="draws"):
        func(method="mc", draws=0)
    with pytest.raises(ValueError, match="seed"):
        func(method="mc", draws=10, seed=-1)
    with pytest.raises(ValueError, match="tol"):
        func(tol=0)


def test_metric_aliases():
    assert apnull.threshold(4, 32, "Precision@R") == apnull.threshold(4, 32, "pr")
    assert apnull.threshold(4, 32, " AP ") == apnull.threshold(4, 32, "ap")


@pytest.mark.parametrize("m, n", [(0, 3), (3, -1), (2.5, 3), (600_000, 600_000)])
def test_bad_sizes(m, n):
    with pytest.raises(ValueError):
        apnull.threshold(m, n)
    with pytest.raises(ValueError):
        apnull.p_value(0.5, m, n)


# ------------------------------------------------------------------------------------------------
# Caches
# ------------------------------------------------------------------------------------------------
def test_cache_returns_consistent_results():
    a = apnull.null_distribution(4, 30)
    b = apnull.null_distribution(4, 30)
    assert a is b
    assert apnull.null_distribution(4.0, 30.0) is a  # normalised key
    assert apnull.null_distribution(4, 30, "pr") is not a
    mc1 = apnull.null_distribution(4, 30, method="mc", draws=1000, seed=5)
    mc2 = apnull.null_distribution(4, 30, method="mc", draws=1000, seed=5)
    assert mc1 is mc2
    mc3 = apnull.null_distribution(4, 30, method="mc", draws=1000, seed=6)
    assert not np.array_equal(mc1.draws, mc3.draws)
    # seed=None: not cached, a fresh seed each time, reproducible with the recorded seed
    f1 = apnull.null_distribution(4, 30, method="mc", draws=1000)
    f2 = apnull.null_distribution(4, 30, method="mc", draws=1000)
    assert f1 is not f2 and f1.seed != f2.seed
    again = apnull.null_distribution(4, 30, method="mc", draws=1000, seed=f1.seed)
    np.testing.assert_array_equal(again.draws, f1.draws)
    # threshold / p_value go through the same cache and agree with the law
    assert apnull.threshold(4, 30, q=0.9) == a.quantile(0.9)
    assert apnull.p_value(0.4, 4, 30) == a.pvalue(0.4)


def test_cache_is_bounded_and_eviction_keeps_answers():
    first = apnull.threshold(3, 5, q=0.9)
    first_p = apnull.p_value(0.6, 3, 5)
    for n in range(6, 6 + sg.CACHE_SIZE + 5):
        apnull.null_distribution(2, n)
    assert len(sg._CACHE) <= sg.CACHE_SIZE
    assert apnull.threshold(3, 5, q=0.9) == first
    assert apnull.p_value(0.6, 3, 5) == first_p



def test_exact_sf_does_not_merge_distinct_close_support_values():
    law = apnull.null_distribution(6, 30, method="exact")
    gaps = np.diff(law.values)
    close = np.flatnonzero(gaps < 1e-9)
    assert close.size > 0  # distinct exact rationals (integer path) closer than VALUE_TOL
    cum = np.cumsum(law.counts)
    for i in close[:20]:
        hi = law.values[i + 1]
        exact_sf = (law.total - cum[i]) / law.total  # P(X >= values[i+1]) from integer counts
        exact_cdf = cum[i] / law.total  # P(X <= values[i])
        assert law.pvalue(hi) == pytest.approx(exact_sf, abs=1e-12)
        assert law.cdf(law.values[i]) == pytest.approx(exact_cdf, abs=1e-12)


@pytest.mark.parametrize("m, n", [(1, 99_999), (1, 50_000)])
def test_auto_does_not_pick_a_slow_exact_law(m, n):
    assert sg.choose_method(m, n, "ap") != "exact"


def test_cache_is_bounded_in_bytes(monkeypatch):
    """Monte Carlo laws are big: the cache drops the oldest until its arrays fit its byte bound (newest kept)."""
    from apnull.memo import Memo

    monkeypatch.setattr(sg, "_CACHE", Memo(sg.CACHE_SIZE, 3 * 10**6, sizeof=sg._nbytes))
    laws = [apnull.null_distribution(30, 300 + i, method="mc", draws=50_000, seed=1) for i in range(4)]
    assert all(sg._nbytes(law) > 10**6 for law in laws)
    assert sg._CACHE.nbytes <= 3 * 10**6 and len(sg._CACHE) < 4
    assert sg._CACHE.values()[-1] is laws[-1]
    assert sg._CACHE.nbytes == sum(sg._nbytes(law) for law in sg._CACHE.values())
    monkeypatch.setattr(sg, "_CACHE", Memo(sg.CACHE_SIZE, 1, sizeof=sg._nbytes))
    apnull.null_distribution(30, 300, method="mc", draws=50_000, seed=1)
    apnull.null_distribution(30, 400, method="mc", draws=1000, seed=1)
    assert len(sg._CACHE) == 1
