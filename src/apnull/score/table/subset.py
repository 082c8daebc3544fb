"""Reading part of a table: only some columns, only the rows a filter keeps (:func:`.io.read_table`'s
``columns=`` and ``filters=``).

A Parquet file is read a row group at a time (:func:`read_arrow`): the columns not asked for are never
decoded, row groups whose statistics exclude the filter are skipped (pyarrow's own pruning), and each
other group keeps only the rows the filter keeps before the next is read, so a screen too large to hold
whole can be read one plate or one compound at a time (as copairs's runner reads JUMP's files). A CSV
file has no such index: its columns are chosen while parsing (pandas' ``usecols``), its rows after the
whole file is read, with the same filter evaluated by pyarrow (one meaning of a filter for both formats).

Filters take pyarrow's form: a list of ``(column, op, value)`` tuples, all of which must hold (ops
``==``, ``!=``, ``<``, ``<=``, ``>``, ``>=``, ``in``, ``not in``), or a list of such lists, any of
which may hold, or a ``pyarrow.compute.Expression``. Values are compared with the column as stored in
the file (a label column stored as integers takes integers; a CSV's label column is read as text and
takes text). A dict ``{column: value or [values]}`` is the simple form: every column named holds one
of its values, each given as text and read as the column's type (:func:`where_filters`; the command
line's ``--where COLUMN=VALUE``).

:func:`read_arrow` is the one Parquet reader of :func:`.io.read_table`, with or without a filter (the rows
read told to a progress reporter).
"""

from __future__ import annotations

import difflib
import os
from pathlib import Path

import numpy as np
import pandas as pd

from ...limits import SCORE_MAX_PART_BYTES as MAX_PART_BYTES
from .names import tell_stage
from .memory import release_arrow

__all__ = ["FilterError", "check_columns", "check_filters", "filter_column_names", "filter_expression", "filter_frame", "where_filters",
           "resolve_filters", "part_bytes", "check_part", "read_arrow", "MAX_PART_BYTES"]


class FilterError(ValueError):
    """A column or filter the file cannot answer (named, with close names): read_table's own sentence."""


def _close(name, names) -> str:
    near = difflib.get_close_matches(str(name), [str(n) for n in names], n=3, cutoff=0.6)
    return f" (close: {', '.join(near)})" if near else ""


def check_columns(columns, available) -> list | None:
    """``columns`` as a list of names of ``available``, in its order (a repeated name kept once); a
    ValueError names the missing ones and close names; None stays None (every column)."""
    if columns is None:
        return None
    if isinstance(columns, str):
        columns = [columns]
    columns = list(dict.fromkeys(columns))
    if not columns:
        raise FilterError("columns is empty; give the columns to read, or None for all")
    have = [str(c) for c in available]
    missing = [c for c in columns if str(c) not in have]
    if missing:
        raise FilterError("no column " + "; no column ".join(f"{c!r}{_close(c, have)}" for c in missing))
    asked = {str(c) for c in columns}
    return [c for c in available if str(c) in asked]  # in the file's order, as a full read has them


def _filter_columns(filters) -> list:
    """The column names a filter in pyarrow's list form refers to."""
    if not isinstance(filters, (list, tuple)) or not filters:
        return []
    groups = filters if isinstance(filters[0], (list, tuple)) and filters[0] and \
        isinstance(filters[0][0], (list, tuple)) else [filters]
    return [term[0] for group in groups for term in group if isinstance(term, (list, tuple)) and term]


def filter_column_names(filters) -> list | None:
    """The columns ``filters`` reads (a dict's keys, the list form's columns); None for an Expression
    (any column) or no filter."""
    if filters is None or _is_expression(filters):
        return None
    return list(filters) if isinstance(filters, dict) else _filter_columns(filters)


def check_filters(filters, available) -> None:
    """ValueError when a filter (pyarrow's list form) names a column not in ``available``, or is empty."""
    if filters is None:
        return
    if isinstance(filters, (list, tuple)) and not filters:
        raise FilterError("filters is empty; give (column, op, value) tuples, or None for every row")
    have = [str(c) for c in available]
    missing = [c for c in _filter_columns(filters) if str(c) not in have]
    if missing:
        raise FilterError("filters name no column " + "; ".join(f"{c!r}{_close(c, have)}" for c in missing))


def filter_expression(filters):
    """pyarrow's Expression of ``filters`` (a list form, or an Expression returned as it is)."""
    import pyarrow.compute as pc
    import pyarrow.parquet as pq

    if isinstance(filters, pc.Expression):
        return filters
    return pq.filters_to_expression(filters)


