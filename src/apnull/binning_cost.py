"""What binning n costs: the null threshold at every n against the threshold at its bin's representative.

One null per bin of n (see :mod:`apnull.binning`) instead of one per (m, n). For a
fixed m and level q this module computes the q-quantile of the null law for every n = 0..max at
once (:func:`threshold_curve`) and compares it with the quantile at the n that stands for n's bin
(:func:`binning_cost`).

Why one pass serves every n
---------------------------
The number of placements of j positives among the first k positions whose partial sum
``S = sum_{i<=j} i / r_i`` takes a given value does not depend on the total length N. So a single
scan k = 1, 2, ... (the exact and grid dynamic programmes of :mod:`apnull.exact`, run with
row-normalised probabilities instead of the conditional ones of a fixed N) yields, at step k, the
law of AP for m positives and n = k - m negatives. Normalised by C(k, j), row j obeys::

    p_k[j] = (1 - j/k) * p_{k-1}[j] + (j/k) * shift(p_{k-1}[j-1], by j/k)

(position k negative, or the j-th positive at rank k). The grid version splits each shift between
the two neighbouring cells exactly as :func:`apnull.exact.ap_law_grid` does, so both produce the same
grid law (up to float rounding, about 1e-15) with the same guarantee: quantiles within m/G of exact.
The whole curve costs about as much as one law at the largest n.

The method at each n is the one ``apnull.threshold(m, n, method="auto")`` uses: exact for
(m+n) * C(m+n, m) <= AUTO_EXACT_WORK, else the grid law with quantiles within ``tol``. Sizes for which
"auto" would fall back to Monte Carlo are refused (a curve of 100,000-draw samples would take
minutes); Precision@R is always exact (hypergeometric).
"""

from __future__ import annotations

import math
from functools import lru_cache

import numpy as np
import pandas as pd

from .binning import bin_index, breakpoints, representative_n, REPRESENTATIVES
from .exact import exact_scan, grid_scan, grid_size_for
from .law import NullDistribution
from .limits import (EXACT_MAX_PLACEMENTS, GRID_MAX_WORK, MAX_CURVE_N, as_probability, check_choice, check_metric,
                     check_sizes)
from .significance import AUTO_GRID_WORK, choose_method

__all__ = ["threshold_curve", "binning_cost", "binning_summary", "CURVE_METHODS", "MAX_CURVE_N"]

#: Methods the whole curve can be computed with.
CURVE_METHODS = ("auto", "exact", "grid")
#: Quantile slack, as in :meth:`apnull.NullDistribution.quantile`.
_Q_SLACK = 1e-12


def _check_method(method) -> str:
    if method == "mc":
        raise ValueError("method 'mc' is not offered for a whole curve of thresholds (it would take minutes); "
                         "use 'auto', 'exact' or 'grid'")
    return check_choice(method, CURVE_METHODS, "method")


def threshold_curve(m, n_max, q=0.95, metric="ap", method="auto", tol=1e-3) -> pd.DataFrame:
    """The null threshold (q-quantile) for m positives and every n = 0..n_max.

    Each value equals ``apnull.threshold(m, n, metric, q, method, tol=tol)`` (the exact quantile,
    or the grid law's quantile, within ``tol`` of exact; both computed here in one pass, see the
    module docstring; they agree with the per-n calls to about 1e-15).

    Parameters
    ----------
    m : int
        Positives, >= 1.
    n_max : int
        Largest n, 0..MAX_CURVE_N (5000).
    q : float
        Level in [0, 1]: the smallest support value x with P(X <= x) >= q.
    metric : {"ap", "pr"}
    method : {"auto", "exact", "grid"}
        "auto" picks per n as :func:`apnull.significance.choose_method` does and refuses sizes that
        would need Monte Carlo. "exact" needs C(m + n_max, m) <= 2,000,000. Precision@R is always
        exact.
    tol : float
        Grid accuracy in AP units (the grid has G = ceil(m / tol) cells).

    Returns
    -------
    DataFrame
        Columns ``n`` (0..n_max), ``threshold``, ``method`` ("exact" or "grid").

    Raises
    ------
    ValueError
        For bad sizes, q, metric or method, or sizes the chosen method cannot handle (the message
        says what to change).
    """
    m, n_max = check_sizes(m, n_max)
    if n_max > MAX_CURVE_N:
        raise ValueError(f"n_max (largest n) must be at most {MAX_CURVE_N:,} for a threshold curve, got {n_max:,}")
    q = as_probability(q, "q")
    metric = check_metric(metric)
    method = _check_method(method)
    tol = as_probability(tol, "tol", open_low=True)
    n, thr, meth = _curve(m, n_max, q, metric, method, tol)
    return pd.DataFrame({"n": n.copy(), "threshold": thr.copy(), "method": list(meth)})


