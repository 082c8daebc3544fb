"""apnull.hypergeom (the law of Precision@K, the fit) and apnull.views.hypergeometric (the page's shuffled
rankings and tables)."""

from __future__ import annotations

import math
import re
from fractions import Fraction

import numpy as np
import pytest
from scipy import stats

import apnull
from apnull import hypergeom as hg
from apnull import sampling
from apnull.views import hypergeometric as hv

# sizes exercising every sampling path: comparisons (small min(m, n)), marks, complement (n < m), n = 0
SIZES = [(4, 32, 4), (4, 32, 1), (4, 32, 36), (5, 3, 6), (10, 40, 7), (30, 100, 50), (50, 20, 30), (1, 9, 3)]


def exact_hit_probs(m, n, k):
    """P(hits = j) by counting: C(m, j) C(n, k - j) / C(m + n, k), as Fractions."""
    total = math.comb(m + n, k)
    return {j: Fraction(math.comb(m, j) * math.comb(n, k - j), total) for j in range(0, min(m, k) + 1)
            if k - j <= n}


def qhyper(q, m, n, k):
    """R's qhyper: smallest j with P(X <= j) >= q, exactly."""
    acc = Fraction(0)
    for j, p in sorted(exact_hit_probs(m, n, k).items()):
        acc += p
        if acc >= Fraction(q).limit_denominator(10**6):
            return j
    raise AssertionError("unreachable")


# ------------------------------------------------------------- the R notebook's reference numbers


def test_reference_thresholds():
    """m = 4, n = 32, k = m: m/(m+n) = 1/9 = 0.1111 and qhyper(0.95, 4, 32, 4) / 4 = 2 / 4 = 0.5."""
    sample = hv.shuffled_precision_at_k(4, 32, 4, 10_000, seed=2022)
    table = hv.thresholds_table(4, 32, 4, sample.precision)
    assert list(table["name"]) == ["m / (m + n)", "empirical mean", "95% chance threshold"]  # R: "hyper 95pct"
    values = dict(zip(table["name"], table["value"]))
    assert values["m / (m + n)"] == pytest.approx(1 / 9) and round(values["m / (m + n)"], 4) == 0.1111
    assert qhyper(0.95, 4, 32, 4) == 2
    assert values["95% chance threshold"] == 0.5
    assert values["empirical mean"] == pytest.approx(sample.precision.mean())
    # P(X <= 1) = 0.9473 < 0.95 <= P(X <= 2) = 0.99781: the 95th percentile really is 2 hits
    probs = exact_hit_probs(4, 32, 4)
    assert float(probs[0] + probs[1]) == pytest.approx(0.94728, abs=1e-5)
    assert float(probs[0] + probs[1] + probs[2]) == pytest.approx(0.99781, abs=1e-5)
    # the empirical mean is within 4 SE of 1/9 (SD of Precision@4 = sqrt(Var[hits]) / 4)
    var_hits = 4 * (4 / 36) * (32 / 36) * (32 / 35)
    assert abs(values["empirical mean"] - 1 / 9) < 4 * math.sqrt(var_hits) / 4 / 100


@pytest.mark.parametrize("m, n, k", [(4, 32, 4), (4, 32, 9), (7, 3, 5), (10, 90, 20), (3, 0, 2), (1, 1, 1)])
def test_hypergeom_ppf_matches_counting(m, n, k):
    for q in (0.5, 0.9, 0.95, 0.99):
        assert hg.hypergeom_ppf(m, n, k, q) == qhyper(q, m, n, k) / k


@pytest.mark.parametrize("m, n, k", SIZES)
def test_hypergeom_pmf_is_exact(m, n, k):
    hits, probs = hg.hypergeom_pmf(m, n, k)
    exact = exact_hit_probs(m, n, k)
    assert list(hits) == sorted(j for j, p in exact.items())
    assert list(probs) == [float(exact[j]) for j in hits]  # each the float nearest the exact fraction
    assert probs.sum() == pytest.approx(1.0)


def test_hypergeom_pmf_beyond_the_integer_bound_is_scipys():
    m, n, k = 3000, 7000, hg.EXACT_INTEGER_MAX_DRAWS + 1
    hits, probs = hg.hypergeom_pmf(m, n, k)
    np.testing.assert_allclose(probs, stats.hypergeom(m + n, m, k).pmf(hits), rtol=1e-9)
    assert probs.sum() == pytest.approx(1.0)


# --------------------------------------------------------------------------- the shuffled law


