"""Figure data and page helpers of apnull.plots.sampled (Rendle 2020)."""

from __future__ import annotations

import math

import numpy as np
import plotly.graph_objects as go
import pytest

from apnull import rendle as sm
from apnull.views import sampled as sv
from apnull.plots import sampled as ps

PAPER = sm.PAPER_EXAMPLE
N = sm.PAPER_N


# --------------------------------------------------------------------------- Figure 1


def test_figure1_curves_are_the_metric_of_the_rank():
    full, top = sv.figure1_curves(N, 10)
    assert list(full) == ["AUC", "AP", "NDCG", "Recall@10", "Precision@10"]
    keys = dict(zip(full, sv.PAGE_METRICS))
    for label, (ranks, values) in full.items():
        assert ranks[0] == 1 and ranks[-1] == N and {10, 11} <= set(ranks.tolist())
        np.testing.assert_allclose(values, sm.metric_at_rank(keys[label], ranks, N, 10))
    for label, (ranks, values) in top.items():
        np.testing.assert_array_equal(ranks, np.arange(1, 101))
        np.testing.assert_allclose(values, sm.metric_at_rank(keys[label], ranks, N, 10))
    fig = ps.metric_vs_rank_figure(full, top, N, highlight="AP")
    assert isinstance(fig, go.Figure) and len(fig.data) == 10
    left = [t for t in fig.data if t.xaxis == "x"]
    right = [t for t in fig.data if t.xaxis == "x2"]
    assert [t.name for t in left] == [t.name for t in right] == list(full)
    assert all(t.showlegend for t in left) and not any(t.showlegend for t in right)
    widths = {t.name: t.line.width for t in left}
    assert widths["AP"] > widths["AUC"]
    np.testing.assert_allclose(right[1].y, 1 / np.arange(1, 101))
    assert "all 10,000 ranks" in fig.layout.annotations[0].text and "top 100" in fig.layout.annotations[1].text


def test_rank_grid_small_and_large_n():
    np.testing.assert_array_equal(sv.rank_grid(50), np.arange(1, 51))
    g = sv.rank_grid(10**7, extra=(10, 11, 10**8))
    assert g[0] == 1 and g[-1] == 10**7 and np.all(np.diff(g) > 0) and g.size < 3000
    assert {10, 11} <= set(g.tolist()) and 10**8 not in g


# --------------------------------------------------------------------------- Figure 3


def test_figure3_sizes_and_ranks():
    assert sv.figure3_sizes(99, N, True) == [10, 99, 1000]  # 100 would hide under 99
    assert sv.figure3_sizes(100, N, True) == [10, 100, 1000]
    assert sv.figure3_sizes(300, N, True) == [10, 100, 300, 1000]
    assert sv.figure3_sizes(50, 60, False) == [10, 50]  # 100 and 1000 exceed n - 1 = 59
    np.testing.assert_array_equal(sv.figure3_ranks(N, [10, 99, 1000], 10), np.arange(1, 1001))
    thin = sv.figure3_ranks(N, [10, 100, 1000, 100_000], 10)
    assert thin.size <= 100 and {1, 10, 11, 1000} <= set(thin.tolist())  # thinned: s = 100,000 is costly
    whole = sv.figure3_ranks(10**6, [10, 99, 100, 1000], 10, whole=True)
    assert whole[0] == 1 and whole[-1] == 10**6


def test_sampled_vs_rank_figure_data():
    ranks = np.arange(1, 301)
    curves = {s: sm.expected_sampled_metric("ndcg", ranks, N, s) for s in (10, 100)}
    exact = sm.metric_at_rank("ndcg", ranks, N)
    fig = ps.sampled_vs_rank_figure(ranks, exact, curves, "NDCG", N)
    assert [t.name for t in fig.data] == ["sampled, s = 10", "sampled, s = 100", "exact NDCG"]
    for t, s in zip(fig.data[:2], (10, 100)):
        np.testing.assert_allclose(t.y, curves[s][0])
        np.testing.assert_allclose(t.customdata, curves[s][1])  # SD in the hover
    np.testing.assert_allclose(fig.data[2].y, exact)
    # the paper's point: sampled NDCG at rank 100 is far above the exact value
    assert fig.data[1].y[99] > 3 * exact[99]


# --------------------------------------------------------------------------- Figure 2


