"""Checking a profile table and turning it into the arrays the kernels need (one ``Screen``)."""

from __future__ import annotations

from dataclasses import dataclass, field

import numpy as np
import pandas as pd

from ...limits import SCORE_MAX_POOL_CELLS as MAX_POOL_CELLS
from ...limits import SCORE_MAX_STRATUM_CONTROLS as MAX_STRATUM_CONTROLS
from ...limits import check_column, check_stratum
from .columns import select_features
from .labels import control_values, label_rows, match_controls, text_codes
from .matrix import (compact_dtype, duplicate_rows, euclidean_exponent, feature_matrix, float_columns, held_rows,
                     scale_in_place)
from .perts import Pert, PertTable, group_rows, sorted_order
from .segments import offsets
from .memory import release_arrow
from .scale import BINARY, DISTANCES, check_binary, degenerate_rows
from .names import TEXT
from .missing import apply_nan_mode, check_nan_mode, rows_text
from .normalize import Normalization, check_normalize, normalize_step
from .positives import check_differ_by, differ_codes, drop_without_positives
from .rows import BlockRows, PreparedRows, held_whole, prepared_hashes
from .names import staged, tell_stage

__all__ = ["Screen", "Pert", "prepare_screen", "SIMILARITIES", "SCORE_SIMILARITIES", "NEGATIVES",
           "MAX_STRATUM_CONTROLS", "MAX_POOL_CELLS", "ONE_STRATUM"]

#: The similarities of every scorer of a profile table (continuous features).
SIMILARITIES = ("cosine", "correlation", "euclidean", "abs_cosine")
#: The similarities of ``score_profiles``: those, two more distances of continuous features, and two of
#: binary features (:data:`.scale.BINARY`).
SCORE_SIMILARITIES = SIMILARITIES + ("manhattan", "chebyshev", "jaccard", "hamming")
#: The kernels' similarity kind of each name (see ``kernels.similarity.sim``): abs_cosine ranks by
#: |cosine|, the distances by minus the distance, hamming by minus the count of differing 0/1 features
#: (the Manhattan distance of 0/1 rows).
KINDS = {"cosine": 0, "correlation": 0, "euclidean": 1, "abs_cosine": 2, "manhattan": 3, "chebyshev": 4,
         "jaccard": 5, "hamming": 3}
#: Whom a query ranks its positives against (``score_profiles(negatives=...)``).
NEGATIVES = ("controls", "others")
#: The stratum key of every row when no stratum column is given (the whole screen is one stratum).
ONE_STRATUM = ""


@dataclass
class Screen:
    """A checked profile table as the engine reads it (``prepare_screen``); fields as commented."""

    X: np.ndarray                 # prepared feature rows (float64, C-contiguous), or for a table of float32
    # features a :class:`.rows.PreparedRows` making them when asked (from a float32 copy, then the table)
    rows: np.ndarray              # original 0-based row position of each X row
    kind: int                     # the similarity kind of ``kernels.similarity.sim`` (:data:`KINDS`)
    controls: dict                # stratum key -> X row indices of its pool (canonical order): its controls,
    # or with negatives="others" every profile of the stratum (a perturbation's replicates are members)
    perts: PertTable              # the scored perturbations (``perts[i]`` is a Pert)
    skipped: list = field(default_factory=list)   # (name, reason)
    warnings: list = field(default_factory=list)
    features: list = field(default_factory=list)
    left_out: list = field(default_factory=list)  # (column, reason) of every column not a feature
    dropped_features: list = field(default_factory=list)  # feature columns left out (nan="drop-features")
    dropped_rows: list = field(default_factory=list)      # input rows left out (nan="drop-rows")
    codes: np.ndarray | None = None  # (rows of X, C) positives_differ_by codes, or None
    columns: list = field(default_factory=list)  # the feature columns as the table names them
    exponent: int = 0             # distances: every row of X was divided by 2 ** exponent
    negatives: str = "controls"   # :data:`NEGATIVES`
    member: np.ndarray | None = None  # negatives="others": (rows of X,) each row's position in its pool
    normalization: Normalization | None = None  # normalize= "controls"/"plate": per stratum centre, scale
    norm_codes: np.ndarray | None = None  # (rows of X,) the stratum code of each row in ``normalization``
    looks_raw: str | None = None  # normalize="none": why the features look un-normalised (:func:`.normalize.raw_look`)

    def query_negatives(self) -> np.ndarray:
        """(Q,) int64 negatives n of every query (replicate order of ``perts``): the controls of its
        stratum, or with negatives="others" the other members of its stratum's pool (every profile
        there but the perturbation's own replicates)."""
        pt = self.perts
        pool = np.array([len(self.controls.get(s, ())) for s in pt.strata], dtype=np.int64)
        seg_n = pool[pt.seg_stratum]
        if self.negatives == "others":
            seg_n = seg_n - pt.seg_len
        return np.repeat(seg_n, pt.seg_len)


