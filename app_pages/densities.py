"""Null densities of AP and Precision@R for sizes (M*i, N*i), i = 1..K."""

import streamlit as st

from apnull.sampling import sample_grid
from apnull.views import null as summaries
from apnull.plots import pending_figure
from apnull.plots.null import METRIC_NAMES
from apnull.ui import bound_int, bound_toggle, chart_slots, charts_now, download_csv, guard, intro, show_figure, wait_for
from apnull.ui.cache import DENSITY_VIEWS, density_preview, settled

D = summaries.DEFAULT_VIEW  # the first experiment: the view a visitor sees first (warmed at server start)

intro(
    "Null densities",
    "Shuffle a ranking at random and score it: how high can Average Precision (AP) and Precision@R "
    "get by chance alone? Each curve shows how often each score comes up for one size: **m** positives "
    "and **n** negatives, with the sizes growing together as (M·i, N·i) for i = 1..K. Small sizes "
    "(the colour runs from dark purple for small m + n to yellow for large) give wide curves: a random ranking often "
    "scores far above M/(M+N), so a high AP from few replicates is weak evidence. As the sizes grow "
    "the curves narrow around the average score of a random ranking. Precision@R can only be 0, 1/m, "
    "2/m, ..., 1, so it is drawn as bars, one per value: steps for the random rankings, dots for the "
    "exact probabilities.",
)

# the five number inputs share one row (a horizontal container: one element, where five columns were six)
c1 = c2 = c3 = c4 = c5 = st.container(horizontal=True, gap="small")
M = bound_int("M (positives at i = 1)", "dn_M", D["M"], min_value=1, container=c1,
              help="Positives of the smallest size; size i has M·i positives. At least 1.")
N = bound_int("N (negatives at i = 1)", "dn_N", D["N"], min_value=0, container=c2,
              help="Negatives of the smallest size; size i has N·i negatives.")
draws = bound_int("draws per size", "dn_draws", D["draws"], min_value=0, step=1000, container=c3,
                  help="Random rankings per size (Monte Carlo draws): 100 to 1,000,000; K x draws at most "
                       "2,000,000.")
K = bound_int("number of sizes K", "dn_K", D["K"], min_value=1, container=c4, help="Sizes i = 1..K, at most 200.")
seed = bound_int("seed", "dn_seed", D["seed"], min_value=0, container=c5, help="Same seed, same draws: a link reproduces them.")
show_exact = bound_toggle(
    "Overlay the exact curve where it is quick to compute", "dn_exact", False,
    help="AP chart, dashed: the exact null law (every placement of the positives counted, or the grid law, "
         "whose quantiles are within 0.001) smoothed with the same Gaussian kernel (KDE) as each sampled "
         "curve, for the smaller sizes. The Precision@R chart always shows its exact law (dots).",
)

with guard():
    summaries.check_grid_request(M, N, K, draws)

bar = st.container()
Y_TITLES = {"ap": "density", "pr": "probability × m"}
slots = chart_slots(2, lambda i: pending_figure(
    f"{METRIC_NAMES[summaries.METRICS[i]]} under the null", METRIC_NAMES[summaries.METRICS[i]],
    Y_TITLES[summaries.METRICS[i]],
    note=f"sampling {K * draws:,} random rankings..."), ready=DENSITY_VIEWS.ready(M, N, K, draws, seed, show_exact))

view, shown_draws = density_preview(M, N, K, draws, seed, show_exact, container=bar)
if shown_draws < draws:  # a preview: the whole view is drawn in the background, the page shows it when ready
    bar.info(f"Preview from the first {shown_draws:,} random rankings per size; the {draws:,} asked for are "
            "being drawn and the charts will update by themselves in a moment.", icon=":material/hourglass_top:")
    wait_for(lambda: settled(DENSITY_VIEWS, M, N, K, draws, seed, show_exact))

for slot, (metric, fig, exact_sizes) in zip(slots, view[:charts_now(len(view), slots)]):
    with slot.container():
        show_figure(fig, key=f"density_{metric}")
        if metric == "pr":
            st.caption("Precision@R is the share of positives in the top m places, so it takes only the values "
                       "j/m (j hits). Each step line is one size's histogram of the random rankings, one bar of "
                       "width 1/m per value (the bars at 0 and 1 are cut in half there: Precision@R never goes "
                       "below 0 or above 1); each dot is the exact probability of j hits. Heights are "
                       "probability × m, so sizes with different m share one scale. A smooth curve would draw "
                       "bumps between the values that cannot occur.",
                       help="The exact probabilities come from the hypergeometric law: the hits in the top m "
                            "are like m balls drawn from an urn of m white and n black ones. Probability × m "
                            "is the probability per unit of Precision@R (a density), as on the AP chart.")
        if exact_sizes is not None:
            st.caption(f"Exact law drawn for {exact_sizes} of {K} sizes "
                       f"({'all' if exact_sizes == K else 'the ones quick to compute'}).")

# the draws are not kept in memory: the same seed draws them again, identical, when the button is clicked
download_csv(lambda: sample_grid(M, N, K, draws, seed), f"null_draws_M{M}_N{N}_K{K}_draws{draws}_seed{seed}.csv",
             label=f"Download the {K * draws:,} draws (CSV: m, n, ap, pr)", key="download_draws")
