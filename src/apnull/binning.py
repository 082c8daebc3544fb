"""Nonlinear binning of the number of negatives n.

Computing a null for every (m, n) is wasteful when n varies a lot and m little; instead n is put
into bins whose width grows with n, and one null per bin serves all its n. The breakpoints are
``seq(1, max_value^(1/power), 1)^power`` in R's notation: ``b_i = i^power`` for
i = 1, 2, ..., floor(max_value^(1/power)). With power > 1 the widths ``b_{i+1} - b_i`` grow like
``power * i^(power-1)``; the last breakpoint is at most ``max_value`` (for the defaults 300 and 1.3
it is 80^1.3 = 297.9).

Bins: bin 0 holds n = 0 (no negatives, below the first breakpoint 1); bin i >= 1 holds the whole
numbers n with ``b_i <= n < b_{i+1}``; the last bin is open-ended (every n >= the last breakpoint).
"""

from __future__ import annotations

import math

import numpy as np
import pandas as pd

from .limits import BINNING_MAX_VALUE, BINNING_POWER_RANGE, as_int, as_real, check_choice

__all__ = ["breakpoints", "bin_index", "bin_members", "representative_n", "bin_table", "REPRESENTATIVES"]

#: Ways to pick the n that stands for a bin. "lower" (the default) is the smallest n in the bin:
#: the AP null threshold falls as n grows, so using the smallest n gives the highest threshold of the
#: bin and never lets a ranking pass that its exact n would fail (conservative).
REPRESENTATIVES = ("lower", "upper", "middle")


def breakpoints(max_value=300, power=1.3) -> np.ndarray:
    """Breakpoints ``i^power`` for i = 1..floor(max_value^(1/power)).

    Parameters
    ----------
    max_value : float
        Upper end (>= 1, at most 10^6); the last breakpoint is <= max_value.
    power : float
        Growth exponent in [1, 5]; 1 gives unit bins.

    Returns
    -------
    numpy.ndarray of float, increasing, starting at 1.
    """
    mx = as_real(max_value, "max_value", 1.0, BINNING_MAX_VALUE)
    p = as_real(power, "power", *BINNING_POWER_RANGE, why=" (widths must be at least 1)")
    # floor of max^(1/p), guarded against rounding (e.g. 8^(1/3) = 1.9999999999999998)
    top = math.floor(mx ** (1.0 / p) + 1e-9)
    while top > 1 and top**p > mx * (1 + 1e-12):
        top -= 1
    return np.arange(1, top + 1, dtype=float) ** p


def bin_index(n, bps) -> np.ndarray | int:
    """Bin of each n (0 for n = 0, i for b_i <= n < b_{i+1}); vectorised over n."""
    arr = np.asarray(n)
    if np.any(arr < 0):
        raise ValueError("n must be >= 0")
    # same tolerance as bin_members: a breakpoint that is a whole number up to rounding (32^1.6 is
    # 256.00000000000006 in floats) opens its bin at that whole number
    out = np.searchsorted(np.asarray(bps, dtype=float) - 1e-9, arr, side="right")
    return out if out.ndim else int(out)


def bin_members(i: int, bps) -> tuple[int, int | None]:
    """(first n, last n) of bin i; last is None for the open-ended last bin."""
    bps = np.asarray(bps)
    i = as_int(i, "bin", minimum=0, maximum=len(bps))
    if i == 0:
        return 0, 0
    lo = math.ceil(bps[i - 1] - 1e-9)
    if i == len(bps):
        return lo, None
    hi = math.ceil(bps[i] - 1e-9) - 1
    return lo, hi


def representative_n(n, bps, how: str = "lower"):
    """The n that stands for n's bin: its smallest ("lower"), largest ("upper") or middle member.

    For the open-ended last bin "upper" and "middle" fall back to "lower". Vectorised over n.
    """
    check_choice(how, REPRESENTATIVES, "representative")
    idx = np.atleast_1d(bin_index(n, bps))
    out = np.empty(idx.size, dtype=np.int64)
    for k, i in enumerate(idx):
        lo, hi = bin_members(int(i), bps)
        if hi is None or how == "lower":
            out[k] = lo
        elif how == "upper":
            out[k] = hi
        else:
            out[k] = (lo + hi) // 2
    return out if np.ndim(n) else int(out[0])


def bin_table(max_value=300, power=1.3) -> pd.DataFrame:
    """One row per bin i >= 1: breakpoint, width to the next breakpoint, first and last member n."""
    bps = breakpoints(max_value, power)
    rows = []
    for i in range(1, len(bps) + 1):
        lo, hi = bin_members(i, bps)
        rows.append({
            "bin": i,
            "break_point": bps[i - 1],
            "break_width": (bps[i] - bps[i - 1]) if i < len(bps) else np.nan,
            "first_n": lo,
            "last_n": hi,
        })
    table = pd.DataFrame(rows)
    table["last_n"] = table["last_n"].astype("Int64")  # missing for the open-ended last bin
    return table
