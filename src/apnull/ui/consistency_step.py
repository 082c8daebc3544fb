"""The consistency step of "Score your data": do perturbations sharing an annotation look alike?

One call, :func:`consistency_step`, after the activity results: pick the annotation column and its
separator (guessed), restrict to the active perturbations or not, run with a progress bar, see the
labels table, the figure of label mAP against -log10 p with the q threshold, a label's null on a click,
and download the tables as CSV. Statistics come from :func:`apnull.score.score_consistency`, data
shaping from :mod:`apnull.views.consistency`, figures from :mod:`apnull.plots`.
"""

from __future__ import annotations

import pandas as pd
import streamlit as st

from ..notebook import figures
from ..score import SCORE_SIMILARITIES, score_consistency
from ..views import consistency as view
from ..views.score_report import NORMALIZE_WORDS, page_words, shown_order
from ..views.score import check_fdr, p_label, p_shown, queries_of, selected_name
from ..memo import Memo, rough_nbytes
from .common import download_csv, guard, p_formats, show_figure, show_table
from .progress import ScoreProgress
from .score_cache import cached_view
from .state import forget_param, open_when_linked
from .widgets import BIND, bound_choice, bound_float, bound_int, bound_select

__all__ = ["consistency_step", "warm_score_page", "warm_default", "KEYS", "OPEN_KEY", "TITLE", "RESULTS"]

#: The step's widget keys (URL parameters of the score page).
KEYS = ("sc_cs_annotation", "sc_cs_sep", "sc_cs_scope", "sc_cs_aggregate", "sc_cs_similarity", "sc_cs_perms",
        "sc_cs_seed", "sc_cs_fdr", "sc_cs_label")
#: The key (and URL parameter) of the step's expander: open (``sc_cs=true``) or closed (left out).
OPEN_KEY = "sc_cs"
#: The step's title: its expander's label.
TITLE = "Consistency: do perturbations that share an annotation look alike?"
#: Consistency results keyed by (file hash, settings), shared by all sessions: 8 results and 256 MiB at
#: most; a result asked for by several sessions at once is computed once (the others wait for it).
RESULTS = Memo(8, max_bytes=256 * 2**20, sizeof=rough_nbytes)


def _run(digest, table, settings, run: bool):
    """The cached result of (file, settings); when missing, computed (with a progress bar) if ``run``,
    else None."""
    key = (digest, settings.key())
    found = RESULTS.get(key)
    if found is not None or not run:
        return found
    bar = st.progress(0.0, text="Consistency (or waiting for the same run by another session)...")
    progress = ScoreProgress(bar, ("Consistency", "labels"), finishing=None)

    try:
        return RESULTS.get_or_compute(key, lambda: score_consistency(table, **settings.kwargs(), progress=progress))
    finally:
        bar.empty()


def _table_guesses(digest, table, perturbation) -> tuple[list, str | None]:
    """(the columns the annotation box offers, the guessed annotation column), once per table."""
    return cached_view(("cs_guesses", digest, perturbation), lambda: (
        [str(c) for c in table.columns if str(c) != perturbation], view.guess_annotation(table, perturbation)))


def _separator_guess(digest, table, annotation) -> str:
    return cached_view(("cs_separator", digest, annotation), lambda: view.guess_separator(table[annotation]))


def _drop_stale(key: str, options) -> None:
    """Forget ``key``'s value (session and URL) when it is not among ``options`` (a value of another table or
    result), so the box shows its first option and the URL carries what is applied."""
    value = st.session_state.get(key, st.query_params.get(key))
    if value is not None and value not in options:
        forget_param(key)


def _pick_label(names):
    name = selected_name(st.session_state.get("sc_cs_figure", {}).get("selection"))
    if name in names:
        st.session_state["sc_cs_label"] = name


def consistency_step(table: pd.DataFrame, perturbation: str, control, active_groups: pd.DataFrame | None,
                     digest: str = "table", file_name: str = "screen", auto: bool = False, normalize: str = "none",
                     stratum: str | None = None) -> None:
    """Render the consistency step for ``table`` (perturbation column ``perturbation``, controls
    ``control`` dropped). ``active_groups``: the activity table with a ``significant`` column (or None);
    ``digest`` keys the cache; ``auto`` runs without the button (the bundled example); ``normalize`` and
    ``stratum``: the activity step's per-plate normalisation, applied here too.

    The step lives in an expander (key and URL parameter :data:`OPEN_KEY`) whose content is built only
    while it is open: closed, the step costs the page's reruns one element instead of about 45 (its
    widgets, tables and two figures were a third of every rerun of the score page, benchmarks/load.py).
    It opens by itself when the link carries one of the step's inputs (:data:`KEYS`), so a copied link
    shows what it showed."""
    open_when_linked(OPEN_KEY, KEYS)
    with st.expander(TITLE, key=OPEN_KEY, bind=BIND, on_change="rerun", icon=":material/hub:") as box:
        if box.open:
            _step(table, perturbation, control, active_groups, digest, file_name, auto, normalize, stratum)


