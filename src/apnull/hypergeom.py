"""Precision@K of shuffled labels against the hypergeometric law (seed 004).

Setting
-------
m positives ("white balls", e.g. replicates) and n negatives ("black balls", e.g. controls) are put in
uniformly random order. The top k positions are "drawn from the urn", so the number of positives in
the top k is Hypergeometric(population m + n, successes m, draws k) and

    Precision@K = hits / k,   E[Precision@K] = m / (m + n)   (for every k).

Seed 004 checks this twice: it shuffles the labels many times and scores each ranking, and it draws
the hit count straight from the hypergeometric law (R's ``rhyper``); both histograms should look
alike. Its thresholds are the mean m/(m+n), the empirical mean of the shuffled Precision@K, and the
exact 95th percentile ``qhyper(0.95, m, n, k) / k`` (smallest x with P(X <= x) >= 0.95). For AP the
seed only has Monte Carlo numbers (mean and type-7 95th percentile); here they sit beside the exact
E[AP] (:func:`apnull.expected_ap`) and the exact 95% threshold (:func:`apnull.threshold`).

Sampling
--------
Only the ranks of the positives are drawn, never whole permutations: a uniformly random subset of
{1, ..., m + n} by Floyd's algorithm (for c = 0..s-1 with j = N - s + c, t uniform on 0..j; take t,
or j if t is already taken; s = min(m, n), the negatives' ranks being drawn when n < m). The
uniforms come row by row from ``numpy.random.default_rng([seed, m, n, block])`` in blocks of a fixed
number of rows, so a seed gives the same draws whatever the number of draws asked for (the first
1,000 of 10,000 draws are the 1,000 draws) and whatever k is (changing k only recounts the hits of
the same rankings). Memory is bounded by the block size.
"""

from __future__ import annotations

import math
from typing import Iterator, NamedTuple

import numpy as np
import pandas as pd
from scipy import stats

from ._validate import as_int, as_probability
from .exact import expected_ap
from .significance import choose_method, null_distribution

__all__ = [
    "ShuffledSample",
    "MIN_DRAWS",
    "MAX_DRAWS",
    "MAX_ITEMS",
    "MAX_WORK",
    "BLOCK_CELLS",
    "check_request",
    "block_layout",
    "shuffled_block",
    "iter_shuffled",
    "shuffled_precision_at_k",
    "hypergeom_precision_at_k",
    "hypergeom_pmf",
    "hypergeom_ppf",
    "thresholds_table",
    "summary_table",
    "exact_ap_law",
    "pmf_fit",
    "fit_table",
    "hit_counts",
]

#: Fewest and most draws one call accepts (the page's limits).
MIN_DRAWS = 100
MAX_DRAWS = 1_000_000
#: Largest ranking m + n.
MAX_ITEMS = 100_000
#: Largest draws x (cost of one draw) accepted; about 3 s of work on 2 cores.
MAX_WORK = 5 * 10**8
#: Cells of one block (see :func:`block_layout`): fixes the random stream and bounds memory (~16 MB a array).
BLOCK_CELLS = 1 << 21


class ShuffledSample(NamedTuple):
    """Precision@K and AP of the same shuffled rankings (``precision, ap = sample`` unpacks)."""

    precision: np.ndarray
    ap: np.ndarray


# ----------------------------------------------------------------------------------------------
# validation
# ----------------------------------------------------------------------------------------------


def _sizes(m, n, k) -> tuple[int, int, int]:
    m = as_int(m, "m (number of positives)", minimum=1)
    n = as_int(n, "n (number of negatives)", minimum=0)
    if m + n > MAX_ITEMS:
        raise ValueError(f"m + n must be at most {MAX_ITEMS:,} items, got {m + n:,}; use fewer items")
    k = as_int(k, "k (top positions counted)")
    if not 1 <= k <= m + n:
        raise ValueError(f"k (top positions counted) must lie between 1 and m + n = {m + n}, got {k}")
    return m, n, k


