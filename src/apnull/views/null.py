"""Summaries of null laws over the sizes (M*i, N*i), i = 1..K: density curves and quantile tables.

These are what the "Null densities" and "Quantiles vs size" pages show; they live here so they can
be tested without a server.
"""

from __future__ import annotations

from dataclasses import dataclass
from types import MappingProxyType

import numpy as np
import pandas as pd

from ..density import STATS, sample_summaries, smooth_pmf
from ..exact import expected_ap
from ..hypergeom import hypergeom_pmf
from ..limits import check_sampling_work, check_view
from ..sampling import grid_sizes
from ..significance import choose_method, null_distribution

__all__ = ["QUANTILES", "check_grid_request", "density_curves", "exact_density_curves", "summarise_draws",
           "SizeSummary", "summarise_size", "summarise_sizes", "exact_size_summary", "exact_summary", "wide_summary",
           "exact_mean_curve", "discrete_pr_laws", "DENSITY_GRID", "METRICS", "DEFAULT_VIEW", "format_p", "p_phrase"]

#: The statistics of the summary tables: quantiles of type 7 and the mean.
QUANTILES = {"q75": 0.75, "q90": 0.90, "q95": 0.95}
#: Common x grid of every density curve (AP and Precision@R live in [0, 1]).
DENSITY_GRID = np.linspace(0.0, 1.0, 401)
DENSITY_GRID.setflags(write=False)
METRICS = ("ap", "pr")
#: The view both pages open with: the reference experiment (M = 4, N = 30, 50 sizes, 10,000 draws, seed 2022).
DEFAULT_VIEW = {"M": 4, "N": 30, "K": 50, "draws": 10_000, "seed": 2022}


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
    return [dict(s.curves[metric]) for s in summarise_sizes(samples, grid)]


@dataclass(frozen=True)
class SizeSummary:
    """What the "Null densities" and "Quantiles vs size" pages show of one size's draws, in a few KB.

    ``curves[metric]`` is that metric's :func:`density_curves` entry and ``rows`` its
    :func:`summarise_draws` rows (m, n, metric, statistic, value). ``pr_share[j]`` is the share of the
    draws whose Precision@R is j / m (j = 0..m): Precision@R takes only those m + 1 values, so its
    sample is kept as the discrete law it is. Read-only throughout (it is shared by every session):
    frozen fields, read-only mappings and arrays.
    """

    m: int
    n: int
    draws: int
    curves: dict
    rows: tuple
    pr_share: np.ndarray | None = None


def summarise_sizes(samples, grid=DENSITY_GRID) -> list[SizeSummary]:
    """:class:`SizeSummary` of each size's draws, (m, n, ap, pr) tuples, in one compiled call (see
    :func:`apnull.density.sample_summaries`: KDE curves with bw.nrd0, type-7 quantiles, means)."""
    samples = list(samples)
    curves, stats = sample_summaries([x for _, _, ap, pr in samples for x in (ap, pr)], grid)
    curves.setflags(write=False)
    at = {name: STATS.index(name) for name in ("q75", "q90", "q95", "mean", "bw")}
    out = []
    for i, (m, n, ap, pr) in enumerate(samples):
        by_metric, rows = {}, []
        for j, metric in enumerate(METRICS):
            row = stats[2 * i + j]
            by_metric[metric] = MappingProxyType({"m": m, "n": n, "x": grid, "y": curves[2 * i + j],
                                                  "bw": float(row[at["bw"]])})
            rows += [(m, n, metric, name, float(row[at[name]])) for name in QUANTILES]
            rows.append((m, n, metric, "avg", float(row[at["mean"]])))
        hits = np.rint(np.asarray(pr, dtype=float) * m).astype(np.int64)
        share = np.bincount(hits, minlength=m + 1)[:m + 1] / max(hits.size, 1)
        share.setflags(write=False)
        out.append(SizeSummary(m=m, n=n, draws=int(np.size(ap)), curves=MappingProxyType(by_metric),
                               rows=tuple(rows), pr_share=share))
    return out


def summarise_size(m: int, n: int, ap, pr) -> SizeSummary:
    """:class:`SizeSummary` of one size's draws (``ap`` and ``pr`` arrays of equal length)."""
    return summarise_sizes([(m, n, ap, pr)])[0]


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
    """Long table (m, n, metric, statistic, value) of q75, q90, q95 (type 7) and the mean per size.

    ``samples`` holds (m, n, ap_draws, pr_draws) tuples or :class:`SizeSummary` objects.
    """
    samples = list(samples)
    raw = [s for s in samples if not isinstance(s, SizeSummary)]
    done = iter(summarise_sizes(raw)) if raw else iter(())
    rows = [row for s in samples for row in (s if isinstance(s, SizeSummary) else next(done)).rows]
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
    """The wide table: one row per (m, n, metric) with columns q75, q90, q95, avg."""
    wide = long.pivot_table(index=["m", "n", "metric"], columns="statistic", values="value").reset_index()
    wide.columns.name = None
    cols = ["m", "n", "metric"] + [c for c in ("q75", "q90", "q95", "avg") if c in wide.columns]
    return wide[cols].sort_values(["metric", "m"]).reset_index(drop=True)


def exact_mean_curve(M, N, K) -> pd.DataFrame:
    """Exact E[AP] at every size (columns m, n, value)."""
    sizes = grid_sizes(M, N, K)
    return pd.DataFrame([(m, n, expected_ap(m, n)) for m, n in sizes], columns=["m", "n", "value"])


def discrete_pr_laws(parts) -> list[dict]:
    """The sampled and the exact law of Precision@R of each size, on its support j / m (j = 0..m).

    ``parts`` are :class:`SizeSummary` objects. Returns dicts with ``m``, ``n``, ``x`` (j / m),
    ``share`` (the share of draws with j hits in the top m) and ``exact`` (the hypergeometric
    probability C(m, j) C(n, m - j) / C(m + n, m) of j hits, :func:`apnull.hypergeom.hypergeom_pmf`
    with k = m; zero where j hits are impossible, j < m - n). A kernel density of this discrete law
    would draw bumps between the values it can take; these are drawn as steps and dots instead.
    """
    out = []
    for p in parts:
        m, n = p.m, p.n
        hits, probs = hypergeom_pmf(m, n, m)
        exact = np.zeros(m + 1)
        exact[hits] = probs
        out.append({"m": m, "n": n, "x": np.arange(m + 1) / m, "share": p.pr_share, "exact": exact})
    return out


def format_p(tail) -> str:
    """A p-value for a card: three decimals down to 0.01 (0.060), then three significant digits
    (0.00297, 1.62e-40), and below the smallest normal float its power of ten (10^-725.93). A Monte
    Carlo p-value no draw reached (``tail.source == "mc bound"``: the floor 1 / (1 + draws)) is a
    bound, shown as one: "≤ 1e-05", as the ranking editor writes "p ≤ 1e-05"."""
    if tail.source == "mc bound":
        return f"≤ {tail.p:.2g}"
    if tail.p >= 0.01:
        return f"{tail.p:.3f}"
    if tail.p >= 1e-300 or tail.p == 0:
        return f"{tail.p:.3g}"
    return f"10^{tail.log10_p:.2f}"


def p_phrase(tail) -> str:
    """"p = 0.031", or "p ≤ 1e-05" for a bound (:func:`format_p`)."""
    shown = format_p(tail)
    return f"p {shown}" if shown.startswith("≤") else f"p = {shown}"
