"""What the "Score your data" page says and hands out, derived from what a run did: the words for each
null a row used, the method text, the calibration note (with the rows this run used marked), the
missing-value choices in plain words, and the download bundle (tables + settings.json, one zip).

No streamlit, no plotting.
"""

from __future__ import annotations

import io
import json
import re
import zipfile

import pandas as pd

from ..score.table.missing import rows_text
from ..score.table.normalize import raw_warning
from .score import USES_B, name_text

__all__ = ["CALIBRATION", "CALIBRATION_SOURCE", "CALIBRATION_FDR", "CALIBRATION_LAYOUTS", "calibration_table",
           "calibration_views", "LEAD_COLUMNS", "shown_order",
           "NAN_WORDS", "NEGATIVE_WORDS", "NAN_CHOICES", "NEGATIVE_CHOICES", "missing_message", "page_words",
           "dropped_text", "NORMALIZE_WORDS", "NORMALIZE_CHOICES", "NORMALIZE_FIX", "raw_message", "page_warnings",
           "normalize_note",
           "nulls_used", "NULL_SHORT_WORDS", "query_null_text",
           "mAP_null_text", "method_text", "significant_name", "download_tables", "settings_record", "bundle_zip",
           "open_decisions", "draws_caption"]

# ----------------------------------------------------------------------------------------------
# the calibration note
# ----------------------------------------------------------------------------------------------

#: Where the calibration note's numbers come from (``benchmarks/calibration.py``, docs/calibration.md).
CALIBRATION_SOURCE = ("measured by benchmarks/calibration.py: true-null screens from scikit-learn's digits, "
                      "4 replicates, cosine, B = 999; 735 tests per layout (2,940 per-query tests), 99.9% "
                      "binomial band at 0.05: [0.026, 0.079]")
#: One row per way of making a p-value: ``key`` (what :func:`nulls_used` finds in a result), the plain
#: ``method``, the false-positive rates at 0.05 and 0.01 (equal / unequal control counts per plate) and
#: the verdict. One constant, so a newer measured table can replace it.
CALIBRATION = (
    {"key": "permutation", "method": "mAP: labels shuffled within plates, fixed number of shuffles",
     "fpr_05": "0.048 / 0.053", "fpr_01": "0.016 / 0.014", "verdict": "calibrated"},
    {"key": "adaptive", "method": "mAP: labels shuffled within plates, more shuffles where needed",
     "fpr_05": "0.050 / 0.057", "fpr_01": "0.015 / 0.014", "verdict": "calibrated"},
    {"key": "conditional permutation", "method": "one replicate's AP: its positives shuffled within their plates",
     "fpr_05": "0.052 / 0.053", "fpr_01": "0.013 / 0.013", "verdict": "calibrated, also with plate effects"},
    {"key": "exact law", "method": "one replicate's AP: exact null law of AP for (m, n)",
     "fpr_05": "0.054 / 0.054", "fpr_01": "0.010 / 0.011",
     "verdict": "calibrated without plate effects; with one it rejects nothing (used only when the positives "
                "share the query's plate)"},
    {"key": "independent", "method": "mAP: the replicates' APs treated as independent",
     "fpr_05": "0.099 / 0.102", "fpr_01": "0.037 / 0.044", "verdict": "over-rejects about 2x"},
    {"key": "copairs", "method": "mAP: copairs 0.5.5's null",
     "fpr_05": "0.020 / 0.098", "fpr_01": "0.000 / 0.038",
     "verdict": "too conservative with equal control counts, over-rejects with unequal ones"},
)
#: Benjamini-Hochberg at q = 0.05 on mixed screens (same source): achieved FDR and power.
CALIBRATION_FDR = ("Benjamini-Hochberg at q = 0.05 on 30 mixed screens (10 perturbations per screen with signal: "
                   "each replicate mixed 50% with an image of another digit; about 15 null): label permutation "
                   "FDR 0.035 (SE 0.012), power 0.80; copairs 0.5.5 FDR 0.032, power 0.59; independent FDR 0.098 "
                   "(over the nominal 0.05), power 0.93.")
#: What the two numbers of a cell are: (equal, unequal) control counts per plate.
CALIBRATION_LAYOUTS = "equal 20/20/20/20 / unequal 18/19/21/22 controls per plate"


