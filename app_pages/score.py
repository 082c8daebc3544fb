"""Score your data: which perturbations of a screen beat chance (mAP, permutation p-value, BH q-value)."""

import streamlit as st

import apnull
from apnull.notebook import figures
from apnull.score import (MAX_FILE_BYTES, NULLS, SCORE_SIMILARITIES, MissingValuesError,
                          to_copairs_names)
from apnull.ui import (bound_choice, bound_float, bound_int, bound_select, bound_text, bound_toggle, download_csv,
                       guard, intro, p_formats, show_figure, show_table)
from apnull.ui import score_cache as cache
from apnull.ui import uploads
from apnull.ui.consistency_step import consistency_step
from apnull.ui.state import holds_settings, open_when_linked
from apnull.ui.widgets import BIND
from apnull.views import score as view
from apnull.views import score_inputs as inputs
from apnull.views import score_report as report

EXAMPLE = "example"
UPLOAD = "upload"
INSPECT = "sc_inspect"
NORMALIZE_KEY = "sc_normalize"
MORE_KEY = "sc_more_open"  # the "More options" box (not in the URL: a link holding one of its inputs opens it)
MORE_DEFAULTS = {"sc_pert_more": [], "sc_nan": next(iter(report.NAN_CHOICES)), "sc_negatives":
                 next(iter(report.NEGATIVE_CHOICES)), "sc_differ": [], "sc_hier": [], "sc_copairs": False}

intro(
    "Score your data",
    "Upload a table of profiles (one row per well or cell, `Metadata_*` columns for labels, numeric "
    "columns for features) and ask which perturbations look like themselves more than chance allows. "
    "How the p-values are made is explained below the inputs.",
)

# --- data (uploads in apnull.ui.uploads, results in apnull.ui.score_cache, shared by all sessions) -

source = bound_select("Data", "sc_data", [EXAMPLE, UPLOAD], EXAMPLE,
                      help="example: handwritten digits (UCI, bundled with apnull) made into a small screen (each digit a "
                           "perturbation with replicates, plus null perturbations drawn from the controls, and "
                           "made-up targets for the consistency step). "
                           "upload: your own CSV or Parquet file (kept while you visit other pages).")
if source == EXAMPLE:
    table, digest, file_name = cache.example_table(), cache.EXAMPLE_DIGEST, "example"
    st.caption(f"Bundled example: {len(table):,} profiles, {table.shape[1]:,} columns "
               "(UCI handwritten digits, CC BY 4.0; see `apnull.score.digits_example`).")
