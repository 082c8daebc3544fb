"""Monte Carlo draws of AP and Precision@R under the null.

Only the ranks of the m positives are drawn, never whole permutations: each draw is a uniformly
random m-subset of {1, ..., N}. The subset comes from Floyd's algorithm (for j = N-m..N-1 draw t
uniform on 0..j and take t, or j if t is already taken), which yields every m-subset with equal
probability from exactly m random integers. When n < m the n negatives' ranks are drawn instead and
the positives are their complement. A compiled kernel (numba) turns the integers into AP and
Precision@R; a plain-numpy implementation of the same steps gives the same numbers (tested) and is
used when numba is missing.

Reproducibility: the random stream of a size (m, n) is derived from (seed, m, n) and the block
index only, so a seed gives the same numbers whatever the chunk size and whatever other sizes are
sampled in the same call (copairs's nulls depend on list position; ours do not).
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np
import pandas as pd

from ._validate import MAX_DRAWS, as_int, check_sizes

__all__ = ["NullSample", "sample_null", "sample_grid", "iter_sample_grid", "grid_sizes",
           "BLOCK_ELEMENTS", "MAX_GRID_WORK"]

#: Ranks held in memory per block (draws per block = BLOCK_ELEMENTS // max(m, 1)); fixes the
#: random stream and bounds memory at a few tens of MB whatever the number of draws.
BLOCK_ELEMENTS = 1 << 19
#: Largest total sum over sizes of draws * min(m, n) + draws that one grid call accepts
#: (about 10 s of work on 2 cores).
MAX_GRID_WORK = 2 * 10**9


@dataclass
class NullSample:
    """Draws of AP and Precision@R for one (m, n), taken from the same placements."""

    m: int
    n: int
    ap: np.ndarray
    pr: np.ndarray
    seed: int

    @property
    def draws(self) -> int:
        return int(self.ap.size)

    def to_frame(self) -> pd.DataFrame:
        """Long table with columns m, n, ap, pr (one row per draw)."""
        return pd.DataFrame({"m": self.m, "n": self.n, "ap": self.ap, "pr": self.pr})


def _fresh_seed() -> int:
    return int(np.random.SeedSequence().entropy % (2**63))


def _check_seed(seed) -> int:
    if seed is None:
        return _fresh_seed()
    return as_int(seed, "seed", minimum=0, maximum=2**63 - 1)


def _block_draws(m: int) -> int:
    return max(1, BLOCK_ELEMENTS // max(m, 1))


_GOLDEN = np.uint64(0x9E3779B97F4A7C15)
_MIX1 = np.uint64(0xBF58476D1CE4E5B9)
_MIX2 = np.uint64(0x94D049BB133111EB)


def _uniforms(key: np.uint64, rows: int, k: int) -> np.ndarray:
    """rows x k uniforms: entry (r, c) is number r*k + c of the SplitMix64 stream ``key``.

    A counter-based stream: any row can be computed alone, so compiled code running rows in
    parallel produces the same numbers as this function.
    """
    with np.errstate(over="ignore"):
        idx = np.arange(1, rows * k + 1, dtype=np.uint64).reshape(rows, k)
        z = key + idx * _GOLDEN
        z = (z ^ (z >> np.uint64(30))) * _MIX1
        z = (z ^ (z >> np.uint64(27))) * _MIX2
        z = z ^ (z >> np.uint64(31))
    return (z >> np.uint64(11)).astype(np.float64) * (1.0 / 9007199254740992.0)


def _metrics_numpy(key: np.uint64, rows: int, k: int, N: int, m: int, complement: bool):
    """AP and Precision@R of ``rows`` null draws (reference implementation in plain numpy).

    Floyd's algorithm: for c = 0..k-1 with j = N - k + c, t = floor(u * (j + 1)) for the next
    uniform u; take t, or j when t is already taken. The chosen k ranks are the positives (or, if
    ``complement``, the negatives).
    """
    ap = np.empty(rows)
    pr = np.empty(rows)
    step = max(1, (1 << 24) // N)  # rows per mask: at most 16 MB of marks
    i = np.arange(1, m + 1, dtype=float)
    highs = np.arange(N - k + 1, N + 1)
    for r0 in range(0, rows, step):
        rr = min(step, rows - r0)
        # the uniforms of rows r0..r0+rr-1 are the stream's numbers r0*k .. (r0+rr)*k - 1
        U = _uniforms(key + np.uint64(r0 * k) * _GOLDEN, rr, k)
        T = np.minimum((U * highs).astype(np.int64), highs - 1)
        mark = np.zeros(rr * N, dtype=bool)
        base = np.arange(rr) * N
        for c in range(k):
            t = T[:, c]
            taken = mark[base + t]
            mark[base + np.where(taken, N - k + c, t)] = True
        mark = mark.reshape(rr, N)
        if complement:
            mark = ~mark
        ranks = np.nonzero(mark)[1].reshape(rr, m) + 1.0
        s = np.zeros(rr)
        for c in range(m):  # the same summation order as the compiled kernel
            s += i[c] / ranks[:, c]
        ap[r0:r0 + rr] = s / m
        pr[r0:r0 + rr] = (ranks <= m).sum(axis=1) / m
    return ap, pr


_KERNEL = None


def _numba_kernel():
    """The compiled kernel, or None when numba is not installed (then plain numpy is used)."""
    global _KERNEL
    if _KERNEL is None:
        try:
            from ._kernels import floyd_ap_pr
            _KERNEL = floyd_ap_pr
        except ImportError:  # pragma: no cover - numba is a declared dependency
            _KERNEL = False
    return _KERNEL or None


def _block(m: int, n: int, seed: int, block: int, rows: int, engine: str = "auto"):
    """AP and Precision@R of ``rows`` null draws: block ``block`` of size (m, n) under ``seed``."""
    if n == 0:
        return np.ones(rows), np.ones(rows)
    key = np.random.SeedSequence([seed, m, n, block]).generate_state(1, dtype=np.uint64)[0]
    N = m + n
    complement = n < m  # draw the smaller set's ranks
    k = n if complement else m
    kernel = _numba_kernel() if engine in ("auto", "numba") else None
    if kernel is None:
        if engine == "numba":
            raise ImportError("numba is not installed")
        return _metrics_numpy(key, rows, k, N, m, complement)
    ap = np.empty(rows)
    pr = np.empty(rows)
    kernel(key, rows, k, N, m, complement, ap, pr)
    return ap, pr


def iter_blocks(m: int, n: int, draws: int, seed: int, chunk: int | None = None):
    """Yield (ap, pr) arrays covering ``draws`` draws, ``chunk`` draws at a time (rounded to blocks).

    The values do not depend on ``chunk``: the random stream is fixed per block of
    ``BLOCK_ELEMENTS // m`` draws.
    """
    per = _block_draws(m)
    nblocks = -(-draws // per)
    step = max(1, (chunk or per) // per)
    for b0 in range(0, nblocks, step):
        aps, prs = [], []
        for b in range(b0, min(nblocks, b0 + step)):
            rows = min(per, draws - b * per)
            ap, pr = _block(m, n, seed, b, rows)
            aps.append(ap)
            prs.append(pr)
        yield np.concatenate(aps), np.concatenate(prs)


def sample_null(m, n, draws=10_000, seed=None, chunk: int | None = None) -> NullSample:
    """Monte Carlo draws of AP and Precision@R for m positives and n negatives.

    Parameters
    ----------
    m, n : int
        Positives (>= 1) and negatives (>= 0).
    draws : int
        Number of random rankings, 1 to MAX_DRAWS (10^7).
    seed : int, optional
        Non-negative seed. None draws a fresh one, recorded in the result's ``seed``.
    chunk : int, optional
        Draws generated at a time; changes memory use, never the numbers.

    Returns
    -------
    NullSample
        ``.ap`` and ``.pr`` arrays of length ``draws``, computed from the same placements;
        ``AP = (1/m) sum_i i / r_i`` and ``Pr@R = #{r_i <= m} / m``.
    """
    m, n = check_sizes(m, n)
    draws = as_int(draws, "draws", minimum=1, maximum=MAX_DRAWS)
    seed = _check_seed(seed)
    parts = list(iter_blocks(m, n, draws, seed, chunk))
    ap = np.concatenate([p[0] for p in parts])
    pr = np.concatenate([p[1] for p in parts])
    return NullSample(m=m, n=n, ap=ap, pr=pr, seed=seed)


def grid_sizes(M, N, sizes) -> list[tuple[int, int]]:
    """The sizes (M*i, N*i), i = 1..sizes, of seed 000's experiment."""
    M = as_int(M, "M (positives of the first size)", minimum=1)
    N = as_int(N, "N (negatives of the first size)", minimum=0)
    K = as_int(sizes, "sizes (number of multiples K)", minimum=1, maximum=1000)
    out = [(M * i, N * i) for i in range(1, K + 1)]
    check_sizes(*out[-1])
    return out


