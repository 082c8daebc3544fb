"""The data behind the "Score your data" page: column guesses, settings checks, the perturbation and
query tables, the volcano points, one perturbation's permutation null, and the calibration note.

Thin layers over :mod:`apnull.score` (which does the scoring); no streamlit, no plotting (figures:
:mod:`apnull.plots.score`).
"""

from __future__ import annotations

import hashlib
from dataclasses import astuple, dataclass

import numpy as np
import pandas as pd

from ..law import count_reached
from ..limits import SCORE_PAGE_MAX_PERMUTATIONS, check_permutations, check_regex, check_seed, check_stratum
from ..score import p_text

#: The page's permutation limit, :data:`apnull.limits.SCORE_PAGE_MAX_PERMUTATIONS` (the library's is
#: ``SCORE_MAX_PERMUTATIONS``); kept under this name for the page.
MAX_PERMUTATIONS = SCORE_PAGE_MAX_PERMUTATIONS

#: Longest features regular expression (a link can hold 100 kB; a column list rarely needs more).
MAX_FEATURES_TEXT = 2000
#: Floor for p-values on the -log10 axis (an approximate null can give p = 0).
P_FLOOR = 1e-300
#: Values of the perturbation column that look like controls, in order of preference (lower case).
CONTROL_NAMES = ("dmso", "control", "ctrl", "negcon", "neg_control", "negative_control", "untreated",
                 "vehicle", "mock", "empty", "none")
#: Substrings (lower case) of column names that suggest the perturbation, and the stratum.
PERTURBATION_HINTS = ("pert", "treatment", "compound", "gene", "broad_sample", "label")
STRATUM_HINTS = ("plate", "batch")
#: The stratum choice that means "no stratum column" (the whole screen is then one stratum).
NO_STRATUM = "(none)"
#: The nulls that draw B times (label permutations; copairs's random AP rows): p >= 1 / (1 + B).
USES_B = ("permutation", "copairs")

#: The calibration note: false-positive rates at 0.05 and 0.01 of each null on true-null screens built
#: from one class of single-cell profiles and of scikit-learn's digits (4 replicates per fake
#: perturbation, cosine similarity, thousands of tests; ``benchmarks/calibration.py``). One constant,
#: so a newer measured table can replace it.
CALIBRATION_SOURCE = ("measured by benchmarks/calibration.py: true-null screens from scikit-learn's digits, "
                      "4 replicates, cosine, B = 999; 735 tests per layout (2,940 per-query tests), 99.9% "
                      "binomial band at 0.05: [0.026, 0.079]")
CALIBRATION = (
    {"method": "label permutation within strata (null=permutation, this page's default)",
     "fpr_05": "0.048 / 0.053", "fpr_01": "0.016 / 0.014", "verdict": "calibrated"},
    {"method": "per-query AP p-value, exact law (the query table)",
     "fpr_05": "0.054 / 0.054", "fpr_01": "0.010 / 0.011", "verdict": "calibrated"},
    {"method": "the k APs treated as independent (null=independent)",
     "fpr_05": "0.099 / 0.102", "fpr_01": "0.037 / 0.044", "verdict": "over-rejects about 2x"},
    {"method": "copairs 0.5.5 (null=copairs reproduces it)",
     "fpr_05": "0.020 / 0.098", "fpr_01": "0.000 / 0.038",
     "verdict": "too conservative with equal control counts, over-rejects with unequal ones"},
)
#: Benjamini-Hochberg at q = 0.05 on mixed screens (same source): achieved FDR and power.
CALIBRATION_FDR = ("Benjamini-Hochberg at q = 0.05 on 30 mixed screens (10 perturbations per screen with signal: "
                   "each replicate mixed 50% with an image of another digit; about 15 null): label permutation "
                   "FDR 0.035 (SE 0.012), power 0.80; copairs 0.5.5 FDR 0.032, power 0.59; independent FDR 0.098 "
                   "(over the nominal 0.05), power 0.93.")
#: Column headers of the calibration table: the two numbers are (equal, unequal) control counts per plate.
CALIBRATION_LAYOUTS = "equal 20/20/20/20 / unequal 18/19/21/22 controls per plate"