def chi_square_p(hits, m, n, k):
    """Independent chi-square (scipy.stats.chisquare). The pmf is unimodal, so the cells expecting
    fewer than 5 draws sit at the two ends: each end is folded into its nearest large cell."""
    support, probs = hg.hypergeom_pmf(m, n, k)
    obs = np.array([(hits == j).sum() for j in support], dtype=float)
    assert obs.sum() == hits.size  # nothing outside the support
    exp = probs * hits.size
    big = np.nonzero(exp >= 5)[0]
    if big.size < 2:
        return 1.0
    lo, hi = big[0], big[-1]
    o, e = obs[lo:hi + 1].copy(), exp[lo:hi + 1].copy()
    o[0] += obs[:lo].sum()
    e[0] += exp[:lo].sum()
    o[-1] += obs[hi + 1:].sum()
    e[-1] += exp[hi + 1:].sum()
    return stats.chisquare(o, e * o.sum() / e.sum()).pvalue


@pytest.mark.parametrize("m, n, k", SIZES)
def test_shuffled_precision_follows_hypergeometric_law(m, n, k):
    sample = hv.shuffled_precision_at_k(m, n, k, 20_000, seed=7)
    hits = hg.hit_counts(sample.precision, k)
    np.testing.assert_allclose(hits / k, sample.precision)  # values are exactly j / k
    assert chi_square_p(hits, m, n, k) > 1e-3
    fit = hg.pmf_fit(sample.precision, m, n, k)
    assert fit["p_value"] > 1e-3 or math.isnan(fit["p_value"])
    assert fit["tv"] < 0.03


@pytest.mark.parametrize("m, n, k", SIZES)
def test_hypergeometric_draws_follow_the_law(m, n, k):
    draws = hg.hypergeom_precision_at_k(m, n, k, 20_000, seed=11)
    hits = hg.hit_counts(draws, k)
    assert chi_square_p(hits, m, n, k) > 1e-3


def test_pmf_fit_matches_scipy_and_rejects_a_wrong_law():
    sample = hv.shuffled_precision_at_k(4, 32, 4, 10_000, seed=2022)
    fit = hg.pmf_fit(sample.precision, 4, 32, 4)
    hits = hg.hit_counts(sample.precision, 4)
    # cells 0, 1, 2, 3 expect 6105, 3368, 505 and 21.7 draws; 4 hits (0.17 expected) joins the last cell
    support, probs = hg.hypergeom_pmf(4, 32, 4)
    obs = np.array([(hits == j).sum() for j in support], dtype=float)
    exp = probs * hits.size
    o = np.array([obs[0], obs[1], obs[2], obs[3] + obs[4]])
    e = np.array([exp[0], exp[1], exp[2], exp[3] + exp[4]])
    ref = stats.chisquare(o, e)
    assert fit["cells"] == 4 and fit["df"] == 3
    assert fit["chi2"] == pytest.approx(ref.statistic) and fit["p_value"] == pytest.approx(ref.pvalue)
    assert fit["tv"] == pytest.approx(0.5 * np.abs(obs / hits.size - probs).sum())
    # a binomial sample (drawing with replacement) is told apart at 200,000 draws
    wrong = np.random.default_rng(0).binomial(4, 4 / 36, 200_000) / 4
    assert hg.pmf_fit(wrong, 4, 32, 4)["p_value"] < 1e-6
    # a value outside the support fails outright
    bad = hg.pmf_fit(np.array([0.25, 0.25, 1.5]), 4, 32, 4)
    assert bad["p_value"] == 0.0 and bad["tv"] > 0
    # a degenerate law (no negatives: every draw has k hits) leaves one cell
    deg = hg.pmf_fit(hv.shuffled_precision_at_k(3, 0, 2, 100, seed=1).precision, 3, 0, 2)
    assert deg["df"] == 0 and math.isnan(deg["p_value"]) and deg["tv"] == 0.0


def test_shuffled_blocks_are_the_common_sampler():
    """The page's rankings are sample_null's: same AP, and hits in the top m are Precision@R."""
    for m, n, k in ((4, 32, 4), (7, 5, 3), (3, 0, 3), (12, 50, 20)):
        block = hv.shuffled_block(m, n, k, 0, 0, 50)
        ap, pr, hits = sampling.draw_block(m, n, 0, 0, 50, top=k)
        np.testing.assert_array_equal(block.ap, ap)
        np.testing.assert_array_equal(block.precision, hits / k)
        whole = apnull.sample_null(m, n, 50, seed=0, top=k)
        np.testing.assert_array_equal(whole.ap, ap)
        np.testing.assert_array_equal(whole.precision_at_top, block.precision)
        at_r = hv.shuffled_block(m, n, m, 0, 0, 50)
        np.testing.assert_array_equal(at_r.precision, pr)


