"""False discovery rates: Benjamini-Hochberg q-values, and a two-stage procedure for families of tests.

- :func:`benjamini_hochberg`: BH q-values of one list of p-values (:mod:`apnull.fdr`, the one home of
  BH, re-exported here);
- :func:`hierarchical_bh`: hypotheses grouped in families (a compound's doses): which families hold a
  discovery (Simes p-value per family, BH across families), then which members (BH inside each selected
  family at the level Benjamini & Bogomolov (2014) adjust for the selection).
"""

from __future__ import annotations

import numpy as np
import pandas as pd

from ..fdr import Exact, benjamini_hochberg, scaled_min
from ..limits import check_alpha, check_column
from .table.names import output_name

__all__ = ["benjamini_hochberg", "hierarchical_bh", "HIERARCHICAL_COLUMNS"]

#: The columns :func:`hierarchical_bh` adds, in order.
HIERARCHICAL_COLUMNS = ("stage1_p_value", "stage1_q_value", "stage1_significant", "stage2_q_value", "q_value",
                        "significant")


def hierarchical_bh(table, by, *, p="p_value", alpha=0.05) -> pd.DataFrame:
    """Two-stage false discovery rate for hypotheses in families: which families, then which members.

    A dose-response screen tests every (compound, dose); the compound is the family (``by``). Stage 1
    asks, per family, "is any member non-null?"; stage 2 tests the members of the families stage 1
    selected. The procedure is Benjamini & Bogomolov's (2014, "Selective inference on multiple families
    of hypotheses", JRSS-B 76:297-318) with Simes's family p-value and BH at both stages.

    Formulas (rows with a NaN p-value take no part; F = families with at least one p-value):

    - Family p-value (Simes 1986), over the family's k p-values sorted p_(1) <= ... <= p_(k):
      ``stage1_p_value = min_j k * p_(j) / j``. It is the smallest BH q-value inside the family.
    - Stage 1: ``stage1_q_value`` = BH q-values (:func:`benjamini_hochberg`) of the F family
      p-values; ``stage1_significant`` = stage1_q_value <= alpha. R = number of families selected.
    - Stage 2: ``stage2_q_value`` = BH q-value of the row inside its family (T = k). A row of a selected
      family is a discovery when ``stage2_q_value <= alpha * R / F`` (BH at the level alpha R / F).
    - ``q_value``: the smallest level a at which the whole procedure, run at a, makes the row a
      discovery. Rejections only grow with a (R does), so ``q_value <= alpha`` is exactly the decision
      at alpha, at every alpha: with Q_(1) <= ... <= Q_(F) the stage-1 q-values, Q_f the row's family's
      and w its stage2_q_value, ``q_value = max(Q_f, min_{r=1..F} max(Q_(r), w * F / r))``.
      ``significant`` = q_value <= alpha.

    Every ratio is computed in exact fractions for p-values on a grid (permutation p-values, k / (B + 1)),
    as :func:`apnull.fdr.benjamini_hochberg` computes them: each value is the float of the exact one, so a
    family whose Simes p-value or q-value equals alpha is selected, and ``q_value <= alpha`` is the
    procedure run at alpha, ties included.

    A family selected at stage 1 always holds a discovery at stage 2 (its smallest stage2_q_value is its
    Simes p-value, at most alpha R / F), and a family not selected holds none: the two stages never
    disagree. With one row per family, q_value equals the BH q-value of all rows; with one family, its
    BH q-values.

    Error rates controlled when the families are independent of one another; inside a family the
    p-values may be independent or positively dependent (PRDS), which is what Simes's p-value (Simes
    1986; Sarkar 1998) and BH inside the family (Benjamini & Yekutieli 2001) need:

    - Stage 1 controls the FDR over families at alpha * F0 / F (F0 families without any non-null
      member): among the selected families, the expected share with no active member.
    - The two stages together control the expected average FDR over the selected families at alpha:
      E[(sum over selected families of the family's false discovery proportion) / max(R, 1)] <= alpha
      (Benjamini & Bogomolov 2014, Theorem 1 with the BH selection rule, which keeps R unchanged
      while a selected family stays selected).
    - When no member of any family is active, the chance of one discovery or more is at most alpha.
    - Not controlled in general: the FDR over all (family, member) discoveries pooled; BH across all
      rows controls that one (but not the FDR over families). benchmarks/hierarchical.py measures each
      rate on simulated dose-response screens and on true-null screens of real profiles.

    Discrete p-values (permutation p-values) are valid p-values, and the guarantees hold for them
    too, conservatively.

    Parameters
    ----------
    table : DataFrame
        One row per hypothesis, e.g. the ``groups`` table of :func:`apnull.score.score_profiles` scored
        with ``perturbation=[compound, dose]``.
    by : str or list of str
        The column(s) naming each row's family (e.g. the compound column). Values are compared as
        text, as the scoring compares labels (``1`` and ``"1"`` name one family); a row without a
        value there is an error.
    p : str
        The column of p-values (numbers in [0, 1]; NaN allowed: that row gets NaN q-values and is not
        significant).
    alpha : float
        FDR level, 0 < alpha < 1 (default 0.05).

    Returns
    -------
    DataFrame
        A copy of ``table`` with :data:`HIERARCHICAL_COLUMNS` appended (``stage1_*`` repeat the family's
        value on each of its rows; NaN for a family whose p-values are all NaN). An input column named
        like one of them is kept as ``<name>_input`` (e.g. the plain BH ``q_value`` of a score result).
        ``attrs["hierarchical_bh"]``: alpha, families (F), selected (R), stage2_level (alpha R / F, 0
        with no family selected), by, p.

    Raises
    ------
    TypeError
        ``table`` not a DataFrame; ``by`` not a column name or a list of them; the p-value column not
        numeric (text, booleans).
    ValueError
        A missing column (close names suggested), ``by`` empty, repeated or holding the p-value column, a
        row without a family, a p-value outside [0, 1], alpha not strictly between 0 and 1.

    Examples
    --------
    >>> import pandas as pd
    >>> t = pd.DataFrame({"compound": ["a"] * 3 + ["b"] * 3,
    ...                   "p_value": [0.001, 0.02, 0.6, 0.04, 0.3, 0.9]})
    >>> hierarchical_bh(t, "compound")[["compound", "stage1_p_value", "q_value", "significant"]]
      compound  stage1_p_value  q_value  significant
    0        a           0.003    0.006         True
    1        a           0.003    0.060        False
    2        a           0.003    0.600        False
    3        b           0.120    0.120        False
    4        b           0.120    0.450        False
    5        b           0.120    0.900        False
    """
    if not isinstance(table, pd.DataFrame):
        raise TypeError(f"table must be a pandas DataFrame, got {type(table).__name__}")
    cols = _family_columns(table, by)
    check_column(table, p, "p-value")
    if p in cols:
        raise ValueError(f"the p-value column {p!r} cannot also name the families (by)")
    alpha = check_alpha(alpha)
    pv = _pvalues(table[p], p)
    family = _family_codes(table, cols)
    stats = _two_stage(pv, family)
    stage1_q = stats["stage1_q"]
    selected = int(np.sum(stage1_q <= alpha))
    families = int(np.sum(~np.isnan(stage1_q)))
    q = stats["q"]
    added = pd.DataFrame({"stage1_p_value": stats["stage1_p"][family], "stage1_q_value": stage1_q[family],
                          "stage1_significant": stage1_q[family] <= alpha, "stage2_q_value": stats["stage2_q"],
                          "q_value": q, "significant": q <= alpha}, index=table.index)
    out = pd.concat([_free_names(table), added], axis=1)
    out.attrs["hierarchical_bh"] = {"alpha": alpha, "families": families, "selected": selected,
                                    "stage2_level": alpha * selected / families if families else 0.0,
                                    "by": list(cols), "p": p}
    return out


