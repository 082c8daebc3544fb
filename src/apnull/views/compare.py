"""The data behind the "Compare two pipelines" page: the columns two tables share, the guessed well key,
the settings checked, the scatter's points, the summary cards and the method text.

Thin layers over :func:`apnull.score.score_compare` (which does the comparison); no streamlit, no
plotting (the figure: :mod:`apnull.plots.compare`).
"""

from __future__ import annotations

from dataclasses import astuple, dataclass
from itertools import combinations

import pandas as pd

from ..limits import SCORE_PAGE_MAX_PERMUTATIONS, check_alpha, check_permutations, check_regex, check_seed
from ..score import NORMALIZE, summary_line
from ..score.table.normalize import raw_warning
from .score import (MAX_FEATURES_TEXT, NO_STRATUM, guess_control, guess_perturbation, guess_stratum, label_columns,
                    p_shown, resolve_controls)

__all__ = ["METHOD_TEXT", "NO_KEY", "KEY_HINTS", "CompareSettings", "shared_labels", "guess_key", "pair_defaults",
           "raw_sides", "page_warnings",
           "make_settings", "scatter_data", "cards", "shown_groups", "verdict"]

#: The second key box's choice when one column identifies a well.
NO_KEY = "(none)"
#: Substrings (lower case) of column names that suggest a well identifier, in order of preference.
KEY_HINTS = ("well", "site", "position", "barcode", "sample", "id")

#: How the comparison is made (shown in an expander below the inputs).
METHOD_TEXT = (
    "Both tables describe the **same wells**, matched by the key columns (e.g. plate and well), in any row "
    "order; their feature columns may differ. Each table is scored exactly as **Score your data** scores it "
    "(same settings, same seed), so every perturbation gets an **mAP** from A and one from B; **delta** = "
    "mAP of B minus mAP of A.\n\n"
    "Is the average delta real? Perturbations on one plate share its controls, and a pipeline that handles "
    "a plate badly lowers all of them together, so their deltas are not independent. The test therefore "
    "swaps A and B on **whole plates** (plates linked by a perturbation with replicates on several are "
    "swapped together: one *unit*). If both pipelines are equally good on every unit, swapping them "
    "changes nothing but the signs of that unit's deltas; the **p-value** is the share of all 2^U sign "
    "patterns (or of many random ones when there are more than 17 units) whose mean delta is at least as "
    "far from 0 as the observed one. Flipping each perturbation on its own called about one in seven "
    "equally good pairs different (14% of 800 pairs of real profiles); flipping plates, 5.6%. The **95% "
    "interval** holds every shift the same test does not reject. With fewer than 6 units no p-value can "
    "reach 0.05; with one unit there is no test at all.\n\n"
    "The **retrieved** counts are the perturbations with q-value at most the FDR level on each side; their "
    "paired test swaps the plates' p-values between the sides and counts Benjamini-Hochberg again.")


def _short(value, limit: int = 40) -> str:
    text = str(value)
    return repr(text) if len(text) <= limit else f"{text[:limit]!r}...({len(text):,} characters)"


def shared_labels(a: pd.DataFrame, b: pd.DataFrame) -> list[str]:
    """Label columns (``Metadata_*`` and text columns) present in both tables, in A's order."""
    in_b = set(label_columns(b))
    return [c for c in label_columns(a) if c in in_b]


def _unique(table: pd.DataFrame, cols) -> bool:
    frame = table[list(cols)]
    return not frame.isna().any(axis=None) and not frame.astype(str).duplicated().any()


def guess_key(a: pd.DataFrame, b: pd.DataFrame, columns: list[str]) -> list[str]:
    """The key a new pair of tables starts with: a well-like column alone, or with a plate-like column,
    or any one or two shared label columns, whichever first identifies every row of both tables; else
    the well-like (or first) column (the check then names the repeated keys)."""
    hinted = [c for h in KEY_HINTS for c in columns if h in c.lower()]
    hinted = list(dict.fromkeys(hinted))
    plate = guess_stratum(columns)
    tries = [[c] for c in hinted]
    tries += [[plate, c] for c in hinted if plate != NO_STRATUM and c != plate]
    tries += [[c] for c in columns] + [list(p) for p in combinations(columns, 2)][:200]
    for cols in tries:
        if _unique(a, cols) and _unique(b, cols):
            return cols
    return [(hinted or columns or [NO_KEY])[0]]


