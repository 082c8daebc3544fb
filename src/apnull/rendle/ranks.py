"""One relevant item: the metric at a rank, the law of the sampled rank, expected sampled metrics.

See :mod:`apnull.rendle` for the setting and the notation.
"""

from __future__ import annotations

import numpy as np
from scipy import stats

from ..limits import as_int
from .paper import METRICS

# Largest number of float64 cells a pmf block or a simulation block may hold (16 MiB).
_BLOCK_CELLS = 1 << 21


def check_rank_metric(metric) -> str:
    """The metric's key (lower case, one of ``paper.METRICS``); ValueError naming the choices otherwise."""
    key = str(metric).strip().lower()
    if key not in METRICS:
        raise ValueError(f"metric must be one of {', '.join(METRICS)}; got {metric!r}")
    return key


def check_n(n) -> int:
    """The number of items n as an int >= 2."""
    return as_int(n, "n (number of items)", 2)


def check_s(s, n: int, replace: bool) -> int:
    """The sample size s as an int >= 1, and at most n - 1 when sampling without replacement."""
    if replace:
        return as_int(s, "s (number of sampled irrelevant items)", 1)
    return as_int(
        s,
        f"s (number of sampled irrelevant items, without replacement at most n - 1 = {n - 1})",
        1,
        n - 1,
    )


def _check_ranks(r, n: int, name: str = "rank") -> np.ndarray:
    """Ranks as an int64 array with every value in 1..n (shape kept)."""
    arr = np.asarray(r)
    if arr.dtype == bool or arr.dtype.kind not in "iuf":
        raise ValueError(f"{name} must be whole numbers between 1 and n = {n}, got {r!r}")
    if arr.size == 0:
        return arr.astype(np.int64)
    if arr.dtype.kind == "f":
        bad = ~np.isfinite(arr) | (arr != np.round(arr))
        if bad.any():
            raise ValueError(
                f"{name} must be whole numbers between 1 and n = {n}, got {arr[bad].flat[0]!r}"
            )
    low, high = arr.min(), arr.max()
    if low < 1 or high > n:
        worst = low if low < 1 else high
        raise ValueError(f"{name} must be between 1 and n = {n}, got {worst:g}; raise n or fix the rank")
    return arr.astype(np.int64)


def check_sampling_settings(metric, n, s, k, replace: bool) -> tuple[str, int, int, int]:
    """The checks every public expectation shares: metric key, n >= 2, s (<= n - 1 without
    replacement) and the cut-off k >= 1."""
    n = check_n(n)
    return check_rank_metric(metric), n, check_s(s, n, replace), as_int(k, "k (cut-off)", 1)


def check_instances(ranks, n: int) -> np.ndarray:
    """A non-empty 1-d array of true ranks (one per evaluation instance)."""
    arr = _check_ranks(np.asarray(ranks).reshape(-1) if np.ndim(ranks) else [ranks], n, "ranks")
    if arr.size == 0:
        raise ValueError("ranks must hold at least one true rank (one per evaluation instance)")
    return arr


# ----------------------------------------------------------------------------------------------
# metric of one rank and the law of the sampled rank
# ----------------------------------------------------------------------------------------------


def metric_of_ranks(metric: str, r: np.ndarray, n: int, k: int) -> np.ndarray:
    """Unchecked metric of rank(s) ``r`` among ``n`` items (float array of r's shape)."""
    r = np.asarray(r, dtype=np.float64)
    if metric == "auc":
        return (n - r) / (n - 1)
    if metric == "precision":
        return (r <= k) / k
    if metric == "recall":
        return (r <= k).astype(np.float64)
    if metric == "ap":
        return 1.0 / r
    if metric == "ndcg":
        return 1.0 / np.log2(r + 1.0)
    if metric == "ap@k":
        return np.where(r <= k, 1.0 / r, 0.0)
    if metric == "ndcg@k":
        return np.where(r <= k, 1.0 / np.log2(r + 1.0), 0.0)
    raise AssertionError(metric)  # pragma: no cover - keys are checked before


