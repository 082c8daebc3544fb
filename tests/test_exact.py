"""apnull.exact and apnull.law against brute-force enumeration, scipy and Monte Carlo."""

from __future__ import annotations

import math
from fractions import Fraction

import numpy as np
import pytest
from scipy import stats

import apnull
from apnull import exact
from apnull.hypergeom import EXACT_INTEGER_MAX_DRAWS
from apnull.law import VALUE_TOL, NullDistribution
from reference import SMALL_SIZES, bestgen_expected_ap, enumerate_ap, ks_critical, ranking_from_placement


# ------------------------------------------------------------------------------------------------
# E[AP] and Var[AP]
# ------------------------------------------------------------------------------------------------
@pytest.mark.parametrize("m, n", SMALL_SIZES)
def test_mean_and_variance_equal_enumeration_exactly(m, n):
    ref = enumerate_ap(m, n)
    assert ref.total == math.comb(m + n, m)
    mean, var = ref.mean(), ref.var()
    assert exact.expected_ap_fraction(m, n) == mean
    assert exact.ap_variance_fraction(m, n) == var
    assert apnull.expected_ap(m, n) == pytest.approx(float(mean), rel=1e-14, abs=0)
    assert apnull.ap_variance(m, n) == float(var)  # rational sum rounded once
    assert bestgen_expected_ap(m, n) == mean


def test_known_values():
    # DESIGN / docstring: m = 4, n = 30 gives 0.201, not m / N = 0.118
    assert apnull.expected_ap(4, 30) == pytest.approx(0.2010216575, abs=1e-10)
    assert 4 / 34 == pytest.approx(0.1176, abs=1e-4)
    assert apnull.expected_ap(1, 0) == 1.0
    assert apnull.expected_ap(7, 0) == 1.0
    assert apnull.ap_variance(1, 0) == 0.0
    assert apnull.ap_variance(7, 0) == 0.0
    assert exact.ap_variance_fraction(7, 0) == 0
    # m = 1: AP = 1/r, r uniform on 1..N
    for N in (1, 2, 5, 17, 100):
        H = sum(Fraction(1, k) for k in range(1, N + 1))
        H2 = sum(Fraction(1, k * k) for k in range(1, N + 1))
        assert exact.expected_ap_fraction(1, N - 1) == H / N
        assert exact.ap_variance_fraction(1, N - 1) == H2 / N - (H / N) ** 2


@pytest.mark.parametrize("m, n", [(1, 40), (4, 30), (4, 32), (10, 50), (25, 25), (30, 3), (12, 200)])
def test_bestgen_double_sum_equals_expected_ap(m, n):
    """The R notebook's RandomAPExact (Bestgen 2015) equals the closed form, exactly and in floats."""
    closed = exact.expected_ap_fraction(m, n)
    if m * n <= 1000:
        assert bestgen_expected_ap(m, n) == closed
    # the R notebook's code in floating point (dhyper = scipy's hypergeom pmf)
    x, k = np.meshgrid(np.arange(1, m + 1), np.arange(0, m + n + 1), indexing="ij")
    valid = (k >= x) & (k <= n + x)
    dh = stats.hypergeom.pmf(x[valid], m + n, m, k[valid])
    total = np.sum(dh * (x[valid] / k[valid]) ** 2)
    assert total / m == pytest.approx(float(closed), rel=1e-10)
    assert apnull.expected_ap(m, n) == pytest.approx(float(closed), rel=1e-14)


def test_expected_ap_is_not_m_over_N():
    for m in range(1, 31):
        for n in range(0, 31):
            e = exact.expected_ap_fraction(m, n)
            if n == 0:
                assert e == 1 == Fraction(m, m + n)  # the only trivial case
            else:
                assert e > Fraction(m, m + n), (m, n)


@pytest.mark.parametrize("m, n", [(3, 2500), (50, 2100), (1, 3000), (300, 3000), (1000, 1500)])
def test_float_paths_match_rationals_beyond_2000_items(m, n):
    """For N > 2000 Var[AP] is summed in floats; check it against the rational formula."""
    var_f = float(exact.ap_variance_fraction(m, n))
    assert apnull.ap_variance(m, n) == pytest.approx(var_f, rel=1e-9)
    assert apnull.expected_ap(m, n) == pytest.approx(float(exact.expected_ap_fraction(m, n)), rel=1e-13)


