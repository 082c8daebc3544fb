"""Ranking editor: edit one ranking and watch precision, recall, AP and its PR curve change."""

import math

import pandas as pd
import streamlit as st

from apnull import metrics
from apnull.views import ranking as rk
from apnull.plots.ranking import null_position_figure, pr_curve_figure
from apnull.significance import choose_method, null_position
from apnull.ui import bound_int, bound_select, download_csv, guard, intro, show_figure
from apnull.ui.cache import moments, null_law

#: Monte Carlo draws when the null law of the ranking's (m, n) is too large to count exactly.
DRAWS = 20_000

intro(
    "Ranking editor",
    "A ranking lists items from the one most likely to be relevant down. Cut it after the first "
    "**k** items: **precision@k** is the share of those k items that are relevant, **recall@k** the "
    "share of all **m** relevant items found so far. Walking down the list, each relevant item raises "
    "recall by 1/m; **Average Precision (AP)** is the mean of the precision at those m moments. Drawn "
    "as precision against recall, that is a staircase of m steps of width 1/m, so AP is exactly the "
    "shaded area under it (no interpolation): relevant items placed low pull their steps down, "
    "non-relevant items placed low cost nothing.\n\n"
    "Edit the ranking on the left or start from a preset; the table, the metrics and the curve follow, "
    "and the address bar keeps the ranking, so a link reproduces it. The last section asks whether "
    "the AP is better than chance: how often does a random ordering of the same items score as high?",
)

ss = st.session_state
RANKING = "ranking"           # the canonical ranking: list of (item, relevant) in rank order
URL_SEEN = "_ranking_url"     # the r parameter as this page last read or wrote it
BASE = "_ranking_base"        # the ranking the current editor was built from
SHOWN = "_ranking_shown"      # the ranking the editor showed at the end of the last run
VERSION = "_ranking_version"  # editor key suffix; a new one rebuilds the editor
APPLIED = "_ranking_applied"  # the preset choice last applied
REBUILDS = "_ranking_rebuilds"  # editor rebuilds in a row (st.rerun after a reorder)
DEFAULT = list(rk.EXAMPLE_001)
DEFAULT_CHOICE = (rk.PRESETS[0],)

# --- the canonical ranking and the URL (?r=x:0,a:1,...) -------------------------------------
url_problem = None


def from_url(text):
    """The ranking in the link, or seed 001's example when there is none or it cannot be read."""
    global url_problem
    if text is None:
        return list(DEFAULT)
    try:
        return rk.from_text(text)
    except ValueError as exc:
        url_problem = exc
        return list(DEFAULT)


r_url = st.query_params.get("r")
first_run = URL_SEEN not in ss
if first_run:
    if RANKING not in ss or r_url is not None:
        ss[RANKING] = from_url(r_url)
elif r_url != ss[URL_SEEN]:  # the link was changed from outside the page
    ss[RANKING] = from_url(r_url)
ss[URL_SEEN] = r_url
if url_problem is not None:
    problem = str(url_problem) if len(str(url_problem)) <= 300 else f"{str(url_problem)[:300]}..."  # a 100 kB link
    st.error(f"The ranking in the link (`r=...`) could not be read: {problem}. Showing seed 001's "
             "example instead.", icon=":material/link_off:")
try:
    ss[RANKING] = rk.check_rows(ss[RANKING])
except ValueError as exc:
    st.error(f"{exc}. Showing seed 001's example instead.", icon=":material/error:")
    ss[RANKING] = list(DEFAULT)

left, right = st.columns(2, gap="large")
# below both columns, but filled right after the editor: the cards and the curve update first
cards_box = st.container()
curve_box = st.container()

with right:
    k = bound_int("k, the cut-off of the @k metrics", "rk_k", 3, min_value=1,
                  help="P@k, R@k, F1@k, AP@k and NDCG@k look at the top k items only; k runs from 1 to the "
                       "number of items.")

