"""Kernel density estimates for drawing null laws (the curves of the density plots).

The Gaussian kernel with R's default bandwidth ``bw.nrd0`` (as ggplot2's ``geom_density``), computed
on an even grid by linear binning and a discrete convolution: O(draws + points * kernel width)
instead of O(draws * points). An exact law is drawn with the same kernel (its pmf smoothed), which is
exactly the mean of the KDE of a sample from that law, so the two curves are comparable.

The work is done by compiled kernels (:mod:`apnull._kde`), one call for any number of samples
(:func:`sample_summaries`), so a dashboard view holds the GIL for microseconds, not seconds.
"""

from __future__ import annotations

import numpy as np

__all__ = ["bw_nrd0", "kde", "smooth_pmf", "sample_summaries", "STATS"]

#: The columns of :func:`sample_summaries`' statistics.
STATS = ("q25", "q75", "q90", "q95", "mean", "sd", "bw")


def sample_summaries(samples, grid) -> tuple[np.ndarray, np.ndarray]:
    """KDE curves and statistics of many samples in one compiled call.

    Parameters
    ----------
    samples : sequence of 1-d arrays
        The samples (each at least one value).
    grid : array_like
        Even grid (at least two points) of the curves.

    Returns
    -------
    curves : ndarray, shape (len(samples), len(grid))
        Each sample's Gaussian KDE with bandwidth :func:`bw_nrd0` (as :func:`kde` on this grid).
    stats : ndarray, shape (len(samples), 7)
        Columns :data:`STATS`: type-7 quartiles q25 and q75, q90, q95 (equal to ``np.quantile``), the
        mean and SD (ddof = 1; as ``np.mean``, ``np.std``) and the bandwidth.
    """
    from . import _kde  # numba: imported on first use

    grid = _check_grid(grid)
    lengths = np.array([np.size(s) for s in samples], dtype=np.int64)
    if lengths.size and lengths.min() < 1:
        raise ValueError("cannot estimate a density from no draws")
    x = np.concatenate([np.asarray(s, dtype=float).ravel() for s in samples]) if len(samples) else np.empty(0)
    starts = np.cumsum(lengths) - lengths
    curves = np.empty((lengths.size, grid.size))
    stats = np.empty((lengths.size, len(STATS)))
    _kde.summarise_samples(x, starts, lengths, grid[0], grid[1] - grid[0], curves, stats)
    return curves, stats


def bw_nrd0(x) -> float:
    """R's ``bw.nrd0``: 0.9 * min(sd, IQR / 1.34) * len^(-1/5), with R's fallbacks for zero spread
    (sd, then |x[1]|, then 1); 1e-3 for fewer than two values."""
    from . import _kde

    x = np.ascontiguousarray(x, dtype=float).ravel()
    if x.size < 2:
        return 1e-3
    ordered = np.sort(x)
    _, sd = _kde.mean_sd(x)
    return float(_kde.bandwidth(x[0], x.size, sd, _kde.quantile7(ordered, 0.25), _kde.quantile7(ordered, 0.75)))


def _check_grid(grid) -> np.ndarray:
    grid = np.asarray(grid, dtype=float)
    if grid.ndim != 1 or grid.size < 2:
        raise ValueError("the grid needs at least two points")
    return grid


def smooth_pmf(values, probs, bw: float, grid) -> np.ndarray:
    """Density on ``grid`` of a discrete law (values, probs) smoothed by a Gaussian of SD ``bw``.

    The law's mass is linearly binned onto the (even) grid and convolved with the sampled kernel, cut
    at 6 bandwidths (relative error below 1e-7); the grid is extended by as much so mass just outside
    it still smooths in. Mass beyond that is dropped (the curve is the density restricted to the
    grid's range).
    """
    from . import _kde

    grid = _check_grid(grid)
    values = np.ascontiguousarray(values, dtype=float)
    probs = np.ascontiguousarray(probs, dtype=float)
    if values.shape != probs.shape:
        raise ValueError("values and probs must have the same length")
    out = np.empty(grid.size)
    _kde.smooth(values, probs, 0.0, float(bw), grid[0], grid[1] - grid[0], out)
    return out


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
        grid = np.linspace(x.min() - 3 * bw, x.max() + 3 * bw, points)
    grid = np.asarray(grid, dtype=float)
    return grid, smooth_pmf(x, np.full(x.size, 1.0 / x.size), bw, grid), bw
