"""What a copairs user reads in a scoring result: significance, normalized mAP, the active share.

Applied to the result tables of :func:`apnull.score.score_profiles`:

- ``significant``: q_value <= alpha (Benjamini-Hochberg q across perturbations; copairs's
  ``below_corrected_p`` uses a strict ``<``, which differs only for a q exactly equal to alpha);
- ``mAP_normalized`` = (mAP - E) / (1 - E), with E the exact null mean of the perturbation's mAP:
  the mean over its queries of E[AP](m, n) (:func:`apnull.expected_ap`; m, n the query's positives
  and negatives). 0 is chance level, 1 a perfect retrieval, negative below chance;
- ``ap_normalized`` (query table) = (AP - E) / (1 - E), E = E[AP](m, n) of that query: copairs's
  ``normalized_average_precision`` but not clipped to [-1, 1] (copairs clips; the lowest AP of a
  query with few negatives, e.g. m = 2, n = 1, lies below -1 on this scale);
- :func:`activity_summary`: k perturbations significant out of n scored;
- :func:`to_copairs_names`: the same tables under copairs's column names.
"""

from __future__ import annotations

import math

import numpy as np
import pandas as pd

from ...exact import expected_ap
from ..table.names import count_text

__all__ = ["expected_ap_of", "normalized_ap", "add_activity_columns", "activity_summary", "activity_line", "to_copairs_names",
           "consistency_line", "retrieved_line",
           "COPAIRS_GROUP_NAMES", "COPAIRS_QUERY_NAMES"]

#: apnull group columns -> copairs ``mean_average_precision`` columns.
COPAIRS_GROUP_NAMES = {"mAP": "mean_average_precision", "q_value": "corrected_p_value",
                       "significant": "below_corrected_p", "stage1_q_value": "stage1_corrected_p_value"}
#: apnull query columns -> copairs ``average_precision`` columns (n is replaced by n_total_pairs = m + n).
COPAIRS_QUERY_NAMES = {"ap": "average_precision", "ap_normalized": "normalized_average_precision",
                       "m": "n_pos_pairs", "q_value": "corrected_p_value"}


def expected_ap_of(m, n) -> np.ndarray:
    """The exact E[AP](m, n) of each entry (:func:`apnull.expected_ap`), computed once per distinct (m, n)."""
    m = np.asarray(m).astype(np.int64)
    n = np.asarray(n).astype(np.int64)
    key = m * (int(n.max()) + 1) + n if n.size else n  # one integer per (m, n) (sizes are >= 0)
    _, first, which = np.unique(key, return_index=True, return_inverse=True)
    return np.array([expected_ap(int(m[i]), int(n[i])) for i in first], dtype=float)[which.reshape(-1)]


def normalized_ap(ap, m, n) -> np.ndarray:
    """(AP - E) / (1 - E) of each query, E = E[AP](m, n) (:func:`expected_ap_of`); NaN where E = 1 (n = 0)."""
    E = expected_ap_of(m, n)
    with np.errstate(divide="ignore", invalid="ignore"):
        return np.where(E < 1.0, (np.asarray(ap, dtype=float) - E) / (1.0 - E), np.nan)


def null_mean_map(queries: pd.DataFrame, pcol: str) -> pd.Series:
    """E of each perturbation: the mean over its queries of the exact E[AP](m, n), indexed by ``pcol``."""
    e = expected_ap_of(queries["m"].to_numpy(), queries["n"].to_numpy())
    return pd.Series(e, index=queries.index).groupby(queries[pcol].to_numpy(), sort=False).mean()


def add_activity_columns(groups: pd.DataFrame, queries: pd.DataFrame, pcol: str, alpha: float) -> pd.DataFrame:
    """``groups`` with ``mAP_normalized`` after mAP and ``significant`` after q_value (see the module)."""
    e = null_mean_map(queries, pcol)
    E = groups[pcol].map(e).to_numpy(dtype=float)
    with np.errstate(divide="ignore", invalid="ignore"):
        norm = np.where(E < 1.0, (groups["mAP"].to_numpy(dtype=float) - E) / (1.0 - E), np.nan)
    out = groups.copy()
    out.insert(list(out.columns).index("mAP") + 1, "mAP_normalized", norm)
    out.insert(list(out.columns).index("q_value") + 1, "significant", out["q_value"].to_numpy() <= alpha)
    return out


