"""Sampled metrics (Rendle): what a metric computed on a sample of items really measures."""


import streamlit as st

from apnull import rendle as sm
from apnull.views import sampled as sv
from apnull.ui import (bound_int, bound_select, bound_text, bound_toggle, download_csv, guard, intro, show_figure,
                       show_table)
from apnull.ui.sampled_cache import (example_tables, paper_view, rank_figure, sampled_rank_figure, samples_view,
                                     simulation_view)
from apnull.ui.widgets import BIND


def progress_bar(text: str):
    """A progress bar made only when a tab's data is missing: ``step(i, total, s)`` moves it,
    ``step(None, ...)`` removes it."""
    def make():
        bar = st.progress(0.0, text=f"{text}...")

        def step(i, total, size):
            if i is None:
                bar.empty()
            else:
                what = f"s = {size:,} ({i} of {total})" if size is not None else f"part {i} of {total}"
                bar.progress(i / total, text=f"{text}: {what}")
        return step
    return make


intro(
    "Sampled metrics",
    "To save time, many recommender papers do not rank the whole catalogue of **n** items: they "
    "draw **s** random irrelevant items (often 99 or 100), rank the one relevant item among those "
    "s + 1, and report AP, NDCG or Recall@k of that small ranking. This page shows what that number "
    "really measures. The top chart is the metric of the real rank: AP, NDCG and Recall@k care "
    "almost only about the first few places, AUC falls off evenly. The second chart is the "
    "*expected sampled* metric at each true rank: with few samples every metric turns into a gentle "
    "slope that looks like AUC, so a model that is merely decent everywhere can beat one that "
    "often puts the item on top. The running example (the paper's algorithms A, B and C) shows the "
    "ranking of three algorithms flipping as s changes, even with unlimited repetitions. All "
    "numbers are exact expectations over the random sample; a simulation is optional.",
)

# ------------------------------------------------------------------------------------ settings
c1, c2, c3, c4 = st.columns([1.2, 1.2, 0.8, 1.8])  # wide enough for one-line labels: inputs in one row
n = bound_int("n (items in the catalogue)", "sm_n", sm.PAPER_N, min_value=0, step=1000, container=c1,
              help="Items ranked by the recommender: 2 to 10,000,000. The paper uses 10,000.")
s = bound_int("s (sampled irrelevant items)", "sm_s", sm.PAPER_SAMPLES, min_value=0, step=10, container=c2,
              help="Irrelevant items drawn for each evaluation: 1 to 100,000 (at most n - 1 without "
                   "replacement). The paper uses 99.")
k = bound_int("k (cut-off)", "sm_k", 10, min_value=0, container=c3,
              help="Cut-off of Recall@k and Precision@k, 1 to n.")
sampling = bound_select("Sampling of the irrelevant items", "sm_sampling", ["with replacement", "without replacement"],
                        container=c4, help="With replacement an item can be drawn twice (the paper's tables); "
                                           "without, the s items all differ. In formulas: with replacement the "
                                           "sampled rank is 1 + Binomial(s, (r - 1)/(n - 1)); without, the "
                                           "hypergeometric analogue.")
replace = sampling == "with replacement"
c5, c6 = st.columns([3, 2])
metric = bound_select("Metric for the figures", "sm_metric", list(sv.PAGE_METRICS), default="ap", container=c5,
                      format_func=lambda key: sm.METRIC_LABELS[key].format(k="k"),  # stable labels: they go in the URL
                      help="For one relevant item at true rank r among n items. AUC (area under the ROC curve): "
                           "the share of irrelevant items ranked below it. AP (Average Precision): 1/r here, "
                           "the reciprocal rank. NDCG (normalized discounted cumulative gain): 1/log₂(r + 1). "
                           "Recall@k: 1 if the item is in the top k, else 0. Precision@k: Recall@k / k.")
fig3_range = bound_select("Ranks in the second chart", "sm_ranks_range", ["top 1,000", "all n"], container=c6,
                          help="The paper zooms into the top 1,000 ranks; 'all n' shows the whole catalogue.")

with st.expander("Limits of this page"):
    st.markdown(
        f"- n from 2 to {sv.MAX_N:,}; s from 1 to {sv.MAX_S:,} (at most n − 1 without replacement); k from 1 to n.\n"
        f"- Ranks: whole numbers from 1 to n, at most {sv.MAX_INSTANCES:,} per algorithm; all instances x (s + 1) at "
        f"most {sv.MAX_TABLE_CELLS:,} (NDCG and the SD of AP sum over every possible sampled rank).\n"
        f"- Simulation: 1 to {sv.MAX_REPETITIONS:,} repetitions, repetitions x instances at most {sv.MAX_SIMULATED:,}.\n"
        f"- The second chart thins its ranks when s is large; the last chart's s runs up to min(n − 1, "
        f"{sv.FIG2_MAX_S:,}), lowered for NDCG (and AP without replacement) when there are many instances.\n"
        "- A value out of range shows an error saying what to change.")
