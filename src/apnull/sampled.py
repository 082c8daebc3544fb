"""Sampled ranking metrics for a single relevant item (Rendle, seed paper 003).

Setting
-------
A recommender ranks ``n`` items for one instance (user, query, ...). Exactly one item is relevant and
it lands at the *true rank* ``r`` (1 = top). A *sampled* evaluation does not rank all ``n`` items: it
draws ``s`` of the ``n - 1`` irrelevant items at random, ranks the relevant item among those ``s + 1``
items, and applies the metric to that *sampled rank* ``R'`` as if the catalogue had ``s + 1`` items.

Each sampled irrelevant item outranks the relevant one with probability ``p = (r - 1) / (n - 1)``
(``r - 1`` of the ``n - 1`` irrelevant items sit above it), so

* with replacement:    ``R' = 1 + Binomial(s, p)``;
* without replacement: ``R' = 1 + Hypergeometric(population n - 1, successes r - 1, draws s)``,
  which needs ``s <= n - 1``.

This module gives the metrics of one rank, the exact law of ``R'``, the exact mean and standard
deviation of every sampled metric (closed forms where they exist, otherwise a sum over the law), the
same for an algorithm evaluated on many instances, a Monte Carlo cross-check, the paper's running
example and a table builder for the dashboard and the command line.

Notation: the paper calls the number of sampled items ``m``; here it is ``s`` because ``m`` already
means "number of relevant items" elsewhere in apnull.

Metrics of a single relevant item at rank ``r`` among ``n`` items (the paper's eqs 9-15):

==============  ==============================  ==========================================
key             value                           note
==============  ==============================  ==========================================
``auc``         ``(n - r) / (n - 1)``           linear in ``r``; needs ``n >= 2``
``precision``   ``[r <= k] / k``                Precision@k
``recall``      ``[r <= k]``                    Recall@k (= hit rate@k)
``ap``          ``1 / r``                       unbounded AP (= reciprocal rank)
``ndcg``        ``1 / log2(r + 1)``             unbounded NDCG
``ap@k``        ``[r <= k] / r``                truncated AP@k
``ndcg@k``      ``[r <= k] / log2(r + 1)``      truncated NDCG@k
==============  ==============================  ==========================================
"""

from __future__ import annotations

import math
from numbers import Integral, Real
from typing import Iterable, Mapping, Sequence

import numpy as np
from scipy import stats

__all__ = [
    "METRICS",
    "METRIC_LABELS",
    "TABLE_METRICS",
    "PAPER_EXAMPLE",
    "PAPER_N",
    "PAPER_SAMPLES",
    "PAPER_REPETITIONS",
    "PAPER_EXACT_TABLE",
    "PAPER_SAMPLED_TABLE",
    "metric_at_rank",
    "metric_label",
    "sampled_rank_pmf",
    "expected_sampled_metric",
    "algorithm_exact_metric",
    "algorithm_sampled_metric",
    "simulate_sampled_metric",
    "expected_metric_curve",
    "algorithm_order",
    "order_changes",
    "sampled_metrics_table",
]

#: Metric keys understood by every function of this module.
METRICS = ("auc", "precision", "recall", "ap", "ndcg", "ap@k", "ndcg@k")

#: Display names; ``{k}`` is filled in with the cut-off.
METRIC_LABELS = {
    "auc": "AUC",
    "precision": "Precision@{k}",
    "recall": "Recall@{k}",
    "ap": "AP",
    "ndcg": "NDCG",
    "ap@k": "AP@{k}",
    "ndcg@k": "NDCG@{k}",
}

#: Metrics shown by :func:`sampled_metrics_table` by default (the columns of the paper's tables).
TABLE_METRICS = ("auc", "ap", "ndcg", "recall")

# ----------------------------------------------------------------------------------------------
# The paper's running example (Section 3.2 and 4.3): three algorithms, five instances each, one
# relevant item per instance, n = 10,000 items. Ranks exactly as printed in the paper.
# ----------------------------------------------------------------------------------------------

#: True ranks of the relevant item for algorithms A, B and C (five instances each).
PAPER_EXAMPLE: dict[str, tuple[int, ...]] = {
    "A": (100, 100, 100, 100, 100),
    "B": (40, 40, 8437, 9266, 4482),
    "C": (212, 2, 743, 5342, 1548),
}
#: Catalogue size of the running example.
PAPER_N = 10_000
#: Number of sampled irrelevant items in the paper's sampled table.
PAPER_SAMPLES = 99
#: Number of repetitions behind the paper's sampled table (its +- is the SD over these).
PAPER_REPETITIONS = 1000

