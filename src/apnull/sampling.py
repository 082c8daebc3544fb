"""Monte Carlo draws of the null: the one sampler of the package, with one random stream.

Only the ranks of the m positives are drawn, never whole permutations: each draw is a uniformly
random m-subset of {1, ..., N}. The subset comes from Floyd's algorithm (for j = N-m..N-1 draw t
uniform on 0..j and take t, or j if t is already taken), which yields every m-subset with equal
probability from exactly m random integers. When n < m the n negatives' ranks are drawn instead and
the positives are their complement. A compiled kernel (numba) turns the integers into AP,
Precision@R and the number of positives in the top k; a plain-numpy implementation of the same steps
gives the same numbers (tested) and serves as the reference.

Reproducibility: the random stream of a size (m, n) is derived from (seed, m, n) and the block
index only, so a seed gives the same numbers whatever the chunk size, whatever other sizes are
sampled in the same call, and whatever page asks (copairs's nulls depend on list position; ours do
not). Precision@K for another k recounts the same rankings.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np
import pandas as pd

from .limits import MAX_GRID_SIZES, as_int, check_draws, check_sampling_work, check_seed, check_sizes

__all__ = ["NullSample", "sample_null", "sample_grid", "iter_sample_grid", "grid_sizes",
           "iter_blocks", "block_layout", "draw_block", "draw_rows", "draw_many", "BLOCK_ELEMENTS"]

#: Ranks held in memory per block (draws per block = BLOCK_ELEMENTS // max(m, 1)); fixes the
#: random stream and bounds memory at a few tens of MB whatever the number of draws.
BLOCK_ELEMENTS = 1 << 19


@dataclass
class NullSample:
    """Draws for one (m, n), all taken from the same random rankings.

    ``ap`` and ``pr`` (Precision@R); with ``top = k``, ``top_hits`` counts the positives in the top
    k (Precision@K = ``top_hits / k``, see :attr:`precision_at_top`).
    """

    m: int
    n: int
    ap: np.ndarray
    pr: np.ndarray
    seed: int
    top: int | None = None
    top_hits: np.ndarray | None = None

    @property
    def draws(self) -> int:
        return int(self.ap.size)

    @property
    def precision_at_top(self) -> np.ndarray | None:
        """Precision@K with K = ``top`` (None when no ``top`` was asked for)."""
        return None if self.top_hits is None else self.top_hits / self.top

    def to_frame(self) -> pd.DataFrame:
        """Long table with columns m, n, ap, pr (one row per draw)."""
        return pd.DataFrame({"m": self.m, "n": self.n, "ap": self.ap, "pr": self.pr})


def _block_draws(m: int) -> int:
    return max(1, BLOCK_ELEMENTS // max(m, 1))


def block_layout(m: int, draws: int) -> list[tuple[int, int]]:
    """The blocks (index, rows) that make up ``draws`` draws with m positives: every block but the
    last has ``BLOCK_ELEMENTS // m`` rows. Block b's draws depend only on (seed, m, n, b), so a caller
    can compute (and cache) them one at a time with :func:`draw_block`."""
    per = _block_draws(m)
    return [(b, min(per, draws - b * per)) for b in range(-(-int(draws) // per))]


def _metrics_numpy(key: np.uint64, row0: int, rows: int, k: int, N: int, m: int, complement: bool, top: int):
    """AP, Precision@R and hits in the top ``top`` of null draws row0 .. row0+rows-1 (plain-numpy
    reference).

    Floyd's algorithm: for c = 0..k-1 with j = N - k + c, t = floor(u * (j + 1)) for the next
    uniform u; take t, or j when t is already taken. The chosen k ranks are the positives (or, if
    ``complement``, the negatives).
    """
    from .streams import uniforms  # imported on first use: loading numba takes most of a second
    ap = np.empty(rows)
    pr = np.empty(rows)
    hits = np.empty(rows, dtype=np.int64)
    step = max(1, (1 << 24) // N)  # rows per mask: at most 16 MB of marks
    i = np.arange(1, m + 1, dtype=float)
    highs = np.arange(N - k + 1, N + 1)
    for r0 in range(0, rows, step):
        rr = min(step, rows - r0)
        # the uniforms of rows row0+r0 .. row0+r0+rr-1 are the stream's numbers (row0+r0)*k .. (row0+r0+rr)*k - 1
        U = uniforms(key, (row0 + r0) * k, rr * k).reshape(rr, k)
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
        hits[r0:r0 + rr] = (ranks <= top).sum(axis=1)
    return ap, pr, hits


#: Ranks a work item of the compiled kernel draws (its rows split so); the threads share the items.
ITEM_RANKS = 1 << 16


def _pieces(requests):
    """The block pieces (m, n, seed, block, start in block, rows, top, out offset) of requests
    (m, n, seed, start, stop, top): rows start .. stop-1 of each size, stream block by stream block."""
    pieces, offset = [], 0
    for m, n, seed, start, stop, top in requests:
        per = _block_draws(m)
        for b in range(start // per, -(-stop // per)):
            lo, hi = max(start, b * per), min(stop, (b + 1) * per)
            if hi > lo:
                pieces.append((m, n, seed, b, lo - b * per, hi - lo, top, offset))
                offset += hi - lo
    return pieces, offset


def _draw(requests, engine: str = "numba"):
    """(ap, pr, top_hits) arrays holding every request's draws one after another, from ONE call of the
    compiled kernel (``engine="numba"``) or the plain-numpy reference (``"numpy"``, same numbers).

    ``requests`` are (m, n, seed, start, stop, top) tuples, unchecked; draws with n = 0 are 1, 1, min(top, m).
    """
    from .streams import sample_key  # imported on first use
    pieces, total = _pieces(requests)
    ap, pr, hits = np.empty(total), np.empty(total), np.empty(total, dtype=np.int64)
    drawn = []
    for m, n, seed, block, start, rows, top, offset in pieces:
        out = slice(offset, offset + rows)
        if n == 0:
            ap[out], pr[out], hits[out] = 1.0, 1.0, min(top, m)
        elif engine == "numpy":
            k, complement = (n, True) if n < m else (m, False)
            ap[out], pr[out], hits[out] = _metrics_numpy(sample_key(seed, m, n, block), start, rows, k, m + n, m,
                                                         complement, top)
        else:
            drawn.append((m, n, seed, block, start, rows, top, offset))
    if drawn:
        _compiled(drawn, ap, pr, hits)
    return ap, pr, hits


def _compiled(pieces, ap, pr, hits) -> None:
    from ._kernels import floyd_pieces  # imported on first use: loading numba takes most of a second
    from .streams import sample_key

    cols = list(zip(*pieces))
    m, n = np.array(cols[0], dtype=np.int64), np.array(cols[1], dtype=np.int64)
    complement = n < m  # draw the smaller set's ranks
    k = np.where(complement, n, m)
    keys = np.array([sample_key(seed, m_, n_, block) for m_, n_, seed, block, *_ in pieces], dtype=np.uint64)
    rows = np.array(cols[5], dtype=np.int64)
    per_item = np.maximum(1, ITEM_RANKS // k)  # rows per work item
    counts = -(-rows // per_item)
    item_piece = np.repeat(np.arange(len(pieces)), counts)
    first = np.repeat(np.cumsum(counts) - counts, counts)
    item_lo = (np.arange(item_piece.size) - first) * per_item[item_piece]
    item_hi = np.minimum(item_lo + per_item[item_piece], rows[item_piece])
    floyd_pieces(keys, np.array(cols[4], dtype=np.int64), k, m + n, m, complement, np.array(cols[6], dtype=np.int64),
                 np.array(cols[7], dtype=np.int64), item_piece, item_lo, item_hi, ap, pr, hits)


def draw_block(m: int, n: int, seed: int, block: int, rows: int, engine: str = "numba", top: int | None = None,
               start: int = 0):
    """(ap, pr, top_hits) of ``rows`` null draws: rows start .. start+rows-1 of block ``block`` of size
    (m, n) under ``seed``.

    Unchecked (see :func:`block_layout`). ``engine`` is "numba" (the compiled kernel) or "numpy" (the
    reference); both give the same numbers. ``top`` defaults to m (then top_hits / m is Precision@R).
    """
    first = block * _block_draws(m) + start
    return _draw([(m, n, seed, first, first + rows, m if top is None else top)], engine)


def iter_blocks(m: int, n: int, draws: int, seed: int, chunk: int | None = None, top: int | None = None):
    """Yield (ap, pr, top_hits) arrays covering ``draws`` draws, ``chunk`` draws at a time (default: all).

    Unchecked (call :func:`sample_null` unless you loop yourself, e.g. for a progress bar). The
    values do not depend on ``chunk``: the random stream is fixed per block of
    ``BLOCK_ELEMENTS // m`` draws.
    """
    step = max(1, int(chunk or draws))
    for lo in range(0, draws, step):
        yield _draw([(m, n, seed, lo, min(draws, lo + step), m if top is None else top)])


def draw_rows(m: int, n: int, seed: int, start: int, stop: int) -> tuple[np.ndarray, np.ndarray]:
    """(ap, pr) of draws start .. stop-1 of size (m, n) under ``seed``: unchecked.

    Draw i is the same whatever else is drawn, so ``draw_rows(m, n, s, 0, d)`` is the first d draws
    of :func:`sample_null` and a sample of d draws is extended to d2 > d by ``draw_rows(m, n, s, d, d2)``.
    """
    return draw_many([(m, n, seed, start, stop)])[0]


def draw_many(requests) -> list[tuple[np.ndarray, np.ndarray]]:
    """(ap, pr) of draws start .. stop-1 for each request (m, n, seed, start, stop), unchecked, from one
    call of the compiled kernel (a view of 50 sizes: one release of the GIL, see
    :func:`apnull._kernels.floyd_pieces`)."""
    requests = [(m, n, seed, start, stop, m) for m, n, seed, start, stop in requests]
    ap, pr, _ = _draw(requests)
    out, at = [], 0
    for *_, start, stop, _top in requests:
        rows = max(0, stop - start)
        out.append((ap[at:at + rows], pr[at:at + rows]))
        at += rows
    return out


def sample_null(m, n, draws=10_000, seed=None, chunk: int | None = None, top: int | None = None) -> NullSample:
    """Monte Carlo draws of AP and Precision@R for m positives and n negatives.

    Parameters
    ----------
    m, n : int
        Positives (>= 1) and negatives (>= 0), m + n <= 10^6.
    draws : int
        Number of random rankings, 1 to 10^7, and draws * (min(m, n) + 1) within
        ``limits.MAX_SAMPLING_WORK``.
    seed : int, optional
        Non-negative seed. None draws a fresh one, recorded in the result's ``seed``.
    chunk : int, optional
        Draws generated at a time; changes memory use, never the numbers.
    top : int, optional
        Also count the positives in the top ``top`` ranks (1 <= top <= m + n), for Precision@K.

    Returns
    -------
    NullSample
        ``.ap`` and ``.pr`` arrays of length ``draws``, computed from the same placements;
        ``AP = (1/m) sum_i i / r_i`` and ``Pr@R = #{r_i <= m} / m``; ``.top_hits = #{r_i <= top}``.
    """
    m, n = check_sizes(m, n)
    draws = check_draws(draws)
    check_sampling_work([(m, n)], draws)
    seed = check_seed(seed)
    if top is not None:
        top = as_int(top, "k (top positions counted)", minimum=1, maximum=m + n)
    return _sample(m, n, draws, seed, chunk, top)


def _sample(m: int, n: int, draws: int, seed: int, chunk: int | None = None, top: int | None = None) -> NullSample:
    """:func:`sample_null` on checked arguments."""
    chunks = list(iter_blocks(m, n, draws, seed, chunk, top))
    ap, pr, hits = chunks[0] if len(chunks) == 1 else (np.concatenate(c) for c in zip(*chunks))
    return NullSample(m=m, n=n, ap=ap, pr=pr, seed=seed, top=top, top_hits=None if top is None else hits)


def grid_sizes(M, N, sizes) -> list[tuple[int, int]]:
    """The sizes (M*i, N*i), i = 1..sizes, of the reference experiment (M = 4, N = 30: at most ``limits.MAX_GRID_SIZES``)."""
    M = as_int(M, "M (positives of the first size)", minimum=1)
    N = as_int(N, "N (negatives of the first size)", minimum=0)
    K = as_int(sizes, "number of sizes K", minimum=1, maximum=MAX_GRID_SIZES)
    out = [(M * i, N * i) for i in range(1, K + 1)]
    check_sizes(*out[-1])
    return out


def iter_sample_grid(M, N, sizes=50, draws=10_000, seed=None):
    """Yield one :class:`NullSample` per size (M*i, N*i), i = 1..sizes, in order.

    For progress bars: the caller sees each size as soon as it is done. Raises ValueError when the
    total work exceeds ``limits.MAX_SAMPLING_WORK`` (fewer sizes or draws then).
    """
    pairs = grid_sizes(M, N, sizes)
    draws = check_draws(draws)
    check_sampling_work(pairs, draws)
    seed = check_seed(seed)
    for m, n in pairs:
        yield _sample(m, n, draws, seed)


def sample_grid(M, N, sizes=50, draws=10_000, seed=None) -> pd.DataFrame:
    """Long table (m, n, ap, pr) of null draws for sizes (M*i, N*i), i = 1..sizes (the reference experiment's table).

    Each size's draws depend only on (seed, m, n): the table for K = 10 is the first rows of the
    table for K = 50 with the same seed.
    """
    frames = [s.to_frame() for s in iter_sample_grid(M, N, sizes, draws, seed)]
    return pd.concat(frames, ignore_index=True)
