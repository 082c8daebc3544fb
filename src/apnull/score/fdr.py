"""Benjamini-Hochberg q-values."""

from __future__ import annotations

import numpy as np

__all__ = ["benjamini_hochberg"]


def benjamini_hochberg(pvalues) -> np.ndarray:
    """Benjamini-Hochberg adjusted p-values (q-values), in the input order.

    With the T finite p-values sorted ascending, p_(1) <= ... <= p_(T),
    ``q_(i) = min_{j >= i} min(1, T * p_(j) / j)``: monotone in p and capped at 1. Rejecting every
    hypothesis with q <= alpha controls the false discovery rate at alpha (independent or positively
    dependent tests). NaN p-values stay NaN and do not count in T. An empty input gives an empty array.

    Raises
    ------
    ValueError
        If a p-value lies outside [0, 1].
    """
    p = np.asarray(pvalues, dtype=float).ravel()
    q = np.full(p.shape, np.nan)
    ok = ~np.isnan(p)
    if not ok.any():
        return q
    vals = p[ok]
    if np.any((vals < 0) | (vals > 1)):
        raise ValueError("p-values must lie between 0 and 1")
    T = vals.size
    order = np.argsort(vals, kind="mergesort")
    ranked = vals[order] * T / np.arange(1, T + 1)
    ranked = np.minimum.accumulate(ranked[::-1])[::-1]
    out = np.empty(T)
    out[order] = np.minimum(ranked, 1.0)
    q[ok] = out
    return q