@pytest.mark.parametrize("m, n", [(10_000, 1)])
def test_variance_float_path_absolute_accuracy_when_m_much_larger_than_n(m, n):
    # cancellation costs relative accuracy here (the variance is ~1e-8), not absolute accuracy
    mpmath = pytest.importorskip("mpmath")
    with mpmath.workdps(50):
        N = m + n
        H = mpmath.fsum(mpmath.mpf(1) / k for k in range(1, N + 1))
        H2 = mpmath.fsum(mpmath.mpf(1) / k**2 for k in range(1, N + 1))
        ew, ew2 = exact._variance_terms(m, N, H, H2, mpmath.mpf(1))
        ref = (ew2 - ew * ew) / (m * m)
        assert abs(apnull.ap_variance(m, n) - ref) < 1e-15


def test_large_sizes_are_finite_and_sane():
    for m, n in [(10, 10**6 - 10), (5000, 5000), (1, 999_999)]:
        e, v = apnull.expected_ap(m, n), apnull.ap_variance(m, n)
        assert m / (m + n) < e < 1
        assert 0 < v < 0.25


@pytest.mark.parametrize("bad", [(0, 5), (-1, 5), (2, -1), (2.5, 3), (2, 3.5), ("a", 3), (True, 3),
                                 (10**6, 1)])
def test_closed_forms_validate_sizes(bad):
    for func in (apnull.expected_ap, apnull.ap_variance, exact.expected_ap_fraction, exact.pr_law):
        with pytest.raises(ValueError, match=r"m |n |m \+ n"):
            func(*bad)


def test_integral_floats_accepted():
    assert apnull.expected_ap(4.0, 30.0) == apnull.expected_ap(4, 30) == apnull.expected_ap(np.int64(4), 30)


# ------------------------------------------------------------------------------------------------
# Precision@R law
# ------------------------------------------------------------------------------------------------
@pytest.mark.parametrize("m, n", SMALL_SIZES[::3] + [(4, 32), (10, 3), (30, 300)])
def test_pr_law_is_hypergeometric(m, n):
    law = exact.pr_law(m, n)
    assert law.metric == "pr" and law.method == "exact" and law.error_bound == 0.0
    hg = stats.hypergeom(m + n, m, m)
    hits = np.rint(law.values * m).astype(int)
    np.testing.assert_allclose(law.values, hits / m, atol=1e-15)
    np.testing.assert_allclose(law.probs, hg.pmf(hits), rtol=1e-12, atol=0)
    assert law.probs.sum() == pytest.approx(1.0, abs=1e-12)
    assert np.all(law.probs > 0)
    assert law.mean == pytest.approx(m / (m + n), abs=1e-12)
    support = np.arange(0, m + 1)
    pmf = hg.pmf(support)
    hg_var = np.sum(pmf * (support - m * m / (m + n)) ** 2)  # scipy's var() is nan for M = 1
    assert law.std == pytest.approx(math.sqrt(hg_var) / m, abs=1e-12)
    for q in (0.05, 0.5, 0.9, 0.95, 0.99):
        assert law.quantile(q) == pytest.approx(hg.ppf(q) / m, abs=1e-12)


@pytest.mark.parametrize("m, n", [(1, 0), (3, 1), (4, 30), (25, 7), (60, 5000), (300, 999_000),
                                  (EXACT_INTEGER_MAX_DRAWS, 40)])
def test_pr_law_probabilities_are_the_correctly_rounded_fractions(m, n):
    """Up to EXACT_INTEGER_MAX_DRAWS positives each probability is the float nearest the exact fraction
    C(m, h) C(n, m - h) / C(m + n, m) (scipy's pmf is off by up to 2.5e-10 relative in far tails)."""
    law = exact.pr_law(m, n)
    total = math.comb(m + n, m)
    for v, p in zip(law.values, law.probs):
        h = round(v * m)
        assert p == float(Fraction(math.comb(m, h) * math.comb(n, m - h), total))


def test_pr_law_beyond_the_integer_bound_is_scipys_hypergeometric():
    m, n = EXACT_INTEGER_MAX_DRAWS + 1, 500
    law = exact.pr_law(m, n)
    hits = np.rint(law.values * m).astype(int)
    np.testing.assert_allclose(law.probs, stats.hypergeom(m + n, m, m).pmf(hits), rtol=1e-12)


