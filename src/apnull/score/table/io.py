"""Reading a user's table: CSV or Parquet, with a size limit checked before anything is read."""

from __future__ import annotations

import io
import os
from pathlib import Path

import numpy as np
import pandas as pd

from ...limits import SCORE_MAX_FILE_BYTES as MAX_FILE_BYTES
from . import subset
from .columns import cellprofiler_names, default_left_out
from .matrix import rows_frame
from .memory import release_arrow

__all__ = ["read_table", "labels_as_text", "table_format", "MAX_FILE_BYTES", "PARQUET_SUFFIXES", "TSV_SUFFIXES"]

# MAX_FILE_BYTES: the largest file read_table accepts, 200 MB, checked before reading (see
# apnull.limits). Split larger screens by plate or batch, or score a DataFrame you read yourself.

#: Names read and written as Parquet (any case).
PARQUET_SUFFIXES = (".parquet", ".pq", ".parq")
#: Names read and written as tab-separated text (before a compression suffix).
TSV_SUFFIXES = (".tsv", ".tab")
#: Compression suffixes of text tables, and pandas' name of each method.
COMPRESSIONS = {".gz": "gzip", ".bz2": "bz2", ".xz": "xz", ".zip": "zip", ".zst": "zstd"}
#: Cells read as missing in CSV files (pandas' defaults minus "null", "None", "n/a", ...: a perturbation
#: may well be called "null").
_NA = ["", "NA", "NaN", "nan", "N/A", "#N/A", "-nan", "-NaN"]


def table_format(name) -> tuple:
    """(format, compression) of a table by its file name, the one rule of reading and writing:
    ("parquet", None) for ``.parquet``/``.pq``/``.parq``; else ("tsv" for ``.tsv``/``.tab``, or
    "csv") with the compression of a ``.gz``/``.bz2``/``.xz``/``.zip``/``.zst`` suffix (or None)."""
    lower = str(name or "").lower()
    for suffix, method in COMPRESSIONS.items():
        if lower.endswith(suffix):
            return ("tsv" if lower[:-len(suffix)].endswith(TSV_SUFFIXES) else "csv"), method
    if lower.endswith(PARQUET_SUFFIXES):
        return "parquet", None
    return ("tsv" if lower.endswith(TSV_SUFFIXES) else "csv"), None


def _size_of(source) -> int | None:
    if isinstance(source, (str, os.PathLike)):
        return os.path.getsize(source)
    size = getattr(source, "size", None)
    if isinstance(size, int):
        return size
    if isinstance(source, (bytes, bytearray)):
        return len(source)
    if hasattr(source, "seek") and hasattr(source, "tell"):
        pos = source.tell()
        source.seek(0, io.SEEK_END)
        end = source.tell()
        source.seek(pos)
        return end - pos
    return None


def _human(nbytes: int) -> str:
    for unit, scale in (("GB", 1024**3), ("MB", 1024**2), ("kB", 1024)):
        if nbytes >= scale:
            return f"{nbytes / scale:.1f} {unit}"
    return f"{nbytes} bytes"


def _label_names(labels, columns) -> list:
    """The label columns of ``columns`` named by ``labels`` (a list or a callable)."""
    if labels is None:
        return []
    chosen = labels(list(columns)) if callable(labels) else labels
    if isinstance(chosen, str):
        chosen = [chosen]
    wanted = {str(c) for c in chosen if c is not None}
    return [c for c in columns if str(c) in wanted]


def _all_columns(source, options) -> list:
    """Every column name of a CSV source (the header only; the position of a buffer is kept)."""
    pos = None if isinstance(source, (str, os.PathLike)) else source.tell()
    cols = list(pd.read_csv(source, nrows=0, **options).columns)
    if pos is not None:
        source.seek(pos)
    return cols


def _header_names(source, options) -> list:
    """The header's names exactly as the file writes them (pandas renames a repeated name ``f1`` to
    ``f1.1``; this reads the first row as data, so nothing is renamed). The position of a buffer is kept."""
    pos = None if isinstance(source, (str, os.PathLike)) else source.tell()
    first = pd.read_csv(source, nrows=1, header=None, dtype=str, **dict(options, keep_default_na=False))
    if pos is not None:
        source.seek(pos)
    return [str(v) for v in first.iloc[0].tolist()] if len(first) else []


class _Refused(ValueError):
    """A table refused by a check inside the reading (passed on as it is, not as a parser error)."""


def _parquet_names(source) -> list:
    """The column names of a Parquet file's schema (the position of a buffer is kept)."""
    import pyarrow.parquet as pq

    pos = None if isinstance(source, (str, os.PathLike)) else source.tell()
    names = list(pq.read_schema(source).names)
    if pos is not None:
        source.seek(pos)
    return names


