"""Metrics of one ranking.

A ranking is a boolean vector ``relevant`` in rank order (top first). ``m`` is the number of relevant
items, ``n`` the number of the others. All ranks are 1-based. Lists of 0/1, booleans and numpy arrays
are accepted; anything else (2, 0.5, "yes") is rejected with a ValueError that says so.
"""

from __future__ import annotations

import numpy as np
import pandas as pd

from .limits import as_int

__all__ = [
    "as_relevance",
    "relevance_from_text",
    "average_precision",
    "precision_at_k",
    "recall_at_k",
    "r_precision",
    "average_precision_at_k",
    "f1_at_k",
    "ndcg_at_k",
    "auc",
    "reciprocal_rank",
    "ranking_table",
]


#: Relevance labels accepted as text in a table column read from a file (stripped, any case).
RELEVANCE_TEXT = {"1": True, "0": False, "1.0": True, "0.0": False, "true": True, "false": False}


def as_relevance(relevant, column: str | None = None) -> np.ndarray:
    """Check and convert relevance labels to a 1-D boolean array: the package's one label parser.

    Parameters
    ----------
    relevant : sequence of bool or of 0/1, or a table column
        Relevance labels, top-ranked item first.
    column : str, optional
        ``relevant`` is the table column of that name (e.g. read from a CSV file): besides booleans,
        every value is read as text and must be one of :data:`RELEVANCE_TEXT` (0/1, 0.0/1.0,
        true/false; spaces around and case ignored); the error names the column, how many rows are
        bad and the first one.

    Returns
    -------
    numpy.ndarray of bool

    Raises
    ------
    ValueError
        If the ranking is empty, not one-dimensional, or holds a label other than True/False/0/1.
    """
    if column is not None:
        return _relevance_column(relevant if isinstance(relevant, pd.Series) else pd.Series(relevant), column)
    arr = np.asarray(relevant)
    if arr.ndim != 1:
        raise ValueError(f"a ranking must be a flat list of labels, got an array of shape {arr.shape}")
    if arr.size == 0:
        raise ValueError("the ranking is empty: give at least one item")
    if arr.dtype == bool:
        return arr.copy()
    if arr.dtype.kind in "iuf":
        ok = (arr == 0) | (arr == 1)
        if not np.all(ok):
            bad = arr[~ok][0]
            raise ValueError(f"relevance labels must be 0/1 or True/False, found {bad!r}")
        return arr.astype(bool)
    raise ValueError(f"relevance labels must be 0/1 or True/False, got values of type {arr.dtype}")


def relevance_from_text(text: str, name: str = "labels") -> np.ndarray:
    """Relevance labels typed as one line of text (the command line's ``--relevant``), top-ranked first.

    The labels are separated by commas or spaces, and each must be one of :data:`RELEVANCE_TEXT` (0/1,
    0.0/1.0, true/false; case ignored), as in a table column (:func:`as_relevance`).

    Raises
    ------
    ValueError
        If the text holds no label, or a label outside :data:`RELEVANCE_TEXT` (the error names ``name``
        and the first such label, counting labels from 1).
    """
    parts = [p for p in str(text).replace(",", " ").split() if p]
    if not parts:
        raise ValueError(f"{name} is empty: give 0/1 labels in rank order, e.g. 0,1,0,1,1,0")
    for i, part in enumerate(parts, start=1):
        if part.lower() not in RELEVANCE_TEXT:
            raise ValueError(f"{name} takes 0/1 (or true/false) labels; label {i} is {part[:40]!r}")
    return np.array([RELEVANCE_TEXT[p.lower()] for p in parts], dtype=bool)


def _relevance_column(col: pd.Series, name: str) -> np.ndarray:
    if pd.api.types.is_bool_dtype(col):
        return col.to_numpy(dtype=bool)
    text = col.astype(str).str.strip().str.lower()
    bad = ~text.isin(list(RELEVANCE_TEXT))
    if bad.any():
        rows = np.flatnonzero(bad.to_numpy())
        raise ValueError(f"relevant column {name!r} must hold 0/1 or true/false; {rows.size} rows do not "
                         f"(e.g. {col.iloc[rows[0]]!r} in row {rows[0]})")
    return text.map(RELEVANCE_TEXT).to_numpy(dtype=bool)


def _need_relevant(rel: np.ndarray, metric: str) -> int:
    m = int(rel.sum())
    if m == 0:
        raise ValueError(f"{metric} needs at least one relevant item; mark an item as relevant")
    return m


def _check_k(k, size: int) -> int:
    return as_int(k, "k", minimum=1, maximum=size)


