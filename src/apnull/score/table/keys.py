"""Several columns make a perturbation (e.g. compound and dose): one key column for the scoring.

``score_profiles(perturbation=["Metadata_compound", "Metadata_dose"], control="DMSO")`` scores each
distinct (compound, dose) pair as one perturbation. A row is a control when its value in the *first*
perturbation column is one of the control values (compared as text), whatever its other columns
hold; any other row with an empty value in one of the columns is ignored like a row with an empty
perturbation. The scoring reads one text key per row, the values joined by :data:`KEY_SEP`; the
result tables show the original columns again, one per column, in the order given, each under its
:func:`apnull.score._outputs.output_name` (a column called ``m`` or ``null`` comes back as ``m_input``).
"""

from __future__ import annotations

from typing import Callable, NamedTuple

import numpy as np
import pandas as pd

from ...limits import check_column
from .names import RESERVED, output_name

__all__ = ["KEY_SEP", "Combined", "combine_columns", "key_of"]

#: Separator of the values in a perturbation key made of several columns.
KEY_SEP = " | "


class Combined(NamedTuple):
    """The table the scoring reads, its perturbation column, and how to show results again."""

    table: pd.DataFrame        #: the input table, or a copy with the key column instead of the columns
    column: str                #: the perturbation column the scoring reads
    columns: list              #: the perturbation columns as given (one or several)
    expand: Callable           #: result table (with ``column``) -> table with ``names`` instead
    names: list                #: the perturbation columns' names in the result tables (``output_name``)


def key_of(name) -> str:
    """The key of a perturbation given as a tuple of values (several columns), or ``str(name)``."""
    if isinstance(name, tuple):
        return KEY_SEP.join(str(v) for v in name)
    return str(name)


def _identity(df: pd.DataFrame) -> pd.DataFrame:
    return df


def combine_columns(table, perturbation, control, stratum=None) -> Combined:
    """One perturbation column for the scoring, from one or several columns.

    Parameters
    ----------
    table : DataFrame
    perturbation : str or list of str
        A column, or columns whose joint value makes a perturbation.
    control : str or list of str
        Control value(s), compared with the first column.
    stratum : str, optional
        Must not be one of the perturbation columns.

    Raises
    ------
    ValueError
        An empty list, a repeated column, a missing column (close names suggested), or the stratum
        among the perturbation columns.
    """
    if isinstance(perturbation, (list, tuple)):
        cols = list(perturbation)
        if not cols:
            raise ValueError("perturbation is an empty list; give at least one column")
        if len(set(map(str, cols))) < len(cols):
            raise ValueError(f"perturbation lists a column twice: {cols!r}")
        if len(cols) == 1:
            perturbation = cols[0]
    else:
        cols = [perturbation]
    if not isinstance(table, pd.DataFrame) or len(cols) == 1:
        return Combined(table, perturbation, cols, _identity, [output_name(perturbation)])
    cols = [check_column(table, c, "perturbation") for c in cols]
    if stratum is not None and stratum in cols:
        raise ValueError(f"the stratum column {stratum!r} is also a perturbation column; give it once")
    controls = {control} if isinstance(control, str) else {str(c) for c in (control or [])}
    first = table[cols[0]]
    is_ctl = first.notna().to_numpy() & np.isin(first.astype(str).to_numpy(), list(controls))
    empty = table[cols].isna().any(axis=1).to_numpy() & ~is_ctl
    text = [[str(v) for v in table[c].tolist()] for c in cols]
    keys = np.array([KEY_SEP.join(parts) for parts in zip(*text)], dtype=object)
    keys[is_ctl] = np.array(text[0], dtype=object)[is_ctl]
    keys[empty] = None
    name = "+".join(cols)
    while name in table.columns:
        name += "_key"
    values = {}
    for i in np.flatnonzero(~is_ctl & ~empty):
        values.setdefault(keys[i], i)
    originals = {k: tuple(table[c].iat[i] for c in cols) for k, i in values.items()}
    work = table.drop(columns=cols)
    work[name] = keys
    names = []
    for c in cols:  # free of the tables' own names, of the other columns and of the names given so far
        names.append(output_name(c, RESERVED | {str(o) for o in cols if o is not c} | set(names)))

    def expand(df: pd.DataFrame) -> pd.DataFrame:
        if name not in df.columns:
            return df
        at = list(df.columns).index(name)
        out = df.drop(columns=[name])
        for j, c in enumerate(names):
            out.insert(at + j, c, [originals.get(k, (k,) * len(cols))[j] for k in df[name]])
        return out

    return Combined(work, name, cols, expand, names)
