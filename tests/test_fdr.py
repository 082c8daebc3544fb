"""apnull.fdr, the one Benjamini-Hochberg: grid p-values read back as fractions, and every q-value,
rejection and first level checked against exact rational arithmetic (``fractions.Fraction``) on random
p-value grids, ties with the level included."""

from fractions import Fraction

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from apnull import fdr
from apnull.fdr import GRID, Exact, benjamini_hochberg, bh_count, bh_reject, first_levels, fractions_of

# -- references ----------------------------------------------------------------------------------------


def exact_q(P):
    """BH q-values of the Fractions P: q_(i) = min_{j >= i} min(1, T P_(j) / j), in the input order."""
    T = len(P)
    order = sorted(range(T), key=lambda i: P[i])
    q = [None] * T
    best = Fraction(1)
    for rank in range(T, 0, -1):
        i = order[rank - 1]
        best = min(best, T * P[i] / rank)
        q[i] = best
    return q


def exact_reject(P, A):
    T = len(P)
    s = sorted(P)
    R = max([k for k in range(1, T + 1) if T * s[k - 1] / k <= A], default=0)
    return [R > 0 and x <= s[R - 1] for x in P]


# Grids the p-values of the package sit on: (1 + g) / (1 + B), g / T, H / L, and an exact law's counts.
DENOMINATORS = st.sampled_from([20, 100, 401, 1000, 1600, 6400, 10_000, 102_400, 1_000_000, 1_000_001, 2 ** 17,
                                184_756, 2 ** 20])
LEVELS = st.sampled_from([Fraction(1, 20), Fraction(1, 10), Fraction(1, 100), Fraction(3, 20), Fraction(1, 4),
                          Fraction(1, 5)])


@st.composite
def grid_pvalues(draw, max_size=30):
    """p-values k / D on one grid, crowded near the level's BH lines so that ties are common."""
    D = draw(DENOMINATORS)
    A = draw(LEVELS)
    T = draw(st.integers(1, max_size))
    ks = []
    for _ in range(T):
        if draw(st.booleans()):  # a p-value with T p / j = A for some j, where the grid has one
            j = draw(st.integers(1, T))
            k = A * j * D / T
            ks.append(int(k) if k.denominator == 1 else draw(st.integers(0, D)))
        else:
            ks.append(draw(st.integers(0, D)))
    return [Fraction(k, D) for k in ks], A


# -- reading p-values back as fractions ------------------------------------------------------------------

@given(st.integers(1, GRID), st.data())
@settings(max_examples=300, deadline=None)
def test_every_grid_fraction_is_read_back(b, data):
    a = data.draw(st.integers(0, b))
    num, den, grid = fractions_of(np.array([a / b]))
    f = Fraction(a, b)
    assert grid[0] and (num[0], den[0]) == (f.numerator, f.denominator)


