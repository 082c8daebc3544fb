"""Two tables of the same wells (two pipelines), matched by key columns in any row order.

:func:`match_wells` pairs each row of table A with the row of table B holding the same values in the
key columns (e.g. plate and well), compared as text exactly as written (:func:`.io.labels_as_text`:
``1`` and ``01`` are two wells). Every problem is named, never matched silently:

- a blank key cell (the row cannot be matched);
- a key held by several rows of one table;
- a well in one table only;
- a well whose labels (perturbation, stratum) differ between A and B.

``unmatched="error"`` (default): the first kind of problem found is a ValueError naming the first few
wells and saying what to change. ``unmatched="drop"``: those wells are left out of both tables and
named in ``left_out`` (one row per input row: which table, its key, the reason) and in a warning.
"""

from __future__ import annotations

from typing import NamedTuple

import numpy as np
import pandas as pd

from ...limits import check_choice, check_column
from .names import output_name
from .io import labels_as_text
from .missing import rows_text

__all__ = ["UNMATCHED", "Matched", "match_wells", "key_text", "SHOWN", "LEFT_OUT", "left_out_columns", "set_aside",
           "check_relabelled_controls", "has_blank_labels", "drop_missing_wells"]

#: What to do with wells that do not pair up: stop with an error, or leave them out and name them.
UNMATCHED = ("error", "drop")
#: Wells named in an error or warning.
SHOWN = 5
#: The left-out table's own columns, around the key columns.
LEFT_OUT = ("table", "reason")


def left_out_columns(key) -> list:
    """The left-out table's header: ``table``, the key columns (a key named ``table`` or ``reason``
    carried as ``table_input``, as :func:`..results.outputs.output_name` renames), ``reason``."""
    return [LEFT_OUT[0], *(output_name(k, frozenset(LEFT_OUT)) for k in key), LEFT_OUT[1]]


class Matched(NamedTuple):
    """The paired tables (rows kept, each in its own input order) and what was left out."""

    a: pd.DataFrame          #: rows of A kept (A itself when nothing was left out)
    b: pd.DataFrame          #: rows of B kept (B itself when nothing was left out)
    left_out: pd.DataFrame   #: [table, <key columns>, reason]: every input row left out
    warnings: list           #: one sentence per kind of problem left out
    rows_a: np.ndarray       #: 0-based position in A of each row of ``a``
    rows_b: np.ndarray       #: 0-based position in B of each row of ``b``
    relabelled: dict = {}    #: {(column, value in A, value in B): wells} of the labels that differ


def key_text(values) -> str:
    """A well's key as people read it: ``'A01'``, or ``('plate_1', 'A01')`` for several columns."""
    values = tuple(values)
    shown = tuple("(blank)" if v is None or (isinstance(v, float) and v != v) else str(v) for v in values)
    return repr(shown[0]) if len(shown) == 1 else "(" + ", ".join(repr(v) for v in shown) + ")"


def _keys(list_of):
    return ", ".join(key_text(k) for k in list_of[:SHOWN]) + (f" and {len(list_of) - SHOWN:,} more"
                                                               if len(list_of) > SHOWN else "")


def _checked(a, b, key, labels) -> tuple:
    if isinstance(key, str):
        key = [key]
    key = list(key or [])
    if not key or not all(isinstance(k, str) and k for k in key):
        raise ValueError("key must name the column(s) that identify a well in both tables, e.g. "
                         "['Metadata_plate', 'Metadata_well']")
    if len(set(key)) < len(key):
        raise ValueError(f"key names a column twice: {key}")
    for side, table in (("A", a), ("B", b)):
        if not isinstance(table, pd.DataFrame):
            raise TypeError(f"table {side} must be a pandas DataFrame (use read_table to load a CSV or Parquet file)")
        if table.shape[0] == 0:
            raise ValueError(f"table {side} has no rows")
        for k in key:
            check_column(table, k, f"table {side}: key")
        for c, role in labels.items():
            check_column(table, c, f"table {side}: {role}")
    return key


def _frame(table, cols) -> pd.DataFrame:
    """``table[cols]`` as text (object columns), index 0 .. n - 1."""
    return labels_as_text(table[cols].reset_index(drop=True), cols)


