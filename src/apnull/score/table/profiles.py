"""Checking a profile table for consistency scoring and turning it into aggregated, labelled profiles."""

from __future__ import annotations

from dataclasses import dataclass, field

import numpy as np
import pandas as pd

from ...limits import check_column, check_regex
from ..kernels.labelsets import LabelLists
from .screen import KINDS, check_table

__all__ = ["Profiles", "prepare_profiles", "split_labels", "only_names", "AGGREGATES", "MAX_PROFILES"]

AGGREGATES = ("median", "mean", "none")
#: Most profiles (after aggregation) one consistency run takes: the sorted similarity rows hold
#: P^2 similarities, positions and ranks (24 bytes each), about 600 MB at 5,000.
MAX_PROFILES = 5_000


@dataclass
class Profiles:
    """Aggregated, labelled profiles in canonical order (``prepare_profiles``); fields as commented."""

    X: np.ndarray            # (P, d) prepared rows (normalised for cosine/correlation)
    kind: int                # 0 dot product, 1 minus squared Euclidean distance
    names: list              # perturbation name of each profile (original values)
    rows: np.ndarray         # input row of each profile (first replicate when aggregated)
    labels: list             # all labels, sorted as text
    lists: LabelLists        # groups (perturbations) of the profiles and the labels they carry
    skipped: list = field(default_factory=list)    # (label, reason)
    warnings: list = field(default_factory=list)
    features: list = field(default_factory=list)


def split_labels(cell, sep) -> tuple:
    """The labels of one annotation cell: split on ``sep`` (none: the whole text), stripped, empty
    pieces and repeats dropped, sorted. A missing value (NaN/None) carries no label; a whole float
    (a numeric column with gaps) is written without ".0"."""
    if cell is None or (isinstance(cell, float) and np.isnan(cell)) or cell is pd.NA:
        return ()
    if isinstance(cell, (float, np.floating)) and float(cell).is_integer():
        cell = int(cell)  # a numeric column with gaps reads as float: 3.0 is the label "3"
    text = str(cell)
    parts = text.split(sep) if sep else [text]
    return tuple(sorted({p.strip() for p in parts if p.strip()}))


def only_names(only, pcol, alpha=0.05) -> set:
    """Perturbation names (as text) to keep, from ``only``.

    ``only`` is a DataFrame with the perturbation column (e.g. ``score_profiles(...).groups`` or the
    file ``apnull score --out-groups`` wrote): the rows whose ``significant`` column is true, else
    whose ``q_value`` <= ``alpha``, else every row; or an iterable of perturbation names.
    """
    if isinstance(only, pd.DataFrame):
        if pcol not in only.columns:
            raise ValueError(f"the only= table has no perturbation column {pcol!r} (its columns: "
                             f"{', '.join(repr(str(c)) for c in list(only.columns)[:8])}); give the groups "
                             "table written by apnull score --out-groups for the same perturbation column")
        if "significant" in only.columns:
            keep = only["significant"].astype(str).str.lower().isin(["true", "1", "yes"])
        elif "q_value" in only.columns:
            keep = pd.to_numeric(only["q_value"], errors="coerce") <= alpha
        else:
            keep = pd.Series(True, index=only.index)
        return set(only.loc[keep, pcol].astype(str))
    if isinstance(only, str) or not hasattr(only, "__iter__"):
        raise ValueError("only must be a groups table (DataFrame) or a list of perturbation names")
    return {str(x) for x in only}


def _features(table, features, exclude) -> list:
    cols = [c for c in table.columns if c not in exclude]
    if features is None:
        chosen = [c for c in cols if not str(c).startswith("Metadata_")
                  and pd.api.types.is_numeric_dtype(table[c]) and not pd.api.types.is_bool_dtype(table[c])]
    elif isinstance(features, str):
        pattern = check_regex(features, "features regex")
        chosen = [c for c in cols if pattern.search(str(c))]
    else:
        chosen = [check_column(table, c, "feature") for c in list(features)]
    if not chosen:
        raise ValueError("no feature columns (numeric columns not starting with 'Metadata_', or those "
                         "features= names); pass features= a list or a regex")
    bad = [str(c) for c in chosen if not pd.api.types.is_numeric_dtype(table[c]) or pd.api.types.is_bool_dtype(table[c])]
    if bad:
        raise ValueError(f"feature column {bad[0]!r} is not numeric; leave it out with features=")
    return chosen


def _prepared_rows(values, similarity, names) -> tuple:
    kind = KINDS[similarity]
    X = values - values.mean(axis=1, keepdims=True) if similarity == "correlation" else values
    if kind != 1:
        norms = np.sqrt(np.sum(X * X, axis=1))
        zero = np.flatnonzero(norms == 0)
        if zero.size:
            raise ValueError(f"the profile of {str(names[zero[0]])!r} has {'all-zero features' if similarity != 'correlation' else 'the same value in every feature'}, so {similarity} "
                             "similarity is undefined; drop it or use similarity='euclidean'")
        X = X / norms[:, None]
    return np.ascontiguousarray(X, dtype=np.float64), kind


