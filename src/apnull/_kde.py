"""Compiled kernels (numba) of the density estimates and sample statistics: :mod:`apnull.density` and
:mod:`apnull.views.null` call them; imported lazily, like :mod:`apnull._kernels`.

Why compiled: a dashboard view summarises 50 to 200 samples (a KDE curve, four quantiles, the mean).
In numpy that is a dozen calls per sample, and each large numpy call releases the GIL; under 30
sessions taking it back costs up to 5 ms each time (Python's switch interval), which made a
summary of 50 sizes take seconds instead of 0.07 s (benchmarks/load.py, ``--values free``).
:func:`summarise_samples` does all samples of a view in one call that holds no GIL.

The arithmetic follows numpy's where it matters for equality: type-7 quantiles with numpy's
``_lerp`` (so they equal ``np.quantile``), sums in numpy's pairwise order (so the mean and the
standard deviation equal ``np.mean`` and ``np.std``). The Gaussian taps and the discrete
convolution use libm's exp and a plain loop, so curves agree with a numpy computation to about
1e-15 relative, not bit for bit.
"""

import math

import numba
import numpy as np

from . import compiled  # noqa: F401 - its cache locators, before the kernels below are made

_SQRT_2PI = math.sqrt(2.0 * math.pi)
#: numpy's pairwise summation block (PW_BLOCKSIZE)
_BLOCK = 128


@numba.njit(cache=True, nogil=True)
def _block_sum(a, lo, n):  # pragma: no cover - compiled
    """numpy's sum of at most 128 values: plain below 8, else 8 partial sums combined pairwise."""
    if n < 8:
        s = 0.0
        for i in range(lo, lo + n):
            s += a[i]
        return s
    r0, r1, r2, r3 = a[lo], a[lo + 1], a[lo + 2], a[lo + 3]
    r4, r5, r6, r7 = a[lo + 4], a[lo + 5], a[lo + 6], a[lo + 7]
    i = 8
    while i < n - n % 8:
        r0 += a[lo + i]
        r1 += a[lo + i + 1]
        r2 += a[lo + i + 2]
        r3 += a[lo + i + 3]
        r4 += a[lo + i + 4]
        r5 += a[lo + i + 5]
        r6 += a[lo + i + 6]
        r7 += a[lo + i + 7]
        i += 8
    s = ((r0 + r1) + (r2 + r3)) + ((r4 + r5) + (r6 + r7))
    while i < n:
        s += a[lo + i]
        i += 1
    return s


@numba.njit(cache=True, nogil=True)
def pairwise_sum(a, lo, n):  # pragma: no cover - compiled
    """Sum of a[lo:lo+n] in numpy's pairwise order: blocks of up to 128 values, halves (multiples of 8)
    added as numpy's recursion adds them. An explicit stack, not recursion (numba cannot reload a cached
    recursive function)."""
    if n <= _BLOCK:
        return _block_sum(a, lo, n)
    los = np.empty(64, dtype=np.int64)
    ns = np.empty(64, dtype=np.int64)
    stage = np.zeros(64, dtype=np.int64)
    left = np.empty(64)
    top = 0
    los[0], ns[0], stage[0] = lo, n, 0
    ret = 0.0
    while True:
        flo, fn = los[top], ns[top]
        if fn <= _BLOCK:
            ret = _block_sum(a, flo, fn)
            top -= 1
            if top < 0:
                return ret
            continue
        half = fn // 2
        half -= half % 8
        if stage[top] == 0:  # the left half first
            stage[top] = 1
            top += 1
            los[top], ns[top], stage[top] = flo, half, 0
        elif stage[top] == 1:  # then the right half
            left[top] = ret
            stage[top] = 2
            top += 1
            los[top], ns[top], stage[top] = flo + half, fn - half, 0
        else:
            ret = left[top] + ret
            top -= 1
            if top < 0:
                return ret


@numba.njit(cache=True, nogil=True)
def quantile7(sorted_x, q):  # pragma: no cover - compiled
    """Type-7 quantile of sorted values, with numpy's interpolation (equal to ``np.quantile``)."""
    n = sorted_x.size
    v = (n - 1) * q
    if v >= n - 1:
        return sorted_x[n - 1]
    if v < 0:
        return sorted_x[0]
    lo = int(math.floor(v))
    a, b = sorted_x[lo], sorted_x[lo + 1]
    t = v - lo
    diff = b - a
    if t >= 0.5:
        return b - diff * (1.0 - t)
    return a + diff * t


