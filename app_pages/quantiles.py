"""Null quantiles (q75, q90, q95) and mean of AP and Precision@R versus size."""

import streamlit as st

from apnull.views import null as summaries
from apnull.ui import bound_int, bound_select, download_csv, guard, intro, show_figure, show_table, wait_for
from apnull.ui.cache import QUANTILE_VIEWS, quantile_preview, quantile_view, settled

D = summaries.DEFAULT_VIEW  # the first experiment: the view a visitor sees first (warmed at server start)

intro(
    "Quantiles versus size",
    "How high must a score be before it beats chance? A common habit is to compare AP with the ratio "
    "M/(M+N) (the grey band). That is wrong twice. The average AP of a random ranking (black dotted: "
    "the exact E[AP]) sits above that ratio, and at small sizes random rankings spread wide. The score "
    "that only 5% of random rankings beat (the 95th percentile), a fair threshold, is far above the average. The lines show the 75th, 90th and 95th percentiles and the mean "
    "of AP (left, blue) and Precision@R (right, red) as m and n grow together; click a legend entry to show "
    "or hide that statistic in both panels. As the sizes grow, the quantiles "
    "close in on the mean. So the same AP is more significant with more replicates.",
)

c1, c2, c3, c4, c5, c6 = st.columns([1, 1, 1, 1, 1, 1.4])
M = bound_int("M (positives at i = 1)", "qt_M", D["M"], min_value=1, container=c1, help="Size i has M·i positives.")
N = bound_int("N (negatives at i = 1)", "qt_N", D["N"], min_value=0, container=c2, help="Size i has N·i negatives.")
K = bound_int("number of sizes K", "qt_K", D["K"], min_value=1, container=c3, help="Sizes i = 1..K, at most 200.")
draws = bound_int("draws per size", "qt_draws", D["draws"], min_value=0, step=1000, container=c4,
                  help="Monte Carlo only: 100 to 1,000,000 per size, K x draws at most 2,000,000.")
seed = bound_int("seed", "qt_seed", D["seed"], min_value=0, container=c5, help="Monte Carlo only.")
method = bound_select(
    "computed by", "qt_method", ["mc", "exact"], default="mc", container=c6,
    format_func=lambda x: {"mc": "Monte Carlo", "exact": "exact law"}[x],
    help="Monte Carlo: shuffle many rankings and read the percentiles off them (type 7 quantiles, as in R). "
         "Exact law: count every way the positives can be placed. Precision@R from the hypergeometric "
         "law at every size; AP from all placements or the grid law (within 0.001) where that takes "
         "under a second per size; larger sizes are left out for AP.",
)

with guard():
    sizes = summaries.check_grid_request(M, N, K, draws)

(summary, wide, fig), shown_draws = quantile_preview(M, N, K, draws, seed, method)
if shown_draws < draws:  # a preview: the whole view is drawn in the background, the page shows it when ready
    st.info(f"Preview from the first {shown_draws:,} random rankings per size; the {draws:,} asked for are "
            "being drawn and the chart and table will update by themselves in a moment.",
            icon=":material/hourglass_top:")
    wait_for(lambda: settled(QUANTILE_VIEWS, M, N, K, draws, seed, method))
show_figure(fig, key="quantiles")

if method == "exact":
    ap_sizes = summary.loc[summary["metric"] == "ap", "m"].nunique()
    if ap_sizes < len(sizes):
        st.info(f"The exact AP law is shown for the first {ap_sizes} of {len(sizes)} sizes; beyond them it "
                "would take more than a second per size. Switch to Monte Carlo to see all sizes.",
                icon=":material/info:")

st.subheader("Summary table")
# plain headers, the usual names in the tooltips (the CSV keeps q75, q90, q95, avg)
HEADERS = {"q75": ("75%", "75th percentile (q75): 75% of random rankings score at or below it."),
           "q90": ("90%", "90th percentile (q90): 90% of random rankings score at or below it."),
           "q95": ("95%", "95th percentile (q95): only 5% of random rankings score above it, the usual "
                          "chance threshold."),
           "avg": ("mean", "The average score of a random ranking (avg): the null mean.")}
config = {c: st.column_config.NumberColumn(label, format="%.4f", help=text) for c, (label, text) in HEADERS.items()}
config["metric"] = st.column_config.TextColumn("metric", help="ap: Average Precision; pr: Precision@R.")
show_table(wide, column_config=config)
# the whole view's table (a preview's would be rougher), made when the button is clicked if it is not ready
download_csv(lambda: quantile_view(M, N, K, draws, seed, method, progress=False)[1],
             f"null_quantiles_M{M}_N{N}_K{K}_{method}.csv", key="download_summary")
