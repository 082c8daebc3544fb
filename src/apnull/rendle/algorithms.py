"""Algorithms evaluated on many instances: exact and expected sampled metrics, curves over the
sample size, order changes, a Monte Carlo cross-check and the table of the dashboard and the CLI."""

from __future__ import annotations

import math
from typing import Iterable, Mapping, Sequence

import numpy as np

from ..limits import as_int
from .paper import METRIC_LABELS, METRICS, TABLE_METRICS
from .ranks import (check_instances, check_n, check_rank_metric, check_s, check_sampling_settings, expected_moments,
                    metric_of_ranks, row_blocks)


def algorithm_exact_metric(ranks, n: int, metric: str, k: int = 10) -> float:
    """Exact (unsampled) metric of an algorithm: the mean of :func:`metric_at_rank` over instances.

    Parameters
    ----------
    ranks : array_like of int
        True rank of the relevant item in each evaluation instance (at least one), each in ``1..n``.
    n, metric, k
        As in :func:`metric_at_rank`.
    """
    metric = check_rank_metric(metric)
    n = check_n(n)
    k = as_int(k, "k (cut-off)", 1)
    arr = check_instances(ranks, n)
    return float(np.mean(metric_of_ranks(metric, arr, n, k)))


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
    metric, n, s, k = check_sampling_settings(metric, n, s, k, replace)
    arr = check_instances(ranks, n)
    mean, var = expected_moments(metric, arr, n, s, k, bool(replace), True)
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
    metric, n, s, k = check_sampling_settings(metric, n, s, k, replace)
    repetitions = as_int(repetitions, "repetitions", 1)
    arr = check_instances(ranks, n)
    if not replace and n > 10**9:
        # numpy's hypergeometric sampler needs a population below 1e9; at that size sampling
        # with and without replacement cannot be told apart anyway.
        raise ValueError(f"simulation without replacement needs n <= 1e9, got n = {n}; use replace=True")
    rng = seed if isinstance(seed, np.random.Generator) else np.random.default_rng(seed)
    out = np.empty(repetitions)
    for block in row_blocks(repetitions, arr.size):
        size = (block.stop - block.start, arr.size)
        if replace:
            x = rng.binomial(s, (arr - 1.0) / (n - 1.0), size=size)
        else:
            x = rng.hypergeometric(arr - 1, n - arr, s, size=size)
        out[block] = metric_of_ranks(metric, 1 + x, s + 1, k).mean(axis=1)
    return out


# ----------------------------------------------------------------------------------------------
# ordering of algorithms as the sample size grows (paper Figure 2)
# ----------------------------------------------------------------------------------------------

#: The algorithms compared: each one's name and its true ranks, one per instance (each in ``1..n``).
Rankings = Mapping[str, Sequence[int]]


def _check_rankings(rankings: Rankings, n: int) -> dict[str, np.ndarray]:
    if not isinstance(rankings, Mapping) or len(rankings) == 0:
        raise ValueError("rankings must be a non-empty mapping {algorithm name: list of true ranks}")
    return {str(name): check_instances(r, n) for name, r in rankings.items()}


def _check_sizes(sample_sizes, n: int, replace: bool) -> np.ndarray:
    sizes = [check_s(s, n, replace) for s in np.atleast_1d(np.asarray(sample_sizes)).tolist()]
    if not sizes:
        raise ValueError("sample_sizes must hold at least one sample size s >= 1")
    return np.array(sizes, dtype=np.int64)


def expected_metric_curve(rankings: Rankings, n: int, sample_sizes, metric: str, k: int = 10,
                          replace: bool = True) -> dict[str, np.ndarray]:
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
    metric = check_rank_metric(metric)
    n = check_n(n)
    k = as_int(k, "k (cut-off)", 1)
    algos = _check_rankings(rankings, n)
    sizes = _check_sizes(sample_sizes, n, replace)
    names = list(algos)
    all_ranks = np.concatenate([algos[a] for a in names])
    owner = np.repeat(np.arange(len(names)), [algos[a].size for a in names])
    counts = np.bincount(owner, minlength=len(names))
    curves = np.empty((len(names), sizes.size))
    for j, s in enumerate(sizes.tolist()):
        mean, _ = expected_moments(metric, all_ranks, n, s, k, bool(replace), False)
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


def order_changes(rankings: Rankings, n: int, sample_sizes, metric: str, k: int = 10, replace: bool = True,
                  rtol: float = 1e-9) -> list[dict]:
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
    sizes = np.unique(_check_sizes(sample_sizes, check_n(n), replace))
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
    return METRIC_LABELS[check_rank_metric(metric)].format(k=k)


def sampled_metrics_table(rankings: Rankings, n: int, s: int, k: int = 10, replace: bool = True,
                          metrics: Iterable[str] = TABLE_METRICS, wide: bool = False):
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

    n = check_n(n)
    s = check_s(s, n, replace)
    k = as_int(k, "k (cut-off)", 1)
    keys = [check_rank_metric(m) for m in metrics]
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
