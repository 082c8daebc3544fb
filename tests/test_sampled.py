"""Tests for apnull.rendle (sampled metrics: Rendle's "Evaluation Metrics for Item Recommendation under
Sampling") and the `sampled` subcommand."""

from __future__ import annotations

import io
import itertools
import json
import math

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from scipy import stats

from apnull import cli
from apnull import rendle as sm
from apnull.rendle import ranks as rendle_ranks

ALL_METRICS = sm.METRICS
PAPER = sm.PAPER_EXAMPLE
N = sm.PAPER_N


def metric_of_sampled_rank(metric, support, s, k):
    """The metric evaluated on the sampled ranks among s + 1 items (the definition under test)."""
    return sm.metric_at_rank(metric, support, s + 1, k)


def pmf_sum(metric, r, n, s, k, replace):
    """Mean and SD of a sampled metric by summing over the law of the sampled rank."""
    support, pmf = sm.sampled_rank_pmf(r, n, s, replace=replace)
    values = metric_of_sampled_rank(metric, support, s, k)
    mean = float(pmf @ values)
    return mean, math.sqrt(max(float(pmf @ (values - mean) ** 2), 0.0))


@st.composite
def rank_setups(draw, max_n=60):
    """(r, n, s, replace) with s allowed up to n - 1 without replacement, beyond it with."""
    n = draw(st.integers(2, max_n))
    r = draw(st.integers(1, n))
    replace = draw(st.booleans())
    s = draw(st.integers(1, 2 * n if replace else n - 1))
    return r, n, s, replace


# --------------------------------------------------------------------------- metric of one rank


def test_metric_at_rank_formulas():
    r = np.array([1, 2, 10, 11, 100])
    n, k = 100, 10
    np.testing.assert_allclose(sm.metric_at_rank("auc", r, n, k), (n - r) / (n - 1))
    np.testing.assert_allclose(sm.metric_at_rank("precision", r, n, k), [0.1, 0.1, 0.1, 0, 0])
    np.testing.assert_allclose(sm.metric_at_rank("recall", r, n, k), [1, 1, 1, 0, 0])
    np.testing.assert_allclose(sm.metric_at_rank("ap", r, n, k), 1 / r)
    np.testing.assert_allclose(sm.metric_at_rank("ndcg", r, n, k), 1 / np.log2(r + 1))
    np.testing.assert_allclose(sm.metric_at_rank("ap@k", r, n, k), [1, 0.5, 0.1, 0, 0])
    np.testing.assert_allclose(
        sm.metric_at_rank("NDCG@K", r, n, k), [1, 1 / np.log2(3), 1 / np.log2(11), 0, 0]
    )
    assert sm.metric_at_rank("auc", 1, 2) == 1.0 and sm.metric_at_rank("auc", 2, 2) == 0.0
    assert isinstance(sm.metric_at_rank("ap", 4, 10), float)
    assert sm.metric_at_rank("ap", np.ones((2, 3), int), 10).shape == (2, 3)
    # NDCG: rank 1 is worth 1.58 times rank 2, AP twice as much (paper Section 3.1)
    assert sm.metric_at_rank("ndcg", 1, N) / sm.metric_at_rank("ndcg", 2, N) == pytest.approx(1.585, abs=1e-3)


@pytest.mark.parametrize(
    "call, message",
    [
        (lambda: sm.metric_at_rank("mrr", 1, 10), "metric must be one of"),
        (lambda: sm.metric_at_rank("ap", 1, 1), "n (number of items) must be at least 2, got 1"),
        (lambda: sm.metric_at_rank("ap", 1, 2.5), "n (number of items) must be a whole number"),
        (lambda: sm.metric_at_rank("ap", 0, 10), "between 1 and n = 10, got 0"),
        (lambda: sm.metric_at_rank("ap", 11, 10), "between 1 and n = 10, got 11"),
        (lambda: sm.metric_at_rank("ap", 2.5, 10), "whole numbers"),
        (lambda: sm.metric_at_rank("recall", 1, 10, k=0), "k (cut-off) must be at least 1"),
        (lambda: sm.sampled_rank_pmf(1, 10, 0), "s (number of sampled irrelevant items) must be"),
        (lambda: sm.sampled_rank_pmf(1, 10, 10, replace=False), "at most n - 1 = 9"),
        (lambda: sm.algorithm_exact_metric([], 10, "ap"), "at least one true rank"),
        (lambda: sm.simulate_sampled_metric([1], 10, 5, "ap", 0), "repetitions must be"),
        (lambda: sm.sampled_metrics_table({}, 10, 5), "non-empty mapping"),
        (lambda: sm.order_changes(PAPER, N, [], "ap"), "at least one sample size"),
    ],
)
def test_validation_messages(call, message):
    with pytest.raises(ValueError) as info:
        call()
    assert message in str(info.value)


