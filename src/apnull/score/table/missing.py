"""Missing feature values in a profile table: refuse them, or drop the features or rows that hold them.

``score_profiles(..., nan=...)`` applies one of :data:`NAN_MODES` to the feature values of the rows it
would score (rows with a perturbation value), before any similarity is computed:

- ``"error"`` (default): any NaN or infinite value is a ValueError naming the columns and rows;
- ``"drop-features"``: every feature column holding a NaN or infinite value in those rows is left out;
- ``"drop-rows"``: every row holding a NaN or infinite value in a feature column is left out.

Infinite values are treated as missing (no similarity is defined with them). What was dropped is
reported in a warning and in the run's settings (``dropped_features``: column names,
``dropped_rows``: 0-based input rows).
"""

from __future__ import annotations

from typing import NamedTuple

import numpy as np

from ...limits import check_choice
from .names import count_text

__all__ = ["NAN_MODES", "MissingValuesError", "Dropped", "apply_nan_mode", "bad_cells", "check_nan_mode", "rows_text", "ROW_WORDS"]

NAN_MODES = ("error", "drop-features", "drop-rows")


class MissingValuesError(ValueError):
    """NaN or infinite feature values with ``nan="error"``. A ValueError whose message names the cells and
    the library's and command line's options; ``where`` is the part naming the cells alone (columns,
    counts, first rows), so a front end can say what to change in its own words."""

    def __init__(self, message: str, where: str):
        super().__init__(message)
        self.where = where


class Dropped(NamedTuple):
    """What :func:`apply_nan_mode` kept and dropped."""

    values: np.ndarray        #: (rows kept, features kept) float64 feature values
    used: np.ndarray          #: 0-based input row of each kept row
    features: list            #: the kept feature columns
    dropped_features: list    #: feature columns left out (``"drop-features"``)
    dropped_rows: list        #: 0-based input rows left out (``"drop-rows"``)
    warnings: list            #: one sentence per kind of drop


def check_nan_mode(nan) -> str:
    """``nan`` if it is one of :data:`NAN_MODES`, else ValueError."""
    check_choice(nan, NAN_MODES, "nan")
    return nan


#: How every message counts rows: as the file has them, the first row under the header being 1.
ROW_WORDS = "counting from 1 under the header"


def rows_text(rows, limit=5) -> str:
    """0-based data rows named as people count them in the file: "data row 30" or "data rows 30, 31
    and 4 more", with :data:`ROW_WORDS` (the first row under the header is data row 1)."""
    rows = [int(r) + 1 for r in rows]
    text = ", ".join(f"{r:,}" for r in rows[:limit])
    more = f" and {len(rows) - limit:,} more" if len(rows) > limit else ""
    return f"data row{'s' if len(rows) > 1 else ''} {text}{more} ({ROW_WORDS})"


#: Cells checked at a time by :func:`bad_cells` (a 1 MB mask, not one of the whole table).
CHECK_CELLS = 1 << 20


def bad_cells(values: np.ndarray) -> tuple:
    """((rows,) bool: the row holds a NaN or infinite value, (features,) int64: how many rows do in each
    column), a block of rows at a time."""
    n, d = values.shape
    rows, count = np.zeros(n, dtype=bool), np.zeros(d, dtype=np.int64)
    step = max(1, CHECK_CELLS // max(d, 1))
    for a in range(0, n, step):
        bad = ~np.isfinite(values[a:a + step])
        rows[a:a + step] = bad.any(axis=1)
        count += bad.sum(axis=0)
    return rows, count


def apply_nan_mode(values: np.ndarray, used: np.ndarray, features: list, nan: str) -> Dropped:
    """Apply the missing-value mode ``nan`` to ``values`` (rows ``used`` of the table, columns ``features``).

    Raises
    ------
    ValueError
        ``nan="error"`` and a value is NaN or infinite (columns, counts and first rows named);
        ``"drop-features"`` leaves no feature column; ``"drop-rows"`` leaves no row.
    """
    bad_rows, bad_count = bad_cells(values)
    if not bad_rows.any():
        return Dropped(values, used, list(features), [], [], [])
    cols = np.flatnonzero(bad_count)
    rows = np.flatnonzero(bad_rows)
    if nan == "error":
        parts = [f"{str(features[c])!r} ({count_text(int(bad_count[c]), 'rows')})" for c in cols[:3]]
        more = f" and {cols.size - 3} more columns" if cols.size > 3 else ""
        where = (f"feature columns with NaN or infinite values: {', '.join(parts)}{more} "
                 f"(first: {rows_text(used[rows])})")
        raise MissingValuesError(f"{where}; drop or impute those rows, leave the columns out with features=, or "
                                 "pass nan='drop-features' or nan='drop-rows' (--nan on the command line)", where)
    if nan == "drop-features":
        keep = np.ones(len(features), dtype=bool)
        keep[cols] = False
        if not keep.any():
            raise ValueError("every feature column holds a NaN or infinite value, so nan='drop-features' "
                             "leaves none; use nan='drop-rows' or impute the values")
        gone = [str(features[c]) for c in cols]
        shown = ", ".join(repr(c) for c in gone[:5]) + (f" and {len(gone) - 5} more" if len(gone) > 5 else "")
        return Dropped(np.ascontiguousarray(values[:, keep]), used, [f for f, k in zip(features, keep) if k],
                       gone, [], [f"{len(gone)} feature columns with NaN or infinite values were left out "
                                  f"(nan='drop-features'): {shown}."])
    keep = np.ones(len(used), dtype=bool)
    keep[rows] = False
    if not keep.any():
        raise ValueError("every row holds a NaN or infinite feature value, so nan='drop-rows' leaves none; "
                         "use nan='drop-features' or impute the values")
    gone = [int(r) for r in used[rows]]
    kept = values.where_rows(keep) if hasattr(values, "where_rows") else values[keep]  # a table's held rows: no copy
    return Dropped(kept, used[keep], list(features), [], gone,
                   [f"{count_text(len(gone), 'rows')} with NaN or infinite feature values "
                    f"{'was' if len(gone) == 1 else 'were'} left out (nan='drop-rows'): {rows_text(gone)}."])
