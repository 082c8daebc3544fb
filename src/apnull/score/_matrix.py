"""The feature matrix of a screen, held once: read column by column, scaled in place, duplicates by hash.

A screen of 400,000 rows and 20 features is 64 MB of float64. Reading it through a column
selection of the table, fancy-indexing the rows and scaling with whole-array numpy expressions
makes five or six such copies at once; this module keeps one (plus chunks of :data:`CHUNK` rows):

- :func:`feature_matrix` fills a C-contiguous (rows, features) array one input column at a time;
- :func:`scale_in_place` overwrites it, :data:`CHUNK` rows at a time, with what
  :func:`._scale.unit_rows` / :func:`._scale.euclidean_rows` give for the whole array. Every row's
  result depends on that row only (and for Euclidean on one common power of two), and every chunk
  is C-contiguous like the whole array, so the values are the same bit for bit;
- :func:`duplicate_rows` marks rows equal to an earlier row in perturbation, stratum and every
  feature value (``DataFrame.duplicated(keep="first")``) by first hashing each row to 64 bits and
  comparing exactly only the rows whose hash repeats (equal rows always share a hash; -0.0 and 0.0
  hash alike, as they compare equal).
"""

from __future__ import annotations

import numpy as np
import pandas as pd

from ._scale import unit_rows

__all__ = ["CHUNK", "feature_matrix", "scale_in_place", "duplicate_rows"]

#: Rows scaled at a time (a chunk's temporaries are a few MB).
CHUNK = 16384
_MULT = np.uint64(0x9E3779B97F4A7C15)


def feature_matrix(table: pd.DataFrame, features, used: np.ndarray) -> np.ndarray:
    """(len(used), len(features)) float64, C-contiguous: ``table[features]`` at rows ``used`` as numbers
    (missing values as NaN), without a copy of the whole column selection."""
    out = np.empty((used.size, len(features)), dtype=np.float64)
    whole = used.size == len(table) and bool(np.all(used == np.arange(used.size)))
    for j, c in enumerate(features):
        col = table[c].to_numpy(dtype=np.float64, na_value=np.nan)
        out[:, j] = col if whole else col[used]
    return out


def scale_in_place(values: np.ndarray, similarity: str) -> np.ndarray:
    """``values`` (float64, C-contiguous) overwritten with its prepared rows, and returned.

    Cosine, absolute cosine: unit rows; correlation: centred unit rows (:func:`._scale.unit_rows`);
    Euclidean: all rows divided by one power of two (:func:`._scale.euclidean_rows`). Rows must not be
    degenerate (:func:`._scale.degenerate_rows`).
    """
    if similarity == "euclidean":
        if values.size == 0:
            return values
        top = max(float(np.max(values)), -float(np.min(values)))
        _, e = np.frexp(top)
        for a in range(0, values.shape[0], CHUNK):
            np.ldexp(values[a:a + CHUNK], -int(e), out=values[a:a + CHUNK])
        return values
    centre = similarity == "correlation"
    for a in range(0, values.shape[0], CHUNK):
        values[a:a + CHUNK] = unit_rows(values[a:a + CHUNK], centre)
    return values


def _row_hash(codes: list, values: np.ndarray) -> np.ndarray:
    """A uint64 hash of each row of the integer ``codes`` arrays and of ``values`` (-0.0 as 0.0)."""
    h = np.zeros(values.shape[0], dtype=np.uint64)
    with np.errstate(over="ignore"):
        for c in codes:
            h = (h ^ c.astype(np.uint64)) * _MULT
        for j in range(values.shape[1]):
            col = values[:, j] + 0.0  # -0.0 + 0.0 == +0.0
            h = (h ^ col.view(np.uint64)) * _MULT
            h ^= h >> np.uint64(29)
    return h


def duplicate_rows(labels: np.ndarray, strata: np.ndarray, values: np.ndarray) -> np.ndarray:
    """Boolean mask of rows equal to an earlier row in ``labels``, ``strata`` and every column of
    ``values`` (as ``DataFrame.duplicated(keep="first")`` on those columns)."""
    codes = [pd.factorize(labels)[0], pd.factorize(strata)[0]]
    h = _row_hash(codes, values)
    cand = np.flatnonzero(pd.Series(h).duplicated(keep=False).to_numpy())
    out = np.zeros(values.shape[0], dtype=bool)
    if cand.size:
        sub = pd.concat([pd.DataFrame({"p": labels[cand], "s": strata[cand]}), pd.DataFrame(values[cand])], axis=1)
        out[cand] = sub.duplicated(keep="first").to_numpy()
    return out


def _group_spans(order, gf, sf, tied):
    """The (start, stop) in ``order`` of each (label, stratum) group holding a position of ``tied``."""
    spans = []
    for t in np.unique(tied):
        if spans and t < spans[-1][1]:
            continue
        a, b = t, t + 2
        while a > 0 and gf[order[a - 1]] == gf[order[t]] and sf[order[a - 1]] == sf[order[t]]:
            a -= 1
        while b < order.size and gf[order[b]] == gf[order[t]] and sf[order[b]] == sf[order[t]]:
            b += 1
        spans.append((a, b))
    return spans


def grouped_rows(X: np.ndarray, labels: np.ndarray, strata: np.ndarray, members: np.ndarray) -> list:
    """The rows ``members`` (a boolean mask over X's rows) grouped by label, then by stratum.

    Returns
    -------
    list of (label, strata, reps, first)
        One entry per distinct label, labels sorted; ``strata`` the label's strata sorted; ``reps``
        per stratum the row indices in canonical order (lexicographic by the rows of X, ties in row
        order: what ``np.lexsort`` of each group's rows gives); ``first`` the label's first row.
        One stable ``np.lexsort`` of all rows by (label, stratum, X's columns) replaces a sort per
        group (its keys are read one column at a time).
    """
    rows = np.flatnonzero(members)
    keys, g = np.unique(labels[rows], return_inverse=True)
    skeys, s = np.unique(strata[rows], return_inverse=True)
    gf = np.full(X.shape[0], -1, dtype=np.int64)
    gf[rows] = g.ravel()
    sf = np.zeros(X.shape[0], dtype=np.int64)
    sf[rows] = s.ravel()
    first_col = X[:, 0] if X.shape[1] else np.zeros(X.shape[0])
    order = np.lexsort([first_col, sf, gf])
    order = order[gf[order] >= 0]
    same = (gf[order[1:]] == gf[order[:-1]]) & (sf[order[1:]] == sf[order[:-1]])
    tied = np.flatnonzero(same & (first_col[order[1:]] == first_col[order[:-1]]))
    if tied.size:  # groups with equal first values: sorted again by all columns, ties in row order
        for a, b in _group_spans(order, gf, sf, tied):
            seg = np.sort(order[a:b])
            order[a:b] = seg[np.lexsort(X[seg].T[::-1])]
    go, so = gf[order], sf[order]
    bounds = np.searchsorted(go, np.arange(keys.size + 1))
    out = []
    for k in range(keys.size):
        seg, ss = order[bounds[k]:bounds[k + 1]], so[bounds[k]:bounds[k + 1]]
        if ss[0] == ss[-1]:  # one stratum (ss is sorted)
            out.append((keys[k], [skeys[ss[0]]], [seg], int(seg.min())))
            continue
        cut = np.flatnonzero(ss[1:] != ss[:-1]) + 1
        starts = [0, *cut.tolist()]
        out.append((keys[k], [skeys[ss[a]] for a in starts], np.split(seg, cut), int(seg.min())))
    return out
