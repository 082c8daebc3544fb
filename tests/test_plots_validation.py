"""Figures built without plotly's validation (``plots._style.fast_figure``) are what validation would give.

The figures a page rebuilds on every rerun skip plotly's property validation (it costs more server time
than the rest of the page). This checks every such builder against the validated construction of the
same figure: plotly accepts every property, and the JSON sent to the browser is the same.
"""

from __future__ import annotations

import json

import numpy as np
import pandas as pd
import plotly.graph_objects as go
import plotly.io as pio
import pytest

import apnull
from apnull import hypergeom, plots
from apnull import rendle as sm
from apnull.plots import ranking as ranking_plots
from apnull.binning import bin_table
from apnull.binning_cost import binning_cost
from apnull.plots import binning as binning_plots
from apnull.plots import hypergeom as hypergeom_plots
from apnull.plots.lookup import law_figure
from apnull.plots import sampled as sampled_plots
from apnull.plots.consistency import labels_figure
from apnull.plots.score import null_figure, volcano_figure
from apnull.views import hypergeometric as hypergeom_view
from apnull.views import sampled as sampled_view
from apnull.views import score as score_view
from apnull.views import null as summaries
from apnull.views import ranking as ranking_view


def _validated(fig: go.Figure) -> go.Figure:
    """The same figure through plotly's validation (raises ValueError on any invalid property)."""
    return go.Figure(json.loads(pio.to_json(fig, validate=False)))


