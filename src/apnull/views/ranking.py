"""The ranking editor's model: one ranking as rows of (item, relevant), its text form, presets,
reordering by typed positions, the step precision-recall curve whose area is AP, every metric of
the ranking at once, and where the ranking's AP falls in the null law of its size.

A *row* is a pair ``(item, relevant)``: a name (any text) and a bool. A ranking is a list of rows,
top first. The metrics themselves are in :mod:`apnull.metrics`; this module only arranges them.
"""

from __future__ import annotations

import urllib.parse
from dataclasses import dataclass
from typing import NamedTuple

import numpy as np
import pandas as pd

from .. import metrics
from ..limits import MAX_RANKING_ITEMS

__all__ = ["Row", "PR_EXAMPLE", "TUTORIAL_MODELS", "TUTORIAL_RELEVANT", "PR_PRESET", "TUTORIAL_PRESET",
           "PRESETS", "RENAMED_PRESETS", "as_rows", "check_rows", "relevance", "to_text", "from_text",
           "tutorial_ranking", "perfect", "worst", "shuffled", "apply_preset", "apply_positions",
           "PRCurve", "pr_curve_points", "METRICS", "metric_cards", "metric_values"]

Row = tuple[str, bool]

#: The precision-recall example: premises ranked x, a, y, b, c, z for a theorem; a, b, c are useful.
PR_EXAMPLE: tuple[Row, ...] = (("x", False), ("a", True), ("y", False), ("b", True), ("c", True), ("z", False))

#: The MAP tutorial's ground truth for query q1: documents 1 and 2 are relevant.
TUTORIAL_RELEVANT = (1, 2)
#: The MAP tutorial's model rankings for q1 (10 slots; 0 = a non-relevant document, 1 and 2 = the
#: relevant documents). The tutorial's model 0 ([0, 0, 0, 2, 0, ...]) never retrieves document 1, so
#: its AP depends on where document 1 would come after the list; it is left out.
TUTORIAL_MODELS: dict[str, tuple[int, ...]] = {
    "model 1": (0, 1, 0, 2, 0, 0, 0, 0, 0, 0),
    "model 2": (1, 2, 0, 0, 0, 0, 0, 0, 0, 0),
    "model 3": (0, 0, 0, 0, 0, 0, 0, 0, 1, 2),
}

#: The presets that replace the ranking by a worked example.
PR_PRESET = "Precision-recall example"
TUTORIAL_PRESET = "MAP tutorial models"
#: Preset names, in display order.
PRESETS = (PR_PRESET, TUTORIAL_PRESET, "Perfect", "Worst", "Random")
#: Earlier names of presets (links made before the renaming) -> their names now.
RENAMED_PRESETS = {"Seed 001 example": PR_PRESET, "Seed 002 models": TUTORIAL_PRESET}


# --- rows -------------------------------------------------------------------------------------
def as_rows(rows) -> list[Row]:
    """Rows as a list of ``(str, bool)`` pairs (accepts lists of lists, 0/1 labels, numpy bools).

    Raises
    ------
    ValueError
        If a row is not a pair or its label is not True/False/0/1.
    """
    out: list[Row] = []
    for i, row in enumerate(rows, start=1):
        try:
            item, rel = row
        except (TypeError, ValueError):
            raise ValueError(f"row {i} must be a pair (item, relevant), got {row!r}") from None
        if isinstance(rel, (bool, np.bool_)) or rel in (0, 1):
            out.append((str(item), bool(rel)))
        else:
            raise ValueError(f"row {i}: relevant must be True/False or 0/1, got {rel!r}")
    return out


def check_rows(rows) -> list[Row]:
    """:func:`as_rows` plus the editor's limit: at most ``MAX_RANKING_ITEMS`` rows (an empty list is allowed)."""
    rows = as_rows(rows)
    if len(rows) > MAX_RANKING_ITEMS:
        raise ValueError(f"the ranking has {len(rows):,} items; the editor takes at most {MAX_RANKING_ITEMS:,}: "
                         "remove some items")
    return rows


def relevance(rows) -> np.ndarray:
    """The boolean relevance vector of a ranking (top first)."""
    return np.array([bool(r) for _, r in rows], dtype=bool)