def filter_frame(table: pd.DataFrame, filters) -> pd.DataFrame:
    """The rows of ``table`` that ``filters`` keeps (a row where the filter is null is dropped), in their
    order, index renumbered from 0; the columns and their dtypes untouched. The filter is evaluated by
    pyarrow on the columns it names, so it means what it means for a Parquet file."""
    import pyarrow as pa
    import pyarrow.dataset as ds

    names = {str(c) for c in _filter_columns(filters)} if not _is_expression(filters) else None
    cols = [c for c in table.columns if names is None or str(c) in names]
    arrow = pa.Table.from_pandas(table[cols], preserve_index=False)
    keep = ds.dataset(arrow).to_table(columns={"keep": filter_expression(filters)}).column("keep")
    mask = np.asarray(keep.fill_null(False).to_numpy(zero_copy_only=False), dtype=bool)
    return table.loc[mask].reset_index(drop=True)


def _is_expression(filters) -> bool:
    import pyarrow.compute as pc

    return isinstance(filters, pc.Expression)


def _typed(value: str, arrow_type, column: str):
    """``value`` (text) as a value of ``arrow_type``, as the column holds it; ValueError when it cannot be one."""
    import pyarrow as pa

    if pa.types.is_dictionary(arrow_type):
        arrow_type = arrow_type.value_type
    if pa.types.is_string(arrow_type) or pa.types.is_large_string(arrow_type) or pa.types.is_null(arrow_type):
        return value
    try:
        if pa.types.is_integer(arrow_type):
            if value.strip() != value or not value.lstrip("-").isdigit():
                raise ValueError
            return int(value)
        if pa.types.is_floating(arrow_type):
            return float(value)
        if pa.types.is_boolean(arrow_type):
            return {"true": True, "false": False}[value.lower()]
    except (ValueError, KeyError):
        raise FilterError(f"filter {column}={value}: column {column!r} holds {arrow_type} values; "
                         f"{value!r} is not one") from None
    raise FilterError(f"filter {column}=...: column {column!r} holds {arrow_type} values, which a text filter cannot "
                     "compare; filter on a text or number column")


def where_filters(wanted: dict, schema) -> list:
    """pyarrow's list form of a ``{column: values}`` filter: a row is kept when, for every column named,
    its value is one of the values given (a single value, or a list: "any of these"). A value given as
    text is read as the column's type in ``schema`` (a ``pyarrow.Schema``: integers, floats, true/false,
    or text as written), so the command line's ``--where COLUMN=VALUE`` means the same for a Parquet
    column of integers and for a CSV label column read as text; other values are compared as given.
    """
    names = list(schema.names)
    out = []
    for column, values in wanted.items():
        if column not in names:
            raise FilterError(f"filter: no column {column!r}{_close(column, names)}")
        values = list(values) if isinstance(values, (list, tuple, set)) else [values]
        if not values:
            raise FilterError(f"filter: no value given for column {column!r}")
        kind = schema.field(column).type
        out.append((column, "in", [_typed(v, kind, column) if isinstance(v, str) else v for v in values]))
    return out


def resolve_filters(filters, schema):
    """``filters`` checked against ``schema`` (a ``pyarrow.Schema``), in pyarrow's form: a dict through
    :func:`where_filters`, a list checked by :func:`check_filters`, an Expression as it is; None stays None."""
    if filters is None or _is_expression(filters):
        return filters
    if isinstance(filters, dict):
        if not filters:
            raise FilterError("filters is empty; give {column: values}, or None for every row")
        return where_filters(filters, schema)
    check_filters(filters, schema.names)
    return filters


def _row_groups(source, filters, count: int) -> list:
    """The row groups of the Parquet file ``source`` (``count`` of them) that may hold a row ``filters`` (resolved;
    None: every one) keeps: pyarrow's own pruning by the groups' statistics
    (``ParquetFileFragment.split_by_row_group``) for a file by its path, every group for an open file."""
    if filters is None or not isinstance(source, (str, os.PathLike)):
        return list(range(count))
    import pyarrow.dataset as ds

    fragment = next(iter(ds.dataset(str(source), format="parquet").get_fragments()))
    return [rg.id for piece in fragment.split_by_row_group(filter_expression(filters)) for rg in piece.row_groups]


def _read_names(columns, filters) -> list | None:
    """The columns a read of ``columns`` (None: all) filtered by ``filters`` decodes: the asked ones and the
    filter's (every column for an Expression, which names none)."""
    if columns is None or filters is None:
        return columns
    by = filter_column_names(filters)
    return None if by is None else list(dict.fromkeys([*columns, *by]))


