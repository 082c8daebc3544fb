""""auto" by cost at every size, thresholds at levels a law's own quantile does not resolve, and the
library, the command line and the pages giving the same answer at the edges."""

from __future__ import annotations

import json
import math
from fractions import Fraction

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

import apnull
from apnull import significance as sg
from apnull.cli import main as cli_main
from apnull.limits import MAX_SAMPLING_WORK, draw_cost, sampling_work

from reference import enumerate_ap


def cli(*args):
    import io

    out, err = io.StringIO(), io.StringIO()
    status = cli_main(list(args), out=out, err=err)
    return status, out.getvalue(), err.getvalue()


# -- "auto" by cost --------------------------------------------------------------------------------
@pytest.mark.parametrize("m, n, expected", [
    (1_000_000, 0, "exact"),    # every AP is 1: one placement (the scan was O(m^2))
    (999_999, 1, "exact"),      # n = 1: m + 1 placements in closed form
    (1, 999_999, "grid"),       # m = 1: the grid law in closed form (exact stays for small n)
    (2, 600, "grid"),
    (500_000, 500_000, "mc"),   # no C(10^6, 5 10^5) is built to decide it
    (999_990, 10, "mc"),
])
def test_auto_picks_by_cost(m, n, expected):
    assert sg.choose_method(m, n) == expected
    assert sg.choose_method(m, n, "pr") == "exact"


def test_law_costs_are_the_documented_work():
    assert sg.law_costs(4, 30)["exact"] == 34 * math.comb(34, 4)
    assert sg.law_costs(1_000_000, 0)["exact"] == 1_000_000
    assert sg.law_costs(500_000, 500_000)["exact"] == math.inf
    assert sg.law_costs(40, 300)["grid"] == 340 * 40 * 40_000
    assert sg.law_costs(999_990, 10)["mc"] == sg.DEFAULT_DRAWS * draw_cost(999_990, 10)


def test_monte_carlo_draws_fit_the_work_limit():
    assert sg.auto_draws(100, 1000) == sg.DEFAULT_DRAWS  # ordinary sizes keep the default
    for m, n in [(100_000, 100_000), (999_990, 10), (500_000, 500_000), (1, 999_999)]:
        draws = sg.auto_draws(m, n)
        assert 1000 <= draws <= sg.DEFAULT_DRAWS
        assert sampling_work([(m, n)], draws) <= max(sg.AUTO_MC_WORK, 1000 * draw_cost(m, n)) <= MAX_SAMPLING_WORK


def test_draw_cost_counts_every_positive_and_the_bitset():
    assert draw_cost(100, 1000) == 101 + 1100 // 512  # not lopsided: about min(m, n) + 1
    assert draw_cost(999_990, 10) > 100_000           # each draw visits every positive
    assert draw_cost(1, 999_999) > 1_000                # and scans a bitset of N / 64 words


@pytest.mark.parametrize("metric", ["ap", "pr"])
def test_no_negatives_is_answered_at_once(metric):
    assert apnull.p_value(1, 1_000_000, 0, metric) == 1.0
    assert apnull.threshold(1_000_000, 0, metric) == 1.0
    assert apnull.threshold(1_000_000, 0, metric, alpha=1e-300) == 1.0
    law = apnull.null_distribution(1_000_000, 0, metric)
    assert law.method == "exact" and law.mean == 1.0 and law.std == 0.0


def test_one_positive_has_closed_forms_whatever_the_law():
    law = apnull.null_distribution(1, 999_999)
    assert law.method == "grid"
    assert apnull.threshold(1, 999_999) == 1 / 50_001  # P(1/R > t) <= 0.05: R <= 50,000
    assert apnull.p_value(1 / 7, 1, 999_999) == pytest.approx(7 / 1_000_000, rel=1e-12)
    assert apnull.p_value(1.0, 1, 999_999) == pytest.approx(1e-6, rel=1e-12)


# -- thresholds at levels the law does not resolve -------------------------------------------------
def test_alpha_floors():
    assert sg.alpha_floor(apnull.null_distribution(4, 30)) == 0.0
    assert sg.alpha_floor(apnull.null_distribution(4, 30, method="mc", draws=1000, seed=1)) == 0.01
    grid = apnull.null_distribution(40, 300)
    assert sg.alpha_floor(grid) == max(1e3 * grid.dropped_mass, 1e-13)


@settings(max_examples=40, deadline=None)
@given(m=st.integers(1, 6), n=st.integers(0, 8), e=st.floats(0.0, 14.0))
def test_exact_thresholds_at_any_alpha_are_the_exact_quantile(m, n, e):
    alpha = 10.0**-e
    if alpha >= 1:
        return
    law = apnull.null_distribution(m, n, method="exact")
    got = sg.resolved_threshold(law, alpha=alpha)
    ref = enumerate_ap(m, n)
    exact = next(v for v, cdf in ref.ap_cdf_table() if 1 - cdf <= Fraction(alpha) * (1 + Fraction(1, 10**9)))
    assert got.value == pytest.approx(float(exact), abs=1e-12)
    assert got.source == "exact" and got.alpha == alpha


