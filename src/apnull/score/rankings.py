"""``score_rankings``: per-query AP p-values of a long ranking table (query, item, score, relevant)."""

from __future__ import annotations

import numbers

import numpy as np
import pandas as pd

from . import _kernels
from ._prepare import check_column
from .fdr import benjamini_hochberg
from .nulls import LawCache

__all__ = ["score_rankings", "RANKING_COLUMNS"]

RANKING_COLUMNS = ("query", "item", "score", "relevant")


def _relevance(col: pd.Series, name: str) -> np.ndarray:
    if pd.api.types.is_bool_dtype(col):
        return col.to_numpy(dtype=bool)
    text = col.astype(str).str.strip().str.lower()
    mapping = {"1": True, "0": False, "1.0": True, "0.0": False, "true": True, "false": False}
    bad = ~text.isin(list(mapping))
    if bad.any():
        rows = np.flatnonzero(bad.to_numpy())
        raise ValueError(f"relevant column {name!r} must hold 0/1 or true/false; {rows.size} rows do not "
                         f"(e.g. {col.iloc[rows[0]]!r} in row {rows[0]})")
    return text.map(mapping).to_numpy(dtype=bool)


def score_rankings(table, query="query", item="item", score="score", relevant="relevant",
                   seed=0) -> pd.DataFrame:
    """Tie-aware AP, Precision@R, exact-law p-value and BH q-value of every query of a ranking table.

    Parameters
    ----------
    table : DataFrame
        Long format, one row per (query, item): ``score`` (higher = ranked higher; ties are scored by
        the expected AP over their orders, see :func:`apnull.score.tie_aware_ap`) and ``relevant``
        (bool, 0/1 or true/false).
    query, item, score, relevant : str
        Column names (``item`` must exist; it is only used to spot repeated (query, item) pairs).
    seed : int
        Seed of the Monte Carlo laws the auto rule picks for very large (m, n).

    Returns
    -------
    DataFrame
        One row per query with at least one relevant item, in order of first appearance:
        [<query column>, m, n, ap, precision_at_r, p_value, q_value]. p_value = P(AP >= ap) under the
        law of (m, n) (``apnull.null_distribution``, auto method); q_value = Benjamini-Hochberg across
        queries. ``df.attrs["skipped"]`` lists (query, reason) for queries without a relevant item and
        ``df.attrs["warnings"]`` the warnings (repeated pairs).

    Raises
    ------
    ValueError
        Missing columns (with close names), non-numeric or NaN scores, relevance values that are not
        0/1, no query with a relevant item.
    """
    if not isinstance(table, pd.DataFrame) or table.shape[0] == 0:
        raise ValueError("table must be a non-empty pandas DataFrame")
    if isinstance(seed, bool) or not isinstance(seed, numbers.Integral) or seed < 0:
        raise ValueError(f"seed must be a whole number >= 0, got {seed!r}")
    qcol = check_column(table, query, "query")
    icol = check_column(table, item, "item")
    scol = check_column(table, score, "score")
    rcol = check_column(table, relevant, "relevant")
    scores = pd.to_numeric(table[scol], errors="coerce").to_numpy(dtype=float)
    bad = ~np.isfinite(scores)
    if bad.any():
        rows = np.flatnonzero(bad)
        raise ValueError(f"score column {scol!r} has {rows.size} rows that are not finite numbers "
                         f"(first: row {rows[0]}, value {table[scol].iloc[rows[0]]!r})")
    rel = _relevance(table[rcol], rcol)
    warnings = []
    dup = table.duplicated([qcol, icol]).to_numpy()
    if dup.any():
        warnings.append(f"{int(dup.sum())} repeated (query, item) pairs (first: row {np.flatnonzero(dup)[0]}) "
                        "were kept as separate items.")
    codes, uniques = pd.factorize(table[qcol], use_na_sentinel=False)
    order = np.lexsort((-scores, codes))
    codes_s, scores_s, rel_s = codes[order], scores[order], rel[order]
    bounds = np.flatnonzero(np.diff(codes_s)) + 1
    starts = np.concatenate([[0], bounds])
    ends = np.concatenate([bounds, [codes_s.size]])
    laws = LawCache(seed)
    out, skipped = [], []
    for a, b in zip(starts, ends):
        name = uniques[codes_s[a]]
        m = int(rel_s[a:b].sum())
        n = int(b - a - m)
        if m == 0:
            skipped.append((name, "no relevant item: AP is undefined"))
            continue
        ap, pr = _kernels.tie_aware_from_sorted(scores_s[a:b], rel_s[a:b])
        out.append((codes_s[a], name, m, n, float(ap), float(pr), float(laws.law(m, n).pvalue(ap))))
    if not out:
        raise ValueError(f"no query has a relevant item in column {rcol!r}; nothing to score")
    out.sort(key=lambda r: r[0])
    df = pd.DataFrame([r[1:] for r in out], columns=[qcol, "m", "n", "ap", "precision_at_r", "p_value"])
    df["q_value"] = benjamini_hochberg(df["p_value"].to_numpy())
    if skipped:
        warnings.append(f"{len(skipped)} queries without a relevant item were skipped.")
    df.attrs["skipped"] = skipped
    df.attrs["warnings"] = warnings
    return df