def match_wells(a: pd.DataFrame, b: pd.DataFrame, key, labels, unmatched: str = "error") -> Matched:
    """Pair the rows of ``a`` and ``b`` by the ``key`` columns; ``labels`` must agree on each pair.

    Parameters
    ----------
    a, b : DataFrame
        The two tables (their feature columns may differ in number and names).
    key : str or list of str
        Columns identifying a well, in both tables (e.g. plate and well position).
    labels : dict
        {column: its role, e.g. "perturbation"}: columns that must hold the same text for a well in
        both tables (the role names the column in errors).
    unmatched : {"error", "drop"}
        See the module.

    Raises
    ------
    ValueError
        A key or label column missing from a table (close names suggested); with ``"error"``, blank
        keys, repeated keys, wells in one table only, or labels that differ (the first few named).
    TypeError
        A table that is not a DataFrame.
    """
    check_choice(unmatched, UNMATCHED, "unmatched")
    labels = {c: role for c, role in labels.items() if c is not None}
    key = _checked(a, b, key, labels)
    labels = list(labels)
    ka, kb = _frame(a, key), _frame(b, key)
    out, warnings, relabelled = [], [], {}
    drop_a = np.zeros(len(a), dtype=bool)
    drop_b = np.zeros(len(b), dtype=bool)

    def problem(kind, side_rows, fix):
        """Rows (side, positions) with the problem ``kind``: an error, or left out and named."""
        named = [tuple(frame.iloc[int(r)]) for side, rows in side_rows for frame in [ka if side == "A" else kb]
                 for r in rows]
        named = list(dict.fromkeys(named))
        if not named:
            return
        if unmatched == "error":
            raise ValueError(f"{kind}: {_keys(named)}; {fix}, or pass unmatched='drop' (--unmatched drop) to "
                             "leave those wells out of both tables")
        warnings.append(f"{len(named):,} well(s) left out of both tables ({kind}): {_keys(named)}.")
        for side, rows in side_rows:
            frame, flags = (ka, drop_a) if side == "A" else (kb, drop_b)
            flags[rows] = True
            out.extend((side, *frame.iloc[int(r)], kind) for r in rows)

    blank = [(s, np.flatnonzero(f.isna().any(axis=1).to_numpy())) for s, f in (("A", ka), ("B", kb))]
    problem("blank key cells", blank, "fill in every key cell")
    repeated = []
    for side, frame, flags in (("A", ka, drop_a), ("B", kb, drop_b)):
        dup = frame.duplicated(keep=False).to_numpy() & ~flags
        repeated.append((side, np.flatnonzero(dup)))
    problem("keys repeated within a table", repeated, "give each well one row in each table (add a column "
            "such as the plate to the key)")
    ia = pd.MultiIndex.from_frame(ka[~drop_a])
    ib = pd.MultiIndex.from_frame(kb[~drop_b])
    rows_a, rows_b = np.flatnonzero(~drop_a), np.flatnonzero(~drop_b)
    in_b = ib.get_indexer(ia)
    in_a = ia.get_indexer(ib)
    problem("wells missing from one table", [("A", rows_a[in_b < 0]), ("B", rows_b[in_a < 0])],
            "give both tables the same wells")
    if unmatched == "drop":  # the pairs left, after the drops above
        ia, ib = pd.MultiIndex.from_frame(ka[~drop_a]), pd.MultiIndex.from_frame(kb[~drop_b])
        rows_a, rows_b = np.flatnonzero(~drop_a), np.flatnonzero(~drop_b)
        in_b = ib.get_indexer(ia)
    pa, pb = rows_a[in_b >= 0], rows_b[in_b[in_b >= 0]]
    if labels:
        la, lb = _frame(a, labels).iloc[pa], _frame(b, labels).iloc[pb]
        va, vb = la.to_numpy(dtype=object), lb.to_numpy(dtype=object)
        same = (va == vb) | (pd.isna(la).to_numpy() & pd.isna(lb).to_numpy())
        bad = ~same.all(axis=1)
        for j, c in enumerate(labels):
            for pair in zip(va[bad & ~same[:, j], j], vb[bad & ~same[:, j], j]):
                relabelled[(c, *pair)] = relabelled.get((c, *pair), 0) + 1
        if bad.any():
            c = int(np.flatnonzero(~same[bad][0])[0])
            first = f"{labels[c]!r} is {va[bad][0, c]!r} in A and {vb[bad][0, c]!r} in B"
            problem(f"labels differ between the tables (first: {first})", [("A", pa[bad]), ("B", pb[bad])],
                    "check that both tables describe the same wells")
    left_out = pd.DataFrame(out, columns=left_out_columns(key))
    kept_a, kept_b = np.flatnonzero(~drop_a), np.flatnonzero(~drop_b)
    if not drop_a.any() and not drop_b.any():
        return Matched(a, b, left_out, warnings, kept_a, kept_b, relabelled)
    return Matched(a.iloc[kept_a], b.iloc[kept_b], left_out, warnings, kept_a, kept_b, relabelled)