def _step(table, perturbation, control, active_groups, digest, file_name, auto, normalize, stratum) -> None:
    """The step's inputs and results (inside its open expander)."""
    st.markdown(
        "Activity asks whether a perturbation's replicates find each other. Consistency asks the next "
        "question: do perturbations **sharing a label** (a target, a mechanism) find each other? Each "
        "perturbation's replicates are aggregated into one profile (median per feature). A profile carrying a "
        "label ranks the other profiles carrying it (positives) among the profiles that share **no** label "
        "with it (negatives); a label's **mAP** averages those APs. Its **p-value** comes from shuffling the "
        "label sets among the profiles: if the annotation said nothing about the profiles, any shuffle would "
        "be as likely as the real one.")
    columns, guess = _table_guesses(digest, table, perturbation)
    if guess is None and st.session_state.get("sc_cs_annotation") not in columns:
        st.info("No column of this table looks like an annotation (text, the same within each perturbation, "
                "shared by several perturbations). Pick one below to test it, or leave this step.",
                icon=":material/label_off:")
    c1, c2, c3 = st.columns([1.4, 1, 1.6])
    options = ([guess] if guess else [view.PICK]) + [c for c in columns if c != guess]
    _drop_stale("sc_cs_annotation", options)
    annotation = bound_choice("Annotation column", "sc_cs_annotation", options, container=c1,
                              help="The labels to test, e.g. a target or mechanism column (guessed when a column "
                                   "is constant within each perturbation and shared by several).")
    seps = [view.NO_SEPARATOR] + list(view.SEPARATORS)
    sep_guess = _separator_guess(digest, table, annotation) if annotation in table.columns else view.NO_SEPARATOR
    seps = [sep_guess] + [s for s in seps if s != sep_guess]
    separator = bound_choice("Label separator", "sc_cs_sep", seps, container=c2,
                             format_func=lambda s: view.SEPARATOR_NAMES.get(s, s),
                             help="Several labels in one cell, e.g. EGFR|HER2 (guessed from the cells).")
    scopes = [view.ALL] + ([view.ACTIVE] if active_groups is not None else [])
    scope = bound_select("Perturbations", "sc_cs_scope", scopes, view.ALL, container=c3,
                         help="Consistency is usually asked of the active perturbations only (the activity "
                              "results above, at their FDR level).")
    c4, c5, c6, c7, c8 = st.columns(5)
    aggregate = bound_select("Replicates", "sc_cs_aggregate", view.AGGREGATES, "median", container=c4,
                             help="median/mean per feature, or none: every replicate is its own profile.")
    similarity = bound_choice("Similarity", "sc_cs_similarity", SCORE_SIMILARITIES, container=c5,
                              help="How two aggregated profiles are compared (as in the activity step).")
    permutations = bound_int("Permutations B", "sc_cs_perms", 999, step=1000, container=c6,
                             help="Shuffles of the label sets per label. The smallest possible p is 1/(1 + B).")
    seed = bound_int("Seed", "sc_cs_seed", 0, container=c7)
    fdr = bound_float("FDR level q", "sc_cs_fdr", 0.05, step=0.01, format="%.3g", container=c8,
                      help="Labels with q-value at most this are called consistent.")
    if annotation not in table.columns:
        return  # nothing to test: the note above (or the box) says to pick a column
    with guard(page_words):
        settings = view.make_consistency_settings(table, perturbation, annotation,
                                                  separator, scope, active_groups, control, aggregate, similarity,
                                                  permutations, seed, normalize, stratum)
        fdr = check_fdr(fdr)
    if normalize != "none":
        st.caption(f"Features normalised as in the activity step above ({NORMALIZE_WORDS[normalize]}), before "
                   "the replicates are aggregated.")
    pressed = not auto and st.button("Score consistency", type="primary", key="sc_cs_run", icon=":material/play_arrow:")
    with guard(page_words):
        result = _run(digest, table, settings, run=auto or pressed)
    if result is None:
        st.info("Check the annotation and settings, then press **Score consistency**.", icon=":material/info:")
        return
    _results(result, settings, fdr, file_name, digest)


