"""The data behind the "Compare two pipelines" page: the columns two tables share, the guessed well key,
the settings checked, the scatter's points, the summary cards and the method text.

Thin layers over :func:`apnull.score.score_compare` (which does the comparison); no streamlit, no
plotting (the figure: :mod:`apnull.plots.compare`).
"""

from __future__ import annotations

import math
from dataclasses import astuple, dataclass
from itertools import combinations

import pandas as pd

from ..limits import SCORE_PAGE_MAX_PERMUTATIONS, check_alpha, check_permutations, check_regex, check_seed
from ..score import NORMALIZE, summary_line
from ..score.compare import TESTS, which_test_of
from ..score.table.missing import check_nan_mode
from ..score.table.normalize import raw_warning
from .score_report import page_words as score_page_words
from .score import (MAX_FEATURES_TEXT, MAX_PAGE_BUDGET, NO_STRATUM, guess_control, guess_perturbation, guess_stratum,
                    label_columns, p_shown, resolve_controls)

__all__ = ["METHOD_TEXT", "NO_KEY", "PAGE_DEFAULTS", "KEY_HINTS", "CompareSettings", "shared_labels", "guess_key", "pair_defaults",
           "raw_sides", "compare_words", "compare_warnings", "make_compare_settings", "scatter_data", "cards", "shown_groups", "verdict", "verdict_words", "retrieved_text",
           "plan_text", "COMMAND_DRAWS", "DRAWS_DIFFERENCE",
           "DRAWS_LIMIT", "which_test_of"]

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
    "**The question** the test answers is about *plates like these*: would plates drawn as these were, "
    "handled by the two pipelines, retrieve replicates equally well on average? How well each pipeline "
    "happened to handle each plate counts as chance, not as a difference between the pipelines.\n\n"
    "Is the average delta real? Perturbations on one plate share its controls, and a pipeline that handles "
    "a plate badly lowers all of them together, so their deltas are not independent. The test therefore "
    "swaps A and B on **whole plates** (plates linked by a perturbation with replicates on several are "
    "swapped together: one *unit*). If both pipelines are equally good on every unit, swapping them "
    "changes nothing but the signs of that unit's deltas; the **p-value** is the share of all 2^U sign "
    "patterns (or of many random ones when there are more than 17 units) whose mean delta is at least as "
    "far from 0 as the observed one. Flipping each perturbation on its own called about one in seven "
    "equally good pairs different (14% of 800 pairs of real profiles); flipping plates, 5.6%. The **95% "
    "interval** holds every shift the same test does not reject. With fewer than 6 units no p-value can "
    "reach 0.05.\n\n"
    "**Crossed screens** (every compound with replicates on several plates, as in JUMP) link all plates into "
    "one unit, so no swap of whole units exists. With at least 10 plates the page then uses a **t test whose "
    "variance is clustered by plate**: any two perturbations sharing a plate count as dependent, and the "
    "degrees of freedom are the plates minus one. On JUMP-shaped pairs of real profiles (240 compounds x 4 "
    "replicates on 32 plates, plate quality varying by pipeline) it called equally good pipelines different "
    "in 5.8% of 450 pairs at 0.05 (docs/compare.md); flipping each perturbation alone did in 35% to 48%.\n\n"
    "The **retrieved** counts are the perturbations with q-value at most the FDR level on each side; their "
    "paired test swaps the plates' p-values between the sides and counts Benjamini-Hochberg again (on a "
    "crossed screen there is no such swap, and no test of the counts).")

#: What the command line draws by default (``apnull compare``'s ``--permutations auto``).
COMMAND_DRAWS = "auto"
#: Shown under a fixed B: how the page's default differs from the command line's.
DRAWS_DIFFERENCE = (
    "**Differs from the command line:** `apnull compare` draws adaptively by default (`--permutations auto`), "
    "as many shuffles as each decision needs. With a fixed B no p-value goes below 1/(1 + B), so fewer "
    "perturbations may pass Benjamini-Hochberg here, and the retrieved counts can be lower than the command "
    "line's. The mAPs, the deltas and the test of the mean delta are the same. Turn on **More draws where "
    "needed** for the command line's draws (slower).")
#: Shown with adaptive draws: how the page's time limit differs from the command line.
DRAWS_LIMIT = ("Adaptive draws, as `apnull compare` makes them by default; the command line has no time limit, so a "
               "decision this limit leaves open can differ there.")


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