def check_unique_names(names, label: str) -> None:
    """ValueError naming the first name ``names`` repeats (with its 1-based column positions), so no
    column is renamed or counted twice without a word."""
    seen: dict = {}
    for i, n in enumerate(names):
        seen.setdefault(n, []).append(i + 1)
    repeated = {n: at for n, at in seen.items() if len(at) > 1}
    if repeated:
        shown = "; ".join(f"{n!r} (columns {', '.join(map(str, at))})" for n, at in list(repeated.items())[:5])
        raise _Refused(f"the header of {label} repeats {'a name' if len(repeated) == 1 else 'names'}: {shown}; give "
                         "each column its own name")


def _one_column_hint(table: pd.DataFrame, label: str, fmt: str) -> None:
    """ValueError for a text table read as one column whose name holds another separator: a CSV saved
    with semicolons (Excel in locales with decimal commas) or tabs."""
    if table.shape[1] != 1:
        return
    name = str(table.columns[0])
    for sep, word, fix in ((";", "semicolons", "save it as a comma-separated CSV with decimal points (in Excel: set "
                                               "the list separator to ',' and the decimal symbol to '.')"),
                           ("\t", "tabs", "name it .tsv so it is read as tab-separated"),
                           (",", "commas", "name it .csv so it is read as comma-separated")):
        if sep in name and not (fmt == "csv" and sep == ",") and not (fmt == "tsv" and sep == "\t"):
            raise ValueError(f"{label} was read as one column named {name[:60]!r}: its fields seem separated by "
                             f"{word}; {fix}")


def _decode_error(source, compression, label: str) -> ValueError:
    """The error of a text file that is not UTF-8: the first byte that is not, by its offset (in the
    uncompressed text) and line, and how to save the file as UTF-8."""
    import codecs

    if isinstance(source, (str, os.PathLike)):
        raw = open(source, "rb")
    else:
        source.seek(0)
        raw = source
    if compression == "gzip" or (compression == "infer" and str(source).lower().endswith(".gz")):
        import gzip
        raw = gzip.GzipFile(fileobj=raw)
    decoder = codecs.getincrementaldecoder("utf-8")()
    offset, line, first = 0, 1, b""
    try:
        while True:
            chunk = raw.read(1 << 20)
            if not first:
                first = chunk[:4]
            try:
                decoder.decode(chunk, final=not chunk)
            except UnicodeDecodeError as exc:
                at = offset + exc.start
                bad = chunk[exc.start:exc.start + 1]
                line += chunk[:exc.start].count(b"\n")
                break
            if not chunk:
                return ValueError(f"{label} is not UTF-8 text; save it as UTF-8")
            offset += len(chunk)
            line += chunk.count(b"\n")
    finally:
        if isinstance(source, (str, os.PathLike)):
            raw.close()
    if first[:2] in (b"\xff\xfe", b"\xfe\xff"):
        kind, encoding = "it is UTF-16 text (Excel's \"Unicode Text\")", "utf-16"
    else:
        kind = (f"byte 0x{bad.hex()} at byte offset {at:,} (counting from 0; line {line:,}) is not valid UTF-8; "
                "the file looks like Windows-1252 (Latin-1) text, as Excel saves a plain \"CSV (Comma "
                "delimited)\" file")
        encoding = "cp1252"
    return ValueError(f"{label} is not UTF-8: {kind}. Save it as UTF-8 (in Excel: Save As \"CSV UTF-8 (Comma "
                      f"delimited)\"), or convert it, e.g. iconv -f {encoding} -t utf-8 old.csv > new.csv")


def _text(value):
    """One label cell as text without loss: None/NaN stay missing, floats by their shortest repr."""
    if value is None or (isinstance(value, float) and value != value):
        return np.nan
    if isinstance(value, bytes):
        return value.decode("utf-8", "replace")
    if isinstance(value, (np.floating, float)):
        return repr(float(value))
    if isinstance(value, (np.integer,)):
        return str(int(value))
    return str(value)