def metric_at_rank(metric: str, r, n: int, k: int = 10):
    """Metric of a single relevant item ranked at position ``r`` among ``n`` items.

    Parameters
    ----------
    metric : {"auc", "precision", "recall", "ap", "ndcg", "ap@k", "ndcg@k"}
        ``auc = (n - r) / (n - 1)``, ``precision = [r <= k] / k``, ``recall = [r <= k]``,
        ``ap = 1 / r`` (equals reciprocal rank), ``ndcg = 1 / log2(r + 1)``,
        ``ap@k = [r <= k] / r``, ``ndcg@k = [r <= k] / log2(r + 1)``. Case-insensitive.
    r : int or array_like of int
        True rank(s), each in ``1..n``. Any shape; the result has the same shape.
    n : int
        Number of items ranked, ``n >= 2`` (AUC divides by ``n - 1``).
    k : int, default 10
        Cut-off for the ``@k`` metrics, ``k >= 1``; ignored by the others. ``k > n`` is allowed
        (Recall@k is then always 1, Precision@k at most ``1 / k``).

    Returns
    -------
    float or numpy.ndarray
        A Python float for a scalar ``r``, otherwise a float64 array shaped like ``r``.

    Raises
    ------
    ValueError
        Unknown metric, ``n < 2``, ``k < 1``, or a rank that is not a whole number in ``1..n``.
    """
    metric = check_rank_metric(metric)
    n = check_n(n)
    k = as_int(k, "k (cut-off)", 1)
    ranks = _check_ranks(r, n)
    out = metric_of_ranks(metric, ranks, n, k)
    return float(out) if np.ndim(r) == 0 else out


def _pmf_block(r: np.ndarray, n: int, s: int, replace: bool) -> np.ndarray:
    """pmf of X = R' - 1 on 0..s for a 1-d block of ranks: shape (len(r), s + 1)."""
    x = np.arange(s + 1)
    if replace:
        p = (r - 1.0) / (n - 1.0)
        return stats.binom.pmf(x[None, :], s, p[:, None])
    return _hypergeom_pmf_block(r, n, s)


def _hypergeom_pmf_block(r: np.ndarray, n: int, s: int) -> np.ndarray:
    """pmf of Hypergeometric(population n - 1, successes r - 1, draws s) on 0..s, rows = ranks.

    scipy.stats.hypergeom.pmf is about 1000x slower than the binomial pmf (it made the Figure 2
    curves take minutes). With q = s / N (N = n - 1, K = r - 1) the identity

        P(X = x) = Bin(x; K, q) * Bin(s - x; N - K, q) / Bin(s; N, q)

    holds for any q in (0, 1] because the powers of q and 1 - q cancel; the binomial pmfs are fast
    and accurate to a few ulps, and the denominator is a central binomial term, so no underflow.
    """
    pop = n - 1
    q = s / pop
    good = (r - 1).astype(np.int64)[:, None]
    x = np.arange(s + 1)[None, :]
    num = stats.binom.pmf(x, good, q) * stats.binom.pmf(s - x, pop - good, q)
    return num / stats.binom.pmf(s, pop, q)