#: The paper's exact table as printed (3 decimals): {algorithm: {metric: value}}.
PAPER_EXACT_TABLE: dict[str, dict[str, float]] = {
    "A": {"auc": 0.990, "ap": 0.010, "ndcg": 0.150, "recall": 0.000},
    "B": {"auc": 0.555, "ap": 0.010, "ndcg": 0.122, "recall": 0.000},
    "C": {"auc": 0.843, "ap": 0.101, "ndcg": 0.208, "recall": 0.200},
}

#: The paper's sampled table (s = 99, with replacement, k = 10) as printed: the mean and the SD over
#: 1,000 simulated repetitions of the algorithm's mean metric, {algorithm: {metric: (mean, sd)}}.
PAPER_SAMPLED_TABLE: dict[str, dict[str, tuple[float, float]]] = {
    "A": {"auc": (0.990, 0.004), "ap": (0.630, 0.129), "ndcg": (0.724, 0.097), "recall": (1.000, 0.000)},
    "B": {"auc": (0.555, 0.014), "ap": (0.336, 0.073), "ndcg": (0.444, 0.054), "recall": (0.400, 0.000)},
    "C": {"auc": (0.843, 0.014), "ap": (0.325, 0.050), "ndcg": (0.460, 0.039), "recall": (0.567, 0.092)},
}

# Largest number of float64 cells a pmf block or a simulation block may hold (16 MiB).
_BLOCK_CELLS = 1 << 21


# ----------------------------------------------------------------------------------------------
# validation
# ----------------------------------------------------------------------------------------------


def _check_int(value, name: str, minimum: int, maximum: int | None = None) -> int:
    """Return ``value`` as an int, or raise ValueError saying which range is allowed."""
    ok = isinstance(value, Integral) and not isinstance(value, bool)
    if not ok and isinstance(value, Real) and not isinstance(value, bool):
        ok = math.isfinite(float(value)) and float(value).is_integer()
    upper = "" if maximum is None else f" and <= {maximum}"
    if not ok:
        raise ValueError(f"{name} must be an integer >= {minimum}{upper}, got {value!r}")
    value = int(value)
    if value < minimum or (maximum is not None and value > maximum):
        raise ValueError(f"{name} must be an integer >= {minimum}{upper}, got {value}")
    return value


def _check_metric(metric) -> str:
    key = str(metric).strip().lower()
    if key not in METRICS:
        raise ValueError(f"metric must be one of {', '.join(METRICS)}; got {metric!r}")
    return key


def _check_n(n) -> int:
    return _check_int(n, "n (number of items)", 2)


