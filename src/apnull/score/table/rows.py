"""The prepared feature rows of a scored screen, read again from the input table when asked.

Scoring needs every prepared row at once (:class:`._prepare.Screen` ``X``: 64 MB for 400,000 rows
of 20 features); a finished result needs only a few of them, when the null of one perturbation is
drawn again (``ScoreResult.null_maps``). Holding the whole matrix for that would keep the largest
array of the run alive next to the output tables. :class:`PreparedRows` stands in for it once the
run is over: it holds the input table (the caller's own object: no copy), the feature columns, the
table row of each prepared row and one 64-bit hash per row (8 bytes a row instead of 8 per value).
``rows[idx]`` reads the rows ``idx`` from the table, prepares them as the run did and returns them
bit for bit: every prepared row depends on its own values only (with ``normalize=``, and on its
plate's centre and scale, kept here: S x d values twice) (Euclidean: and on the run's common
power of two, kept here), as :func:`._matrix.scale_in_place` states. If the table was changed
since the run, the hashes differ and ``rows[idx]`` raises ValueError instead of returning rows the
run never scored. A large float32 table's run reads its rows through a :class:`PreparedRows` too, from the
float32 copy its preparation made (row-major: a group of rows is one gather, where the table's columns
would be one gather each); :func:`let_go` drops that copy when the run ends.
"""

from __future__ import annotations

import contextlib
from typing import NamedTuple

import numpy as np
import pandas as pd

from .matrix import CHUNK, HeldRows, compact_dtype, feature_matrix, float_columns, row_hash, scale_in_place

#: Values prepared at a time by :class:`BlockRows` when many rows are asked one column of, or hashed (2 MB of
#: float64, and a few temporaries of that size while a block is scaled: 355 rows at 737 features).
BLOCK_CELLS = 1 << 18
#: Most float64 values of prepared rows a run holds at once when a table's features are float32: a screen
#: of at most this many values is prepared whole, as a float64 table is (a part of the engine would copy
#: about all of its rows anyway); a larger one is prepared a block at a time and read a part of at most
#: this many values at a time (:data:`..nulls.permutation.PART_CELLS`). 64 MB: 11,382 rows at 737 features.
FLOAT64_CELLS = 1 << 23
from .normalize import apply_normalization

__all__ = ["FLOAT64_CELLS", "held_whole", "RawRows", "sent_rows", "received_rows", "PreparedRows", "BlockRows",
           "hold_rows", "let_go", "prepared_hashes", "reading"]


def held_whole(values) -> bool:
    """Whether a run holds a screen's prepared rows ``values`` (an array, or its float32 features) whole in
    float64: at most :data:`FLOAT64_CELLS` values."""
    return values.size <= FLOAT64_CELLS


def _split_key(key):
    """(rows, column or None) of ``X[rows]`` or ``X[rows, column]``."""
    if isinstance(key, tuple):
        if len(key) != 2:
            raise IndexError("prepared rows take X[rows] or X[rows, column]")
        return key
    return key, None


def _rows_of(key, size: int) -> np.ndarray:
    return np.arange(size)[key] if isinstance(key, slice) else np.asarray(key, dtype=np.int64)


