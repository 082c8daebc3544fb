"""apnull.sampling: Monte Carlo null draws against exact results, reproducibility, engines, memory."""

from __future__ import annotations

import math
import tracemalloc

import numpy as np
import pandas as pd
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from scipy import stats

import apnull
from apnull import exact, sampling
from reference import enumerate_ap


# ------------------------------------------------------------------------------------------------
# Moments
# ------------------------------------------------------------------------------------------------
@pytest.mark.parametrize("m, n, draws", [(4, 30, 400_000), (10, 5, 200_000), (1, 20, 200_000),
                                         (25, 100, 200_000), (60, 7, 100_000), (3, 1000, 200_000)])
def test_moments_agree_with_closed_forms(m, n, draws):
    s = apnull.sample_null(m, n, draws, seed=1234)
    assert s.ap.shape == s.pr.shape == (draws,)
    assert s.m == m and s.n == n and s.seed == 1234 and s.draws == draws
    # AP
    mu, var = apnull.expected_ap(m, n), apnull.ap_variance(m, n)
    assert abs(s.ap.mean() - mu) <= 5 * math.sqrt(var / draws)
    centred = s.ap - s.ap.mean()
    se_var = math.sqrt(max(np.mean(centred**4) - var**2, 0) / draws)
    assert abs(centred.var(ddof=1) - var) <= 6 * se_var
    # Precision@R = hits / m, hits ~ Hypergeometric(m + n, m, m)
    hg = stats.hypergeom(m + n, m, m)
    pr_mu, pr_var = hg.mean() / m, hg.var() / m**2
    assert pr_mu == pytest.approx(m / (m + n))
    assert abs(s.pr.mean() - pr_mu) <= 5 * math.sqrt(pr_var / draws)
    pc = s.pr - s.pr.mean()
    se_pr_var = math.sqrt(max(np.mean(pc**4) - pr_var**2, 0) / draws)
    assert abs(pc.var(ddof=1) - pr_var) <= 6 * se_pr_var + 1e-15
    # the Precision@R frequencies follow the hypergeometric pmf (chi-square)
    hits = np.rint(s.pr * m).astype(int)
    support = np.arange(0, m + 1)
    expected = hg.pmf(support) * draws
    observed = np.bincount(hits, minlength=m + 1)
    assert observed[expected == 0].sum() == 0
    keep = expected >= 5
    obs, exp = observed[keep], expected[keep]
    rest_o, rest_e = draws - obs.sum(), draws - exp.sum()
    if rest_e >= 5:
        obs, exp = np.append(obs, rest_o), np.append(exp, rest_e)
    if obs.size > 1:
        _, p = stats.chisquare(obs, exp * obs.sum() / exp.sum())
        assert p > 1e-6


def test_ap_and_pr_come_from_the_same_placements():
    s = apnull.sample_null(5, 20, 50_000, seed=3)
    # Pr@R = 1 iff all positives are on top iff AP = 1
    np.testing.assert_array_equal(s.pr == 1.0, s.ap == 1.0)
    # with h hits in the top m, those hits alone give AP >= (1/m) sum_{i<=h} i/m = h(h+1) / (2 m^2)
    h = np.rint(s.pr * 5)
    assert np.all(s.ap >= h * (h + 1) / 2 / 5 / 5 - 1e-12)


def test_n_zero_gives_ones_and_m_one_gives_reciprocal_ranks():
    s = apnull.sample_null(7, 0, 1000, seed=1)
    assert np.all(s.ap == 1.0) and np.all(s.pr == 1.0)
    s = apnull.sample_null(1, 9, 100_000, seed=2)
    ranks = np.rint(1 / s.ap).astype(int)
    np.testing.assert_allclose(s.ap, 1 / ranks, rtol=0, atol=1e-15)
    counts = np.bincount(ranks, minlength=11)[1:]
    assert counts.size == 10
    _, p = stats.chisquare(counts)
    assert p > 1e-6
    np.testing.assert_array_equal(s.pr == 1.0, ranks == 1)