def test_float_integers_are_accepted():
    assert sm.metric_at_rank("ap", np.array([2.0, 4.0]), 10.0).tolist() == [0.5, 0.25]


# --------------------------------------------------------------------------- law of the sampled rank


@settings(max_examples=80, deadline=None)
@given(rank_setups())
def test_pmf_matches_scipy_and_sums_to_one(setup):
    r, n, s, replace = setup
    support, pmf = sm.sampled_rank_pmf(r, n, s, replace=replace)
    assert support.tolist() == list(range(1, s + 2))
    assert pmf.sum() == pytest.approx(1.0, abs=1e-12)
    x = support - 1
    ref = (
        stats.binom.pmf(x, s, (r - 1) / (n - 1))
        if replace
        else stats.hypergeom.pmf(x, n - 1, r - 1, s)
    )
    np.testing.assert_allclose(pmf, ref, rtol=1e-9, atol=1e-15)


def test_pmf_matches_scipy_at_paper_scale():
    r = np.array([1, 2, 40, 100, 743, 4482, 9266, N])
    for s in (1, 99, 1000, N - 1):
        for replace in (True, False):
            _, pmf = sm.sampled_rank_pmf(r, N, s, replace=replace)
            assert pmf.shape == (r.size, s + 1)
            x = np.arange(s + 1)[None, :]
            ref = (
                stats.binom.pmf(x, s, ((r - 1) / (N - 1))[:, None])
                if replace
                else stats.hypergeom.pmf(x, N - 1, (r - 1)[:, None], s)
            )
            np.testing.assert_allclose(pmf, ref, rtol=1e-9, atol=1e-15)
            np.testing.assert_allclose(pmf.sum(axis=1), 1.0, atol=1e-12)


@pytest.mark.parametrize("replace", [True, False])
@pytest.mark.parametrize("n, s", [(4, 1), (4, 2), (5, 3), (6, 2)])
def test_pmf_matches_enumeration_of_samples(n, s, replace):
    """Enumerate every possible sample of irrelevant items and count the sampled rank."""
    for r in range(1, n + 1):
        irrelevant_ranks = [q for q in range(1, n + 1) if q != r]
        samples = (
            itertools.product(irrelevant_ranks, repeat=s)
            if replace
            else itertools.combinations(irrelevant_ranks, s)
        )
        counts = np.zeros(s + 1)
        total = 0
        for sample in samples:
            counts[sum(q < r for q in sample)] += 1
            total += 1
        _, pmf = sm.sampled_rank_pmf(r, n, s, replace=replace)
        np.testing.assert_allclose(pmf, counts / total, atol=1e-14)


def test_pmf_edge_ranks_are_certain():
    for replace in (True, False):
        _, top = sm.sampled_rank_pmf(1, 50, 20, replace=replace)
        _, bottom = sm.sampled_rank_pmf(50, 50, 20, replace=replace)
        assert top[0] == 1.0 and top[1:].sum() == 0.0
        assert bottom[-1] == pytest.approx(1.0) and bottom[:-1].sum() == pytest.approx(0.0, abs=1e-15)


# --------------------------------------------------------------------------- exact expectation


@pytest.mark.parametrize("metric", ALL_METRICS)
@settings(max_examples=40, deadline=None)
@given(setup=rank_setups(), k=st.integers(1, 12))
def test_expectation_equals_sum_over_law(metric, setup, k):
    r, n, s, replace = setup
    mean, sd = sm.expected_sampled_metric(metric, r, n, s, k=k, replace=replace)
    ref_mean, ref_sd = pmf_sum(metric, r, n, s, k, replace)
    assert mean == pytest.approx(ref_mean, rel=1e-10, abs=1e-13)
    assert sd == pytest.approx(ref_sd, rel=1e-7, abs=1e-9)


