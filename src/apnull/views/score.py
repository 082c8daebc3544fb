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
from ..score import NEGATIVES, NORMALIZE, p_text
from ..score.nulls.registry import MAP_NULLS

#: The page's permutation limit, :data:`apnull.limits.SCORE_PAGE_MAX_PERMUTATIONS` (the library's is
#: ``SCORE_MAX_PERMUTATIONS``); kept under this name for the page.
MAX_PERMUTATIONS = SCORE_PAGE_MAX_PERMUTATIONS

#: Longest time limit of an adaptive run on the page (seconds).
MAX_PAGE_BUDGET = 120.0
#: The page's default time limit of an adaptive run (seconds): the refinement rounds stop there.
PAGE_BUDGET = 10.0
#: How several perturbation columns' values are joined into one name on the page.
NAME_SEP = " / "
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
#: The nulls that draw B times (label permutations; copairs's random AP rows): p >= 1 / (1 + B). Read from
#: the null registry (its ``draws`` flag), so a null registered there is offered the page's draws box.
USES_B = tuple(name for name, null in MAP_NULLS.items() if null.draws)

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

    perturbation: tuple       #: the perturbation column(s): one, or several (e.g. compound and dose)
    control: tuple
    stratum: str | None
    features: str | None
    similarity: str
    null: str
    permutations: int | str   #: B, or "auto" (adaptive permutations)
    seed: int
    nan: str = "error"        #: missing values: "error", "drop-features" or "drop-rows"
    negatives: str = "controls"
    differ_by: tuple = ()     #: positives_differ_by columns
    budget: float | None = None  #: seconds the adaptive refinement may take (permutations "auto" only)
    normalize: str = "none"   #: per-plate normalisation: "none", "controls" or "plate"

    @property
    def column(self):
        """The perturbation argument of the library: a column name, or the list of columns."""
        return self.perturbation[0] if len(self.perturbation) == 1 else list(self.perturbation)

    def _control(self):
        if not self.control:
            return None
        return list(self.control) if len(self.control) > 1 else self.control[0]

    def kwargs(self) -> dict:
        """Keyword arguments of :func:`apnull.score.score_profiles`."""
        out = dict(self.plan_kwargs(), null=self.null, seed=self.seed)
        if self.null in USES_B:
            out["permutations"] = self.permutations
        if self.budget is not None and self.permutations == "auto":
            out["budget"] = self.budget
        return out

    def plan_kwargs(self) -> dict:
        """Keyword arguments of :func:`apnull.score.screen_plan` (the table-checking part of the settings)."""
        return dict(perturbation=self.column, control=self._control(), stratum=self.stratum,
                    features=self.features, similarity=self.similarity, nan=self.nan,
                    positives_differ_by=list(self.differ_by) or None, negatives=self.negatives,
                    normalize=self.normalize)

    def plan_key(self) -> tuple:
        """The part of :meth:`key` the plan depends on."""
        return tuple(str(v) for k, v in zip(self.__dataclass_fields__, astuple(self))
                     if k not in ("null", "permutations", "seed", "budget"))

    def key(self) -> tuple:
        return tuple(str(x) for x in astuple(self))


def make_settings(table: pd.DataFrame, perturbation, control_text: str, stratum: str | None,
                  features: str | None, similarity: str, null: str, permutations, seed: int, *,
                  more_columns=(), nan: str = "error", negatives: str = "controls", differ_by=(),
                  budget: float | None = None, normalize: str = "none") -> Settings:
    """Check the page's inputs against the table and bundle them. ValueError says what to change.

    ``more_columns``: further perturbation columns (each combination with ``perturbation`` is a
    perturbation); ``control_text`` may be empty with ``negatives="others"`` (a screen without controls).
    """
    columns = tuple(dict.fromkeys([str(perturbation)] + [str(c) for c in more_columns or ()]))
    for c in columns[1:]:
        if c not in table.columns:
            raise ValueError(f"perturbation column {_short(c)} is not in the table")
    if negatives not in NEGATIVES:
        raise ValueError(f"negatives must be {' or '.join(NEGATIVES)}, got {_short(negatives)}")
    if normalize not in NORMALIZE:
        raise ValueError(f"normalize must be one of {', '.join(NORMALIZE)}, got {_short(normalize)}")
    if negatives == "others" and not str(control_text or "").strip():
        control = []
        if perturbation not in table.columns:
            raise ValueError(f"column {_short(perturbation)} is not in the table")
    else:
        control = resolve_controls(table, perturbation, control_text)
    if stratum in (None, "", NO_STRATUM):
        stratum = None
    elif stratum not in table.columns:
        raise ValueError(f"stratum column {_short(stratum)} is not in the table; pick one of: "
                         f"{_names(label_columns(table))} or {NO_STRATUM}")
    else:
        check_stratum(stratum, perturbation)
        if stratum in columns:
            raise ValueError(f"the stratum {stratum!r} is also a perturbation column: pick another")
    features = (features or "").strip() or None
    if features is not None:
        check_regex(features, "features", max_length=MAX_FEATURES_TEXT)
    if null in USES_B:
        permutations = check_permutations(permutations, null, SCORE_PAGE_MAX_PERMUTATIONS, " on this page")
    else:
        permutations = 0  # not used: keep it out of the cache key
    seed = check_seed(seed, allow_none=False)
    differ = tuple(str(c) for c in differ_by or ())
    clash = [c for c in differ if c in columns or c == stratum]
    if clash:
        raise ValueError(f"{clash[0]!r} is a perturbation or stratum column: the pair rule needs another column "
                         "(e.g. the well position)")
    if budget is not None and permutations == "auto":
        budget = float(budget)
        if not 0 < budget <= MAX_PAGE_BUDGET:
            raise ValueError(f"the time limit must lie in (0, {MAX_PAGE_BUDGET:g}] seconds on this page, "
                             f"got {budget:g}")
    else:
        budget = None
    return Settings(columns, tuple(control), stratum, features, similarity, null, permutations, seed,
                    str(nan), str(negatives), differ, budget, str(normalize))


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
    if "stage1_significant" not in out:  # hierarchical_bh's own decisions are kept
        out["significant"] = out["q_value"] <= fdr
    out = out.sort_values(["p_value", "q_value", "mAP"], ascending=[True, True, False], kind="stable")
    return out.reset_index(drop=True)


