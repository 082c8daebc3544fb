"""Summaries of null laws over the sizes (M*i, N*i), i = 1..K: density curves and quantile tables.

These are what the "Null densities" and "Quantiles vs size" pages show; they live here so they can
be tested without a server.
"""

from __future__ import annotations

import numpy as np
import pandas as pd

from ..density import bw_nrd0, smooth_pmf
from ..exact import expected_ap
from ..limits import check_sampling_work, check_view
from ..sampling import grid_sizes
from ..significance import choose_method, null_distribution

__all__ = ["QUANTILES", "check_grid_request", "density_curves", "exact_density_curves", "summarise_draws",
           "exact_size_summary", "exact_summary", "wide_summary", "exact_mean_curve", "DENSITY_GRID"]

#: The statistics of seed 000: quantiles of type 7 and the mean.
QUANTILES = {"q75": 0.75, "q90": 0.90, "q95": 0.95}
#: Common x grid of every density curve (AP and Precision@R live in [0, 1]).
DENSITY_GRID = np.linspace(0.0, 1.0, 401)


def check_grid_request(M, N, K, draws) -> list[tuple[int, int]]:
    """Validate a dashboard request for K sizes (M*i, N*i) x draws; returns the sizes.

    The view limits of :func:`apnull.limits.check_view` (1 <= K <= 200, 100 <= draws <= 10^6,
    K * draws <= 2,000,000) and the sampling work check of
    :func:`apnull.limits.check_sampling_work`; each message says what to change.
    """
    K, draws = check_view(K, draws)
    sizes = grid_sizes(M, N, K)
    check_sampling_work(sizes, draws)
    return sizes


def density_curves(samples, metric: str, grid=DENSITY_GRID) -> list[dict]:
    """KDE curve (Gaussian, bw.nrd0) of each size's draws.

    ``samples`` is a sequence of (m, n, ap_draws, pr_draws). Returns dicts with m, n, x, y, bw.
    """
    out = []
    for m, n, ap, pr in samples:
        x = ap if metric == "ap" else pr
        bw = bw_nrd0(x)
        y = smooth_pmf(x, np.full(x.size, 1.0 / x.size), bw, grid)
        out.append({"m": m, "n": n, "x": grid, "y": y, "bw": bw})
    return out


def exact_density_curves(curves: list[dict], metric: str, max_method: str = "grid", tol: float = 1e-3) -> list[dict]:
    """The exact law of each size smoothed with the same bandwidth as its sample's curve.

    Only sizes whose law is cheap are included: Precision@R always (hypergeometric); AP where
    "auto" resolves to "exact" or (if ``max_method == "grid"``) "grid".
    """
    allowed = ("exact",) if max_method == "exact" else ("exact", "grid")
    out = []
    for c in curves:
        method = choose_method(c["m"], c["n"], metric, "auto", tol)
        if method not in allowed:
            continue
        law = null_distribution(c["m"], c["n"], metric, method, tol=tol)
        y = smooth_pmf(law.values, law.probs, c["bw"], c["x"])
        out.append({"m": c["m"], "n": c["n"], "x": c["x"], "y": y, "method": law.method})
    return out


def summarise_draws(samples) -> pd.DataFrame:
    """Long table (m, n, metric, statistic, value) of q75, q90, q95 (type 7) and the mean per size."""
    rows = []
    for m, n, ap, pr in samples:
        for metric, x in (("ap", ap), ("pr", pr)):
            qs = np.quantile(x, list(QUANTILES.values()))
            for name, v in zip(QUANTILES, qs):
                rows.append((m, n, metric, name, float(v)))
            rows.append((m, n, metric, "avg", float(np.mean(x))))
    return pd.DataFrame(rows, columns=["m", "n", "metric", "statistic", "value"])


def exact_size_summary(m, n, tol: float = 1e-3) -> pd.DataFrame:
    """Long-table rows (m, n, metric, statistic, value, method) of one size from its null laws.

    Precision@R from its hypergeometric law; AP from the exact or grid law ("auto"; quantiles within
    ``tol``), or no AP rows when "auto" would fall back to Monte Carlo. Quantiles are the law's
    (smallest x with F(x) >= q); the means are exact (E[AP] in closed form, m/(m+n) for Precision@R).
    """
    rows = []
    for metric in ("ap", "pr"):
        method = choose_method(m, n, metric, "auto", tol)
        if method == "mc":
            continue
        law = null_distribution(m, n, metric, method, tol=tol)
        for name, q in QUANTILES.items():
            rows.append((m, n, metric, name, float(law.quantile(q)), law.method))
        mean = expected_ap(m, n) if metric == "ap" else m / (m + n)
        rows.append((m, n, metric, "avg", mean, law.method))
    return pd.DataFrame(rows, columns=["m", "n", "metric", "statistic", "value", "method"])


def exact_summary(M, N, K, tol: float = 1e-3) -> pd.DataFrame:
    """:func:`exact_size_summary` for every size (M*i, N*i), i = 1..K, in one long table.

    Sizes whose AP law would need Monte Carlo have Precision@R rows only.
    """
    parts = [exact_size_summary(m, n, tol) for m, n in grid_sizes(M, N, K)]
    return pd.concat(parts, ignore_index=True)


def wide_summary(long: pd.DataFrame) -> pd.DataFrame:
    """Seed 000's wide table: one row per (m, n, metric) with columns q75, q90, q95, avg."""
    wide = long.pivot_table(index=["m", "n", "metric"], columns="statistic", values="value").reset_index()
    wide.columns.name = None
    cols = ["m", "n", "metric"] + [c for c in ("q75", "q90", "q95", "avg") if c in wide.columns]
    return wide[cols].sort_values(["metric", "m"]).reset_index(drop=True)


def exact_mean_curve(M, N, K) -> pd.DataFrame:
    """Exact E[AP] at every size (columns m, n, value)."""
    sizes = grid_sizes(M, N, K)
    return pd.DataFrame([(m, n, expected_ap(m, n)) for m, n in sizes], columns=["m", "n", "value"])
