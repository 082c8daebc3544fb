"""Label columns as text, and the control values matched against them: one home for every workflow.

Every scorer of a profile table (``score_profiles``, ``score_consistency``) reads its perturbation
column (and a stratum column) and its ``control`` values here, with the same words:

- :func:`control_values`: ``control=`` as a list of texts. A value is compared with the column's
  text as written (``"0"`` finds the control ``0``, ``"01"`` does not); a number or another type
  is a TypeError, an empty text a ValueError;
- :func:`text_codes`: a column as codes into its distinct texts (missing -> -1), ``1``, ``1.0`` and
  ``01`` three texts when the column holds them as text (:func:`.io.read_table` with ``labels=``);
- :func:`label_rows`: the rows with a perturbation (and stratum) value, their codes and texts, and a
  warning naming the rows with an empty value (left out);
- :func:`match_controls`: the control rows. No row equal to any control value is the error "no
  control rows: ..." with the close values seen (a typo such as ``dmso`` for ``DMSO``); a control
  value that matches no row while another does is named in a warning.
"""

from __future__ import annotations

import difflib
from typing import NamedTuple

import numpy as np
import pandas as pd

from .memory import release_arrow
from .missing import rows_text

__all__ = ["LabelRows", "control_values", "text_codes", "label_rows", "match_controls", "close_values"]

#: Containers accepted as several control values (or several names).
LISTS = (list, tuple, set, frozenset, np.ndarray, pd.Series, pd.Index)


class LabelRows(NamedTuple):
    """What :func:`label_rows` read from a perturbation column."""

    keep: np.ndarray      #: rows with a perturbation (and stratum) value
    code: np.ndarray      #: (rows,) int64 code of each row's text, -1 where missing
    text: np.ndarray      #: (codes,) object: the distinct texts
    warnings: list        #: the sentence naming the rows left out, if any


def control_values(control, required: bool) -> list:
    """``control`` as a list of texts: a text, a list of texts, or None (``[]``; a ValueError when
    ``required``).

    Raises
    ------
    TypeError
        ``control`` (or one of its values) is not text, e.g. ``control=5``: a value is compared with
        the column as written, so the control ``0`` is ``"0"``.
    ValueError
        No value (None or an empty list when ``required``), or an empty text.
    """
    must = "control must be a value (or list of values) of the perturbation column, e.g. 'DMSO'"
    if control is None:
        if required:
            raise ValueError(must)
        return []
    if isinstance(control, str):
        values = [control]
    elif isinstance(control, LISTS):
        values = list(control)
    else:
        raise TypeError(f"control must be text (a value of the perturbation column as written, e.g. 'DMSO' or "
                        f"'0') or a list of texts, got {type(control).__name__} {repr(control)[:40]}")
    for v in values:
        if not isinstance(v, str):
            raise TypeError(f"control values must be text as written in the perturbation column (e.g. '0', not "
                            f"0), got {type(v).__name__} {repr(v)[:40]}")
    if (required and not values) or any(not v for v in values):
        raise ValueError(must)
    return values


def text_codes(column: pd.Series) -> tuple:
    """(codes, texts): each value of ``column`` as text, ``texts[codes[i]] == str`` of value i (as
    ``column.astype(str)`` gives it), codes -1 where the value is missing. Integer columns are
    factorized as numbers (distinct integers have distinct texts), so no text is made per row."""
    if pd.api.types.is_integer_dtype(column.dtype) and not isinstance(column.dtype, pd.CategoricalDtype):
        codes, uniques = pd.factorize(column)
        texts = pd.Index(uniques).astype(str)
    else:
        codes, texts = pd.factorize(column.astype(str))
    out = np.empty(len(texts), dtype=object)
    out[:] = [str(t) for t in texts]
    return np.asarray(codes, dtype=np.int64), out


#: The words of the warning naming rows without a perturbation (or stratum) value.
EMPTY_LABELS = "with an empty perturbation"


def label_rows(table: pd.DataFrame, pcol: str, scol: str | None = None) -> LabelRows:
    """The rows of ``table`` with a value in the perturbation column ``pcol`` (and the stratum column
    ``scol``), the codes and texts of ``pcol``, and the warning naming the other rows (0-based)."""
    labels = table[pcol]
    keep = labels.notna().to_numpy().copy()
    if scol is not None:
        keep &= table[scol].notna().to_numpy()
    warnings = []
    if not keep.all():
        k = int((~keep).sum())
        warnings.append(f"{k} row{'s' if k > 1 else ''} {EMPTY_LABELS}{' or stratum' if scol else ''} "
                        f"value {'were' if k > 1 else 'was'} ignored ("
                        f"{rows_text(np.flatnonzero(~keep))}).")
    code, text = text_codes(labels)
    release_arrow()  # the hashing of a text column's values, before the feature matrix is made
    keep &= code >= 0
    return LabelRows(keep, code, text, warnings)


def close_values(wanted: str, seen) -> str:
    """"did you mean ...?" with the values of ``seen`` close to ``wanted``, else a few values seen."""
    seen = [str(v) for v in seen]
    close = difflib.get_close_matches(wanted, seen, n=3, cutoff=0.5)
    if not close:  # a change of case only ('dmso' for 'DMSO')
        lowered = {v.lower(): v for v in seen}
        close = [lowered[c] for c in difflib.get_close_matches(wanted.lower(), list(lowered), n=3, cutoff=0.5)]
    if close:
        return f"did you mean {', '.join(repr(c) for c in close)}?"
    return f"values seen: {', '.join(repr(v) for v in seen[:6])}{' ...' if len(seen) > 6 else ''}"


def match_controls(rows: LabelRows, controls: list, pcol: str, note: str = "") -> tuple:
    """(control row mask, warnings) of the control values ``controls`` in the rows ``rows.keep`` (no
    control values: no control row, no warning).

    Raises
    ------
    ValueError
        No kept row equals any of ``controls`` ("no control rows", with the close values seen, then
        ``note``).
    """
    if not controls:
        return np.zeros(rows.keep.size, dtype=bool), []
    is_ctl = np.isin(rows.text, controls)[rows.code] & rows.keep
    seen = rows.text[pd.unique(rows.code[rows.keep])]
    if not is_ctl.any():
        raise ValueError(f"no control rows: column {pcol!r} never equals {' or '.join(map(repr, controls))}; "
                         f"{close_values(controls[0], seen)}{note}")
    found = set(rows.text[np.unique(rows.code[is_ctl])].tolist())
    missing = [c for c in controls if c not in found]
    warnings = []
    if missing:
        warnings.append(f"control value{'s' if len(missing) > 1 else ''} {', '.join(map(repr, missing))} "
                        f"match{'' if len(missing) > 1 else 'es'} no row of column {pcol!r} "
                        f"({close_values(missing[0], [v for v in seen if v not in found])}); the controls are "
                        f"the rows equal to {', '.join(repr(c) for c in controls if c in found)}.")
    return is_ctl, warnings
