"""Compare two pipelines: do two feature tables of the same wells retrieve replicates equally well?"""

import streamlit as st

from apnull.plots.compare import compare_figure
from apnull.score import MAX_FILE_BYTES, SCORE_SIMILARITIES, MissingValuesError
from apnull.ui import (bound_choice, bound_float, bound_int, bound_select, bound_text, bound_toggle, download_csv,
                       guard, intro, show_figure, show_table)
from apnull.ui import compare_cache as cache
from apnull.ui import uploads
from apnull.views import compare as view
from apnull.views import score_report as report
from apnull.views.score import MAX_PAGE_BUDGET, NO_STRATUM, PAGE_BUDGET
from apnull.views.score_inputs import preferred_first

EXAMPLE = "example"
UPLOAD = "upload"
NORMALIZE_KEY = "cp_normalize"

intro(
    "Compare two pipelines",
    "Two tables of the **same wells** from two pipelines (two feature sets, two normalisations, CellProfiler "
    "against an embedding): which one makes replicates find each other better, and is the difference more "
    "than chance? Each table is scored as on **Score your data**; the test swaps the pipelines on whole "
    "plates, because perturbations on a plate share its controls and its quirks.",
)

source = bound_select("Data", "cp_data", [EXAMPLE, UPLOAD], EXAMPLE,
                      help="example: handwritten digits (UCI, bundled) as 8 plates of wells; A = the 64 pixels, B = the same "
                           "images at half resolution (16 features). upload: your own two CSV or Parquet files.")
if source == EXAMPLE:
    a, b = cache.example_pair()
    pair, name_a, name_b = cache.EXAMPLE_PAIR, "A (64 pixels)", "B (half resolution)"
    st.caption(f"Bundled example: {len(a):,} wells on 8 plates; A has {a.shape[1] - 5} pixel features, B "
               f"{b.shape[1] - 5} features of the same images at half resolution "
               "(`apnull.score.example.digits_pipeline_pair`).")
