"""Threshold lookup: the null threshold and p-value of AP and Precision@R for one (m, n)."""

import streamlit as st

from apnull.limits import as_probability, check_sizes
from apnull.significance import METHODS
from apnull.ui import bound_float, bound_int, bound_select, download_csv, guard, intro, show_figure, show_table
from apnull.ui.lookup_cache import lookup_view
from apnull.views.null import DEFAULT_VIEW, format_p, p_phrase

SHORT = {"ap": "AP", "pr": "Precision@R"}
#: in the metric cards, under a heading that names the metric: "Precision@R threshold (95%)" is cut off
LABEL = {"ap": "AP", "pr": "P@R"}

head = st.container()  # the introduction, written once the score it quotes has been read
c1, c2, c3, c4 = st.columns(4)
m = bound_int("m (positives)", "lk_m", DEFAULT_VIEW["M"], min_value=1, container=c1, help="Number of relevant items (e.g. replicates - 1). At least 1.")
n = bound_int("n (negatives)", "lk_n", DEFAULT_VIEW["N"], min_value=0, container=c2, help="Number of irrelevant items (e.g. controls). At least 0.")
with c3:
    # no format_func on URL-bound radios: the URL holds the shown label (?level=alpha, ?method=mc)
    level_kind = bound_select("Level given as", "lk_level", ["q", "alpha"], "q",
                              help="Either the quantile q of the null (e.g. 0.95) or the false positive rate "
                                   "alpha = 1 - q (e.g. 0.05).")
    if level_kind == "q":
        level = bound_float("quantile q", "lk_q", 0.95, step=0.01, format="%.4g",
                            help="The threshold is the q-quantile of the null: between 0 and 1.")
    else:
        level = bound_float("α (false positive rate)", "lk_alpha", 0.05, step=0.01, format="%.4g",
                            help="The threshold is the (1 − α)-quantile: strictly between 0 and 1.")
method = bound_select("Method", "lk_method", list(METHODS), "auto", container=c4,
                      help="auto: the most accurate method that is quick for these sizes: exact when all "
                           "placements are few, else a fine grid (thresholds within 0.001), else random "
                           "rankings. exact: count every placement (up to 2,000,000). grid: AP on a fine grid "
                           "with a guaranteed error (the grid law). mc: random rankings (Monte Carlo) with the "
                           "draws and seed below. Precision@R is always exact unless you pick mc. Far tails "
                           "that a grid or random rankings cannot see are counted.")
# the four number inputs share one row (a horizontal container: one element, where four columns were five)
c5 = c6 = c7 = c8 = st.container(horizontal=True, gap="small")
value_ap = bound_float("your AP", "lk_ap", 0.41, step=0.01, format="%.4g", container=c5,
                       help="An observed Average Precision to test, between 0 and 1.")
value_pr = bound_float("your Precision@R", "lk_pr", 0.5, step=0.05, format="%.4g", container=c6,
                       help="An observed Precision@R (hits in the top m, divided by m), between 0 and 1.")
draws = bound_int("Monte Carlo draws", "lk_draws", 100_000, step=10_000, container=c7,
                  help="Random rankings drawn when the method is Monte Carlo (or auto falls back to it): "
                       "1 to 10,000,000.")
seed = bound_int("seed", "lk_seed", 0, container=c8,
                 help="Seed of the Monte Carlo draws (same seed, same draws).")

with head:
    shown_ap = f"{value_ap:g}" if isinstance(value_ap, (int, float)) else "0.41"
    intro(
        "Threshold lookup",
        "Your method ranked the **m** true matches (say the other replicates of a compound) among **n** "
        f"non-matches (say controls) and scored **AP = {shown_ap}** (set it under *your AP* below). Is that "
        "better than chance? Shuffle the same m + n items at random and the score still varies, often well "
        "above the naive baseline m/(m+n) when m and n are small. This page gives that *null* law: its "
        "**threshold** (the score a random ranking beats with probability at most 1 − q, i.e. α) and the "
        "**p-value** of your score (the chance that a random ranking scores at least as high). A score above "
        "the threshold has p ≤ α. The charts show where the threshold and your score sit in the null.",
    )

