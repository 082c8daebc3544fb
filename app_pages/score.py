"""Score your data: which perturbations of a screen beat chance (mAP, permutation p-value, BH q-value)."""

import io
import time

import streamlit as st

from apnull.plots.score import null_figure, volcano_figure
from apnull.score import MAX_FILE_BYTES, NULLS, SIMILARITIES, digits_screen, read_table, score_profiles
from apnull.ui import bound_float, bound_int, bound_select, download_csv, guard, intro, show_figure
from apnull.ui.consistency_step import consistency_step
from apnull.ui.widgets import BIND
from apnull.views import score as view

_TTL = 3600
EXAMPLE = "example"
UPLOAD = "upload"
INSPECT = "sc_inspect"

intro(
    "Score your data",
    "Upload a table of profiles (one row per well or cell, `Metadata_*` columns for labels, numeric "
    "columns for features) and ask which perturbations look like themselves more than chance allows. "
    "Each replicate of a perturbation ranks its sibling replicates among the controls by profile "
    "similarity; its **AP** says how high the siblings came, and the perturbation's **mAP** averages the "
    "APs of its replicates.\n\n"
    "A fixed mAP cut-off misleads: what a random ranking scores depends on how many replicates and "
    "controls there are, so one threshold is too lax for some perturbations and too strict for others. "
    "Here each perturbation gets its own **permutation null**: within every plate, the perturbation's "
    "label is handed to randomly drawn members of its replicates-plus-controls pool (keeping the counts), "
    "the mAP is recomputed on the same similarities, B times; the **p-value** is the share of those "
    "shuffles, counting the real one, that reach the observed mAP. Benjamini-Hochberg turns the p-values "
    "into **q-values**, the false discovery rate of calling everything up to that point a hit. The "
    "shortcuts (treating the k APs as independent, or copairs's null) are miscalibrated: see the table at "
    "the bottom. Click a point of the volcano plot to see that perturbation's null.",
)

# --- data ----------------------------------------------------------------------------------------


# Tables and results are cached as resources (shared, never copied): a result keeps the prepared feature
# matrix for ``null_maps``, which st.cache_data would pickle and unpickle on every rerun (a click on the
# volcano plot). The page only reads them (view.group_table copies before adding a column).
@st.cache_resource(max_entries=1, ttl=_TTL, show_spinner="Building the example...")
def example_table():
    return digits_screen()


@st.cache_resource(max_entries=4, ttl=_TTL, show_spinner="Reading the file...")
def uploaded_table(digest: str, name: str, _data: bytes):
    """The table of an upload, keyed on the hash of its bytes (``_data`` is not hashed again)."""
    return read_table(io.BytesIO(_data), name=name)


class NotScored(Exception):
    """Raised by :func:`scored` on a cache miss (exceptions are not cached)."""


@st.cache_resource(max_entries=8, ttl=_TTL, show_spinner=False)
def scored(digest: str, settings: tuple, _result=None):
    """The scoring result of (file hash, settings). The page runs the scoring itself (outside the cache,
    so the progress bar is live) and stores the result by calling this with ``_result``."""
    if _result is None:
        raise NotScored
    return _result


def score(digest, table, settings: view.Settings, run: bool):
    """The cached result, else (if ``run``) score with a progress bar, else None."""
    try:
        return scored(digest, settings.key())
    except NotScored:
        if not run:
            return None
    bar = st.progress(0.0, text="Scoring...")
    last = [0.0]

    def progress(done, total):
        now = time.monotonic()
        if total and (now - last[0] > 0.2 or done >= total):
            last[0] = now
            text = (f"Scoring: {done:,} of {total:,} perturbations" if done < total
                    else "Per-query p-values and the tables...")
            bar.progress(min(1.0, done / total), text=text)

    try:
        result = score_profiles(table, **settings.kwargs(), progress=progress)
    finally:
        bar.empty()
    return scored(digest, settings.key(), result)


source = bound_select("Data", "sc_data", [EXAMPLE, UPLOAD], EXAMPLE,
                      help="example: scikit-learn's handwritten digits made into a small screen (each digit a "
                           "perturbation with replicates, plus null perturbations drawn from the controls). "
                           "upload: your own CSV or Parquet file.")
if source == EXAMPLE:
    table, digest, file_name = example_table(), "example", "example"
    st.caption(f"Bundled example: {len(table):,} profiles, {table.shape[1]:,} columns "
               "(scikit-learn's digits; see `apnull.score.digits_screen`).")