def calibration_table(used=None) -> pd.DataFrame:
    """The calibration note as a table: method, false-positive rate at alpha 0.05 and 0.01, verdict; with
    ``used`` (a set of keys, :func:`nulls_used`) a first column ``this run`` marking the rows this run used."""
    rows = pd.DataFrame(list(CALIBRATION), columns=["key", "method", "fpr_05", "fpr_01", "verdict"])
    out = rows.drop(columns="key")
    if used is not None:
        out.insert(0, "this run", rows["key"].isin(set(used)).to_numpy())
    return out


#: The columns a results table shows right after its names, so a phone (390 px, three or four columns
#: at once) sees the score and its p- and q-values without scrolling sideways.
LEAD_COLUMNS = ("mAP", "ap", "p_value", "q_value", "significant")


def shown_order(columns, names: int) -> list[str]:
    """The order a page shows a results table's ``columns`` in: the first ``names`` columns (the names
    of its rows), then :data:`LEAD_COLUMNS` present, then the rest in their order. Only the order shown
    changes; the table and its downloads keep theirs."""
    columns = [str(c) for c in columns]
    lead = [c for c in LEAD_COLUMNS if c in columns[names:]]
    return columns[:names] + lead + [c for c in columns[names:] if c not in lead]


def calibration_views(used) -> tuple[pd.DataFrame, pd.DataFrame]:
    """(:func:`calibration_table` of ``used``, the same as the page shows it: ✓ for this run's rows,
    the rates' columns named in words)."""
    table = calibration_table(used)
    shown = (table.assign(**{"this run": table["this run"].map({True: "✓", False: ""})})
             .rename(columns={"fpr_05": "false hits at α = 0.05", "fpr_01": "at α = 0.01"}))
    return table, shown


# ----------------------------------------------------------------------------------------------
# which null each row used, in words
# ----------------------------------------------------------------------------------------------

def nulls_used(groups: pd.DataFrame, queries: pd.DataFrame, permutations) -> set:
    """The :data:`CALIBRATION` keys of what made this result's p-values: the mAP null (``permutation``,
    ``adaptive``, ``independent`` or ``copairs``, from the groups' ``null`` column and the permutations
    setting) and each query null found in the queries' ``null`` column (``exact law``, ``conditional
    permutation``)."""
    used = set()
    for label in pd.unique(groups["null"].astype(str)) if "null" in groups else ():
        if label.startswith("permutation"):
            used.add("adaptive" if permutations == "auto" else "permutation")
        elif label.startswith("independent"):
            used.add("independent")
        elif label.startswith("copairs"):
            used.add("copairs")
    if "null" in queries:
        nulls = set(pd.unique(queries["null"].astype(str)))
        used |= nulls & {"exact law", "conditional permutation"}
        if "conditional law (all choices counted)" in nulls:  # the same null, its law counted, not drawn
            used.add("conditional permutation")
    return used


#: The mAP null in two words, for the volcano plot's subtitle.
NULL_SHORT_WORDS = {"permutation": "shuffled-label", "independent": "independent-AP", "copairs": "copairs"}

#: How each query null is said on the page.
QUERY_NULL_WORDS = {
    "exact law": "the exact null law of AP for its (m, n) (its positives share its plate, so they are "
                 "exchangeable with its controls)",
    "conditional permutation": "a conditional permutation (its positives sit on other plates: each positive's "
                               "label is given to a random profile of that positive's own plate, keeping the "
                               "query; this stays calibrated when plates differ)",
    "conditional law (all choices counted)": "the same conditional permutation, its law counted over every "
                                             "choice instead of drawn (an exact p-value; `permutations` gives "
                                             "the number of choices)",
}


def query_null_text(nulls) -> str:
    """The query table's words for the nulls its rows used (the values of its ``null`` column)."""
    counts = pd.Series(list(nulls), dtype=object).astype(str).value_counts()
    known = [n for n in QUERY_NULL_WORDS if n in counts.index]
    if not known:
        return "Its AP p-value: see the `null` column."
    if len(known) == 1:
        return f"Its AP p-value comes from {QUERY_NULL_WORDS[known[0]]}."
    parts = [f"{int(counts[n]):,} from {QUERY_NULL_WORDS[n]}" for n in known]
    return "Its AP p-value (the `null` column says which): " + "; ".join(parts) + "."