def _seed(seed) -> int:
    if seed is None:
        return int(np.random.SeedSequence().entropy % (2**63))
    return as_int(seed, "seed", minimum=0, maximum=2**63 - 1)


def _draw_cost(m: int, n: int) -> int:
    """Elementary operations per shuffled draw (used for the work limit)."""
    s = min(m, n)
    N = m + n
    return max(1, min(s * s, N) + m)


def _uses_marks(m: int, n: int) -> bool:
    """Floyd's membership test by a boolean mark row (cost N) or by comparisons (cost s^2 / 2)."""
    s = min(m, n)
    return n < m or s * s > 4 * (m + n)


def check_request(m, n, k, draws) -> tuple[int, int, int, int]:
    """Validate (m, n, k, draws) and return them as ints.

    Limits (each message says what to change): m >= 1, n >= 0, m + n <= 100,000, 1 <= k <= m + n,
    100 <= draws <= 1,000,000, and draws x (cost of one draw) <= MAX_WORK, where a draw costs about
    min(min(m, n)^2, m + n) + m operations.
    """
    m, n, k = _sizes(m, n, k)
    draws = as_int(draws, "draws", minimum=MIN_DRAWS, maximum=MAX_DRAWS)
    work = draws * _draw_cost(m, n)
    if work > MAX_WORK:
        most = max(MIN_DRAWS, MAX_WORK // _draw_cost(m, n))
        raise ValueError(
            f"{draws:,} draws of m = {m}, n = {n} are too much work ({work:.1e} operations, limit "
            f"{MAX_WORK:.0e}); use at most {most:,} draws or fewer items"
        )
    return m, n, k, draws


# ----------------------------------------------------------------------------------------------
# shuffled labels
# ----------------------------------------------------------------------------------------------


def _block_rows(m: int, n: int) -> int:
    """Draws per block: a mark row costs m + n cells; the comparison path holds ~8 arrays of m."""
    return max(1, BLOCK_CELLS // ((m + n) if _uses_marks(m, n) else 8 * m))


def block_layout(m, n, draws) -> list[tuple[int, int]]:
    """The blocks (index, rows) that make up ``draws`` shuffled draws of size (m, n).

    Every block but the last has the same number of rows (``BLOCK_CELLS // (m + n)`` when Floyd's
    membership test uses a mark row, ``BLOCK_CELLS // (8 m)`` when it compares); block b's draws
    depend only on (seed, m, n, b), so a caller can compute (and cache) the blocks one at a time.
    """
    m, n = int(m), int(n)
    per = _block_rows(m, n)
    return [(b, min(per, draws - b * per)) for b in range(-(-int(draws) // per))]


def _positive_ranks(rng: np.random.Generator, rows: int, m: int, n: int) -> np.ndarray:
    """Sorted 1-based ranks of the m positives in ``rows`` uniformly random rankings, shape (rows, m)."""
    N = m + n
    s = min(m, n)
    if s == 0:  # no negatives: the positives fill every rank
        return np.broadcast_to(np.arange(1, N + 1), (rows, N)).copy()
    U = rng.random((rows, s))  # row-major: row r uses the stream's numbers r*s .. r*s + s - 1
    highs = np.arange(N - s + 1, N + 1)
    T = np.minimum((U * highs).astype(np.int64), highs - 1)
    if not _uses_marks(m, n):
        chosen = np.empty((rows, s), dtype=np.int64)
        for c in range(s):
            t = T[:, c]
            taken = (chosen[:, :c] == t[:, None]).any(axis=1) if c else np.zeros(rows, dtype=bool)
            chosen[:, c] = np.where(taken, N - s + c, t)
        chosen.sort(axis=1)
        return chosen + 1
    mark = np.zeros(rows * N, dtype=bool)
    base = np.arange(rows) * N
    for c in range(s):
        t = T[:, c]
        taken = mark[base + t]
        mark[base + np.where(taken, N - s + c, t)] = True
    mark = mark.reshape(rows, N)
    if n < m:  # the negatives were drawn: the positives are the rest
        mark = ~mark
    return np.nonzero(mark)[1].reshape(rows, m) + 1


def shuffled_block(m, n, k, seed, block: int, rows: int) -> ShuffledSample:
    """Precision@K and AP of ``rows`` shuffled rankings: block ``block`` of size (m, n) under ``seed``.

    ``Precision@K = #{positive ranks <= k} / k`` and ``AP = (1/m) sum_i i / r_i`` (r_1 < ... < r_m
    the positives' ranks). No checks beyond ints: use :func:`shuffled_precision_at_k` unless you
    are looping over :func:`block_layout` yourself.
    """
    m, n, k, seed, block, rows = (int(v) for v in (m, n, k, seed, block, rows))
    rng = np.random.default_rng([seed, m, n, block])
    ranks = _positive_ranks(rng, rows, m, n)
    precision = (ranks <= k).sum(axis=1) / k
    i = np.arange(1, m + 1, dtype=np.float64)
    ap = (i / ranks).sum(axis=1) / m
    return ShuffledSample(precision, ap)


def iter_shuffled(m, n, k, draws, seed) -> Iterator[ShuffledSample]:
    """Yield the blocks of :func:`shuffled_precision_at_k` one at a time (for progress bars)."""
    m, n, k, draws = check_request(m, n, k, draws)
    seed = _seed(seed)
    for b, rows in block_layout(m, n, draws):
        yield shuffled_block(m, n, k, seed, b, rows)


def shuffled_precision_at_k(m, n, k, draws=10_000, seed=None) -> ShuffledSample:
    """Precision@K and AP of ``draws`` uniformly random rankings of m positives and n negatives.

    Parameters
    ----------
    m, n : int
        Positives (>= 1) and negatives (>= 0), m + n <= 100,000.
    k : int
        Top positions counted, 1 <= k <= m + n (seed 004 uses k = m, i.e. Precision@R).
    draws : int
        Number of shuffles, 100 to 1,000,000 (and within :data:`MAX_WORK`).
    seed : int, optional
        Non-negative seed; None draws a fresh one. The same (m, n, seed) gives the same rankings for
        every k and every number of draws (a prefix of a longer run).

    Returns
    -------
    ShuffledSample
        ``.precision`` = hits in the top k / k and ``.ap`` = (1/m) sum_i i / r_i, float arrays of
        length ``draws``, computed from the same rankings.
    """
    parts = list(iter_shuffled(m, n, k, draws, seed))
    return ShuffledSample(np.concatenate([p.precision for p in parts]), np.concatenate([p.ap for p in parts]))


# ----------------------------------------------------------------------------------------------
# the hypergeometric law
# ----------------------------------------------------------------------------------------------


def hypergeom_precision_at_k(m, n, k, draws=10_000, seed=None) -> np.ndarray:
    """``draws`` values of Precision@K drawn straight from its law (R's ``rhyper(nn, m, n, k) / k``).

    Uses ``numpy.random.default_rng(seed).hypergeometric(m, n, k, size=draws) / k``; limits as in
    :func:`check_request`. The stream differs from that of :func:`shuffled_precision_at_k` with the
    same seed, so the two samples are independent.
    """
    m, n, k, draws = check_request(m, n, k, draws)
    rng = np.random.default_rng(_seed(seed))
    return rng.hypergeometric(m, n, k, size=draws) / k


def hypergeom_pmf(m, n, k) -> tuple[np.ndarray, np.ndarray]:
    """Exact law of the hits in the top k: (hits j, P(j)) for j = max(0, k - n) .. min(k, m).

    Precision@K takes the values ``j / k`` with these probabilities (the hypergeometric pmf with
    population m + n, m successes and k draws).
    """
    m, n, k = _sizes(m, n, k)
    hits = np.arange(max(0, k - n), min(k, m) + 1)
    return hits, stats.hypergeom(m + n, m, k).pmf(hits)


def hypergeom_ppf(m, n, k, q=0.95) -> float:
    """``qhyper(q, m, n, k) / k``: the smallest Precision@K value x with P(Precision@K <= x) >= q."""
    m, n, k = _sizes(m, n, k)
    q = as_probability(q, "q")
    return float(stats.hypergeom(m + n, m, k).ppf(q)) / k


# ----------------------------------------------------------------------------------------------
# tables
# ----------------------------------------------------------------------------------------------


def thresholds_table(m, n, k, precision, q=0.95) -> pd.DataFrame:
    """Seed 004's thresholds: columns ``name``, ``value`` with the rows

    - ``"m / (m + n)"``: the mean of the hypergeometric Precision@K (for every k);
    - ``"empirical mean"``: the mean of the shuffled Precision@K draws ``precision``;
    - ``"hyper 95pct"``: ``qhyper(q, m, n, k) / k`` (the name keeps seed 004's label for q = 0.95).
    """
    m, n, k = _sizes(m, n, k)
    precision = np.asarray(precision, dtype=float)
    if precision.size == 0:
        raise ValueError("precision must hold at least one draw")
    label = "hyper 95pct" if math.isclose(q, 0.95) else f"hyper {100 * q:g}pct"
    return pd.DataFrame({
        "name": ["m / (m + n)", "empirical mean", label],
        "value": [m / (m + n), float(precision.mean()), hypergeom_ppf(m, n, k, q)],
    })


#: Largest (m + n) * C(m + n, m) for which :func:`exact_ap_law` counts placements (~0.2 s).
EXACT_AP_WORK = 2 * 10**7


def exact_ap_law(m, n, seed=0):
    """The AP null law used for the exact columns: ``null_distribution(m, n, "ap", method="auto")``,
    except that the grid law (quantiles within 0.001) replaces exact counting when counting would
    be slow: "auto" counts whenever C(m + n, m) <= 200,000, but counting costs about
    (m + n) C(m + n, m), i.e. seconds to minutes for m = 1 or 2 and large n."""
    method = choose_method(m, n, "ap", "auto")
    if method == "exact" and (m + n) * math.comb(m + n, m) > EXACT_AP_WORK:
        method = "grid"
    return null_distribution(m, n, "ap", method=method, seed=seed)


def summary_table(m, n, k, sample: ShuffledSample, hyper=None, q=0.95, seed=0) -> pd.DataFrame:
    """Empirical mean and type-7 q-quantile of each sample beside the exact mean and quantile.

    Rows: ``"AP (shuffled)"``, ``"Precision@K (shuffled)"`` and, if ``hyper`` draws are given,
    ``"Precision@K (hypergeometric draws)"``. Columns: ``statistic``, ``empirical mean``, ``exact
    mean``, ``empirical 95pct`` (numpy's default interpolation, R's type 7, as in seed 004), ``exact
    95pct``, ``mean deviation (SE)`` ((empirical - exact) / SE), ``SE of mean`` (sample SD /
    sqrt(draws)), ``draws`` and ``exact method``.

    The exact AP mean is :func:`apnull.expected_ap`; the exact AP quantile comes from
    :func:`exact_ap_law` (exact enumeration, the grid law within 0.001, or Monte Carlo with ``seed``
    for large sizes; the method is reported). For Precision@K
    the exact mean is m / (m + n) and the quantile ``qhyper(q, m, n, k) / k``. A type-7 quantile of
    a discrete sample interpolates between support points, so it can sit between two values the
    exact quantile can take.
    """
    m, n, k = _sizes(m, n, k)
    q = as_probability(q, "q")
    law = exact_ap_law(m, n, seed=seed)
    rows = [("AP (shuffled)", np.asarray(sample.ap), expected_ap(m, n), float(law.quantile(q)), law.describe()),
            ("Precision@K (shuffled)", np.asarray(sample.precision), m / (m + n), hypergeom_ppf(m, n, k, q),
             "exact (hypergeometric)")]
    if hyper is not None:
        rows.append(("Precision@K (hypergeometric draws)", np.asarray(hyper), m / (m + n),
                     hypergeom_ppf(m, n, k, q), "exact (hypergeometric)"))
    pct = f"{100 * q:g}pct"
    out = []
    for name, x, mean, quant, method in rows:
        se = float(x.std(ddof=1) / math.sqrt(x.size)) if x.size > 1 else float("nan")
        emp = float(x.mean())
        out.append({
            "statistic": name,
            "empirical mean": emp,
            "exact mean": float(mean),
            f"empirical {pct}": float(np.quantile(x, q)),
            f"exact {pct}": quant,
            "mean deviation (SE)": (emp - mean) / se if se > 0 else (0.0 if math.isclose(emp, mean) else float("inf")),
            "SE of mean": se,
            "draws": int(x.size),
            "exact method": method,
        })
    return pd.DataFrame(out)


def hit_counts(precision, k) -> np.ndarray:
    """Hits in the top k (integers) from Precision@K values."""
    return np.rint(np.asarray(precision, dtype=float) * int(k)).astype(np.int64)


def pmf_fit(precision, m, n, k, min_expected: float = 5.0) -> dict:
    """Compare a sample of Precision@K with the exact hypergeometric pmf.

    Chi-square goodness of fit: neighbouring hit counts are pooled (left to right, the remainder
    into the last cell) until every cell expects at least ``min_expected`` draws; statistic
    ``sum (O - E)^2 / E`` on ``cells - 1`` degrees of freedom. Total variation distance:
    ``(1/2) sum_j |share_j - P(j)|`` over the unpooled hit counts (sampling noise alone gives about
    ``sqrt(#values / (2 pi draws))``). A sample value outside the support makes the fit fail
    (p-value 0, total variation counts it).

    Returns
    -------
    dict
        ``chi2``, ``df``, ``p_value`` (NaN when fewer than two cells remain, e.g. a degenerate law),
        ``cells`` (after pooling), ``tv`` and ``draws``.
    """
    m, n, k = _sizes(m, n, k)
    hits = hit_counts(precision, k)
    draws = hits.size
    if draws == 0:
        raise ValueError("precision must hold at least one draw")
    support, pmf = hypergeom_pmf(m, n, k)
    lo = support[0]
    inside = (hits >= lo) & (hits <= support[-1])
    observed = np.bincount(hits[inside] - lo, minlength=support.size).astype(float)
    outside = int(draws - inside.sum())
    tv = 0.5 * (np.abs(observed / draws - pmf).sum() + outside / draws)
    expected = pmf * draws
    cells_o, cells_e = [], []
    acc_o = acc_e = 0.0
    for o, e in zip(observed, expected):
        acc_o += o
        acc_e += e
        if acc_e >= min_expected:
            cells_o.append(acc_o)
            cells_e.append(acc_e)
            acc_o = acc_e = 0.0
    if acc_e > 0 or acc_o > 0:
        if cells_e:
            cells_o[-1] += acc_o
            cells_e[-1] += acc_e
        else:
            cells_o.append(acc_o)
            cells_e.append(acc_e)
    O, E = np.array(cells_o), np.array(cells_e)
    df = O.size - 1
    if outside:
        chi2, p = float("inf"), 0.0
    elif df < 1:
        chi2, p = 0.0, float("nan")
    else:
        chi2 = float(((O - E) ** 2 / E).sum())
        p = float(stats.chi2.sf(chi2, df))
    return {"chi2": chi2, "df": int(df), "p_value": p, "cells": int(O.size), "tv": float(tv), "draws": int(draws)}


def fit_table(m, n, k, samples: dict) -> pd.DataFrame:
    """:func:`pmf_fit` for several named samples: one row per name (sample, draws, chi2, df, p_value, tv)."""
    rows = []
    for name, x in samples.items():
        f = pmf_fit(x, m, n, k)
        rows.append({"sample": name, "draws": f["draws"], "chi-square": f["chi2"], "df": f["df"],
                     "p-value": f["p_value"], "total variation": f["tv"]})
    return pd.DataFrame(rows)
