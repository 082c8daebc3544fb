"""The feature matrix of a screen, held once: read column by column, scaled in place, duplicates by hash.

A screen of 400,000 rows and 20 features is 64 MB of float64. Reading it through a column
selection of the table, fancy-indexing the rows and scaling with whole-array numpy expressions
makes five or six such copies at once; this module keeps one (plus chunks of :data:`CHUNK` rows):

- :func:`feature_matrix` fills a C-contiguous (rows, features) array one input column at a time, or
  when every feature column is float64 or float32 a tile of whole rows (:data:`TILE_CELLS` values) at a time;
  a table whose features are all float32 (a JUMP screen) is held as float32 (:func:`compact_dtype`):
  half the memory, and its float64 values are exactly those float32 values, made per block of rows
  (:class:`.rows.BlockRows`) where the kernels need them;
- :func:`scale_in_place` overwrites it, :data:`CHUNK` rows (or :data:`SCALE_CELLS` values) at a time, with what
  :func:`._scale.unit_rows` / :func:`._scale.euclidean_rows` give for the whole array. Every row's
  result depends on that row only (and for Euclidean on one common power of two), and every chunk
  is C-contiguous like the whole array, so the values are the same bit for bit;
- :func:`duplicate_rows` marks rows equal to an earlier row in perturbation, stratum and every
  feature value (``DataFrame.duplicated(keep="first")``) by first hashing each row to 64 bits and
  comparing exactly only the rows whose hash repeats (equal rows always share a hash; -0.0 and 0.0
  hash alike, as they compare equal);
- :func:`rows_frame` reads a Parquet file's float32 columns into one row-major array that the table's
  columns are, and :func:`held_rows` finds it again (:class:`HeldRows`: the rows a run uses, read from it):
  such a table is scored without a copy of its features.
"""

from __future__ import annotations

import numpy as np
import pandas as pd

from .memory import release_arrow
from .scale import BINARY, DISTANCES, unit_rows

__all__ = ["CHUNK", "CELLS", "TILE_CELLS", "OTHERS_MOST", "compact_dtype", "float_columns", "rows_frame",
           "HeldRows", "held_rows", "feature_matrix", "euclidean_exponent", "scale_in_place", "row_hash", "duplicate_rows"]

#: Rows scaled at a time at most (a chunk's temporaries are a few MB).
CHUNK = 16384
#: Values scaled at a time at most (2 MB of float64: 355 rows at 737 features, so a wide table's chunk
#: and its temporaries stay a few MB too).
SCALE_CELLS = 1 << 18
#: Values read from float feature columns at a time (:func:`feature_matrix`: a tile of whole rows, 16 MB of
#: float32). Written a column at a time, a wide table's rows were written one value each per pass (a JUMP
#: screen's 641,984 x 737 float32 took 8 s; this way 1.1 s).
TILE_CELLS = 1 << 22
#: Values hashed at a time (:func:`row_hash`: 8 MB of float64).
CELLS = 1 << 20
_MULT = np.uint64(0x9E3779B97F4A7C15)


def compact_dtype(table: pd.DataFrame, features) -> np.dtype:
    """float32 when every feature column of ``table`` is numpy float32 (the float64 values of such a table are its
    float32 values exactly, so holding them as float32 loses nothing), else float64."""
    if not len(features) or not table.columns.is_unique:
        return np.dtype(np.float64)
    pos = table.columns.get_indexer(features)
    if (pos < 0).any():
        return np.dtype(np.float64)
    f32 = all(isinstance(t, np.dtype) and t == np.float32 for t in table.dtypes.iloc[pos])
    return np.dtype(np.float32 if f32 else np.float64)


def _float_positions(table: pd.DataFrame, features) -> np.ndarray | None:
    """The column positions of ``features`` in ``table`` when the names are unique and every one is a
    float32 or float64 column, else None."""
    if not table.columns.is_unique or not len(features):
        return None
    pos = table.columns.get_indexer(features)
    if (pos < 0).any() or not all(isinstance(t, np.dtype) and t in (np.float64, np.float32)
                                  for t in table.dtypes.iloc[pos]):
        return None
    return pos


def float_columns(table: pd.DataFrame, features) -> list | None:
    """The numpy arrays of ``table``'s feature columns (views: no copy) when every one is float32 or
    float64 and the names are unique (:func:`_float_positions`), else None: what :func:`feature_matrix`
    reads rows from when the same table is read many times (taking the arrays costs about what one pandas
    row selection costs)."""
    return None if _float_positions(table, features) is None else [table[c].to_numpy() for c in features]


