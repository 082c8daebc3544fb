"""Feature rows made ready for the kernels at any magnitude: exact power-of-two scaling.

Cosine and correlation do not depend on the scale of a row, and the ranking by Euclidean distance
does not depend on a common scale of all rows; but squaring 1e300 overflows and squaring 1e-300
underflows. Multiplying by a power of two is exact in binary floating point (unless a value is
pushed below the normal range), so every row is first divided by ``2**e``, ``e`` the binary
exponent of its largest absolute value (``np.frexp``), which brings the largest entry into
[0.5, 1): the sum of squares of d values is then at most d and cannot overflow, and it underflows
only for entries more than 2**-500 below the row's largest. For values of ordinary magnitude the
result is bit-for-bit what the unscaled computation gives.

Degenerate rows are found by exact comparisons, not by a rounded norm:

- cosine (and absolute cosine): a row is *zero* when every value is exactly 0;
- correlation: a row is *constant* when every value equals the first exactly (a row of 0.1 is
  caught like a row of 2.5, though its rounded mean differs from 0.1 in the last bit).

Distances (Euclidean, Manhattan, Chebyshev) take every row divided by one common power of two (the
ranking by a distance does not change, and |differences| and their sums cannot overflow); they have
no degenerate row. Jaccard and Hamming compare binary features (0/1, or true/false read as 1/0): the
rows are used as they are, and :func:`check_binary` refuses any other value. A row of zeros is not
degenerate there (Jaccard of two all-zero rows is 1, of an all-zero row and another 0, as scipy has it).
"""

from __future__ import annotations

import numpy as np

from .missing import ROW_WORDS

__all__ = ["unit_rows", "euclidean_rows", "degenerate_rows", "check_binary", "DISTANCES", "BINARY"]

#: Similarities that rank by minus a distance of the raw rows (scaled by one power of two, no degenerate row).
DISTANCES = ("euclidean", "manhattan", "chebyshev")
#: Similarities of binary features (values 0 or 1; :func:`check_binary`), rows used as they are.
BINARY = ("jaccard", "hamming")
#: Binary cells named in an error.
CELLS_NAMED = 5


def _pow2_exponent(values: np.ndarray, axis=None) -> np.ndarray:
    """Binary exponent e of the largest absolute value (0 where it is 0): max |x| / 2**e in [0.5, 1)."""
    top = np.max(np.abs(values), axis=axis, keepdims=axis is not None) if values.size else np.zeros(())
    _, exp = np.frexp(top)
    return exp


def degenerate_rows(X: np.ndarray, similarity: str) -> np.ndarray:
    """Boolean mask of rows for which ``similarity`` is undefined (see the module text)."""
    out = np.zeros(X.shape[0], dtype=bool)
    if similarity in DISTANCES or similarity in BINARY:
        return out
    step = max(1, (1 << 20) // max(X.shape[1], 1))  # a block of rows at a time: no mask of the whole table
    for a in range(0, X.shape[0], step):
        B = X[a:a + step]
        out[a:a + step] = np.all(B == B[:, :1], axis=1) if similarity == "correlation" else ~np.any(B != 0, axis=1)
    return out


def unit_rows(X: np.ndarray, centre: bool) -> np.ndarray:
    """Rows scaled to unit Euclidean norm (after subtracting the row mean when ``centre``).

    Each row is divided by a power of two before its mean and norm are taken (exact), so the
    result for ``c * x`` equals that for ``x`` up to rounding at any magnitude of ``c``. Rows must
    not be degenerate (:func:`degenerate_rows`): their norm would be 0.
    """
    X = np.ldexp(X, -_pow2_exponent(X, axis=1))
    if centre:
        X = X - X.mean(axis=1, keepdims=True)
        X = np.ldexp(X, -_pow2_exponent(X, axis=1))
    norms = np.sqrt(np.sum(X * X, axis=1))
    return X / norms[:, None]


def euclidean_rows(X: np.ndarray) -> np.ndarray:
    """All rows divided by one power of two (largest absolute value of the table into [0.5, 1)):
    the order of squared distances is unchanged and they cannot overflow."""
    if X.size == 0:
        return X
    return np.ldexp(X, -int(_pow2_exponent(X)))


def check_binary(X: np.ndarray, features, rows, similarity: str) -> None:
    """ValueError unless every value of ``X`` is 0 or 1 (``similarity`` one of :data:`BINARY`): the
    first column holding another value is named, with up to :data:`CELLS_NAMED` of its cells (values
    data rows, counted from 1 as in :func:`.missing.rows_text`, of the 0-based input ``rows``)."""
    bad = (X != 0) & (X != 1)
    if not bad.any():
        return
    col = int(np.flatnonzero(bad.any(axis=0))[0])
    at = np.flatnonzero(bad[:, col])
    cells = ", ".join(f"{X[r, col]:g} in data row {int(rows[r]) + 1:,}" for r in at[:CELLS_NAMED])
    more = f" and {at.size - CELLS_NAMED:,} more" if at.size > CELLS_NAMED else ""
    cols = int(bad.any(axis=0).sum())
    raise ValueError(f"{similarity} similarity compares binary features (0/1 or true/false); feature column "
                     f"{str(features[col])!r} holds {cells}{more} ({ROW_WORDS})"
                     f"{f' ({cols:,} columns hold other values)' if cols > 1 else ''}; choose the binary "
                     "columns with features=, or a similarity for continuous features (cosine, euclidean, "
                     "manhattan, ...)")