def volcano_data(groups: pd.DataFrame, perturbation: str, fdr: float) -> pd.DataFrame:
    """One row per perturbation with a p-value: ``name`` (text), ``n_replicates``, ``mAP``, ``p_value``,
    ``q_value``, ``neg_log10_p`` (p floored at :data:`P_FLOOR`), ``significant`` (q <= fdr, or the
    two-stage FDR's own decisions), ``at_floor`` (``p_value_bound``: no null value reached the mAP, so p is a bound)."""
    ok = groups["p_value"].notna() & groups["mAP"].notna()
    g = groups.loc[ok]
    p = g["p_value"].to_numpy(dtype=float)
    return pd.DataFrame({
        "name": name_text(g, perturbation).to_numpy(),
        "n_replicates": g["n_replicates"].to_numpy(),
        "mAP": g["mAP"].to_numpy(dtype=float),
        "p_value": p,
        "q_value": g["q_value"].to_numpy(dtype=float),
        "neg_log10_p": -np.log10(np.maximum(p, P_FLOOR)),
        "significant": g["significant"].to_numpy(dtype=bool) if "stage1_significant" in g  # two-stage FDR
        else (g["q_value"] <= fdr).to_numpy(),
        "at_floor": (g["p_value_bound"].to_numpy(dtype=bool) if "p_value_bound" in g
                     else np.zeros(len(g), dtype=bool)),
    })


def p_cutoff(data: pd.DataFrame) -> float | None:
    """The largest p-value among the significant rows (perturbations, or labels of the consistency step):
    with BH, every p at or below it is significant, so a line at -log10 of it separates the two colours.
    None if nothing is significant."""
    sig = data.loc[data["significant"], "p_value"]
    return float(sig.max()) if len(sig) else None


def name_text(table: pd.DataFrame, perturbation) -> pd.Series:
    """Each row's perturbation as text: the column's value, or for several columns (a list) their values
    joined by :data:`NAME_SEP` ("cmpd_1 / 10")."""
    if isinstance(perturbation, (list, tuple)):
        parts = [table[c].astype(str) for c in perturbation]
        out = parts[0]
        for part in parts[1:]:
            out = out + NAME_SEP + part
        return out
    return table[perturbation].astype(str)


def names(groups: pd.DataFrame, perturbation) -> list[str]:
    """The perturbations (as text, see :func:`name_text`) in the order of :func:`ranked_groups`."""
    return name_text(groups, perturbation).tolist()


def row_of(groups: pd.DataFrame, perturbation, name: str) -> pd.Series:
    """The perturbation table row of ``name`` (matched as text, see :func:`name_text`)."""
    hit = groups.loc[name_text(groups, perturbation) == str(name)]
    if hit.empty:
        raise ValueError(f"{name!r} is not a scored perturbation")
    return hit.iloc[0]


def original_name(groups: pd.DataFrame, perturbation, name: str):
    """``name`` (text) as the value in the perturbation column (e.g. the integer 3 for ``"3"``); for several
    columns the tuple of their values (what :meth:`apnull.score.ScoreResult.null_maps` takes)."""
    row = row_of(groups, perturbation, name)
    if isinstance(perturbation, (list, tuple)):
        return tuple(row[c] for c in perturbation)
    return row[perturbation]


def queries_of(queries: pd.DataFrame, column, name: str) -> pd.DataFrame:
    """The per-query rows whose ``column`` (or columns, see :func:`name_text`) reads ``name`` as text (one
    perturbation, or one label of the consistency step), renumbered from 0."""
    return queries.loc[name_text(queries, column) == str(name)].reset_index(drop=True)


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