def _results(result, settings, fdr, file_name, digest) -> None:
    acol = settings.annotation
    labels, shown, data = cached_view(("cs_view", digest, settings.key(), fdr), lambda: _labels_view(result, acol, fdr))
    for message in result.warnings:
        st.warning(message, icon=":material/warning:")
    if len(result.skipped):
        with st.expander(f"{len(result.skipped):,} label(s) skipped"):
            show_table(result.skipped, key="sc_cs_skipped")
    k = int(labels["significant"].sum())
    m1, m2, m3 = st.columns(3)
    m1.metric("Labels scored", f"{len(labels):,}", border=True)
    m2.metric(f"Consistent at q ≤ {fdr:g}", f"{k:,} of {len(labels):,}", border=True)
    m3.metric("Profiles", f"{result.settings['profiles']:,}", border=True,
              help="Aggregated perturbations (or replicates with none) that carry a label.")
    fmt = {"mAP": st.column_config.NumberColumn(format="%.4f"),
           **p_formats(shown, {"p_value": "p-value", "q_value": "q-value"}),
           "significant": st.column_config.CheckboxColumn(f"q ≤ {fdr:g}")}
    show_table(shown, column_config=fmt, key="sc_cs_labels_table", column_order=shown_order(shown.columns, 1))
    download_csv(labels, f"{file_name}_consistency_labels.csv", label="Download the labels table (CSV)",
                 key="sc_cs_download_labels")
    names = data["name"].tolist()
    left, right = st.columns([1.1, 1])
    _drop_stale("sc_cs_label", names)
    with right:
        chosen = bound_choice("Label to inspect", "sc_cs_label", names,
                              help="Or click its point in the figure. Ordered by p-value.")
    with left:
        fig = cached_view(("cs_labels", digest, settings.key(), fdr, chosen), lambda: figures.labels(
            data, fdr, settings.permutations, highlight=chosen))
        show_figure(fig, key="sc_cs_figure", on_select=lambda: _pick_label(names), selection_mode="points")
    row, shown_queries = cached_view(("cs_label", digest, settings.key(), chosen),
                                     lambda: _label_view(result, labels, acol, chosen))
    with right:
        def label_null():
            null = result.null_maps(chosen)  # a NaN draw (no query had a negative) is left out of the summary
            summary, fig = figures.null_view(null, float(row["mAP"]), chosen, float(row["p_value"]),
                                             float(row["q_value"]))
            return null.size, summary, fig

        with guard():
            draws, summary, fig = cached_view(("cs_null", digest, settings.key(), chosen), label_null)
        show_figure(fig, key="sc_cs_null_figure")
        st.caption(f"{summary['reached']:,} of the {draws:,} shuffles of the label sets "
                   f"({summary['reached'] / draws:.1%}) reach the observed mAP {row['mAP']:.4f}; p = (1 + that count) "
                   f"/ (1 + B) = {p_label(row['p_value'])}.")
    st.subheader(f"Queries of {chosen}")
    st.caption("One row per profile carrying the label: it ranks the m other profiles carrying it among the n "
               "profiles sharing no label with it. Its p-value comes from the exact null law of AP for (m, n).")
    show_table(shown_queries, key="sc_cs_queries_table", column_order=shown_order(shown_queries.columns, 1),
               column_config={"ap": st.column_config.NumberColumn(format="%.4f"), **p_formats(shown_queries)})
    download_csv(result.queries, f"{file_name}_consistency_queries.csv", label="Download all queries (CSV)",
                 key="sc_cs_download_queries")


def _labels_view(result, annotation, fdr):
    """(labels table at ``fdr``, as shown, the figure's points) of a result."""
    labels = view.label_table(result.labels, fdr)
    return labels, p_shown(labels), view.figure_data(labels, annotation, fdr)


def _label_view(result, labels, annotation, name):
    """(the labels-table row of ``name``, its queries as shown)."""
    row = labels.loc[labels[annotation].astype(str) == name].iloc[0]
    return row, p_shown(queries_of(result.queries, annotation, name))


def warm_score_page() -> None:
    """The server's warm-up of the score page: the bundled example scored with the page's default inputs
    (:func:`.score_cache.warm_example`), then its consistency step (:func:`warm_default`), into the caches
    the page reads."""
    from .score_cache import EXAMPLE_DIGEST, warm_example

    table, settings, result = warm_example()
    warm_default(table, settings.perturbation[0], settings.control, result.groups, EXAMPLE_DIGEST)


def warm_default(table: pd.DataFrame, perturbation: str, control, groups: pd.DataFrame, digest: str) -> None:
    """Compute, into :data:`RESULTS`, the step as a new visitor first sees it for ``table`` (the guessed
    annotation and separator and the inputs' defaults), so the first visitor finds it ready."""
    _columns, annotation = _table_guesses(digest, table, perturbation)
    if annotation is None:
        return
    settings = view.make_consistency_settings(table, perturbation, annotation,
                                              _separator_guess(digest, table, annotation), view.ALL, groups,
                                              control, "median", "cosine", 999, 0)
    RESULTS.get_or_compute((digest, settings.key()),
                           lambda: score_consistency(table, **settings.kwargs()))