#: The page's inputs that do not depend on the tables, as a new visitor first sees them (the page's widgets
#: and the server's warm-up read them here, so the warmed comparison is the one the page asks for).
PAGE_DEFAULTS = {"similarity": "cosine", "seed": 0, "alpha": 0.05, "permutations": 999}


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
    nan: str = "error"            #: the Missing values choice (score_compare's ``nan``)
    budget: float | None = None   #: seconds the adaptive draws may take (permutations "auto" only)

    def kwargs(self) -> dict:
        """Keyword arguments of :func:`apnull.score.score_compare`."""
        return dict(key=list(self.key), perturbation=self.perturbation, control=list(self.control),
                    stratum=self.stratum, features_a=self.features_a, features_b=self.features_b,
                    similarity=self.similarity, permutations=self.permutations, seed=self.seed, alpha=self.alpha,
                    normalize=self.normalize, nan=self.nan, budget=self.budget)

    def cache_key(self) -> tuple:
        return tuple(str(x) for x in astuple(self))


def make_compare_settings(a: pd.DataFrame, b: pd.DataFrame, key: str, key2: str, perturbation: str, control_text: str,
                  stratum: str, features_a: str, features_b: str, similarity: str, permutations, seed,
                  alpha, normalize: str = "none", nan: str = "error", budget: float | None = None) -> CompareSettings:
    """Check the page's inputs against the two tables and bundle them. ValueError says what to change.
    ``permutations`` is B or "auto" (adaptive, the command line's default; ``budget`` then caps its
    time, as on the score page)."""
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
    if permutations != "auto":
        permutations = check_permutations(permutations, "permutation", SCORE_PAGE_MAX_PERMUTATIONS, " on this page")
        budget = None
    elif budget is not None:
        budget = float(budget)
        if not 0 < budget <= MAX_PAGE_BUDGET:
            raise ValueError(f"the time limit must lie in (0, {MAX_PAGE_BUDGET:g}] seconds on this page, got {budget:g}")
    check_nan_mode(nan)
    if normalize not in NORMALIZE:
        raise ValueError(f"normalize must be one of {', '.join(NORMALIZE)}, got {_short(normalize)}")
    return CompareSettings(tuple(keys), str(perturbation), tuple(control), stratum, regex[0], regex[1], similarity,
                           permutations, check_seed(seed, allow_none=False), check_alpha(alpha), str(normalize),
                           str(nan), budget)


def raw_sides(result) -> str:
    """The page's words for the tables whose features look un-normalised (:attr:`CompareResult.looks_raw`):
    "" when none does, else e.g. "table A: the features look un-normalised: ..."."""
    return "; ".join(f"table {side}: {why}" for side, why in result.looks_raw.items())


def compare_words(message: str) -> str:
    """A library message in the comparison page's words (:func:`.score_report.page_words`, with the
    features box of the table the message is about)."""
    side = "B" if message.lstrip().startswith("table B") else "A"
    return score_page_words(message, features=f"Features of {side} (regex)")


def compare_warnings(result) -> list:
    """The result's warnings in the page's words, without the raw-feature ones (the page says those with
    its fix)."""
    raw = {f"{side}: {w}" for side, why in result.looks_raw.items() for w in raw_warning(why)}
    return [compare_words(w) for w in result.warnings if w not in raw]


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


def _how(summary: dict) -> str:
    """The test of the mean delta, in words."""
    if summary.get("test") == TESTS[1]:
        return (f"a t test whose variance counts perturbations sharing a plate as dependent "
                f"({summary['plates']:,} plates, {summary['plates'] - 1:,} degrees of freedom)")
    if summary.get("test") == TESTS[2] or summary["p_value"] != summary["p_value"]:
        return "no test"
    return (f"all {summary['flips']:,} sign flips of {summary['units']:,} units" if summary["exact"] else
            f"{summary['flips']:,} random sign flips of {summary['units']:,} units")