# ------------------------------------------------------------------------------------------------
# The whole law against enumeration
# ------------------------------------------------------------------------------------------------
@pytest.mark.parametrize("m, n", [(2, 5), (3, 5), (4, 2), (5, 1), (3, 9), (5, 12)])
def test_monte_carlo_law_matches_exact_law(m, n):
    draws = 200_000
    s = apnull.sample_null(m, n, draws, seed=99)
    law = exact.ap_law_exact(m, n)
    # every draw is one of the exact support values
    idx = np.clip(np.searchsorted(law.values, s.ap), 1, law.values.size - 1)
    nearest = np.minimum(np.abs(s.ap - law.values[idx - 1]), np.abs(s.ap - law.values[idx]))
    assert nearest.max() <= 1e-9
    # chi-square on the support (cells with small expectation pooled)
    cell = np.where(np.abs(s.ap - law.values[idx - 1]) <= np.abs(s.ap - law.values[idx]), idx - 1, idx)
    observed = np.bincount(cell, minlength=law.values.size).astype(float)
    expected = law.probs * draws
    order = np.argsort(expected)
    obs_s, exp_s = observed[order], expected[order]
    cum = np.cumsum(exp_s)
    small = cum < 50  # pool the least likely values into one cell of expectation >= 50
    o = np.append(obs_s[~small], obs_s[small].sum()) if small.any() else obs_s
    e = np.append(exp_s[~small], exp_s[small].sum()) if small.any() else exp_s
    _, p = stats.chisquare(o, e * o.sum() / e.sum())
    assert p > 1e-6, p
    # KS on the AP law as a sanity check
    F = np.cumsum(law.probs)
    sample = np.sort(s.ap)
    ecdf = np.searchsorted(sample, law.values + 1e-12, side="right") / draws
    assert np.max(np.abs(ecdf - F)) < 1.63 / math.sqrt(draws) * 1.5


@pytest.mark.parametrize("m, n", [(1, 0), (1, 3), (2, 1), (3, 3), (4, 1), (5, 4), (3, 12), (5, 11), (2, 12)])
def test_every_draw_is_a_valid_ap_value(m, n):
    ref = enumerate_ap(m, n)
    support = np.array(sorted({float(v) for v in ref.ap}))
    pr_support = np.array(sorted({float(v) for v in ref.pr}))
    s = apnull.sample_null(m, n, 20_000, seed=m * 100 + n)
    for draws, sup in ((s.ap, support), (s.pr, pr_support)):
        idx = np.clip(np.searchsorted(sup, draws), 1, max(sup.size - 1, 1))
        lo = np.abs(draws - sup[idx - 1]) if sup.size > 1 else np.abs(draws - sup[0])
        hi = np.abs(draws - sup[np.minimum(idx, sup.size - 1)])
        assert np.minimum(lo, hi).max() <= 1e-9
    # with 20,000 draws every one of a handful of placements shows up
    if ref.total <= 50:
        assert np.unique(np.round(s.ap, 12)).size == support.size


# ------------------------------------------------------------------------------------------------
# Reproducibility
# ------------------------------------------------------------------------------------------------
def test_same_seed_same_numbers_and_different_seed_different_numbers():
    a = apnull.sample_null(4, 30, 50_000, seed=7)
    b = apnull.sample_null(4, 30, 50_000, seed=7)
    c = apnull.sample_null(4, 30, 50_000, seed=8)
    np.testing.assert_array_equal(a.ap, b.ap)
    np.testing.assert_array_equal(a.pr, b.pr)
    assert not np.array_equal(a.ap, c.ap)
    # a prefix of a longer run is the shorter run
    d = apnull.sample_null(4, 30, 20_000, seed=7)
    np.testing.assert_array_equal(a.ap[:20_000], d.ap)


def test_seed_none_draws_and_records_a_fresh_seed():
    a = apnull.sample_null(3, 10, 1000)
    b = apnull.sample_null(3, 10, 1000)
    assert isinstance(a.seed, int) and a.seed >= 0
    assert a.seed != b.seed
    again = apnull.sample_null(3, 10, 1000, seed=a.seed)
    np.testing.assert_array_equal(a.ap, again.ap)


@pytest.mark.parametrize("m, n", [(4, 30), (20, 3), (1, 50)])
def test_chunk_size_does_not_change_numbers(m, n, monkeypatch):
    """Whatever the chunks, the same numbers, across block boundaries. Blocks are made small here
    (the claim holds for any block size; at the real size, m = 1 meant a million one-draw chunks)."""
    monkeypatch.setattr(sampling, "BLOCK_ELEMENTS", 1 << 7)
    per = sampling._block_draws(m)
    assert per <= 128
    draws = 2 * per + per // 2 + 1  # three blocks, the last one partial
    ref = apnull.sample_null(m, n, draws, seed=5)
    for chunk in (1, 1000, per - 1, per, per + 1, 2 * per, 10**7):
        s = apnull.sample_null(m, n, draws, seed=5, chunk=chunk)
        np.testing.assert_array_equal(s.ap, ref.ap)
        np.testing.assert_array_equal(s.pr, ref.pr)