def pair_defaults(a: pd.DataFrame, b: pd.DataFrame) -> dict:
    """The page's inputs as a new pair of tables shows them (URL keys): key, perturbation, control,
    stratum, no feature regex."""
    columns = shared_labels(a, b)
    key = guess_key(a, b, columns)
    pert = guess_perturbation([c for c in columns if c not in key]) or (columns[0] if columns else "")
    control = guess_control(a[pert]) if pert in a.columns else ""
    stratum = guess_stratum([c for c in columns if c != pert], pert)
    return {"cp_key": key[0], "cp_key2": key[1] if len(key) > 1 else NO_KEY, "cp_pert": pert,
            "cp_control": control or "", "cp_stratum": stratum, "cp_features_a": "", "cp_features_b": ""}


@dataclass(frozen=True)
class CompareSettings:
    """What a comparison depends on (besides the two files): hashable, so it can key a cache."""

    key: tuple
    perturbation: str
    control: tuple
    stratum: str | None
    features_a: str | None
    features_b: str | None
    similarity: str
    permutations: int
    seed: int
    alpha: float
    normalize: str = "none"   #: per-plate normalisation of each table: "none", "controls" or "plate"

    def kwargs(self) -> dict:
        """Keyword arguments of :func:`apnull.score.score_compare`."""
        return dict(key=list(self.key), perturbation=self.perturbation, control=list(self.control),
                    stratum=self.stratum, features_a=self.features_a, features_b=self.features_b,
                    similarity=self.similarity, permutations=self.permutations, seed=self.seed, alpha=self.alpha,
                    normalize=self.normalize)

    def cache_key(self) -> tuple:
        return tuple(str(x) for x in astuple(self))


def make_settings(a: pd.DataFrame, b: pd.DataFrame, key: str, key2: str, perturbation: str, control_text: str,
                  stratum: str, features_a: str, features_b: str, similarity: str, permutations, seed,
                  alpha, normalize: str = "none") -> CompareSettings:
    """Check the page's inputs against the two tables and bundle them. ValueError says what to change."""
    columns = shared_labels(a, b)
    keys = [k for k in (key, key2) if k not in (None, "", NO_KEY)]
    if not keys or any(k not in columns for k in keys):
        raise ValueError(f"choose the key column(s) among the label columns both tables have: "
                         f"{', '.join(map(repr, columns[:12])) or '(none: add a well column to both)'}")
    if len(set(keys)) < len(keys):
        raise ValueError(f"the two key columns are the same ({keys[0]!r}); choose another second column or (none)")
    control = resolve_controls(a, perturbation, control_text)
    stratum = None if stratum in (None, "", NO_STRATUM) else stratum
    if stratum is not None and stratum not in columns:
        raise ValueError(f"stratum column {_short(stratum)} is not a label column of both tables; pick one of: "
                         f"{', '.join(map(repr, columns[:12]))} or {NO_STRATUM}")
    regex = []
    for name, text in (("features of A", features_a), ("features of B", features_b)):
        text = (text or "").strip() or None
        if text is not None:
            check_regex(text, name, max_length=MAX_FEATURES_TEXT)
        regex.append(text)
    permutations = check_permutations(permutations, "permutation", SCORE_PAGE_MAX_PERMUTATIONS, " on this page")
    if normalize not in NORMALIZE:
        raise ValueError(f"normalize must be one of {', '.join(NORMALIZE)}, got {_short(normalize)}")
    return CompareSettings(tuple(keys), str(perturbation), tuple(control), stratum, regex[0], regex[1], similarity,
                           permutations, check_seed(seed, allow_none=False), check_alpha(alpha), str(normalize))