def test_exact_order_changes_for_paper_ap():
    """The flips found by bisection are the ones a fine grid finds (73, 281, 438, 954)."""
    sizes = sv.figure2_sizes(N, True, 15, "ap")
    assert sizes[0] == 1 and sizes[-1] == sv.FIG2_MAX_S
    changes = sv.exact_order_changes(PAPER, N, sizes, "ap")
    assert [c["samples"] for c in changes] == [1, 73, 281, 438, 954]
    assert [c["order"] for c in changes] == ["A > C > B", "A > B > C", "A > C > B", "C > A > B", "C > B > A"]
    for c in changes[1:]:
        before = sm.order_changes(PAPER, N, [c["samples"] - 1, c["samples"]], "ap")
        assert [x["order"] for x in before] == [c["previous"], c["order"]]  # a real flip at exactly s
        assert c["grid_samples"] >= c["samples"]
    # the same result from precomputed grid curves
    curves = sm.expected_metric_curve(PAPER, N, sizes, "ap")
    assert sv.exact_order_changes(PAPER, N, sizes, "ap", curves=curves) == changes


def test_exact_order_changes_finds_several_flips_between_grid_points():
    """On a grid of two points every flip in between is still found and located."""
    changes = sv.exact_order_changes(PAPER, N, [1, 2000], "ap")
    assert [c["samples"] for c in changes] == [1, 73, 281, 438, 954]
    recall = sv.exact_order_changes(PAPER, N, sv.figure2_sizes(N, True, 15, "recall"), "recall")
    assert recall[0]["order"] == "A = B = C" and recall[1]["samples"] == 10  # s + 1 <= k: all sampled ranks <= 10
    assert sv.exact_order_changes(PAPER, N, [1, 100, 5000], "auc") == [
        {"samples": 1, "previous": None, "order": "A > C > B", "grid_samples": 1}]


def test_metric_vs_samples_figure_data():
    sizes = sv.figure2_sizes(N, True, 15, "ap")
    curves = sm.expected_metric_curve(PAPER, N, sizes, "ap")
    changes = sv.exact_order_changes(PAPER, N, sizes, "ap")
    exact = {a: sm.algorithm_exact_metric(r, N, "ap") for a, r in PAPER.items()}
    fig = ps.metric_vs_samples_figure(sizes, curves, "AP", N, changes=changes, exact=exact)
    lines = {t.name: t for t in fig.data}
    for a in "ABC":
        np.testing.assert_allclose(lines[f"{a} (sampled)"].y, curves[a])
        np.testing.assert_array_equal(lines[f"{a} (sampled)"].x, sizes)
        assert tuple(lines[f"{a} (exact)"].y) == (exact[a], exact[a])
        assert lines[f"{a} (sampled)"].line.color == lines[f"{a} (exact)"].line.color
    flips = [t for t in fig.data if t.name == "order changes"]
    assert [t.x[0] for t in flips] == [73, 281, 438, 954]
    assert "A > C > B → A > B > C" in flips[0].hovertemplate
    assert sum(bool(t.showlegend) for t in flips) == 1
    assert fig.layout.xaxis.type == "log"
    assert [a.text for a in fig.layout.annotations] == ["A > B > C", "A > C > B", "C > A > B", "C > B > A"]
    assert fig.layout.annotations[0].x == pytest.approx(math.log10(73))


def test_figure2_sizes_respect_n_and_the_budget():
    assert sv.figure2_sizes(50, False, 15, "ap")[-1] == 49
    cheap = sv.figure2_sizes(N, True, 3000, "ap")  # closed form: no budget needed
    assert cheap[-1] == sv.FIG2_MAX_S
    costly = sv.figure2_sizes(N, True, 3000, "ndcg")
    assert 3000 * costly.sum() <= sv.FIG2_CELLS and costly[-1] < sv.FIG2_MAX_S


def test_changes_table():
    df = sv.changes_table([{"samples": 1, "previous": None, "order": "A > B"},
                           {"samples": 7, "previous": "A > B", "order": "B > A"}], "AP")
    assert list(df.columns) == ["s", "order below s", "order by sampled AP from s on"]
    assert df["s"].tolist() == [1, 7] and df.iloc[0, 1] == "—"


# --------------------------------------------------------------------------- inputs


def test_parse_ranks():
    assert sv.parse_ranks("100, 100,8437") == [100, 100, 8437]
    assert sv.parse_ranks(" 3 4;5 ") == [3, 4, 5]
    for text, message in [("", "at least one true rank"), ("a,b", "'a' is not a whole number"),
                          ("0,5", "ranks start at 1"), ("1.5", "'1.5' is not a whole number"),
                          (",".join(["1"] * 1001), "at most 1,000 instances")]:
        with pytest.raises(ValueError, match=message):
            sv.parse_ranks(text, "ranks of A")