# --- presets ----------------------------------------------------------------------------------
with left:
    st.subheader("The ranking")
    preset = bound_select(
        "Preset", "rk_preset", rk.PRESETS, default=rk.PRESETS[0],
        help="Seed 001's example and seed 002's models replace the ranking; Perfect, Worst and Random "
             "reorder the current items. Choosing a preset applies it; 'Apply again' re-applies it "
             "after edits.",
    )
    choice = (preset,)
    if preset == "Seed 002 models":
        model = bound_select("Model", "rk_model", list(rk.SEED002_MODELS), default="model 1",
                             help="The model rankings of query q1 in seed 002.")
        choice += (model,)
        st.caption(
            "Seed 002: query q1 has two relevant documents, **1** and **2**; n1 ... n8 are the other "
            "eight documents each model retrieved. All three models find both relevant documents "
            "(recall@10 = 1), but AP tells them apart: 1 with both on top (model 2), 0.5 at ranks 2 and 4 "
            "(model 1), 0.156 at ranks 9 and 10 (model 3). Recall does not look at where the hits are; "
            "AP does. (The seed's model 0 never retrieves document 1, so it is left out.)"
        )
    elif preset == "Random":
        seed = bound_int("Shuffle seed", "rk_seed", 0, min_value=0,
                         help="A uniformly random order of the current items, drawn with this seed: one "
                              "draw from the null law of the last section.")
        choice += (seed,)
    elif preset in ("Perfect", "Worst"):
        st.caption("Perfect puts every relevant item above every other one (AP = 1); Worst puts them all "
                   "at the bottom, the lowest AP these items allow.")

    def apply_again(random_preset: bool) -> None:
        if random_preset:
            ss["rk_seed"] = int(ss.get("rk_seed", 0)) + 1
        else:
            ss[APPLIED] = None

    st.button("Shuffle again (seed + 1)" if preset == "Random" else "Apply again",
              on_click=apply_again, args=(preset == "Random",), key="apply_again",
              icon=":material/refresh:")

    # a ranking in the link wins over the preset on arrival; a preset alone in the link is applied
    if (ss.get(APPLIED) != choice and not first_run) or (first_run and r_url is None and choice != DEFAULT_CHOICE):
        ss[RANKING] = rk.apply_preset(preset, ss[RANKING],
                                      model=choice[1] if preset == "Seed 002 models" else "model 1",
                                      seed=choice[1] if preset == "Random" else 0)
    ss[APPLIED] = choice

# --- the editor -------------------------------------------------------------------------------
with left:
    editor_key = f"ranking_editor_{ss.get(VERSION, 0)}"
    if ss.get(SHOWN) != ss[RANKING] or BASE not in ss or editor_key not in ss:
        # changed by a preset, the link or a test, or the editor's state is gone (page switch): rebuild
        ss[BASE] = list(ss[RANKING])
        ss[VERSION] = ss.get(VERSION, 0) + 1
    base = ss[BASE]
    frame = pd.DataFrame({
        "position": pd.Series(range(1, len(base) + 1), dtype="Int64"),
        "item": pd.Series([item for item, _ in base], dtype="object"),
        "relevant": pd.Series([rel for _, rel in base], dtype="boolean"),
        "base": pd.Series(range(1, len(base) + 1), dtype="Int64"),
    })
    edited = st.data_editor(
        frame, key=f"ranking_editor_{ss[VERSION]}", num_rows="dynamic", hide_index=True,
        column_order=("position", "item", "relevant"),
        column_config={
            "position": st.column_config.NumberColumn(
                "position", min_value=1, step=1, format="%d", width=80,
                help="Rank of the item, 1 = top. Type another number to move the row there; the other "
                     "rows shift to make room."),
            "item": st.column_config.TextColumn("item", help="Name of the item (any text)."),
            "relevant": st.column_config.CheckboxColumn("relevant", default=False, width=85,
                                                        help="Tick the items that are relevant."),
        },
    )
    st.caption("Type a number in **position** to move a row there; click the empty row at the bottom to add "
               "an item; select rows by the box at their left edge and press Delete to remove them.")
    new = rk.apply_positions(edited["item"].tolist(), edited["relevant"].tolist(), edited["position"].tolist(),
                             edited["base"].tolist())
    with guard():  # too many rows (e.g. a big paste): say so and keep the last good ranking
        rk.check_rows(new)
    shown_now = [(None if pd.isna(p) else int(p), None if pd.isna(i) else i, None if pd.isna(r) else bool(r))
                 for p, i, r in zip(edited["position"], edited["item"], edited["relevant"])]
    stale = shown_now != [(pos, item, rel) for pos, (item, rel) in enumerate(new, start=1)]
    if stale and ss.get(REBUILDS, 0) < 2:  # (the bound only guards against a rerun loop)
        # reordered, renumbered or filled in: rebuild the editor on the ranking as it now stands
        ss[RANKING] = new
        ss[SHOWN] = None
        ss[REBUILDS] = ss.get(REBUILDS, 0) + 1
        st.rerun()
    ss[REBUILDS] = 0
    ss[RANKING] = ss[SHOWN] = new

    # keep the link in step with the ranking
    as_text = rk.to_text(new)
    text = None if (new == DEFAULT and choice == DEFAULT_CHOICE) else as_text  # the default stays out
    if st.query_params.get("r") != text:
        if text is None:
            del st.query_params["r"]
        else:
            st.query_params["r"] = text
    ss[URL_SEEN] = text
    if new and len(as_text) <= 600:
        st.caption("The ranking as text (the r parameter of the link):")
        st.code(as_text, language=None, wrap_lines=True)

