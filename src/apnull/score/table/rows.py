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
run never scored.
"""

from __future__ import annotations

import numpy as np
import pandas as pd

from .matrix import CHUNK, feature_matrix, row_hash, scale_in_place
from .normalize import apply_normalization

__all__ = ["PreparedRows", "hold_rows"]


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
    """

    def __init__(self, table, features, rows, similarity, exponent, hashes, normalization=None, codes=None):
        self.table = table
        self.normalization = normalization  # per-plate normalisation (:class:`.normalize.Normalization`) or None
        self.codes = codes  # (N,) stratum code of each row in ``normalization``
        self.features = list(features)
        self.rows = rows
        self.similarity = similarity
        self.exponent = int(exponent)
        self.hashes = hashes
        self.shape = (int(rows.size), len(self.features))
        self.dtype = np.dtype(np.float64)

    @property
    def nbytes(self) -> int:
        """Bytes held: the hashes and the feature columns of the table (which it keeps alive)."""
        cols = [c for c in self.features if c in self.table.columns]
        norm = 0 if self.normalization is None else (self.normalization.centre.nbytes + self.normalization.scale.nbytes
                                                     + self.codes.nbytes)
        return int(self.hashes.nbytes + norm + self.table[cols].memory_usage(index=False).sum())

    def __len__(self) -> int:
        return self.shape[0]

    def __getitem__(self, idx) -> np.ndarray:
        idx = np.arange(self.shape[0])[idx] if isinstance(idx, slice) else np.asarray(idx, dtype=np.int64)
        flat = np.atleast_1d(idx)
        missing = [c for c in self.features if c not in self.table.columns]
        if missing:
            raise ValueError(f"the scored table no longer has the feature column {missing[0]!r}; score it again")
        rows = self.rows[flat]
        if rows.size and int(rows.max()) >= len(self.table):
            raise ValueError(f"the scored table was changed after scoring (it has {len(self.table):,} rows, "
                             f"row {int(rows.max())} was scored); score it again")
        try:
            values = feature_matrix(self.table, self.features, rows)
        except (TypeError, ValueError) as err:  # a feature column that no longer holds numbers
            raise ValueError(f"the scored table was changed after scoring ({err}); score it again") from None
        with np.errstate(all="ignore"):  # changed values may not scale: the hashes say so below
            if self.normalization is not None:
                values = apply_normalization(values, self.codes[flat], self.normalization)
            scale_in_place(values, self.similarity, self.exponent)
        changed = np.flatnonzero(row_hash([], values) != self.hashes[flat])
        if changed.size:
            raise ValueError(f"the scored table was changed after scoring (row {int(rows[changed[0]])} "
                             "differs); score it again")
        return values[0] if np.ndim(idx) == 0 else values


def hold_rows(screen, table: pd.DataFrame, similarity: str) -> PreparedRows:
    """A :class:`PreparedRows` for ``screen`` (prepared from ``table``), made while ``screen.X`` is still
    the matrix: its row hashes come from it."""
    X = screen.X
    hashes = np.empty(X.shape[0], dtype=np.uint64)
    for a in range(0, X.shape[0], CHUNK):  # a chunk at a time: the run's arrays are all still alive here
        hashes[a:a + CHUNK] = row_hash([], X[a:a + CHUNK])
    return PreparedRows(table, screen.columns, screen.rows, similarity, screen.exponent, hashes,
                        screen.normalization, screen.norm_codes)
