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
m = bound_int("m (positives)", "hg_m", 4, min_value=1, container=c1,
              help=f"White balls in the urn (e.g. replicates). At least 1; m + n at most {MAX_ITEMS:,}.")
n = bound_int("n (negatives)", "hg_n", 32, min_value=0, container=c2,
              help="Black balls in the urn (e.g. negative controls).")
k = bound_int("k (top positions)", "hg_k", 4, min_value=1, container=c3,
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
if len(layout) > 1 and not hc.hypergeom_view.ready(m, n, k, draws, seed):  # fill the block cache with a progress bar
    progress = st.progress(0.0, text="Shuffling labels...")
    for i, (b, rows) in enumerate(layout, start=1):
        hc.cached_shuffled_block(m, n, k, seed, b, rows)
        progress.progress(i / len(layout), text=f"Shuffling labels: block {i} of {len(layout)}")
    progress.empty()
view = hc.hypergeom_view.shown(m, n, k, draws, seed, spinner="Exact laws...")
sample, hyper, thresholds, summary, fit = view.sample, view.hyper, view.thresholds, view.summary, view.fit

show_figure(view.histograms, key="hist_precision")

shuffled_fit, hyper_fit = fit.iloc[0], fit.iloc[1]


def fit_text(row) -> str:
    p = "no test (one cell)" if pd.isna(row["p-value"]) else f"a fit test gives p = {row['p-value']:.3f}"
    return f"the bars are off by {row['total variation']:.4f} in all ({p})"


def fit_terms(row) -> str:
    p = "n/a (one cell)" if pd.isna(row["p-value"]) else f"{row['p-value']:.3f}"
    return (f"chi-square {row['chi-square']:.2f} on {row['df']} df (p = {p}), "
            f"total variation {row['total variation']:.4f}")


st.markdown(
    f"**Do the bars match the diamonds?** Shuffled labels: {fit_text(shuffled_fit)}; hypergeometric draws: "
    f"{fit_text(hyper_fit)}. A p-value that is not tiny means the draws are what the exact law predicts; "
    "the gap shrinks like 1 / √draws as the draws grow.",
    help=("In the usual terms: shuffled labels " + fit_terms(shuffled_fit) + "; hypergeometric draws "
          + fit_terms(hyper_fit) + ". 'Off by' is the **total variation** distance: half the summed gap "
          "between the bar heights and the diamonds (0 = identical, 1 = nothing in common). The fit test is "
          "Pearson's **chi-square** test against the exact pmf (probability mass function), on df degrees of "
          "freedom; cells with fewer than 5 expected draws are pooled."),
)

THRESHOLD_HELP = ("m / (m + n): the mean of Precision@K under the null, for every k. Empirical mean: the mean of "
                  "the shuffled Precision@K draws. 95% chance threshold: 'hyper 95pct' in R, the 95th percentile "
                  "(quantile q = 0.95) of the hypergeometric law divided by k.")
left, right = st.columns([1, 2])
with left:
    st.subheader("Chance thresholds", help=THRESHOLD_HELP)
    show_table(thresholds, column_config={"value": st.column_config.NumberColumn(format="%.4f")},
               key="thresholds_table")
    download_csv(thresholds, f"thresholds_m{m}_n{n}_k{k}_draws{draws}_seed{seed}.csv", key="download_thresholds")
with right:
    st.subheader("What the thresholds are")
    st.markdown("- **m / (m + n)**: the average Precision@K of a random ranking, for every k.\n"
                "- **empirical mean**: the average over the shuffled rankings above; it should sit next to m / (m + n).\n"
                "- **95% chance threshold**: a random ranking scores more than this at most 5% of the time "
                "(the smallest value x with P(Precision@K ≤ x) ≥ 0.95). Above it, a Precision@K beats chance.",
                help="The 95% chance threshold is the 95th percentile of the hypergeometric law divided by k; "
                     "R's scripts label it 'hyper 95pct'.")

st.subheader("Simulated versus exact")
# plain headers on the page, the usual terms in their tooltips; the CSV keeps the column names
SUMMARY_HEADERS = {
    "empirical mean": ("simulated mean", "Mean of the draws (the empirical mean)."),
    "exact mean": ("exact mean", "The mean of the exact null law: E[AP], or m / (m + n) for Precision@K."),
    "empirical 95pct": ("simulated 95%", "The value 95% of the draws stay at or below: the empirical 95th "
                        "percentile, type 7 (numpy's and R's default)."),
    "exact 95pct": ("exact 95%", "The 95th percentile of the exact null law (the threshold)."),
    "mean deviation (SE)": ("gap in SEs", "(simulated − exact mean) divided by the standard error (SE) of the "
                            "simulated mean: within ±2 for about 95% of seeds."),
    "SE of mean": ("SE of the mean", "Standard error of the simulated mean: the draws' SD / √draws."),
}
fmt = {c: st.column_config.NumberColumn(SUMMARY_HEADERS.get(c, (c,))[0], format="%.4f",
                                        help=SUMMARY_HEADERS.get(c, (c, None))[1]) for c in summary.columns
       if c not in ("statistic", "draws", "exact method", "mean deviation (SE)")}
fmt["mean deviation (SE)"] = st.column_config.NumberColumn(
    SUMMARY_HEADERS["mean deviation (SE)"][0], format="%+.2f", help=SUMMARY_HEADERS["mean deviation (SE)"][1])
shown = [c for c in summary.columns if c not in ("draws", "exact method")]  # both in the caption; the CSV keeps them
show_table(summary, column_config=fmt, column_order=shown, key="summary_table")
methods = dict(zip(summary["statistic"], summary["exact method"]))
st.caption(f"{draws:,} draws each. Exact laws: AP: {methods['AP (shuffled)']}; Precision@K: "
           f"{methods['Precision@K (shuffled)']}. The empirical 95th percentile interpolates between draws "
           "(type 7, the default of numpy and R); the exact one is a value the statistic can take, so the two "
           "may differ by less than one step of the law. 'gap in SEs': (simulated − exact mean) in "
           "standard errors, within ±2 for about 95% of seeds. The CSV keeps the usual column names "
           "(empirical mean, empirical 95pct, mean deviation (SE), SE of mean).")
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