else:
    upload = st.file_uploader("CSV or Parquet file of profiles", type=["csv", "tsv", "parquet", "pq"], key="upload",
                              max_upload_size=max(1, MAX_FILE_BYTES // 2**20),
                              help=f"Up to {MAX_FILE_BYTES / 2**20:,.0f} MB. Label columns Metadata_* (or text); "
                                   "numeric columns are features.")
    if upload is None:
        st.info("Upload a file of profiles, or choose **example** above.", icon=":material/upload_file:")
        st.stop()
    data = upload.getvalue()
    seen = st.session_state.get("_score_upload")  # hash each upload once, not on every rerun
    if seen is None or seen[0] != upload.file_id:
        st.session_state["_score_upload"] = seen = (upload.file_id, view.file_digest(data))
    digest, file_name = seen[1], upload.name.rsplit(".", 1)[0]
    with guard():
        table = uploaded_table(digest, upload.name, data)
    st.caption(f"{upload.name}: {len(table):,} rows, {table.shape[1]:,} columns.")

# --- settings ------------------------------------------------------------------------------------
labels = view.label_columns(table)
columns = labels + [str(c) for c in table.columns if str(c) not in labels]
c1, c2, c3, c4 = st.columns(4)
guess = view.guess_perturbation(labels) or columns[0]
perturbation = c1.selectbox("Perturbation column", columns, index=columns.index(guess), key="sc_pert", bind=BIND,
                            help="The column naming each profile's perturbation (compound, gene, ...).")
control_guess = view.guess_control(table[perturbation]) if perturbation in table.columns else None
control_text = c2.text_input("Control value(s)", key="sc_control", bind=BIND, placeholder=control_guess or "",
                             help="The value(s) of the perturbation column that mark controls; several are "
                                  "separated by commas. Empty: the value shown greyed out (a control-like name, "
                                  "else the most frequent value).")
strata = [view.NO_STRATUM] + [c for c in labels if c != perturbation]
stratum_guess = view.guess_stratum(strata[1:], perturbation)
stratum = c3.selectbox("Stratum (plate or batch)", strata, index=strata.index(stratum_guess), key="sc_stratum", bind=BIND,
                       help="Optional. Replicates are compared with the controls of their own stratum, and labels "
                            "are shuffled within each stratum.")
features = c4.text_input("Feature columns (regex)", key="sc_features", bind=BIND,
                         placeholder="all numeric non-Metadata columns",
                         help="A regular expression selecting the feature columns, e.g. ^Cells_|^Nuclei_. Empty: "
                              "every numeric column not named Metadata_*.")
c5, c6, c7, c8, c9 = st.columns([1.3, 1.6, 1, 1, 1])
similarity = bound_select("Similarity", "sc_similarity", SIMILARITIES, "cosine", container=c5,
                          help="How two profiles are compared: cosine, Pearson correlation, or minus the "
                               "euclidean distance.")
null = bound_select("Null of the mAP", "sc_null", NULLS, "permutation", container=c6,
                    help="permutation: label permutation within strata (calibrated). independent and copairs are "
                         "approximations, for comparison only (see the calibration table below).")
permutations = 0
if null in view.USES_B:
    permutations = bound_int("Permutations B", "sc_perms", 999, step=1000, container=c7,
                             help=f"Label permutations per perturbation (copairs: random AP draws per size), "
                                  f"1 to {view.MAX_PERMUTATIONS:,}. The smallest possible p is 1/(1 + B).")
seed = bound_int("Seed", "sc_seed", 0, container=c8, help="Seed of the permutations (same seed, same p-values).")
fdr = bound_float("FDR level q", "sc_fdr", 0.05, step=0.01, format="%.3g", container=c9,
                  help="Perturbations with q-value at most this are called hits (coloured in the volcano plot).")

with guard():
    settings = view.make_settings(table, perturbation, control_text or control_guess or "", stratum, features,
                                  similarity, null, permutations, seed)
    fdr = view.check_fdr(fdr)
if not control_text:
    st.caption(f"Control: **{control_guess}** (guessed; type the value(s) to change it).")

auto = source == EXAMPLE  # the example is scored at once; an upload when the button is pressed
pressed = not auto and st.button("Score", type="primary", key="score", icon=":material/play_arrow:")
with guard():
    result = score(digest, table, settings, run=auto or pressed)
if result is None:
    st.info("Check the columns and settings, then press **Score**.", icon=":material/info:")
    st.stop()

# --- results -------------------------------------------------------------------------------------
groups = view.group_table(result.groups, fdr)
for message in result.warnings:
    st.warning(message, icon=":material/warning:")
if len(result.skipped):
    with st.expander(f"{len(result.skipped):,} perturbation(s) skipped"):
        st.dataframe(result.skipped, hide_index=True)
if groups.empty:
    st.error("No perturbation could be scored: see the skipped ones above and check the control value(s) "
             "and the stratum column.", icon=":material/error:")
    st.stop()

k1, k2, k3, k4 = st.columns(4)
k1.metric("Perturbations scored", f"{len(groups):,}", border=True)
k2.metric(f"Hits at q ≤ {fdr:g}", f"{int(groups['significant'].sum()):,}", border=True,
          help="Perturbations whose Benjamini-Hochberg q-value is at most the FDR level.")
k3.metric("Queries (replicates)", f"{len(result.queries):,}", border=True)
k4.metric(f"{null.capitalize()} null" + ("" if null == "permutation" else " (approximate)"),
          f"B = {settings.permutations:,}" if null in view.USES_B else "formula", border=True,
          help="How the p-value of each mAP was computed (B: draws of the null per perturbation).")

st.subheader("Perturbations")
fmt = {"mAP": st.column_config.NumberColumn(format="%.4f"),
       "p_value": st.column_config.NumberColumn("p-value", format="%.4g"),
       "q_value": st.column_config.NumberColumn("q-value", format="%.4g"),
       "significant": st.column_config.CheckboxColumn(f"q ≤ {fdr:g}")}
st.dataframe(groups, hide_index=True, column_config=fmt, height=300, key="groups_table")
download_csv(groups, f"{file_name}_perturbations.csv", label="Download the perturbation table (CSV)",
             key="download_groups")

names = view.names(groups, perturbation)
points = view.volcano_data(groups, perturbation, fdr)


def pick_from_chart():
    """A click on the volcano plot chooses the perturbation shown on the right."""
    name = view.selected_name(st.session_state.get("volcano", {}).get("selection"))
    if name in names:
        st.session_state[INSPECT] = name


left, right = st.columns([1.1, 1])
with right:
    chosen = st.selectbox("Perturbation to inspect", names, key=INSPECT, bind=BIND,
                          help="Or click its point in the volcano plot. Ordered by p-value.")
with left:
    p_floor = 1.0 / (1 + settings.permutations) if null in view.USES_B else None
    fig = volcano_figure(points, fdr, cutoff=view.p_cutoff(points), p_floor=p_floor, highlight=chosen, method=null)
    st.plotly_chart(fig, key="volcano", on_select=pick_from_chart, selection_mode="points",
                    config={"displaylogo": False, "toImageButtonOptions": {"format": "png"}})
row = view.row_of(groups, perturbation, chosen)
with right:
    if null == "permutation":
        with guard():
            null_maps = result.null_maps(view.original_name(groups, perturbation, chosen))
            hist = view.null_histogram(null_maps, float(row["mAP"]))
        summary = view.null_summary(null_maps, float(row["mAP"]))
        show_figure(null_figure(hist, float(row["mAP"]), chosen, float(row["p_value"]), float(row["q_value"]),
                                permutations=summary["permutations"], n_replicates=int(row["n_replicates"]),
                                null_mean=summary["mean"]), key="null_figure")
        st.caption(f"{summary['reached']:,} of the {summary['permutations']:,} shuffled mAPs "
                   f"({summary['share_above']:.1%}) reach the observed {row['mAP']:.4f}; p = (1 + that count) / "
                   f"(1 + B) = {view.p_text(row['p_value'])}. "
                   f"The null's 95th percentile is {summary['q95']:.4f}.")
    else:
        st.metric(f"{chosen}: mAP", f"{row['mAP']:.4f}", border=True)
        st.info(f"The {null} null does not shuffle this perturbation's labels, so there is no null of its own "
                "to show; choose **permutation** to see one.", icon=":material/info:")

st.subheader(f"Queries of {chosen}")
st.caption("One row per replicate: it ranks the other replicates (m positives) among its stratum's controls "
           "(n negatives). Its AP p-value comes from the exact null law of AP for (m, n); q-values are over all "
           "queries of the screen.")
qfmt = {c: st.column_config.NumberColumn(format="%.4f") for c in ("ap", "precision_at_r")}
qfmt.update({c: st.column_config.NumberColumn(format="%.4g") for c in ("p_value", "q_value")})
st.dataframe(view.queries_of(result.queries, perturbation, chosen), hide_index=True, column_config=qfmt,
             key="queries_table")
download_csv(result.queries, f"{file_name}_queries.csv", label="Download all queries (CSV)",
             key="download_queries")

st.subheader("Are these p-values calibrated?")
st.markdown("On perturbations that do nothing, a calibrated p-value falls at or below 0.05 for 5% of them "
            "and at or below 0.01 for 1%. Rates above that mean false hits; below it, lost power.")
calibration = view.calibration_table()
st.dataframe(calibration, hide_index=True, key="calibration_table",
             column_config={"fpr_05": st.column_config.TextColumn("false-positive rate at α = 0.05"),
                            "fpr_01": st.column_config.TextColumn("at α = 0.01")})
st.caption(f"Each cell: {view.CALIBRATION_LAYOUTS}. Measured by {view.CALIBRATION_SOURCE[len('measured by '):]}. "
           f"{view.CALIBRATION_FDR}")
download_csv(calibration, "calibration.csv", label="Download the calibration table (CSV)",
             key="download_calibration")

consistency_step(table, perturbation, settings.control, groups, digest=digest, file_name=file_name, auto=auto)
