"""Binning n: nonlinear breakpoints and what one null per bin does to the threshold."""

import time

import streamlit as st

from apnull.binning import REPRESENTATIVES
from apnull.ui import binning_cache as bc
from apnull.ui import bound_float, bound_int, bound_select, download_csv, guard, intro, show_figure, show_table

SHORT = {"ap": "AP", "pr": "Precision@R"}
REP_TEXT = {"lower": "smallest", "upper": "largest", "middle": "middle"}

intro(
    "Binning n",
    "A screen scores many rankings with different numbers of negatives n, and computing the chance "
    "distribution of the score (the null) for every (m, n) separately is costly. One way out is to group "
    "the n's into bins and compute one null per bin. The breakpoints are i^power (i = 1, 2, ...): with power > 1 the bins get wider as n grows, "
    "which is fine because the null changes less and less when one more negative is added to an "
    "already long list. The first chart shows how wide each bin is. The next two show the price: every "
    "n in a bin is tested against the threshold of one **representative** n of the bin instead of its "
    "own. Adding negatives can only push a random ranking's positives down, so the threshold falls as n "
    "grows; taking the **lower** end of each bin therefore gives a threshold that is a little too "
    "strict, never too lenient.",
)

c1, c2, c3 = st.columns(3)
power = bound_float("power", "bn_power", 1.3, step=0.05, format="%.3g", container=c1,
                    help="Breakpoints are i^power: 1 gives one bin per n; larger values give wider bins. Between 1 and 5.")
max_value = bound_int("max (largest n)", "bn_max", 300, step=10, container=c2,
                      help="Breakpoints up to this value; the threshold curve runs over n = 0..max (at most 5,000).")
with c3:
    representative = bound_select("representative n of a bin", "bn_rep", list(REPRESENTATIVES), "lower",
                                  help="lower: the smallest n of the bin (conservative); upper: the largest; "
                                       "middle: the middle one. The open-ended last bin always uses its lower end.")
c4, c5, c6 = st.columns(3)
m = bound_int("m (positives)", "bn_m", 4, min_value=1, container=c4, help="Number of positives, at least 1.")
q = bound_float("quantile q", "bn_q", 0.95, step=0.01, format="%.4g", container=c5,
                help="The threshold is the score a share q of random rankings stay at or below (the q-quantile "
                     "of the null): between 0 and 1; 0.95 lets 5% of random rankings through.")
metric = bound_select("metric", "bn_metric", ["ap", "pr"], "ap", container=c6,
                      help="ap: Average Precision; pr: Precision@R (hits in the top m, divided by m).")

with guard():
    started = time.perf_counter()
    cached = bc.binning_view.ready(m, q, max_value, power, representative, metric)
    view = bc.binning_view.shown(m, q, max_value, power, representative, metric,
                         spinner="Computing the null threshold at every n...")
    seconds = time.perf_counter() - started
    bins, cost, summary = view.bins, view.cost, view.summary

st.subheader("Breakpoints")
show_figure(view.breakpoint_figure, key="breakpoints")
st.caption(f"Bin i holds the whole numbers n with b_i ≤ n < b_(i+1); n = 0 is a bin of its own (bin 0) and the last "
           f"bin is open-ended (every n ≥ {bins['first_n'].iloc[-1]}).")
show_table(bins, height=250,
           column_config={"break_point": st.column_config.NumberColumn("break_point", format="%.4f",
                                                                       help="Where the bin starts: i^power."),
                          "break_width": st.column_config.NumberColumn("break_width", format="%.4f",
                                                                       help="Distance to the next breakpoint."),
                          "first_n": st.column_config.NumberColumn("first_n", help="Smallest whole n in the bin."),
                          "last_n": st.column_config.NumberColumn("last_n", help="Largest whole n in the bin "
                                                                  "(empty for the open-ended last bin).")})
download_csv(bins, f"bins_max{max_value}_pow{power:g}.csv", label="Download the bins (CSV)", key="download_bins")

st.subheader(f"What binning costs: {SHORT[metric]} threshold for m = {m}, q = {q:g}")
# one row that wraps when narrow (a horizontal container: one element, where four columns were five)
k1 = k2 = k3 = k4 = st.container(horizontal=True, gap="small")
k1.metric("laws to compute (bins)", f"{summary['bins']}", border=True,
          help=f"Bins met by n = 0..{cost['n'].iloc[-1]}: one null law (the chance distribution of the score) "
               f"per bin, instead of {summary['n_values']} nulls, one per n.")
k2.metric("largest threshold shift", f"{summary['max_abs_error']:.4f}", border=True,
          help=f"The largest |threshold error|: how far the threshold of the bin's representative n is from "
               f"the exact threshold at n, at n = {summary['worst_n']}.")
k3.metric("average threshold shift", f"{summary['mean_abs_error']:.4f}", border=True,
          help=f"The mean |threshold error| over n = 0..{cost['n'].iloc[-1]}.")
k4.metric("n too lenient", f"{summary['n_below']}", border=True,
          help="Values of n where the binned threshold is below the exact one: there binning lets through "
               "scores the exact null would reject.")

how = "; ".join(
    f"{'counted over every placement' if meth == 'exact' else 'from a fine grid, within 0.001'} "
    f"for n = {lo}..{hi}" for meth, lo, hi in view.methods)
how_terms = "; ".join(
    f"{'exact laws (all placements)' if meth == 'exact' else 'the grid law (quantiles within 0.001)'} "
    f"for n = {lo}..{hi}" for meth, lo, hi in view.methods)
words = (f"With power {power:g} and max {max_value}, **{summary['bins']} null laws** (one per bin) stand in for "
         f"**{summary['n_values']}** values of n. Testing each n against the {REP_TEXT[representative]} n of its bin "
         f"moves the {SHORT[metric]} threshold by **{summary['mean_abs_error']:.4f}** on average and by at most "
         f"**{summary['max_abs_error']:.4f}** (at n = {summary['worst_n']}). ")
if summary["n_below"] == 0:
    words += ("The binned threshold is never below the exact one, so binning only makes the test stricter: "
              "a few rankings that would pass at their exact n fail, none passes that should not.")
else:
    words += (f"At **{summary['n_below']}** values of n the binned threshold is *below* the exact one (by up to "
              f"{-summary['most_below']:.4f}): there the binned test lets through scores that the exact null "
              "would reject. Use the lower end of each bin to stay on the safe side.")
st.markdown(words)
took = "came from the cache" if cached else f"took {seconds:.2f} s"
st.caption(f"Thresholds: {how}; the whole curve {took}.",
           help=f"In the usual terms: {how_terms}. The exact law counts every placement of the m positives "
                "among the m + n places; the grid law computes the AP law on a grid of small steps, every "
                "quantile within 0.001 of the exact one.")

show_figure(view.threshold_figure, key="thresholds")
show_figure(view.error_figure, key="errors")
download_csv(cost, f"binning_cost_m{m}_q{q:g}_{metric}_{representative}.csv",
             label="Download the threshold at every n (CSV)", key="download_cost")
