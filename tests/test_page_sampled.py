"""AppTest of app_pages/sampled.py (Rendle 2020): defaults reproduce apnull.sampled, widgets change
the output, bad input shows st.error without an exception."""

from __future__ import annotations

import numpy as np
import pytest
from apptest import assert_clean, decode, figures, open_page, set_widgets, trace

from apnull import rendle as sm
from apnull.views import sampled as sv

PAPER = sm.PAPER_EXAMPLE
N = sm.PAPER_N
# the tabs (only the one shown is built) and their st.dataframe elements in page order (simulation off)
RANK, EXAMPLE, SAMPLES, PAPER_TAB = sv.TABS
EXACT, SAMPLED = 0, 1  # on EXAMPLE
CHANGES = PAPER_TABLE = 0  # on SAMPLES and PAPER_TAB


def show_tab(at, tab):
    """Switch to ``tab`` as the browser does (its label in the URL and in the tabs' state) and run."""
    at.query_params["sm_tab"] = tab
    at.session_state["sm_tab"] = tab
    return at.run()


def run(numbers=None, texts=None, radios=None, toggles=None, tab=RANK):
    # toggles first: the simulation inputs appear once simulate is on (the helper reruns in between)
    at = open_page("sampled", {} if tab == RANK else {"sm_tab": tab})
    return set_widgets(at, {**(toggles or {}), **(numbers or {}), **(texts or {}), **(radios or {})}, "sm_")


@pytest.fixture(scope="module")
def default_app():
    """The page opened on each tab, default inputs."""
    return {tab: run(tab=tab) for tab in sv.TABS}


def test_default_inputs(default_app):
    at = default_app[RANK]
    assert_clean(at)
    assert at.title[0].value == "Sampled metrics"
    assert [at.number_input(key="sm_" + k).value for k in ("n", "s", "k")] == [10_000, 99, 10]
    assert at.radio(key="sm_sampling").value == "with replacement" and at.radio(key="sm_metric").value == "ap"
    assert default_app[EXAMPLE].text_input(key="sm_ranks_B").value == "40, 40, 8437, 9266, 4482"
    assert default_app[EXAMPLE].toggle(key="sm_simulate").value is False


def test_only_the_tab_shown_is_built(default_app):
    """A run builds the tab shown and none of the others (a run with all four sent about 69 elements)."""
    headers = {tab: [h.value for h in default_app[tab].header] for tab in sv.TABS}
    assert [h[:2] for h in headers[RANK]] == ["1.", "2."]
    assert [h[:2] for h in headers[EXAMPLE]] == ["3."]
    assert [h[:2] for h in headers[SAMPLES]] == ["4."]
    assert [h[:2] for h in headers[PAPER_TAB]] == ["5."]
    assert [len(default_app[tab].get("plotly_chart")) for tab in sv.TABS] == [2, 0, 1, 0]
    assert [len(default_app[tab].dataframe) for tab in sv.TABS] == [0, 2, 1, 1]
    assert [len(default_app[tab].text_input) for tab in sv.TABS] == [0, 3, 3, 0]
    for tab in sv.TABS:
        assert_clean(default_app[tab])


def test_ranks_typed_on_one_tab_drive_the_other():
    """The ranks are inputs of the example tab and of the samples tab; typed on one, the other shows them."""
    at = run(texts={"ranks_A": "1, 2, 3"}, tab=EXAMPLE)
    assert at.dataframe[EXACT].value.loc[0, "true ranks"] == "1, 2, 3"
    show_tab(at, SAMPLES)
    assert_clean(at)
    assert at.text_input(key="sm_ranks_A").value == "1, 2, 3"
    sizes = decode(trace(figures(at)[0], "A (sampled)")["x"])
    np.testing.assert_allclose(decode(trace(figures(at)[0], "A (sampled)")["y"]),
                               sm.expected_metric_curve({**PAPER, "A": [1, 2, 3]}, N, sizes, "ap")["A"])
    show_tab(at, RANK)
    show_tab(at, EXAMPLE)
    assert at.text_input(key="sm_ranks_A").value == "1, 2, 3"