@pytest.mark.parametrize("metric", ALL_METRICS)
@pytest.mark.parametrize("replace", [True, False])
def test_expectation_equals_sum_at_paper_scale(metric, replace):
    ranks = np.array([1, 2, 40, 100, 212, 743, 1548, 5342, 9266, N])
    for s in (1, 9, 10, 99, 2000):
        mean, sd = sm.expected_sampled_metric(metric, ranks, N, s, k=10, replace=replace)
        assert mean.shape == sd.shape == ranks.shape
        for r, m, d in zip(ranks, mean, sd):
            ref_mean, ref_sd = pmf_sum(metric, int(r), N, s, 10, replace)
            assert m == pytest.approx(ref_mean, rel=1e-10, abs=1e-13)
            assert d == pytest.approx(ref_sd, rel=1e-6, abs=1e-9)


@pytest.mark.parametrize(
    "r, n, s",
    [
        (1, 10, 5),  # p = 0: AP is surely 1
        (10, 10, 5),  # p = 1: sampled rank is s + 1
        (2, 10**9, 99),  # p ~ 1e-9: naive (1 - (1-p)^(s+1)) / ((s+1) p) loses digits
        (2, 10**12, 5),  # p ~ 1e-12
        (100, N, 99),
        (N, N, 99),
        (2, 3, 1000),
    ],
)
def test_closed_form_ap_with_replacement(r, n, s):
    from fractions import Fraction

    mean, _ = sm.expected_sampled_metric("ap", r, n, s, replace=True)
    # exact rational reference: E[1/(1+B)] = sum_x C(s,x) p^x (1-p)^(s-x) / (x+1)
    p = Fraction(r - 1, n - 1)
    exact = sum(Fraction(math.comb(s, x)) * p**x * (1 - p) ** (s - x) / (x + 1) for x in range(s + 1))
    assert mean == pytest.approx(float(exact), rel=1e-13)
    ref_mean, _ = pmf_sum("ap", r, n, s, 10, True)
    assert mean == pytest.approx(ref_mean, rel=1e-11)
    if r == 1:
        assert mean == 1.0
    if r == n:
        assert mean == pytest.approx(1 / (s + 1), rel=1e-13)


def test_closed_form_ap_without_replacement_matches_enumeration():
    from fractions import Fraction

    n, s = 40, 17
    for r in (1, 2, 5, 23, 24, 39, 40):
        mean, _ = sm.expected_sampled_metric("ap", r, n, s, replace=False)
        exact = sum(
            Fraction(math.comb(r - 1, x) * math.comb(n - r, s - x), math.comb(n - 1, s)) / (x + 1)
            for x in range(s + 1)
        )
        assert mean == pytest.approx(float(exact), rel=1e-13)


@settings(max_examples=60, deadline=None)
@given(rank_setups(max_n=400))
def test_sampled_auc_is_unbiased(setup):
    r, n, s, replace = setup
    mean, _ = sm.expected_sampled_metric("auc", r, n, s, replace=replace)
    assert mean == pytest.approx((n - r) / (n - 1), abs=1e-14)


@pytest.mark.parametrize("metric", ALL_METRICS)
def test_one_sample_makes_every_metric_linear_in_rank(metric):
    """Paper Section 4.5.4: with s = 1, E[M] = M(2) + (n - r)/(n - 1) (M(1) - M(2))."""
    n, k = 500, 10
    r = np.arange(1, n + 1)
    m1, m2 = sm.metric_at_rank(metric, [1, 2], 2, k)
    for replace in (True, False):
        mean, _ = sm.expected_sampled_metric(metric, r, n, 1, k=k, replace=replace)
        np.testing.assert_allclose(mean, m2 + (n - r) / (n - 1) * (m1 - m2), atol=1e-13)


@pytest.mark.parametrize("metric", ALL_METRICS)
def test_whole_catalogue_without_replacement_is_exact(metric):
    n = 300
    r = np.arange(1, n + 1)
    mean, sd = sm.expected_sampled_metric(metric, r, n, n - 1, replace=False)
    np.testing.assert_allclose(mean, sm.metric_at_rank(metric, r, n), rtol=1e-12, atol=1e-14)
    np.testing.assert_allclose(sd, 0.0, atol=1e-7)


def test_precision_is_recall_over_k():
    r = np.array([1, 5, 30, 300])
    rec = sm.expected_sampled_metric("recall", r, 1000, 50, k=5)
    prec = sm.expected_sampled_metric("precision", r, 1000, 50, k=5)
    np.testing.assert_allclose(prec[0], rec[0] / 5)
    np.testing.assert_allclose(prec[1], rec[1] / 5)


def test_scalar_and_vector_calls_agree():
    m, d = sm.expected_sampled_metric("ndcg", [3, 70], 100, 20)
    m0, d0 = sm.expected_sampled_metric("ndcg", 70, 100, 20)
    assert isinstance(m0, float) and isinstance(d0, float)
    assert (m[1], d[1]) == pytest.approx((m0, d0))