def canonical_order(X: np.ndarray, idx: np.ndarray) -> np.ndarray:
    """``idx`` sorted by the feature rows (lexicographic), so results ignore the input row order."""
    if idx.size <= 1:
        return idx
    return idx[sorted_order(X, np.zeros(idx.size, dtype=np.int64), idx)]  # = np.lexsort(X[idx].T[::-1])


def check_table(table, similarity, features=None, allowed=SIMILARITIES, nan=None) -> None:
    """The first checks of every scorer of a profile table: TypeError unless ``table`` is a DataFrame
    and ``features`` None, a text (a regex) or a list of column names; ValueError for a table without
    rows, a ``similarity`` not among ``allowed`` (default :data:`SIMILARITIES`) or, given, a ``nan``
    mode not among :data:`.missing.NAN_MODES`."""
    if not isinstance(table, pd.DataFrame):
        raise TypeError(f"table must be a pandas DataFrame (use read_table to load a CSV or Parquet file), "
                        f"got {type(table).__name__}")
    if features is not None and not isinstance(features, (str, list, tuple, pd.Index, np.ndarray)):
        raise TypeError(f"features must be None, a regex (text) or a list of column names, got "
                        f"{type(features).__name__} {repr(features)[:40]}")
    if table.shape[0] == 0:
        raise ValueError("the table has no rows")
    if similarity not in allowed:
        raise ValueError(f"similarity must be one of {', '.join(allowed)}, got {similarity!r}")
    if nan is not None:
        check_nan_mode(nan)


def clean_features(table, values, used, feats, norm, nan, differ, left_out, warnings) -> tuple:
    """The steps after per-plate normalisation, the same for a screen and for consistency's profiles:
    what the normalisation ``norm`` (or None) left out and said, the ``nan=`` mode
    (:func:`.missing.apply_nan_mode`: feature columns or rows left out, named) and the pair rule's
    codes of the rows kept (:func:`.positives.differ_codes` for the ``differ`` columns).

    Returns
    -------
    dropped, left_out, codes
        What the ``nan=`` mode kept and dropped (:class:`.missing.Dropped`: the kept values, their
        rows of ``table``, the kept feature columns), ``left_out`` with the columns left out here
        added, and the kept rows' codes (None without ``differ``); ``warnings`` is extended in place.
    """
    if norm is not None:
        left_out = left_out + norm.left_out
        warnings.extend(norm.warnings)
    dropped = apply_nan_mode(values, used, feats, nan)
    warnings.extend(dropped.warnings)
    left_out = left_out + [(str(c), "missing values (nan='drop-features')") for c in dropped.dropped_features]
    return dropped, left_out, differ_codes(table, differ, dropped.used)


