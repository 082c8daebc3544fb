"""Positives that must differ from the query in some columns (copairs's ``pos_diffby``).

``score_profiles(..., positives_differ_by=["Metadata_well"])``: for query q of perturbation t, a
replicate of t that shares q's value in *any* of the given columns (e.g. the same well position on
another plate) is left out of q's ranking entirely, neither positive nor negative, as copairs does
with ``pos_diffby`` (a positive pair must differ in all of those columns). The other replicates are
q's positives: m_q counts only them, and the per-query p-value is that of the exact AP law of
(m_q, n_q). A query left with no positive has no AP: it is left out of the query table and of t's
mAP (the mean over the queries that keep a positive), and a perturbation none of whose queries keeps
a positive is skipped with a reason.

The permutation null applies the same rule to every relabelled screen: the pool members drawn to
carry t's label (replicates or controls) are compared by their own values in those columns, so a
drawn member sharing a value with a drawn query is left out of that query's ranking; a draw in which
no query keeps a positive counts as mAP 0. Values in these columns are compared as they are (no
text conversion); a missing value in a scored row is an error.
"""

from __future__ import annotations

import numpy as np
import pandas as pd

from ...limits import check_column
from .missing import rows_text

__all__ = ["check_differ_by", "differ_codes", "kept_positives", "query_positives", "drop_without_positives"]


def check_differ_by(table, columns, reserved) -> list:
    """The positives_differ_by columns as a list (``[]`` for None), each checked.

    Raises ValueError for a missing column (close names suggested), a column given twice, or one of
    ``reserved`` (the perturbation and stratum columns).
    """
    if columns is None:
        return []
    cols = [columns] if isinstance(columns, str) else list(columns)
    if len(set(map(str, cols))) < len(cols):
        raise ValueError(f"positives_differ_by lists a column twice: {cols!r}")
    for c in cols:
        check_column(table, c, "positives_differ_by")
        if c in reserved:
            raise ValueError(f"positives_differ_by column {c!r} is a perturbation or stratum column; "
                             "give a column such as the well position")
    return cols


def differ_codes(table, columns, used) -> np.ndarray | None:
    """(len(used), C) int64 codes of the rows ``used`` in each column (None when no column).

    Raises ValueError when a column is empty in one of those rows.
    """
    if not columns:
        return None
    out = np.empty((len(used), len(columns)), dtype=np.int64)
    for j, c in enumerate(columns):
        values = table[c].iloc[used]
        empty = values.isna().to_numpy()
        if empty.any():
            raise ValueError(f"positives_differ_by column {c!r} is empty in {int(empty.sum())} scored rows "
                             f"({rows_text(np.asarray(used)[empty])}); fill it or leave those rows out")
        out[:, j] = pd.factorize(values, sort=True)[0]
    return out


def kept_positives(rep_codes: np.ndarray) -> np.ndarray:
    """m_q of each replicate: the other replicates that differ from it in every column."""
    share = (rep_codes[:, None, :] == rep_codes[None, :, :]).any(axis=2)
    return (~share).sum(axis=1).astype(np.int64)


def query_positives(codes, reps: list) -> np.ndarray:
    """m of each query of a perturbation (replicates ``reps``, concatenated): k - 1 without codes."""
    rows = np.concatenate(reps)
    if codes is None:
        return np.full(rows.size, rows.size - 1, dtype=np.int64)
    return kept_positives(codes[rows])


def drop_without_positives(perts: list, codes) -> tuple[list, list]:
    """(perturbations with a query keeping a positive, (name, reason) of the others)."""
    if codes is None:
        return perts, []
    kept, skipped = [], []
    for p in perts:
        if kept_positives(codes[np.concatenate(p.reps)]).max() > 0:
            kept.append(p)
        else:
            skipped.append((p.name, "no positives left: every replicate shares a positives_differ_by value "
                                    "with all the others"))
    return kept, skipped