def _family_columns(table: pd.DataFrame, by) -> list:
    """``by`` as a list of column names of ``table``, checked."""
    if isinstance(by, str):
        cols = [by]
    elif isinstance(by, (list, tuple)) and all(isinstance(c, str) for c in by):
        cols = list(by)
    else:
        raise TypeError(f"by must be a column name or a list of column names, got {str(by)[:60]!r}")
    if not cols:
        raise ValueError("by must name at least one column (the family, e.g. the compound column)")
    if len(set(cols)) < len(cols):
        raise ValueError(f"by names a column twice: {cols}")
    for c in cols:
        check_column(table, c, "family (by)")
    return cols


def _pvalues(col: pd.Series, name: str) -> np.ndarray:
    """The p-value column as floats (NaN kept), else TypeError (not numbers) or ValueError (outside [0, 1])."""
    if pd.api.types.is_bool_dtype(col) or not pd.api.types.is_numeric_dtype(col):
        sample = col.dropna()
        seen = f" (e.g. {str(sample.iloc[0])[:30]!r})" if len(sample) else ""
        raise TypeError(f"p-value column {name!r} must hold numbers, found {col.dtype} values{seen}")
    pv = col.to_numpy(dtype=float, na_value=np.nan)
    bad = np.flatnonzero(~np.isnan(pv) & ~((pv >= 0) & (pv <= 1)))
    if bad.size:
        shown = ", ".join(str(int(i)) for i in bad[:5]) + (" ..." if bad.size > 5 else "")
        raise ValueError(f"p-value column {name!r} has {bad.size:,} value(s) outside [0, 1] (0-based rows {shown}), "
                         f"e.g. {pv[bad[0]]:g}")
    return pv