def prepare_screen(table, perturbation, control, stratum, features, similarity, nan="error",
                   positives_differ_by=None, negatives="controls", normalize="none", progress=None) -> Screen:
    """Validate the table and build the :class:`Screen` (see ``score_profiles`` for the rules).

    The steps, in order: labels and controls; the feature columns; per-plate normalisation
    (``normalize``, :mod:`.normalize`: NaN cells skipped by its statistics, features it cannot scale
    left out); the ``nan=`` mode; the pair rule's codes; degenerate rows; scaling for the similarity.

    Memory: when every feature column is float32 (and ``normalize="none"``, continuous features) the
    features are read as float32 (:func:`.matrix.compact_dtype`); a table of more than
    :data:`.rows.FLOAT64_CELLS` such values is never held whole in float64: the prepared rows are made in
    float64 a block at a time (:class:`.rows.BlockRows`) and the screen's ``X`` makes them when asked
    (:class:`.rows.PreparedRows`), with the same bits as the float64 path: from the float32 copy while the
    run lasts (:func:`.rows.let_go` ends it), then from ``table``. A smaller one is
    prepared whole, as a float64 table is (:func:`.rows.held_whole`). ``progress`` (a reporter,
    :mod:`..engine.progress`) counts the rows prepared."""
    check_table(table, similarity, features, SCORE_SIMILARITIES, nan)
    if negatives not in NEGATIVES:
        raise ValueError(f"negatives must be one of {', '.join(NEGATIVES)}, got {negatives!r}")
    others = negatives == "others"
    pcol = check_column(table, perturbation, "perturbation")
    scol = None if stratum is None else check_column(table, stratum, "stratum")
    check_stratum(scol, pcol)
    differ = check_differ_by(table, positives_differ_by, {pcol, scol})
    controls = control_values(control, required=not others)
    read = label_rows(table, pcol, scol)
    keep, lcode, ltext = read.keep, read.code, read.text
    is_ctl, unmatched = match_controls(read, controls, pcol,
                                       note=" (a screen without controls: control=None)" if others else "")
    warnings = read.warnings + unmatched
    binary = similarity in BINARY
    check_normalize(normalize, similarity, controls, binary)
    feats, left_out = select_features(table, features, {pcol, *differ} | ({scol} if scol else set()), binary)
    used = np.flatnonzero(keep)
    compact = normalize == "none" and not binary and compact_dtype(table, feats) == np.float32
    columns = float_columns(table, feats)  # the feature columns' arrays (views), taken once
    values = held_rows(table, feats, used, columns) if compact else None  # read_table's own array, or a copy
    if values is None:
        values = feature_matrix(table, feats, used, np.float32 if compact else np.float64, columns=columns)
    del columns
    if scol is not None:
        scode_all, stext = text_codes(table[scol])
        release_arrow()
    else:
        scode_all, stext = np.zeros(len(table), dtype=np.int64), np.array([ONE_STRATUM], dtype=object)
    values, feats, norm, looks_raw = normalize_step(values, scode_all[used], stext, is_ctl[used], feats, normalize,
                                                    binary)
    dropped, left_out, codes = clean_features(table, values, used, feats, norm, nan, differ, left_out, warnings)
    values, used, feats = dropped.values, dropped.used, dropped.features
    kind = KINDS[similarity]
    if binary:
        check_binary(values, feats, used, similarity)
    zero = degenerate_rows(values, similarity)
    if zero.any():
        why = "the same value in every feature" if similarity == "correlation" else "all-zero features"
        raise ValueError(f"{rows_text(used[zero])} {'have' if zero.sum() > 1 else 'has'} {why}, so {similarity} "
                         "similarity is undefined; drop them or use similarity='euclidean'")
    lcode = lcode[used]
    scode = scode_all[used]
    del scode_all
    scode_norm = scode.copy() if norm is not None else None  # each X row's stratum code, for PreparedRows
    counter = staged(progress)  # the rows' counts go to reporters that know the stage they are in
    tell_stage(progress, "rows checked for duplicates")
    dup = duplicate_rows(lcode, scode, values, counter)
    exponent = euclidean_exponent(values) if similarity in DISTANCES else 0
    if values.dtype == np.float32 and not held_whole(values):  # prepared in float64 a block at a time, when asked
        X = BlockRows(values, similarity, exponent)
    else:
        values = np.ascontiguousarray(values, dtype=np.float64)  # ours: no copy
        X = scale_in_place(values, similarity, exponent)
    del values
    hashes = None
    if isinstance(X, BlockRows):  # every row prepared once, here: hashed, and the first column kept for the order
        tell_stage(progress, "rows prepared")
        hashes = prepared_hashes(X, counter)
    if dup.any():
        warnings.append(f"{int(dup.sum())} duplicate rows (same perturbation, stratum and features: "
                        f"{rows_text(used[dup])}) were kept; they tie with their copies, which the "
                        "tie-aware AP handles, but check the file was not concatenated twice.")
    ctl = is_ctl[used]
    lrank, srank = _ranks(ltext), _ranks(stext)
    strata = stext[np.argsort(srank)]  # the stratum keys, sorted
    srow = srank[scode]
    pools = _pools(X, srow, strata, np.arange(used.size) if others else np.flatnonzero(ctl), others)
    sorted_labels = ltext[np.argsort(lrank)]
    column = table[pcol]

    def names_of(first):  # each perturbation's first row's value, and the column's own array of them
        values = column.iloc[used[first]]
        return values.to_numpy(), (values.array if values.dtype == TEXT else None)

    perts = group_rows(X, lrank[lcode], srow, np.flatnonzero(~ctl), names_of, lambda ranks: sorted_labels[ranks],
                       strata)
    del lcode, scode, srow
    perts, skipped, empty_strata = _skips(perts, pools, others, used)
    if codes is not None:
        kept, no_positives = drop_without_positives(list(perts), codes)
        skipped.extend(no_positives)
        if len(kept) < len(perts):
            perts = PertTable.from_perts(kept, perts.strata)
    if empty_strata:
        warnings.append(f"strata without control rows: {', '.join(repr(s) for s in sorted(empty_strata))}; "
                        "the replicates there were left out (named in skipped).")
    _check_pools(perts, pools, others)
    if not len(perts):
        reasons = "; ".join(sorted({r for _, r in skipped})) or "no perturbation rows"
        raise ValueError(f"nothing to score: no perturbation has 2 or more replicates with "
                         f"{'other profiles' if others else 'controls'} in their strata ({reasons})")
    if isinstance(X, BlockRows):  # the float32 copy kept while the run lasts (rows.let_go), then read from the table
        X = PreparedRows(table, list(feats), used, similarity, exponent, hashes, kept=X.values)
    member = None
    if others:
        member = np.full(used.size, -1, dtype=np.int64)
        for idx in pools.values():
            member[idx] = np.arange(idx.size)
    return Screen(X=X, rows=used, kind=kind, controls=pools, perts=perts, skipped=skipped,
                  warnings=warnings, features=[str(f) for f in feats], left_out=left_out,
                  dropped_features=dropped.dropped_features, dropped_rows=dropped.dropped_rows, codes=codes,
                  columns=list(feats), exponent=exponent, negatives=negatives, member=member,
                  normalization=norm, norm_codes=None if norm is None else scode_norm, looks_raw=looks_raw)