else:
    upload = st.file_uploader("CSV or Parquet file of profiles", type=["csv", "tsv", "parquet", "pq"], key="upload",
                              max_upload_size=max(1, MAX_FILE_BYTES // 2**20),
                              help=f"Up to {MAX_FILE_BYTES / 2**20:,.0f} MB. Label columns Metadata_* (read as "
                                   "text, exactly as written); numeric columns are features.")
    if upload is not None:
        with guard():
            uploads.remember_upload(upload, cache.UPLOAD_SLOT)
    table, name, digest = uploads.saved_upload(cache.UPLOAD_SLOT)
    if upload is None and table is not None:
        st.caption(f"Using **{name}**, uploaded earlier in this session; drop another file above to replace it.")
    if table is None:
        waiting = inputs.link_settings(st.query_params.to_dict())
        if waiting:
            st.info(f"This link's settings ({waiting}) wait for the file they were made with: upload it and "
                    "they apply.", icon=":material/link:")
        else:
            st.info("Upload a file of profiles, or choose **example** above.", icon=":material/upload_file:")
        st.stop()
    file_name = name.rsplit(".", 1)[0]
    st.caption(f"{name}: {len(table):,} rows, {table.shape[1]:,} columns.")

# --- settings: what the widgets show is what is applied (and what the URL holds) -------------------
defaults, perturbation_options = cache.table_choices(digest, table)
cache.use_table(digest, defaults)
c1, c2, c3, c4, c0 = st.columns([1, 1, 1, 1, 1.1])
perturbation = bound_choice("Perturbation column", "sc_pert", perturbation_options, container=c1,
                            help="The column naming each profile's perturbation (compound, gene, ...); "
                                 "its values are compared as text.")
control_text = bound_text("Control value(s)", "sc_control", "", container=c2,
                          help="The value(s) of the perturbation column that mark controls; several are separated "
                               "by commas. A new table starts with a control-like value of it (DMSO, control, "
                               "...), else its most frequent value.")
stratum = bound_choice("Stratum (plate or batch)", "sc_stratum", cache.stratum_choices(digest, table, perturbation),
                       container=c3, help="Optional. Replicates are compared with the controls of their own "
                                          "stratum, and labels are shuffled within each stratum.")
features = bound_text("Feature columns (regex)", "sc_features", "", container=c4,
                      help="A regular expression selecting the feature columns, e.g. ^Cells_|^Nuclei_. Empty: "
                           "every numeric column not named Metadata_*.")
normalize = report.NORMALIZE_CHOICES[bound_choice(
    "Normalise features", NORMALIZE_KEY, list(report.NORMALIZE_CHOICES), container=c0,
    help="normalize= / --normalize: per plate (stratum; without one, the whole table), each feature as the robust "
         "z-score (x - median) / (1.4826 MAD) of the plate's controls or of all its wells, as pycytominer's "
         "mad_robustize. For raw CellProfiler features; none for a table normalised already.")]
c5, c6, c7, c8, c9 = st.columns([1.3, 1.6, 1, 1, 1])
similarity = bound_choice("Similarity", "sc_similarity", SCORE_SIMILARITIES, container=c5,
                          help="How two profiles are compared: cosine, Pearson correlation, minus the euclidean "
                               "distance, |cosine| (abs_cosine), minus the manhattan or chebyshev distance; jaccard "
                               "and hamming compare binary (0/1, true/false) features.")
null = bound_select("Null of the mAP", "sc_null", NULLS, "permutation", container=c6,
                    help="permutation: the perturbation's label shuffled among its "
                         "replicates and controls within each plate (calibrated). independent (the APs treated "
                         "as independent) and copairs (copairs's null) are approximations, for comparison "
                         "only (see the calibration table under the results).")
a1, a2 = st.columns([1.3, 1], vertical_alignment="bottom")  # drawn under the row above, filled first
adaptive = null == "permutation" and bound_toggle(
    "More draws where needed", "sc_auto", False, container=a1,
    help="Adaptive permutations (permutations='auto', the library's default; 'adaptive B'): each perturbation "
         "gets more shuffles only while its Benjamini-Hochberg decision needs them, from 100 up to 1,000,000, "
         "so strong hits get p-values far below 1/1,000. On this page a time limit caps the run.")
permutations, budget = 0, None
if adaptive:
    permutations = "auto"
    c7.caption("Shuffles: as many as each decision needs, within the time limit below.")
    budget = bound_float("Time limit (seconds)", "sc_budget", view.PAGE_BUDGET, step=5.0, format="%g", container=a2,
                         help=f"The whole scoring run's time (the engine's budget; at most "
                              f"{view.MAX_PAGE_BUDGET:g} s on this page): no round of draws that would pass it is "
                              "started, and past it no far tail is counted (that p-value is then its law's upper "
                              "bound, p_value_bound). A decision the limit leaves open is named under the "
                              "results (decision_open).")
elif null in view.USES_B:
    permutations = bound_int("Permutations B", "sc_perms", 999, step=1000, container=c7,
                             help=f"Label shuffles per perturbation (copairs: random AP draws per size), "
                                  f"1 to {view.MAX_PERMUTATIONS:,}. The smallest possible p is 1/(1 + B).")
else:
    c7.caption("This null draws no shuffles: it combines the replicates' exact AP laws as if independent.")
seed = bound_int("Seed", "sc_seed", 0, container=c8, help="Seed of the shuffles (same seed, same p-values).")
fdr = bound_float("FDR level q", "sc_fdr", 0.05, step=0.01, format="%.3g", container=c9,
                  help="Perturbations with q-value at most this are called hits (coloured in the volcano plot).")

# built only while open or holding a setting (closed, it costs a run one element instead of 16; a setting stays
# applied and in the URL when the box is closed or the page left; a link carrying one opens it)
open_when_linked(MORE_KEY, MORE_DEFAULTS)
more_columns, differ_by, hierarchical_by, copairs_names = [], [], [], False
nan, negatives = report.NAN_CHOICES[MORE_DEFAULTS["sc_nan"]], report.NEGATIVE_CHOICES[MORE_DEFAULTS["sc_negatives"]]
with st.expander("More options (as in copairs and the command line)", icon=":material/tune:", key=MORE_KEY,
                 on_change="rerun") as more_box:
    if more_box.open or holds_settings(MORE_DEFAULTS):
        label_cols = [c for c in cache.label_choices(digest, table) if c not in (perturbation, stratum)]
        o1, o2 = st.columns(2)
        more_columns = o1.multiselect(
            "More perturbation columns", label_cols, key="sc_pert_more", bind=BIND,
            help="Several columns make one perturbation (e.g. compound and dose): each combination is scored; a row "
                 "is a control when its first column holds a control value (--perturbation repeated).")
        nan = report.NAN_CHOICES[o2.radio(
            "Missing values", list(report.NAN_CHOICES), key="sc_nan", bind=BIND, horizontal=True,
            help="NaN or infinite feature cells (nan= / --nan): stop and name them (error), leave out the feature "
                 "columns holding any (drop-features), or leave out the rows holding any (drop-rows). The plan says "
                 "what is left out.")]
        o3, o4 = st.columns(2)
        negatives = report.NEGATIVE_CHOICES[o3.radio(
            "A replicate is ranked against", list(report.NEGATIVE_CHOICES), key="sc_negatives", bind=BIND,
            horizontal=True, help="negatives='controls' (default) or 'others' (copairs's neg_diffby = [perturbation]): "
                                  "every other profile of its plate, controls too. With others the control value "
                                  "may be left empty (a screen without controls).")]
        differ_by = o4.multiselect(
            "Leave out positives sharing", [c for c in label_cols if c not in more_columns], key="sc_differ",
            bind=BIND, help="The pair rule (positives_differ_by, copairs's pos_diffby): a replicate sharing the "
                            "query's value in one of these columns (e.g. the well position) is left out of its "
                            "ranking, in the data and in every shuffle.")
        o5, o6 = st.columns(2)
        hierarchical_by = o5.multiselect(
            "Families for a two-stage FDR", [perturbation] + list(more_columns)[:-1] if more_columns else [],
            key="sc_hier", bind=BIND, disabled=not more_columns,
            help="hierarchical_by (--hierarchical-by): with several perturbation columns, the one(s) naming a family "
                 "(the compound of compound + dose). Families are tested first (Simes + Benjamini-Hochberg), then the "
                 "members of the selected families (Benjamini & Bogomolov).")
        copairs_names = o6.toggle("copairs's column names in downloads", key="sc_copairs", bind=BIND,
                                  help="--copairs-names: mean_average_precision, corrected_p_value, below_corrected_p, "
                                       "average_precision, n_pos_pairs, n_total_pairs.")

method_box = st.container()

with guard(report.page_words):
    settings = view.make_settings(table, perturbation, control_text, stratum, features,
                                  similarity, null, permutations, seed, more_columns=more_columns, nan=nan,
                                  negatives=negatives, differ_by=differ_by, budget=budget, normalize=normalize)
    fdr = view.check_fdr(fdr)
    try:
        plan = cache.cached_plan(digest, settings.plan_key(), table, settings.plan_kwargs())
    except MissingValuesError as exc:  # said with the page's own control, not the library's nan=
        raise ValueError(report.missing_message(exc.where)) from None

# --- the plan: what will be used, before anything is scored ----------------------------------------
if plan.looks_raw:
    st.warning(report.raw_message(plan.looks_raw), icon=":material/tune:")
    st.button(report.NORMALIZE_FIX, key="sc_normalize_fix", icon=":material/auto_fix_high:",
              on_click=lambda: st.session_state.update({NORMALIZE_KEY: report.NORMALIZE_WORDS["controls"]}))
st.markdown(inputs.plan_summary(plan) + (" " + report.normalize_note(normalize, settings.stratum)
                                          if normalize != "none" else ""))
with st.expander(f"Plan: {len(plan.strata):,} plate(s) or batch(es), {len(plan.left_out):,} columns left out, "
                 f"{len(plan.skipped):,} perturbations to skip", key="sc_plan_open", on_change="rerun") as plan_box:
    if plan_box.open:  # its tables are built and sent only while it is open
        show_table(plan.strata, key="plan_strata")
        if len(plan.left_out):
            show_table(plan.left_out, key="plan_left_out")
        if len(plan.skipped):
            show_table(plan.skipped, key="plan_skipped")

auto = source == EXAMPLE  # the example is scored at once; an upload when the button is pressed
key = settings.key()
result = cache.cached_score(digest, key)
if auto:  # the example: no button, and a place for the scoring's progress only while it is not scored yet
    b2 = st.container() if result is None else None
else:
    b1, b2 = st.columns([1, 5], vertical_alignment="center")
pressed = not auto and b1.button("Score", type="primary", key="score", icon=":material/play_arrow:")
if result is None and (auto or pressed):
    with guard(report.page_words):
        result = cache.score_once(digest, key, table, settings.kwargs(), container=b2)
if result is None:
    with method_box.expander("How the p-values are made", icon=":material/functions:"):
        st.markdown(report.method_text(null, settings.permutations))
    b2.info("Check the plan above, then press **Score**.", icon=":material/info:")
    st.stop()
perturbation = result.settings.get("perturbation_column", perturbation)
with method_box.expander("How the p-values are made", icon=":material/functions:"):
    st.markdown(cache.cached_view(("method_text", digest, key), lambda: report.method_text(
        null, settings.permutations, result.queries["null"])))

# --- results -------------------------------------------------------------------------------------
with guard():
    shown_view = cache.results_view(digest, key, result, perturbation, fdr, tuple(hierarchical_by))
groups = shown_view.groups
for message in report.page_warnings(result):
    st.warning(report.page_words(message), icon=":material/warning:")
if len(result.skipped):
    with st.expander(f"{len(result.skipped):,} perturbation(s) skipped"):
        show_table(result.skipped)
if groups.empty:
    st.error("No perturbation could be scored: see the skipped ones above and check the control value(s) "
             "and the stratum column.", icon=":material/error:")
    st.stop()

# one row that wraps when narrow (a horizontal container: one element, where four columns were five)
k1 = k2 = k3 = k4 = st.container(horizontal=True, gap="small")
k1.metric("Perturbations scored", f"{len(groups):,}", border=True)
k2.metric(f"Hits at q ≤ {fdr:g}", f"{shown_view.hits:,}", border=True,
          help="Perturbations whose Benjamini-Hochberg q-value is at most the FDR level.")
k3.metric("Queries (replicates)", f"{len(result.queries):,}", border=True)
k4.metric("mAP null", {"permutation": "shuffles", "independent": "formula", "copairs": "copairs"}[null],
          border=True,
          help=("How the p-value of each mAP was computed: " + report.mAP_null_text(null, settings.permutations)
                + " (null=" + null + ("" if null == "permutation" else ", approximate") + ")"))
if adaptive:
    st.caption(report.draws_caption(result.groups, settings.budget, result.settings.get("budget_outcome")))
    still_open = report.open_decisions(groups, perturbation)
    if still_open:
        st.warning(f"The time limit left {len(still_open):,} decision(s) open: {', '.join(still_open[:10])}"
                   + (" ..." if len(still_open) > 10 else "") + ". Raise **Time limit** to settle them.",
                   icon=":material/timer:")

st.subheader("Perturbations")
shown = shown_view.shown
fmt = {"mAP": st.column_config.NumberColumn(format="%.4f"),
       "mAP_normalized": st.column_config.NumberColumn(
           "mAP above chance", format="%.3f",
           help="mAP_normalized = (mAP - E) / (1 - E), E the mAP a random ranking gives on average: 0 is "
                "chance, 1 perfect."),
       **p_formats(shown, {"p_value": "p-value", "q_value": "q-value"}),
       "significant": st.column_config.CheckboxColumn(f"q ≤ {fdr:g}"),
       "null": st.column_config.TextColumn("null", help="How this row's p-value was made."),
       "permutations": st.column_config.NumberColumn(
           "draws", format="%d", help="permutations: the null draws this p-value used (in full)."),
       "p_value_bound": st.column_config.CheckboxColumn(
           "bound", help="p_value_bound: no draw reached the observed mAP, so the p-value is an upper bound."),
       "decision_open": st.column_config.CheckboxColumn(
           "open", help="decision_open: the time limit stopped the draws before this decision was settled.")}
ROW_PX, HEAD_PX = 35, 35  # Streamlit's data grid: 35 px rows and header, 1 px border each side
show_table(shown, column_config=fmt, height=min(len(shown), 10) * ROW_PX + HEAD_PX + 2, key="groups_table",
           column_order=report.shown_order(shown.columns, list(shown.columns).index("n_replicates")))


def downloads() -> tuple:
    """(perturbation table, query table) as downloaded (built when a button is pressed)."""
    return report.download_tables(groups, result.queries, fdr, copairs_names, to_copairs_names)


def bundle() -> bytes:
    """The tables and the settings they were made with, as one zip (built when the button is pressed)."""
    g, q = downloads()
    record = report.settings_record(file=file_name if source == UPLOAD else "example", digest=digest,
                                    settings=settings, alpha=fdr, hierarchical_by=hierarchical_by,
                                    copairs_names=copairs_names, version=apnull.__version__,
                                    dropped_features=result.settings.get("dropped_features", ()),
                                    dropped_rows=result.settings.get("dropped_rows", ()),
                                    feature_columns=result.settings.get("feature_columns"))
    return report.bundle_zip({f"{file_name}_perturbations": g, f"{file_name}_queries": q}, record)


d1 = d2 = st.container(horizontal=True)
with d1:
    download_csv(lambda: downloads()[0],
                 f"{file_name}_perturbations.csv", label="Download the perturbation table (CSV)",
                 key="download_groups")
d2.download_button("Download tables + settings (zip)", data=bundle, file_name=f"{file_name}_scores.zip",
                   mime="application/zip", key="download_zip", on_click="ignore", icon=":material/folder_zip:",
                   help="The perturbation and query tables as CSV and settings.json: file, columns, control, "
                        "similarity, null, permutations, seed, FDR level, missing values, pair rule, apnull version.")

names, points = shown_view.names, shown_view.points


def pick_from_chart():
    """A click on the volcano plot chooses the perturbation shown on the right."""
    name = view.selected_name(st.session_state.get("volcano", {}).get("selection"))
    if name in names:
        st.session_state[INSPECT] = name


@st.fragment
def inspection():
    """The chosen perturbation: the volcano plot, its null and its queries. A fragment: choosing another
    perturbation (the box or a click on the volcano) reruns this part only, not the whole page."""
    left, right = st.columns([1.1, 1])
    with right:
        chosen = bound_choice("Perturbation to inspect", INSPECT, names,
                              help="Or click its point in the volcano plot. Ordered by p-value.")
    with left:
        fig = cache.cached_view(("volcano", digest, settings.key(), fdr, chosen), lambda: figures.volcano(
            points, fdr, null, "auto" if adaptive else settings.permutations, highlight=chosen))
        show_figure(fig, key="volcano", on_select=pick_from_chart, selection_mode="points")
    with guard():
        row, original, shown_queries = cache.inspected(digest, key, result, groups, perturbation, chosen)
    with right:
        if null == "permutation":
            def perturbation_null():
                return figures.null_view(result.null_maps(original), float(row["mAP"]), chosen, float(row["p_value"]),
                                         float(row["q_value"]), n_replicates=int(row["n_replicates"]))

            with guard():
                summary, fig = cache.cached_view(("null", digest, settings.key(), chosen), perturbation_null)
            show_figure(fig, key="null_figure")
            st.caption(f"{summary['reached']:,} of the {summary['permutations']:,} shuffled mAPs "
                       f"({summary['share_above']:.1%}) reach the observed {row['mAP']:.4f}; p = (1 + that count) / "
                       f"(1 + B) = {view.p_label(row['p_value'])}. "
                       f"The null's 95th percentile is {summary['q95']:.4f}.")
        else:
            st.metric(f"{chosen}: mAP", f"{row['mAP']:.4f}", border=True)
            st.info(f"The {null} null does not shuffle this perturbation's labels, so there is no null of its own "
                    "to show; choose **permutation** to see one.", icon=":material/info:")

    st.subheader(f"Queries of {chosen}")
    st.caption("One row per replicate: it ranks the other replicates (m positives) among "
               + ("its plate's controls" if settings.negatives == "controls" else "the other profiles of its plate")
               + " (n negatives). " + cache.cached_view(("query_words", digest, key, chosen),
                                                        lambda: report.query_null_text(shown_queries["null"]))
               + " q-values are over all "
               "queries of the screen. `row` is the 0-based position of the profile among the file's data rows "
               "(first row under the header = 0); the plate and metadata of each row follow the scores.")
    qfmt = {c: st.column_config.NumberColumn(format="%.4f") for c in ("ap", "precision_at_r")}
    qfmt["ap_normalized"] = st.column_config.NumberColumn(
        "AP above chance", format="%.3f", help="ap_normalized = (AP - E) / (1 - E), E = E[AP](m, n): 0 is chance.")
    qfmt["p_value_bound"] = st.column_config.CheckboxColumn(
        "bound", help="p_value_bound: no draw reached the observed AP, so the p-value is an upper bound.")
    qfmt.update(p_formats(shown_queries))
    show_table(shown_queries, column_config=qfmt, key="queries_table",
               column_order=report.shown_order(shown_queries.columns, 1))
    download_csv(lambda: downloads()[1],
                 f"{file_name}_queries.csv", label="Download all queries (CSV)", key="download_queries")


inspection()

st.subheader("Are these p-values calibrated?")
st.markdown("On perturbations that do nothing, a calibrated p-value falls at or below 0.05 for 5% of them "
            "and at or below 0.01 for 1%. Rates above that mean false hits; below it, lost power.")
calibration, calibration_shown = cache.cached_view(("calibration", digest, key), lambda: report.calibration_views(
    report.nulls_used(result.groups, result.queries, settings.permutations)))
st.table(calibration_shown)
st.caption(f"Each cell: {report.CALIBRATION_LAYOUTS}. *this run*: the ways this run's p-values were made. "
           f"Measured by {report.CALIBRATION_SOURCE[len('measured by '):]}. {report.CALIBRATION_FDR}")
download_csv(calibration, "calibration.csv", label="Download the calibration table (CSV)",
             key="download_calibration")

consistency_step(table, settings.perturbation[0], settings.control, groups, digest=digest, file_name=file_name,
                 auto=auto, normalize=settings.normalize, stratum=settings.stratum)