@pytest.mark.parametrize("m, n", [(4, 32), (5, 3), (30, 100), (1, 9)])
def test_ap_draws_agree_with_expected_ap(m, n):
    sample = hv.shuffled_precision_at_k(m, n, 1, 50_000, seed=123)
    se = math.sqrt(apnull.ap_variance(m, n) / sample.ap.size)
    assert abs(sample.ap.mean() - apnull.expected_ap(m, n)) < 4 * se
    # and the precision mean is m / (m + n) for any k
    for k in (1, m, m + n):
        p = hv.shuffled_precision_at_k(m, n, k, 50_000, seed=5).precision
        assert abs(p.mean() - m / (m + n)) < 4 * p.std() / math.sqrt(p.size) + 1e-12


def test_summary_table_against_the_library():
    sample = hv.shuffled_precision_at_k(4, 32, 4, 10_000, seed=2022)
    hyper = hg.hypergeom_precision_at_k(4, 32, 4, 10_000, seed=2022)
    table = hv.summary_table(4, 32, 4, sample, hyper).set_index("statistic")
    assert list(table.index) == ["AP (shuffled)", "Precision@K (shuffled)", "Precision@K (hypergeometric draws)"]
    ap = table.loc["AP (shuffled)"]
    assert ap["exact mean"] == pytest.approx(apnull.expected_ap(4, 32))
    assert ap["exact 95pct"] == pytest.approx(apnull.threshold(4, 32, "ap", 0.95, method="auto"))
    assert ap["exact method"].startswith("exact")
    assert ap["empirical mean"] == pytest.approx(sample.ap.mean())
    assert ap["empirical 95pct"] == pytest.approx(np.quantile(sample.ap, 0.95))  # type 7
    assert abs(ap["mean deviation (SE)"]) < 4
    pr = table.loc["Precision@K (shuffled)"]
    assert pr["exact mean"] == pytest.approx(1 / 9) and pr["exact 95pct"] == 0.5
    assert pr["empirical 95pct"] == pytest.approx(np.quantile(sample.precision, 0.95))
    assert pr["SE of mean"] == pytest.approx(sample.precision.std(ddof=1) / 100)
    assert table.loc["Precision@K (hypergeometric draws)", "empirical mean"] == pytest.approx(hyper.mean())
    # a size past exact enumeration uses the grid law and says so
    big = hv.shuffled_precision_at_k(20, 200, 20, 1000, seed=1)
    row = hv.summary_table(20, 200, 20, big).set_index("statistic").loc["AP (shuffled)"]
    assert row["exact method"].startswith("grid")
    assert row["exact 95pct"] == pytest.approx(apnull.threshold(20, 200, "ap", 0.95, method="auto"))


# --------------------------------------------------------------------------- reproducibility


def test_reproducible_by_seed():
    a = hv.shuffled_precision_at_k(4, 32, 4, 5000, seed=9)
    b = hv.shuffled_precision_at_k(4, 32, 4, 5000, seed=9)
    c = hv.shuffled_precision_at_k(4, 32, 4, 5000, seed=10)
    np.testing.assert_array_equal(a.precision, b.precision)
    np.testing.assert_array_equal(a.ap, b.ap)
    assert not np.array_equal(a.ap, c.ap)
    h1 = hg.hypergeom_precision_at_k(4, 32, 4, 5000, seed=9)
    np.testing.assert_array_equal(h1, hg.hypergeom_precision_at_k(4, 32, 4, 5000, seed=9))
    assert not np.array_equal(h1, hg.hypergeom_precision_at_k(4, 32, 4, 5000, seed=10))