def _check_s(s, n: int, replace: bool) -> int:
    if replace:
        return _check_int(s, "s (number of sampled irrelevant items)", 1)
    return _check_int(
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


def _check_instances(ranks, n: int) -> np.ndarray:
    """A non-empty 1-d array of true ranks (one per evaluation instance)."""
    arr = _check_ranks(np.asarray(ranks).reshape(-1) if np.ndim(ranks) else [ranks], n, "ranks")
    if arr.size == 0:
        raise ValueError("ranks must hold at least one true rank (one per evaluation instance)")
    return arr


# ----------------------------------------------------------------------------------------------
# metric of one rank and the law of the sampled rank
# ----------------------------------------------------------------------------------------------


def _metric_values(metric: str, r: np.ndarray, n: int, k: int) -> np.ndarray:
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
    metric = _check_metric(metric)
    n = _check_n(n)
    k = _check_int(k, "k (cut-off)", 1)
    ranks = _check_ranks(r, n)
    out = _metric_values(metric, ranks, n, k)
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


def _row_blocks(size: int, width: int):
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
    n = _check_n(n)
    s = _check_s(s, n, replace)
    ranks = _check_ranks(r, n)
    flat = ranks.reshape(-1)
    pmf = np.empty((flat.size, s + 1))
    for block in _row_blocks(flat.size, s + 1):
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
    for block in _row_blocks(r.size, s + 1):
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


def _expected(metric: str, r: np.ndarray, n: int, s: int, k: int, replace: bool, want_sd: bool):
    """Checked-input core of expected_sampled_metric for a 1-d rank array -> (mean, var|None)."""
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
    values = _metric_values(metric, np.arange(1, s + 2), s + 1, k)
    sum_mean = np.empty(r.size)
    var = np.empty(r.size) if want_sd else None
    for block in _row_blocks(r.size, s + 1):
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
    metric = _check_metric(metric)
    n = _check_n(n)
    s = _check_s(s, n, replace)
    k = _check_int(k, "k (cut-off)", 1)
    ranks = _check_ranks(r, n)
    mean, var = _expected(metric, ranks, n, s, k, bool(replace), True)
    sd = np.sqrt(np.clip(var, 0.0, None))
    if np.ndim(r) == 0:
        return float(mean[0]), float(sd[0])
    return mean.reshape(ranks.shape), sd.reshape(ranks.shape)


def algorithm_exact_metric(ranks, n: int, metric: str, k: int = 10) -> float:
    """Exact (unsampled) metric of an algorithm: the mean of :func:`metric_at_rank` over instances.

    Parameters
    ----------
    ranks : array_like of int
        True rank of the relevant item in each evaluation instance (at least one), each in ``1..n``.
    n, metric, k
        As in :func:`metric_at_rank`.
    """
    metric = _check_metric(metric)
    n = _check_n(n)
    k = _check_int(k, "k (cut-off)", 1)
    arr = _check_instances(ranks, n)
    return float(np.mean(_metric_values(metric, arr, n, k)))


def algorithm_sampled_metric(
    ranks, n: int, s: int, metric: str, k: int = 10, replace: bool = True
) -> tuple[float, float]:
    """Exact mean and SD of an algorithm's sampled metric (mean over its evaluation instances).

    Each instance draws its own independent sample, so for instances ``i = 1..N``

        mean = (1/N) sum_i E[M_i],    sd = sqrt(sum_i Var[M_i]) / N,

    where ``sd`` is the spread of the reported (averaged) sampled metric from one evaluation run to
    the next — the ``+-`` of the paper's sampled table.

    Parameters
    ----------
    ranks : array_like of int
        True rank of the relevant item in each instance (at least one), each in ``1..n``.
    n, s, metric, k, replace
        As in :func:`expected_sampled_metric`.

    Returns
    -------
    (mean, sd) : tuple of float
    """
    metric = _check_metric(metric)
    n = _check_n(n)
    s = _check_s(s, n, replace)
    k = _check_int(k, "k (cut-off)", 1)
    arr = _check_instances(ranks, n)
    mean, var = _expected(metric, arr, n, s, k, bool(replace), True)
    return float(mean.mean()), float(math.sqrt(max(float(var.sum()), 0.0)) / arr.size)


# ----------------------------------------------------------------------------------------------
# Monte Carlo cross-check
# ----------------------------------------------------------------------------------------------


def simulate_sampled_metric(
    ranks,
    n: int,
    s: int,
    metric: str,
    repetitions: int,
    seed=None,
    k: int = 10,
    replace: bool = True,
) -> np.ndarray:
    """Simulate sampled evaluations of an algorithm and return the metric of each run.

    One repetition samples, independently for every instance, the number ``X`` of sampled
    irrelevant items that outrank the relevant one (``Binomial(s, p)`` with replacement, numpy's
    ``hypergeometric(ngood=r - 1, nbad=n - r, nsample=s)`` without), sets the sampled rank to
    ``1 + X``, evaluates the metric among ``s + 1`` items and averages over instances. Drawing
    ``X`` directly is equivalent in law to drawing the ``s`` items themselves.

    Parameters
    ----------
    ranks : array_like of int
        True ranks, one per instance, each in ``1..n``.
    n, s, metric, k, replace
        As in :func:`expected_sampled_metric`.
    repetitions : int
        Number of simulated evaluation runs, ``>= 1``.
    seed : None, int or numpy.random.Generator
        Seed for ``numpy.random.default_rng``; the same seed gives the same result.

    Returns
    -------
    numpy.ndarray, shape (repetitions,)
        Mean sampled metric of each run; its mean and SD estimate the outputs of
        :func:`algorithm_sampled_metric`. Memory is bounded (runs are drawn in blocks).
    """
    metric = _check_metric(metric)
    n = _check_n(n)
    s = _check_s(s, n, replace)
    k = _check_int(k, "k (cut-off)", 1)
    repetitions = _check_int(repetitions, "repetitions", 1)
    arr = _check_instances(ranks, n)
    if not replace and n > 10**9:
        # numpy's hypergeometric sampler needs a population below 1e9; at that size sampling
        # with and without replacement cannot be told apart anyway.
        raise ValueError(f"simulation without replacement needs n <= 1e9, got n = {n}; use replace=True")
    rng = seed if isinstance(seed, np.random.Generator) else np.random.default_rng(seed)
    out = np.empty(repetitions)
    for block in _row_blocks(repetitions, arr.size):
        size = (block.stop - block.start, arr.size)
        if replace:
            x = rng.binomial(s, (arr - 1.0) / (n - 1.0), size=size)
        else:
            x = rng.hypergeometric(arr - 1, n - arr, s, size=size)
        out[block] = _metric_values(metric, 1 + x, s + 1, k).mean(axis=1)
    return out


# ----------------------------------------------------------------------------------------------
# ordering of algorithms as the sample size grows (paper Figure 2)
# ----------------------------------------------------------------------------------------------


def _check_rankings(rankings: Mapping[str, Sequence[int]], n: int) -> dict[str, np.ndarray]:
    if not isinstance(rankings, Mapping) or len(rankings) == 0:
        raise ValueError("rankings must be a non-empty mapping {algorithm name: list of true ranks}")
    return {str(name): _check_instances(r, n) for name, r in rankings.items()}


def _check_sizes(sample_sizes, n: int, replace: bool) -> np.ndarray:
    sizes = [_check_s(s, n, replace) for s in np.atleast_1d(np.asarray(sample_sizes)).tolist()]
    if not sizes:
        raise ValueError("sample_sizes must hold at least one sample size s >= 1")
    return np.array(sizes, dtype=np.int64)


def expected_metric_curve(
    rankings: Mapping[str, Sequence[int]],
    n: int,
    sample_sizes,
    metric: str,
    k: int = 10,
    replace: bool = True,
) -> dict[str, np.ndarray]:
    """Expected sampled metric of each algorithm for each sample size (the curves of Figure 2).

    Parameters
    ----------
    rankings : mapping {name: sequence of int}
        True ranks of each algorithm, one per instance.
    n, metric, k, replace
        As in :func:`expected_sampled_metric`.
    sample_sizes : int or sequence of int
        Sample sizes ``s`` (each ``>= 1``; ``<= n - 1`` without replacement), in the given order.

    Returns
    -------
    dict {name: numpy.ndarray of shape (len(sample_sizes),)}
        ``E[mean sampled metric]`` of each algorithm at each ``s``. Cost is ``O(instances * sum(s))``
        for metrics without a closed-form mean (NDCG, AP without replacement, AP@k, NDCG@k).
    """
    metric = _check_metric(metric)
    n = _check_n(n)
    k = _check_int(k, "k (cut-off)", 1)
    algos = _check_rankings(rankings, n)
    sizes = _check_sizes(sample_sizes, n, replace)
    names = list(algos)
    all_ranks = np.concatenate([algos[a] for a in names])
    owner = np.repeat(np.arange(len(names)), [algos[a].size for a in names])
    counts = np.bincount(owner, minlength=len(names))
    curves = np.empty((len(names), sizes.size))
    for j, s in enumerate(sizes.tolist()):
        mean, _ = _expected(metric, all_ranks, n, s, k, bool(replace), False)
        curves[:, j] = np.bincount(owner, weights=mean, minlength=len(names)) / counts
    return {name: curves[i] for i, name in enumerate(names)}


def algorithm_order(values: Mapping[str, float], rtol: float = 1e-9) -> str:
    """Ordering of algorithms by a metric, best first, as text such as ``"C > A = B"``.

    Values within relative tolerance ``rtol`` of the previous (better) one are joined by ``=``;
    tied names are listed alphabetically so the text is canonical.
    """
    items = sorted(values.items(), key=lambda kv: (-float(kv[1]), str(kv[0])))
    groups: list[list[str]] = []
    last = None
    for name, value in items:
        value = float(value)
        if last is not None and math.isclose(value, last, rel_tol=rtol, abs_tol=1e-15):
            groups[-1].append(str(name))
        else:
            groups.append([str(name)])
            last = value
    return " > ".join(" = ".join(sorted(g)) for g in groups)


def order_changes(
    rankings: Mapping[str, Sequence[int]],
    n: int,
    sample_sizes,
    metric: str,
    k: int = 10,
    replace: bool = True,
    rtol: float = 1e-9,
) -> list[dict]:
    """Sample sizes at which the ordering of the algorithms by expected sampled metric changes.

    The sample sizes are sorted and de-duplicated; for each one the algorithms are ordered by their
    expected sampled metric (:func:`algorithm_order`). The first size is always reported (its
    ``previous`` is None), then every size whose ordering differs from the size before it on the
    grid. A change between two grid points is reported at the later one, so use a fine grid to
    locate a flip precisely.

    Returns
    -------
    list of dict
        Entries ``{"samples": s, "previous": str or None, "order": str}`` in increasing ``s``;
        e.g. ``{"samples": 61, "previous": "A > C > B", "order": "A > B > C"}``.
    """
    sizes = np.unique(_check_sizes(sample_sizes, _check_n(n), replace))
    curves = expected_metric_curve(rankings, n, sizes, metric, k=k, replace=replace)
    changes: list[dict] = []
    previous = None
    for j, s in enumerate(sizes.tolist()):
        order = algorithm_order({a: c[j] for a, c in curves.items()}, rtol=rtol)
        if order != previous:
            changes.append({"samples": int(s), "previous": previous, "order": order})
            previous = order
    return changes


# ----------------------------------------------------------------------------------------------
# table for the dashboard and the command line
# ----------------------------------------------------------------------------------------------


def metric_label(metric: str, k: int = 10) -> str:
    """Display name of a metric key, e.g. ``metric_label("recall", 10) == "Recall@10"``."""
    return METRIC_LABELS[_check_metric(metric)].format(k=k)


def sampled_metrics_table(
    rankings: Mapping[str, Sequence[int]],
    n: int,
    s: int,
    k: int = 10,
    replace: bool = True,
    metrics: Iterable[str] = TABLE_METRICS,
    wide: bool = False,
):
    """Exact and expected sampled metrics of several algorithms, as a pandas DataFrame.

    Parameters
    ----------
    rankings : mapping {name: sequence of int}
        True ranks of each algorithm, one per instance, each in ``1..n``.
    n, s, k, replace
        As in :func:`expected_sampled_metric`.
    metrics : iterable of str, default ("auc", "ap", "ndcg", "recall")
        Metric keys from :data:`METRICS`, in display order.
    wide : bool, default False
        Long (tidy) or wide layout, see Returns.

    Returns
    -------
    pandas.DataFrame
        Long layout (default): one row per (algorithm, metric), algorithms in the mapping's order,
        columns ``algorithm`` (str), ``metric`` (key), ``label`` (display name such as
        "Recall@10"), ``instances`` (int), ``exact`` (:func:`algorithm_exact_metric`),
        ``sampled_mean`` and ``sampled_sd`` (:func:`algorithm_sampled_metric`).
        Wide layout: one row per algorithm, columns ``algorithm``, ``instances`` and, for each
        metric key ``m``, ``{m}_exact``, ``{m}_sampled_mean``, ``{m}_sampled_sd``
        (e.g. ``recall_sampled_sd``; the cut-off is not part of the name).
    """
    import pandas as pd

    n = _check_n(n)
    s = _check_s(s, n, replace)
    k = _check_int(k, "k (cut-off)", 1)
    keys = [_check_metric(m) for m in metrics]
    if not keys:
        raise ValueError(f"metrics must name at least one of {', '.join(METRICS)}")
    algos = _check_rankings(rankings, n)
    rows = []
    for name, arr in algos.items():
        for key in keys:
            mean, sd = algorithm_sampled_metric(arr, n, s, key, k=k, replace=replace)
            rows.append(
                {
                    "algorithm": name,
                    "metric": key,
                    "label": metric_label(key, k),
                    "instances": int(arr.size),
                    "exact": algorithm_exact_metric(arr, n, key, k=k),
                    "sampled_mean": mean,
                    "sampled_sd": sd,
                }
            )
    long = pd.DataFrame(
        rows, columns=["algorithm", "metric", "label", "instances", "exact", "sampled_mean", "sampled_sd"]
    )
    if not wide:
        return long
    out = long[["algorithm", "instances"]].drop_duplicates("algorithm").reset_index(drop=True)
    for key in keys:
        part = long[long["metric"] == key].reset_index(drop=True)
        for col in ("exact", "sampled_mean", "sampled_sd"):
            out[f"{key}_{col}"] = part[col].to_numpy()
    return out