def _stack_rows(columns, out: np.ndarray, used=None) -> np.ndarray:
    """``out`` (rows, len(columns)), C-contiguous, filled with row ``used[i]`` of ``columns`` (1-D arrays of
    one column each; ``used`` None: row i) in row i, a tile of :data:`TILE_CELLS` values of whole rows at a
    time: each row written whole, not one value a pass (a column at a time, every value of a wide row went
    to another cache line)."""
    step = max(1, TILE_CELLS // max(len(columns), 1))
    for a in range(0, out.shape[0], step):
        rows = slice(a, a + step) if used is None else used[a:a + step]
        np.stack([col[rows] for col in columns], axis=1, out=out[a:a + step])
    return out


#: At most this many columns besides the float32 ones for :func:`rows_frame` (each is inserted into the frame).
OTHERS_MOST = 64


def rows_frame(parts: list, keep=(), finish=None):
    """``parts`` (pyarrow Tables of the same columns: a Parquet file's row groups, in order) as one DataFrame
    whose float32 columns are the columns of one C-contiguous (rows, k) float32 array, its other columns
    (and those named in ``keep``, and those pandas wrote as another dtype, such as its nullable ``Float32``)
    as pyarrow gives them after ``finish(table)`` (e.g. label columns cast to text), in the table's order; or
    None, ``parts`` untouched, when they have fewer than two such float32 columns or more than
    :data:`OTHERS_MOST` others.

    A profile's values are then side by side, as the scoring reads them: :func:`held_rows` finds the array,
    and a screen read this way is prepared and drawn without a copy of its features. Each part's float32
    columns are copied into the array a tile of whole rows at a time (:data:`TILE_CELLS`; missing values
    become NaN, as pandas reads them) and let go before the next part (``parts`` is emptied as it is read),
    so the file is held about once (a JUMP screen of 641,984 x 737 float32: 1.8 GiB)."""
    import pyarrow as pa

    if not parts:
        return None
    schema = parts[0].schema
    names = schema.names
    meta = schema.pandas_metadata or {}  # a column pandas wrote as another dtype (Float32) stays one
    other = {c.get("field_name") for c in meta.get("columns", []) if c.get("numpy_type") not in (None, "float32")}
    f32 = [c for c, t in zip(names, schema.types) if pa.types.is_float32(t) and c not in keep and c not in other]
    if len(f32) < 2 or len(names) - len(f32) > OTHERS_MOST:
        return None
    values = np.empty((sum(p.num_rows for p in parts), len(f32)), dtype=np.float32)
    at, rest = 0, []
    for i in range(len(parts)):
        part, parts[i] = parts[i], None
        for batch in part.select(f32).to_batches():  # each column's values taken once a batch
            cols = [col.to_numpy(zero_copy_only=False) for col in batch.columns]
            _stack_rows(cols, values[at:at + batch.num_rows])
            at += batch.num_rows
        rest.append(part.drop_columns(f32))
        part = batch = cols = None  # the part's float32 buffers go back before the next part is copied
        release_arrow()
    others = pa.concat_tables(rest)
    del rest
    others = (finish(others) if finish else others).to_pandas(split_blocks=True, self_destruct=True)
    frame = pd.DataFrame(values, columns=f32, index=others.index, copy=False)
    place = 0
    for c in names:  # the other columns in their places (an index column pandas restored is not one)
        if c in others.columns and c not in frame.columns:
            frame.insert(place, c, others[c])
        place += c in frame.columns
    return frame


class HeldRows:
    """Rows ``rows`` (None: every row) of the float32 array ``array`` a table holds its features in
    (:func:`held_rows`), as the preparation reads a feature matrix, without a copy of the whole: a block of
    rows by a slice (a view when every row is used), rows by index or mask and ``[rows, columns]`` gathered
    (a copy of what is asked), the whole as an array when asked (``np.asarray``), and :meth:`where_rows`,
    the rows a mask keeps, again without a copy."""

    def __init__(self, array: np.ndarray, rows: np.ndarray | None = None):
        self.array, self.rows = array, rows
        self.shape = (array.shape[0] if rows is None else rows.size, array.shape[1])
        self.dtype, self.ndim = array.dtype, 2

    @property
    def size(self) -> int:
        return self.shape[0] * self.shape[1]

    @property
    def nbytes(self) -> int:
        return self.size * self.dtype.itemsize

    def __len__(self) -> int:
        return self.shape[0]

    def _at(self, key):
        return key if self.rows is None else self.rows[key]

    def __getitem__(self, key) -> np.ndarray:
        if not isinstance(key, tuple):
            return self.array[self._at(key)]
        rows, cols = key
        rows = self._at(rows)
        if isinstance(rows, slice) or isinstance(cols, slice) or np.ndim(cols) == 0:
            return self.array[rows, cols]
        return self.array[np.ix_(rows, cols)]  # rows and columns by index or mask: one copy

    def __array__(self, dtype=None, copy=None) -> np.ndarray:
        out = self.array if self.rows is None else self.array[self.rows]
        return out if dtype is None else out.astype(dtype, copy=False)

    def where_rows(self, keep: np.ndarray) -> "HeldRows":
        """The rows ``keep`` (a mask of this one's rows) marks, still read from ``array``."""
        return HeldRows(self.array, np.flatnonzero(keep) if self.rows is None else self.rows[keep])


def held_rows(table: pd.DataFrame, features, used: np.ndarray, columns=None) -> HeldRows | None:
    """The float32 array ``table``'s columns ``features`` are (:func:`rows_frame`), when they are side by side
    in it in its order (all of its columns, or a run of them: a view), at the rows ``used``
    (:class:`HeldRows`): the features as the scoring reads them, with no copy (the table's own values: read,
    never written); else None. ``columns``: :func:`float_columns` of ``table`` and ``features``, when the
    caller has them already."""
    cols = float_columns(table, features) if columns is None else columns
    base = cols[0].base if cols else None
    if (not isinstance(base, np.ndarray) or base.dtype != np.float32 or not base.flags.c_contiguous
            or base.ndim != 2 or base.shape[0] != len(table) or len(cols) > base.shape[1]):
        return None
    first, left = divmod(cols[0].ctypes.data - base.ctypes.data, base.itemsize)
    if left or first < 0 or first + len(cols) > base.shape[1]:
        return None
    start = base.ctypes.data + base.itemsize * first
    if not all(c.base is base and c.strides == base.strides[:1] and c.ctypes.data == start + base.itemsize * j
               for j, c in enumerate(cols)):
        return None
    array = base if len(cols) == base.shape[1] else base[:, first:first + len(cols)]
    return HeldRows(array, None if _every_row(used, len(table)) else np.asarray(used, dtype=np.int64))


def _every_row(used: np.ndarray, n: int) -> bool:
    """Whether ``used`` is every row of a table of ``n``, in order (0, 1, ..., n - 1)."""
    return used.size == n and bool(np.array_equal(used, np.arange(n)))


def feature_matrix(table: pd.DataFrame, features, used: np.ndarray, dtype=np.float64, columns=None) -> np.ndarray:
    """(len(used), len(features)) ``dtype`` (float64, or float32 for a table whose features are all float32:
    :func:`compact_dtype`), C-contiguous: ``table[features]`` at rows ``used`` as numbers (missing values
    as NaN), without a copy of the whole column selection. float32 cells become float64 exactly.

    Float columns (or ``columns``: their arrays, :func:`float_columns` of this table, taken once by a caller
    that reads a few rows many times) are read a tile of whole rows at a time (:data:`TILE_CELLS`); other
    columns a column at a time, as numbers."""
    dtype = np.dtype(dtype)
    if dtype != np.float64 and compact_dtype(table, features) != dtype:
        raise ValueError(f"feature_matrix: {dtype} only for a table whose features are all {dtype}")
    out = np.empty((used.size, len(features)), dtype=dtype)
    whole = _every_row(used, len(table))
    if columns is None:
        columns = float_columns(table, features)
    if columns is not None:
        return _stack_rows(columns, out, None if whole else used)
    for j, c in enumerate(features):
        col = table[c].to_numpy(dtype=np.float64, na_value=np.nan)
        out[:, j] = col if whole else col[used]
    return out


def euclidean_exponent(values: np.ndarray) -> int:
    """The binary exponent e of the table's largest absolute value (``np.frexp``; 0 for no values): the
    power of two :func:`scale_in_place` divides every row by for Euclidean similarity."""
    if values.size == 0:
        return 0
    top = 0.0
    for a in range(0, values.shape[0], CHUNK):  # a block of rows at a time (``values`` may be :class:`HeldRows`)
        block = values[a:a + CHUNK]
        top = max(top, float(np.max(block)), -float(np.min(block)))
    return int(np.frexp(top)[1])


def scale_in_place(values: np.ndarray, similarity: str, exponent=None) -> np.ndarray:
    """``values`` (float64, C-contiguous) overwritten with its prepared rows, and returned.

    Cosine, absolute cosine: unit rows; correlation: centred unit rows (:func:`._scale.unit_rows`);
    Euclidean, Manhattan, Chebyshev: all rows divided by one power of two (:func:`._scale.euclidean_rows`):
    2 ** ``exponent``, by default :func:`euclidean_exponent` of ``values`` (give the whole table's to
    prepare some of its rows alone); Jaccard, Hamming: unchanged (0/1 values). Rows must not be degenerate
    (:func:`._scale.degenerate_rows`).
    """
    if similarity in BINARY:
        return values
    if similarity in DISTANCES:
        if values.size == 0:
            return values
        e = euclidean_exponent(values) if exponent is None else int(exponent)
        for a in range(0, values.shape[0], CHUNK):
            np.ldexp(values[a:a + CHUNK], -e, out=values[a:a + CHUNK])
        return values
    centre = similarity == "correlation"
    step = max(1, min(CHUNK, SCALE_CELLS // max(values.shape[1], 1)))
    for a in range(0, values.shape[0], step):
        values[a:a + step] = unit_rows(values[a:a + step], centre)
    return values


def _column_keys(d: int) -> np.ndarray:
    """(d,) odd uint64 multipliers, one for each column position (SplitMix64 of the position, made odd)."""
    z = (np.arange(1, d + 1, dtype=np.uint64) * _MULT)
    with np.errstate(over="ignore"):
        z = (z ^ (z >> np.uint64(30))) * np.uint64(0xBF58476D1CE4E5B9)
        z = (z ^ (z >> np.uint64(27))) * np.uint64(0x94D049BB133111EB)
    return (z ^ (z >> np.uint64(31))) | np.uint64(1)


def row_hash(codes: list, values: np.ndarray, progress=None) -> np.ndarray:
    """A uint64 hash of each row of the integer ``codes`` arrays and of ``values`` (-0.0 as 0.0).

    Each value's float64 bits ``u`` (float32 values as their float64 values, so both hash alike) become
    ``t_j = m(g(u) * k_j)``, with ``g(u) = u ^ (u >> 29)``, ``m(v) = v ^ (v >> 32)`` and ``k_j`` an odd
    key of column j (:func:`_column_keys`); the row's hash mixes the codes and the sum of its ``t_j``
    modulo 2**64. ``g``, ``m`` and multiplying by an odd number are one-to-one, so a row that differs in
    one value always hashes differently; rows that differ in more collide by a chance of about 2**-64.
    Equal rows hash alike. Whole blocks of rows are hashed at a time (a few numpy passes, not one a
    column), :data:`CELLS` values at most; ``progress(done, total)`` after each block when given."""
    n, d = values.shape
    h = np.zeros(n, dtype=np.uint64)
    keys = _column_keys(d)
    step = max(1, CELLS // max(d, 1))
    with np.errstate(over="ignore"):
        for c in codes:
            h = (h ^ c.astype(np.uint64)) * _MULT
        for a in range(0, n, step):
            block = values[a:a + step].astype(np.float64)  # a copy (float32 as its float64 value)
            block += 0.0  # -0.0 + 0.0 == +0.0
            u = block.view(np.uint64)
            u ^= u >> np.uint64(29)
            u *= keys
            u ^= u >> np.uint64(32)
            s = h[a:a + step] ^ u.sum(axis=1, dtype=np.uint64)
            s *= _MULT
            h[a:a + step] = s ^ (s >> np.uint64(29))
            if progress:
                progress(min(a + step, n), n)
    return h


def duplicate_rows(labels: np.ndarray, strata: np.ndarray, values: np.ndarray, progress=None) -> np.ndarray:
    """Boolean mask of rows equal to an earlier row in ``labels``, ``strata`` and every column of
    ``values`` (as ``DataFrame.duplicated(keep="first")`` on those columns); ``progress(done, total)``
    as the rows are hashed, when given."""
    codes = [pd.factorize(labels)[0], pd.factorize(strata)[0]]
    h = row_hash(codes, values, progress)
    cand = np.flatnonzero(pd.Series(h).duplicated(keep=False).to_numpy())
    out = np.zeros(values.shape[0], dtype=bool)
    if cand.size:
        sub = pd.concat([pd.DataFrame({"p": labels[cand], "s": strata[cand]}), pd.DataFrame(values[cand])], axis=1)
        out[cand] = sub.duplicated(keep="first").to_numpy()
    return out
