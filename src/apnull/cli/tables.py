"""Result tables on the command line: as JSON records and as aligned text (writing them:
:func:`apnull.score.write_table`)."""

from __future__ import annotations

import math

import numpy as np

from ..score import p_text
from ..score.table.names import count_text

__all__ = ["records", "format_table", "printed_table", "PRINTED_MOST", "HEAD_ROWS"]

#: Columns printed to 4 decimals.
AP_COLUMNS = ("mAP", "mAP_normalized", "ap", "precision_at_r", "mean_average_precision", "average_precision")
#: Columns printed by :func:`apnull.score.p_text` (never a bare 0).
P_COLUMNS = ("p_value", "q_value", "corrected_p_value")
#: A table written to a file is printed whole up to this many rows; past it, its first :data:`HEAD_ROWS` rows
#: (a JUMP screen's 116,000 perturbations were 116,000 lines on the terminal, 2.4 s of formatting).
PRINTED_MOST = 100
HEAD_ROWS = 25


def records(df) -> list:
    """Rows of ``df`` as JSON-ready dicts: numpy numbers as Python numbers, NaN as None."""
    rows = df.to_dict(orient="records")
    for row in rows:
        for key, val in row.items():
            if isinstance(val, np.integer):
                row[key] = int(val)
            elif isinstance(val, (float, np.floating)):
                row[key] = None if math.isnan(val) else float(val)
            elif isinstance(val, np.bool_):
                row[key] = bool(val)
            elif not isinstance(val, (int, str, bool)) and val is not None:
                row[key] = str(val)
    return rows


def format_table(df) -> str:
    """``df`` as aligned text: the :data:`AP_COLUMNS` to 4 decimals, the :data:`P_COLUMNS` by
    :func:`apnull.score.p_text` (``%.3g``; 0 as below the smallest double); NaN as ``nan``."""
    shown = df.copy()
    for col in AP_COLUMNS:
        if col in shown:
            shown[col] = shown[col].map(lambda v: "nan" if v != v else f"{v:.4f}")
    for col in P_COLUMNS:
        if col in shown:
            shown[col] = shown[col].map(p_text)
    return shown.to_string(index=False)


def printed_table(df, written_to=None) -> str:
    """:func:`format_table` of ``df``; when ``written_to`` (the file the whole table was written to) is given
    and ``df`` has more than :data:`PRINTED_MOST` rows, of its first :data:`HEAD_ROWS` rows, with a line
    saying how many more there are and where."""
    if written_to is None or len(df) <= PRINTED_MOST:
        return format_table(df)
    rest = count_text(len(df) - HEAD_ROWS, "more rows")
    return format_table(df.iloc[:HEAD_ROWS]) + f"\n... and {rest}: all {len(df):,} in {written_to}"