def calibration_table() -> pd.DataFrame:
    """The calibration note as a table: method, false-positive rate at alpha 0.05 and 0.01, verdict."""
    return pd.DataFrame(list(CALIBRATION), columns=["method", "fpr_05", "fpr_01", "verdict"])


# ----------------------------------------------------------------------------------------------
# the table and its columns
# ----------------------------------------------------------------------------------------------

def file_digest(data: bytes) -> str:
    """SHA-256 of the uploaded bytes: the cache key of the file."""
    return hashlib.sha256(data).hexdigest()


def label_columns(table: pd.DataFrame) -> list[str]:
    """Columns that can hold perturbation or stratum labels: ``Metadata_*`` first, then other
    non-numeric columns (numeric non-metadata columns are features)."""
    meta = [c for c in table.columns if str(c).startswith("Metadata_")]
    other = [c for c in table.columns if c not in meta and not pd.api.types.is_numeric_dtype(table[c])]
    return [str(c) for c in meta + other]


def _first_with(columns, hints, exclude=()) -> str | None:
    for hint in hints:
        for c in columns:
            if hint in c.lower() and c not in exclude:
                return c
    return None


def guess_perturbation(columns: list[str]) -> str | None:
    """The column most likely to name the perturbation (e.g. ``Metadata_pert_iname``), else the first."""
    return _first_with(columns, PERTURBATION_HINTS) or (columns[0] if columns else None)


def guess_stratum(columns: list[str], perturbation: str | None = None) -> str:
    """A plate or batch column if there is one, else :data:`NO_STRATUM`."""
    return _first_with(columns, STRATUM_HINTS, exclude=(perturbation,)) or NO_STRATUM


def guess_control(values: pd.Series) -> str | None:
    """A control-looking value of the perturbation column (DMSO, control, ...), else the most frequent
    value (controls usually outnumber each perturbation's replicates)."""
    counts = values.dropna().astype(str).value_counts()
    if counts.empty:
        return None
    lower = {v.lower(): v for v in counts.index}
    for name in CONTROL_NAMES:
        if name in lower:
            return lower[name]
    return str(counts.index[0])


def resolve_controls(table: pd.DataFrame, column: str, text: str) -> list[str]:
    """Control value(s) typed as text (comma-separated) -> list of distinct values, each checked to be
    in ``column`` (as text, as :func:`apnull.score.score_profiles` compares them: ``0`` finds the integer 0).

    ValueError naming the column when the column is missing, the text is empty, or a value is not in
    the column (with the column's most frequent values as a hint).
    """
    if column not in table.columns:
        raise ValueError(f"column {_short(column)} is not in the table; its columns are: {_names(table.columns)}")
    wanted = [v.strip() for v in str(text or "").split(",") if v.strip()]
    if not wanted:
        raise ValueError(f"type the control value(s) of {column!r} (comma-separated), e.g. {guess_control(table[column])}")
    present = set(table[column].dropna().astype(str).unique())
    missing = [v for v in wanted if v not in present]
    if missing:
        common = table[column].dropna().astype(str).value_counts().index[:5]
        shown = ", ".join(map(_short, missing[:5])) + (f" and {len(missing) - 5} more" if len(missing) > 5 else "")
        raise ValueError(f"control value(s) {shown} not found in column {column!r}; "
                         f"its most frequent values are: {', '.join(map(repr, common))}")
    return list(dict.fromkeys(wanted))


def _short(value, limit: int = 40) -> str:
    """repr of a value for a message, cut to ``limit`` characters (a pasted link can hold 100 kB)."""
    text = str(value)
    return repr(text) if len(text) <= limit else f"{text[:limit]!r}...({len(text):,} characters)"


def _names(columns, limit: int = 12) -> str:
    names = [repr(str(c)) for c in columns]
    more = f" and {len(names) - limit} more" if len(names) > limit else ""
    return ", ".join(names[:limit]) + more