def part_bytes(path, columns, filters, meta=None, groups=None) -> int:
    """Uncompressed bytes a read of ``columns`` (None: all) and the rows ``filters`` keeps (pyarrow's form,
    resolved) decodes at most from the Parquet file at ``path``: the asked columns and the filter's, in
    the row groups whose statistics may hold a kept row (:func:`_row_groups`), from the file's metadata alone
    (``meta``, ``groups``: the file's metadata and those groups, when the caller has them: a footer of
    thousands of row groups takes a while to parse)."""
    import pyarrow.parquet as pq

    meta = pq.ParquetFile(path).metadata if meta is None else meta
    groups = _row_groups(path, filters, meta.num_row_groups) if groups is None else groups
    names = _read_names(columns, filters)
    names = None if names is None else set(map(str, names))
    idx = [j for j in range(meta.num_columns)
           if names is None or meta.schema.column(j).path.split(".")[0] in names]
    return int(sum(meta.row_group(i).column(j).total_uncompressed_size for i in groups for j in idx))


def check_part(path, columns, filters, label: str, meta=None, groups=None) -> None:
    """FilterError when the part :func:`part_bytes` counts is larger than :data:`MAX_PART_BYTES` (4 GiB)."""
    size = part_bytes(path, columns, filters, meta, groups)
    if size > MAX_PART_BYTES:
        what = "the file" if columns is None and filters is None else f"the part of {label} asked for"
        raise FilterError(f"{what} is {size / 1024**2:,.0f} MB uncompressed; the limit is "
                          f"{MAX_PART_BYTES / 1024**2:,.0f} MB: read fewer columns or fewer plates at a time")


#: Rows read at a time: small row groups are read together up to this many rows (a file written with groups
#: of 10 rows was read in 3 s a row group at a time, 0.7 s this way); a larger group is read alone.
READ_ROWS = 1 << 16


def _bundles(groups: list, sizes: list) -> list:
    """``groups`` (row group numbers, in order; ``sizes`` their rows) cut into runs of at most :data:`READ_ROWS`
    rows each (a group larger than that alone), in order."""
    most, out, rows = READ_ROWS, [], 0
    for g, n in zip(groups, sizes):
        if not out or rows + n > most:
            out.append([])
            rows = 0
        out[-1].append(g)
        rows += n
    return out


def read_arrow(source, columns, filters, progress=None, parts=False):
    """The Arrow table of ``columns`` (checked against the file's schema; None: all) and of the rows
    ``filters`` keeps (None: all), read a row group at a time without buffering the whole file first
    (``pre_buffer=False``; row groups smaller than :data:`READ_ROWS` rows read a few together): the read holds
    the table and one row group's buffers (a 325 MB table of float32 peaked at 1.8 times its size, against
    3.3 times for one ``pq.read_table``). With a filter only the row groups whose statistics may hold a kept
    row are read (:func:`_row_groups`), and each keeps the rows the filter keeps (a row where it is null is
    dropped, as pyarrow's dataset reader does) before the next is read: five plates, or two compounds, of a
    1.8 GB JUMP screen are read in 0.6 GB, where ``pq.read_table(filters=...)``, whose reader decodes groups
    ahead, held 5 to 6 GB. ``progress`` (a reporter, :mod:`..engine.progress`) is told the rows read (of the
    groups read) after each. ``parts``: the list of those tables (one a row group, or a few small ones), not
    joined."""
    import pyarrow as pa
    import pyarrow.parquet as pq

    handle = pq.ParquetFile(source, pre_buffer=False)  # the footer parsed once
    meta, schema = handle.metadata, handle.schema_arrow
    columns = None if columns is None else check_columns(columns, schema.names)
    filters = None if filters is None else resolve_filters(filters, schema)
    kept = _row_groups(source, filters, handle.num_row_groups)
    if isinstance(source, (str, os.PathLike)):  # a file by its path: limited by the part read, not by the file's size
        check_part(source, columns, filters, repr(Path(source).name), meta, kept)
    names = _read_names(columns, filters)
    keep = None if filters is None else filter_expression(filters)
    sizes = [meta.row_group(i).num_rows for i in kept]
    total, done, groups = sum(sizes), 0, []
    tell_stage(progress, "rows read")
    for bundle in _bundles(kept, sizes):  # a row group (or a few small ones) at a time: its buffers freed before the next
        group = handle.read_row_groups(bundle, columns=names)
        done += group.num_rows
        if keep is not None:
            group = group.filter(keep)
            group = group if columns is None else group.select(columns)
        groups.append(group)
        group = None
        release_arrow()
        if progress:
            progress(done, total)
    if not groups:  # no row group (or none the filter may keep): the columns asked for, no rows
        groups = [pq.read_table(source, columns=columns, filters=filters)]
    return groups if parts else pa.concat_tables(groups)