def mAP_null_text(null: str, permutations) -> str:
    """One sentence on how this run's mAP p-values were made."""
    if null == "permutation":
        draws = ("more shuffles where a decision needs them (adaptive)" if permutations == "auto"
                 else "all assignments" if permutations == "all" else f"B = {permutations:,} shuffles")
        return ("The mAP p-value comes from shuffling the labels within plates: the perturbation's label is "
                f"handed to random members of its replicates-plus-controls pool, {draws}.")
    if null == "independent":
        return ("The mAP p-value treats the replicates' APs as independent (an approximation that over-rejects "
                "about 2x: for comparison only).")
    return ("The mAP p-value uses copairs's null (random AP draws per size; miscalibrated: for comparison "
            "only).")


def method_text(null: str, permutations, query_nulls=None) -> str:
    """The "How the p-values are made" box for the chosen null (and, once scored, the query nulls used)."""
    text = (
        "Each replicate of a perturbation ranks its sibling replicates among the controls of its plate "
        "(stratum) by profile similarity; its **AP** says how high the siblings came, and the perturbation's "
        "**mAP** averages the APs of its replicates.\n\n"
        "A fixed mAP cut-off misleads: what a random ranking scores depends on how many replicates and controls "
        "there are, so one threshold is too lax for some perturbations and too strict for others. Each "
        "perturbation is therefore tested against its own null. " + mAP_null_text(null, permutations) + " The "
        "**p-value** is the share of null values, counting the real one, that reach the observed mAP. "
        "Benjamini-Hochberg turns the p-values into **q-values**, the false discovery rate of calling everything "
        "up to that point a hit. The table *Are these p-values calibrated?* under the results shows how often "
        "each way of making a p-value calls a perturbation that does nothing a hit. Click a point of the volcano "
        "plot to see that perturbation's null.\n\n")
    if query_nulls is not None:
        text += "**Per replicate** (the query table): " + query_null_text(query_nulls) + "\n\n"
    return text + (
        "The downloaded query table has one row per replicate; `row` is the 0-based position of the profile "
        "among the uploaded file's data rows (the first row under the header is 0), followed by its stratum "
        "and metadata columns, so it joins back to the file.")


# ----------------------------------------------------------------------------------------------
# missing values and the pair rule, in words
# ----------------------------------------------------------------------------------------------

#: The library's ``nan=`` modes as the page offers them.
NAN_WORDS = {"error": "stop and name the cells", "drop-features": "leave out those features",
             "drop-rows": "leave out those rows"}
#: The library's ``negatives=`` choices as the page offers them.
NEGATIVE_WORDS = {"controls": "the controls of its plate", "others": "every other profile of its plate"}
#: The library's ``normalize=`` choices as the page offers them ("none" first: the default).
NORMALIZE_WORDS = {"none": "none (as given)", "controls": "per plate, against its controls",
                   "plate": "per plate, against all its wells"}
#: The page's choices (plain words, also what a link carries) -> the library's values.
NAN_CHOICES = {words: mode for mode, words in NAN_WORDS.items()}
NEGATIVE_CHOICES = {words: value for value, words in NEGATIVE_WORDS.items()}
NORMALIZE_CHOICES = {words: value for value, words in NORMALIZE_WORDS.items()}
#: The button that applies the fix of :func:`raw_message`.
NORMALIZE_FIX = "Normalise against each plate's controls"


def normalize_note(normalize: str, stratum) -> str:
    """What the normalise choice does with this stratum, in a sentence ("" for none)."""
    if normalize == "none":
        return ""
    against = "its control wells" if normalize == "controls" else "all its wells"
    if stratum is None:
        return (f"No stratum is chosen, so the whole table is normalised as one plate, against {against}: "
                "choose the plate column as the stratum to normalise each plate on its own.")
    return f"Each plate ({stratum}) is normalised on its own, against {against}."


def page_warnings(result) -> list:
    """A result's warnings as the page shows them under the results: the one on raw-looking features is
    left out (the page says it above the plan, in its own words: :func:`raw_message`)."""
    raw = raw_warning(getattr(result, "looks_raw", None))
    return [w for w in result.warnings if w not in raw]