def test_sample_grid_rows_equal_sample_null_and_are_independent_of_other_sizes():
    M, N, draws, seed = 2, 7, 500, 11
    t50 = apnull.sample_grid(M, N, sizes=50, draws=draws, seed=seed)
    t10 = apnull.sample_grid(M, N, sizes=10, draws=draws, seed=seed)
    assert list(t50.columns) == ["m", "n", "ap", "pr"]
    assert len(t50) == 50 * draws and len(t10) == 10 * draws
    pd.testing.assert_frame_equal(t10, t50.iloc[: len(t10)].reset_index(drop=True))
    for i in (1, 2, 10, 37, 50):
        rows = t50[(t50["m"] == M * i) & (t50["n"] == N * i)]
        assert len(rows) == draws
        s = apnull.sample_null(M * i, N * i, draws, seed)
        np.testing.assert_array_equal(rows["ap"].to_numpy(), s.ap)
        np.testing.assert_array_equal(rows["pr"].to_numpy(), s.pr)
    sizes = list(dict.fromkeys(zip(t50["m"], t50["n"])))
    assert sizes == [(M * i, N * i) for i in range(1, 51)]
    # iter_sample_grid yields the same, one size at a time
    parts = list(sampling.iter_sample_grid(M, N, sizes=3, draws=draws, seed=seed))
    assert [(p.m, p.n) for p in parts] == [(2, 7), (4, 14), (6, 21)]
    np.testing.assert_array_equal(parts[2].ap, t50[(t50["m"] == 6)]["ap"].to_numpy())


def test_sample_grid_validation():
    with pytest.raises(ValueError, match="sizes"):
        apnull.sample_grid(2, 7, sizes=0, draws=10, seed=1)
    with pytest.raises(ValueError, match="too much work"):
        apnull.sample_grid(100, 1000, sizes=100, draws=10**6, seed=1)
    with pytest.raises(ValueError, match="(?i)m .*at least 1"):
        apnull.sample_grid(0, 7, sizes=2, draws=10, seed=1)
    with pytest.raises(ValueError, match="m \\+ n"):
        apnull.sample_grid(1000, 1000, sizes=1000, draws=10, seed=1)


def test_to_frame():
    s = apnull.sample_null(3, 4, 10, seed=0)
    f = s.to_frame()
    assert list(f.columns) == ["m", "n", "ap", "pr"]
    assert (f["m"] == 3).all() and (f["n"] == 4).all()
    np.testing.assert_array_equal(f["ap"].to_numpy(), s.ap)


# ------------------------------------------------------------------------------------------------
# Compiled kernel vs plain numpy
# ------------------------------------------------------------------------------------------------
ENGINE_SIZES = [
    (1, 0), (1, 1), (2, 1), (1, 63), (1, 64), (3, 61), (7, 57), (4, 60), (5, 123), (64, 0), (63, 1),
    (10, 3), (40, 24), (100, 28), (30, 70), (33, 97), (1, 200), (40, 300), (200, 57), (7, 1000),
    (64, 64), (65, 63), (500, 3),
]


