"""apnull.binning_cost: the threshold curve over n and what binning n does to it."""

from __future__ import annotations

import math

import numpy as np
import pytest

import apnull
from apnull import binning
from apnull.binning_cost import _curve, binning_cost, binning_summary, threshold_curve
from apnull.significance import choose_method

# the one-pass curve and the per-n library laws add the same terms in another order
TOL = 1e-12


def quick(values, keep):
    """``values`` as parameters, those not in ``keep`` marked slow: the full suite checks every one, the
    quick run the ones in ``keep`` (chosen to reach the same paths: exact laws only, the exact-to-grid
    switch, grid laws)."""
    return [v if v in keep else pytest.param(v, marks=pytest.mark.slow) for v in values]


# quick: m = 1 and 3 (exact laws for every n <= 60) and 7 (exact, then grid from n = 16)
@pytest.mark.parametrize("m", quick([1, 2, 3, 4, 7], {1, 3, 7}))
@pytest.mark.parametrize("metric", ["ap", "pr"])
def test_curve_equals_library_threshold_at_every_n(m, metric):
    curve = threshold_curve(m, 60, 0.95, metric)
    assert list(curve["n"]) == list(range(61))
    for n in range(61):
        law = apnull.null_distribution(m, n, metric)
        assert curve["threshold"][n] == pytest.approx(law.quantile(0.95), abs=TOL), n
        assert curve["method"][n] == law.method


def _last_exact_n(m):
    """Largest n at which "auto" still counts placements exactly (the switch to the grid law)."""
    n = 0
    while choose_method(m, n + 1) == "exact":
        n += 1
    return n


SWITCH_CASES = [(m, n) for m in (3, 4) for n in (_last_exact_n(m), _last_exact_n(m) + 1)]


@pytest.mark.parametrize("m, n", SWITCH_CASES + [(4, 300), (10, 200), (1, 300), (2, 300)])
@pytest.mark.parametrize("q", quick([0.5, 0.75, 0.9, 0.95, 0.99], {0.5, 0.95, 0.99}))
def test_curve_matches_library_across_the_exact_grid_switch(m, n, q):
    curve = threshold_curve(m, 300, q, "ap")
    assert curve["method"][n] == choose_method(m, n)
    assert curve["threshold"][n] == pytest.approx(apnull.threshold(m, n, q=q), abs=TOL)


def test_switch_cases_straddle_the_switch():
    for m, n in SWITCH_CASES[::2]:
        assert choose_method(m, n) == "exact" and choose_method(m, n + 1) == "grid"


def test_curve_forced_methods():
    grid = threshold_curve(3, 40, 0.9, "ap", method="grid")
    exact = threshold_curve(3, 40, 0.9, "ap", method="exact")
    assert set(grid["method"]) == {"grid"} and set(exact["method"]) == {"exact"}
    for n in (0, 5, 17, 40):
        assert grid["threshold"][n] == pytest.approx(apnull.threshold(3, n, q=0.9, method="grid"), abs=TOL)
        assert exact["threshold"][n] == pytest.approx(apnull.threshold(3, n, q=0.9, method="exact"), abs=TOL)
    # the grid law's quantiles are within m/G = tol of the exact ones
    assert np.all(np.abs(grid["threshold"] - exact["threshold"]) <= 1e-3 + 1e-12)


def test_curve_is_cached_and_returns_copies():
    a = threshold_curve(4, 100, 0.95)
    a.loc[0, "threshold"] = -1.0
    b = threshold_curve(4, 100, 0.95)
    assert b["threshold"][0] == 1.0  # n = 0: every positive on top
    assert _curve.cache_info().hits >= 1


def test_threshold_at_representative_equals_library_threshold():
    cost = binning_cost(4, 0.95, 300, 1.3, "lower", "ap")
    bps = apnull.breakpoints(300, 1.3)
    assert list(cost["n"]) == list(range(301))
    assert np.array_equal(cost["bin"], binning.bin_index(np.arange(301), bps))
    assert np.array_equal(cost["representative_n"], binning.representative_n(np.arange(301), bps, "lower"))
    for rep in np.unique(cost["representative_n"])[::7]:
        rows = cost[cost["representative_n"] == rep]
        assert np.allclose(rows["binned_threshold"], apnull.threshold(4, int(rep), q=0.95), atol=TOL, rtol=0)
    for n in (0, 3, 30, 151, 300):
        assert cost["threshold"][n] == pytest.approx(apnull.threshold(4, n, q=0.95), abs=TOL)
    assert np.allclose(cost["difference"], cost["binned_threshold"] - cost["threshold"])