def raw_message(looks_raw: str, control: str = "Normalise features") -> str:
    """The page's warning for features that look un-normalised (``looks_raw``: the library's sentence,
    :attr:`apnull.score.ScoreResult.looks_raw`), naming the page's control and its one-click fix."""
    return (f"{looks_raw[0].upper()}{looks_raw[1:]}. Replicates on different plates then look unlike each other "
            f"and mAP reads low. If the file holds raw features, press **{NORMALIZE_FIX}** (sets **{control}** "
            f"to *{NORMALIZE_WORDS['controls']}*: the robust z-score of pycytominer's mad_robustize).")


def page_words(message: str, features: str = "Feature columns (regex)") -> str:
    """A library message said with the scoring page's controls: ``nan='drop-rows'`` as **Missing
    values** → *leave out those rows*, ``similarity='euclidean'`` as **Similarity** → *euclidean*,
    ``features=`` as the **Feature columns (regex)** box (``features``: its label); a flag the library
    names for the command line is dropped."""
    message = re.sub(r"\s*\((?:--[\w-]+(?: [\w-]+)?)(?: on the command line)?\)", "", message)
    message = re.sub(r"\bnan='([\w-]+)'", lambda m: f"**Missing values** → *{NAN_WORDS.get(m.group(1), m.group(1))}*",
                     message)
    message = re.sub(r"\bsimilarity='([\w-]+)'", lambda m: f"**Similarity** → *{m.group(1)}*", message)
    message = re.sub(r"\bnormalize='([\w-]+)'",
                     lambda m: f"**Normalise features** → *{NORMALIZE_WORDS.get(m.group(1), m.group(1))}*", message)
    message = re.sub(r"\bfeatures= \(?a list or a regex\)?|\bfeatures=", f"**{features}**", message)
    return message


def missing_message(where: str, control: str = "Missing values") -> str:
    """The page's error for NaN or infinite cells: which cells (``where``, from
    :class:`apnull.score.MissingValuesError`, its rows named as the file's data rows counted from 1) and the
    page's own control that deals with them."""
    return (f"{where[0].upper()}{where[1:]}. Choose **{control}** → *{NAN_WORDS['drop-features']}* "
            f"or *{NAN_WORDS['drop-rows']}* (under **More options**), narrow the feature columns, or fix the file.")


def dropped_text(plan) -> str:
    """What the missing-value choice leaves out, for the plan ("" when nothing is)."""
    def listed(items, limit=8):
        items = [str(i) for i in items]
        return ", ".join(items[:limit]) + (f" and {len(items) - limit:,} more" if len(items) > limit else "")

    parts = []
    if plan.dropped_features:
        parts.append(f"**{len(plan.dropped_features):,} feature column(s) left out** for missing or infinite "
                     f"values: {listed(plan.dropped_features)}")
    if plan.dropped_rows:
        parts.append(f"**{len(plan.dropped_rows):,} row(s) left out** for missing or infinite values "
                     f"({rows_text(plan.dropped_rows, limit=8)})")
    return "; ".join(parts) + ("." if parts else "")


# ----------------------------------------------------------------------------------------------
# adaptive runs
# ----------------------------------------------------------------------------------------------

def open_decisions(groups: pd.DataFrame, column) -> list:
    """The perturbations (as text, :func:`apnull.views.score.name_text`) whose decision stayed open because
    the time limit stopped the rounds."""
    if "decision_open" not in groups:
        return []
    return name_text(groups.loc[groups["decision_open"].astype(bool)], column).tolist()