def test_algorithm_mean_and_sd_combine_instances():
    ranks = [3, 70, 70, 1]
    mean, sd = sm.expected_sampled_metric("ap", ranks, 100, 20)
    alg_mean, alg_sd = sm.algorithm_sampled_metric(ranks, 100, 20, "ap")
    assert alg_mean == pytest.approx(mean.mean())
    assert alg_sd == pytest.approx(math.sqrt((sd**2).sum()) / len(ranks))
    assert sm.algorithm_exact_metric(ranks, 100, "ap") == pytest.approx(np.mean(1 / np.array(ranks)))


# --------------------------------------------------------------------------- Monte Carlo


@pytest.mark.parametrize("metric", ALL_METRICS)
@pytest.mark.parametrize("replace", [True, False])
def test_simulation_agrees_with_exact(metric, replace):
    ranks = PAPER["C"] + PAPER["B"]
    reps = 4000
    draws = sm.simulate_sampled_metric(ranks, N, 99, metric, reps, seed=20190, replace=replace)
    assert draws.shape == (reps,)
    mean, sd = sm.algorithm_sampled_metric(ranks, N, 99, metric, replace=replace)
    se = sd / math.sqrt(reps)
    assert abs(draws.mean() - mean) <= 4 * se + 1e-12
    assert draws.std(ddof=1) == pytest.approx(sd, rel=0.1, abs=1e-9)


def test_simulation_is_seeded_and_blocked(monkeypatch):
    a = sm.simulate_sampled_metric(PAPER["C"], N, 99, "ap", 50, seed=1)
    b = sm.simulate_sampled_metric(PAPER["C"], N, 99, "ap", 50, seed=1)
    np.testing.assert_array_equal(a, b)
    monkeypatch.setattr(rendle_ranks, "_BLOCK_CELLS", 7)  # forces many small blocks
    c = sm.simulate_sampled_metric(PAPER["C"], N, 99, "ap", 50, seed=np.random.default_rng(1))
    assert c.shape == (50,) and np.isfinite(c).all()
    # blocking must not change the exact expectations
    ranks = np.arange(1, 200)
    m_small = sm.expected_sampled_metric("ndcg", ranks, 200, 150, replace=False)
    monkeypatch.setattr(rendle_ranks, "_BLOCK_CELLS", 1 << 21)
    m_big = sm.expected_sampled_metric("ndcg", ranks, 200, 150, replace=False)
    np.testing.assert_allclose(m_small, m_big, rtol=1e-14)


# --------------------------------------------------------------------------- the paper's example


def test_paper_example_ranks():
    assert PAPER == {
        "A": (100, 100, 100, 100, 100),
        "B": (40, 40, 8437, 9266, 4482),
        "C": (212, 2, 743, 5342, 1548),
    }


@pytest.mark.parametrize("algorithm", ["A", "B", "C"])
@pytest.mark.parametrize("metric", ["auc", "ap", "ndcg", "recall"])
def test_paper_exact_table(algorithm, metric):
    """Section 3.2 table, printed to 3 decimals."""
    ours = sm.algorithm_exact_metric(PAPER[algorithm], N, metric, k=10)
    assert round(ours, 3) == pytest.approx(sm.PAPER_EXACT_TABLE[algorithm][metric], abs=1e-12)


@pytest.mark.parametrize("algorithm", ["A", "B", "C"])
@pytest.mark.parametrize("metric", ["auc", "ap", "ndcg", "recall"])
def test_paper_sampled_table(algorithm, metric):
    """Section 4.3 table: s = 99 with replacement, mean +- SD over 1,000 simulated runs.

    The printed mean is itself a Monte Carlo estimate with standard error SD / sqrt(1000) and is
    rounded to 3 decimals, so the exact expectation can only be expected within a few SE plus half
    a unit of the last digit. Deviations (ours - printed) / (our SD / sqrt(1000)):
        A: AUC +0.70  AP +1.60  NDCG +1.61  Recall@10 ~0
        B: AUC -0.57  AP +2.11  NDCG +2.00  Recall@10 ~0
        C: AUC +0.33  AP +0.73  NDCG -0.01  Recall@10 +0.85
    The largest is B's AP, 2.1 SE (0.3407 vs printed 0.336; 2.05 SE with the printed SD). AP and
    NDCG of one algorithm come from the same simulated ranks, so their deviations move together.
    The printed SDs agree with our exact SDs to within the noise of a 1,000-run SD estimate.
    """
    printed_mean, printed_sd = sm.PAPER_SAMPLED_TABLE[algorithm][metric]
    mean, sd = sm.algorithm_sampled_metric(PAPER[algorithm], N, sm.PAPER_SAMPLES, metric, k=10)
    se = sd / math.sqrt(sm.PAPER_REPETITIONS)
    assert abs(mean - printed_mean) <= 3 * se + 0.0005
    # SD of a sample SD from 1,000 runs is about sd / sqrt(2 * 999) ~ 2.2 % of sd
    assert abs(sd - printed_sd) <= 4 * sd / math.sqrt(2 * 999) + 0.0005


