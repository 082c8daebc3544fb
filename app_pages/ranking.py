"""Ranking editor: edit one ranking and watch precision, recall, AP and its PR curve change."""

import math

import streamlit as st

from apnull.views import ranking as rk
from apnull.significance import choose_method
from apnull.ui import bound_int, download_csv, guard, intro, show_figure, show_table
from apnull.ui.ranking_cache import DEFAULT_K, DRAWS, position_view, ranking_view
from apnull.ui.ranking_editor import load_ranking, preset_controls, ranking_editor
from apnull.ui.relevance_pills import relevance_pills


intro(
    "Ranking editor",
    "A ranking lists items from the one most likely to be relevant down. Cut it after the first "
    "**k** items: **precision@k** is the share of those k items that are relevant, **recall@k** the "
    "share of all **m** relevant items found so far. Walking down the list, each relevant item raises "
    "recall by 1/m; **Average Precision (AP)** is the mean of the precision at those m moments. Drawn "
    "as precision against recall, that is a staircase of m steps of width 1/m, so AP is exactly the "
    "shaded area under it (no interpolation): relevant items placed low pull their steps down, "
    "non-relevant items placed low cost nothing.\n\n"
    "Edit the ranking on the left (one click on an item's pill marks it relevant or not; to move an item, "
    "type its new rank in the table's **position** column) or start from a preset; the table, the metrics and "
    "the curve follow, "
    "and the address bar keeps the ranking, so a link reproduces it. The last section asks whether "
    "the AP is better than chance: how often does a random ordering of the same items score as high?",
)

first_run, r_url = load_ranking()

left, right = st.columns(2, gap="large")
# below both columns, but filled right after the editor: the cards and the curve update first
cards_box = st.container()
curve_box = st.container()

with right:
    k = bound_int("k, the cut-off of the @k metrics", "rk_k", DEFAULT_K, min_value=1,
                  help="P@k, R@k, F1@k, AP@k and NDCG@k look at the top k items only; k runs from 1 to the "
                       "number of items.")
with left:
    st.subheader("The ranking")
    choice = preset_controls(first_run, r_url)
    pills_box = st.container()  # above the table, filled once the table has given the ranking
    new = ranking_editor(choice)
    relevance_pills(new, pills_box)

# --- metric cards, table ------------------------------------------------------------------------
N = len(new)
if N == 0:
    with right:
        st.error("The ranking is empty: add at least one item (click the empty row at the bottom of the table "
                 "on the left) or choose a preset.", icon=":material/error:")
    st.stop()
view = ranking_view(tuple(new), k)  # cached per (ranking, k): cards, curve, figure and tables
m, k_ok = int(view.relevant.sum()), view.k_ok

with cards_box:
    groups = (("Whole ranking", [c for c in view.cards if not rk.METRICS[c.key][1]]),
              (f"Top k = {k}" if k_ok else "Top k", [c for c in view.cards if rk.METRICS[c.key][1]]))
    for title, group in groups:
        st.markdown(f"**{title}**")
        with st.container(horizontal=True, gap="small"):  # wraps onto a second row when narrow
            for card in group:
                label = card.label.replace("@k", f"@{k}") if k_ok else card.label
                value = "—" if card.value is None else f"{card.value:.4f}"
                note = card.help + (f"\n\nUndefined here: {card.reason}." if card.reason else "")
                st.metric(label, value, help=note, border=True, width=160)

# --- the precision-recall curve --------------------------------------------------------------
if m > 0:
    curve = view.curve
    with curve_box:
        show_figure(view.curve_figure, key="pr_curve")

