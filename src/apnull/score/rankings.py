"""``score_rankings``: per-query AP p-values of a long ranking table (query, item, score, relevant)."""

from __future__ import annotations

from typing import NamedTuple

import numpy as np
import pandas as pd

from ..limits import check_column, check_seed
from ..metrics import as_relevance
from .kernels.ranking import tie_aware_from_sorted
from .table.names import count_text
from ..fdr import benjamini_hochberg
from .nulls.laws import LawCache
from .table.missing import rows_text

__all__ = ["score_rankings", "RANKING_COLUMNS"]

RANKING_COLUMNS = ("query", "item", "score", "relevant")


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
    cols, seed = _check_inputs(table, query, item, score, relevant, seed)
    ranking = _read_ranking(table, cols)
    rows, skipped = _score_queries(ranking, seed)
    if not rows:
        raise ValueError(f"no query has a relevant item in column {cols.relevant!r}; nothing to score")
    df = pd.DataFrame([r[1:] for r in rows], columns=[cols.query, "m", "n", "ap", "precision_at_r", "p_value"])
    df["q_value"] = benjamini_hochberg(df["p_value"].to_numpy())
    warnings = list(ranking.warnings)
    if skipped:
        was = "was" if len(skipped) == 1 else "were"
        warnings.append(f"{count_text(len(skipped), 'queries')} without a relevant item {was} skipped.")
    df.attrs["skipped"] = skipped
    df.attrs["warnings"] = warnings
    return df


# -- the stages of score_rankings ----------------------------------------------------------------------

class RankingColumns(NamedTuple):
    """The checked column names of a ranking table."""

    query: str
    item: str
    score: str
    relevant: str


class Ranking(NamedTuple):
    """A ranking table read into arrays, rows sorted by query (first appearance) then score, descending."""

    codes: np.ndarray         #: (N,) query code of each row (order of first appearance)
    names: object             #: the query values, indexed by code
    scores: np.ndarray        #: (N,) float scores
    relevant: np.ndarray      #: (N,) bool labels
    starts: np.ndarray        #: first sorted row of each query
    ends: np.ndarray          #: one past its last sorted row
    warnings: list            #: repeated (query, item) pairs


def _check_inputs(table, query, item, score, relevant, seed) -> tuple:
    """Check the table, its four columns and the seed with :mod:`apnull.limits`.

    Returns
    -------
    (RankingColumns, int)
        The column names and the seed.
    """
    if not isinstance(table, pd.DataFrame) or table.shape[0] == 0:
        raise ValueError("table must be a non-empty pandas DataFrame")
    seed = check_seed(seed, allow_none=False)
    cols = RankingColumns(check_column(table, query, "query"), check_column(table, item, "item"),
                          check_column(table, score, "score"), check_column(table, relevant, "relevant"))
    return cols, seed


def _read_ranking(table: pd.DataFrame, cols: RankingColumns) -> Ranking:
    """Read the scores (finite numbers) and labels (:func:`apnull.metrics.as_relevance`) and sort.

    Returns
    -------
    Ranking
        ``codes``, ``names``, ``scores``, ``relevant``, ``starts``, ``ends``, ``warnings``.
    """
    scores = pd.to_numeric(table[cols.score], errors="coerce").to_numpy(dtype=float)
    bad = ~np.isfinite(scores)
    if bad.any():
        rows = np.flatnonzero(bad)
        raise ValueError(f"score column {cols.score!r} has {rows.size} rows that are not finite numbers "
                         f"(first: {rows_text(rows[:1])}, value {table[cols.score].iloc[rows[0]]!r})")
    rel = as_relevance(table[cols.relevant], column=cols.relevant)
    warnings = []
    dup = table.duplicated([cols.query, cols.item]).to_numpy()
    if dup.any():
        warnings.append(f"{int(dup.sum())} repeated (query, item) pairs (first: {rows_text(np.flatnonzero(dup)[:1])}) "
                        "were kept as separate items.")
    codes, uniques = pd.factorize(table[cols.query], use_na_sentinel=False)
    order = np.lexsort((-scores, codes))
    codes_s, scores_s, rel_s = codes[order], scores[order], rel[order]
    bounds = np.flatnonzero(np.diff(codes_s)) + 1
    starts = np.concatenate([[0], bounds])
    ends = np.concatenate([bounds, [codes_s.size]])
    return Ranking(codes_s, uniques, scores_s, rel_s, starts, ends, warnings)


def _score_queries(ranking: Ranking, seed: int) -> tuple:
    """Tie-aware AP, Precision@R and exact-law p-value of every query with a relevant item.

    Returns
    -------
    (rows, skipped)
        rows: (code, query, m, n, ap, precision_at_r, p_value) per scored query, by code (order of
        first appearance); skipped: (query, reason) of the queries without a relevant item.
    """
    laws = LawCache(seed)
    out, skipped = [], []
    for a, b in zip(ranking.starts, ranking.ends):
        name = ranking.names[ranking.codes[a]]
        rel = ranking.relevant[a:b]
        m = int(rel.sum())
        n = int(b - a - m)
        if m == 0:
            skipped.append((name, "no relevant item: AP is undefined"))
            continue
        ap, pr = tie_aware_from_sorted(ranking.scores[a:b], rel)
        out.append((ranking.codes[a], name, m, n, float(ap), float(pr), laws.query_pvalue(m, n, float(ap))))
    out.sort(key=lambda r: r[0])
    return out, skipped