def test_exact_table_equals_the_library(default_app):
    exact = default_app[EXAMPLE].dataframe[EXACT].value
    wide = sm.sampled_metrics_table(PAPER, N, 99, k=10, wide=True)
    assert exact["algorithm"].tolist() == ["A", "B", "C"]
    for key, label in zip(sm.TABLE_METRICS, ["AUC", "AP", "NDCG", "Recall@10"]):
        np.testing.assert_allclose(exact[label].to_numpy(float), wide[f"{key}_exact"], rtol=1e-12)
    # the paper's exact table, to its three decimals
    for i, name in enumerate("ABC"):
        for key, label in zip(sm.TABLE_METRICS, ["AUC", "AP", "NDCG", "Recall@10"]):
            assert round(exact.loc[i, label], 3) == sm.PAPER_EXACT_TABLE[name][key]


def test_sampled_table_equals_the_library(default_app):
    sampled = default_app[EXAMPLE].dataframe[SAMPLED].value
    wide = sm.sampled_metrics_table(PAPER, N, 99, k=10, wide=True)
    for i in range(3):
        for key, label in zip(sm.TABLE_METRICS, ["AUC", "AP", "NDCG", "Recall@10"]):
            mean, sd = wide.loc[i, f"{key}_sampled_mean"], wide.loc[i, f"{key}_sampled_sd"]
            assert sampled.loc[i, label] == f"{mean:.4f} ± {sd:.4f}"
    assert sampled.loc[1, "AP"] == "0.3407 ± 0.0711"


def test_default_figures_follow_the_library(default_app):
    fig1, fig3 = figures(default_app[RANK])
    fig2, = figures(default_app[SAMPLES])
    ap = trace(fig1, "AP")
    np.testing.assert_allclose(decode(ap["y"]), 1 / decode(ap["x"]))
    s99 = trace(fig3, "sampled, s = 99")
    ranks = decode(s99["x"])
    np.testing.assert_array_equal(ranks, np.arange(1, 1001))
    np.testing.assert_allclose(decode(s99["y"]), sm.expected_sampled_metric("ap", ranks, N, 99)[0])
    sizes = decode(trace(fig2, "A (sampled)")["x"])
    curves = sm.expected_metric_curve(PAPER, N, sizes, "ap")
    for a in "ABC":
        np.testing.assert_allclose(decode(trace(fig2, f"{a} (sampled)")["y"]), curves[a])
    flips = [t["x"][0] for t in fig2["data"] if t["name"] == "order changes"]
    assert flips == [73, 281, 438, 954]
    assert {72, 73, 953, 954} <= set(sizes.tolist())  # the flip points are on the plotted grid
    changes = default_app[SAMPLES].dataframe[CHANGES].value
    assert changes["s"].tolist() == [1, 73, 281, 438, 954]
    assert changes.iloc[-1, 2] == "C > B > A"


def test_paper_comparison_is_shown_and_explained(default_app):
    table = default_app[PAPER_TAB].dataframe[PAPER_TABLE].value
    ref = sv.paper_comparison()
    np.testing.assert_allclose(table["ours − paper (SE)"].to_numpy(float), ref["deviation_se"], equal_nan=True)
    assert table.loc[5, "paper sampled (1,000 runs)"] == "0.336 ± 0.073"
    text = " ".join(m.value for m in default_app[PAPER_TAB].markdown)
    assert "simulation of 1,000 repetitions" in text
    assert "at most 2.1 SE" in text and "B's AP: 0.3407 exact versus 0.336 printed" in text


def test_metric_change_changes_the_figures(default_app):
    at = run(radios={"metric": "ndcg"})
    assert_clean(at)
    fig1, fig3 = figures(at)
    fig2, = figures(show_tab(at, SAMPLES))
    assert "NDCG" in fig3["layout"]["title"]["text"]
    s99 = trace(fig3, "sampled, s = 99")
    np.testing.assert_allclose(decode(s99["y"]), sm.expected_sampled_metric("ndcg", decode(s99["x"]), N, 99)[0])
    assert [t["x"][0] for t in fig2["data"] if t["name"] == "order changes"] == [692]
    assert trace(fig1, "NDCG")["line"]["width"] > trace(fig1, "AP")["line"]["width"]


