"""Checking a profile table and turning it into the arrays the kernels need (one ``Screen``)."""

from __future__ import annotations

from dataclasses import dataclass, field

import numpy as np
import pandas as pd

from ...limits import SCORE_MAX_STRATUM_CONTROLS as MAX_STRATUM_CONTROLS
from ...limits import check_column, check_stratum
from .columns import select_features
from .labels import control_values, label_rows, match_controls, text_codes
from .matrix import duplicate_rows, euclidean_exponent, feature_matrix, scale_in_place
from .perts import Pert, PertTable, group_rows, sorted_order
from ..engine.memory import release_arrow
from .scale import degenerate_rows
from ..results.outputs import TEXT
from .missing import apply_nan_mode, check_nan_mode, rows_text
from .positives import check_differ_by, differ_codes, drop_without_positives

__all__ = ["Screen", "Pert", "prepare_screen", "SIMILARITIES", "MAX_STRATUM_CONTROLS", "ONE_STRATUM"]

SIMILARITIES = ("cosine", "correlation", "euclidean", "abs_cosine")
#: The kernels' similarity kind of each name (see ``_kernels.sim``): abs_cosine ranks by |cosine|.
KINDS = {"cosine": 0, "correlation": 0, "euclidean": 1, "abs_cosine": 2}
#: The stratum key of every row when no stratum column is given (the whole screen is one stratum).
ONE_STRATUM = ""


@dataclass
class Screen:
    """A checked profile table as the engine reads it (``prepare_screen``); fields as commented."""

    X: np.ndarray                 # prepared feature rows (float64, C-contiguous)
    rows: np.ndarray              # original 0-based row position of each X row
    kind: int                     # 0 dot product, 1 minus squared Euclidean distance, 2 absolute dot product
    controls: dict                # stratum key -> X row indices of its controls (canonical order)
    perts: PertTable              # the scored perturbations (``perts[i]`` is a Pert)
    skipped: list = field(default_factory=list)   # (name, reason)
    warnings: list = field(default_factory=list)
    features: list = field(default_factory=list)
    left_out: list = field(default_factory=list)  # (column, reason) of every column not a feature
    dropped_features: list = field(default_factory=list)  # feature columns left out (nan="drop-features")
    dropped_rows: list = field(default_factory=list)      # input rows left out (nan="drop-rows")
    codes: np.ndarray | None = None  # (rows of X, C) positives_differ_by codes, or None
    columns: list = field(default_factory=list)  # the feature columns as the table names them
    exponent: int = 0             # Euclidean: every row of X was divided by 2 ** exponent


def canonical_order(X: np.ndarray, idx: np.ndarray) -> np.ndarray:
    """``idx`` sorted by the feature rows (lexicographic), so results ignore the input row order."""
    if idx.size <= 1:
        return idx
    return idx[sorted_order(X, np.zeros(idx.size, dtype=np.int64), idx)]  # = np.lexsort(X[idx].T[::-1])


def check_table(table, similarity, features=None) -> None:
    """The first checks of every scorer of a profile table: TypeError unless ``table`` is a DataFrame
    and ``features`` None, a text (a regex) or a list of column names; ValueError for a table without
    rows or a ``similarity`` not among :data:`SIMILARITIES`."""
    if not isinstance(table, pd.DataFrame):
        raise TypeError(f"table must be a pandas DataFrame (use read_table to load a CSV or Parquet file), "
                        f"got {type(table).__name__}")
    if features is not None and not isinstance(features, (str, list, tuple, pd.Index, np.ndarray)):
        raise TypeError(f"features must be None, a regex (text) or a list of column names, got "
                        f"{type(features).__name__} {repr(features)[:40]}")
    if table.shape[0] == 0:
        raise ValueError("the table has no rows")
    if similarity not in SIMILARITIES:
        raise ValueError(f"similarity must be one of {', '.join(SIMILARITIES)}, got {similarity!r}")