@pytest.mark.parametrize("m, n", SMALL_SIZES)
def test_pr_law_equals_enumeration(m, n):
    ref = enumerate_ap(m, n)
    law = exact.pr_law(m, n)
    counts = ref.pr_counts()
    assert len(counts) == law.values.size
    for (value, count), v, p in zip(counts, law.values, law.probs):
        assert v == pytest.approx(float(value), abs=1e-15)
        assert p == pytest.approx(count / ref.total, rel=1e-12)


# ------------------------------------------------------------------------------------------------
# Exact AP law
# ------------------------------------------------------------------------------------------------
@pytest.mark.parametrize("m, n", SMALL_SIZES)
def test_ap_law_exact_equals_enumeration(m, n):
    ref = enumerate_ap(m, n)
    law = exact.ap_law_exact(m, n)
    assert law.metric == "ap" and law.method == "exact" and law.error_bound == 0.0
    assert law.total == ref.total
    counts = ref.ap_counts()
    assert law.values.size == len(counts) == law.counts.size
    assert np.all(np.diff(law.values) > 0)
    exact_values = np.array([float(v) for v, _ in counts])
    np.testing.assert_allclose(law.values, exact_values, rtol=0, atol=1e-15)
    assert law.counts.tolist() == [c for _, c in counts]
    assert law.counts.sum() == ref.total
    np.testing.assert_allclose(law.probs, [c / ref.total for _, c in counts], rtol=1e-14)
    # moments of the law equal the closed forms
    assert law.mean == pytest.approx(apnull.expected_ap(m, n), abs=1e-14)
    assert law.std == pytest.approx(math.sqrt(apnull.ap_variance(m, n)), abs=1e-12)


# (4, 30): 46,376 placements enumerated in rationals, 3.5 s of CPU with the quantile test's case below:
# slow; (3, 33) and the small sizes keep both claims in the quick run
@pytest.mark.parametrize("m, n", [pytest.param(4, 30, marks=pytest.mark.slow), (3, 33)])
def test_ap_law_exact_equals_enumeration_medium(m, n):
    ref = enumerate_ap(m, n)
    law = exact.ap_law_exact(m, n)
    counts = ref.ap_counts()
    assert law.counts.tolist() == [c for _, c in counts]
    np.testing.assert_allclose(law.values, [float(v) for v, _ in counts], rtol=0, atol=1e-15)


def test_ap_law_exact_float_path():
    """N = 43: m * lcm(1..43) >= 2^62, so sums are kept as merged floats; moments must still hold."""
    m, n = 3, 40
    assert m * exact._lcm_upto(m + n) >= 2**62
    law = exact.ap_law_exact(m, n)
    ref = enumerate_ap(m, n)
    counts = ref.ap_counts()
    assert law.counts.sum() == ref.total
    assert law.values.size == len(counts)
    np.testing.assert_allclose(law.values, [float(v) for v, _ in counts], rtol=0, atol=1e-12)
    assert law.counts.tolist() == [c for _, c in counts]
    assert law.mean == pytest.approx(apnull.expected_ap(m, n), abs=1e-13)


def test_ap_law_exact_rejects_too_many_placements():
    with pytest.raises(ValueError, match="placements") as info:
        exact.ap_law_exact(10, 40)  # C(50, 10) ~ 1e10
    assert "grid" in str(info.value) or "mc" in str(info.value)
    with pytest.raises(ValueError, match="placements"):
        exact.ap_law_exact(4, 30, max_placements=1000)