def row_blocks(size: int, width: int):
    """Slices of ``range(size)`` whose blocks of ``width`` float64 columns hold at most 2**21 cells."""
    rows = max(1, _BLOCK_CELLS // max(width, 1))
    for start in range(0, size, rows):
        yield slice(start, min(size, start + rows))


def sampled_rank_pmf(r, n: int, s: int, replace: bool = True):
    """Exact law of the sampled rank of an item at true rank ``r`` among ``n`` items.

    With ``p = (r - 1) / (n - 1)`` the sampled rank is ``R' = 1 + X`` where
    ``X ~ Binomial(s, p)`` (sampling with replacement) or
    ``X ~ Hypergeometric(population n - 1, successes r - 1, draws s)`` (without replacement).
    Edge cases: ``r = 1`` gives ``R' = 1`` surely, ``r = n`` gives ``R' = s + 1`` surely.

    Parameters
    ----------
    r : int or array_like of int
        True rank(s) in ``1..n``.
    n : int
        Number of items, ``n >= 2``.
    s : int
        Number of sampled irrelevant items, ``s >= 1``; without replacement also ``s <= n - 1``.
    replace : bool, default True
        Sample the irrelevant items with replacement (binomial) or without (hypergeometric).

    Returns
    -------
    support : numpy.ndarray of int, shape (s + 1,)
        The possible sampled ranks ``1, 2, ..., s + 1``.
    pmf : numpy.ndarray of float, shape ``np.shape(r) + (s + 1,)``
        ``pmf[..., i] = P(R' = support[i])``; each row sums to 1. Memory is ``8 * r.size * (s + 1)``
        bytes, so keep ``r.size * s`` moderate.
    """
    n = check_n(n)
    s = check_s(s, n, replace)
    ranks = _check_ranks(r, n)
    flat = ranks.reshape(-1)
    pmf = np.empty((flat.size, s + 1))
    for block in row_blocks(flat.size, s + 1):
        pmf[block] = _pmf_block(flat[block], n, s, replace)
    return np.arange(1, s + 2), pmf.reshape(np.shape(ranks) + (s + 1,))


# ----------------------------------------------------------------------------------------------
# exact expectation and SD of a sampled metric
# ----------------------------------------------------------------------------------------------


def _ap_mean_with_replacement(r: np.ndarray, n: int, s: int) -> np.ndarray:
    """E[1 / (1 + B)], B ~ Binomial(s, p): (1 - (1 - p)^(s+1)) / ((s + 1) p); p = 0 gives 1."""
    p = (r - 1.0) / (n - 1.0)
    out = np.ones_like(p)
    pos = p > 0
    pp = p[pos]
    with np.errstate(divide="ignore"):
        # 1 - (1 - p)^(s+1) = -expm1((s+1) log1p(-p)); exact to rounding even for tiny p,
        # and log1p(-1) = -inf gives the right limit 1 at p = 1.
        one_minus_q = -np.expm1((s + 1) * np.log1p(-pp))
    out[pos] = one_minus_q / ((s + 1) * pp)
    return out


def _ap_mean_without_replacement(r: np.ndarray, n: int, s: int) -> np.ndarray:
    """E[1 / (1 + X)], X ~ Hypergeometric(n - 1, r - 1, s).

    Summing ``C(K, x) / (x + 1) = C(K + 1, x + 1) / (K + 1)`` against the law and using
    Vandermonde's identity gives, with K = r - 1,

        E = n / (r (s + 1)) * (1 - C(n - r, s + 1) / C(n, s + 1)),

    and the ratio of binomials is prod_{i=0..s} (1 - r / (n - i)) (zero once s + 1 > n - r).
    """
    out = np.empty(r.shape)
    i = np.arange(s + 1, dtype=np.float64)
    for block in row_blocks(r.size, s + 1):
        rb = r[block].astype(np.float64)
        tail = np.zeros(rb.shape)
        room = (n - rb) >= s + 1  # otherwise every (s+1)-subset of the n items meets the top r
        if room.any():
            log_ratio = np.log1p(-rb[room, None] / (n - i[None, :])).sum(axis=1)
            tail[room] = -np.expm1(log_ratio)
        tail[~room] = 1.0
        out[block] = n / (rb * (s + 1.0)) * tail
    return out


def _recall_hit(r: np.ndarray, n: int, s: int, k: int, replace: bool):
    """(P(R' <= k), P(R' > k)) = (CDF, survival) of X at k - 1 (paper eq 27).

    The survival function is computed on its own so that Var = cdf * sf keeps its relative
    accuracy when the hit probability is within 1e-16 of 1.
    """
    if k - 1 >= s:
        return np.ones(r.shape), np.zeros(r.shape)
    law = (
        stats.binom(s, (r - 1.0) / (n - 1.0))
        if replace
        else stats.hypergeom(n - 1, r - 1, s)
    )
    return law.cdf(k - 1), law.sf(k - 1)


def _auc_var(r: np.ndarray, n: int, s: int, replace: bool) -> np.ndarray:
    """Var of sampled AUC = 1 - X / s: Var[X] / s^2."""
    p = (r - 1.0) / (n - 1.0)
    var = p * (1.0 - p) / s
    if not replace:
        pop = n - 1  # finite-population correction (pop - s) / (pop - 1); pop = 1 forces s = 1
        var = var * ((pop - s) / (pop - 1) if pop > 1 else 0.0)
    return var


def expected_moments(metric: str, r: np.ndarray, n: int, s: int, k: int, replace: bool, want_sd: bool):
    """Unchecked core of :func:`expected_sampled_metric` for a 1-d rank array: (mean, variance or None
    when ``want_sd`` is false)."""
    r = r.reshape(-1)
    if metric == "auc":
        # Sampled AUC is unbiased (paper eqs 21-25, also without replacement).
        mean = (n - r) / (n - 1.0)
        return mean, (_auc_var(r, n, s, replace) if want_sd else None)
    if metric in ("recall", "precision"):
        hit, miss = _recall_hit(r, n, s, k, replace)
        var = np.clip(hit * miss, 0.0, None) if want_sd else None
        if metric == "precision":
            return hit / k, (var / k**2 if want_sd else None)
        return hit, var
    if metric == "ap":
        mean = (
            _ap_mean_with_replacement(r, n, s)
            if replace
            else _ap_mean_without_replacement(r, n, s)
        )
        if not want_sd:
            return mean, None
    else:
        mean = None
    # general case: sum the metric of each sampled rank against the law of the sampled rank
    values = metric_of_ranks(metric, np.arange(1, s + 2), s + 1, k)
    sum_mean = np.empty(r.size)
    var = np.empty(r.size) if want_sd else None
    for block in row_blocks(r.size, s + 1):
        pmf = _pmf_block(r[block], n, s, replace)
        mu = pmf @ values
        sum_mean[block] = mu
        if want_sd:
            var[block] = np.einsum("ij,ij->i", pmf, (values[None, :] - mu[:, None]) ** 2)
    return (sum_mean if mean is None else mean), var


def expected_sampled_metric(metric: str, r, n: int, s: int, k: int = 10, replace: bool = True):
    """Exact mean and standard deviation of a sampled metric for one relevant item.

    The relevant item has true rank ``r`` among ``n`` items; ``s`` irrelevant items are sampled and
    the metric is evaluated on the sampled rank ``R'`` among the ``s + 1`` ranked items, e.g. sampled
    AUC ``= (s + 1 - R') / s`` and sampled AP ``= 1 / R'`` (paper eq 19):

        E[M] = sum_{i=1..s+1} P(R' = i) M_{s+1,k}(i),   SD[M] = sqrt(sum_i P(R' = i) (M(i) - E[M])^2)

    Closed forms are used where they exist (all are checked against the sum in the tests):

    * AUC: ``E = (n - r) / (n - 1)`` (unbiased); ``Var = p (1 - p) / s`` with replacement, times
      ``(n - 1 - s) / (n - 2)`` without (``p = (r - 1) / (n - 1)``).
    * Recall@k: ``E = P(X <= k - 1)`` (binomial or hypergeometric CDF), ``Var = E (1 - E)`` (with
      ``1 - E`` taken from the survival function);
      Precision@k is Recall@k / k.
    * AP with replacement: ``E = (1 - (1 - p)^(s+1)) / ((s + 1) p)``, evaluated with expm1/log1p so
      it stays exact for tiny ``p``; ``p = 0`` (``r = 1``) gives 1. (The paper's eq 29 prints the
      denominator as ``(r - 1)(m + 1)/(n + 1)``; it should read ``(n - 1)``.)
    * AP without replacement: ``E = n / (r (s + 1)) * (1 - C(n - r, s + 1) / C(n, s + 1))``.
    * The SD of AP, and NDCG, AP@k, NDCG@k always use the sum over the law.

    Parameters
    ----------
    metric : str
        One of :data:`METRICS`.
    r : int or array_like of int
        True rank(s) in ``1..n``; the outputs have the shape of ``r``.
    n : int
        Number of items, ``n >= 2``.
    s : int
        Number of sampled irrelevant items, ``s >= 1`` (``<= n - 1`` without replacement). At
        ``s = n - 1`` without replacement the sample is the whole catalogue and the sampled metric
        equals the exact one.
    k : int, default 10
        Cut-off for the ``@k`` metrics.
    replace : bool, default True
        Sampling with replacement (binomial law) or without (hypergeometric law).

    Returns
    -------
    mean, sd : float or numpy.ndarray
        Python floats for a scalar ``r``, arrays shaped like ``r`` otherwise. Cost is
        ``O(r.size * s)`` when the sum over the law is needed, ``O(r.size)`` otherwise.
    """
    metric, n, s, k = check_sampling_settings(metric, n, s, k, replace)
    ranks = _check_ranks(r, n)
    mean, var = expected_moments(metric, ranks, n, s, k, bool(replace), True)
    sd = np.sqrt(np.clip(var, 0.0, None))
    if np.ndim(r) == 0:
        return float(mean[0]), float(sd[0])
    return mean.reshape(ranks.shape), sd.reshape(ranks.shape)