def test_paper_sampled_table_largest_deviation_is_b_ap():
    worst = max(
        (
            abs(m - sm.PAPER_SAMPLED_TABLE[a][metric][0]) / (d / math.sqrt(1000)),
            a,
            metric,
        )
        for a in "ABC"
        for metric in ("auc", "ap", "ndcg", "recall")
        for m, d in [sm.algorithm_sampled_metric(PAPER[a], N, 99, metric)]
        if d > 1e-3
    )
    assert worst[1:] == ("B", "ap") and 2.0 < worst[0] < 2.2


def test_paper_sampled_orders_reverse_exact_ap():
    """Exact AP: C is 10x better than A and B; sampled AP (s = 99): A > B > C."""
    exact = {a: sm.algorithm_exact_metric(r, N, "ap") for a, r in PAPER.items()}
    sampled = {a: sm.algorithm_sampled_metric(r, N, 99, "ap")[0] for a, r in PAPER.items()}
    assert sm.algorithm_order(exact) == "C > B > A"  # B = 0.01009 > A = 0.01 (both print 0.010)
    assert sm.algorithm_order(sampled) == "A > B > C"


def _ap_order(s, replace=True):
    curves = sm.expected_metric_curve(PAPER, N, [s], "ap", replace=replace)
    return sm.algorithm_order({a: c[0] for a, c in curves.items()})


@pytest.mark.parametrize("replace", [True, False])
def test_paper_figure2_ap_orders(replace):
    """Section 4.3: A > C > B below 50 samples, A > B > C near 200, C > A > B near 500."""
    for s in (1, 10, 25, 49):
        assert _ap_order(s, replace) == "A > C > B"
    assert _ap_order(200, replace) == "A > B > C"
    assert _ap_order(500, replace) == "C > A > B"
    # "finally C better than A equal B": at the whole catalogue A and B differ by under 1 %
    curves = sm.expected_metric_curve(PAPER, N, [N - 1], "ap", replace=False)
    assert curves["C"][0] > 5 * curves["A"][0]
    assert curves["B"][0] == pytest.approx(curves["A"][0], rel=0.01)


def test_order_changes_on_a_grid():
    sizes = np.unique(np.geomspace(1, N - 1, 40).astype(int))
    ap = sm.order_changes(PAPER, N, sizes, "ap")
    assert [c["order"] for c in ap] == ["A > C > B", "A > B > C", "A > C > B", "C > A > B", "C > B > A"]
    assert ap[0] == {"samples": 1, "previous": None, "order": "A > C > B"}
    for before, after in zip(ap, ap[1:]):
        assert after["previous"] == before["order"] and after["samples"] > before["samples"]
    # the flips found on the coarse grid bracket the flips on a fine grid (73, 281, 438, 954)
    fine = [c["samples"] for c in sm.order_changes(PAPER, N, np.arange(60, 1000), "ap")]
    assert fine == [60, 73, 281, 438, 954]
    assert [c["samples"] for c in ap[1:]] == [int(sizes[sizes >= f][0]) for f in fine[1:]]

    ndcg = sm.order_changes(PAPER, N, sizes, "ndcg")
    assert [c["order"] for c in ndcg] == ["A > C > B", "C > A > B"]
    recall = sm.order_changes(PAPER, N, sizes, "recall", replace=False)
    assert recall[0]["order"] == "A = B = C"  # s < k: every sampled rank is within the top 10
    assert len(recall) >= 5 and recall[-1]["order"] == "C > A = B"  # = the exact order
    assert sm.order_changes(PAPER, N, sizes, "auc") == [
        {"samples": 1, "previous": None, "order": "A > C > B"}
    ]


def test_algorithm_order_ties():
    assert sm.algorithm_order({"b": 1.0, "a": 1.0, "c": 2.0}) == "c > a = b"
    assert sm.algorithm_order({"x": 0.5}) == "x"