def draws_caption(groups: pd.DataFrame, budget, outcome: dict | None = None) -> str:
    """The adaptive run said in full: the draws the perturbations used (fewest, most, total), the time
    limit, whether it stopped any decision, and how many query p-values it left as bounds (their far
    tails not counted: ``outcome``, the result's ``settings["budget_outcome"]``)."""
    used = groups["permutations"].astype(int)
    text = (f"More draws where needed: each perturbation drew until its decision was settled, from "
            f"{int(used.min()):,} to {int(used.max()):,} draws ({int(used.sum()):,} in all; the `permutations` "
            f"column has each one's count).")
    if budget is not None:
        opened = int(groups["decision_open"].astype(bool).sum()) if "decision_open" in groups else 0
        text += f" Time limit {budget:g} s: " + (
            f"it stopped {opened:,} decision(s) before they were settled (`decision_open`): their p-values are "
            "what the draws so far give; raise the limit to settle them." if opened
            else "every perturbation's decision was settled within it.")
        tails, queries = (int((outcome or {}).get(k, 0)) for k in ("tail_bounds", "open_queries"))
        if tails:
            text += (f" {tails:,} query p-value(s) are their exact law's upper bound (`p_value_bound`): the "
                     "limit passed before their far tails were counted.")
        if queries:
            text += (f" It left {queries:,} query decision(s) open (`decision_open` in the queries table): "
                     "raise the limit to settle them.")
    return text


# ----------------------------------------------------------------------------------------------
# downloads that say how they were made
# ----------------------------------------------------------------------------------------------

def significant_name(alpha: float) -> str:
    """The ``significant`` column's name in a download: it names its level (``significant_at_fdr_0.05``)."""
    return f"significant_at_fdr_{alpha:g}"


def download_tables(groups: pd.DataFrame, queries: pd.DataFrame, alpha: float, copairs_names: bool = False,
                    to_copairs=None) -> tuple:
    """(groups, queries) as downloaded: ``significant`` (and ``stage1_significant``) renamed to name the
    FDR level; with ``copairs_names``, copairs's names instead (``to_copairs``:
    :func:`apnull.score.to_copairs_names`; its ``below_corrected_p`` is copairs's name)."""
    if copairs_names:
        return to_copairs(groups, queries, alpha)
    names = {"significant": significant_name(alpha), "stage1_significant": "stage1_" + significant_name(alpha)}
    return groups.rename(columns=names), queries.rename(columns=names)


def settings_record(*, file: str, digest: str, settings, alpha: float, hierarchical_by=(), copairs_names=False,
                    version: str, dropped_features=(), dropped_rows=(), feature_columns=None) -> dict:
    """What a download was made with (the page's :class:`apnull.views.score.Settings` and the rest), as
    plain JSON values: enough to run it again with ``apnull score`` or ``score_profiles``;
    ``feature_columns``: the features the run used (its ``settings["feature_columns"]``), listed."""
    s = settings
    return {
        "apnull_version": version, "file": file, "file_sha256": digest,
        "perturbation": list(s.perturbation), "control": list(s.control), "stratum": s.stratum,
        "features": s.features, "similarity": s.similarity, "negatives": s.negatives, "null": s.null,
        "permutations": s.permutations if s.null in USES_B else None,
        "budget_seconds": s.budget, "seed": s.seed, "fdr_level": alpha, "nan": s.nan, "normalize": s.normalize,
        "positives_differ_by": list(s.differ_by), "hierarchical_by": list(hierarchical_by),
        "copairs_names": bool(copairs_names),
        "dropped_features": [str(c) for c in dropped_features], "dropped_rows": [int(r) for r in dropped_rows],
        **({} if feature_columns is None else {"feature_columns": [str(c) for c in feature_columns]}),
    }


#: The date every member of a download zip carries (so the same tables give the same bytes).
ZIP_DATE = (2000, 1, 1, 0, 0, 0)


def bundle_zip(tables: dict, settings: dict) -> bytes:
    """One zip, written in memory: each table of ``tables`` (name -> DataFrame) as ``<name>.csv`` and
    ``settings`` as ``settings.json``. Deterministic: members in name order, a fixed date, sorted keys."""
    out = io.BytesIO()
    members = {f"{name}.csv": frame.to_csv(index=False).encode() for name, frame in tables.items()}
    members["settings.json"] = (json.dumps(settings, indent=2, sort_keys=True, default=str) + "\n").encode()
    with zipfile.ZipFile(out, "w", compression=zipfile.ZIP_DEFLATED) as zf:
        for name in sorted(members):
            info = zipfile.ZipInfo(name, date_time=ZIP_DATE)
            info.compress_type = zipfile.ZIP_DEFLATED
            info.external_attr = 0o644 << 16
            zf.writestr(info, members[name])
    return out.getvalue()