@dataclass(frozen=True)
class Settings:
    """What the scoring depends on (besides the file): hashable, so it can key a cache."""

    perturbation: str
    control: tuple
    stratum: str | None
    features: str | None
    similarity: str
    null: str
    permutations: int | str   #: B, or "auto" (adaptive permutations)
    seed: int

    def kwargs(self) -> dict:
        """Keyword arguments of :func:`apnull.score.score_profiles`."""
        control = list(self.control) if len(self.control) > 1 else self.control[0]
        out = dict(perturbation=self.perturbation, control=control, stratum=self.stratum,
                   features=self.features, similarity=self.similarity, null=self.null, seed=self.seed)
        if self.null in USES_B:
            out["permutations"] = self.permutations
        return out

    def plan_kwargs(self) -> dict:
        """Keyword arguments of :func:`apnull.score.screen_plan` (the table-checking part of the settings)."""
        control = list(self.control) if len(self.control) > 1 else self.control[0]
        return dict(perturbation=self.perturbation, control=control, stratum=self.stratum,
                    features=self.features, similarity=self.similarity)

    def key(self) -> tuple:
        return tuple(str(x) for x in astuple(self))


def draws_text(permutations, groups: pd.DataFrame) -> str:
    """The page's card text of the draws behind the mAP p-values: "B = 999", or for adaptive
    permutations the range each perturbation used ("100 to 1,000,000 draws")."""
    if permutations != "auto":
        return f"B = {permutations:,}"
    used = groups["permutations"] if "permutations" in groups else pd.Series(dtype="int64")
    if used.empty:
        return "adaptive"
    lo, hi = int(used.min()), int(used.max())
    return f"{lo:,} draws" if lo == hi else f"{lo:,} to {hi:,} draws"


def make_settings(table: pd.DataFrame, perturbation: str, control_text: str, stratum: str | None,
                  features: str | None, similarity: str, null: str, permutations, seed: int) -> Settings:
    """Check the page's inputs against the table and bundle them. ValueError says what to change."""
    control = resolve_controls(table, perturbation, control_text)
    if stratum in (None, "", NO_STRATUM):
        stratum = None
    elif stratum not in table.columns:
        raise ValueError(f"stratum column {_short(stratum)} is not in the table; pick one of: "
                         f"{_names(label_columns(table))} or {NO_STRATUM}")
    else:
        check_stratum(stratum, perturbation)
    features = (features or "").strip() or None
    if features is not None:
        check_regex(features, "features", max_length=MAX_FEATURES_TEXT)
    if null in USES_B:
        permutations = check_permutations(permutations, null, SCORE_PAGE_MAX_PERMUTATIONS, " on this page")
    else:
        permutations = 0  # not used: keep it out of the cache key
    seed = check_seed(seed, allow_none=False)
    return Settings(str(perturbation), tuple(control), stratum, features, similarity, null, permutations, seed)


def check_fdr(level: float) -> float:
    level = float(level)
    if not 0.0 < level < 1.0:
        raise ValueError(f"the FDR level q must lie in (0, 1), got {level:g}")
    return level


# ----------------------------------------------------------------------------------------------
# results
# ----------------------------------------------------------------------------------------------

def p_label(p: float) -> str:
    """A p-value in a sentence on the page: three decimals down to 0.01 (0.060), below that
    :func:`apnull.score.p_text` (0.00297, 1.2e-05, never a bare 0); "n/a" when missing."""
    if p is None or not np.isfinite(p):
        return "n/a"
    return f"{p:.3f}" if p >= 0.01 else p_text(p)


#: The p-value columns of the page's tables (permutation or exact-law p-values, BH q-values).
P_COLUMNS = ("p_value", "q_value")


def p_shown(table: pd.DataFrame) -> pd.DataFrame:
    """``table`` as the page shows it: a p-value column holding an exact 0 (an exact law below the smallest
    double) becomes :func:`apnull.score.p_text` text ("<2.23e-308", "1e-05"), so no p-value reads as a bare
    0; other columns, and p-value columns without a 0, are left as numbers."""
    zero = [c for c in P_COLUMNS if c in table.columns and bool((table[c] == 0).any())]
    if not zero:
        return table
    out = table.copy()
    for c in zero:
        out[c] = out[c].map(p_text)
    return out


def ranked_groups(groups: pd.DataFrame, fdr: float) -> pd.DataFrame:
    """The perturbation table as the page ranks it: most significant first, with ``significant`` (q <= fdr)."""
    out = groups.copy()
    out["significant"] = out["q_value"] <= fdr
    out = out.sort_values(["p_value", "q_value", "mAP"], ascending=[True, True, False], kind="stable")
    return out.reset_index(drop=True)