def cards(summary: dict) -> list:
    """The summary cards: (label, value, help) of the mean delta and interval, the p-value, the test and
    the retrieved counts."""
    p = summary["p_value"]
    interval = ("none" if summary["ci_low"] != summary["ci_low"] else
                f"{_signed(summary['ci_low'])} to {_signed(summary['ci_high'])}")
    crossed = summary.get("test") == TESTS[1]
    test_card = (("Test", "plate-clustered t", f"{summary['plates']:,} plates linked into {summary['units']:,} "
                  f"unit(s) by perturbations on several plates: {_how(summary)}.") if crossed else
                 ("Units swapped", f"{summary['units']:,}",
                  f"Plates swapped together between A and B (one unit); the smallest p-value {summary['units']:,} "
                  f"units allow is {summary['smallest_p']:.3g}."))
    return [
        ("Mean delta (B − A)", _signed(summary["mean_delta"]),
         f"Mean over {summary['n_perturbations']:,} perturbations of mAP(B) − mAP(A). 95% interval: {interval}."),
        ("p-value (A = B)", "n/a" if p != p else f"{p:.3g}",
         f"Two-sided, {_how(summary)}. " + (summary["note"] or "")),
        test_card,
        (f"Retrieved at q ≤ {summary['alpha']:g}: A / B", f"{summary['retrieved_a']:,} / {summary['retrieved_b']:,}",
         retrieved_text(summary)),
    ]


def retrieved_text(summary: dict) -> str:
    """The retrieved counts and their paired test, in words (shown on the page, not only in a tooltip)."""
    rp = summary["retrieved_p_value"]
    counts = (f"Retrieved at q ≤ {summary['alpha']:g}: **A {summary['retrieved_a']:,}**, **B "
              f"{summary['retrieved_b']:,}** of {summary['n_perturbations']:,} perturbations (both "
              f"{summary['both']:,}, A only {summary['a_only']:,}, B only {summary['b_only']:,}, neither "
              f"{summary['neither']:,}).")
    if rp != rp:
        why = summary.get("retrieved_note") or summary.get("note") or "too few units"
        return f"{counts} No paired test of the counts: {why}."
    diff = summary["retrieved_b"] - summary["retrieved_a"]
    word = ("no difference shown" if rp > 0.05 else
            ("B retrieves more" if diff > 0 else "A retrieves more"))
    return (f"{counts} Paired test of the difference (p-values swapped between the sides on whole units, "
            f"Benjamini-Hochberg counted again): p = {rp:.3g}, {word}.")


def verdict_words(summary: dict, groups: pd.DataFrame) -> tuple[str, str, str]:
    """(headline, the answer, its size in context), in words: e.g. ("B retrieves replicates better than A",
    "mean mAP 0.61 with B against 0.52 with A: B − A = +0.090, 95% interval ..., p = ... (test)",
    "a difference of 0.090 in mAP is 0.45 of the spread (SD 0.20) of the perturbations' mAP under A; 70%
    of perturbations score higher with B").
    """
    d, p = summary["mean_delta"], summary["p_value"]
    mean_a, mean_b = float(groups["mAP_a"].mean()), float(groups["mAP_b"].mean())
    if p != p:
        head = "No test possible"
    elif p <= 0.05:
        head = "B retrieves replicates better than A" if d > 0 else "A retrieves replicates better than B"
    else:
        head = "No difference shown between A and B"
    ci = ("" if summary["ci_low"] != summary["ci_low"] else
          f", 95% interval {summary['ci_low']:+.3f} to {summary['ci_high']:+.3f}")
    ptext = "no p-value" if p != p else f"p = {p:.3g}"
    answer = (f"Mean mAP {mean_b:.3f} with B against {mean_a:.3f} with A: B − A = {d:+.3f}{ci}; {ptext} "
              f"({_how(summary)}).")
    if p != p:
        answer += f" {summary['note'][:1].upper()}{summary['note'][1:]}." if summary["note"] else ""
    sd = float(groups["mAP_a"].std(ddof=1)) if len(groups) > 1 else math.nan
    higher = float((groups["delta"] > 0).mean())
    lower = float((groups["delta"] < 0).mean())
    if sd == sd and sd > 0:
        size = (f"A difference of {abs(d):.3f} in mAP is {abs(d) / sd:.2f} times the spread of the "
                f"perturbations' mAP under A (SD {sd:.3f}): "
                + ("small" if abs(d) / sd < 0.2 else "moderate" if abs(d) / sd < 0.5 else "large")
                + f" beside how much perturbations differ. {higher:.0%} of perturbations score higher with B, "
                  f"{lower:.0%} lower.")
    else:
        size = f"{higher:.0%} of perturbations score higher with B, {lower:.0%} lower."
    return head, answer, size


def plan_text(test: str, why: str) -> str:
    """What the page says before Compare is pressed: which test the comparison will get, and why."""
    if test == TESTS[2]:
        return f"**No test will be possible:** {why}. The mAPs and deltas are still shown."
    if test == TESTS[1]:
        return f"**Test: plate-clustered t** (a crossed screen): {why}."
    return f"**Test: sign flips of whole units** (plates that hold their own perturbations): {why}."


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