def _cases():
    rel = [0, 1, 0, 1, 1, 0, 0, 1]
    items = [f"item {i} <b>&</b>" for i in range(len(rel))]
    curve = ranking_view.pr_curve_points(np.array(rel, bool), items)
    small = apnull.null_distribution(4, 4)
    wide = apnull.null_distribution(12, 80)
    samples = [(m, n, *(lambda s: (s.ap, s.pr))(apnull.sample_null(m, n, 500, 3))) for m, n in [(4, 30), (8, 60)]]
    curves = summaries.density_curves(samples, "ap")
    exact = summaries.exact_density_curves(curves, "ap")
    full, top = sampled_view.figure1_curves(1000, 10)
    ranks = np.arange(1, 301)
    sampled = {s: sm.expected_sampled_metric("recall", ranks, 1000, s, k=10) for s in (10, 100)}
    paper = {a: [min(r, 1000) for r in ranks_] for a, ranks_ in sm.PAPER_EXAMPLE.items()}
    sizes = sampled_view.figure2_sizes(1000, True, 15, "ap")
    changes = sampled_view.exact_order_changes(paper, 1000, sizes, "ap")
    shuffled = hypergeom_view.shuffled_precision_at_k(4, 32, 4, 2000, 5)
    hyper = hypergeom.hypergeom_precision_at_k(4, 32, 4, 2000, 5)
    lines = hypergeom_view.thresholds_table(4, 32, 4, shuffled.precision)
    lower, middle = (binning_cost(4, 0.95, 120, 1.3, rep, "ap") for rep in ("lower", "middle"))
    first = bin_table(120, 1.3)["first_n"].to_numpy()
    narrow, wide_law = apnull.null_distribution(4, 30, "ap"), apnull.null_distribution(20, 200, "ap")
    groups = pd.DataFrame({"pert": [f"t{i} <b>&</b>" for i in range(6)], "n_replicates": 4,
                           "mAP": np.linspace(0.9, 0.1, 6), "p_value": [1e-3, 1e-3, 0.01, 0.2, 0.5, 0.9],
                           "null": "permutation", "p_value_bound": [True, False, False, False, False, False]})
    groups["q_value"] = np.minimum(1, groups["p_value"] * 6 / np.arange(1, 7))
    points = score_view.volcano_data(groups, "pert", 0.05)
    big = score_view.volcano_data(pd.concat([groups] * 900, ignore_index=True), "pert", 0.05)
    labels = points.rename(columns={"n_replicates": "n_perturbations"})
    null_maps = np.random.default_rng(1).beta(2, 8, 999)
    return {
        "volcano": lambda: volcano_figure(points, 0.05, cutoff=score_view.p_cutoff(points), p_floor=1e-3,
                                          highlight="t2 <b>&</b>", method="permutation"),
        "volcano_plain_webgl": lambda: volcano_figure(big, 1e-9),
        "score_null": lambda: null_figure(score_view.null_histogram(null_maps, 0.7), 0.7, "t0", 0.001, 0.004,
                                          permutations=999, n_replicates=4, null_mean=float(null_maps.mean())),
        "score_null_bare": lambda: null_figure(score_view.null_histogram(null_maps, 0.2), 0.2, "t0", 0.3),
        "consistency_labels": lambda: labels_figure(labels, 0.05, cutoff=score_view.p_cutoff(labels), p_floor=1e-3,
                                                    highlight="t1 <b>&</b>"),
        "lookup_stems": lambda: law_figure(narrow, float(narrow.quantile(0.95)), 0.41, mean=0.3, q=0.95),
        "lookup_bars": lambda: law_figure(wide_law, float(wide_law.quantile(0.9)), None),
        "binning_breakpoints": lambda: binning_plots.breakpoint_figure(apnull.breakpoints(120, 1.3), 120, 1.3),
        "binning_one_breakpoint": lambda: binning_plots.breakpoint_figure(apnull.breakpoints(3, 2.5), 3, 2.5),
        "binning_thresholds": lambda: binning_plots.threshold_binning_figure(lower, first, 4, 0.95, "ap", "lower"),
        "binning_errors": lambda: binning_plots.threshold_error_figure(middle, first, 4, 0.95, "ap", "middle"),
        "hypergeom_histograms": lambda: hypergeom_plots.precision_histograms(
            shuffled.precision, hyper, 4, lines, pmf=hypergeom.hypergeom_pmf(4, 32, 4), m=4, n=32),
        "hypergeom_scatter": lambda: hypergeom_plots.ap_precision_scatter(
            shuffled.precision, shuffled.ap, 4, expected_ap=0.3, ap_threshold=0.6),
        "sampled_metric_vs_rank": lambda: sampled_plots.metric_vs_rank_figure(full, top, 1000, highlight="AP"),
        "sampled_vs_rank": lambda: sampled_plots.sampled_vs_rank_figure(
            ranks, sm.metric_at_rank("recall", ranks, 1000, 10), sampled, "Recall@10", 1000),
        "sampled_vs_samples": lambda: sampled_plots.metric_vs_samples_figure(
            sizes, sm.expected_metric_curve(paper, 1000, sizes, "ap"), "AP", 1000, changes=changes,
            exact={a: sm.algorithm_exact_metric(r, 1000, "ap") for a, r in paper.items()}),
        "pr_curve": lambda: ranking_plots.pr_curve_figure(curve, 3),
        "pr_curve_no_k": lambda: ranking_plots.pr_curve_figure(curve),
        "null_position_bars": lambda: ranking_plots.null_position_figure(small.values, small.probs, 0.6, 0.2, 4, 4,
                                                                         "exact"),
        "null_position_bins": lambda: ranking_plots.null_position_figure(wide.values, wide.probs, 0.3, 0.1, 12, 80,
                                                                         wide.method),
        "density": lambda: plots.density_figure(curves, "ap", 4, 30, draws=500),
        "density_exact": lambda: plots.density_figure(curves, "ap", 4, 30, exact=exact, draws=500),
        "pr_discrete": lambda: plots.pmf_figure(
            summaries.discrete_pr_laws(summaries.summarise_sizes(samples)), 4, 30, draws=500),
        "quantiles": lambda: plots.quantile_figure(
            summaries.summarise_draws(summaries.summarise_sizes(samples)), 4, 30,
            exact_mean=summaries.exact_mean_curve(4, 30, 2)),
        "quantiles_ap_only": lambda: plots.quantile_figure(
            summaries.summarise_draws(summaries.summarise_sizes(samples)), 4, 30, metrics=("ap",)),
        "pending": lambda: plots.pending_figure("Average Precision under the null", "AP", "density", note="..."),
    }


CASES = _cases()


@pytest.mark.parametrize("name", sorted(CASES))
def test_fast_figure_equals_validated_figure(name):
    fig = CASES[name]()
    checked = _validated(fig)
    assert json.loads(pio.to_json(fig, validate=False)) == json.loads(pio.to_json(checked, validate=False))


def test_a_typo_in_a_fast_figure_fails_validation():
    """The check above can fail: an invalid property is caught by the validated construction."""
    fig = plots.pending_figure("t", "x", "y")
    fig.layout.template = None
    bad = go.Figure(fig, _validate=False)
    bad._layout["titel"] = "typo"
    with pytest.raises(ValueError):
        _validated(bad)