def prepare_screen(table, perturbation, control, stratum, features, similarity, nan="error",
                   positives_differ_by=None) -> Screen:
    """Validate the table and build the :class:`Screen` (see ``score_profiles`` for the rules)."""
    check_table(table, similarity, features)
    check_nan_mode(nan)
    pcol = check_column(table, perturbation, "perturbation")
    scol = None if stratum is None else check_column(table, stratum, "stratum")
    check_stratum(scol, pcol)
    differ = check_differ_by(table, positives_differ_by, {pcol, scol})
    controls = control_values(control, required=True)
    read = label_rows(table, pcol, scol)
    keep, lcode, ltext = read.keep, read.code, read.text
    is_ctl, unmatched = match_controls(read, controls, pcol)
    warnings = read.warnings + unmatched
    feats, left_out = select_features(table, features, {pcol, *differ} | ({scol} if scol else set()))
    used = np.flatnonzero(keep)
    values = feature_matrix(table, feats, used)
    dropped = apply_nan_mode(values, used, feats, nan)
    values, used, feats = dropped.values, dropped.used, dropped.features
    warnings.extend(dropped.warnings)
    left_out = left_out + [(str(c), "missing values (nan='drop-features')") for c in dropped.dropped_features]
    codes = differ_codes(table, differ, used)
    kind = KINDS[similarity]
    if kind != 1:
        zero = degenerate_rows(values, similarity)
        if zero.any():
            why = "the same value in every feature" if similarity == "correlation" else "all-zero features"
            raise ValueError(f"rows {rows_text(used[zero])} have {why}, so {similarity} similarity is "
                             "undefined; drop them or use similarity='euclidean'")
    lcode = lcode[used]
    if scol is not None:
        scode, stext = text_codes(table[scol])
        release_arrow()
        scode = scode[used]
    else:
        scode, stext = np.zeros(used.size, dtype=np.int64), np.array([ONE_STRATUM], dtype=object)
    dup = duplicate_rows(lcode, scode, values)
    values = np.ascontiguousarray(values, dtype=np.float64)  # ours: no copy
    exponent = euclidean_exponent(values) if kind == 1 else 0
    X = scale_in_place(values, similarity, exponent)
    del values
    if dup.any():
        warnings.append(f"{int(dup.sum())} duplicate rows (same perturbation, stratum and features: rows "
                        f"{rows_text(used[dup])}) were kept; they tie with their copies, which the "
                        "tie-aware AP handles, but check the file was not concatenated twice.")
    ctl = is_ctl[used]
    lrank, srank = _ranks(ltext), _ranks(stext)
    strata = stext[np.argsort(srank)]  # the stratum keys, sorted
    srow = srank[scode]
    ctl_by = {}
    ctl_rows = np.flatnonzero(ctl)
    by_stratum = np.argsort(srow[ctl_rows], kind="stable")
    cuts = np.flatnonzero(np.diff(srow[ctl_rows][by_stratum])) + 1
    for part in np.split(ctl_rows[by_stratum], cuts) if ctl_rows.size else []:
        s = strata[srow[part[0]]]
        idx = canonical_order(X, part)
        if idx.size > MAX_STRATUM_CONTROLS:
            raise ValueError(f"stratum {s!r} has {idx.size:,} control rows; the limit is "
                             f"{MAX_STRATUM_CONTROLS:,} per stratum: use a stratum column (plate or batch)")
        ctl_by[s] = idx
    sorted_labels = ltext[np.argsort(lrank)]
    column = table[pcol]

    def names_of(first):  # each perturbation's first row's value, and the column's own array of them
        values = column.iloc[used[first]]
        return values.to_numpy(), (values.array if values.dtype == TEXT else None)

    perts = group_rows(X, lrank[lcode], srow, np.flatnonzero(~ctl), names_of, lambda ranks: sorted_labels[ranks],
                       strata)
    del lcode, scode, srow
    perts, skipped, empty_strata = _skips(perts, ctl_by)
    if codes is not None:
        kept, no_positives = drop_without_positives(list(perts), codes)
        skipped.extend(no_positives)
        if len(kept) < len(perts):
            perts = PertTable.from_perts(kept, perts.strata)
    if empty_strata:
        warnings.append(f"strata without control rows: {', '.join(repr(s) for s in sorted(empty_strata))}; "
                        "the perturbations with replicates there were skipped.")
    if not len(perts):
        reasons = "; ".join(sorted({r for _, r in skipped})) or "no perturbation rows"
        raise ValueError(f"nothing to score: no perturbation has 2 or more replicates with controls in "
                         f"their strata ({reasons})")
    return Screen(X=X, rows=used, kind=kind, controls=ctl_by, perts=perts, skipped=skipped,
                  warnings=warnings, features=[str(f) for f in feats], left_out=left_out,
                  dropped_features=dropped.dropped_features, dropped_rows=dropped.dropped_rows, codes=codes,
                  columns=list(feats), exponent=exponent)


def _ranks(texts: np.ndarray) -> np.ndarray:
    """Rank of each text among ``texts`` (distinct) in sorted order."""
    rank = np.empty(texts.size, dtype=np.int64)
    rank[np.argsort(texts, kind="stable")] = np.arange(texts.size)
    return rank


def _skips(perts: PertTable, ctl_by: dict) -> tuple:
    """(perturbations to score, [(name, reason)] of the others, strata without controls they need):
    one replicate only, or replicates in a stratum without controls."""
    has_ctl = np.array([s in ctl_by for s in perts.strata], dtype=bool)
    seg_ok = has_ctl[perts.seg_stratum]
    single = perts.k < 2
    skipped, empty, keep = [], set(), np.ones(len(perts), dtype=bool)
    bad_seg = np.flatnonzero(~seg_ok)
    owner = np.searchsorted(perts.soff, bad_seg, side="right") - 1
    first_bad = {}
    for j, i in zip(bad_seg.tolist(), owner.tolist()):
        first_bad.setdefault(i, []).append(perts.strata[perts.seg_stratum[j]])
    for i in sorted(set(np.flatnonzero(single).tolist()) | set(first_bad)):
        keep[i] = False
        if single[i]:
            skipped.append((perts.names[i], "only one replicate: no positives to rank"))
            continue
        empty.update(first_bad[i])
        skipped.append((perts.names[i], f"no control rows in stratum {first_bad[i][0]!r}"))
    return (perts if keep.all() else perts.take(np.flatnonzero(keep))), skipped, empty
