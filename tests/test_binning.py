"""apnull.binning: the nonlinear breakpoints and the n-bins built on them."""

from __future__ import annotations

import math

import numpy as np
import pandas as pd
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

import apnull
from apnull import binning as bn


def r_seq_pow(max_value, power):
    """R: seq(1, max_value^(1/power), 1)^power, written out by hand (whole steps from 1)."""
    top = max_value ** (1 / power)
    out, i = [], 1
    while i <= top + 1e-9:
        out.append(i**power)
        i += 1
    return np.array(out)


# ------------------------------------------------------------------------------------------------
# Breakpoints
# ------------------------------------------------------------------------------------------------
def test_default_breakpoints_match_the_reference_diagram():
    bps = apnull.breakpoints()
    assert bps.size == 80
    assert bps[0] == 1.0
    assert bps[-1] == pytest.approx(80**1.3, rel=1e-15)
    assert bps[-1] <= 300
    assert 81**1.3 > 300  # the next one would pass max_value
    np.testing.assert_allclose(bps, np.arange(1, 81) ** 1.3, rtol=1e-15)
    np.testing.assert_allclose(bps, r_seq_pow(300, 1.3), rtol=1e-15)
    assert np.all(np.diff(bps) >= 1)  # widths grow from 2^1.3 - 1 = 1.46
    assert np.all(np.diff(bps, 2) > 0)


@pytest.mark.parametrize("max_value, power", [(300, 1.3), (1000, 1.5), (50, 1), (10, 2), (2, 1.3),
                                              (10**6, 2), (123.4, 1.7), (1, 3)])
def test_breakpoints_match_r_formula(max_value, power):
    np.testing.assert_allclose(apnull.breakpoints(max_value, power), r_seq_pow(max_value, power), rtol=1e-14)


def test_breakpoints_edge_cases():
    np.testing.assert_array_equal(apnull.breakpoints(5, 1), [1, 2, 3, 4, 5])
    np.testing.assert_array_equal(apnull.breakpoints(1, 1.3), [1.0])
    np.testing.assert_array_equal(apnull.breakpoints(1, 1), [1.0])
    # exact powers: 8^(1/3) is 1.9999999999999998 in floating point, yet 2^3 = 8 is included
    np.testing.assert_array_equal(apnull.breakpoints(8, 3), [1.0, 8.0])
    np.testing.assert_array_equal(apnull.breakpoints(7.99, 3), [1.0])
    np.testing.assert_array_equal(apnull.breakpoints(27, 3), [1.0, 8.0, 27.0])
    np.testing.assert_array_equal(apnull.breakpoints(1000, 3), np.arange(1, 11) ** 3.0)
    np.testing.assert_array_equal(apnull.breakpoints(100, 2), np.arange(1, 11) ** 2.0)
    assert apnull.breakpoints(256, 1.6).size == 32  # 32^1.6 = 256 (256.00000000000006 in floats)
    assert apnull.breakpoints(300.0, 1.3).dtype == float


@pytest.mark.parametrize("max_value, power, words", [
    (0, 1.3, "max_value"), (0.5, 1.3, "max_value"), (-3, 1.3, "max_value"), (2e6, 1.3, "max_value"),
    ("abc", 1.3, "max_value"), (float("nan"), 1.3, "max_value"), (float("inf"), 1.3, "max_value"),
    (300, 0.5, "power"), (300, 0, "power"), (300, 6, "power"), (300, "x", "power"), (None, 1.3, "max_value"),
    (300, float("nan"), "power"),
])
def test_breakpoints_validation(max_value, power, words):
    with pytest.raises(ValueError, match=words):
        apnull.breakpoints(max_value, power)


# ------------------------------------------------------------------------------------------------
# Bins
# ------------------------------------------------------------------------------------------------
BIN_SETTINGS = [(300, 1.3), (300, 1.0), (400, 1.5), (300, 2.0), (1000, 1.6), (300, 4 / 3), (50, 3.0),
                (1, 1.3), (500, 2.5), (300, 1.25)]


@pytest.mark.parametrize("max_value, power", BIN_SETTINGS)
def test_every_n_is_in_exactly_one_bin(max_value, power):
    bps = apnull.breakpoints(max_value, power)
    nbins = len(bps) + 1  # bin 0 (n = 0) and bins 1..len(bps)
    members = {}
    for i in range(nbins):
        lo, hi = bn.bin_members(i, bps)
        assert lo >= 0
        if i == nbins - 1:
            assert hi is None  # open-ended last bin
        else:
            assert hi is not None and hi >= lo  # no empty bin
        members[i] = (lo, hi)
    # consecutive bins tile the integers
    for i in range(nbins - 1):
        assert members[i + 1][0] == members[i][1] + 1
    assert members[0] == (0, 0)
    for n in range(0, 401):
        owners = [i for i, (lo, hi) in members.items() if lo <= n and (hi is None or n <= hi)]
        assert len(owners) == 1, (n, owners)
        assert bn.bin_index(n, bps) == owners[0], n
        lo, hi = members[owners[0]]
        assert bn.representative_n(n, bps, "lower") == lo
        if hi is not None:
            assert bn.representative_n(n, bps, "upper") == hi
            assert bn.representative_n(n, bps, "middle") == (lo + hi) // 2
        else:  # open-ended: upper and middle fall back to lower
            assert bn.representative_n(n, bps, "upper") == lo
            assert bn.representative_n(n, bps, "middle") == lo
    # bin i >= 1 holds exactly the integers with b_i <= n < b_{i+1} (up to float rounding of b)
    for i in range(1, nbins - 1):
        lo, hi = members[i]
        assert bps[i - 1] - 1e-9 <= lo and hi < bps[i] - 1e-9 < hi + 1