@pytest.mark.parametrize("m, n, draws", [(4, 200, 300_000), (30, 100, 40_000)])
def test_draws_are_a_prefix_and_k_only_recounts(m, n, draws):
    """Fewer draws = the first draws of a longer run (across block boundaries); k does not move AP."""
    layout = hv.block_layout(m, draws)
    assert len(layout) >= 3 and sum(rows for _, rows in layout) == draws
    long = hv.shuffled_precision_at_k(m, n, 4, draws, seed=1)
    cut = layout[1][1] + 12_345  # inside the second block
    short = hv.shuffled_precision_at_k(m, n, 4, cut, seed=1)
    np.testing.assert_array_equal(long.ap[:cut], short.ap)
    np.testing.assert_array_equal(long.precision[:cut], short.precision)
    other_k = hv.shuffled_precision_at_k(m, n, 50, draws, seed=1)
    np.testing.assert_array_equal(long.ap, other_k.ap)
    assert not np.array_equal(long.precision, other_k.precision)
    blocks = list(hv.iter_shuffled(m, n, 4, draws, 1))
    assert len(blocks) == len(layout)
    np.testing.assert_array_equal(np.concatenate([b.ap for b in blocks]), long.ap)


def test_large_n_small_m_is_few_blocks():
    """Blocks are sized by m, not by m + n: 10^6 draws of (4, 99,996) in 8 blocks."""
    assert len(hv.block_layout(4, 1_000_000)) == 8
    sample = hv.shuffled_precision_at_k(4, 99_996, 100, 20_000, seed=3)
    assert abs(sample.ap.mean() - apnull.expected_ap(4, 99_996)) < 4 * math.sqrt(apnull.ap_variance(4, 99_996) / 20_000)


def test_no_seed_draws_a_fresh_one():
    a = hv.shuffled_precision_at_k(10, 90, 10, 1000)
    b = hv.shuffled_precision_at_k(10, 90, 10, 1000)
    assert not np.array_equal(a.ap, b.ap)


# --------------------------------------------------------------------------- errors


@pytest.mark.parametrize(
    "args, message",
    [
        ((0, 32, 4, 1000), "m (number of positives) must be at least 1, got 0"),
        ((4, -1, 4, 1000), "n (number of negatives) must be at least 0, got -1"),
        ((4, 32, 0, 1000), "k (top positions counted) must lie between 1 and m + n = 36, got 0"),
        ((4, 32, 37, 1000), "k (top positions counted) must lie between 1 and m + n = 36, got 37"),
        ((4, 32, 2.5, 1000), "k (top positions counted) must be a whole number"),
        ((4, 32, 4, 99), "draws must be at least 100, got 99"),
        ((4, 32, 4, 1_000_001), "draws must be at most 1,000,000"),
        ((4, 32, 4, 1000.5), "draws must be a whole number"),
        ((500_000, 500_001, 4, 1000), "m + n must be at most 1,000,000 items"),
        ((5000, 5000, 4, 1_000_000), "too much work"),
        ((True, 32, 4, 1000), "must be a whole number"),
    ],
)
def test_errors(args, message):
    with pytest.raises(ValueError) as exc:
        hv.shuffled_precision_at_k(*args, seed=1)
    assert message in str(exc.value)


def test_direct_draws_check_their_input():
    for args, message in (((0, 32, 4), "m (number of positives) must be at least 1"),
                          ((4, 32, 37), "k (top positions counted) must lie between 1 and m + n = 36")):
        with pytest.raises(ValueError, match=re.escape(message)):
            hg.hypergeom_precision_at_k(*args, 1000, seed=1)


def test_error_messages_say_what_to_change():
    with pytest.raises(ValueError, match=r"use at most [\d,]+ draws, or smaller or fewer sizes"):
        hv.check_request(5000, 5000, 4, 1_000_000)
    with pytest.raises(ValueError, match="seed must be at least 0"):
        hv.shuffled_precision_at_k(4, 32, 4, 1000, seed=-1)
    with pytest.raises(ValueError, match="q must lie in"):
        hg.hypergeom_ppf(4, 32, 4, 1.5)
    with pytest.raises(ValueError, match="at least one draw"):
        hv.thresholds_table(4, 32, 4, [])
    assert hv.check_request(4, 32, 4, 10_000) == (4, 32, 4, 10_000)


def test_hypergeom_ppf_at_a_level_equal_to_a_cumulative_probability():
    """m = n = 21, k = 7 is symmetric, so P(hits <= 3) = 1/2 exactly: the median is 3 hits (qhyper's
    smallest j with P(X <= j) >= q). scipy's float cdf falls just below 1/2 there and gives 4."""
    assert exact_hit_probs(21, 21, 7) and sum(p for j, p in exact_hit_probs(21, 21, 7).items() if j <= 3) == Fraction(1, 2)
    assert hg.hypergeom_ppf(21, 21, 7, 0.5) == 3 / 7 == qhyper(0.5, 21, 21, 7) / 7