def test_fractions_of_many_at_once_and_off_grid_values():
    rng = np.random.default_rng(3)
    b = rng.integers(1, GRID + 1, 50_000)
    a = np.minimum((rng.random(b.size) * (b + 1)).astype(np.int64), b)
    num, den, grid = fractions_of(a / b)
    g = np.gcd(a, b)
    assert grid.all() and (num == a // g).all() and (den == b // g).all()
    x = rng.random(20_000)
    num, den, grid = fractions_of(x)
    assert (num[grid] / den[grid] == x[grid]).all()  # what is found rounds to the value
    assert grid.mean() < 0.01  # a random float is on no grid of denominator <= 2^20
    assert not fractions_of(np.array([1e-9, np.pi / 4, 1 / 3 + 1e-12]))[2].any()


def test_few_values_are_read_as_many_are():
    """Up to ``_FEW`` values are read one by one in Python integers, more in array steps: the same pairs,
    on grid fractions, their float neighbours, random floats, tiny values and the edges."""
    rng = np.random.default_rng(5)
    b = rng.integers(1, GRID + 1, 4_000)
    a = np.minimum((rng.random(b.size) * (b + 1)).astype(np.int64), b)
    edges = [1 / GRID, np.nextafter(1 / GRID, 1), np.nextafter(1 / GRID, 0), np.nextafter(1, 0), 0.0, -0.0, 1.0,
             np.nan, -0.5, 1.5, np.inf, 5e-324, 0.05, 1 / 3]
    x = np.concatenate([a / b, np.nextafter(a / b, 0), np.nextafter(a / b, 1), rng.random(4_000),
                        rng.random(1_000) * 4e-6, 1.0 / rng.integers(1, GRID + 1, 1_000), edges])
    rng.shuffle(x)
    assert x.size > fdr._FEW
    many = fractions_of(x)
    for s in range(0, x.size, fdr._FEW):
        few = fractions_of(x[s:s + fdr._FEW])
        for got, want in zip(few, many):
            np.testing.assert_array_equal(got, want[s:s + fdr._FEW])
            assert got.dtype == want.dtype
    assert [v.shape for v in fractions_of(np.array([[0.5, 0.25], [0.1, np.nan]]))] == [(2, 2)] * 3
    assert [v.shape for v in fractions_of(0.05)] == [()] * 3


# -- BH against Fractions ----------------------------------------------------------------------------------

def test_the_issue_screen_three_perturbations_at_b_99():
    p = [0.01, 0.04, 0.05]
    q = benjamini_hochberg(p)
    assert q.tolist() == [0.03, 0.05, 0.05]  # not 0.05000000000000001
    assert (q <= 0.05).all() and bh_reject(p, 0.05).all()
    assert first_levels(p, 0.05).tolist() == [1, 3, 3]


@given(grid_pvalues())
@settings(max_examples=300, deadline=None)
def test_q_values_are_the_exact_ones_rounded(case):
    P, A = case
    p = np.array([float(x) for x in P])
    q = benjamini_hochberg(p)
    ref = exact_q(P)
    assert q.tolist() == [float(x) for x in ref]  # correctly rounded: the float of the exact q-value
    assert ((q <= float(A)) == np.array([x <= A for x in ref])).all()


@given(grid_pvalues())
@settings(max_examples=300, deadline=None)
def test_rejections_and_first_levels_are_exact(case):
    P, A = case
    p = np.array([float(x) for x in P])
    T = len(P)
    want = exact_reject(P, A)
    assert bh_reject(p, float(A)).tolist() == want
    assert (bh_reject(p, float(A)) == (benjamini_hochberg(p) <= float(A))).all()
    c = first_levels(p, float(A))
    ref = [min([k for k in range(1, T + 1) if T * x / k <= A], default=T + 1) for x in P]
    assert c.tolist() == ref
    hist = np.bincount(c, minlength=T + 2).astype(np.int64)
    assert bh_count(hist, T) == sum(want)


@given(st.lists(st.floats(0, 1), min_size=1, max_size=40), st.floats(0.001, 0.5))
@settings(max_examples=200, deadline=None)
def test_off_grid_floats_decide_as_their_q_values(p, alpha):
    """Any floats: the rejections are those of q <= alpha, and the first levels count them."""
    p = np.array(p)
    rej = bh_reject(p, alpha)
    assert (rej == (benjamini_hochberg(p) <= alpha)).all()
    c = first_levels(p, alpha)
    T = p.size
    R = max([k for k in range(1, T + 1) if (c <= k).sum() >= k], default=0)
    assert ((c <= R) == rej).all()


def test_nan_and_edges():
    p = np.array([0.01, np.nan, 0.05, 0.05])
    q = benjamini_hochberg(p)
    assert np.isnan(q[1]) and q[[0, 2, 3]].tolist() == [0.03, 0.05, 0.05]
    assert bh_reject(p, 0.05).tolist() == [True, False, True, True]
    assert first_levels(np.array([np.nan, 0.01]), 0.05).tolist() == [3, 1]
    assert bh_reject([], 0.05).size == 0 and benjamini_hochberg([]).size == 0
    assert benjamini_hochberg([0.0, 1.0]).tolist() == [0.0, 1.0]
    with pytest.raises(ValueError, match="between 0 and 1"):
        bh_reject([0.5, 1.5], 0.05)


def test_ratios_outgrowing_the_fractions_fall_back_to_floats():
    x = Exact.of(np.array([1 / 999_983, 0.3]))
    y = x.times(3, 2 ** 40)  # 999,983 * 2^40 passes 2^50; 10 * 2^40 does not
    assert not y.exact[0] and y.exact[1]
    assert y.value[0] == (1 / 999_983) * 3 / 2 ** 40 and y.value[1] == float(Fraction(3, 10) * 3 / 2 ** 40)


def test_bh_count_runs_inside_compiled_code():
    """What a kernel that redraws its p-values (the comparison's flip null) calls in nopython mode."""
    import numba

    @numba.njit
    def rejections(levels, T):
        hist = np.zeros(T + 2, dtype=np.int64)
        for c in levels:
            hist[c] += 1
        return bh_count(hist, T)

    p = np.array([0.01, 0.02, 0.0375, 0.5])  # 4 * 0.0375 / 3 = 0.05: a tie
    assert rejections(first_levels(p, 0.05), np.int64(4)) == int(bh_reject(p, 0.05).sum()) == 3


@given(st.lists(st.tuples(st.integers(0, 3), st.sampled_from([0.0, 0.01, 0.05, 0.2, 1.0]) | st.floats(0, 1)),
                max_size=30))
@settings(max_examples=60, deadline=None)
def test_scaled_min_within_runs_is_each_runs_own_minimum(rows):
    """``scaled_min`` with groups: at each i the minimum over j >= i of i's run of equal groups (a brute
    force over the fractions), the same group number in two runs kept apart, the float of the exact one."""
    groups = np.array([g for g, _ in rows], dtype=np.int64)
    p = np.array([x for _, x in rows])
    mul = np.arange(1, p.size + 1)[::-1].copy()
    div = np.arange(1, p.size + 1)
    got = fdr.scaled_min(Exact.of(p), mul, div, groups=groups)
    for i in range(p.size):
        end = i
        while end + 1 < p.size and groups[end + 1] == groups[i]:
            end += 1
        want = min(Fraction(p[j]) * int(mul[j]) / int(div[j]) for j in range(i, end + 1))
        assert got.value[i] == pytest.approx(float(want), rel=1e-15, abs=0)