def test_representative_lower_is_smallest_member_default_bins():
    bps = apnull.breakpoints()
    assert bn.bin_index(0, bps) == 0 and bn.representative_n(0, bps) == 0
    assert bn.bin_index(1, bps) == 1 and bn.representative_n(1, bps) == 1
    # 2^1.3 = 2.46, 3^1.3 = 4.17: bin 2 is {3, 4}
    assert bn.bin_members(2, bps) == (3, 4)
    assert bn.bin_index(2, bps) == 1 and bn.bin_index(3, bps) == 2 and bn.bin_index(4, bps) == 2
    assert bn.representative_n(4, bps) == 3
    # beyond the last breakpoint: the open-ended last bin
    assert bn.bin_index(10**6, bps) == 80
    assert bn.bin_members(80, bps) == (math.ceil(80**1.3), None)


def test_vectorised_bin_index_and_representative():
    bps = apnull.breakpoints()
    ns = np.arange(0, 401)
    idx = bn.bin_index(ns, bps)
    assert isinstance(idx, np.ndarray) and idx.shape == ns.shape
    assert np.all(np.diff(idx) >= 0)
    np.testing.assert_array_equal(idx, [bn.bin_index(int(n), bps) for n in ns])
    reps = bn.representative_n(ns, bps)
    np.testing.assert_array_equal(reps, [bn.representative_n(int(n), bps) for n in ns])
    assert np.all(reps <= ns)
    assert isinstance(bn.bin_index(5, bps), int)
    assert isinstance(bn.representative_n(5, bps), int)


@settings(max_examples=60, deadline=None)
@given(max_value=st.floats(1, 5000), power=st.floats(1, 3), n=st.integers(0, 6000))
def test_bins_property(max_value, power, n):
    bps = apnull.breakpoints(max_value, power)
    i = bn.bin_index(n, bps)
    lo, hi = bn.bin_members(i, bps)
    assert lo <= n and (hi is None or n <= hi)
    assert bn.representative_n(n, bps) == lo


def test_lower_representative_is_conservative_for_thresholds():
    """The AP null threshold falls as n grows, so the smallest n of a bin gives its highest threshold."""
    bps = apnull.breakpoints()
    for i in (5, 9, 13, 17):  # bins {8, 9}, {18, ..., 20}, {28, ..., 31}, {40, ..., 43}
        lo, hi = bn.bin_members(i, bps)
        assert hi > lo
        rep = bn.representative_n(lo, bps)
        assert rep == lo
        for q in (0.9, 0.95):
            t_rep = apnull.threshold(4, rep, q=q, method="exact")
            for n in range(lo, hi + 1):
                assert t_rep >= apnull.threshold(4, n, q=q, method="exact"), (i, n, q)
        # also for Precision@R, whose thresholds are non-increasing in n as well
        for n in range(lo, hi + 1):
            assert apnull.threshold(4, rep, "pr") >= apnull.threshold(4, n, "pr")


def test_lower_representative_conservative_on_larger_bin_with_grid():
    bps = apnull.breakpoints()
    i = int(bn.bin_index(150, bps))
    lo, hi = bn.bin_members(i, bps)
    t_rep = apnull.threshold(4, lo, q=0.95)
    law = apnull.null_distribution(4, lo)
    eb = law.error_bound or 0.0
    for n in range(lo, hi + 1):
        assert t_rep >= apnull.threshold(4, n, q=0.95) - 2 * eb


def test_bin_table():
    table = bn.bin_table()
    assert isinstance(table, pd.DataFrame)
    assert list(table.columns) == ["bin", "break_point", "break_width", "first_n", "last_n"]
    assert len(table) == 80
    assert table["bin"].tolist() == list(range(1, 81))
    np.testing.assert_allclose(table["break_point"], apnull.breakpoints())
    np.testing.assert_allclose(table["break_width"].iloc[:-1], np.diff(apnull.breakpoints()))
    assert np.isnan(table["break_width"].iloc[-1])
    assert table["last_n"].isna().tolist() == [False] * 79 + [True]
    assert str(table["last_n"].dtype) == "Int64"
    bps = apnull.breakpoints()
    for row in table.itertuples(index=False):
        lo, hi = bn.bin_members(row.bin, bps)
        assert row.first_n == lo
        assert (pd.isna(row.last_n) and hi is None) or row.last_n == hi
    assert table["first_n"].iloc[0] == 1
    np.testing.assert_array_equal(table["first_n"].iloc[1:].to_numpy(), table["last_n"].iloc[:-1].to_numpy() + 1)
    small = bn.bin_table(5, 1)
    assert small["first_n"].tolist() == [1, 2, 3, 4, 5]
    assert small["last_n"].tolist()[:4] == [1, 2, 3, 4]


def test_bin_validation():
    bps = apnull.breakpoints()
    with pytest.raises(ValueError, match="n must be >= 0"):
        bn.bin_index(-1, bps)
    with pytest.raises(ValueError, match="n must be >= 0"):
        bn.bin_index(np.array([3, -2]), bps)
    with pytest.raises(ValueError, match="bin"):
        bn.bin_members(81, bps)
    with pytest.raises(ValueError, match="bin"):
        bn.bin_members(-1, bps)
    with pytest.raises(ValueError, match="bin"):
        bn.bin_members(1.5, bps)
    with pytest.raises(ValueError, match="representative must be one of"):
        bn.representative_n(10, bps, how="median")
    with pytest.raises(ValueError, match="max_value"):
        bn.bin_table(0, 1.3)