# --- text form (the URL parameter) ----------------------------------------------------------
_ESCAPES = (("%", "%25"), (",", "%2C"), (":", "%3A"))


def _escape(name: str) -> str:
    for ch, code in _ESCAPES:
        name = name.replace(ch, code)
    return name


def to_text(rows) -> str:
    """Compact text form ``item:label,item:label,...`` with labels 0/1, e.g. ``x:0,a:1,y:0``.

    In names, ``%``, ``,`` and ``:`` are written as ``%25``, ``%2C`` and ``%3A`` so that any name
    survives the round trip :func:`from_text` (``from_text(to_text(rows)) == rows`` up to
    surrounding blanks, which names lose). The empty ranking is the empty string.
    """
    return ",".join(f"{_escape(item)}:{int(rel)}" for item, rel in as_rows(rows))


def from_text(text: str) -> list[Row]:
    """Parse :func:`to_text`'s form. Also accepts bare labels ``0,1,0,1`` (items named item 1, ...).

    Blank entries (``x:0,,a:1`` or a trailing comma) are skipped; blanks around names and labels
    are ignored. The empty string is the empty ranking.

    Raises
    ------
    ValueError
        Naming the first entry that is not ``name:0`` or ``name:1``, or when there are more than
        ``MAX_RANKING_ITEMS`` entries.
    """
    entries = [e.strip() for e in str(text).split(",")]
    entries = [e for e in entries if e]
    if entries and all(":" not in e for e in entries) and all(e in ("0", "1") for e in entries):
        return check_rows([(f"item {i}", e == "1") for i, e in enumerate(entries, start=1)])
    rows: list[Row] = []
    for i, entry in enumerate(entries, start=1):
        name, sep, label = entry.rpartition(":")
        label = label.strip()
        if not sep or label not in ("0", "1"):
            raise ValueError(
                f"entry {i} ({entry!r}) must be an item name, a colon and 0 or 1 (relevant); write the "
                "ranking as item:label pairs separated by commas, e.g. x:0,a:1,y:0"
            )
        rows.append((urllib.parse.unquote(name.strip()), label == "1"))
    return check_rows(rows)


# --- presets --------------------------------------------------------------------------------
def tutorial_ranking(model: str = "model 1") -> list[Row]:
    """A model ranking of the MAP tutorial as rows: documents 1 and 2 relevant, the 0s named n1, n2, ...

    Raises
    ------
    ValueError
        For a model name not in ``TUTORIAL_MODELS``.
    """
    if model not in TUTORIAL_MODELS:
        raise ValueError(f"model must be one of {', '.join(TUTORIAL_MODELS)}, got {model!r}")
    rows: list[Row] = []
    others = 0
    for doc in TUTORIAL_MODELS[model]:
        if doc in TUTORIAL_RELEVANT:
            rows.append((str(doc), True))
        else:
            others += 1
            rows.append((f"n{others}", False))
    return rows


def perfect(rows) -> list[Row]:
    """The best order of the same items: relevant items first, each group in its current order."""
    rows = as_rows(rows)
    return [r for r in rows if r[1]] + [r for r in rows if not r[1]]


def worst(rows) -> list[Row]:
    """The worst order of the same items: relevant items last, each group in its current order."""
    rows = as_rows(rows)
    return [r for r in rows if not r[1]] + [r for r in rows if r[1]]


def shuffled(rows, seed: int) -> list[Row]:
    """The same items in a uniformly random order drawn with ``numpy.random.default_rng(seed)``."""
    rows = as_rows(rows)
    perm = np.random.default_rng(int(seed)).permutation(len(rows))
    return [rows[i] for i in perm]


def apply_preset(preset: str, rows, model: str = "model 1", seed: int = 0) -> list[Row]:
    """The ranking a preset gives: the precision-recall example, a MAP tutorial model, or a reordering
    of ``rows``.

    "Perfect", "Worst" and "Random" reorder the current ``rows``; the two example presets replace them.
    An earlier preset name (``RENAMED_PRESETS``) means its preset now.
    """
    preset = RENAMED_PRESETS.get(preset, preset)
    if preset == PR_PRESET:
        return list(PR_EXAMPLE)
    if preset == TUTORIAL_PRESET:
        return tutorial_ranking(model)
    if preset == "Perfect":
        return perfect(rows)
    if preset == "Worst":
        return worst(rows)
    if preset == "Random":
        return shuffled(rows, seed)
    raise ValueError(f"preset must be one of {', '.join(PRESETS)}, got {preset!r}")


