"""Hypergeometric check: Precision@K of shuffled labels against the hypergeometric law."""

import pandas as pd
import streamlit as st

from apnull.limits import MAX_ITEMS, MAX_VIEW_DRAWS, MIN_VIEW_DRAWS
from apnull.views import hypergeometric as hv
from apnull.ui import hypergeom_cache as hc
from apnull.ui import bound_int, download_csv, guard, intro, show_figure, show_table

intro(
    "Hypergeometric check",
    "Put **m** positives and **n** negatives in a random order and look at the top **k** places. "
    "Picking the top k is like drawing k balls from an urn with m white and n black balls, so the "
    "number of positives there follows the *hypergeometric* law, and Precision@K = hits / k has mean "
    "m / (m + n) whatever k is. This page checks that claim by brute force: the top histogram "
    "shuffles the labels many times and scores each ranking, the bottom one draws the hit count "
    "straight from the hypergeometric law, and the diamonds are the exact probabilities. If the "
    "two histograms agree, the exact law can replace the simulation: its 95th percentile is a "
    "ready-made chance threshold for Precision@K. Average Precision has no such textbook law, so "
    "the last chart and table put the simulated AP beside our exact mean and threshold.",
)

c1, c2, c3, c4, c5 = st.columns(5)
m = bound_int("m (positives)", "hg_m", 4, min_value=0, container=c1,
              help=f"White balls in the urn (e.g. replicates). At least 1; m + n at most {MAX_ITEMS:,}.")
n = bound_int("n (negatives)", "hg_n", 32, min_value=0, container=c2,
              help="Black balls in the urn (e.g. negative controls).")
k = bound_int("k (top positions)", "hg_k", 4, min_value=0, container=c3,
              help="Balls drawn = top positions counted, between 1 and m + n. k = m gives Precision@R.")
draws = bound_int("draws", "hg_draws", 10_000, min_value=0, step=1000, container=c4,
                  help="Shuffles and hypergeometric draws: 100 to 1,000,000 (fewer for large m + n).")
seed = bound_int("seed", "hg_seed", 2022, min_value=0, container=c5,
                 help="Same seed, same draws: a link reproduces them. Changing k keeps the shuffles.")

st.caption(f"Limits: m ≥ 1, n ≥ 0, m + n ≤ {MAX_ITEMS:,}; 1 ≤ k ≤ m + n; {MIN_VIEW_DRAWS:,} to "
           f"{MAX_VIEW_DRAWS:,} draws, fewer for large m + n (a bad value shows an error saying what to change).")
with guard():
    m, n, k, draws = hv.check_request(m, n, k, draws)


layout = hv.block_layout(m, draws)
if len(layout) > 1 and not hc.view_ready(m, n, k, draws, seed):  # fill the block cache with a progress bar
    progress = st.progress(0.0, text="Shuffling labels...")
    for i, (b, rows) in enumerate(layout, start=1):
        hc.cached_shuffled_block(m, n, k, seed, b, rows)
        progress.progress(i / len(layout), text=f"Shuffling labels: block {i} of {len(layout)}")
    progress.empty()
if hc.view_ready(m, n, k, draws, seed):  # a rerun with cached inputs: no spinner (it costs a thread)
    view = hc.view(m, n, k, draws, seed)
else:
    with st.spinner("Exact laws..."):
        view = hc.view(m, n, k, draws, seed)
sample, hyper, thresholds, summary, fit = view.sample, view.hyper, view.thresholds, view.summary, view.fit

show_figure(view.histograms, key="hist_precision")

shuffled_fit, hyper_fit = fit.iloc[0], fit.iloc[1]


def fit_text(row) -> str:
    p = "n/a (one cell)" if pd.isna(row["p-value"]) else f"{row['p-value']:.3f}"
    return (f"chi-square {row['chi-square']:.2f} on {row['df']} df (p = {p}), "
            f"total variation {row['total variation']:.4f}")


st.markdown(
    f"**Agreement with the exact pmf** (cells with fewer than 5 expected draws pooled): shuffled labels "
    f"{fit_text(shuffled_fit)}; hypergeometric draws {fit_text(hyper_fit)}. A p-value that is not tiny "
    "means the sample is consistent with the hypergeometric law; the total variation (half the summed "
    "gap between bar heights and diamonds) shrinks like 1 / √draws."
)

left, right = st.columns([1, 2])
with left:
    st.subheader("Chance thresholds")
    show_table(thresholds, column_config={"value": st.column_config.NumberColumn(format="%.4f")},
               key="thresholds_table")
    download_csv(thresholds, f"thresholds_m{m}_n{n}_k{k}_draws{draws}_seed{seed}.csv", key="download_thresholds")
with right:
    st.subheader("What the thresholds are")
    st.markdown("- **m / (m + n)**: the mean of Precision@K under the null, for every k.\n"
                "- **empirical mean**: the mean of the shuffled Precision@K draws; it should sit next to m / (m + n).\n"
                "- **hyper 95pct**: the 95th percentile of the hypergeometric law divided by k, the smallest value x "
                "with P(Precision@K ≤ x) ≥ 0.95: "
                "a random ranking reaches more than this at most 5% of the time.")

st.subheader("Simulated versus exact")
fmt = {c: st.column_config.NumberColumn(format="%.4f") for c in summary.columns
       if c not in ("statistic", "draws", "exact method", "mean deviation (SE)")}
fmt["mean deviation (SE)"] = st.column_config.NumberColumn(format="%+.2f")
shown = [c for c in summary.columns if c not in ("draws", "exact method")]  # both in the caption; the CSV keeps them
show_table(summary, column_config=fmt, column_order=shown, key="summary_table")
methods = dict(zip(summary["statistic"], summary["exact method"]))
st.caption(f"{draws:,} draws each. Exact laws: AP: {methods['AP (shuffled)']}; Precision@K: "
           f"{methods['Precision@K (shuffled)']}. The empirical 95th percentile interpolates between draws "
           "(type 7, the default of numpy and R); the exact one is a value the statistic can take, so the two "
           "may differ by less than one step of the law. 'mean deviation (SE)': (empirical − exact mean) in "
           "standard errors, within ±2 for about 95% of seeds.")
download_csv(summary, f"ap_precision_summary_m{m}_n{n}_k{k}_draws{draws}_seed{seed}.csv",
             key="download_summary")

show_figure(view.scatter, key="scatter_ap_precision")
st.caption("Rankings with more positives in the top k tend to have a higher AP, but AP also rewards "
           "positives just below the top k, so each column of points spreads out.")

download_csv(lambda: pd.DataFrame({"precision_at_k": sample.precision, "ap": sample.ap,
                                   "hypergeometric_precision_at_k": hyper}),
             f"draws_m{m}_n{n}_k{k}_draws{draws}_seed{seed}.csv",
             label=f"Download the {draws:,} draws (CSV: shuffled Precision@K, AP, hypergeometric Precision@K)",
             key="download_draws")
