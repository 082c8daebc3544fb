"""Checking a profile table for consistency scoring and turning it into aggregated, labelled profiles.

The table goes through the preparation ``score`` uses (one home, the same messages): the
perturbation column read as text with its empty rows named (:mod:`.labels`), the control values
matched with close names, :func:`.columns.select_features` (a text cell in a feature column named),
the ``nan=`` modes (:mod:`.missing`), the pair rule's columns (:mod:`.positives`), exact tests of
zero and constant rows and power-of-two scaling at any magnitude (:mod:`.scale`, :mod:`.matrix`).
Consistency adds the annotation (labels per perturbation), ``only=`` and the aggregation of replicates.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field

import numpy as np
import pandas as pd

from ...limits import check_column
from ..kernels.labelsets import LabelLists
from .names import output_name
from .columns import select_features
from .labels import close_values, control_values, label_rows, match_controls, text_codes
from .matrix import euclidean_exponent, feature_matrix, scale_in_place
from .missing import rows_text
from .normalize import check_normalize, normalize_step
from .positives import check_differ_by
from .scale import BINARY, DISTANCES, check_binary, degenerate_rows
from .screen import KINDS, ONE_STRATUM, SCORE_SIMILARITIES, check_table, clean_features

__all__ = ["Profiles", "prepare_profiles", "split_labels", "only_names", "AGGREGATES", "MAX_PROFILES"]

AGGREGATES = ("median", "mean", "none")
#: Most profiles (after aggregation) one consistency run takes: the sorted similarity rows hold
#: P^2 similarities, positions and ranks (24 bytes each), about 600 MB at 5,000.
MAX_PROFILES = 5_000
#: Names shown in a message or warning.
SHOWN = 5


@dataclass
class Profiles:
    """Aggregated, labelled profiles in canonical order (``prepare_profiles``); fields as commented."""

    X: np.ndarray            # (P, d) prepared rows (unit rows for cosine/correlation, power-of-two scaled)
    kind: int                # 0 dot product, 1 minus squared Euclidean distance, 2 absolute dot product
    names: list              # perturbation name of each profile (original values)
    rows: np.ndarray         # input row of each profile (first replicate when aggregated)
    labels: list             # all labels, sorted as text
    lists: LabelLists        # groups (perturbations) of the profiles, the labels they carry, pair-rule codes
    skipped: list = field(default_factory=list)    # (label, reason)
    warnings: list = field(default_factory=list)
    features: list = field(default_factory=list)
    left_out: list = field(default_factory=list)   # (column, reason) of every column not a feature
    dropped_features: list = field(default_factory=list)  # nan="drop-features"
    dropped_rows: list = field(default_factory=list)      # nan="drop-rows"
    unlabelled: list = field(default_factory=list)        # perturbations without a label: negatives only
    looks_raw: str | None = None  # normalize="none": why the features look un-normalised, or None


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


def _names(values) -> str:
    values = [str(v) for v in values]
    return ", ".join(repr(v) for v in values[:SHOWN]) + (f" and {len(values) - SHOWN:,} more" if len(values) > SHOWN else "")


#: Columns of a groups table saying which perturbations are significant (apnull's, copairs's), and
#: their q-values, read when those are absent.
FLAGS = ("significant", "below_corrected_p")
QVALUES = ("q_value", "corrected_p_value")


def only_names(only, pcol, alpha=0.05) -> set:
    """Perturbation names (as text) to keep, from ``only``.

    ``only`` is a DataFrame with the perturbation column (e.g. ``score_profiles(...).groups`` or the
    file ``apnull score --out-groups`` wrote, with or without ``--copairs-names``): the rows whose
    ``significant`` (copairs: ``below_corrected_p``) column is true, else whose ``q_value`` (copairs:
    ``corrected_p_value``) <= ``alpha``; or a list of perturbation names. Names are
    compared as text: read the file with ``read_table(labels=[pcol])`` so ``011`` stays ``011``.

    Raises TypeError for another type (a single text included), ValueError for a table without the
    perturbation column or without any of those columns (the columns looked for named: a table of
    another kind, such as compare's per-perturbation table, would otherwise keep every perturbation).
    """
    if isinstance(only, pd.DataFrame):
        col = pcol if pcol in only.columns else output_name(pcol)
        if col not in only.columns:
            raise ValueError(f"the only= table has no perturbation column {pcol!r} (its columns: "
                             f"{', '.join(repr(str(c)) for c in list(only.columns)[:8])}); give the groups "
                             "table written by apnull score --out-groups for the same perturbation column")
        flag = next((c for c in FLAGS if c in only.columns), None)
        qcol = next((c for c in QVALUES if c in only.columns), None)
        if flag is not None:
            keep = only[flag].astype(str).str.strip().str.lower().isin(["true", "1", "yes"])
        elif qcol is not None:
            keep = pd.to_numeric(only[qcol], errors="coerce") <= alpha
        else:
            raise ValueError(f"the only= table has no significance column: looked for {', '.join(map(repr, FLAGS))} "
                             f"and {', '.join(map(repr, QVALUES))} (its columns: "
                             f"{', '.join(repr(str(c)) for c in list(only.columns)[:8])}"
                             f"{' ...' if only.shape[1] > 8 else ''}); give the groups table apnull score "
                             "--out-groups wrote, or a list of the perturbations to keep")
        names = only.loc[keep, col]
        return set(names[names.notna()].astype(str))
    if isinstance(only, (str, bytes, Mapping)) or not isinstance(only, Iterable):
        raise TypeError(f"only must be a groups table (DataFrame) or a list of perturbation names, got "
                        f"{type(only).__name__} {repr(only)[:40]}")
    return {str(x) for x in only}


def _aggregate(values, group, G, how) -> np.ndarray:
    """(G, d) per-feature ``how`` ("median" or "mean") of the rows of each group (0 .. G-1). Each
    group's rows are divided by a power of two first (its largest absolute value into [0.5, 1)) and
    the result multiplied back, so nothing overflows at any magnitude and ordinary values give the
    same bits as the unscaled aggregate (scaling by 2**e is exact)."""
    top = pd.Series(np.max(np.abs(values), axis=1) if values.shape[1] else np.zeros(len(values))).groupby(group).max()
    e = np.frexp(top.to_numpy())[1]
    frame = pd.DataFrame(np.ldexp(values, -e[group][:, None])).groupby(group, sort=True)
    agg = (frame.median() if how == "median" else frame.mean()).to_numpy()
    return np.ldexp(agg, e[:, None])


def _label_sets(sets, idx, starts, names, label_sep) -> tuple:
    """(label set of each group, warnings): one set per perturbation; blank cells beside labelled
    rows take the labels of their perturbation (named in a warning)."""
    out, blanks = [], []
    ends = np.append(starts[1:], idx.size)
    for g, (a, b) in enumerate(zip(starts, ends)):
        members = idx[a:b]
        distinct = sorted({sets[i] for i in members} - {()})
        if len(distinct) > 1:
            raise ValueError(f"perturbation {str(names[g])!r} has different annotations in its rows "
                             f"({' and '.join(repr((label_sep or '').join(d)) for d in distinct[:2])}); a "
                             "perturbation carries one set of labels: make its rows agree")
        if distinct:
            blanks.extend(int(i) for i in members if not sets[i])
        out.append(distinct[0] if distinct else ())
    warnings = []
    if len(blanks) == 1:
        warnings.append(f"1 row with an empty annotation belongs to a perturbation whose other rows carry labels "
                        f"({rows_text(blanks)}); it was given those labels.")
    elif blanks:
        warnings.append(f"{len(blanks)} rows with an empty annotation belong to perturbations whose other rows "
                        f"carry labels ({rows_text(sorted(blanks))}); they were given those labels.")
    return out, warnings


def _group_codes(codes, starts, names, columns, table, rows):
    """The pair-rule codes of each group (one value per perturbation when replicates are aggregated)."""
    lo = np.minimum.reduceat(codes, starts, axis=0)
    hi = np.maximum.reduceat(codes, starts, axis=0)
    bad = np.argwhere(lo != hi)
    if bad.size:
        g, c = bad[0]
        ends = np.append(starts[1:], codes.shape[0])
        seen = pd.unique(table[columns[c]].iloc[rows[starts[g]:ends[g]]])
        raise ValueError(f"positives_differ_by column {columns[c]!r} holds several values for perturbation "
                         f"{str(names[g])!r} ({_names(seen[:2])}); aggregated replicates carry one value: make its "
                         "rows agree, or keep the replicates as profiles with aggregate='none'")
    return np.ascontiguousarray(lo, dtype=np.int64)


def prepare_profiles(table, perturbation, annotation, label_sep, aggregate, control, only, features,
                     similarity, alpha, nan="error", positives_differ_by=None, normalize="none",
                     stratum=None) -> Profiles:
    """Check the table and build the :class:`Profiles` (rules in ``score_consistency``).

    ``normalize`` (:mod:`.normalize`) runs on every row with a perturbation (and ``stratum``) value,
    the controls included, per stratum, before controls and ``only`` leave rows out and before ``nan``."""
    check_table(table, similarity, features, SCORE_SIMILARITIES, nan)
    if aggregate not in AGGREGATES:
        raise ValueError(f"aggregate must be one of {', '.join(AGGREGATES)}, got {aggregate!r}")
    pcol = check_column(table, perturbation, "perturbation")
    acol = check_column(table, annotation, "annotation")
    if acol == pcol:
        raise ValueError("the annotation column must differ from the perturbation column")
    if label_sep is not None and (not isinstance(label_sep, str) or not label_sep):
        raise ValueError(f"label_sep must be a non-empty text such as '|', got {label_sep!r}")
    differ = check_differ_by(table, positives_differ_by, set())
    if acol in differ:
        raise ValueError(f"positives_differ_by column {acol!r} is the annotation column; give a column such as "
                         "the plate or the well position")
    scol = None if stratum is None else check_column(table, stratum, "stratum")
    if scol is not None and scol in (pcol, acol):
        raise ValueError(f"the stratum column {scol!r} must differ from the perturbation and annotation columns")
    controls = control_values(control, required=False)
    check_normalize(normalize, similarity, controls, similarity in BINARY)
    read = label_rows(table, pcol, scol)
    keep, warnings = read.keep.copy(), list(read.warnings)
    labelled = read.keep.copy()
    is_ctl = np.zeros(keep.size, dtype=bool)
    if controls:
        is_ctl, unmatched = match_controls(read, controls, pcol)
        keep &= ~is_ctl
        warnings += unmatched
    if not keep.any():
        raise ValueError(f"no perturbation rows: column {pcol!r} is empty{' or a control' if controls else ''} in every row")
    text = read.text[read.code]  # each row's perturbation as text (only kept rows are read)
    if only is not None:
        wanted = only_names(only, pcol, alpha)
        present = set(read.text[np.unique(read.code[keep])].tolist())
        missing = sorted(wanted - present)
        if not wanted:
            raise ValueError("only= keeps no perturbation (no row of the groups table is significant)")
        if not wanted & present:
            raise ValueError(f"no perturbation of the table is among the {len(wanted)} kept by only= ({_names(missing)}; "
                             f"{close_values(missing[0], sorted(present))}): check it was written for this table "
                             "and perturbation column")
        if missing:
            warnings.append(f"{len(missing)} of the {len(wanted)} perturbations kept by only= "
                            f"{'is' if len(missing) == 1 else 'are'} not in the table (or only as controls): "
                            f"{_names(missing)}.")
        keep &= np.isin(text, list(wanted))
    feats, left_out = select_features(table, features, {pcol, acol, *differ} | ({scol} if scol else set()),
                                      similarity in BINARY)
    cells = table[acol].to_numpy()
    if label_sep is not None:
        used = [c for c in cells[keep] if isinstance(c, str)]
        if used and not any(label_sep in c for c in used):
            raise ValueError(f"the separator {label_sep!r} splits no annotation cell of column {acol!r} "
                             f"(e.g. {used[0]!r}); give the separator the cells use, or none")
    idx = np.flatnonzero(keep)
    if idx.size == 0:
        raise ValueError("no perturbation rows are left once controls and rows without a perturbation are dropped")
    values, feats, norm, looks_raw = _normalized(table, feats, idx, labelled, is_ctl, scol, normalize,
                                                 similarity in BINARY)
    dropped, left_out, codes = clean_features(table, values, idx, feats, norm, nan, differ, left_out, warnings)
    values, idx, feats = dropped.values, dropped.used, dropped.features
    order = np.lexsort(tuple(values.T[::-1]) + (text[idx],))  # canonical: by name, then features
    idx, values = idx[order], values[order]
    codes = np.zeros((idx.size, 0), dtype=np.int64) if codes is None else codes[order]
    key = text[idx]
    starts = np.flatnonzero(np.r_[True, key[1:] != key[:-1]])
    group = np.cumsum(np.r_[True, key[1:] != key[:-1]]).astype(np.int64) - 1
    G = starts.size
    names = table[pcol]
    grp_names = [names.iat[i] for i in idx[starts]]
    sets = [split_labels(c, label_sep) for c in cells]
    grp_sets, more = _label_sets(sets, idx, starts, grp_names, label_sep)
    warnings.extend(more)
    if aggregate == "none":
        X, group_of, rows, prof_names = values, group, idx, [names.iat[i] for i in idx]
    else:
        if G > MAX_PROFILES:
            raise ValueError(f"{G:,} profiles; the limit is {MAX_PROFILES:,} (restrict to active perturbations with only=)")
        X, group_of, prof_names = _aggregate(values, group, G, aggregate), np.arange(G, dtype=np.int64), grp_names
        rows = np.minimum.reduceat(idx, starts)
        codes = _group_codes(codes, starts, grp_names, differ, table, idx) if differ else codes[starts]
    if X.shape[0] > MAX_PROFILES:
        raise ValueError(f"{X.shape[0]:,} profiles; the limit is {MAX_PROFILES:,} (aggregate replicates, or "
                         "restrict to active perturbations with only=)")
    X = np.ascontiguousarray(X, dtype=np.float64)
    if similarity in BINARY:  # after aggregation: a median or mean of 0/1 replicates may not be 0/1
        try:
            check_binary(X, feats, rows, similarity)
        except ValueError as err:
            more = "" if aggregate == "none" else "; aggregate='none' keeps replicates as they are"
            raise ValueError(f"{err}{more}") from None
    zero = np.flatnonzero(degenerate_rows(X, similarity))
    if zero.size:
        why = "the same value in every feature" if similarity == "correlation" else "all-zero features"
        at = idx[[zero[0]]] if aggregate == "none" else idx[group == zero[0]]
        raise ValueError(f"the profile of {str(prof_names[zero[0]])!r} ("
                         f"{rows_text(at)}) has {why}, so {similarity} "
                         "similarity is undefined; drop it or use similarity='euclidean'")
    X = scale_in_place(X, similarity, euclidean_exponent(X) if similarity in DISTANCES else 0)
    unlabelled = [grp_names[g] for g in range(G) if not grp_sets[g]]
    if unlabelled:
        one = len(unlabelled) == 1
        warnings.append(f"{len(unlabelled)} perturbation{'' if one else 's'} without an annotation ({_names(unlabelled)}) "
                        f"{'is a negative' if one else 'are negatives'} of every query and never a query; drop "
                        f"{'its' if one else 'their'} rows to leave {'it' if one else 'them'} out.")
    labels = sorted({lab for s in grp_sets for lab in s})
    lid = {lab: i for i, lab in enumerate(labels)}
    grp_lab = np.array([lid[lab] for s in grp_sets for lab in s], dtype=np.int64)
    grp_ptr = np.concatenate([[0], np.cumsum([len(s) for s in grp_sets])]).astype(np.int64)
    owners = np.repeat(np.arange(G), np.diff(grp_ptr))
    lab_mem = owners[np.lexsort((owners, grp_lab))].astype(np.int64)
    lab_ptr = np.concatenate([[0], np.cumsum(np.bincount(grp_lab, minlength=len(labels)))]).astype(np.int64)
    gm = np.argsort(group_of, kind="mergesort").astype(np.int64)
    gm_ptr = np.concatenate([[0], np.cumsum(np.bincount(group_of, minlength=G))]).astype(np.int64)
    lists = LabelLists(group=np.asarray(group_of, dtype=np.int64), gm_ptr=gm_ptr, gm=gm, grp_ptr=grp_ptr,
                       grp_lab=grp_lab, lab_ptr=lab_ptr, lab_mem=lab_mem, codes=np.ascontiguousarray(codes))
    return Profiles(X=X, kind=KINDS[similarity], names=prof_names, rows=np.asarray(rows, dtype=np.int64),
                    labels=labels, lists=lists, warnings=warnings, features=[str(f) for f in feats],
                    left_out=left_out, dropped_features=dropped.dropped_features, dropped_rows=dropped.dropped_rows,
                    unlabelled=unlabelled, looks_raw=looks_raw)


def _normalized(table, feats, idx, labelled, is_ctl, scol, normalize, binary):
    """The feature rows ``idx`` after :func:`.normalize.normalize_step`: its statistics read every
    ``labelled`` row of each stratum (the controls among them), not only the rows kept."""
    base = np.flatnonzero(labelled) if normalize != "none" else idx
    if scol is not None:
        codes, strata = text_codes(table[scol])
        codes = codes[base]
    else:
        codes, strata = np.zeros(base.size, dtype=np.int64), np.array([ONE_STRATUM], dtype=object)
    step = normalize_step(feature_matrix(table, feats, base), codes, strata, is_ctl[base], feats, normalize, binary)
    values = step.values if base is idx else np.ascontiguousarray(step.values[np.searchsorted(base, idx)])
    return values, step.features, step.norm, step.looks_raw