# --- reordering by typed positions ----------------------------------------------------------
def _missing(x) -> bool:
    """None, NaN, pandas.NA or NaT (an empty editor cell)."""
    return x is None or bool(np.ndim(x) == 0 and pd.isna(x))


def apply_positions(items, relevant, positions, base_positions) -> list[Row]:
    """Turn the rows of a position/item/relevant editor into a ranking.

    The rows come in the editor's order (deleted rows gone, added rows last). A row *moves* when
    its typed ``position`` differs from ``base_positions`` (the position it had when the editor
    was built; missing for an added row): it lands exactly at that position, clamped to
    1..len(rows), and the rows that did not move keep their relative order around it. Several
    moved rows are placed in increasing order of (typed position, row order); a clash pushes the
    later one down a place (up, at the bottom end). So the result is deterministic, and typing 5
    into row 2 of 6 puts that item at rank 5.

    Missing names become ``"item <rank>"``; a missing relevance is False.

    Parameters
    ----------
    items, relevant, positions, base_positions : sequences of equal length
        Missing values may be None or NaN.

    Returns
    -------
    list of (str, bool)
    """
    n = len(items)
    if not (len(relevant) == len(positions) == len(base_positions) == n):
        raise ValueError("items, relevant, positions and base_positions must have the same length")
    moved: list[tuple[int, int]] = []  # (typed position, row)
    stay: list[int] = []
    for i in range(n):
        pos, base = positions[i], base_positions[i]
        if _missing(pos) or (not _missing(base) and int(pos) == int(base)):
            stay.append(i)
        else:
            moved.append((min(max(int(pos), 1), n), i))
    moved.sort()
    slots: list[int] = []
    for pos, _ in moved:
        slots.append(max(pos, slots[-1] + 1) if slots else pos)
    for j in range(len(slots) - 1, -1, -1):  # push back inside 1..n from the bottom
        slots[j] = min(slots[j], n - (len(slots) - 1 - j))
    order: list[int | None] = [None] * n
    for (_, i), s in zip(moved, slots):
        order[s - 1] = i
    rest = iter(stay)
    order = [next(rest) if o is None else o for o in order]
    rows: list[Row] = []
    for rank, i in enumerate(order, start=1):
        name = items[i]
        name = "" if _missing(name) else str(name).strip()
        rel = relevant[i]
        rows.append((name or f"item {rank}", False if _missing(rel) else bool(rel)))
    return rows


# --- the step precision-recall curve --------------------------------------------------------
@dataclass(frozen=True)
class PRCurve:
    """Precision and recall at every rank, and the step curve whose area is AP.

    Attributes
    ----------
    rank, item, relevant, hits, precision, recall : arrays, one entry per rank
        ``precision[k-1] = hits/k`` and ``recall[k-1] = hits/m`` at cut-off k.
    m, n : int
    step_x, step_y : arrays of length 2m
        The outline ``(0, P_1), (1/m, P_1), (1/m, P_2), (2/m, P_2), ..., (1, P_m)``, P_i being the
        precision at the i-th relevant item: on the recall interval ((i-1)/m, i/m] the curve is
        P_i. Filled down to 0 it is m rectangles of width 1/m, so its area (e.g.
        ``numpy.trapezoid(step_y, step_x)``) is ``(1/m) * sum_i P_i = AP`` exactly.
    ap : float
    """

    rank: np.ndarray
    item: tuple[str, ...]
    relevant: np.ndarray
    hits: np.ndarray
    precision: np.ndarray
    recall: np.ndarray
    m: int
    n: int
    step_x: np.ndarray
    step_y: np.ndarray
    ap: float