with right:
    if m == 0:
        st.error("No item is marked relevant: tick **relevant** for at least one item. AP, recall and the "
                 "precision-recall curve need at least one relevant item.", icon=":material/error:")
    if not k_ok:
        st.error(f"k = {k} is outside the ranking: choose k between 1 and {N} (the ranking has {N} "
                 f"item{'s' if N > 1 else ''}).", icon=":material/error:")
    # which rows the @k metrics see (a column, not a pandas Styler: styling every cell cost more server
    # time than the rest of the page under 30 users)
    show_table(
        view.shown, key="ranking_table",
        height=min(35 * (N + 1) + 3, 423),
        column_config={
            "in top k": st.column_config.CheckboxColumn(f"in top {k}", help="the rows the @k metrics look at"),
            "rank": st.column_config.NumberColumn("rank", help="k, the cut-off of this row"),
            "relevant": st.column_config.CheckboxColumn("relevant"),
            "precision@k": st.column_config.NumberColumn("precision@k", format="%.4f",
                                                         help="relevant items in the top k / k"),
            "recall@k": st.column_config.NumberColumn("recall@k", format="%.4f",
                                                      help="relevant items in the top k / m"),
        },
    )
    download_csv(view.table, "ranking_table.csv", label="Download the table (CSV)", key="download_ranking")

if m == 0:
    st.stop()

# --- against chance ---------------------------------------------------------------------------
n = N - m
st.subheader("Better than chance?")
with guard():
    null = position_view.shown(m, n, curve.ap, spinner=f"Computing the null law of AP for m = {m}, n = {n}...",
                           quick=choose_method(m, n) == "exact")  # milliseconds: no spinner
pos, mean, sd = null.position, null.mean, null.sd
if pos.at_floor:
    p_phrase = f"p ≤ {pos.p:.2g} (none of the {DRAWS:,} random orderings reached it)"
elif pos.p < 1e-300:
    p_phrase = f"p = 10^{pos.log10_p:.2f}"
else:
    p_phrase = f"p = {pos.p:.4g}"
    if pos.placements_at_least is not None:
        p_phrase += f" ({pos.placements_at_least:,} of the {pos.placements:,} placements)"
if null.method == "exact":
    method = f"exact: all {math.comb(m + n, m):,} placements of the {m} relevant items counted"
    method_help = "The exact law: every placement of the relevant items among the ranks is equally likely and counted."
elif pos.source == "tail count":
    method = (f"the far tail counted: random orderings reach this AP too rarely to measure, so the orderings "
              f"that do were counted; the exact p lies in [{pos.p_low:.4g}, {pos.p_high:.4g}]")
    method_help = (f"Far tail counted ({null.describe}): a scan over ranks keeps only the partial placements that "
                   f"can still reach this AP, in log space; guaranteed bounds, relative error {pos.rel_error:.1g}, "
                   f"log10 p = {pos.log10_p:.4f}.")
elif null.method == "grid":
    method = (f"grid law: the null computed on a fine grid, within ±{null.error_bound:g} AP of the exact law; "
              f"the exact p lies in [{pos.p_low:.4g}, {pos.p_high:.4g}]")
    method_help = f"{null.describe}: the AP law on a grid of G cells; every value moves by less than m/G."
else:
    method = (f"Monte Carlo: {DRAWS:,} random orderings (seed 0); 95% interval for p "
              f"[{pos.p_low:.3g}, {pos.p_high:.3g}]")
    method_help = f"{null.describe}: the share of random orderings scoring at least this AP, with its 95% Wilson interval."
st.markdown(
    f"**AP = {curve.ap:.4f}** with m = {m} relevant and n = {n} other items: a random ordering of these "
    f"{N} items scores at least this with probability **{p_phrase}**. This ranking is at **percentile "
    f"{pos.percentile:.1f}** of the null: {pos.percentile:.1f}% of random orderings score lower. "
    f"(A random ordering scores E[AP] = {mean:.4f} on average, SD {sd:.4f}.)"
)
st.markdown(f"Method: {method}.", help=method_help)
st.caption("p = P(AP of a random ordering ≥ this AP); percentile = 100 · P(AP of a random ordering < this "
           "AP). With the exact law the two add up to 100; each placement of the m relevant items among "
           "the m + n ranks is equally likely.")
show_figure(null.figure, key="null_law")