def _read_parquet(source, labels, columns=None, filters=None, progress=None) -> pd.DataFrame:
    """A Parquet table; label columns cast to text by Arrow before pandas sees them (a nullable
    integer column keeps its digits instead of turning into floats). With ``columns`` or ``filters``
    only those columns and the rows the filter keeps are read (:mod:`.subset`).

    Memory: float32 columns stay float32. Two or more of them (not labels, nor columns the default choice of
    features never takes: :func:`.columns.default_left_out`) become the columns of one row-major array
    (:func:`.matrix.rows_frame`), which the scoring then reads without a copy; Arrow's other columns are let
    go as pandas takes them (``self_destruct``, one block a column)."""
    by_path = isinstance(source, (str, os.PathLike))
    if labels is None and columns is None and filters is None and progress is None and not by_path:
        return pd.read_parquet(source)
    import pyarrow as pa

    parts = subset.read_arrow(source, columns, filters, progress, parts=True)
    every = parts[0].column_names
    names = _label_names(labels, every)

    def texts(arrow):  # label columns of integers, booleans or decimals as their digits
        for c in names:
            i = arrow.column_names.index(c)
            col = arrow.column(i)
            if pa.types.is_integer(col.type) or pa.types.is_boolean(col.type) or pa.types.is_decimal(col.type):
                arrow = arrow.set_column(i, c, col.cast(pa.string()))
        return arrow

    cellprofiler = cellprofiler_names(every)
    aside = [c for c in every if default_left_out(c, cellprofiler)]  # not features unless asked
    table = rows_frame(parts, [*names, *aside], texts)  # float32 features side by side, as the scoring reads them
    if table is None:
        arrow = texts(pa.concat_tables(parts))
        del parts
        table = arrow.to_pandas(split_blocks=True, self_destruct=True)
        del arrow  # self_destruct: not to be used again
    release_arrow()
    return labels_as_text(table, names)


def _filter_csv(table: pd.DataFrame, filters) -> pd.DataFrame:
    """The rows of a CSV's table ``filters`` keeps (after the whole file was read: a CSV has no index)."""
    if filters is None:
        return table
    import pyarrow as pa

    schema = pa.Schema.from_pandas(table, preserve_index=False)
    return subset.filter_frame(table, subset.resolve_filters(filters, schema))


def labels_as_text(table: pd.DataFrame, columns) -> pd.DataFrame:
    """``table`` with ``columns`` converted to text (object dtype) by :func:`_text`; others untouched."""
    columns = [c for c in columns if c in table.columns]
    if not columns:
        return table
    table = table.copy(deep=False)  # the other columns are shared, not copied (copy on write)
    for c in columns:
        col = table[c]
        if col.dtype == object and all(isinstance(v, str) or v is None for v in col.dropna()):
            continue
        table[c] = pd.Series([_text(v) for v in col.astype(object)], index=table.index, dtype=object)
    return table