def test_s_and_ranks_change_the_tables(default_app):
    at = run(numbers={"s": 50}, texts={"ranks_A": "1, 2, 3"}, tab=EXAMPLE)
    assert_clean(at)
    rankings = {"A": [1, 2, 3], "B": list(PAPER["B"]), "C": list(PAPER["C"])}
    wide = sm.sampled_metrics_table(rankings, N, 50, k=10, wide=True)
    exact = at.dataframe[EXACT].value
    np.testing.assert_allclose(exact["AP"].to_numpy(float), wide["ap_exact"])
    assert exact.loc[0, "true ranks"] == "1, 2, 3"
    sampled = at.dataframe[SAMPLED].value
    assert sampled.loc[2, "NDCG"] == f"{wide.loc[2, 'ndcg_sampled_mean']:.4f} ± {wide.loc[2, 'ndcg_sampled_sd']:.4f}"
    assert "s = 50" in trace(figures(show_tab(at, RANK))[1], "sampled, s = 50")["name"]


def test_without_replacement(default_app):
    at = run(radios={"sampling": "without replacement"}, tab=EXAMPLE)
    assert_clean(at)
    long = sm.sampled_metrics_table(PAPER, N, 99, k=10, replace=False)
    assert at.dataframe[SAMPLED].value.loc[1, "AP"] == sv.sampled_table(long).loc[1, "AP"]
    flips = [t["x"][0] for t in figures(show_tab(at, SAMPLES))[0]["data"] if t["name"] == "order changes"]
    assert flips == [73, 277, 434, 1108]


def test_simulation_beside_the_expectation():
    at = run(toggles={"simulate": True}, numbers={"reps": 300, "sim_seed": 5}, tab=EXAMPLE)
    assert_clean(at)
    frames = [d.value for d in at.dataframe]
    sim = frames[2]
    ref = sv.simulation_table(PAPER, N, 99, 300, 5, k=10)
    assert sim.loc[0, "AUC"] == sv.simulation_wide(ref).loc[0, "AUC"]
    assert any("over 300 runs (seed 5)" in c.value for c in at.caption)


@pytest.mark.parametrize(
    "kwargs, message",
    [
        (dict(numbers={"k": 0}), "k (cut-off of Recall@k and Precision@k) must be at least 1"),
        (dict(numbers={"s": 0}), "s (sampled irrelevant items) must be at least 1"),
        (dict(numbers={"n": 5000}, tab=EXAMPLE), "ranks of B: rank 9,266 is larger than n = 5,000"),
        (dict(numbers={"n": 5000}, tab=SAMPLES), "ranks of B: rank 9,266 is larger than n = 5,000"),
        (dict(numbers={"n": 1}), "n (number of items) must be at least 2"),
        (dict(texts={"ranks_A": "0,5"}, tab=EXAMPLE), "ranks of A: ranks start at 1"),
        (dict(texts={"ranks_C": "a,b"}, tab=SAMPLES), "ranks of C: 'a' is not a whole number"),
        (dict(texts={"ranks_B": ""}, tab=EXAMPLE), "ranks of B: give at least one true rank"),
        (dict(numbers={"s": 10_000}, radios={"sampling": "without replacement"}), "too large without replacement"),
        (dict(numbers={"s": 200_000}), "must be at most 100,000"),
        (dict(toggles={"simulate": True}, numbers={"reps": 0}, tab=EXAMPLE), "repetitions must be at least 1"),
    ],
)
def test_bad_input_shows_an_error(kwargs, message):
    at = run(**kwargs)
    assert not at.exception, [e.value for e in at.exception]
    assert len(at.error) == 1 and message in at.error[0].value


def test_the_tab_shown_is_in_the_url():
    """A link carrying sm_tab opens on that tab (the tabs are bound to the URL with the page's prefix;
    choosing a tab in the browser writes it: tests/e2e/test_sampled_page.py)."""
    for tab in sv.TABS[2:]:
        at = open_page("sampled", {"sm_tab": tab})
        assert_clean(at)
        assert at.session_state["sm_tab"] == tab
        assert [h.value[:2] for h in at.header] == [f"{sv.TABS.index(tab) + 2}."]  # that tab alone is built