# --------------------------------------------------------------------------- table builder


def test_table_long_and_wide():
    long = sm.sampled_metrics_table(PAPER, N, 99, k=10)
    assert list(long.columns) == [
        "algorithm", "metric", "label", "instances", "exact", "sampled_mean", "sampled_sd"
    ]
    assert long.shape == (12, 7)
    assert long["algorithm"].tolist() == ["A"] * 4 + ["B"] * 4 + ["C"] * 4
    assert long["label"].tolist()[:4] == ["AUC", "AP", "NDCG", "Recall@10"]
    row = long[(long.algorithm == "C") & (long.metric == "ap")].iloc[0]
    assert row.exact == pytest.approx(sm.algorithm_exact_metric(PAPER["C"], N, "ap"))
    assert (row.sampled_mean, row.sampled_sd) == pytest.approx(
        sm.algorithm_sampled_metric(PAPER["C"], N, 99, "ap")
    )

    wide = sm.sampled_metrics_table(PAPER, N, 99, metrics=["ap", "precision"], wide=True)
    assert wide.shape == (3, 8)
    assert list(wide.columns) == [
        "algorithm", "instances",
        "ap_exact", "ap_sampled_mean", "ap_sampled_sd",
        "precision_exact", "precision_sampled_mean", "precision_sampled_sd",
    ]
    assert wide["ap_sampled_mean"].tolist() == pytest.approx(
        [sm.algorithm_sampled_metric(r, N, 99, "ap")[0] for r in PAPER.values()]
    )


# --------------------------------------------------------------------------- CLI


def _call(*argv):
    out, err = io.StringIO(), io.StringIO()
    status = cli.main(["sampled", *argv], out=out, err=err)
    return status, out.getvalue(), err.getvalue()


def _run(*argv):
    status, out, err = _call(*argv)
    assert status == 0, err
    return out


def test_cli_table():
    text = _run("--ranks", "100,100,100,100,100", "--ranks", "B=40,40,8437,9266,4482", "--samples", "99")
    assert "10000 items, 99 sampled irrelevant items (with replacement), k = 10" in text
    assert "A          AP          0.0100  0.6366 +- 0.1304" in text
    assert "B          Recall@10   0.0000  0.4000 +- 0.0000" in text


def test_cli_json_and_defaults():
    payload = json.loads(_run("--paper-example", "--json", "--without-replacement", "--k", "5"))
    assert {k: payload[k] for k in ("items", "samples", "k", "replace")} == {
        "items": 10000, "samples": 99, "k": 5, "replace": False
    }
    assert len(payload["rows"]) == 12
    first = payload["rows"][0]
    assert first["algorithm"] == "A" and first["metric"] == "auc"
    assert first["exact"] == pytest.approx(9900 / 9999)
    labels = {r["label"] for r in payload["rows"]}
    assert "Recall@5" in labels


def test_cli_names():
    rows = json.loads(_run("--ranks", "1,2", "--ranks", "mine=3", "--ranks", "4", "--items", "10", "--json"))["rows"]
    assert [r["algorithm"] for r in rows[::4]] == ["A", "mine", "C"]


@pytest.mark.parametrize(
    "argv, message",
    [
        (["--ranks", "0,5"], "ranks start at 1"),
        (["--ranks", "a,b"], "'a' is not a whole number"),
        (["--ranks", "1.5"], "not a whole number"),
        (["--ranks", ""], "is empty"),
        (["--ranks", "1,,2"], "empty entry"),
        (["--ranks", "=1,2"], "algorithm name"),
        (["--ranks", "x=1", "--ranks", "x=2"], "used twice"),
        ([], "at least one --ranks"),
        (["--ranks", "5,20", "--items", "10"], "a rank (20) exceeds --items 10"),
        (["--ranks", "1", "--items", "1"], "--items must be at least 2, got 1"),
        (["--ranks", "1", "--items", "ten"], "--items must be a whole number, got 'ten'"),
        (["--ranks", "1", "--samples", "0"], "--samples must be at least 1, got 0"),
        (["--ranks", "1", "--k", "0"], "--k must be at least 1"),
        (["--ranks", "1", "--items", "10", "--samples", "10", "--without-replacement"], "at most n - 1 = 9"),
    ],
)
def test_cli_bad_input_is_one_line_and_status_2(argv, message):
    status, out, err = _call(*argv)
    assert status == 2 and out == ""
    assert message in err and err.count("\n") == 1