with guard():
    n, s, k = sv.check_settings(n, s, k, replace)
label = sm.metric_label(metric, k)


def rank_inputs() -> tuple:
    """The three algorithms' true ranks (text inputs bound to the URL: sm_ranks_A, _B, _C), checked:
    ((name, ranks) ...). Shown in both tabs that use them; only one tab is built per run, so the same
    widgets appear once and keep their values and URL parameters across the two tabs."""
    texts = {}
    for col, name in zip(st.columns(3), sm.PAPER_EXAMPLE):
        default = ", ".join(map(str, sm.PAPER_EXAMPLE[name]))
        texts[name] = bound_text(f"Algorithm {name}: true ranks", f"sm_ranks_{name}", default, container=col,
                                 help="Whole numbers between 1 and n, separated by commas.")
    with guard():
        rankings = sv.check_rankings(texts, n, s)
    return rankings, tuple((name, tuple(r)) for name, r in rankings.items())


# The four parts in tabs: the page was 4,700 px long at 1,400 px wide. The tab shown is bound to the URL
# (sm_tab: its label), so a shared link opens on the same tab, and only that tab is built on a run: a
# bound st.tabs tracks which one is open and switching reruns the page (a run sent about 69 elements
# with all four built). Each tab's inputs live in the URL while it is shown.
tab_rank, tab_example, tab_samples, tab_paper = st.tabs(list(sv.TABS), key="sm_tab", bind=BIND)

# ------------------------------------------------------------------- Figure 1: metric vs rank
if tab_rank.open is not False:
    with tab_rank:
        st.header("1. Metrics of the true rank")
        show_figure(rank_figure(n, k, metric, label), key="fig_metric_rank")
        st.caption("One relevant item at true rank r among n items: AUC = (n − r)/(n − 1), AP = 1/r (the reciprocal "
                   "rank), NDCG = 1/log₂(r + 1), Recall@k = [r ≤ k], Precision@k = [r ≤ k]/k. Rank 1 is worth twice "
                   "rank 2 in AP, 1.58 times in NDCG; in AUC moving from 101 to 100 counts as much as from 2 to 1.")

        # ------------------------------------------------------- Figure 3: sampled metric vs true rank
        st.header(f"2. Expected sampled {label} versus the true rank")
        sizes3 = sv.figure3_sizes(s, n, replace)
        show_figure(sampled_rank_figure(metric, sizes3, n, k, replace, fig3_range == "all n", label,
                                        progress_bar("Expected sampled metric")), key="fig_sampled_rank")
        st.caption(f"Each curve is E[{label} of the sampled rank] for one s, the sampled rank being the relevant item's "
                   "place among itself and the s sampled irrelevant items; the dashed line is the exact metric. The "
                   "smaller s, the flatter the curve: top-heavy metrics lose their focus on the top. "
                   f"Sample sizes above {'n − 1' if not replace else '100,000'} are left out.")

# ------------------------------------------------------------------------- running example
if tab_example.open is not False:
    with tab_example:
        st.header("3. The running example: algorithms A, B and C")
        st.markdown("Each algorithm is evaluated on a few instances with one relevant item each; type the true rank of "
                    "the relevant item in every instance (comma-separated, 1 = top, at most 1,000 per algorithm). "
                    "The defaults are the paper's.")
        rankings, items = rank_inputs()

        tables = example_tables(items, n, s, k, replace)
        long, exact_wide = tables.long, tables.exact
        st.subheader("Exact metrics (all n items ranked)")
        show_table(exact_wide, key="exact_table",
                   column_config={c: st.column_config.NumberColumn(format="%.4f") for c in exact_wide.columns[2:]})

        how = "with" if replace else "without"
        st.subheader(f"Sampled metrics, s = {s:,} ({how} replacement): average over random samples ± SD",
                     help="Each cell is the exact expectation over the random sample (computed, not simulated) "
                          "± the standard deviation (SD): how much one evaluation run varies from the next.")
        simulate = bound_toggle("Also simulate sampled evaluations", "sm_simulate", False,
                                help="Repeat the sampled evaluation many times with random samples, as the paper did.")
        if simulate:
            d1, d2, _ = st.columns([1, 1, 2])
            reps = bound_int("repetitions", "sm_reps", sm.PAPER_REPETITIONS, min_value=0, step=100, container=d1,
                             help=f"Simulated evaluation runs: 1 to {sv.MAX_REPETITIONS:,}; repetitions x instances at most "
                                  f"{sv.MAX_SIMULATED:,}.")
            sim_seed = bound_int("simulation seed", "sm_sim_seed", 2019, min_value=0, container=d2,
                                 help="Same seed, same simulated runs.")
            with guard():
                reps = sv.check_repetitions(reps, rankings)
        left, right = st.columns(2) if simulate else (st.container(), None)
        with left:
            show_table(tables.sampled, key="sampled_table")
            st.caption("Exact expectation of each algorithm's mean sampled metric over the random sample, ± the SD "
                       "from one evaluation run to the next (each instance draws its own sample).")
        if simulate:
            with st.spinner("Simulating..."):
                sim, sim_wide = simulation_view(items, n, s, reps, sim_seed, k, replace, long)
            with right:
                show_table(sim_wide, key="simulation_table")
                dev = sim["deviation_se"].abs()
                worst = sim.loc[dev.idxmax()] if dev.notna().any() else None
                st.caption(f"Simulated: mean ± SD over {reps:,} runs (seed {sim_seed}). "
                           + (f"Largest gap to the exact expectation: {worst['deviation_se']:+.2f} standard errors "
                              f"({worst['algorithm']}, {worst['label']})." if worst is not None else ""))
        table_csv = long if not simulate else long.merge(
            sim[["algorithm", "metric", "repetitions", "sim_mean", "sim_sd", "deviation_se"]], on=["algorithm", "metric"])
        download_csv(table_csv, f"sampled_metrics_n{n}_s{s}_k{k}_{'with' if replace else 'without'}.csv",
                     label="Download the tables (CSV)", key="download_tables")