# --- metric cards, table ------------------------------------------------------------------------
items = [item for item, _ in new]
rel = rk.relevance(new)
N, m = len(new), int(rel.sum())
if N == 0:
    with right:
        st.error("The ranking is empty: add at least one item (click the empty row at the bottom of the table "
                 "on the left) or choose a preset.", icon=":material/error:")
    st.stop()
k_ok = 1 <= k <= N

with cards_box:
    cards = rk.metric_cards(rel, k)
    groups = (("Whole ranking", [c for c in cards if not rk.METRICS[c.key][1]]),
              (f"Top k = {k}" if k_ok else "Top k", [c for c in cards if rk.METRICS[c.key][1]]))
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
    curve = rk.pr_curve_points(rel, items)
    with curve_box:
        show_figure(pr_curve_figure(curve, k if k_ok else None), key="pr_curve")

with right:
    if m == 0:
        st.error("No item is marked relevant: tick **relevant** for at least one item. AP, recall and the "
                 "precision-recall curve need at least one relevant item.", icon=":material/error:")
    if not k_ok:
        st.error(f"k = {k} is outside the ranking: choose k between 1 and {N} (the ranking has {N} "
                 f"item{'s' if N > 1 else ''}).", icon=":material/error:")
    table = metrics.ranking_table(rel, items).rename(columns={"precision": "precision@k", "recall": "recall@k"})
    view = table
    if k_ok and N <= 300:  # highlight the row of the cut-off k
        view = table.style.apply(
            lambda r: ["background-color: rgba(255, 127, 14, 0.18)" if r["rank"] == k else "" for _ in r], axis=1)
    st.dataframe(
        view, hide_index=True, key="ranking_table",
        height=min(35 * (N + 1) + 3, 423),
        column_config={
            "rank": st.column_config.NumberColumn("rank", help="k, the cut-off of this row"),
            "relevant": st.column_config.CheckboxColumn("relevant"),
            "precision@k": st.column_config.NumberColumn("precision@k", format="%.4f",
                                                         help="relevant items in the top k / k"),
            "recall@k": st.column_config.NumberColumn("recall@k", format="%.4f",
                                                      help="relevant items in the top k / m"),
        },
    )
    download_csv(table, "ranking_table.csv", label="Download the table (CSV)", key="download_ranking")

if m == 0:
    st.stop()

# --- against chance ---------------------------------------------------------------------------
n = N - m
st.subheader("Better than chance?")
with guard():
    if choose_method(m, n) == "exact":  # milliseconds
        law = null_law(m, n, "ap", "auto", draws=DRAWS, seed=0)
    else:
        with st.spinner(f"Computing the null law of AP for m = {m}, n = {n}..."):
            law = null_law(m, n, "ap", "auto", draws=DRAWS, seed=0)
pos = null_position(curve.ap, law)
mean, sd = moments(m, n)
if pos.at_floor:
    p_text = f"p ≤ {pos.p:.2g} (none of the {DRAWS:,} random orderings reached it)"
else:
    p_text = f"p = {pos.p:.4g}"
    if pos.placements_at_least is not None:
        p_text += f" ({pos.placements_at_least:,} of the {pos.placements:,} placements)"
if law.method == "exact":
    method = f"exact: all {math.comb(m + n, m):,} placements of the {m} relevant items counted"
elif law.method == "grid":
    method = (f"grid law within ±{law.error_bound:g} AP of the exact law; the exact p lies in "
              f"[{pos.p_low:.4g}, {pos.p_high:.4g}]")
else:
    method = (f"Monte Carlo: {DRAWS:,} random orderings (seed 0); 95% interval for p "
              f"[{pos.p_low:.3g}, {pos.p_high:.3g}]")
st.markdown(
    f"**AP = {curve.ap:.4f}** with m = {m} relevant and n = {n} other items: a random ordering of these "
    f"{N} items scores at least this with probability **{p_text}**. This ranking is at **percentile "
    f"{pos.percentile:.1f}** of the null: {pos.percentile:.1f}% of random orderings score lower. "
    f"(A random ordering scores E[AP] = {mean:.4f} on average, SD {sd:.4f}.)  \n"
    f"Method: {method}."
)
st.caption("p = P(AP of a random ordering ≥ this AP); percentile = 100 · P(AP of a random ordering < this "
           "AP). With the exact law the two add up to 100; each placement of the m relevant items among "
           "the m + n ranks is equally likely.")
values, probs = law.values, law.probs
show_figure(null_position_figure(values, probs, curve.ap, pos.p, m, n, law.method), key="null_law")
