"""The data behind the "Sampled metrics" page (Rendle 2020): input checks (limits in apnull.limits), grids,
exact order changes, the simulation table and the comparison with the paper's printed tables.

Thin layers over :mod:`apnull.rendle`; no streamlit, no plotting (figures: :mod:`apnull.plots.sampled`).
"""

from __future__ import annotations

import math
import re
from typing import Mapping, Sequence

import numpy as np
import pandas as pd

from .. import rendle as sm
from ..limits import SAMPLED_MAX_INSTANCES as MAX_INSTANCES
from ..limits import SAMPLED_MAX_ITEMS as MAX_N
from ..limits import SAMPLED_MAX_REPETITIONS as MAX_REPETITIONS
from ..limits import SAMPLED_MAX_SAMPLES as MAX_S
from ..limits import SAMPLED_MAX_SIMULATED as MAX_SIMULATED
from ..limits import SAMPLED_MAX_TABLE_CELLS as MAX_TABLE_CELLS
from ..limits import as_int

#: Metrics drawn in the page's figures, in legend order.
PAGE_METRICS = ("auc", "ap", "ndcg", "recall", "precision")
#: The page's tabs, in order; the label of the one shown is the value of its URL parameter sm_tab.
TABS = ("Metric versus true rank", "Algorithms A, B and C", "Order versus the number of samples",
        "The paper's tables")

# ----------------------------------------------------------------------------------------------
# page inputs and limits
# ----------------------------------------------------------------------------------------------

#: Work (cells) budgets of Figure 3 (ranks x sum of s) and Figure 2 (instances x sum of s).
FIG3_CELLS = 3_000_000
FIG2_CELLS = 4_000_000
#: Largest s of Figure 2's grid (also limited by n - 1 and FIG2_CELLS).
FIG2_MAX_S = 5000

_SPLIT = re.compile(r"[,;\s]+")


def parse_ranks(text, name: str = "ranks") -> list[int]:
    """True ranks typed as text (``"100, 100, 8437"``; commas, semicolons or spaces) -> list of int.

    Raises ValueError naming the algorithm when the text is empty, an entry is not a whole number,
    a rank is below 1, or there are more than :data:`MAX_INSTANCES` entries. (Ranks above n are
    caught by :func:`check_request`, which knows n.)
    """
    raw = "" if text is None else str(text).strip()
    if not raw:
        raise ValueError(f"{name}: give at least one true rank, e.g. 100, 100, 100")
    ranks = []
    for entry in (e for e in _SPLIT.split(raw) if e):
        try:
            value = int(entry)
        except ValueError:
            shown = entry if len(entry) <= 40 else f"{entry[:40]}..."
            raise ValueError(f"{name}: {shown!r} is not a whole number; type the true ranks as "
                             "comma-separated positive integers, e.g. 40, 40, 8437") from None
        if value < 1:
            raise ValueError(f"{name}: ranks start at 1 (the top of the list), got {value}")
        ranks.append(value)
    if len(ranks) > MAX_INSTANCES:
        raise ValueError(f"{name}: at most {MAX_INSTANCES:,} instances per algorithm, got {len(ranks):,}")
    return ranks


def check_settings(n, s, k, replace: bool) -> tuple[int, int, int]:
    """Validate n, s and k for the page: 2 <= n <= 10^7, 1 <= s <= 10^5 (and s <= n - 1 without
    replacement), k >= 1. Returns them as ints; a ValueError says what to change."""
    n = as_int(n, "n (number of items)", 2, MAX_N)
    s = as_int(s, "s (sampled irrelevant items)", 1, MAX_S)
    if not replace and s > n - 1:
        raise ValueError(f"s = {s:,} is too large without replacement: only n - 1 = {n - 1:,} irrelevant "
                         "items exist; lower s or sample with replacement")
    k = as_int(k, "k (cut-off of Recall@k and Precision@k)", 1, n)
    return n, s, k