def pr_curve_points(relevant, items=None) -> PRCurve:
    """The precision-recall points of a ranking and its AP step curve (no interpolation).

    AP is the area under precision as a function of recall when recall grows in steps of 1/m
    (one step per relevant item) and the precision on a step is the precision at the relevant
    item that completes it. The non-relevant items add no recall, so they add no area; they only
    lower the precision of the relevant items below them.

    Raises
    ------
    ValueError
        For an empty ranking or one with no relevant item (recall is undefined).
    """
    rel = metrics.as_relevance(relevant)
    m = int(rel.sum())
    if m == 0:
        raise ValueError("the precision-recall curve needs at least one relevant item; mark an item as relevant")
    N = rel.size
    if items is None:
        items = [f"item {i}" for i in range(1, N + 1)]
    items = tuple(str(x) for x in items)
    if len(items) != N:
        raise ValueError(f"got {len(items)} item names for {N} relevance labels; give one name per item")
    rank = np.arange(1, N + 1)
    hits = np.cumsum(rel)
    precision = hits / rank
    recall = hits / m
    p_at_hits = precision[rel]
    edges = np.arange(m + 1) / m
    step_x = np.repeat(edges, 2)[1:-1]
    step_y = np.repeat(p_at_hits, 2)
    ap = float(np.mean(p_at_hits))
    return PRCurve(rank=rank, item=items, relevant=rel, hits=hits, precision=precision, recall=recall,
                   m=m, n=N - m, step_x=step_x, step_y=step_y, ap=ap)


# --- all metrics at once --------------------------------------------------------------------
#: key -> (label, uses k, definition shown as help).
METRICS: dict[str, tuple[str, bool, str]] = {
    "ap": ("AP", False, "Average Precision: the mean of the precision at each relevant item, "
                        "(1/m) Σ i / r_i; the area under the step PR curve."),
    "r_precision": ("R-precision", False, "Precision@m, m the number of relevant items; there "
                                          "precision equals recall."),
    "auc": ("AUC", False, "Share of (relevant, non-relevant) pairs with the relevant item ranked higher."),
    "rr": ("RR", False, "Reciprocal rank: 1 / (rank of the first relevant item)."),
    "precision_at_k": ("P@k", True, "Precision@k: relevant items in the top k, divided by k."),
    "recall_at_k": ("R@k", True, "Recall@k: relevant items in the top k, divided by m."),
    "f1_at_k": ("F1@k", True, "Harmonic mean of P@k and R@k (0 when both are 0)."),
    "ap_at_k": ("AP@k", True, "(1/min(m, k)) Σ_{i ≤ k} rel_i · P@i: AP of the top k, normalised by "
                              "the most relevant items the top k could hold."),
    "ndcg_at_k": ("NDCG@k", True, "Σ_{i ≤ k} rel_i / log2(i + 1), divided by its best possible "
                                  "value for this m."),
}

_FUNCS = {
    "ap": lambda r, k: metrics.average_precision(r),
    "r_precision": lambda r, k: metrics.r_precision(r),
    "auc": lambda r, k: metrics.auc(r),
    "rr": lambda r, k: metrics.reciprocal_rank(r),
    "precision_at_k": metrics.precision_at_k,
    "recall_at_k": metrics.recall_at_k,
    "f1_at_k": metrics.f1_at_k,
    "ap_at_k": metrics.average_precision_at_k,
    "ndcg_at_k": metrics.ndcg_at_k,
}


class MetricCard(NamedTuple):
    key: str
    label: str
    value: float | None
    help: str
    reason: str | None  # why the value is undefined (None when it is defined)


def metric_cards(relevant, k) -> list[MetricCard]:
    """Every metric of ``METRICS`` for one ranking and cut-off k, in ``METRICS`` order.

    A metric that is undefined here (no relevant item, AUC with no non-relevant item, k outside
    1..len(ranking)) has ``value=None`` and ``reason`` holding the library's message, which says
    what to change. The values are those of :mod:`apnull.metrics`.
    """
    rel = metrics.as_relevance(relevant)
    cards = []
    for key, (label, _, text) in METRICS.items():
        try:
            value, reason = float(_FUNCS[key](rel, k)), None
        except ValueError as exc:
            value, reason = None, str(exc)
        cards.append(MetricCard(key, label, value, text, reason))
    return cards


def metric_values(relevant, k) -> dict[str, float | None]:
    """``{key: value}`` of :func:`metric_cards` (None where undefined)."""
    return {c.key: c.value for c in metric_cards(relevant, k)}