@pytest.mark.parametrize("rep", ["upper", "middle"])
def test_other_representatives(rep):
    cost = binning_cost(3, 0.9, 120, 1.3, rep, "pr")
    bps = apnull.breakpoints(120, 1.3)
    reps = binning.representative_n(np.arange(121), bps, rep)
    assert np.array_equal(cost["representative_n"], reps)
    for n in (0, 10, 57, 120):
        r = int(reps[n])
        assert cost["binned_threshold"][n] == pytest.approx(apnull.threshold(3, r, "pr", q=0.9), abs=TOL)


@pytest.mark.parametrize("metric", ["ap", "pr"])
# quick: m = 2 and 3 (exact, then grid from n = 214 and 72) and 15 (grid from n = 8, the largest)
@pytest.mark.parametrize("m", quick([1, 2, 3, 4, 5, 6, 8, 10, 15], {2, 3, 15}))
def test_lower_representative_is_conservative(metric, m):
    """Adding a negative never raises AP or Precision@R, so thresholds fall with n and the lower end
    of a bin gives a threshold >= the exact one. Checked for every n <= 300 at several levels."""
    for q in (0.5, 0.75, 0.9, 0.95, 0.99):
        cost = binning_cost(m, q, 300, 1.3, "lower", metric)
        assert (cost["difference"] >= -TOL).all(), (m, q, cost[cost["difference"] < -TOL])
        # and the whole curve is non-increasing in n
        assert (np.diff(cost["threshold"]) <= TOL).all(), (m, q)


def test_middle_representative_is_not_conservative():
    cost = binning_cost(4, 0.95, 300, 1.3, "middle", "ap")
    assert (cost["difference"] < 0).any()


def test_summary():
    cost = binning_cost(4, 0.95, 300, 1.3, "lower", "ap")
    s = binning_summary(cost)
    assert s["n_values"] == 301
    assert s["bins"] == 81  # bin 0 (n = 0) and the 80 bins of the breakpoints
    assert s["max_abs_error"] == pytest.approx(np.abs(cost["difference"]).max())
    assert s["mean_abs_error"] == pytest.approx(np.abs(cost["difference"]).mean())
    assert abs(cost["difference"][s["worst_n"]]) == s["max_abs_error"]
    assert s["n_below"] == 0 and s["most_below"] == 0.0
    assert s["methods"] == ["exact", "grid"]
    mid = binning_summary(binning_cost(4, 0.95, 300, 1.3, "middle", "ap"))
    assert mid["n_below"] > 0 and mid["most_below"] < 0


def test_power_one_costs_nothing():
    cost = binning_cost(4, 0.95, 50, 1.0, "lower", "ap")
    assert (cost["difference"] == 0).all()
    assert binning_summary(cost)["bins"] == 51


@pytest.mark.parametrize("kwargs, message", [
    (dict(m=0), "m \\(number of positives\\) must be at least 1"),
    (dict(q=1.5), "q must lie in \\[0, 1\\]"),
    (dict(q=-0.1), "q must lie in \\[0, 1\\]"),
    (dict(power=0.5), "power must lie in \\[1, 5\\]"),
    (dict(max_value=0), "max_value must lie in \\[1, 1,000,000\\]"),
    (dict(max_value=10_000), "must be at most 5,000"),
    (dict(representative="median"), "representative must be one of lower, upper, middle"),
    (dict(metric="ndcg"), "metric must be 'ap'"),
    (dict(method="mc"), "method 'mc' is not offered"),
    (dict(method="fast"), "method must be one of auto, exact, grid"),
    (dict(m=60), "needs Monte Carlo from n = "),
    (dict(m=3, method="exact"), "exact AP law for m=3, n=300 has"),
])
def test_errors(kwargs, message):
    args = dict(m=4, q=0.95, max_value=300, power=1.3, representative="lower", metric="ap", method="auto")
    args.update(kwargs)
    with pytest.raises(ValueError, match=message):
        binning_cost(**args)


def test_threshold_curve_errors():
    with pytest.raises(ValueError, match="n \\(number of negatives\\) must be at least 0"):
        threshold_curve(4, -1)
    with pytest.raises(ValueError, match="tol must lie in"):
        threshold_curve(4, 10, tol=0)
    with pytest.raises(ValueError, match="grid AP law for m=40"):
        threshold_curve(40, 5000, method="grid")


def test_exact_method_limit_follows_the_library():
    # C(m + n, m) <= 2,000,000: m = 2 reaches n = 300 exactly
    assert math.comb(302, 2) <= 2_000_000
    curve = threshold_curve(2, 300, 0.95, "ap", method="exact")
    assert curve["threshold"][300] == pytest.approx(apnull.threshold(2, 300, method="exact"), abs=TOL)