def read_table(path_or_buffer, name: str | None = None, labels=None, *, columns=None, filters=None,
               progress=None) -> pd.DataFrame:
    """Read a CSV or Parquet table of profiles or rankings.

    Parameters
    ----------
    path_or_buffer : str, path, bytes or binary file-like (e.g. a Streamlit upload)
    name : str, optional
        File name used to pick the format for buffers (defaults to the buffer's ``.name``).
    labels : list of str, or callable(list of column names) -> list of str, optional
        Label columns (perturbation, control, stratum, annotation) read as text exactly as written:
        ``1``, ``1.0`` and ``01`` stay three labels, a 17-digit ID stays its digits, and ``NA`` or
        ``null`` are labels like any other; only a blank cell is missing (NaN). Parquet columns are
        converted to text without loss (integers as their digits, floats by their shortest
        round-trip repr). Names not in the file are ignored (the caller reports missing columns).
    columns : list of str, optional
        Read only these columns (default: all); a name not in the file is a ValueError naming close
        ones. A Parquet file decodes only these; a CSV parses only these.
    filters : dict, list of tuples or pyarrow Expression, optional
        Read only the rows these keep: ``{column: value or [values]}`` (every column named holds one
        of its values, given as text and read as the column's type), or pyarrow's form
        (``[(column, op, value), ...]``, all must hold; a list of such lists, any may hold; values
        compared as the file stores them) or an Expression (see :mod:`apnull.score.table.subset`).
        A Parquet file is read through pyarrow's dataset filters: row groups whose statistics exclude
        the filter are skipped and the other rows are dropped as they are read, so far less is held
        than by a full read. A CSV has no index: its rows are filtered after the whole file is read,
        with the same meaning (the memory of the full read is spent). No row kept is a ValueError.
    progress : a reporter or None
        A Parquet file read without ``filters`` tells the rows read, a row group at a time, to the reporter
        (a callable ``(done, total)`` with an optional ``stage(units, scope)`` hook, such as the
        reporters of :mod:`apnull.score.engine.progress`; the command line's lines say ``rows read:
        300,000 of 641,888 (4 s)``). The table read is the same.

    Format: by suffix (:func:`table_format`: ``.parquet``/``.pq``/``.parq`` Parquet; ``.tsv``/``.tab``
    tab-separated, also compressed (``.tsv.gz``); ``.csv``, ``.csv.gz``, anything else CSV), and for
    buffers without a telling name by the magic bytes ``PAR1`` (Parquet) or gzip's ``1f 8b``.

    Raises
    ------
    ValueError
        The file is missing, empty (0 bytes, or a header without rows), larger than
        :data:`MAX_FILE_BYTES` (200 MB; checked before reading), or cannot be parsed. A Parquet file
        read by its path is limited by the part it reads instead (the whole file, or the ``columns`` and
        ``filters`` asked): at most :data:`apnull.limits.SCORE_MAX_PART_BYTES` (4 GiB) uncompressed, counted
        from the file's metadata before decoding (:func:`.subset.part_bytes`), so a whole JUMP screen
        (1.9 GB) or one plate of a file of many GB can be read.
    """
    source = path_or_buffer
    if isinstance(source, (str, os.PathLike)):
        p = Path(source)
        if not p.exists():
            raise ValueError(f"file {str(p)!r} does not exist; check the path")
        if p.is_dir():
            raise ValueError(f"{str(p)!r} is a folder; give a CSV or Parquet file")
        name = name or p.name
    else:
        name = name or getattr(source, "name", None)
        if isinstance(source, (bytes, bytearray)):
            source = io.BytesIO(source)
    label = repr(name) if name else "the file"
    size = _size_of(source)
    part = isinstance(source, (str, os.PathLike)) and table_format(name)[0] == "parquet"  # limited by the
    # part it reads (subset.check_part)
    if size is not None and size > MAX_FILE_BYTES and not part:
        raise ValueError(f"{label} is {_human(size)}; the limit is {_human(MAX_FILE_BYTES)}: "
                         "split the screen by plate or batch, or keep fewer feature columns")
    if size == 0:
        raise ValueError(f"{label} is empty (0 bytes); give a CSV or Parquet file with a header row")
    lower = (name or "").lower()
    if isinstance(source, (str, os.PathLike)):
        with open(source, "rb") as fh:
            head = fh.read(4)
    else:
        pos = source.tell()
        head = source.read(4)
        source.seek(pos)
    if isinstance(head, str):
        head = head.encode()
    fmt = table_format(lower)[0]
    parquet = fmt == "parquet" or head == b"PAR1"
    try:
        if parquet:
            check_unique_names(_parquet_names(source), label)
            table = _read_parquet(source, labels, columns, filters, progress)
        else:
            sep = "\t" if fmt == "tsv" else ","
            compression = "gzip" if head[:2] == b"\x1f\x8b" else "infer"
            if not isinstance(source, (str, os.PathLike)):
                compression = "gzip" if head[:2] == b"\x1f\x8b" else None
            options = dict(sep=sep, compression=compression, keep_default_na=False)
            check_unique_names(_header_names(source, options), label)
            text_cols = []
            if labels is not None:
                pos = None if isinstance(source, (str, os.PathLike)) else source.tell()
                header = list(pd.read_csv(source, nrows=0, **options).columns)
                if pos is not None:
                    source.seek(pos)
                text_cols = _label_names(labels, header)
            if columns is not None:  # the filter's columns are read too, and dropped after it
                header = _all_columns(source, options)
                columns = subset.check_columns(columns, header)
                by = subset.filter_column_names(filters)
                options["usecols"] = header if filters is not None and by is None else \
                    subset.check_columns([*columns, *(c for c in by or () if c in header)], header)
            na = {c: ([""] if c in text_cols else _NA) for c in _all_columns(source, options)} \
                if text_cols else _NA
            table = pd.read_csv(source, low_memory=False, na_values=na,
                                dtype={c: str for c in text_cols} or None, **options)
            table = _filter_csv(table, filters)
            if columns is not None:
                table = table[columns]
    except subset.FilterError as exc:  # a bad column or filter: its own sentence, not a parse error
        raise ValueError(f"{label}: {exc}") from None
    except pd.errors.EmptyDataError:
        raise ValueError(f"{label} has no columns; give a CSV with a header row") from None
    except _Refused:
        raise
    except UnicodeDecodeError:
        raise _decode_error(source, compression, label) from None
    except Exception as exc:  # parser / arrow errors: one readable sentence
        kind = "Parquet" if parquet else "CSV"
        msg = " ".join(str(exc).split())[:200]
        raise ValueError(f"could not read {label} as {kind}: {msg}") from None
    if table.shape[1] == 0:
        raise ValueError(f"{label} has no columns")
    if not parquet:
        _one_column_hint(table, label, fmt)
    if table.shape[0] == 0 and filters is not None:
        raise ValueError(f"no row of {label} passes the filters {filters!r}; check the column and values")
    if table.shape[0] == 0:
        raise ValueError(f"{label} has a header but no rows")
    return table