def _pools(X, srow, strata, rows, others) -> dict:
    """stratum key -> its pool's X rows in canonical order: ``rows`` (the controls, or with ``others``
    every row) grouped by stratum; ValueError for a pool past :data:`MAX_STRATUM_CONTROLS`."""
    out = {}
    by_stratum = np.argsort(srow[rows], kind="stable")
    cuts = np.flatnonzero(np.diff(srow[rows][by_stratum])) + 1
    for part in np.split(rows[by_stratum], cuts) if rows.size else []:
        s = strata[srow[part[0]]]
        idx = canonical_order(X, part)
        if idx.size > MAX_STRATUM_CONTROLS:
            what = "profiles (with negatives='others' all are in its pool)" if others else "control rows"
            raise ValueError(f"stratum {s!r} has {idx.size:,} {what}; the limit is "
                             f"{MAX_STRATUM_CONTROLS:,} per stratum: use a stratum column (plate or batch)")
        out[s] = idx
    return out


def _segment_pools(perts: PertTable, pools: dict) -> np.ndarray:
    """(S,) the rows of each segment's stratum's pool (its controls, or with negatives="others" its profiles)."""
    return np.array([len(pools.get(s, ())) for s in perts.strata], dtype=np.int64)[perts.seg_stratum]


def _check_pools(perts: PertTable, pools: dict, others: bool) -> None:
    """ValueError naming the perturbations whose pool table passes :data:`MAX_POOL_CELLS`: k replicates by
    P pool members (each of its strata's replicates and controls, or with ``others`` every profile there).
    Each draw of its mAP null ranks k - 1 positives for each of its k queries, so such a perturbation (one on
    every plate of a large screen) also costs k^2 look-ups a draw."""
    if not len(perts):
        return
    seg_members = _segment_pools(perts, pools) + (0 if others else perts.seg_len)
    members = np.bincount(perts.seg_pert, weights=seg_members, minlength=len(perts)).astype(np.int64)
    cells = perts.k * members
    over = np.flatnonzero(cells > MAX_POOL_CELLS)
    if not over.size:
        return
    i = int(over[np.argmax(cells[over])])
    more = f" and {over.size - 1:,} more" if over.size > 1 else ""
    raise ValueError(f"perturbation {str(perts.keys[i])!r}{more} past the pool limit: {int(perts.k[i]):,} replicates on "
                     f"{int(perts.soff[i + 1] - perts.soff[i]):,} strata beside {int(members[i]):,} pool members, a "
                     f"table of {int(cells[i]):,} cells ({cells[i] * 24 / 2**30:.1f} GiB); the limit is "
                     f"{MAX_POOL_CELLS:,} cells (replicates x pool members, 200 MB). Leave such perturbations out "
                     "(positive controls on every plate): drop their rows from the table (--where)")