def check_rankings(texts: Mapping[str, str], n: int, s: int) -> dict[str, list[int]]:
    """Parse each algorithm's ranks and check them against n and the table budget."""
    rankings = {name: parse_ranks(text, f"ranks of {name}") for name, text in texts.items()}
    for name, ranks in rankings.items():
        worst = max(ranks)
        if worst > n:
            raise ValueError(f"ranks of {name}: rank {worst:,} is larger than n = {n:,}; raise n or fix the rank")
    total = sum(len(r) for r in rankings.values())
    if total * (s + 1) > MAX_TABLE_CELLS:
        raise ValueError(f"{total:,} instances x (s + 1) = {total * (s + 1):,} exceeds {MAX_TABLE_CELLS:,}; "
                         f"lower s to at most {MAX_TABLE_CELLS // total - 1:,} or use fewer instances")
    return rankings


def check_repetitions(repetitions, rankings: Mapping[str, Sequence[int]]) -> int:
    """Simulation repetitions: 1..10^5 and repetitions x total instances <= 10^7."""
    reps = as_int(repetitions, "repetitions", 1, MAX_REPETITIONS)
    total = sum(len(r) for r in rankings.values())
    if reps * total > MAX_SIMULATED:
        raise ValueError(f"repetitions x instances = {reps * total:,} exceeds {MAX_SIMULATED:,}; "
                         f"use at most {MAX_SIMULATED // total:,} repetitions")
    return reps


# ----------------------------------------------------------------------------------------------
# data behind the figures
# ----------------------------------------------------------------------------------------------


def rank_grid(n: int, points: int = 1200, extra: Sequence[int] = ()) -> np.ndarray:
    """Integer ranks covering 1..n: every rank up to 200, then evenly and log spaced ones, plus
    ``extra`` (e.g. k and k + 1, so a step at k is drawn where it is). At most about
    ``200 + 2 * points`` values."""
    n = int(n)
    parts = [np.arange(1, min(n, 200) + 1), np.linspace(1, n, points), np.geomspace(1, n, points),
             np.asarray([e for e in extra if 1 <= e <= n])]
    return np.unique(np.concatenate(parts).round().astype(np.int64))


def figure1_curves(n: int, k: int, top: int = 100, metrics: Sequence[str] = PAGE_METRICS):
    """(full, top) curves {label: (ranks, values)} of :func:`metric_vs_rank_figure`."""
    full_r = rank_grid(n, extra=(k, k + 1))
    top_r = np.arange(1, min(n, top) + 1)
    full, topc = {}, {}
    for key in metrics:
        label = sm.metric_label(key, k)
        full[label] = (full_r, sm.metric_at_rank(key, full_r, n, k))
        topc[label] = (top_r, sm.metric_at_rank(key, top_r, n, k))
    return full, topc


def figure3_sizes(s: int, n: int, replace: bool, base: Sequence[int] = (10, 100, 1000)) -> list[int]:
    """Sample sizes of Figure 3: the chosen s and those of 10, 100, 1000 that are not within a factor
    1.5 of it (their curves would lie on top of each other), within the limits."""
    cap = MAX_S if replace else n - 1
    keep = [int(v) for v in base if not (s / 1.5 < v < s * 1.5)]
    return sorted({v for v in (*keep, int(s)) if 1 <= v <= cap})