with guard():
    m, n = check_sizes(m, n)
    alpha = None
    if level_kind == "q":
        q = as_probability(level, "q")
    else:
        alpha = as_probability(level, "alpha", open_low=True, open_high=True)
        q = 1.0 - alpha
    observed = {"ap": as_probability(value_ap, "your AP"), "pr": as_probability(value_pr, "your Precision@R")}
    view = lookup_view.shown(m, n, q, method, observed, draws, seed, alpha, spinner="Computing the null laws...")
    thresholds, mean_ap, sd_ap = view.thresholds, view.mean_ap, view.sd_ap

ratio = m / (m + n)
level_text = f"{q * 100:g}%" if alpha is None or alpha >= 1e-6 else f"α = {alpha:.3g}"
# one row that wraps when narrow (a horizontal container: one element, where three columns were four)
k1 = k2 = k3 = st.container(horizontal=True, gap="small")
k1.metric("E[AP] (closed form)", f"{mean_ap:.5f}", border=True,
          help="The exact null mean of AP: p + (1 − p)(H_N − 1)/(N − 1), with N = m + n, p = m/N.")
k2.metric("SD[AP] (closed form)", f"{sd_ap:.5f}", border=True, help="The exact null standard deviation of AP.")
k3.metric("M/(M+N)", f"{ratio:.5f}", border=True,
          help="The share of positives: the null mean of Precision@R, and the naive (too low) baseline for AP.")


def verdict_text(short: str, v: float, t: float, level_text: str) -> str:
    """The comparison of a score with the threshold in words: only a score strictly greater than the
    threshold beats it (a random ranking reaches the threshold itself more often than 1 − q)."""
    shown = next((f"{t:.{d}g}" for d in range(3, 13) if f"{t:.{d}g}" != f"{v:g}" or v == t), f"{t!r}")
    if v > t:
        return f"**{short} = {v:g}** is greater than the {level_text} null threshold {shown}: it **beats** the threshold"
    if v == t:
        return (f"**{short} = {v:g}** equals the {level_text} null threshold {shown}; a score must be greater than the "
                "threshold to beat it, so it **does not beat** it")
    return f"**{short} = {v:g}** is less than the {level_text} null threshold {shown}: it **does not beat** it"


cols = st.columns(2)
for col, metric in zip(cols, ("ap", "pr")):
    t, v, tail = thresholds[metric], observed[metric], view.tails[metric]
    short = SHORT[metric]
    with col:
        st.subheader(short)
        a, b = st.columns(2)
        a.metric(f"{LABEL[metric]} threshold ({level_text})", f"{t:.5g}", border=True,
                 help=f"The {level_text} null threshold of {short}: the smallest value x with P(X > x) ≤ α = "
                      f"{1 - q if alpha is None else alpha:.3g}, i.e. P(X ≤ x) ≥ q (the q-quantile of the null law).")
        plain, tech = view.methods[metric]
        a.caption(f"method: {plain}", help=tech)
        if view.threshold_notes.get(metric):
            a.caption(view.threshold_notes[metric][0], help=view.threshold_notes[metric][1])
        b.metric(f"p-value of {LABEL[metric]} = {v:g}", format_p(tail), border=True,
                 help=f"P(random {short} ≥ {v:g}) under the null"
                      + (": no random ranking drawn reached it, so the p-value is at most 1 / (1 + draws)."
                         if tail.source == "mc bound" else "."))
        b.caption(view.notes[metric][0], help=view.notes[metric][1])
        st.markdown(verdict_text(short, v, t, level_text) + f" ({p_phrase(tail)}).")
        show_figure(view.figures[metric], key=f"law_{metric}")

st.subheader("Thresholds at other levels")
table = view.table
show_table(view.shown,
           column_config={"ap_threshold": st.column_config.NumberColumn("AP threshold", format="%.5f"),
                          "pr_threshold": st.column_config.NumberColumn("Precision@R threshold", format="%.4f"),
                          "alpha": st.column_config.NumberColumn("α = 1 − q", format="%.4g"),
                          "q": st.column_config.NumberColumn("q")})
st.caption(f"AP: {view.methods['ap'][0]}. Precision@R: {view.methods['pr'][0]}.",
           help=f"AP: {view.methods['ap'][1]} Precision@R: {view.methods['pr'][1]}")
download_csv(table, f"thresholds_m{m}_n{n}.csv", label="Download the thresholds (CSV)", key="download_thresholds")