@lru_cache(maxsize=32)
def _curve(m: int, n_max: int, q: float, metric: str, method: str, tol: float):
    n = np.arange(n_max + 1)
    if metric == "pr":
        return n, _pr_curve(m, n, q), ("exact",) * n.size
    methods = _ap_methods(m, n_max, method, tol)
    thr = np.empty(n.size)
    exact_n = [i for i, x in enumerate(methods) if x == "exact"]
    grid_n = [i for i, x in enumerate(methods) if x == "grid"]
    if exact_n:
        thr[exact_n] = _exact_sweep(m, max(exact_n), q)[exact_n]
    if grid_n:
        G = grid_size_for(m, tol)
        thr[grid_n] = _grid_sweep(m, max(grid_n), q, G)[grid_n]
    return n, thr, tuple(methods)


def _ap_methods(m: int, n_max: int, method: str, tol: float) -> list[str]:
    N = m + n_max
    if method == "exact":
        total = math.comb(N, m)
        if total > EXACT_MAX_PLACEMENTS:
            raise ValueError(
                f"exact AP law for m={m}, n={n_max} has {total:,} placements, more than "
                f"{EXACT_MAX_PLACEMENTS:,}; use method 'auto' or 'grid', or a smaller n")
        return ["exact"] * (n_max + 1)
    G = grid_size_for(m, tol)
    if method == "grid":
        if N * m * G > GRID_MAX_WORK:
            raise ValueError(
                f"grid AP law for m={m}, n={n_max} at G={G} needs {N * m * G:.2e} cell updates, more than "
                f"{GRID_MAX_WORK:.0e}; use a smaller m or n, or a larger tol")
        return ["grid"] * (n_max + 1)
    methods = [choose_method(m, k, "ap", "auto", tol) for k in range(n_max + 1)]
    if "mc" in methods:
        first = methods.index("mc")
        raise ValueError(
            f"for m={m} the auto method needs Monte Carlo from n = {first} on (a grid law with quantiles "
            f"within {tol:g} would take more than {AUTO_GRID_WORK:.0e} cell updates); the threshold "
            f"curve uses exact and grid laws only: use a smaller m or a max below {first}")
    return methods


def _pr_curve(m: int, n: np.ndarray, q: float) -> np.ndarray:
    """q-quantile of Precision@R = Hypergeometric(m + n, m, m) / m for every n (as apnull.exact.pr_law)."""
    from scipy import stats  # here: scipy.stats takes seconds to import, and only this curve needs it

    hits = np.arange(m + 1)
    pmf = stats.hypergeom(m + n[:, None], m, m).pmf(hits[None, :])
    pmf = np.where(np.isfinite(pmf), pmf, 0.0)
    out = np.empty(n.size)
    for i in range(n.size):
        keep = pmf[i] > 0
        cum = np.cumsum(pmf[i, keep])
        cum /= cum[-1]
        idx = np.searchsorted(cum, q - _Q_SLACK, side="left")
        out[i] = hits[keep][min(idx, keep.sum() - 1)] / m
    return out


def _exact_sweep(m: int, n_max: int, q: float) -> np.ndarray:
    """Exact q-quantile of AP for n = 0..n_max, from one scan of :func:`apnull.exact.exact_scan`."""
    return np.array([NullDistribution("ap", m, n, "exact", values, counts / counts.sum()).ppf(q)
                     for n, values, counts in exact_scan(m, n_max)])