def test_monte_carlo_below_its_floor_counts_the_tail():
    law = apnull.null_distribution(10, 100, method="mc", draws=1000, seed=1)
    thr = sg.resolved_threshold(law, alpha=1e-5)
    assert thr.source == "tail count" and thr.law_floor == 0.01
    assert thr.low <= thr.value <= thr.low + sg.MAX_THRESHOLD_WIDTH
    # the exact law brackets: the grid quantile within its error bound lies in [low, value]
    grid = apnull.null_distribution(10, 100, method="grid", tol=1e-4)
    assert thr.low - 1e-4 <= grid.tail_quantile(1e-5) <= thr.value + 1e-4
    # and a score at the threshold is counted at p <= alpha
    assert apnull.p_value(thr.value, 10, 100, method="mc", draws=1000, seed=1) <= 1e-5
    assert sg.threshold(10, 100, alpha=1e-5, method="mc", draws=1000, seed=1) == thr.value


def test_a_level_nothing_can_resolve_is_refused_with_the_floor():
    law = apnull.null_distribution(3000, 3000, method="mc", draws=1000, seed=1)
    with pytest.raises(ValueError, match=r"alpha = 1e-06 is below .* use alpha >= 0\.01"):
        sg.resolved_threshold(law, alpha=1e-6)
    status, out, err = cli("threshold", "--m", "3000", "--n", "3000", "--method", "mc", "--draws", "1000",
                           "--seed", "1", "--alpha", "1e-6")
    assert status == 2 and out == "" and err.count("\n") == 1 and "use alpha >= 0.01" in err


@pytest.mark.slow
def test_the_issue_threshold_at_alpha_1e_30():
    """threshold --m 100 --n 1000 --alpha 1e-30 --seed 1 printed 0.163036, the largest Monte Carlo draw
    (p there 1.27e-3); now the counted tail brackets it and a score there has p <= 1e-30."""
    status, out, err = cli("threshold", "--m", "100", "--n", "1000", "--alpha", "1e-30", "--seed", "1", "--json")
    res = json.loads(out)
    assert status == 0 and res["threshold_source"] == "tail count" and res["alpha"] == 1e-30
    lo, hi = res["threshold_bounds"]
    assert lo < hi == res["threshold"] and 0.3 < lo and hi - lo <= sg.MAX_THRESHOLD_WIDTH
    assert apnull.p_value(res["threshold"], 100, 1000, seed=1) <= 1e-30
    assert apnull.threshold(100, 1000, alpha=1e-30, seed=1) == res["threshold"]


# -- the command line at the edges ---------------------------------------------------------------
@pytest.mark.parametrize("args, log10", [
    (("--metric", "pr", "--value", "1", "--m", "600", "--n", "600"), -359.598254),
    (("--metric", "pr", "--value", "1", "--m", "100000", "--n", "100000"), -60203.250557),
    (("--value", "1", "--m", "500", "--n", "5000", "--seed", "1"), -725.931817),
])
def test_pvalues_below_the_smallest_float_print_their_log(args, log10):
    status, out, _ = cli("pvalue", *args)
    first = out.splitlines()[0]
    assert status == 0 and first.split()[-1] == f"10^{log10:.6f}"
    assert "[0, 0]" not in out and "4.94066e-324" not in out and "guaranteed range" not in out
    status, out, _ = cli("pvalue", *args, "--json")
    res = json.loads(out)  # valid JSON: no -Infinity, no NaN
    assert res["p_value_underflows"] is True and "p_value_note" in res
    lo, hi = res["p_value_bounds"]
    assert lo == 0.0 < res["p_value"] <= hi  # the range holds the p it gives
    assert round(res["log10_p_value"], 6) == log10
    assert res["log10_p_value_bounds"][0] <= res["log10_p_value"] <= res["log10_p_value_bounds"][1]
    assert res["log10_p_value_bounds"][1] <= math.log10(hi)  # and agrees with its log


def test_ordinary_pvalues_keep_their_float_form():
    status, out, _ = cli("pvalue", "--value", "0.5", "--m", "4", "--n", "30", "--json")
    res = json.loads(out)
    assert res["p_value_underflows"] is False and "p_value_note" not in res


@pytest.mark.parametrize("command", ["pvalue", "threshold"])
def test_no_negatives_at_a_million_positives(command):
    extra = ("--value", "1") if command == "pvalue" else ()
    status, out, _ = cli(command, *extra, "--m", "1000000", "--n", "0", "--json")
    res = json.loads(out)
    assert status == 0 and res["method"] == "exact"
    assert res["p_value" if command == "pvalue" else "threshold"] == 1.0


def test_threshold_json_names_its_source():
    status, out, _ = cli("threshold", "--m", "4", "--n", "30", "--alpha", "1e-12", "--json")
    res = json.loads(out)
    assert res["threshold"] == 1.0 and res["alpha"] == 1e-12 and res["threshold_source"] == "exact"
    status, out, _ = cli("threshold", "--metric", "pr", "--m", "600", "--n", "600", "--alpha", "1e-300")
    assert status == 0 and "alpha = 1e-300" in out.splitlines()[0]