# ------------------------------------------------------------------------------------------------
# cdf / sf / quantile conventions
# ------------------------------------------------------------------------------------------------
@pytest.mark.parametrize("m, n", [(1, 6), (2, 5), (3, 7), (4, 9), (5, 12)])
def test_cdf_sf_at_support_and_between(m, n):
    ref = enumerate_ap(m, n)
    law = exact.ap_law_exact(m, n)
    table = ref.ap_cdf_table()
    prev = Fraction(0)
    for value, cum in table:
        x = float(value)
        assert law.cdf(x) == pytest.approx(float(cum), abs=1e-13)  # P(X <= x) includes x
        assert law.pvalue(x) == pytest.approx(float(1 - prev), abs=1e-13)  # P(X >= x) includes x
        assert law.pmf(x) == pytest.approx(float(cum - prev), abs=1e-13)
        prev = cum
    # between support points and outside the support
    values = [float(v) for v, _ in table]
    mids = [(a + b) / 2 for a, b in zip(values, values[1:])]
    for x in mids[:: max(1, len(mids) // 50)]:
        assert law.cdf(x) == pytest.approx(float(ref.cdf(x)), abs=1e-13)
        assert law.pvalue(x) == pytest.approx(float(ref.pvalue(x)), abs=1e-13)
    assert law.cdf(values[0] - 1e-6) == 0.0
    assert law.cdf(-1.0) == 0.0
    assert law.cdf(1.0) == pytest.approx(1.0, abs=1e-15)
    assert law.pvalue(0.0) == pytest.approx(1.0, abs=1e-15)
    assert law.pvalue(1.0) == pytest.approx(1 / ref.total, rel=1e-12)  # only "all on top" reaches 1
    assert law.pvalue(1.0 + 1e-6) == 0.0
    # vectorised
    xs = np.array(values[:5])
    np.testing.assert_allclose(law.cdf(xs), [law.cdf(x) for x in xs])
    np.testing.assert_allclose(law.pvalue(xs), [law.pvalue(x) for x in xs])


@pytest.mark.parametrize("m, n", [(2, 5), (3, 7), (4, 9), (5, 12)])
def test_sf_of_ap_computed_in_another_order(m, n):
    """AP computed by apnull.average_precision (or summed backwards) still hits its support point."""
    ref = enumerate_ap(m, n)
    law = exact.ap_law_exact(m, n)
    N = m + n
    step = max(1, ref.total // 400)
    for idx in range(0, ref.total, step):
        placement, value = ref.placements[idx], ref.ap[idx]
        truth_sf, truth_cdf = float(ref.pvalue(value)), float(ref.cdf(value))
        ap1 = apnull.average_precision(ranking_from_placement(placement, N))
        ap2 = sum(i / r for i, r in reversed(list(enumerate(placement, 1)))) / m
        ap3 = math.fsum(i / (m * r) for i, r in enumerate(placement, 1))
        for ap in (ap1, ap2, ap3, float(value) + 1e-12, float(value) - 1e-12):
            assert law.pvalue(ap) == pytest.approx(truth_sf, abs=1e-13)
            assert law.cdf(ap) == pytest.approx(truth_cdf, abs=1e-13)
        # the public p-value agrees
        assert apnull.p_value(ap1, m, n, method="exact") == pytest.approx(truth_sf, abs=1e-13)


@pytest.mark.parametrize("m, n", [(2, 5), (3, 7), (4, 9), (5, 12), pytest.param(4, 30, marks=pytest.mark.slow)])
def test_quantile_is_smallest_x_with_cdf_at_least_q(m, n):
    ref = enumerate_ap(m, n)
    law = exact.ap_law_exact(m, n)
    rng = np.random.default_rng(5)
    qs = [float(q) for q in rng.random(100)] + [0.0, 0.05, 0.25, 0.5, 0.75, 0.9, 0.95, 0.99, 0.999, 1.0]
    for q in qs:
        # the reference reads q as the decimal the user typed (0.05 means 1/20, not the binary
        # float just above it), as R's qhyper does with its fuzz
        assert law.quantile(q) == pytest.approx(float(ref.quantile(Fraction(repr(q)))), abs=1e-15), q
    # q exactly at a cumulative probability gives that support value (R: qhyper(phyper(x)) = x)
    table = ref.ap_cdf_table()
    for value, cum in table[:: max(1, len(table) // 60)]:
        assert law.quantile(float(cum)) == pytest.approx(float(value), abs=1e-15)
    assert law.quantile(0.0) == pytest.approx(float(table[0][0]))
    assert law.quantile(1.0) == 1.0
    np.testing.assert_allclose(law.quantile([0.5, 0.95]), [law.quantile(0.5), law.quantile(0.95)])


@pytest.mark.parametrize("q", [-0.1, 1.1, float("nan")])
def test_quantile_rejects_bad_q(q):
    law = exact.ap_law_exact(3, 4)
    with pytest.raises(ValueError, match="q must lie in"):
        law.quantile(q)


def test_r_qhyper_convention_on_pr_law():
    # A case where F hits q exactly: m = 1, n = 1: Pr@R is 0 or 1 with probability 1/2 each.
    law = exact.pr_law(1, 1)
    assert law.quantile(0.5) == 0.0  # qhyper(0.5, 1, 1, 1) = 0
    assert law.quantile(0.5000001) == 1.0
    assert law.cdf(0.0) == 0.5 and law.pvalue(0.0) == 1.0 and law.pvalue(1.0) == 0.5


# ------------------------------------------------------------------------------------------------
# Grid law
# ------------------------------------------------------------------------------------------------
def _step_cdf(values, probs, counts=None, total=None):
    # exact laws: cumulate the integer counts (a float cumsum of 10^6 probabilities drifts ~1e-12)
    cum = np.cumsum(counts) / total if counts is not None else np.cumsum(probs)

    def F(t):
        idx = np.searchsorted(values, t, side="right")
        return np.where(idx > 0, cum[np.maximum(idx - 1, 0)], 0.0)

    return F


GRID_CASES = [(5, 12, None), (5, 12, 64), (5, 12, 257), (6, 30, None), (6, 30, 300), (8, 20, None),
              (8, 20, 1000), (3, 40, 100), (1, 30, 50), (2, 0, 64), (7, 2, 128), (30, 3, None), (12, 6, 200),
              (40, 2, 100)]


@pytest.mark.parametrize("m, n, G", GRID_CASES)
def test_grid_law_cdf_bracketed_by_exact(m, n, G):
    ex = exact.ap_law_exact(m, n, max_placements=4_000_000)
    grid = exact.ap_law_grid(m, n, grid_size=G)
    eb = grid.error_bound
    assert grid.method == "grid" and grid.metric == "ap"
    assert eb == pytest.approx(m / grid.grid_size)
    if G is None:
        assert eb <= 1e-3
    assert grid.dropped_mass < 1e-12
    assert grid.probs.sum() == pytest.approx(1.0, abs=1e-12)
    assert grid.values.min() >= 0 and grid.values.max() <= 1.0
    F = _step_cdf(ex.values, None, ex.counts, ex.total)
    Fg = _step_cdf(grid.values, grid.probs)
    slack = 1e-12  # positions are floats: allow a rounding-sized shift
    xs = ex.values[:: max(1, ex.values.size // 100_000)]
    gs = grid.values[:: max(1, grid.values.size // 100_000)]
    t = np.concatenate([np.linspace(-0.01, 1.01, 20001), xs, xs + eb, xs - eb, np.nextafter(xs + eb, 2),
                        np.nextafter(xs - eb, -1), gs, np.nextafter(gs, -1)])
    fg = Fg(t)
    lower = F(t - eb - slack) - 1e-12
    upper = F(t + eb + slack) + 1e-12 + grid.dropped_mass
    bad_low = np.flatnonzero(fg < lower)
    bad_high = np.flatnonzero(fg > upper)
    assert bad_low.size == 0, (t[bad_low[:5]], fg[bad_low[:5]], lower[bad_low[:5]])
    assert bad_high.size == 0, (t[bad_high[:5]], fg[bad_high[:5]], upper[bad_high[:5]])
    # quantiles within the error bound
    for q in (0.05, 0.25, 0.5, 0.75, 0.9, 0.95, 0.99, 0.999):
        assert abs(grid.quantile(q) - ex.quantile(q)) <= eb + 1e-12, q
    # the mean is exact but for fragments carried past AP = 1 and folded back onto 1 (documented):
    # those have true values above 1 - eb and move by less than eb
    folded = ex.pvalue(1 - eb)
    assert abs(grid.mean - apnull.expected_ap(m, n)) <= eb * folded + 1e-12
    if G is None:
        assert grid.mean == pytest.approx(apnull.expected_ap(m, n), abs=1e-9)
    # the SD is within the error bound
    assert abs(grid.std - math.sqrt(apnull.ap_variance(m, n))) <= eb
    # p-value bounds bracket the exact p-value
    for x in ex.values[:: max(1, ex.values.size // 200)]:
        lo, hi = grid.pvalue_bounds(x)
        p = ex.pvalue(x)
        assert lo - 1e-12 <= p <= hi + 1e-12


@pytest.mark.parametrize("m, n", [(10, 50), (25, 100), (40, 300)])
def test_grid_law_moments_larger(m, n):
    grid = exact.ap_law_grid(m, n)
    assert grid.mean == pytest.approx(apnull.expected_ap(m, n), abs=1e-9)
    assert abs(grid.std - math.sqrt(apnull.ap_variance(m, n))) <= grid.error_bound
    assert grid.dropped_mass < 1e-12


def test_grid_law_tol_and_grid_size():
    g = exact.ap_law_grid(6, 30, tol=1e-4)
    assert g.grid_size == 60000 and g.error_bound <= 1e-4
    assert exact.grid_size_for(6, 1e-3) == 6000
    assert exact.grid_size_for(1, 0.5) == 64  # at least 64 cells
    g = exact.ap_law_grid(6, 30, grid_size=6000)
    assert g.grid_size == 6000


@pytest.mark.parametrize("m, n", [(40, 300), (20, 200)])
def test_grid_law_agrees_with_monte_carlo(m, n):
    """KS distance between the grid law and 10^6 Monte Carlo draws.

    The exact F lies between F_grid(t - eb) and F_grid(t + eb), so the draws' ECDF must lie in that
    band up to the KS critical value at level 1e-6 (~0.0027 for 10^6 draws). The plain KS distance
    to the grid law is also small: in practice the grid's rounding errors cancel.
    """
    draws = 1_000_000
    grid = exact.ap_law_grid(m, n)
    eb = grid.error_bound
    sample = np.sort(apnull.sample_null(m, n, draws, seed=20240607).ap)
    Fg = _step_cdf(grid.values, grid.probs)
    crit = ks_critical(draws, 1e-6)
    assert 0.0026 < crit < 0.0028
    t = np.concatenate([np.linspace(0, 1, 20001), grid.values, sample[:: draws // 20000]])
    ecdf_right = np.searchsorted(sample, t, side="right") / draws
    ecdf_left = np.searchsorted(sample, t, side="left") / draws
    assert np.max(ecdf_right - Fg(t + eb)) <= crit
    assert np.max(Fg(t - eb) - ecdf_left) <= crit
    # plain KS distance (grid cells vs draws; a cell at c/G stands for values within eb of it)
    ks = max(np.max(ecdf_right - Fg(t)), np.max(Fg(t - 1e-12) - ecdf_left))
    print(f"KS distance grid vs MC for ({m}, {n}): {ks:.5f} (critical {crit:.5f})")
    assert ks <= crit + 0.002
    assert sample.mean() == pytest.approx(apnull.expected_ap(m, n), abs=5 * math.sqrt(apnull.ap_variance(m, n) / draws))


def test_grid_law_rejects_too_much_work():
    with pytest.raises(ValueError, match="grid AP law"):
        exact.ap_law_grid(1000, 100_000)
    with pytest.raises(ValueError, match="grid_size"):
        exact.ap_law_grid(4, 30, grid_size=8)
    with pytest.raises(ValueError, match="m "):
        exact.ap_law_grid(0, 30)


# ------------------------------------------------------------------------------------------------
# NullDistribution basics
# ------------------------------------------------------------------------------------------------
def test_from_draws_empirical_law():
    draws = np.array([0.5, 0.25, 0.5, 1.0, 0.25, 0.25])
    law = NullDistribution.from_draws("ap", 2, 3, draws, seed=9)
    assert law.method == "mc" and law.seed == 9 and law.error_bound is None
    np.testing.assert_array_equal(law.values, [0.25, 0.5, 1.0])
    np.testing.assert_allclose(law.probs, [3 / 6, 2 / 6, 1 / 6])
    assert law.cdf(0.5) == pytest.approx(5 / 6)
    assert law.pvalue(0.5) == pytest.approx((1 + 3) / (1 + 6))
    assert law.pvalue(2.0) == pytest.approx(1 / 7)
    assert law.quantile(0.5) == pytest.approx(np.quantile(draws, 0.5))
    assert law.mean == pytest.approx(draws.mean())
    assert law.std == pytest.approx(draws.std(ddof=1))
    assert "Monte Carlo" in law.describe()
    assert law.pvalue(0.5 - VALUE_TOL / 2) == law.pvalue(0.5)
