"""The "Hypergeometric check" page's data: shuffled rankings against the hypergeometric law.

The shuffled rankings are the package's one sampler (:func:`apnull.sample_null` with ``top=k``): the
same seed gives the same rankings here as on the null pages, a prefix of a longer run for fewer
draws, and changing k only recounts the hits of the same rankings.
"""

from __future__ import annotations

import math
from typing import Iterator, NamedTuple

import numpy as np
import pandas as pd

from ..exact import expected_ap
from ..hypergeom import check_top, hypergeom_ppf, pmf_fit
from ..limits import MAX_VIEW_DRAWS, MIN_VIEW_DRAWS, as_probability, check_draws, check_sampling_work, check_seed
from ..sampling import block_layout, draw_block
from ..significance import null_distribution

__all__ = ["ShuffledSample", "check_request", "block_layout", "shuffled_block", "iter_shuffled",
           "shuffled_precision_at_k", "chance_label", "thresholds_table", "summary_table", "fit_table"]


class ShuffledSample(NamedTuple):
    """Precision@K and AP of the same shuffled rankings (``precision, ap = sample`` unpacks)."""

    precision: np.ndarray
    ap: np.ndarray


def check_request(m, n, k, draws) -> tuple[int, int, int, int]:
    """Validate (m, n, k, draws): sizes and k as :func:`apnull.hypergeom.check_top`, the view's draws
    (100 to 1,000,000) and the sampling work check; each message says what to change."""
    m, n, k = check_top(m, n, k)
    draws = check_draws(draws, MIN_VIEW_DRAWS, MAX_VIEW_DRAWS)
    check_sampling_work([(m, n)], draws)
    return m, n, k, draws


def shuffled_block(m, n, k, seed, block: int, rows: int) -> ShuffledSample:
    """Precision@K = #{positive ranks <= k} / k and AP of block ``block`` (unchecked)."""
    ap, _, hits = draw_block(int(m), int(n), int(seed), int(block), int(rows), top=int(k))
    return ShuffledSample(hits / int(k), ap)


def iter_shuffled(m, n, k, draws, seed) -> Iterator[ShuffledSample]:
    """Yield the blocks of :func:`shuffled_precision_at_k` one at a time (for progress bars)."""
    m, n, k, draws = check_request(m, n, k, draws)
    seed = check_seed(seed)
    for b, rows in block_layout(m, draws):
        yield shuffled_block(m, n, k, seed, b, rows)


def shuffled_precision_at_k(m, n, k, draws=10_000, seed=None) -> ShuffledSample:
    """Precision@K and AP of ``draws`` uniformly random rankings of m positives and n negatives
    (limits as :func:`check_request`; None draws a fresh seed)."""
    parts = list(iter_shuffled(m, n, k, draws, seed))
    return ShuffledSample(np.concatenate([p.precision for p in parts]), np.concatenate([p.ap for p in parts]))


def thresholds_table(m, n, k, precision, q=0.95) -> pd.DataFrame:
    """The chance thresholds of Precision@K: columns ``name``, ``value`` with the rows

    - ``"m / (m + n)"``: the mean of the hypergeometric Precision@K (for every k);
    - ``"empirical mean"``: the mean of the shuffled Precision@K draws ``precision``;
    - ``"95% chance threshold"`` (for q = 0.95; ``f"{100 q:g}% chance threshold"`` otherwise):
      ``qhyper(q, m, n, k) / k``, the smallest x with P(Precision@K <= x) >= q, so a random ranking
      goes above it at most a share 1 - q of the time (R's label for it is "hyper 95pct").
    """
    m, n, k = check_top(m, n, k)
    precision = np.asarray(precision, dtype=float)
    if precision.size == 0:
        raise ValueError("precision must hold at least one draw")
    label = chance_label(q)
    return pd.DataFrame({
        "name": ["m / (m + n)", "empirical mean", label],
        "value": [m / (m + n), float(precision.mean()), hypergeom_ppf(m, n, k, q)],
    })


def chance_label(q=0.95) -> str:
    """The name of the q-quantile row of :func:`thresholds_table`: ``"95% chance threshold"`` for q = 0.95."""
    return f"{100 * q:g}% chance threshold"


def summary_table(m, n, k, sample: ShuffledSample, hyper=None, q=0.95, seed=0) -> pd.DataFrame:
    """Empirical mean and type-7 q-quantile of each sample beside the exact mean and quantile.

    Rows: ``"AP (shuffled)"``, ``"Precision@K (shuffled)"`` and, if ``hyper`` draws are given,
    ``"Precision@K (hypergeometric draws)"``. Columns: ``statistic``, ``empirical mean``, ``exact
    mean``, ``empirical 95pct`` (numpy's default interpolation, R's type 7), ``exact
    95pct``, ``mean deviation (SE)`` ((empirical - exact) / SE), ``SE of mean`` (sample SD /
    sqrt(draws)), ``draws`` and ``exact method``.

    The exact AP mean is :func:`apnull.expected_ap`; the exact AP quantile comes from
    ``null_distribution(m, n, "ap", "auto", seed=seed)`` (exact enumeration, the grid law within
    0.001, or Monte Carlo with ``seed`` for large sizes; the method is reported). For Precision@K
    the exact mean is m / (m + n) and the quantile ``qhyper(q, m, n, k) / k``. A type-7 quantile of
    a discrete sample interpolates between support points, so it can sit between two values the
    exact quantile can take.
    """
    m, n, k = check_top(m, n, k)
    q = as_probability(q, "q")
    law = null_distribution(m, n, "ap", "auto", seed=seed)
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


def fit_table(m, n, k, samples: dict) -> pd.DataFrame:
    """:func:`pmf_fit` for several named samples: one row per name (sample, draws, chi2, df, p_value, tv)."""
    rows = []
    for name, x in samples.items():
        f = pmf_fit(x, m, n, k)
        rows.append({"sample": name, "draws": f["draws"], "chi-square": f["chi2"], "df": f["df"],
                     "p-value": f["p_value"], "total variation": f["tv"]})
    return pd.DataFrame(rows)