def _family_codes(table: pd.DataFrame, cols: list) -> np.ndarray:
    """One integer per row naming its family (0 .. families - 1, in order of first appearance), the values
    compared as text; ValueError for a row without a value in a family column."""
    code = np.zeros(len(table), dtype=np.int64)
    for c in cols:
        values = table[c].to_numpy(dtype=object)
        missing = np.flatnonzero(pd.isna(values))
        if missing.size:
            shown = ", ".join(str(int(i)) for i in missing[:5]) + (" ..." if missing.size > 5 else "")
            raise ValueError(f"family column {c!r} has no value in {missing.size:,} row(s) (0-based rows {shown}); "
                             f"give every row its family")
        codes, uniques = pd.factorize(values.astype(str))
        code, _ = pd.factorize(code * len(uniques) + codes)
    return code.astype(np.int64, copy=False)


def _free_names(out: pd.DataFrame) -> pd.DataFrame:
    """``out`` with input columns named like an output column renamed ``<name>_input``."""
    taken = set(HIERARCHICAL_COLUMNS) | {str(c) for c in out.columns}
    renames = {}
    for c in out.columns:
        if c in HIERARCHICAL_COLUMNS:
            renames[c] = output_name(c, taken)
            taken.add(renames[c])
    return out.rename(columns=renames) if renames else out


def _two_stage(pv: np.ndarray, family: np.ndarray) -> dict:
    """Simes p-value and stage-1 q-value per family code; stage-2 and final q-value per row (NaN where
    the p-value is NaN). Every ratio is :func:`apnull.fdr.benjamini_hochberg`'s, in exact fractions for
    p-values on a grid (:class:`apnull.fdr.Exact`), so each value is the float of the exact one and
    ``q_value <= alpha`` decides ties with alpha exactly (see :func:`hierarchical_bh`)."""
    n_fam = int(family.max()) + 1 if family.size else 0
    stage1_p = np.full(n_fam, np.nan)
    stage1_q = np.full(n_fam, np.nan)
    stage2_q = np.full(pv.shape, np.nan)
    q = np.full(pv.shape, np.nan)
    rows = np.flatnonzero(~np.isnan(pv))
    if not rows.size:
        return {"stage1_p": stage1_p, "stage1_q": stage1_q, "stage2_q": stage2_q, "q": q}
    fam, vals = family[rows], pv[rows]
    order = np.lexsort((vals, fam))  # by family, then p (stable among ties)
    fs, ps = fam[order], vals[order]
    starts = np.flatnonzero(np.r_[True, fs[1:] != fs[:-1]])
    sizes = np.diff(np.r_[starts, fs.size])
    rank = np.arange(fs.size) - np.repeat(starts, sizes) + 1
    # BH inside each family: min over later ranks of k p_(j) / j; Simes: its value at the first rank
    within = scaled_min(Exact.of(ps), np.repeat(sizes, sizes), rank, groups=fs)
    simes = within.take(starts)
    stage1_p[fs[starts]] = simes.value
    F = starts.size
    by_p = np.argsort(simes.value, kind="mergesort")
    Qs = np.minimum(scaled_min(simes.take(by_p), F, np.arange(1, F + 1)).value, 1.0)  # stage 1, sorted
    stage1_q[fs[starts][by_p]] = Qs
    w = within.take(np.argsort(order, kind="stable"))  # back to the rows' order
    stage2_q[rows] = w.value
    q[rows] = np.minimum(np.maximum(stage1_q[fam], _selective_level(w, Qs)), 1.0)
    return {"stage1_p": stage1_p, "stage1_q": stage1_q, "stage2_q": stage2_q, "q": q}


def _selective_level(w: Exact, Qs: np.ndarray) -> np.ndarray:
    """``min_{r=1..F} max(Qs[r-1], w * F / r)`` for each w, Qs the F stage-1 q-values sorted.

    Qs rises with r and w F / r falls, so the minimum sits where they cross: r* = the first r with
    Qs[r-1] >= w F / r (a binary search per w), and the minimum is min(Qs[r*-1], w F / (r*-1)). The
    ratios w F / r are exact fractions' floats where w is one; rounding is monotone, so the search and
    the minimum on these floats give the float of the exact minimum."""
    F = Qs.size
    lo = np.ones(w.value.size, dtype=np.int64)
    hi = np.full(w.value.size, F + 1, dtype=np.int64)
    while True:
        open_ = lo < hi
        if not open_.any():
            break
        mid = (lo + hi) // 2
        crossed = open_ & (Qs[np.minimum(mid, F) - 1] >= w.times(F, mid).value)
        hi = np.where(crossed, mid, hi)
        lo = np.where(open_ & ~crossed, mid + 1, lo)
    at = np.where(lo <= F, Qs[np.minimum(lo, F) - 1], np.inf)
    before = np.where(lo >= 2, w.times(F, np.maximum(lo - 1, 1)).value, np.inf)
    return np.minimum(at, before)
