"""Per-plate normalisation of the features, one step of the one table preparation (``normalize=``).

Raw CellProfiler features carry plate effects and units that differ by orders of magnitude; users
normalise them per plate before scoring, usually with pycytominer's
``normalize(method="mad_robustize", samples=<controls query>)`` applied plate by plate. Every scorer
of a profile table (``score_profiles``, ``score_consistency``, ``score_compare``) offers the same
step here, before similarities are computed (:data:`NORMALIZE`):

- ``"none"`` (default): the features as given (a table normalised already);
- ``"controls"``: per stratum (plate) s and feature j, with med and MAD taken over the finite values
  of s's control rows, x -> (x - med) / (1.4826 * MAD): the robust z-score against the plate's
  controls (pycytominer's ``mad_robustize``, whose MAD is scipy's ``median_abs_deviation(scale=1 /
  1.4826)``, NaN omitted, as here);
- ``"plate"``: the same against every scored row of the stratum (controls and perturbations).

Without a stratum column the whole table is one plate. The statistics skip NaN and infinite cells
(pycytominer's ``nan_policy="omit"``), which stay missing and are then handled by ``nan=``: a table
normalised here and one normalised by hand and scored with ``"none"`` give the same profiles.

Edge cases, decided rather than divided by zero:

- a feature whose MAD is 0 on some stratum (more than half of its reference values equal), or with no
  finite reference value there, cannot be scaled on that stratum: it is left out of the features
  and named (``left_out``, with the stratum; a warning). pycytominer instead divides by
  MAD + 1e-18, which turns any difference from the median into a value near 1e18 and lets that
  feature dominate every similarity. Every feature left out is a ValueError;
- a stratum without reference rows (``"controls"``: a plate without control rows) is a ValueError
  naming it (its rows cannot be normalised): give it controls, drop its rows, or use ``"plate"``;
- a finite cell that the division makes infinite (a MAD near the smallest double) is a ValueError.

Binary similarities (Jaccard, Hamming) compare 0/1 features: normalising them is refused.

:func:`raw_look` says when features given with ``"none"`` look un-normalised (a sentence, or None).

The nulls keep the normalisation of the observed labels. With ``"plate"`` (and ``"none"``) that is
exact: a plate's rows are the same whoever carries which label. With ``"controls"`` the reference
moves with the labels, and the measured mAP test is conservative (docs/calibration.md: 0.024 at 0.05
on true-null digits screens), at the price of some power; renormalising per draw would make it exact
at a cost that docs/calibration.md states.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import NamedTuple

import numpy as np

from ...limits import check_choice

__all__ = ["NORMALIZE", "MAD_SCALE", "Normalization", "Normalized", "check_normalize", "normalize_step",
           "normalize_rows", "apply_normalization",
           "raw_look", "raw_warning", "RAW_HINT", "SPREAD_RATIO", "PLATE_RATIO"]

#: The choices of ``normalize=``.
NORMALIZE = ("none", "controls", "plate")
#: The MAD's factor: 1.4826 * MAD estimates the standard deviation of normal values (pycytominer's).
MAD_SCALE = 1.4826
#: raw_look: the 95th / 5th percentile of the features' robust spreads past which units differ.
SPREAD_RATIO = 100.0
#: raw_look: the median over features of (spread of the plates' reference medians) / (spread within a
#: plate) past which plate effects show.
PLATE_RATIO = 1.0
#: raw_look: the most strata it reads (evenly spaced in code order), so a screen of 2,000 plates costs little.
MAX_STRATA = 64
#: Values normalised at a time (2 MB of temporaries).
CELLS = 1 << 18
#: raw_look: the most reference rows it reads a stratum (every k-th).
STRATUM_ROWS = 200
#: The fix :func:`raw_look`'s sentence ends with (the library's words; the CLI and page say theirs).
RAW_HINT = "normalise per plate against the controls with normalize='controls'"


@dataclass
class Normalization:
    """What :func:`normalize_rows` did: per stratum code, the centre and scale of every kept feature.

    A row of stratum code c was replaced by ``(x - centre[c]) / scale[c]``; ``apply_normalization``
    does the same to rows read again, bit for bit."""

    how: str                                   # "controls" or "plate"
    centre: np.ndarray                         # (strata, kept features) float64 medians
    scale: np.ndarray                          # (strata, kept features) float64 1.4826 * MAD
    keep: np.ndarray                           # (features,) bool: the features kept
    left_out: list = field(default_factory=list)   # (feature, reason) of every feature left out
    warnings: list = field(default_factory=list)


class Normalized(NamedTuple):
    """What :func:`normalize_step` gives the preparation."""

    values: np.ndarray           #: the rows, normalised (only the kept features)
    features: list               #: the kept feature columns
    norm: Normalization | None   #: what was done (None for "none")
    looks_raw: str | None        #: "none": why the features look raw (:func:`raw_look`), or None


def normalize_step(values, codes, strata, is_control, features, normalize, binary) -> Normalized:
    """The normalisation step of every table preparation (``prepare_screen``, ``prepare_profiles``):
    ``normalize`` "controls" or "plate" normalises ``values`` (rows with stratum ``codes``, control
    rows ``is_control``) per stratum (:func:`normalize_rows`); "none" only looks whether the features
    look raw (not for ``binary`` features). Left-out features and warnings are in ``norm``."""
    if normalize == "none":
        return Normalized(values, list(features), None, None if binary else raw_look(values, codes, is_control))
    reference = is_control if normalize == "controls" else np.ones(values.shape[0], dtype=bool)
    values, norm = normalize_rows(values, codes, strata, reference, features, normalize)
    return Normalized(values, [f for f, k in zip(features, norm.keep) if k], norm, None)


def check_normalize(normalize, similarity: str, controls: list, binary: bool) -> str:
    """``normalize`` if valid for this run, else ValueError: one of :data:`NORMALIZE`; not with a binary
    ``similarity``; ``"controls"`` needs control values (``controls`` non-empty)."""
    check_choice(normalize, NORMALIZE, "normalize")
    if normalize != "none" and binary:
        raise ValueError(f"normalize={normalize!r} would turn the 0/1 features of {similarity} similarity into "
                         "z-scores; use normalize='none' with binary features")
    if normalize == "controls" and not controls:
        raise ValueError("normalize='controls' needs control values (control=...); without controls use "
                         "normalize='plate' (every row of the plate is the reference)")
    return normalize


def _middle(s: np.ndarray, k: np.ndarray) -> np.ndarray:
    """Per column j, the median of the first ``k[j]`` values of the sorted column ``s[:, j]`` (numpy's:
    the middle value, or the mean of the two middle values); NaN where ``k[j]`` is 0."""
    cols = np.arange(s.shape[1])
    lo, hi = np.maximum((k - 1) // 2, 0), np.maximum(k // 2, 0)
    a, b = s[lo, cols], s[hi, cols]
    with np.errstate(all="ignore"):
        out = np.where(lo == hi, a, (a + b) / 2)
    return np.where(k > 0, out, np.nan)


def _median_mad(block: np.ndarray) -> tuple:
    """(median, MAD) of each column of ``block`` over its finite values (NaN where none): the values of
    ``np.nanmedian`` and ``np.nanmedian(|x - median|)``, by one sort a column (numpy's own nanmedian
    goes through masked arrays for short columns, 100 times slower)."""
    finite = np.isfinite(block)
    k = finite.sum(axis=0)
    ref = np.where(finite, block, np.nan)  # NaN sorts last
    med = _middle(_sorted_columns(ref), k)
    with np.errstate(all="ignore"):
        dev = np.abs(ref - med)
    return med, _middle(_sorted_columns(dev), k)


def _sorted_columns(a: np.ndarray) -> np.ndarray:
    """``np.sort(a, axis=0)``, sorting contiguous rows of the transpose (a strided sort is 5 times slower)."""
    t = np.ascontiguousarray(a.T)
    t.sort(axis=1)
    return t.T


def _names(values, limit=5) -> str:
    values = [str(v) for v in values]
    return ", ".join(repr(v) for v in values[:limit]) + (f" and {len(values) - limit} more" if len(values) > limit else "")


def normalize_rows(values: np.ndarray, stratum: np.ndarray, strata: np.ndarray, reference: np.ndarray,
                   features: list, how: str) -> tuple:
    """Normalise ``values`` in place per stratum against its ``reference`` rows (see the module).

    Parameters
    ----------
    values : (N, d) float64
        Feature rows (NaN or infinite cells allowed: skipped by the statistics, left as they are).
    stratum : (N,) int64
        Each row's stratum code, 0 .. len(strata) - 1.
    strata : (S,) object
        The stratum names (for messages; ``""`` is the whole table).
    reference : (N,) bool
        The reference rows: the controls (``how="controls"``) or every row (``"plate"``).
    features : list
        The feature names (for messages).

    Returns
    -------
    values, norm : ndarray, Normalization
        The normalised rows with only the kept features (``values`` itself when every feature is kept),
        and what was done.

    Raises
    ------
    ValueError
        A stratum with rows but no reference row; every feature left out; a cell made infinite.
    """
    S, d = len(strata), values.shape[1]
    order = np.argsort(stratum, kind="stable")
    cuts = np.searchsorted(stratum[order], np.arange(S + 1))
    centre = np.full((S, d), np.nan)
    scale = np.full((S, d), np.nan)
    what = "control rows" if how == "controls" else "rows"
    empty = []
    for s in range(S):
        rows = order[cuts[s]:cuts[s + 1]]
        if rows.size == 0:
            continue
        ref = rows[reference[rows]]
        if ref.size == 0:
            empty.append(strata[s])
            continue
        centre[s], scale[s] = _median_mad(values[ref])
    if empty:
        where = ("the table has" if list(strata) == [""] else
                 f"stratum {_names(empty)} has" if len(empty) == 1 else f"strata {_names(empty)} have")
        raise ValueError(f"{where} no {what} to "
                         f"normalise against (normalize={how!r}); add control rows there, leave those rows out, or use "
                         "normalize='plate'")
    scale *= MAD_SCALE
    present = np.zeros(S, dtype=bool)
    present[np.unique(stratum)] = True
    bad = ~(scale[present] > 0)  # MAD 0 or no finite reference value (NaN)
    keep = ~bad.any(axis=0)
    left_out, warnings = [], []
    if not keep.all():
        names = np.asarray(strata, dtype=object)[present]
        for j in np.flatnonzero(~keep).tolist():
            first = int(np.flatnonzero(bad[:, j])[0])
            why = "no finite value" if np.isnan(scale[present][first, j]) else "MAD 0"
            on = f"the table's {what}" if names[first] == "" else f"the {what} of stratum {str(names[first])!r}"
            more = int(bad[:, j].sum()) - 1
            left_out.append((str(features[j]), f"{why} on {on} (normalize={how!r})"
                                               f"{f' and {more} more strata' if more else ''}"))
        gone = [c for c, _ in left_out]
        if keep.sum() == 0:
            raise ValueError(f"no feature can be normalised (normalize={how!r}): each has MAD 0 or no finite value "
                             f"on some stratum's {what} ({_names(gone)}); give each stratum more {what}, or use "
                             "normalize='none'")
        warnings.append(f"{len(gone)} feature column{'s' if len(gone) > 1 else ''} left out: MAD 0 (or no finite "
                        f"value) on some stratum's {what}, so a robust z-score is undefined (normalize={how!r}): "
                        f"{_names(gone)}.")
        values = np.ascontiguousarray(values[:, keep])
        centre, scale = centre[:, keep], scale[:, keep]
    norm = Normalization(how, np.ascontiguousarray(centre), np.ascontiguousarray(scale), keep, left_out, warnings)
    step = max(1, CELLS // max(values.shape[1], 1))
    for a in range(0, values.shape[0], step):  # in place, a chunk of rows at a time: (x - centre) / scale
        part, codes = values[a:a + step], stratum[a:a + step]
        finite = np.isfinite(part)
        part -= norm.centre[codes]
        part /= norm.scale[codes]
        blown = finite & ~np.isfinite(part)
        if not blown.any():
            continue
        r, j = np.argwhere(blown)[0]
        r += a
        kept = [f for f, k in zip(features, keep) if k]
        raise ValueError(f"normalising feature {str(kept[j])!r} (normalize={how!r}) made a finite value infinite "
                         f"(its MAD on stratum {str(strata[stratum[r]])!r} is {norm.scale[stratum[r], j]:.3g}); "
                         "leave that feature out or rescale it")
    return values, norm


def apply_normalization(values: np.ndarray, codes: np.ndarray, norm: Normalization) -> np.ndarray:
    """``values`` (rows of the kept features, stratum codes ``codes``) normalised as :func:`normalize_rows`
    did, bit for bit: ``(x - centre[c]) / scale[c]`` element by element."""
    return (values - norm.centre[codes]) / norm.scale[codes]


def raw_look(values: np.ndarray, stratum: np.ndarray, reference: np.ndarray, limit: int = 2_000):
    """A sentence saying why features given un-normalised look raw, or None.

    Two signs, each on the finite values of the reference rows (the controls, or every row when
    there are none), at most ``limit`` rows (every k-th) and :data:`MAX_STRATA` strata:

    - units: robust spreads s_j = 1.4826 * MAD of the features (positive ones) whose 95th percentile is
      more than :data:`SPREAD_RATIO` (100) times their 5th percentile, so the features with large
      units decide every similarity;
    - plate effects: over the strata with 3 or more reference rows (2 or more such strata), per
      feature the spread (1.4826 * MAD) of the strata's reference medians over the median of the
      strata's own spreads; its median over features above :data:`PLATE_RATIO` (1): the plates differ
      by more than the spread within a plate. With normalised features (``"controls"``) the
      reference medians are 0 and the ratio 0; with no plate effect and 12 controls a plate it is
      about 0.4 (the noise of a median of 12).
    """
    if values.shape[0] < 3 or values.shape[1] == 0:
        return None
    ref = np.flatnonzero(reference) if reference.any() else np.arange(values.shape[0])
    signs = []
    step = max(1, ref.size // max(limit, 1))
    med, mad = _median_mad(values[ref[::step]].astype(np.float64))  # float32 features: the float64 path's numbers
    spread = MAD_SCALE * mad[np.isfinite(mad) & (mad > 0)]
    if spread.size >= 2:
        lo, hi = np.percentile(spread, [5, 95])
        if hi > SPREAD_RATIO * lo:
            signs.append(f"the features' spreads span {hi / lo:,.0f}-fold (5th to 95th percentile), so the "
                         "features with large units decide every similarity")
    codes = stratum[ref]
    counts = np.bincount(codes)
    big = np.flatnonzero(counts >= 3)
    big = big[np.linspace(0, big.size - 1, min(big.size, MAX_STRATA)).astype(np.int64)] if big.size else big
    if big.size >= 2:
        meds, spreads = [], []
        for s in big.tolist():
            rows = ref[codes == s]
            m, a = _median_mad(values[rows[::max(1, rows.size // STRATUM_ROWS)]].astype(np.float64))
            meds.append(m)
            spreads.append(MAD_SCALE * a)
        meds, spreads = np.array(meds), np.array(spreads)
        between = MAD_SCALE * _median_mad(meds)[1]
        within = _median_mad(spreads)[0]
        with np.errstate(all="ignore"):
            ratio = between / within
        ratio = ratio[np.isfinite(ratio)]
        if ratio.size and float(np.median(ratio)) > PLATE_RATIO:
            signs.append(f"the plates' median profiles differ by {float(np.median(ratio)):.1f} times the spread "
                         "within a plate (median over features)")
    if not signs:
        return None
    return f"the features look un-normalised: {'; '.join(signs)}"


def raw_warning(looks_raw) -> list:
    """The run's warning for :func:`raw_look`'s sentence (a list of one), or none."""
    return [f"{looks_raw}; {RAW_HINT} (or 'plate'), or check the table was normalised"] if looks_raw else []