def _grid_sweep(m: int, n_max: int, q: float, G: int) -> np.ndarray:
    """Grid-law q-quantile of AP for n = 0..n_max, from one scan of :func:`apnull.exact.grid_scan`."""
    out = []
    for n, probs in grid_scan(m, n_max, G):
        cells = np.flatnonzero(probs > 0)
        out.append(NullDistribution("ap", m, n, "grid", cells / G, probs[cells]).ppf(q))
    return np.array(out)


def binning_cost(m, q=0.95, max_value=300, power=1.3, representative="lower", metric="ap", method="auto",
                 tol=1e-3) -> pd.DataFrame:
    """The null threshold at every n = 0..floor(max_value) against the threshold at its bin's representative.

    Parameters
    ----------
    m : int
        Positives, >= 1.
    q : float
        Level in [0, 1] of the threshold (its q-quantile).
    max_value, power : float
        The binning of :func:`apnull.binning.breakpoints`; n runs over 0..floor(max_value), at
        most MAX_CURVE_N.
    representative : {"lower", "upper", "middle"}
        Which member n stands for a bin (:func:`apnull.binning.representative_n`).
    metric, method, tol
        As in :func:`threshold_curve`.

    Returns
    -------
    DataFrame
        One row per n: ``n``, ``bin``, ``representative_n``, ``threshold`` (at n),
        ``binned_threshold`` (at the representative), ``difference`` (binned - exact: positive means
        the binned test is stricter than needed, negative means it lets through a score the exact
        null would reject) and ``method`` (of the threshold at n).

    Notes
    -----
    Adding a negative at a random position never raises any positive's precision, so AP and
    Precision@R are stochastically decreasing in n and every exact quantile is non-increasing in n.
    With ``representative="lower"`` the binned threshold is therefore never below the exact one for
    exact laws; grid laws keep this up to their tolerance (quantiles within ``tol``).
    """
    bps = breakpoints(max_value, power)
    if representative not in REPRESENTATIVES:
        raise ValueError(f"representative must be one of {', '.join(REPRESENTATIVES)}, got {representative!r}")
    n_max = math.floor(float(max_value))
    curve = threshold_curve(m, n_max, q, metric, method, tol)
    n = curve["n"].to_numpy()
    bins = np.asarray(bin_index(n, bps))
    rep = np.asarray(representative_n(n, bps, representative))
    thr = curve["threshold"].to_numpy()
    binned = thr[rep]  # every representative is <= n_max (open last bin: its lower end)
    return pd.DataFrame({
        "n": n, "bin": bins, "representative_n": rep, "threshold": thr, "binned_threshold": binned,
        "difference": binned - thr, "method": curve["method"],
    })


def binning_summary(cost: pd.DataFrame, atol: float = 1e-12) -> dict:
    """Summary figures of a :func:`binning_cost` table.

    Returns
    -------
    dict
        ``n_values`` (rows), ``bins`` (distinct bins, i.e. null laws needed), ``max_abs_error``,
        ``mean_abs_error``, ``worst_n`` (n of the largest |difference|), ``n_below`` (rows where the
        binned threshold is below the exact one by more than ``atol``: the binned test is too
        lenient there), ``most_below`` (the most negative difference, 0 if none), ``methods``
        (sorted set of methods used).
    """
    diff = cost["difference"].to_numpy(dtype=float)
    absd = np.abs(diff)
    worst = int(np.argmax(absd)) if absd.size else 0
    return {
        "n_values": int(len(cost)),
        "bins": int(cost["bin"].nunique()),
        "max_abs_error": float(absd.max()) if absd.size else 0.0,
        "mean_abs_error": float(absd.mean()) if absd.size else 0.0,
        "worst_n": int(cost["n"].iloc[worst]) if absd.size else 0,
        "n_below": int(np.sum(diff < -atol)),
        "most_below": float(min(0.0, diff.min())) if absd.size else 0.0,
        "methods": sorted(set(cost["method"])),
    }
