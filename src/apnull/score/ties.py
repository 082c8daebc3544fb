"""Tie-aware Average Precision and Precision@R of scored items.

When several items share a score their order is arbitrary. apnull scores such a ranking by the
expected AP over all orders of each tied block (every order equally likely), in closed form: a block
of L tied items holding a positives, ranked after ``start`` items of which ``before`` are positives,
contributes ``sum_{p=1..L} (a/L) * (before + 1 + (p-1)(a-1)/(L-1)) / (start + p)`` to ``m * AP``
(slot p is positive with probability a/L, and given that, the positives up to and including it
number ``before + 1 + (p-1)(a-1)/(L-1)`` on average). Precision@R is likewise the expected hits in the
top R = m ranks divided by m. Without ties both reduce to the usual definitions.

Note: copairs ranks a tied positive before tied negatives (optimistic); apnull does not.
"""

from __future__ import annotations

import numpy as np

from ..metrics import as_relevance
from .kernels.ranking import tie_aware_from_sorted

__all__ = ["tie_aware_ap", "tie_aware_precision_at_r", "tie_aware_scores"]


def _prepare(scores, relevant):
    s = np.asarray(scores, dtype=float).ravel()
    r = np.asarray(relevant).ravel()
    if s.size != r.size:
        raise ValueError(f"scores and relevant must have the same length, got {s.size} and {r.size}")
    if s.size == 0:
        raise ValueError("the ranking is empty: give at least one scored item")
    if not np.all(np.isfinite(s)):
        raise ValueError(f"scores must be finite numbers; {int(np.sum(~np.isfinite(s)))} are NaN or infinite")
    r = as_relevance(r)
    if not r.any():
        raise ValueError("the ranking has no relevant item (m = 0): AP is undefined")
    order = np.argsort(-s, kind="mergesort")
    return s[order], r[order]


def tie_aware_scores(scores, relevant) -> tuple[float, float]:
    """(AP, Precision@R), both tie-aware; see :func:`tie_aware_ap`."""
    s, r = _prepare(scores, relevant)
    ap, pr = tie_aware_from_sorted(s, r)
    return float(ap), float(pr)


def tie_aware_ap(scores, relevant) -> float:
    """Expected Average Precision over all orders of tied scores; higher score ranks first.

    Parameters
    ----------
    scores : array of float
        One score per item; larger = more similar = ranked higher. Must be finite.
    relevant : array of bool or 0/1
        True for the positives (m >= 1 of them).

    Returns
    -------
    float
        ``AP = (1/m) sum_i i / r_i`` when all scores are distinct (equal to
        :func:`apnull.average_precision` of the sorted labels and to scikit-learn's
        ``average_precision_score``); with ties, the mean of that AP over every order of each tied
        block, computed in closed form (module docstring), not by enumeration. Blocks of more than
        64 items use harmonic numbers (error below 1e-15).

    Raises
    ------
    ValueError
        For mismatched lengths, an empty ranking, non-finite scores or no relevant item.

    Notes
    -----
    copairs ranks a tied positive first (optimistic); here ties cost what they cost on average.
    """
    return tie_aware_scores(scores, relevant)[0]


def tie_aware_precision_at_r(scores, relevant) -> float:
    """Expected Precision@R (R = m) over all orders of tied scores; equals R-precision without ties."""
    return tie_aware_scores(scores, relevant)[1]