def test_check_settings_and_rankings():
    assert sv.check_settings(10_000, 99, 10, True) == (10_000, 99, 10)
    for args, message in [((1, 99, 10, True), "n \\(number of items\\) must be at least 2"),
                          ((10**7 + 1, 99, 10, True), "at most 10,000,000"),
                          ((10_000, 0, 10, True), "s \\(sampled irrelevant items\\) must be at least 1"),
                          ((10_000, 100_001, 10, True), "at most 100,000"),
                          ((100, 100, 10, False), "too large without replacement"),
                          ((10_000, 99, 0, True), "k \\(cut-off"),
                          ((10_000, 99, 10_001, True), "k \\(cut-off")]:
        with pytest.raises(ValueError, match=message):
            sv.check_settings(*args)
    texts = {name: ", ".join(map(str, r)) for name, r in PAPER.items()}
    assert sv.check_rankings(texts, N, 99) == {name: list(r) for name, r in PAPER.items()}
    with pytest.raises(ValueError, match="ranks of B: rank 9,266 is larger than n = 5,000; raise n"):
        sv.check_rankings(texts, 5000, 99)
    with pytest.raises(ValueError, match="lower s to at most"):
        sv.check_rankings({"A": ",".join(["5"] * 1000)}, N, 100_000)
    assert sv.check_repetitions(1000, PAPER) == 1000
    with pytest.raises(ValueError, match="use at most 2,500 repetitions"):
        sv.check_repetitions(100_000, {"A": [1] * 1000})
    with pytest.raises(ValueError, match="repetitions must be at least 1"):
        sv.check_repetitions(0, PAPER)


# --------------------------------------------------------------------------- tables


def test_exact_and_sampled_tables_follow_the_library():
    long = sm.sampled_metrics_table(PAPER, N, 99, k=10)
    exact = sv.exact_table(long, PAPER)
    assert list(exact.columns) == ["algorithm", "true ranks", "AUC", "AP", "NDCG", "Recall@10"]
    wide = sm.sampled_metrics_table(PAPER, N, 99, k=10, wide=True)
    for key, label in zip(sm.TABLE_METRICS, ["AUC", "AP", "NDCG", "Recall@10"]):
        np.testing.assert_allclose(exact[label], wide[f"{key}_exact"])
    assert exact.loc[1, "true ranks"] == "40, 40, 8437, 9266, 4482"
    sampled = sv.sampled_table(long)
    assert sampled.loc[0, "AP"] == f"{wide.loc[0, 'ap_sampled_mean']:.4f} ± {wide.loc[0, 'ap_sampled_sd']:.4f}"
    assert sampled.loc[0, "AP"] == "0.6366 ± 0.1304"


def test_simulation_table_agrees_with_the_expectation():
    long = sm.sampled_metrics_table(PAPER, N, 99, k=10)
    sim = sv.simulation_table(PAPER, N, 99, 2000, seed=3, expected=long)
    assert len(sim) == 12 and set(sim["repetitions"]) == {2000}
    assert np.nanmax(np.abs(sim["deviation_se"])) < 4.5
    again = sv.simulation_table(PAPER, N, 99, 2000, seed=3)
    np.testing.assert_array_equal(sim["sim_mean"], again["sim_mean"])
    runs = sm.simulate_sampled_metric(PAPER["B"], N, 99, "ap", 2000, seed=[3, 1])
    row = sim[(sim["algorithm"] == "B") & (sim["metric"] == "ap")].iloc[0]
    assert row["sim_mean"] == pytest.approx(runs.mean()) and row["sim_sd"] == pytest.approx(runs.std(ddof=1))
    wide = sv.simulation_wide(sim)
    assert wide.loc[1, "AP"] == f"{row['sim_mean']:.4f} ± {row['sim_sd']:.4f}"


def test_paper_comparison():
    cmp = sv.paper_comparison()
    assert len(cmp) == 12 and cmp["exact_digits_agree"].all()
    worst = cmp.loc[cmp["deviation_se"].abs().idxmax()]
    assert (worst["algorithm"], worst["metric"]) == ("B", "ap")
    assert worst["deviation_se"] == pytest.approx(2.108, abs=0.01)
    assert worst["sampled_mean"] == pytest.approx(0.3407, abs=1e-4) and worst["paper_mean"] == 0.336
    # Recall@10 of A and B has (almost) no spread: no SE is given
    assert cmp.loc[cmp["metric"] == "recall", "deviation_se"].isna().sum() == 2
    assert np.nanmax(np.abs(cmp["deviation_se"])) < 2.2
    shown = sv.paper_comparison_display(cmp)
    assert shown.loc[5, "paper sampled (1,000 runs)"] == "0.336 ± 0.073"
    assert shown.loc[5, "our expected sampled"] == "0.3407 ± 0.0711"
    assert shown.loc[5, "exact: paper / ours"] == "0.010 / 0.0101"
    assert list(shown.columns)[-2:] == ["ours − paper (SE)", "SE of the paper's mean"]