def _block_rows(width: int) -> int:
    """Rows of a block of :data:`BLOCK_CELLS` values at ``width`` features."""
    return max(1, BLOCK_CELLS // max(int(width), 1))


def _column_in_chunks(get, idx: np.ndarray, col, width: int) -> np.ndarray:
    """``get(rows)[:, col]`` for ``idx``, a block of rows at a time (:func:`_block_rows`: one column of many
    rows without holding their whole prepared rows)."""
    flat = np.atleast_1d(idx)
    out = np.empty(flat.size, dtype=np.float64)
    step = _block_rows(width)
    for a in range(0, flat.size, step):
        out[a:a + step] = get(flat[a:a + step])[:, col]
    return out[0] if np.ndim(idx) == 0 else out


class RawRows(NamedTuple):
    """Some rows of a screen as its table holds them (float32 features stay float32), with what preparing them
    needs: what a dask worker is sent in place of their prepared float64 rows (half the bytes for a float32
    table, and the preparing done on the worker, not on the client), made ready there by :meth:`prepared`,
    bit for bit the rows the screen's ``X`` gives (:meth:`PreparedRows.raw`)."""

    values: np.ndarray              #: (n, d) the rows' values as the table holds them
    similarity: str
    exponent: int
    codes: np.ndarray | None        #: each row's stratum code in ``normalization`` (None: no normalisation)
    normalization: object           #: the per-plate normalisation (:class:`.normalize.Normalization`) or None
    hashes: np.ndarray | None       #: each prepared row's :func:`.matrix.row_hash` (None: not checked)
    rows: np.ndarray | None         #: each row's position in the table (named when a hash differs)

    def prepared(self) -> np.ndarray:
        """(n, d) float64, C-contiguous: the prepared rows (float32 values become float64 exactly, then
        normalised and scaled as the run did); ValueError when a hash differs (the table changed since the
        screen was prepared)."""
        values = np.array(self.values, dtype=np.float64, order="C")  # a copy: scaled in place below
        with np.errstate(all="ignore"):  # changed values may not scale: the hashes say so below
            if self.normalization is not None:
                values = apply_normalization(values, self.codes, self.normalization)
            scale_in_place(values, self.similarity, self.exponent)
        if self.hashes is not None:
            changed = np.flatnonzero(row_hash([], values) != self.hashes)
            if changed.size:
                raise ValueError(f"the scored table was changed after scoring (row {int(self.rows[changed[0]])} "
                                 "differs); score it again")
        return values


def sent_rows(X, idx):
    """Rows ``idx`` of a screen's ``X`` to send to a dask worker: their :class:`RawRows` where ``X`` reads its
    rows from the table when asked (:class:`PreparedRows`), else a copy of the prepared rows."""
    return X.raw(idx) if isinstance(X, PreparedRows) else np.ascontiguousarray(X[idx])


def received_rows(rows) -> np.ndarray:
    """Rows :func:`sent_rows` gave, prepared (on the worker that received them)."""
    return rows.prepared() if isinstance(rows, RawRows) else rows


class BlockRows:
    """Stands in for the prepared matrix ``X`` of a screen whose features are all float32: ``self[idx]`` is
    ``X[idx]`` (float64, C-contiguous), made when asked from the float32 values held.

    The float64 path converts the float32 table to float64 (exactly) and prepares every row
    (:func:`.matrix.scale_in_place`); each prepared row depends on its own values only (and, for the
    distances, on the common power of two ``exponent``), so preparing some rows alone gives the same
    bits. The whole table is then never held in float64: 4 bytes a value instead of 8 (a JUMP screen of
    641,888 rows x 737 features: 1.9 GB instead of 3.8 GB). ``self[rows, j]`` is column j of those rows,
    prepared a chunk at a time; once :meth:`hashes` has prepared every row, their first column is kept
    (8 bytes a row: the column the grouping and the pools' order sort by first) and read from there.
    """

    def __init__(self, values: np.ndarray, similarity: str, exponent: int):
        self.values = values
        self.similarity = similarity
        self.exponent = int(exponent)
        self.shape = values.shape
        self.dtype = np.dtype(np.float64)
        self.first = None

    def __len__(self) -> int:
        return self.shape[0]

    def rows(self, idx) -> np.ndarray:
        """The prepared float64 rows ``idx`` (an index array or a slice; (rows, d), C-contiguous)."""
        return scale_in_place(self.values[idx].astype(np.float64), self.similarity, self.exponent)

    def __getitem__(self, key) -> np.ndarray:
        key, col = _split_key(key)
        idx = _rows_of(key, self.shape[0])
        if col is not None:
            if self.first is not None and col == 0:
                return self.first[idx]
            return _column_in_chunks(self.rows, idx, col, self.shape[1])
        out = self.rows(np.atleast_1d(idx))
        return out[0] if np.ndim(idx) == 0 else out

    def hashes(self, progress=None) -> np.ndarray:
        """(N,) uint64 :func:`.matrix.row_hash` of every prepared row, made a block at a time (one pass:
        each row is prepared once), keeping their first column; ``progress(done, total)`` after each
        block when given."""
        n, d = self.shape
        out = np.empty(n, dtype=np.uint64)
        first = np.empty(n, dtype=np.float64)
        step = _block_rows(d)
        for a in range(0, n, step):
            b = min(a + step, n)
            block = self.rows(slice(a, b))  # a view of the float32 values: one copy, to float64
            out[a:b] = row_hash([], block)
            if d:
                first[a:b] = block[:, 0]
            if progress:
                progress(b, n)
        self.first = first if d else None
        return out


class PreparedRows:
    """Stands in for the prepared matrix ``X`` of a screen: ``self[idx]`` is ``X[idx]`` (see the module).

    Parameters
    ----------
    table : DataFrame
        The input table the screen was prepared from (held, never modified).
    features : list
        Its feature columns, in the screen's order.
    rows : (N,) int64
        The table row (0-based position) of each prepared row.
    similarity : str
        How the rows were prepared (:func:`._matrix.scale_in_place`).
    exponent : int
        Euclidean: the common power of two every row was divided by (else unused).
    hashes : (N,) uint64
        :func:`._matrix.row_hash` of each prepared row.
    kept : (N, d) float32 array or :class:`.matrix.HeldRows`, optional
        The rows' float32 values as the screen read them (row-major), while the run that prepared them lasts:
        a part's rows are then one gather of whole rows, not one a column from the table, and need no hash
        (the run's own copy, or the table's own array read through :class:`.matrix.HeldRows`). :func:`let_go`
        ends it; from then on rows are read from the table.
    """

    def __init__(self, table, features, rows, similarity, exponent, hashes, normalization=None, codes=None,
                 kept=None):
        self.table = table
        self.kept = kept
        self.normalization = normalization  # per-plate normalisation (:class:`.normalize.Normalization`) or None
        self.codes = codes  # (N,) stratum code of each row in ``normalization``
        self.features = list(features)
        self.rows = rows
        self.similarity = similarity
        self.exponent = int(exponent)
        self.hashes = hashes
        self.shape = (int(rows.size), len(self.features))
        self.dtype = np.dtype(np.float64)
        self.columns = None  # the feature columns' arrays while a run reads rows (:func:`reading`)

    @property
    def nbytes(self) -> int:
        """Bytes held: the hashes, the kept rows (a copy; rows read from the table's own array are the table's)
        and the feature columns of the table (which it keeps alive)."""
        cols = [c for c in self.features if c in self.table.columns]
        norm = 0 if self.normalization is None else (self.normalization.centre.nbytes + self.normalization.scale.nbytes
                                                     + self.codes.nbytes)
        kept = 0 if self.kept is None or isinstance(self.kept, HeldRows) else self.kept.nbytes
        return int(self.hashes.nbytes + norm + kept + self.table[cols].memory_usage(index=False).sum())

    def __len__(self) -> int:
        return self.shape[0]

    def __getitem__(self, key) -> np.ndarray:
        key, col = _split_key(key)
        idx = _rows_of(key, self.shape[0])
        if col is not None:
            return _column_in_chunks(self.__getitem__, idx, col, self.shape[1])
        values = self.raw(np.atleast_1d(idx)).prepared()
        return values[0] if np.ndim(idx) == 0 else values

    def raw(self, idx) -> RawRows:
        """The :class:`RawRows` of the prepared rows ``idx``: read from the table as it holds them, with their
        plates' normalisation and their hashes (:meth:`RawRows.prepared` checks them); from the kept rows while
        the run lasts (nothing to check)."""
        flat = np.asarray(idx, dtype=np.int64)
        if self.kept is not None:
            return RawRows(values=self.kept[flat], similarity=self.similarity, exponent=self.exponent, codes=None,
                           normalization=None, hashes=None, rows=self.rows[flat])
        missing = [c for c in self.features if c not in self.table.columns]
        if missing:
            raise ValueError(f"the scored table no longer has the feature column {missing[0]!r}; score it again")
        rows = self.rows[flat]
        if rows.size and int(rows.max()) >= len(self.table):
            raise ValueError(f"the scored table was changed after scoring (it has {len(self.table):,} rows, "
                             f"row {int(rows.max())} was scored); score it again")
        try:
            values = feature_matrix(self.table, self.features, rows, compact_dtype(self.table, self.features),
                                    columns=self.columns)
        except (TypeError, ValueError) as err:  # a feature column that no longer holds numbers
            raise ValueError(f"the scored table was changed after scoring ({err}); score it again") from None
        codes = self.codes[flat] if self.normalization is not None else None
        return RawRows(values, self.similarity, self.exponent, codes, self.normalization, self.hashes[flat], rows)


@contextlib.contextmanager
def reading(X):
    """While a run reads rows of ``X`` (a :class:`PreparedRows`; anything else: nothing is done) many
    times: its table's feature columns taken once (:func:`.matrix.float_columns`: views, no copy) and the
    rows gathered from them, let go when the block ends. Outside the block every read takes the table's
    columns again, so a table changed after the run is seen (and refused by the hashes)."""
    if not isinstance(X, PreparedRows) or X.columns is not None or X.kept is not None:
        yield
        return
    X.columns = float_columns(X.table, X.features)
    try:
        yield
    finally:
        X.columns = None


def let_go(X) -> None:
    """The run that prepared ``X`` is over: a :class:`PreparedRows` lets its kept rows go (its rows are read
    from the table from now on); anything else: nothing is done."""
    if isinstance(X, PreparedRows):
        X.kept = None


def prepared_hashes(X, progress=None) -> np.ndarray:
    """(N,) uint64 :func:`.matrix.row_hash` of every prepared row of ``X`` (an array or a :class:`BlockRows`:
    :meth:`BlockRows.hashes`), a chunk at a time; ``progress(done, total)`` after each chunk when given."""
    if isinstance(X, BlockRows):
        return X.hashes(progress)
    hashes = np.empty(X.shape[0], dtype=np.uint64)
    for a in range(0, X.shape[0], CHUNK):  # a block at a time: the run's arrays are all still alive here
        b = min(a + CHUNK, X.shape[0])
        hashes[a:b] = row_hash([], X[a:b])
        if progress:
            progress(b, X.shape[0])
    return hashes


def hold_rows(screen, table: pd.DataFrame, similarity: str) -> PreparedRows:
    """A :class:`PreparedRows` for ``screen`` (prepared from ``table``), made while ``screen.X`` is still
    the matrix: its row hashes come from it (``screen.X`` itself when it reads the table already)."""
    if isinstance(screen.X, PreparedRows):
        return screen.X
    return PreparedRows(table, screen.columns, screen.rows, similarity, screen.exponent, prepared_hashes(screen.X),
                        screen.normalization, screen.norm_codes)