def raw_sides(result) -> str:
    """The page's words for the tables whose features look un-normalised (:attr:`CompareResult.looks_raw`):
    "" when none does, else e.g. "table A: the features look un-normalised: ..."."""
    return "; ".join(f"table {side}: {why}" for side, why in result.looks_raw.items())


def page_warnings(result) -> list:
    """The result's warnings without the raw-feature ones (the page says those with its fix)."""
    raw = {f"{side}: {w}" for side, why in result.looks_raw.items() for w in raw_warning(why)}
    return [w for w in result.warnings if w not in raw]


def scatter_data(groups: pd.DataFrame, perturbation: str) -> pd.DataFrame:
    """One row per compared perturbation: ``name`` (text), ``mAP_a``, ``mAP_b``, ``delta``, ``retrieved``
    (one of :data:`apnull.score.RETRIEVED`), ``unit``, ``q_value_a``, ``q_value_b``."""
    return pd.DataFrame({"name": groups[perturbation].astype(str).to_numpy(),
                         **{c: groups[c].to_numpy() for c in ("mAP_a", "mAP_b", "delta", "retrieved", "unit",
                                                              "q_value_a", "q_value_b")}})


def verdict(summary: dict) -> tuple[str, str]:
    """The answer as (headline, the numbers behind it): :func:`apnull.score.summary_line` cut at its
    first colon, e.g. ("A retrieves better than B", "mean delta (B - A) = -0.0935, ...")."""
    head, _, rest = summary_line(summary).partition(": ")
    return head[:1].upper() + head[1:], rest


def _signed(x: float) -> str:
    return "n/a" if x != x else f"{x:+.4f}"


def cards(summary: dict) -> list:
    """The summary cards: (label, value, help) of the mean delta and interval, the p-value, the units and
    the retrieved counts."""
    p, rp = summary["p_value"], summary["retrieved_p_value"]
    interval = ("none (too few units)" if summary["ci_low"] != summary["ci_low"] else
                f"{_signed(summary['ci_low'])} to {_signed(summary['ci_high'])}")
    how = (f"all {summary['flips']:,} sign flips" if summary["exact"] else f"{summary['flips']:,} random sign flips")
    return [
        ("Mean delta (B − A)", _signed(summary["mean_delta"]),
         f"Mean over {summary['n_perturbations']:,} perturbations of mAP(B) − mAP(A). 95% interval: {interval}."),
        ("p-value (A = B)", "n/a" if p != p else f"{p:.3g}",
         "Two-sided: how often swapping A and B on whole plates gives a mean delta as far from 0 "
         f"({how}). " + (summary["note"] or "")),
        ("Units swapped", f"{summary['units']:,}",
         f"Plates swapped together between A and B (one unit); the smallest p-value {summary['units']:,} units "
         f"allow is {summary['smallest_p']:.3g}."),
        (f"Retrieved at q ≤ {summary['alpha']:g}: A / B", f"{summary['retrieved_a']:,} / {summary['retrieved_b']:,}",
         (f"A only: {summary['a_only']:,}, B only: {summary['b_only']:,}, both: {summary['both']:,}. Paired test "
          "of the difference (p-values swapped on whole plates, Benjamini-Hochberg counted again): p = "
          + ("n/a" if rp != rp else f"{rp:.3g}") + ".")),
    ]


def shown_groups(groups: pd.DataFrame) -> pd.DataFrame:
    """The per-perturbation table as the page shows it: a p or q column holding an exact 0 as text
    (:func:`apnull.views.score.p_shown`), the rest as numbers."""
    zero = [c for c in ("p_value_a", "q_value_a", "p_value_b", "q_value_b") if bool((groups[c] == 0).any())]
    if not zero:
        return groups
    out = groups.copy()
    for c in zero:
        out[c] = p_shown(pd.DataFrame({"p_value": out[c].to_numpy()}))["p_value"].to_numpy()
    return out