def average_precision(relevant) -> float:
    """Average Precision without interpolation.

    ``AP = (1/m) * sum_{i=1..m} i / r_i`` with ``r_i`` the rank of the i-th relevant item. Equals
    scikit-learn's ``average_precision_score`` when all scores are distinct.

    Raises
    ------
    ValueError
        If the ranking has no relevant item (m = 0).

    Examples
    --------
    Relevant items at ranks 1 and 3: (1/1 + 2/3) / 2.

    >>> from apnull import average_precision
    >>> round(average_precision([1, 0, 1, 0, 0]), 4)
    0.8333
    >>> average_precision([True, False, False])  # booleans and 0/1 labels alike
    1.0
    """
    rel = as_relevance(relevant)
    m = _need_relevant(rel, "Average Precision")
    ranks = np.flatnonzero(rel) + 1.0
    return float(np.mean(np.arange(1, m + 1) / ranks))


def precision_at_k(relevant, k) -> float:
    """Precision@k = (relevant items among the top k) / k, for 1 <= k <= len(relevant)."""
    rel = as_relevance(relevant)
    k = _check_k(k, rel.size)
    return float(rel[:k].sum() / k)


def recall_at_k(relevant, k) -> float:
    """Recall@k = (relevant items among the top k) / m; needs m >= 1 and 1 <= k <= len(relevant)."""
    rel = as_relevance(relevant)
    k = _check_k(k, rel.size)
    m = _need_relevant(rel, "Recall@k")
    return float(rel[:k].sum() / m)


def r_precision(relevant) -> float:
    """R-precision = Precision@m, m the number of relevant items (called "Precision@R" in the R notebooks on null thresholds).

    At k = m precision equals recall. Needs m >= 1.
    """
    rel = as_relevance(relevant)
    m = _need_relevant(rel, "R-precision")
    return float(rel[:m].sum() / m)


def average_precision_at_k(relevant, k) -> float:
    """AP@k = (1/min(m, k)) * sum_{i<=k} rel_i * Precision@i.

    Equals AP when k = len(relevant). Needs m >= 1 and 1 <= k <= len(relevant).
    """
    rel = as_relevance(relevant)
    k = _check_k(k, rel.size)
    m = _need_relevant(rel, "AP@k")
    top = rel[:k]
    prec = np.cumsum(top) / np.arange(1, k + 1)
    return float(np.sum(prec[top]) / min(m, k))


def f1_at_k(relevant, k) -> float:
    """F1@k = 2 P R / (P + R) with P = Precision@k and R = Recall@k; 0 when both are 0."""
    p = precision_at_k(relevant, k)
    r = recall_at_k(relevant, k)
    return 0.0 if p + r == 0 else float(2 * p * r / (p + r))


def ndcg_at_k(relevant, k) -> float:
    """NDCG@k with binary gain and discount 1/log2(i + 1).

    ``DCG@k = sum_{i<=k} rel_i / log2(i + 1)``, divided by the ideal DCG of min(m, k) relevant items
    on top. Needs m >= 1 and 1 <= k <= len(relevant).
    """
    rel = as_relevance(relevant)
    k = _check_k(k, rel.size)
    m = _need_relevant(rel, "NDCG@k")
    disc = 1.0 / np.log2(np.arange(2, k + 2))
    return float(np.sum(disc[rel[:k]]) / np.sum(disc[: min(m, k)]))


def auc(relevant) -> float:
    """Area under the ROC curve: the share of (relevant, non-relevant) pairs ranked in that order.

    Needs at least one relevant and one non-relevant item.
    """
    rel = as_relevance(relevant)
    m = _need_relevant(rel, "AUC")
    n = rel.size - m
    if n == 0:
        raise ValueError("AUC needs at least one non-relevant item; add or unmark an item")
    # for each relevant item, count the non-relevant items below it
    neg_below = n - np.cumsum(~rel)[rel]
    return float(neg_below.sum() / (m * n))


def reciprocal_rank(relevant) -> float:
    """Reciprocal rank = 1 / (rank of the first relevant item). Needs m >= 1."""
    rel = as_relevance(relevant)
    _need_relevant(rel, "Reciprocal rank")
    return float(1.0 / (np.argmax(rel) + 1))


def ranking_table(relevant, items=None) -> pd.DataFrame:
    """Precision and recall at every cut-off of a ranking.

    Parameters
    ----------
    relevant : sequence of bool or 0/1
        Relevance in rank order.
    items : sequence of str, optional
        Item names in the same order; defaults to "item 1", "item 2", ...

    Returns
    -------
    pandas.DataFrame
        Columns ``rank`` (1-based), ``item``, ``relevant``, ``precision`` (Precision@rank) and
        ``recall`` (Recall@rank; NaN for every row when the ranking has no relevant item).
    """
    rel = as_relevance(relevant)
    if items is None:
        items = [f"item {i}" for i in range(1, rel.size + 1)]
    items = [str(x) for x in items]
    if len(items) != rel.size:
        raise ValueError(f"got {len(items)} item names for {rel.size} relevance labels; give one name per item")
    hits = np.cumsum(rel)
    ranks = np.arange(1, rel.size + 1)
    m = int(rel.sum())
    recall = hits / m if m else np.full(rel.size, np.nan)
    return pd.DataFrame(
        {"rank": ranks, "item": items, "relevant": rel, "precision": hits / ranks, "recall": recall}
    )