@pytest.mark.parametrize("m, n", ENGINE_SIZES)
def test_numba_and_numpy_engines_agree(m, n):
    for seed, block, rows in ((0, 0, 257), (12345, 3, 64), (2**40 + 17, 1, 1)):
        top = max(1, (m + n) // 3)
        a_ap, a_pr, a_top = sampling.draw_block(m, n, seed, block, rows, engine="numba", top=top)
        b_ap, b_pr, b_top = sampling.draw_block(m, n, seed, block, rows, engine="numpy", top=top)
        np.testing.assert_array_equal(a_ap, b_ap)
        np.testing.assert_array_equal(a_pr, b_pr)
        np.testing.assert_array_equal(a_top, b_top)
        assert a_ap.shape == (rows,)
        # valid values: AP in (0, 1], Pr@R a multiple of 1/m
        assert np.all((a_ap > 0) & (a_ap <= 1))
        np.testing.assert_allclose(a_pr * m, np.rint(a_pr * m), atol=1e-9)


@settings(max_examples=40, deadline=None)
@given(m=st.integers(1, 90), n=st.integers(0, 150), seed=st.integers(0, 2**63 - 1),
       block=st.integers(0, 5), rows=st.integers(1, 40))
def test_engines_agree_property(m, n, seed, block, rows):
    a = sampling.draw_block(m, n, seed, block, rows, engine="numba")
    b = sampling.draw_block(m, n, seed, block, rows, engine="numpy")
    for x, y in zip(a, b):
        np.testing.assert_array_equal(x, y)


@settings(max_examples=30, deadline=None)
@given(m=st.integers(1, 90), n=st.integers(0, 150), seed=st.integers(0, 2**63 - 1), start=st.integers(0, 300),
       rows=st.integers(0, 40))
def test_engines_agree_from_any_start_row(m, n, seed, start, rows):
    """Rows start .. start+rows-1 of a block are the same in both engines and equal that slice of the block."""
    a = sampling.draw_block(m, n, seed, 0, rows, engine="numba", start=start)
    b = sampling.draw_block(m, n, seed, 0, rows, engine="numpy", start=start)
    whole = sampling.draw_block(m, n, seed, 0, start + rows)
    for x, y, w in zip(a, b, whole):
        np.testing.assert_array_equal(x, y)
        np.testing.assert_array_equal(x, w[start:])


@pytest.mark.parametrize("m, n", [(4, 30), (300, 10), (2000, 3), (1, 0)])
def test_draw_rows_extends_a_sample_across_blocks(m, n):
    """draw_rows(start, stop) is the slice start:stop of sample_null, whatever the block boundaries (a
    block holds BLOCK_ELEMENTS // m draws), so a cached sample can be extended instead of drawn again."""
    draws = 3 * sampling.BLOCK_ELEMENTS // m + 17
    s = sampling.sample_null(m, n, draws, 7)
    per = sampling.BLOCK_ELEMENTS // m
    for lo, hi in [(0, draws), (0, 1), (5, per), (per - 3, 2 * per + 4), (draws - 1, draws), (10, 10)]:
        ap, pr = sampling.draw_rows(m, n, 7, lo, hi)
        np.testing.assert_array_equal(ap, s.ap[lo:hi])
        np.testing.assert_array_equal(pr, s.pr[lo:hi])
    head = sampling.draw_rows(m, n, 7, 0, per + 1)
    tail = sampling.draw_rows(m, n, 7, per + 1, draws)
    np.testing.assert_array_equal(np.concatenate([head[0], tail[0]]), s.ap)


def test_numpy_engine_ap_matches_metrics_module():
    """Rebuild each draw's ranking from its AP (m = 2: ranks are recoverable) and recompute AP."""
    m, n = 2, 10
    ap, pr, _ = sampling.draw_block(m, n, 3, 0, 500, engine="numpy")
    ref = enumerate_ap(m, n)
    by_value = {}
    for placement, value in zip(ref.placements, ref.ap):
        by_value.setdefault(round(float(value), 12), []).append(placement)
    for a, p in zip(ap, pr):
        candidates = by_value[round(float(a), 12)]
        assert any(p == sum(r <= m for r in c) / m for c in candidates)


# ------------------------------------------------------------------------------------------------
# Memory
# ------------------------------------------------------------------------------------------------
def test_memory_stays_bounded():
    apnull.sample_null(4, 30, 1000, seed=0)  # compile / load the kernel outside the trace
    tracemalloc.start()
    try:
        s = apnull.sample_null(4, 30, 2_000_000, seed=1)
        _, peak = tracemalloc.get_traced_memory()
    finally:
        tracemalloc.stop()
    assert s.ap.size == 2_000_000
    # the result itself is 32 MB (two float64 arrays); numba's own allocations are not traced
    assert peak < 300 * 2**20, peak / 2**20
    assert peak < 100 * 2**20, peak / 2**20


# ------------------------------------------------------------------------------------------------
# Validation
# ------------------------------------------------------------------------------------------------
@pytest.mark.parametrize("kwargs, words", [
    (dict(m=4, n=30, draws=0, seed=1), "draws must be at least 1"),
    (dict(m=4, n=30, draws=10**7 + 1, seed=1), "draws must be at most"),
    (dict(m=4, n=30, draws=2.5, seed=1), "draws must be a whole number"),
    (dict(m=0, n=30, draws=10, seed=1), "m (number of positives) must be at least 1"),
    (dict(m=4, n=-1, draws=10, seed=1), "n (number of negatives) must be at least 0"),
    (dict(m=4.5, n=3, draws=10, seed=1), "whole number"),
    (dict(m=4, n=30, draws=10, seed=-1), "seed must be at least 0"),
    (dict(m=4, n=30, draws=10, seed=1.5), "seed must be a whole number"),
    (dict(m=4, n=30, draws=10, seed="x"), "seed must be a whole number"),
    (dict(m=500_000, n=500_001, draws=10, seed=1), "m + n must be at most"),
])
def test_sample_null_validation(kwargs, words):
    with pytest.raises(ValueError) as info:
        apnull.sample_null(**kwargs)
    assert words in str(info.value)