def _ranks(texts: np.ndarray) -> np.ndarray:
    """Rank of each text among ``texts`` (distinct) in sorted order."""
    rank = np.empty(texts.size, dtype=np.int64)
    rank[np.argsort(texts, kind="stable")] = np.arange(texts.size)
    return rank


def _skips(perts: PertTable, pools: dict, others: bool, used: np.ndarray) -> tuple:
    """(perturbations to score, [(name, reason)], strata without controls that replicates were in).

    A replicate whose stratum holds no negative for it (no control rows there; with ``others``, no
    other profile) is left out, named in a reason; a perturbation keeping fewer than two replicates
    is skipped (one replicate from the start: no positives to rank), the others are scored from the
    replicates they keep. ``used`` maps X rows to input rows (the rows named).
    """
    seg_pool = _segment_pools(perts, pools)
    bad = (seg_pool <= perts.seg_len) if others else (seg_pool == 0)
    single = perts.k < 2
    if not bad.any() and not single.any():
        return perts, [], set()
    owner = perts.seg_pert
    k_kept = np.bincount(owner, weights=np.where(bad, 0, perts.seg_len), minlength=len(perts)).astype(np.int64)
    skipped, empty = [], set()
    why = "no other profile in stratum {!r} (no negatives)" if others else "no control rows in stratum {!r}"
    for i in np.flatnonzero(single | np.bincount(owner, weights=bad, minlength=len(perts)).astype(bool)).tolist():
        if single[i]:
            skipped.append((perts.names[i], "only one replicate: no positives to rank"))
            continue
        segs = np.arange(perts.soff[i], perts.soff[i + 1])[bad[perts.soff[i]:perts.soff[i + 1]]]
        names = [perts.strata[perts.seg_stratum[j]] for j in segs.tolist()]
        if not others:
            empty.update(names)
        reason = why.format(names[0])
        rows = used[np.concatenate([perts.rows[perts.seg_off[j]:perts.seg_off[j + 1]] for j in segs.tolist()])]
        if k_kept[i] == 0:
            skipped.append((perts.names[i], reason))
        elif k_kept[i] == 1:
            skipped.append((perts.names[i], f"{reason}: its replicates there left out ({rows_text(np.sort(rows))}); "
                                            "one replicate left: no positives to rank"))
        else:
            skipped.append((perts.names[i], f"replicates left out ({rows_text(np.sort(rows))}): {reason}; "
                                            f"scored from its {int(k_kept[i])} other replicates"))
    kept_seg = ~bad
    keep_q = np.repeat(kept_seg, perts.seg_len)
    nseg = np.bincount(owner, weights=kept_seg, minlength=len(perts)).astype(np.int64)
    trimmed = PertTable(perts.names, perts.keys, perts.rows[keep_q], offsets(k_kept), offsets(nseg),
                        offsets(perts.seg_len[kept_seg]), perts.seg_stratum[kept_seg], perts.strata, perts.shown)
    keep = np.flatnonzero(~single & (k_kept >= 2))
    return (trimmed if keep.size == len(perts) else trimmed.take(keep)), skipped, empty