def prepare_profiles(table, perturbation, annotation, label_sep, aggregate, control, only, features,
                     similarity, alpha) -> Profiles:
    """Check the table and build the :class:`Profiles` (rules in ``score_consistency``)."""
    check_table(table, similarity)
    if aggregate not in AGGREGATES:
        raise ValueError(f"aggregate must be one of {', '.join(AGGREGATES)}, got {aggregate!r}")
    pcol = check_column(table, perturbation, "perturbation")
    acol = check_column(table, annotation, "annotation")
    if acol == pcol:
        raise ValueError("the annotation column must differ from the perturbation column")
    if label_sep is not None and (not isinstance(label_sep, str) or not label_sep):
        raise ValueError(f"label_sep must be a non-empty text such as '|', got {label_sep!r}")
    controls = [] if control is None else [control] if isinstance(control, str) else [str(c) for c in control]
    feats = _features(table, features, {pcol, acol})
    warnings = []
    names = table[pcol]
    text = names.astype(str).to_numpy()
    keep = names.notna().to_numpy() & ~np.isin(text, controls)
    if only is not None:
        wanted = only_names(only, pcol, alpha)
        keep &= np.isin(text, list(wanted))
        if not keep.any():
            raise ValueError(f"no perturbation of the table is among the {len(wanted)} kept by only= "
                             "(check it was written for this table and perturbation column)")
    cells = table[acol].to_numpy()
    if label_sep is not None:
        used = [c for c in cells[keep] if isinstance(c, str)]
        if used and not any(label_sep in c for c in used):
            raise ValueError(f"the separator {label_sep!r} splits no annotation cell of column {acol!r} "
                             f"(e.g. {used[0]!r}); give the separator the cells use, or none")
    sets = [split_labels(c, label_sep) for c in cells]
    unlabelled = keep & np.array([len(s) == 0 for s in sets])
    if unlabelled.any():
        warnings.append(f"{int(unlabelled.sum())} rows without an annotation were left out.")
    keep &= ~unlabelled
    idx = np.flatnonzero(keep)
    if idx.size == 0:
        raise ValueError("no annotated perturbation rows are left once controls and rows without an annotation are dropped")
    values = table[feats].to_numpy(dtype=float, na_value=np.nan)[idx]
    bad = ~np.isfinite(values)
    if bad.any():
        col = int(np.flatnonzero(bad.any(axis=0))[0])
        raise ValueError(f"feature column {str(feats[col])!r} has NaN or infinite values in {int(bad[:, col].sum())} "
                         "perturbation rows; drop or impute them, or leave the column out with features=")
    order = np.lexsort(tuple(values.T[::-1]) + (text[idx],))  # canonical: by name, then features
    idx, values = idx[order], values[order]
    key = text[idx]
    grp_sets, grp_first, group = [], [], np.empty(idx.size, dtype=np.int64)
    for g, (k, members) in enumerate(pd.Series(np.arange(idx.size)).groupby(key, sort=True)):
        members = members.to_numpy()
        distinct = sorted({sets[i] for i in idx[members]})
        if len(distinct) > 1:
            raise ValueError(f"perturbation {k!r} has different annotations in its rows "
                             f"({' and '.join(repr((label_sep or '').join(d)) for d in distinct[:2])}); a "
                             "perturbation carries one set of labels: make its rows agree")
        grp_sets.append(distinct[0])
        grp_first.append(members)
        group[members] = g
    if aggregate == "none":
        X, group_of, rows = values, group, idx
    else:
        frame = pd.DataFrame(values).groupby(key, sort=True)
        X = (frame.median() if aggregate == "median" else frame.mean()).to_numpy()
        group_of = np.arange(len(grp_sets), dtype=np.int64)
        rows = np.array([int(idx[m].min()) for m in grp_first], dtype=np.int64)
    prof_names = [names.iat[i] for i in idx] if aggregate == "none" else [names.iat[idx[m[0]]] for m in grp_first]
    if X.shape[0] > MAX_PROFILES:
        raise ValueError(f"{X.shape[0]:,} profiles; the limit is {MAX_PROFILES:,} (aggregate replicates, or "
                         "restrict to active perturbations with only=)")
    X, kind = _prepared_rows(np.asarray(X, dtype=float), similarity, prof_names)
    labels = sorted({lab for s in grp_sets for lab in s})
    lid = {lab: i for i, lab in enumerate(labels)}
    grp_lab = np.array([lid[lab] for s in grp_sets for lab in s], dtype=np.int64)
    grp_ptr = np.concatenate([[0], np.cumsum([len(s) for s in grp_sets])]).astype(np.int64)
    owners = np.repeat(np.arange(len(grp_sets)), np.diff(grp_ptr))
    lab_mem = owners[np.lexsort((owners, grp_lab))].astype(np.int64)
    lab_ptr = np.concatenate([[0], np.cumsum(np.bincount(grp_lab, minlength=len(labels)))]).astype(np.int64)
    gm = np.argsort(group_of, kind="mergesort").astype(np.int64)
    gm_ptr = np.concatenate([[0], np.cumsum(np.bincount(group_of, minlength=len(grp_sets)))]).astype(np.int64)
    lists = LabelLists(group=np.asarray(group_of, dtype=np.int64), gm_ptr=gm_ptr, gm=gm, grp_ptr=grp_ptr,
                       grp_lab=grp_lab, lab_ptr=lab_ptr, lab_mem=lab_mem)
    return Profiles(X=X, kind=kind, names=prof_names, rows=np.asarray(rows, dtype=np.int64), labels=labels,
                    lists=lists, warnings=warnings, features=[str(f) for f in feats])