def activity_summary(groups: pd.DataFrame, alpha: float) -> dict:
    """{"active": k, "scored": n, "fraction": k / n, "alpha": alpha}: k significant perturbations of n."""
    n = int(len(groups))
    k = int(groups["significant"].sum()) if "significant" in groups else 0
    return {"active": k, "scored": n, "fraction": (k / n) if n else math.nan, "alpha": float(alpha)}


def activity_line(summary: dict) -> str:
    """``"active: k of n (fraction) at q <= alpha"``, the fraction with three decimals."""
    frac = summary["fraction"]
    shown = "nan" if frac != frac else f"{frac:.3f}"
    return f"active: {summary['active']} of {summary['scored']} ({shown}) at q <= {summary['alpha']:g}"


def _draws(labels: pd.DataFrame, permutations) -> str:
    """The permutations behind a consistency run's p-values: B, or the range an adaptive run used."""
    if permutations != "auto":
        return str(permutations)
    used = labels["permutations"]
    return f"adaptive, {int(used.min()):,} to {int(used.max()):,}" if len(used) else "adaptive"


def consistency_line(labels: pd.DataFrame, settings: dict) -> str:
    """``"consistent: k of n labels (share; q <= alpha, Benjamini-Hochberg; p-value: B permutations of the
    label sets)"``: the summary of :func:`apnull.score.score_consistency`'s labels table."""
    k, n = int(labels["significant"].sum()), len(labels)
    share = f"{k / n:.0%}" if n else "nan"
    return (f"consistent: {k} of {count_text(n, 'labels')} ({share}; q <= {settings['alpha']:g}, Benjamini-Hochberg; "
            f"p-value: {_draws(labels, settings['permutations'])} permutations of the label sets)")


def retrieved_line(summary: dict) -> str:
    """The retrieved counts of :func:`apnull.score.score_compare` and their paired test, as one line."""
    p = summary["retrieved_p_value"]
    why = summary.get("retrieved_note") or summary.get("note") or "too few units"
    test = f"no paired test: {why}" if p != p else f"paired test of the difference: p = {p:.3g}"
    return (f"retrieved at q <= {summary['alpha']:g}: A {summary['retrieved_a']:,}, B {summary['retrieved_b']:,} "
            f"of {summary['n_perturbations']:,} (both {summary['both']:,}, A only {summary['a_only']:,}, B only "
            f"{summary['b_only']:,}); {test}")


def to_copairs_names(groups: pd.DataFrame | None, queries: pd.DataFrame | None, alpha: float):
    """Copies of the result tables under copairs's column names.

    Groups: mAP -> mean_average_precision, q_value -> corrected_p_value, significant ->
    below_corrected_p, stage1_q_value -> stage1_corrected_p_value (:func:`apnull.score.hierarchical_bh`'s
    columns), and ``below_p`` (p_value <= alpha) added before ``significant``. Queries: ap ->
    average_precision, ap_normalized -> normalized_average_precision, m -> n_pos_pairs, n ->
    n_total_pairs (= m + n, copairs's count), q_value -> corrected_p_value. Other columns keep their
    names. Either table may be None.
    """
    g = q = None
    if groups is not None:
        g = groups.copy()
        if "significant" in g and "p_value" in g:
            g.insert(list(g.columns).index("significant"), "below_p", g["p_value"].to_numpy() <= alpha)
        g = g.rename(columns=COPAIRS_GROUP_NAMES)
    if queries is not None:
        q = queries.copy()
        if "m" in q and "n" in q:
            q["n"] = q["m"] + q["n"]
            q = q.rename(columns={"n": "n_total_pairs"})
        q = q.rename(columns=COPAIRS_QUERY_NAMES)
    return g, q
