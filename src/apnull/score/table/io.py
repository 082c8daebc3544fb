"""Reading a user's table: CSV or Parquet, with a size limit checked before anything is read."""

from __future__ import annotations

import io
import os
from pathlib import Path

import numpy as np
import pandas as pd

from ...limits import SCORE_MAX_FILE_BYTES as MAX_FILE_BYTES

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


def _read_parquet(source, labels) -> pd.DataFrame:
    """A Parquet table; label columns cast to text by Arrow before pandas sees them (a nullable
    integer column keeps its digits instead of turning into floats)."""
    if labels is None:
        return pd.read_parquet(source)
    import pyarrow as pa
    import pyarrow.parquet as pq

    arrow = pq.read_table(source)
    for c in _label_names(labels, arrow.column_names):
        i = arrow.column_names.index(c)
        col = arrow.column(i)
        if pa.types.is_integer(col.type) or pa.types.is_boolean(col.type) or pa.types.is_decimal(col.type):
            arrow = arrow.set_column(i, c, col.cast(pa.string()))
    return labels_as_text(arrow.to_pandas(), _label_names(labels, arrow.column_names))


def labels_as_text(table: pd.DataFrame, columns) -> pd.DataFrame:
    """``table`` with ``columns`` converted to text (object dtype) by :func:`_text`; others untouched."""
    columns = [c for c in columns if c in table.columns]
    if not columns:
        return table
    table = table.copy()
    for c in columns:
        col = table[c]
        if col.dtype == object and all(isinstance(v, str) or v is None for v in col.dropna()):
            continue
        table[c] = pd.Series([_text(v) for v in col.astype(object)], index=table.index, dtype=object)
    return table


def read_table(path_or_buffer, name: str | None = None, labels=None) -> pd.DataFrame:
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

    Format: by suffix (:func:`table_format`: ``.parquet``/``.pq``/``.parq`` Parquet; ``.tsv``/``.tab``
    tab-separated, also compressed (``.tsv.gz``); ``.csv``, ``.csv.gz``, anything else CSV), and for
    buffers without a telling name by the magic bytes ``PAR1`` (Parquet) or gzip's ``1f 8b``.

    Raises
    ------
    ValueError
        The file is missing, empty (0 bytes, or a header without rows), larger than
        :data:`MAX_FILE_BYTES` (200 MB; checked before reading), or cannot be parsed.
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
    if size is not None and size > MAX_FILE_BYTES:
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
            table = _read_parquet(source, labels)
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
            na = {c: ([""] if c in text_cols else _NA) for c in _all_columns(source, options)} \
                if text_cols else _NA
            table = pd.read_csv(source, low_memory=False, na_values=na,
                                dtype={c: str for c in text_cols} or None, **options)
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
    if table.shape[0] == 0:
        raise ValueError(f"{label} has a header but no rows")
    return table