def grid_work(M, N, sizes, draws) -> int:
    """Work estimate (ranks drawn) of :func:`sample_grid`, compared with MAX_GRID_WORK."""
    return sum(draws * (min(m, n) + 1) for m, n in grid_sizes(M, N, sizes))


def iter_sample_grid(M, N, sizes=50, draws=10_000, seed=None):
    """Yield one :class:`NullSample` per size (M*i, N*i), i = 1..sizes, in order.

    For progress bars: the caller sees each size as soon as it is done. Raises ValueError when the
    total work exceeds MAX_GRID_WORK (fewer sizes or draws then).
    """
    pairs = grid_sizes(M, N, sizes)
    draws = as_int(draws, "draws", minimum=1, maximum=MAX_DRAWS)
    work = grid_work(M, N, sizes, draws)
    if work > MAX_GRID_WORK:
        raise ValueError(
            f"sizes x draws is too much work ({work:.2e} ranks, limit {MAX_GRID_WORK:.0e}); "
            "use fewer sizes K or fewer draws"
        )
    seed = _check_seed(seed)
    for m, n in pairs:
        yield sample_null(m, n, draws, seed)


def sample_grid(M, N, sizes=50, draws=10_000, seed=None) -> pd.DataFrame:
    """Long table (m, n, ap, pr) of null draws for sizes (M*i, N*i), i = 1..sizes (seed 000).

    Each size's draws depend only on (seed, m, n): the table for K = 10 is the first rows of the
    table for K = 50 with the same seed.
    """
    frames = [s.to_frame() for s in iter_sample_grid(M, N, sizes, draws, seed)]
    return pd.concat(frames, ignore_index=True)