def volcano_data(groups: pd.DataFrame, perturbation: str, fdr: float) -> pd.DataFrame:
    """One row per perturbation with a p-value: ``name`` (text), ``n_replicates``, ``mAP``, ``p_value``,
    ``q_value``, ``neg_log10_p`` (p floored at :data:`P_FLOOR`), ``significant`` (q <= fdr)."""
    ok = groups["p_value"].notna() & groups["mAP"].notna()
    g = groups.loc[ok]
    p = g["p_value"].to_numpy(dtype=float)
    return pd.DataFrame({
        "name": g[perturbation].astype(str).to_numpy(),
        "n_replicates": g["n_replicates"].to_numpy(),
        "mAP": g["mAP"].to_numpy(dtype=float),
        "p_value": p,
        "q_value": g["q_value"].to_numpy(dtype=float),
        "neg_log10_p": -np.log10(np.maximum(p, P_FLOOR)),
        "significant": (g["q_value"] <= fdr).to_numpy(),
    })


def p_cutoff(data: pd.DataFrame) -> float | None:
    """The largest p-value among the significant rows (perturbations, or labels of the consistency step):
    with BH, every p at or below it is significant, so a line at -log10 of it separates the two colours.
    None if nothing is significant."""
    sig = data.loc[data["significant"], "p_value"]
    return float(sig.max()) if len(sig) else None


def names(groups: pd.DataFrame, perturbation: str) -> list[str]:
    """The perturbations (as text) in the order of :func:`ranked_groups`."""
    return groups[perturbation].astype(str).tolist()


def row_of(groups: pd.DataFrame, perturbation: str, name: str) -> pd.Series:
    """The perturbation table row of ``name`` (matched as text)."""
    hit = groups.loc[groups[perturbation].astype(str) == str(name)]
    if hit.empty:
        raise ValueError(f"{name!r} is not a scored perturbation")
    return hit.iloc[0]


def original_name(groups: pd.DataFrame, perturbation: str, name: str):
    """``name`` (text) as the value in the perturbation column (e.g. the integer 3 for ``"3"``)."""
    return row_of(groups, perturbation, name)[perturbation]


def queries_of(queries: pd.DataFrame, column: str, name: str) -> pd.DataFrame:
    """The per-query rows whose ``column`` reads ``name`` as text (one perturbation, or one label of the
    consistency step), renumbered from 0."""
    return queries.loc[queries[column].astype(str) == str(name)].reset_index(drop=True)


def selected_name(selection) -> str | None:
    """The perturbation of the first clicked point of a plotly selection (``{"points": [...]}``), from
    its ``customdata[0]``; None when nothing (or a point without a name) is selected."""
    try:
        points = selection["points"]
    except (KeyError, TypeError):
        return None
    for point in points or ():
        custom = point.get("customdata") if isinstance(point, dict) else None
        if isinstance(custom, (list, tuple)) and custom:
            return str(custom[0])
        if isinstance(custom, str):
            return custom
    return None


def null_histogram(null_maps, observed: float, bins: int = 40) -> pd.DataFrame:
    """Histogram of a permutation null of mAP: ``left``, ``right``, ``centre``, ``count``, ``share``.

    The bins span the null and the observed mAP (so its line is inside the frame); empty bins are kept.
    """
    null = np.asarray(null_maps, dtype=float)
    null = null[np.isfinite(null)]
    if null.size == 0:
        raise ValueError("the permutation null is empty")
    lo = min(float(null.min()), float(observed))
    hi = max(float(null.max()), float(observed))
    if hi - lo < 1e-9:
        lo, hi = lo - 0.005, hi + 0.005
    counts, edges = np.histogram(null, bins=int(bins), range=(lo, hi))
    return pd.DataFrame({"left": edges[:-1], "right": edges[1:], "centre": (edges[:-1] + edges[1:]) / 2,
                         "count": counts, "share": counts / null.size})


def null_summary(null_maps, observed: float) -> dict:
    """Size, mean and 95th percentile of the null, and how many of its values (``reached``, and as a
    share) are at or above the observed mAP."""
    null = np.asarray(null_maps, dtype=float)
    reached = count_reached(null, observed)
    return {"permutations": int(null.size), "mean": float(null.mean()), "q95": float(np.quantile(null, 0.95)),
            "reached": reached, "share_above": reached / null.size}