# ------------------------------------------------------------------ Figure 2: metric vs s
if tab_samples.open is not False:
    with tab_samples:
        st.header(f"4. Expected sampled {label} versus the number of samples")
        st.caption("The algorithms' true ranks, the same inputs as in the tab 'Algorithms A, B and C':")
        rankings, items = rank_inputs()
        view2 = samples_view(items, n, metric, k, replace, label, progress_bar("Expected sampled metric for each s"))
        show_figure(view2.figure, key="fig_metric_samples")
        exact_order, top2 = view2.exact_order, view2.top
        st.caption(f"s runs over sample sizes from 1 to {top2:,}, spaced evenly on the log scale"
                   + (" (shortened to bound the work)" if top2 < min(n - 1, sv.FIG2_MAX_S) else "")
                   + "; each change of order is pinned down to the exact s between two of them. "
                   f"Dotted lines: the exact {label} (order {exact_order}).",
                   help="The s grid is log-spaced; the changes of order are located exactly by bisection between "
                        "grid points (the expected metrics are exact, so the crossing s is too).")
        changes_df = view2.changes
        show_table(changes_df, key="changes_table")
        e1, e2, _ = st.columns([1, 1, 2])
        with e1:
            download_csv(changes_df, f"order_changes_{metric}_n{n}.csv", label="Order changes (CSV)",
                         key="download_changes")
        with e2:
            download_csv(view2.curves, f"sampled_{metric}_vs_s_n{n}.csv",
                         label="Curves (CSV)", key="download_curves")

# ------------------------------------------------------------------ the paper's tables
if tab_paper.open is not False:
    with tab_paper:
        st.header("5. The paper's printed tables beside ours")
        paper = paper_view()
        cmp, worst, all_exact = paper.comparison, paper.worst, paper.all_exact
        show_table(paper.display, key="paper_table", height=35 * (len(cmp) + 1) + 3,
                   column_config={"algorithm": st.column_config.TextColumn(width="small"),
                                  "SE of the paper's mean": st.column_config.NumberColumn(
                                      format="%.4f", help="Standard error (SE) of a mean of 1,000 simulated runs: "
                                                          "SD / √1000."),
                                  "ours − paper (SE)": st.column_config.NumberColumn(
                                      format="%+.2f", help="Our exact expectation minus the paper's printed mean, in "
                                                           "standard errors of the paper's mean.")})
        st.markdown(
            f"Setting: the paper's ranks, n = {sm.PAPER_N:,}, s = {sm.PAPER_SAMPLES} with replacement, k = 10 (whatever "
            f"the inputs above say). The exact table {'agrees with the print to all three decimals' if all_exact else 'differs from the print in places'}. "
            f"The paper's sampled table is itself a simulation of {sm.PAPER_REPETITIONS:,} repetitions, so each printed "
            "mean carries a standard error of SD/√1000; ours are exact expectations. Measured in those standard "
            f"errors, our values differ from the printed means by at most {abs(worst['deviation_se']):.1f} SE "
            f"({worst['algorithm']}'s {worst['label']}: {worst['sampled_mean']:.4f} exact versus {worst['paper_mean']:.3f} "
            "printed), and AP and NDCG of one algorithm move together because the paper computed them from the "
            "same simulated ranks. Deviations of about two SE are what a 1,000-run simulation produces now and "
            "then; they are noise in the printed table, not a disagreement about the maths, and every conclusion of "
            "the paper stands. Where our SD is below 0.001 (Recall@10 of A and B) the printed ± 0.000 is right and "
            "only rounding separates the numbers, so no SE is given."
        )
        download_csv(cmp, "rendle_paper_vs_exact.csv", label="Download the comparison (CSV)", key="download_paper")