def figure3_ranks(n: int, sizes: Sequence[int], k: int, whole: bool = False, top: int = 1000) -> np.ndarray:
    """True ranks of Figure 3: 1..min(n, top) (the paper's zoom), or the whole range; thinned so that
    ranks x sum(s + 1) stays within :data:`FIG3_CELLS`, keeping k and k + 1."""
    hi = n if whole else min(n, top)
    budget = max(60, FIG3_CELLS // max(1, sum(v + 1 for v in sizes)))
    if hi <= budget and not whole:
        return np.arange(1, hi + 1)
    pts = max(30, budget // 2)
    grid = np.concatenate([np.arange(1, min(hi, 30) + 1), np.linspace(1, hi, pts), np.geomspace(1, hi, pts),
                           [v for v in (k, k + 1) if v <= hi]])
    return np.unique(grid.round().astype(np.int64))


def cutoff_of(metric: str, k: int) -> int | None:
    """The cut-off k as far as ``metric`` depends on it: k for the @k metrics (Recall@k, Precision@k,
    AP@k, NDCG@k), None for AUC, AP and NDCG, which ignore it. A cache keyed by this shares one entry
    for every k of the latter."""
    return k if sm.metric_label(metric, 1) != sm.metric_label(metric, 2) else None


def figure3_cutoff(metric: str, k: int, n: int, sizes: Sequence[int], whole: bool = False,
                   top: int = 1000) -> int | None:
    """The cut-off k as far as Figure 3 depends on it: :func:`cutoff_of`, or k when the figure's ranks
    hold k and k + 1 (:func:`figure3_ranks` thins them, or the whole range is drawn); else None."""
    hi = n if whole else min(n, top)
    thinned = whole or hi > max(60, FIG3_CELLS // max(1, sum(v + 1 for v in sizes)))
    return k if thinned else cutoff_of(metric, k)


def figure2_sizes(n: int, replace: bool, instances: int, metric: str, points: int = 50,
                  s_max: int = FIG2_MAX_S) -> np.ndarray:
    """Log-spaced sample sizes 1..min(n - 1, s_max) for Figure 2.

    For metrics whose expectation sums over the law of the sampled rank (NDCG, AP without
    replacement, AP@k, NDCG@k) the top is lowered until instances x sum(s) <= :data:`FIG2_CELLS`.
    """
    top = max(1, min(n - 1, s_max))
    costly = metric in ("ndcg", "ap@k", "ndcg@k") or (metric == "ap" and not replace)
    while True:
        grid = np.unique(np.geomspace(1, top, points).round().astype(np.int64))
        if not costly or instances * int(grid.sum()) <= FIG2_CELLS or top <= 10:
            return grid
        top = max(10, int(top * 0.7))


def _order_at(rankings, n, s, metric, k, replace) -> str:
    curves = sm.expected_metric_curve(rankings, n, [int(s)], metric, k=k, replace=replace)
    return sm.algorithm_order({a: c[0] for a, c in curves.items()})


def exact_order_changes(rankings: Mapping[str, Sequence[int]], n: int, sizes, metric: str, k: int = 10,
                        replace: bool = True, curves: Mapping[str, Sequence[float]] | None = None) -> list[dict]:
    """Order changes on the grid ``sizes`` (as :func:`apnull.rendle.order_changes`), each moved to
    the exact sample size at which it happens.

    A change is first seen at the first grid point whose order differs from the point before.
    Between those two points the smallest s whose order differs is found by bisection (then the
    search goes on from there until the later grid point's order is reached), so every returned
    ``samples`` value is an s whose order differs from that at s - 1. Orders that appear and vanish
    again between two grid points can be missed: refine the grid for those.

    ``curves`` (the output of :func:`apnull.rendle.expected_metric_curve` on ``sizes``, sorted and
    without duplicates) saves recomputing the grid; only the bisection steps are then computed.

    Returns entries ``{"samples", "previous", "order", "grid_samples"}`` (``grid_samples``: the
    grid point that revealed the change); the first entry is the order at the smallest s.
    """
    sizes = np.unique(np.asarray(sizes, dtype=np.int64))
    if curves is None:
        coarse = sm.order_changes(rankings, n, sizes, metric, k=k, replace=replace)
    else:
        coarse, previous = [], None
        for j, size in enumerate(sizes.tolist()):
            order = sm.algorithm_order({a: c[j] for a, c in curves.items()})
            if order != previous:
                coarse.append({"samples": int(size), "previous": previous, "order": order})
                previous = order
    if not coarse:
        return []
    out = [dict(coarse[0], grid_samples=coarse[0]["samples"])]
    for change in coarse[1:]:
        hi_grid = change["samples"]
        lo = int(sizes[np.searchsorted(sizes, hi_grid) - 1])
        lo_order = change["previous"]
        target = change["order"]
        while True:
            hi = hi_grid
            while hi - lo > 1:  # invariant: order(lo) == lo_order, order(hi) != lo_order
                mid = (lo + hi) // 2
                if _order_at(rankings, n, mid, metric, k, replace) == lo_order:
                    lo = mid
                else:
                    hi = mid
            order = target if hi == hi_grid else _order_at(rankings, n, hi, metric, k, replace)
            out.append({"samples": int(hi), "previous": lo_order, "order": order, "grid_samples": int(hi_grid)})
            if order == target:
                break
            lo, lo_order = hi, order
    return out


def flip_sizes(sizes, changes: Sequence[dict]) -> np.ndarray:
    """Sample sizes at which the order changes (and the size just before each), not already in ``sizes``."""
    flips = [c["samples"] for c in changes[1:]]
    return np.setdiff1d(np.array(flips + [f - 1 for f in flips if f > 1], dtype=np.int64), sizes)


def merge_curves(sizes, curves: Mapping[str, np.ndarray], extra, extra_curves: Mapping[str, np.ndarray] | None):
    """The grid ``sizes`` joined with ``extra`` and sorted, each algorithm's values moved alike."""
    grid = np.concatenate([np.asarray(sizes), np.asarray(extra, dtype=np.int64)])
    if extra_curves is not None and len(extra):
        curves = {name: np.concatenate([curves[name], extra_curves[name]]) for name in curves}
    order = np.argsort(grid)
    return grid[order], {name: np.asarray(values)[order] for name, values in curves.items()}


def changes_table(changes: Sequence[dict], label: str) -> pd.DataFrame:
    """Order changes as a table: s, order before, order from s on."""
    rows = [{"s": c["samples"], "order below s": c["previous"] or "—", f"order by sampled {label} from s on": c["order"]}
            for c in changes]
    return pd.DataFrame(rows, columns=["s", "order below s", f"order by sampled {label} from s on"])


# ----------------------------------------------------------------------------------------------
# tables
# ----------------------------------------------------------------------------------------------


def _pm(mean: float, sd: float, digits: int = 4) -> str:
    return f"{mean:.{digits}f} ± {sd:.{digits}f}"


def exact_table(long: pd.DataFrame, rankings: Mapping[str, Sequence[int]]) -> pd.DataFrame:
    """Wide exact table (paper Section 3.2): algorithm, true ranks, one column per metric label."""
    out = pd.DataFrame({"algorithm": list(rankings), "true ranks": [", ".join(map(str, r)) for r in rankings.values()]})
    for label in dict.fromkeys(long["label"]):
        part = long[long["label"] == label].set_index("algorithm")["exact"]
        out[label] = [float(part[a]) for a in rankings]
    return out


def _wide_pm(long: pd.DataFrame, mean: str, sd: str, digits: int) -> pd.DataFrame:
    """One row per algorithm, one 'mean ± SD' column per metric label."""
    names = list(dict.fromkeys(long["algorithm"]))
    out = pd.DataFrame({"algorithm": names})
    for label in dict.fromkeys(long["label"]):
        part = long[long["label"] == label].set_index("algorithm")
        out[label] = [_pm(part.loc[a, mean], part.loc[a, sd], digits) for a in names]
    return out


def sampled_table(long: pd.DataFrame, digits: int = 4) -> pd.DataFrame:
    """Wide 'mean ± SD' table of the expected sampled metrics (paper Section 4.3 layout)."""
    return _wide_pm(long, "sampled_mean", "sampled_sd", digits)


def simulation_table(rankings: Mapping[str, Sequence[int]], n: int, s: int, repetitions: int, seed: int,
                     k: int = 10, replace: bool = True, metrics: Sequence[str] = sm.TABLE_METRICS,
                     expected: pd.DataFrame | None = None) -> pd.DataFrame:
    """Simulated sampled evaluations (:func:`apnull.rendle.simulate_sampled_metric`), long table.

    Algorithm i uses the seed ``[seed, i]`` for every metric, so all metrics of one algorithm come
    from the same simulated sampled ranks (as in the paper). Columns: algorithm, metric, label,
    repetitions, sim_mean, sim_sd and, when ``expected`` (the long
    :func:`apnull.rendle.sampled_metrics_table`) is given, sampled_mean, sampled_sd and
    ``deviation_se`` = (sim_mean - sampled_mean) / (sampled_sd / sqrt(repetitions)) (NaN when the
    SD is below 1e-9: nothing random to compare).
    """
    rows = []
    for i, (name, ranks) in enumerate(rankings.items()):
        for key in metrics:
            runs = sm.simulate_sampled_metric(ranks, n, s, key, repetitions, seed=[int(seed), i], k=k, replace=replace)
            rows.append({"algorithm": name, "metric": key, "label": sm.metric_label(key, k),
                         "repetitions": int(repetitions), "sim_mean": float(runs.mean()),
                         "sim_sd": float(runs.std(ddof=1)) if runs.size > 1 else 0.0})
    out = pd.DataFrame(rows)
    if expected is not None:
        ex = expected.set_index(["algorithm", "metric"])
        out["sampled_mean"] = [ex.loc[(a, m), "sampled_mean"] for a, m in zip(out["algorithm"], out["metric"])]
        out["sampled_sd"] = [ex.loc[(a, m), "sampled_sd"] for a, m in zip(out["algorithm"], out["metric"])]
        se = out["sampled_sd"] / math.sqrt(repetitions)
        out["deviation_se"] = np.where(out["sampled_sd"] > 1e-9, (out["sim_mean"] - out["sampled_mean"]) / se.where(se > 0, 1.0), np.nan)
    return out


def simulation_wide(sim: pd.DataFrame, digits: int = 4) -> pd.DataFrame:
    """Wide 'mean ± SD' table of :func:`simulation_table`."""
    return _wide_pm(sim, "sim_mean", "sim_sd", digits)


def paper_comparison() -> pd.DataFrame:
    """The paper's printed tables beside our exact numbers, for the paper's setting.

    Setting: :data:`apnull.rendle.PAPER_EXAMPLE`, n = 10,000, s = 99 with replacement, k = 10.
    The printed sampled table is a simulation of 1,000 repetitions; its means have standard error
    SD / sqrt(1000). Columns: algorithm, metric, label, paper_exact, exact (ours),
    exact_digits_agree (ours rounded to 3 decimals equals the print), paper_mean, paper_sd,
    sampled_mean, sampled_sd (ours, exact expectation and SD), se (our SD / sqrt(1000)) and
    deviation_se = (sampled_mean - paper_mean) / se (NaN when our SD is below 1e-3: the printed
    "± 0.000" then means the value hardly varies and only rounding separates the numbers).
    """
    long = sm.sampled_metrics_table(sm.PAPER_EXAMPLE, sm.PAPER_N, sm.PAPER_SAMPLES, k=10, replace=True)
    rows = []
    for r in long.itertuples(index=False):
        p_mean, p_sd = sm.PAPER_SAMPLED_TABLE[r.algorithm][r.metric]
        p_exact = sm.PAPER_EXACT_TABLE[r.algorithm][r.metric]
        se = r.sampled_sd / math.sqrt(sm.PAPER_REPETITIONS)
        rows.append({
            "algorithm": r.algorithm, "metric": r.metric, "label": r.label,
            "paper_exact": p_exact, "exact": r.exact, "exact_digits_agree": bool(round(r.exact, 3) == p_exact),
            "paper_mean": p_mean, "paper_sd": p_sd, "sampled_mean": r.sampled_mean, "sampled_sd": r.sampled_sd,
            "se": se, "deviation_se": (r.sampled_mean - p_mean) / se if r.sampled_sd >= 1e-3 else float("nan"),
        })
    return pd.DataFrame(rows)


def paper_comparison_display(cmp: pd.DataFrame) -> pd.DataFrame:
    """:func:`paper_comparison` with printed 'mean ± SD' text, for display."""
    return pd.DataFrame({
        "algorithm": cmp["algorithm"], "metric": cmp["label"],
        "exact: paper / ours": [f"{a:.3f} / {b:.4f}" for a, b in zip(cmp["paper_exact"], cmp["exact"])],
        "paper sampled (1,000 runs)": [_pm(a, b, 3) for a, b in zip(cmp["paper_mean"], cmp["paper_sd"])],
        "our expected sampled": [_pm(a, b, 4) for a, b in zip(cmp["sampled_mean"], cmp["sampled_sd"])],
        "ours − paper (SE)": cmp["deviation_se"],
        "SE of the paper's mean": cmp["se"],
    })
