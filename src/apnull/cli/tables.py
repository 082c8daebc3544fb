"""Result tables on the command line: writing them (CSV or Parquet), as JSON records, as text."""

from __future__ import annotations

import math
import os
import tempfile

import numpy as np

__all__ = ["write_table", "records", "format_table"]


def write_table(df, path) -> None:
    """Write ``df`` to ``path`` atomically: Parquet for ``.parquet``/``.pq``, else CSV (no index).

    The table goes to a temporary file in the same folder, renamed over ``path`` once complete, so an
    interrupted run never leaves half a file.
    """
    folder = os.path.dirname(os.path.abspath(path))
    fd, tmp = tempfile.mkstemp(dir=folder, prefix=".apnull-", suffix=os.path.splitext(path)[1])
    os.close(fd)
    try:
        if path.lower().endswith((".parquet", ".pq")):
            df.to_parquet(tmp, index=False)
        else:
            df.to_csv(tmp, index=False)
        os.replace(tmp, path)
    finally:
        if os.path.exists(tmp):
            os.remove(tmp)


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
    """``df`` as aligned text: mAP/ap to 4 decimals, p- and q-values to 3 significant digits."""
    shown = df.copy()
    for col in ("mAP", "ap", "precision_at_r"):
        if col in shown:
            shown[col] = shown[col].map(lambda v: "nan" if v != v else f"{v:.4f}")
    for col in ("p_value", "q_value"):
        if col in shown:
            shown[col] = shown[col].map(lambda v: "nan" if v != v else f"{v:.3g}")
    return shown.to_string(index=False)
