"""Kernel density estimates for drawing null laws (the curves of seed 000's density plots).

The Gaussian kernel with R's default bandwidth ``bw.nrd0`` (as ggplot2's ``geom_density``), computed
on an even grid by linear binning and a discrete convolution: O(draws + points * kernel width)
instead of O(draws * points). An exact law is drawn with the same kernel (its pmf smoothed), which is
exactly the mean of the KDE of a sample from that law, so the two curves are comparable.
"""

from __future__ import annotations

import numpy as np

__all__ = ["bw_nrd0", "kde", "smooth_pmf"]


def bw_nrd0(x, sd: float | None = None, iqr: float | None = None) -> float:
    """R's ``bw.nrd0``: 0.9 * min(sd, IQR / 1.34) * len^(-1/5), with R's fallbacks for zero spread.

    ``sd`` (ddof = 1) and ``iqr`` (type-7 quartiles) may be passed when the caller has them already;
    the result is the same.
    """
    x = np.asarray(x, dtype=float)
    if x.size < 2:
        return 1e-3
    sd = np.std(x, ddof=1) if sd is None else sd
    if iqr is None:
        q75, q25 = np.percentile(x, [75, 25])
        iqr = q75 - q25
    lo = min(sd, iqr / 1.34)
    if lo <= 0:
        lo = sd or abs(x[0]) or 1.0
    return float(0.9 * lo * x.size ** (-0.2))


def _grid(lo: float, hi: float, points: int) -> np.ndarray:
    return np.linspace(lo, hi, points)


def smooth_pmf(values, probs, bw: float, grid) -> np.ndarray:
    """Density on ``grid`` of a discrete law (values, probs) smoothed by a Gaussian of SD ``bw``.

    The law's mass is linearly binned onto the (even) grid and convolved with the sampled kernel.
    Mass outside the grid is dropped (the curve is the density restricted to the grid's range).
    """
    grid = np.asarray(grid, dtype=float)
    values = np.asarray(values, dtype=float)
    probs = np.asarray(probs, dtype=float)
    if grid.size < 2:
        raise ValueError("the grid needs at least two points")
    dx = grid[1] - grid[0]
    bw = max(float(bw), dx / 2)
    # the kernel is cut at 6 bandwidths (relative error below 1e-7); the grid is extended by as
    # much so mass just outside it still smooths in
    pad = int(np.ceil(6 * bw / dx))
    pos = (values - grid[0]) / dx + pad
    size = grid.size + 2 * pad
    left = np.floor(pos).astype(np.int64)
    frac = pos - left
    ok = (left >= 0) & (left < size)
    weights = (np.bincount(left[ok], probs[ok] * (1 - frac[ok]), minlength=size + 1)
               + np.bincount(left[ok] + 1, probs[ok] * frac[ok], minlength=size + 1))
    half = pad
    t = np.arange(-half, half + 1) * dx
    kernel = np.exp(-0.5 * (t / bw) ** 2) / (bw * np.sqrt(2 * np.pi))
    # direct convolution (the kernel has at most a few hundred taps), aligned like mode="same" on
    # the weights whatever the two lengths
    full = np.convolve(weights[:size], kernel)
    dens = full[half:half + size]
    return dens[pad:pad + grid.size]


def kde(x, grid=None, bw=None, points: int = 512):
    """Gaussian KDE of a sample on an even grid.

    Parameters
    ----------
    x : array_like
        The sample.
    grid : array_like, optional
        Even grid; default ``points`` points from min(x) - 3 bw to max(x) + 3 bw.
    bw : float, optional
        Bandwidth; default :func:`bw_nrd0`.

    Returns
    -------
    (grid, density, bw)
    """
    x = np.asarray(x, dtype=float)
    if x.size == 0:
        raise ValueError("cannot estimate a density from no draws")
    bw = bw_nrd0(x) if bw is None else float(bw)
    if grid is None:
        grid = _grid(x.min() - 3 * bw, x.max() + 3 * bw, points)
    grid = np.asarray(grid, dtype=float)
    return grid, smooth_pmf(x, np.full(x.size, 1.0 / x.size), bw, grid), bw
