"""Reading a user's table: CSV or Parquet, with a size limit checked before anything is read."""

from __future__ import annotations

import io
import os
from pathlib import Path

import pandas as pd

from ..limits import SCORE_MAX_FILE_BYTES as MAX_FILE_BYTES

__all__ = ["read_table", "MAX_FILE_BYTES"]

# MAX_FILE_BYTES: the largest file read_table accepts, 200 MB, checked before reading (see
# apnull.limits). Split larger screens by plate or batch, or score a DataFrame you read yourself.

_PARQUET = (".parquet", ".pq", ".parq")
_TSV = (".tsv", ".tab")
#: Cells read as missing in CSV files (pandas' defaults minus "null", "None", "n/a", ...: a perturbation
#: may well be called "null").
_NA = ["", "NA", "NaN", "nan", "N/A", "#N/A", "-nan", "-NaN"]


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


def read_table(path_or_buffer, name: str | None = None) -> pd.DataFrame:
    """Read a CSV or Parquet table of profiles or rankings.

    Parameters
    ----------
    path_or_buffer : str, path, bytes or binary file-like (e.g. a Streamlit upload)
    name : str, optional
        File name used to pick the format for buffers (defaults to the buffer's ``.name``).

    Format: by suffix (``.parquet``/``.pq`` Parquet; ``.tsv`` tab-separated; ``.csv``, ``.csv.gz``,
    anything else CSV), and for buffers without a telling name by the magic bytes ``PAR1`` (Parquet)
    or gzip's ``1f 8b``.

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
    parquet = lower.endswith(_PARQUET) or head == b"PAR1"
    try:
        if parquet:
            table = pd.read_parquet(source)
        else:
            sep = "\t" if lower.endswith(_TSV) else ","
            compression = "gzip" if head[:2] == b"\x1f\x8b" else "infer"
            if not isinstance(source, (str, os.PathLike)):
                compression = "gzip" if head[:2] == b"\x1f\x8b" else None
            table = pd.read_csv(source, sep=sep, compression=compression, low_memory=False,
                                keep_default_na=False, na_values=_NA)
    except pd.errors.EmptyDataError:
        raise ValueError(f"{label} has no columns; give a CSV with a header row") from None
    except UnicodeDecodeError:
        raise ValueError(f"{label} is not a text CSV or a Parquet file") from None
    except Exception as exc:  # parser / arrow errors: one readable sentence
        kind = "Parquet" if parquet else "CSV"
        msg = " ".join(str(exc).split())[:200]
        raise ValueError(f"could not read {label} as {kind}: {msg}") from None
    if table.shape[1] == 0:
        raise ValueError(f"{label} has no columns")
    if table.shape[0] == 0:
        raise ValueError(f"{label} has a header but no rows")
    return table