else:
    up_a, up_b = st.columns(2)
    tables = {}
    for side, box in (("a", up_a), ("b", up_b)):
        upload = box.file_uploader(f"Table {side.upper()} (CSV or Parquet)", type=["csv", "tsv", "parquet", "pq"],
                                   key=f"cp_upload_{side}", max_upload_size=max(1, MAX_FILE_BYTES // 2**20),
                                   help="One row per well; label columns Metadata_* (read as text); numeric "
                                        "columns are features. Both tables must hold the same wells.")
        if upload is not None:
            with guard():
                uploads.remember_upload(upload, cache.upload_slot(side))
        tables[side] = uploads.saved_upload(cache.upload_slot(side))
    (a, name_a, digest_a), (b, name_b, digest_b) = tables["a"], tables["b"]
    if a is None or b is None:
        st.info("Upload both tables, or choose **example** above.", icon=":material/upload_file:")
        st.stop()
    pair = f"{digest_a}:{digest_b}"
    st.caption(f"A: {name_a}, {len(a):,} rows, {a.shape[1]:,} columns. B: {name_b}, {len(b):,} rows, "
               f"{b.shape[1]:,} columns.")

# --- settings (bound to the URL; a new pair of tables starts with its guesses) --------------------
defaults = cache.pair_choices(pair, a, b)
cache.use_pair(pair, defaults)
columns = view.shared_labels(a, b)
if not columns:
    st.error("The two tables share no label column (Metadata_* or text): add the well and plate columns to both.",
             icon=":material/error:")
    st.stop()
c1, c2, c3, c4, c5 = st.columns(5)
key = bound_choice("Well key", "cp_key", preferred_first(columns, defaults["cp_key"]), container=c1,
                   help="The column that names a well in both tables (matched as text).")
key2 = bound_choice("Second key column", "cp_key2", [view.NO_KEY] + columns, container=c2,
                    help="When the well name repeats across plates, the plate column too (or (none)).")
perturbation = bound_choice("Perturbation column", "cp_pert", preferred_first(columns, defaults["cp_pert"]),
                            container=c3, help="Must hold the same value for a well in both tables.")
control_text = bound_text("Control value(s)", "cp_control", "", container=c4,
                          help="Values of the perturbation column that mark controls; several separated by commas.")
stratum = bound_choice("Plate (stratum)", "cp_stratum", preferred_first([NO_STRATUM] + columns, defaults["cp_stratum"]),
                       container=c5, help="The plates are what the test swaps between A and B (with (none), the whole "
                                          "table is one unit and there is no test).")
c6, c7, c8, c9, c10 = st.columns([1.2, 1.2, 1.2, 1, 1])
features_a = bound_text("Features of A (regex)", "cp_features_a", "", container=c6,
                        help="Empty: every numeric column not named Metadata_* (key columns never).")
features_b = bound_text("Features of B (regex)", "cp_features_b", "", container=c7,
                        help="Empty: every numeric column not named Metadata_* (key columns never).")
similarity = bound_select("Similarity", "cp_similarity", SCORE_SIMILARITIES, view.PAGE_DEFAULTS["similarity"], container=c8, horizontal=False,
                          help="How two profiles are compared, the same for both tables.")
seed = bound_int("Seed", "cp_seed", view.PAGE_DEFAULTS["seed"], container=c9, help="Seed of the permutations and of random sign flips.")
alpha = bound_float("FDR level q", "cp_alpha", view.PAGE_DEFAULTS["alpha"], step=0.01, format="%.3g", container=c10,
                    help="A perturbation counts as retrieved by a side when its q-value there is at most this.")
d1, d2 = st.columns([1.3, 1], vertical_alignment="bottom")
adaptive = bound_toggle(
    "More draws where needed", "cp_auto", False, container=d1,
    help="Adaptive permutations behind each table's mAP p-values (permutations='auto', as `apnull compare` "
         "draws by default): each perturbation gets more shuffles only while its Benjamini-Hochberg decision "
         "needs them. Off: a fixed number B for every perturbation (smallest p 1/(1 + B)), which can retrieve "
         "fewer perturbations than the command line. The mAPs and the comparison's own test do not depend on it.")
budget = None
if adaptive:
    permutations = "auto"
    budget = bound_float("Time limit (seconds)", "cp_budget", PAGE_BUDGET, step=5.0, format="%g", container=d2,
                         help=f"Extra rounds of draws stop once this time would be passed (at most "
                              f"{MAX_PAGE_BUDGET:g} s on this page; the command line has no limit). A decision "
                              "the limit leaves open is named under the results.")
    st.caption(view.DRAWS_LIMIT)
else:
    permutations = bound_int("Permutations B", "cp_perms", view.PAGE_DEFAULTS["permutations"], step=1000, container=d2,
                             help="Label permutations behind each table's mAP p-values (1/(1 + B) is the smallest "
                                  "p). The command line draws adaptively by default (--permutations auto).")
    st.caption(view.DRAWS_DIFFERENCE)
with st.expander("More options", icon=":material/tune:"):
    nan = report.NAN_CHOICES[bound_select(
        "Missing values", "cp_nan", list(report.NAN_CHOICES), list(report.NAN_CHOICES)[0],
        help="NaN or infinite feature cells in either table (nan= / --nan): stop and name them, leave out the "
             "feature columns holding any (each table its own), or leave out the wells holding any in either "
             "table (from both, so both score the same wells; the wells are listed under the results).")]

normalize = report.NORMALIZE_CHOICES[bound_choice(
    "Normalise features", NORMALIZE_KEY, list(report.NORMALIZE_CHOICES), container=st.columns([1, 2])[0],
    help="normalize= / --normalize, for each table: per plate, each feature as the robust z-score (x - median) / "
         "(1.4826 MAD) of the plate's controls or of all its wells (pycytominer's mad_robustize). For raw "
         "features; none for tables normalised already.")]

if normalize != "none":
    st.caption(report.normalize_note(normalize, None if stratum == NO_STRATUM else stratum))

with st.expander("How the comparison is made", icon=":material/functions:"):
    st.markdown(view.METHOD_TEXT)

with guard(view.compare_words):
    settings = view.make_compare_settings(a, b, key, key2, perturbation, control_text, stratum, features_a, features_b,
                                  similarity, permutations, seed, alpha, normalize, nan=nan,
                                  budget=budget)

# --- before Compare: which test the comparison will get, and why ------------------------------------
test, why, _ = cache.compare_view(("plan", pair, settings.perturbation, settings.control, settings.stratum),
                                 lambda: view.which_test_of(a, settings.perturbation, list(settings.control),
                                                            settings.stratum))
st.info(view.plan_text(test, why), icon=":material/rule:")

auto = source == EXAMPLE  # the example runs at once; uploads when the button is pressed
result = cache.cached_comparison(pair, settings.cache_key())
b1, b2 = st.columns([1, 5], vertical_alignment="center")
pressed = not auto and b1.button("Compare", type="primary", key="cp_run", icon=":material/play_arrow:")
if result is None and (auto or pressed):
    with guard(view.compare_words):
        try:
            result = cache.compare_once(pair, settings.cache_key(), a, b, settings.kwargs(), container=b2)
        except MissingValuesError as exc:  # said with the page's own control, not the library's nan=
            raise ValueError(report.missing_message(exc.where)) from None
if result is None:
    b2.info("Check the inputs above, then press **Compare**.", icon=":material/info:")
    st.stop()

# --- the answer -----------------------------------------------------------------------------------
summary = result.summary
headline, answer, size = view.verdict_words(summary, result.groups)
st.subheader(headline)
st.markdown(f"{answer} {size}")
for col, (label, value, why) in zip(st.columns(4), view.cards(summary)):
    col.metric(label, value, help=why, border=True)
raw = view.raw_sides(result)
if raw:
    st.warning(report.raw_message(raw), icon=":material/tune:")
    st.button(report.NORMALIZE_FIX, key="cp_normalize_fix", icon=":material/auto_fix_high:",
              on_click=lambda: st.session_state.update({NORMALIZE_KEY: report.NORMALIZE_WORDS["controls"]}))
st.markdown(view.retrieved_text(summary))
for message in view.compare_warnings(result):
    st.warning(message, icon=":material/warning:")

pcol = result.settings["perturbation_column"]
pcol = pcol if isinstance(pcol, str) else pcol[0]
fig = cache.compare_view(("figure", pair, settings.cache_key()), lambda: compare_figure(
    view.scatter_data(result.groups, pcol), settings.alpha, summary["mean_delta"]))
show_figure(fig, key="cp_figure")

st.subheader("Perturbations")
st.caption("delta = mAP of B − mAP of A, most negative first; retrieved: the side(s) where the q-value is at most "
           f"{settings.alpha:g}; unit: the plate(s) swapped together in the test.")
shown = cache.compare_view(("shown", pair, settings.cache_key()), lambda: view.shown_groups(result.groups))
number = st.column_config.NumberColumn(format="%.4f")
show_table(shown, key="cp_groups", height=320,
           column_config={"mAP_a": number, "mAP_b": number, "delta": st.column_config.NumberColumn(format="%+.4f")})
file_stem = "example" if source == EXAMPLE else "comparison"
download_csv(result.groups, f"{file_stem}_compare_perturbations.csv", label="Download the perturbation table (CSV)",
             key="cp_download_groups")
if len(result.left_out):
    with st.expander(f"{len(result.left_out):,} row(s) left out"):
        show_table(result.left_out, key="cp_left_out")
        download_csv(result.left_out, f"{file_stem}_compare_left_out.csv", label="Download (CSV)",
                     key="cp_download_left_out")