def set_aside(table: pd.DataFrame, rows: np.ndarray, pcols) -> pd.DataFrame:
    """``table`` whose rows outside ``rows`` (0-based positions kept) have an empty
    perturbation, so ``score_profiles`` leaves them out while every row keeps its own number (in its
    messages and the ``row`` column: the file's data rows, as when scoring the file alone); the table
    itself when every row is kept. Integer labels become nullable integers, so their text is unchanged."""
    if rows.size == len(table):
        return table
    gone = np.ones(len(table), dtype=bool)
    gone[rows] = False
    out = table.copy(deep=False)
    for c in pcols:
        col = out[c]
        if pd.api.types.is_bool_dtype(col.dtype):
            col = col.astype("boolean")
        elif pd.api.types.is_integer_dtype(col.dtype):
            col = col.astype("Int64")
        else:
            col = col.astype(object) if not pd.api.types.is_string_dtype(col.dtype) \
                and not pd.api.types.is_float_dtype(col.dtype) else col.copy()
        col.iloc[np.flatnonzero(gone)] = None
        out[c] = col
    return out


def check_relabelled_controls(a, b, ka, kb, pcol, control, relabelled) -> None:
    """ValueError when a table's control rows were all left out as wells whose perturbation the other
    table spells differently (``unmatched="drop"``: e.g. ``DMSO`` in A, ``dmso`` in B): both spellings
    named, instead of "no control rows" in a table that has them."""
    controls = [control] if isinstance(control, str) else [str(c) for c in (control or [])]
    for side, table, kept, own in (("A", a, ka, 1), ("B", b, kb, 2)):
        had = labels_as_text(table[[pcol]], [pcol])[pcol].isin(controls)
        left = labels_as_text(kept[[pcol]], [pcol])[pcol].isin(controls)
        if not had.any() or left.any():
            continue
        spelt = [(k, n) for k, n in relabelled.items() if k[0] == pcol and k[own] in controls]
        if not spelt:
            continue
        other = "B" if side == "A" else "A"
        pairs = "; ".join(f"{n:,} well(s) {k[1]!r} in A and {k[2]!r} in B" for k, n in spelt[:4])
        raise ValueError(f"table {side}: its {int(had.sum()):,} control rows were all left out (unmatched='drop') "
                         f"because table {other} spells their perturbation differently ({pairs}); spell the "
                         f"controls the same way in both tables")


def has_blank_labels(table, pcols, stratum) -> bool:
    """Whether a kept row of ``table`` has an empty perturbation (or stratum) value of its own."""
    cols = list(pcols) + ([stratum] if stratum is not None else [])
    return bool(table[cols].isna().any(axis=None))


def drop_missing_wells(matched, fa, fb, keys, nan) -> tuple:
    """((A, its rows), (B, its rows), rows left out, warnings): each table's kept rows and their 0-based
    positions in the input; with nan="drop-rows", the wells holding a NaN or infinite feature value on
    either side left out of both (so both sides score the same wells); else as matched. ``fa``, ``fb``:
    the feature columns of each table."""
    ta, tb = matched.a, matched.b
    empty = pd.DataFrame(columns=left_out_columns(keys))
    if nan != "drop-rows":
        return (ta, matched.rows_a), (tb, matched.rows_b), empty, []

    def bad(table, cols):
        values = table[cols].apply(pd.to_numeric, errors="coerce").to_numpy(dtype=float)
        return ~np.isfinite(values).all(axis=1)

    ka, kb = (labels_as_text(t[keys].reset_index(drop=True), keys) for t in (ta, tb))
    ia, ib = pd.MultiIndex.from_frame(ka), pd.MultiIndex.from_frame(kb)
    bad_a, bad_b = bad(ta, fa), bad(tb, fb)
    gone = ia[bad_a].union(ib[bad_b])
    if not len(gone):
        return (ta, matched.rows_a), (tb, matched.rows_b), empty, []
    drop_a, drop_b = ia.isin(gone), ib.isin(gone)
    rows = []
    for side, frame, flags, own in (("A", ka, drop_a, bad_a), ("B", kb, drop_b, bad_b)):
        for r in np.flatnonzero(flags):
            why = "NaN or infinite feature value in this table" if own[r] else "NaN or infinite feature value in the other table"
            rows.append((side, *frame.iloc[int(r)], why))
    warning = (f"{len(gone):,} well(s) with NaN or infinite feature values left out of both tables "
               f"(nan='drop-rows'; in A: {rows_text(matched.rows_a[drop_a])}; in B: "
               f"{rows_text(matched.rows_b[drop_b])})")
    return ((ta.iloc[np.flatnonzero(~drop_a)], matched.rows_a[~drop_a]),
            (tb.iloc[np.flatnonzero(~drop_b)], matched.rows_b[~drop_b]),
            pd.DataFrame(rows, columns=left_out_columns(keys)), [warning])