@numba.njit(cache=True, nogil=True)
def mean_sd(x):  # pragma: no cover - compiled
    """(mean, standard deviation with ddof = 1) as ``np.mean(x)`` and ``np.std(x, ddof=1)`` compute them."""
    n = x.size
    mean = pairwise_sum(x, 0, n) / n
    if n < 2:
        return mean, np.nan
    sq = np.empty(n)
    for i in range(n):
        d = x[i] - mean
        sq[i] = d * d
    return mean, math.sqrt(pairwise_sum(sq, 0, n) / (n - 1))


@numba.njit(cache=True, nogil=True)
def bandwidth(first, n, sd, q25, q75):  # pragma: no cover - compiled
    """R's bw.nrd0 from a sample's size, first value, SD and quartiles: 0.9 min(sd, IQR/1.34) n^(-1/5),
    with R's fallbacks when the spread is zero (sd, then |x[1]|, then 1); 1e-3 below two values."""
    if n < 2:
        return 1e-3
    lo = min(sd, (q75 - q25) / 1.34)
    if lo <= 0:
        lo = sd if sd != 0 else (abs(first) if first != 0 else 1.0)
    return 0.9 * lo * n ** -0.2


@numba.njit(cache=True, nogil=True)
def smooth(values, probs, uniform_prob, bw, grid0, dx, out):  # pragma: no cover - compiled
    """Density on the even grid grid0 + dx * (0 .. out.size-1) of the discrete law (values, probs) smoothed
    by a Gaussian of SD bw (at least dx / 2), into ``out``; with ``uniform_prob`` > 0 every value has that
    probability and ``probs`` is not read (a sample's KDE).

    The mass is split linearly between the two nearest grid points (an extended grid: the kernel is cut
    at 6 bandwidths, relative error below 1e-7, and the grid is padded by as much so mass just outside
    it still smooths in), then convolved with the sampled kernel. Mass beyond the padding is dropped.
    """
    G = out.size
    bw = max(bw, dx / 2)
    pad = int(math.ceil(6 * bw / dx))
    size = G + 2 * pad
    low = np.zeros(size + 1)  # the mass given to the left neighbour, and to the right one
    high = np.zeros(size + 1)
    for i in range(values.size):
        pos = (values[i] - grid0) / dx + pad
        left = math.floor(pos)
        if left < 0 or left >= size:
            continue
        frac = pos - left
        p = uniform_prob if uniform_prob > 0 else probs[i]
        j = int(left)
        low[j] += p * (1 - frac)
        high[j + 1] += p * frac
    taps = np.empty(2 * pad + 1)
    norm = bw * _SQRT_2PI
    for c in range(2 * pad + 1):
        t = (c - pad) * dx / bw
        taps[c] = math.exp(-0.5 * t * t) / norm
    for g in range(G):
        s = 0.0
        for c in range(2 * pad + 1):
            j = g + c  # grid point g sits at pad + g of the extended grid
            s += (low[j] + high[j]) * taps[2 * pad - c]
        out[g] = s


@numba.njit(cache=True, nogil=True, parallel=True)
def summarise_samples(x, starts, lengths, grid0, dx, curves, stats):  # pragma: no cover - compiled
    """For each sample s (x[starts[s]:starts[s]+lengths[s]]): its KDE curve (Gaussian, bw.nrd0) on the
    grid into curves[s], and stats[s] = (q25, q75, q90, q95, mean, sd, bw). All samples in one call,
    shared by the threads, holding no GIL."""
    for s in numba.prange(starts.size):
        n = lengths[s]
        sample = x[starts[s]:starts[s] + n]
        ordered = np.sort(sample)
        q25, q75 = quantile7(ordered, 0.25), quantile7(ordered, 0.75)
        q90, q95 = quantile7(ordered, 0.90), quantile7(ordered, 0.95)
        mean, sd = mean_sd(sample)
        bw = bandwidth(sample[0], n, sd, q25, q75)
        smooth(sample, sample, 1.0 / n, bw, grid0, dx, curves[s])
        stats[s, 0], stats[s, 1], stats[s, 2], stats[s, 3] = q25, q75, q90, q95
        stats[s, 4], stats[s, 5], stats[s, 6] = mean, sd, bw
