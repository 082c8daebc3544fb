"""Which columns of a profile table are features, and why every other column is left out.

Default (``features=None``): a column is a feature when it is numeric, its name does not start
with ``Metadata_``, it is not one of CellProfiler's bookkeeping columns, and it is neither the
perturbation nor the stratum column. Every other column is *left out* with a reason, reported in the
text output, the JSON (``columns_left_out``) and on the page.

CellProfiler's bookkeeping columns are numbers that index or place objects, not measurements:
``ImageNumber``, ``ObjectNumber``, ``TableNumber``, ``Number_Object_Number``, ``Location_*``,
``Parent_*`` and ``Image_Metadata_*``, also behind a compartment prefix (``Cells_Location_Center_X``,
``Nuclei_Number_Object_Number``); see :func:`bookkeeping`. When the table holds CellProfiler
measurements (a column starting with ``Cells_``, ``Cytoplasm_`` or ``Nuclei_``), a numeric column
outside the compartments (no ``Cells_``, ``Cytoplasm_``, ``Nuclei_`` or ``Image_`` prefix) is left
out too, as pycytominer's ``infer_cp_features`` infers features by those prefixes (it leaves
``Image_`` out unless asked; apnull keeps image measurements such as ``Image_Count_Cells``). A
regex or a list chooses exactly the columns it names.

A column no run may quietly lose:

- a text column whose non-blank cells are **mostly numbers** (at least half parse as numbers,
  e.g. one ``abc`` or ``null`` among 1,000 values) is an error naming the cells (row numbers,
  0-based, and values; the first few), because leaving it out would change the results without
  a word;
- a text column with fewer numbers than that is left out as ``"text"``;
- a true/false column is left out as ``"true/false values"`` (a feature, read as 1/0, for the binary
  similarities: ``binary=True``).

With a list or a regex (``features=...``) the chosen columns must all be numeric; a text cell is
an error naming the cells the same way. A column of numbers held as text (blank cells allowed) is
numeric either way.

Text cells (``abc``, ``null``, ``n/a``) are not missing values; blank cells are (in a CSV, also
``NA`` and ``NaN``), and ``nan=`` (``--nan``, :mod:`apnull.score.missing`) decides what happens to
them: so the errors say that blanking the cells hands them to that choice.
"""

from __future__ import annotations

import re

import numpy as np
import pandas as pd

from ...limits import check_column, check_regex
from .missing import ROW_WORDS

__all__ = ["select_features", "default_left_out", "cellprofiler_names", "bookkeeping", "MOSTLY_NUMERIC", "CELLS_NAMED",
           "COMPARTMENTS"]

#: Share of non-blank cells that must parse as numbers for a text column to count as "numeric but
#: for a few cells" (an error) rather than a text column (left out).
MOSTLY_NUMERIC = 0.5
#: Offending cells named in an error message.
CELLS_NAMED = 5


#: CellProfiler's compartments: a column starting with one of these (and "_") is a measurement.
COMPARTMENTS = ("Cells", "Cytoplasm", "Nuclei")
#: Compartment prefixes a bookkeeping name may carry (object tables, and the image table).
_PREFIX = r"(?:(?:Cells|Cytoplasm|Nuclei|Image)_)?"
_BOOKKEEPING = re.compile(_PREFIX + r"(?:ImageNumber|ObjectNumber|TableNumber|Number_Object_Number|Location_.*"
                          r"|Parent_.*|Metadata_.*)$")
#: The reasons of the columns left out by the CellProfiler rules.
BOOKKEEPING_REASON = "CellProfiler bookkeeping (image and object numbers, locations, parents), not a measurement"
OUTSIDE_REASON = ("not a CellProfiler measurement: the table has Cells_/Cytoplasm_/Nuclei_ features and this "
                  "name has none of those prefixes (nor Image_), as pycytominer infers features")


def bookkeeping(name) -> bool:
    """Whether ``name`` is a CellProfiler bookkeeping column: ``ImageNumber``, ``ObjectNumber``,
    ``TableNumber``, ``Number_Object_Number``, ``Location_*``, ``Parent_*`` (the parent object's number)
    or a ``Metadata_*`` field, alone or behind a compartment prefix (``Cells_``, ``Cytoplasm_``,
    ``Nuclei_``, ``Image_``). Case-sensitive, as CellProfiler writes them."""
    return _BOOKKEEPING.match(str(name)) is not None


def default_left_out(name, cellprofiler: bool) -> str | None:
    """Why the default choice of features (``features=None``) leaves out the column ``name`` whatever it holds,
    or None: a ``Metadata_`` name, CellProfiler's bookkeeping (:func:`bookkeeping`), or, with ``cellprofiler``
    (a CellProfiler table, :func:`cellprofiler_names`, and a numeric column), a name outside its compartments."""
    if str(name).startswith("Metadata_"):
        return "metadata (name starts with Metadata_)"
    if bookkeeping(name):
        return BOOKKEEPING_REASON
    if cellprofiler and not _measured(name):
        return OUTSIDE_REASON
    return None


def cellprofiler_names(columns) -> bool:
    """Whether ``columns`` hold CellProfiler measurements (a name starting with a compartment)."""
    return any(str(c).startswith(tuple(f"{p}_" for p in COMPARTMENTS)) for c in columns)


def _measured(name) -> bool:
    return str(name).startswith(tuple(f"{p}_" for p in (*COMPARTMENTS, "Image")))


def _is_numeric(dtype) -> bool:
    return pd.api.types.is_numeric_dtype(dtype) and not pd.api.types.is_bool_dtype(dtype)


def _dtype_reader(table: pd.DataFrame):
    """dtype(name) -> the dtype of column ``name``, read from ``table.dtypes`` once (no column is
    taken out of the table). ValueError for a name the table holds more than once."""
    dtypes = dict(zip(table.columns, table.dtypes))
    repeated = set(table.columns[table.columns.duplicated()]) if not table.columns.is_unique else set()

    def dtype(name):
        if name in repeated:
            raise ValueError(f"column {str(name)!r} appears more than once in the table; give each column "
                             "its own name")
        return dtypes[name]
    return dtype


def _not_numbers(col: pd.Series) -> np.ndarray:
    """Positions of the non-blank cells of ``col`` that are not numbers."""
    parsed = pd.to_numeric(col, errors="coerce")
    return np.flatnonzero((parsed.isna() & col.notna()).to_numpy())


def _cells_text(col: pd.Series, bad: np.ndarray) -> str:
    shown = ", ".join(f"{str(col.iat[r])[:30]!r} in data row {int(r) + 1:,}" for r in bad[:CELLS_NAMED])
    more = f" and {bad.size - CELLS_NAMED:,} more" if bad.size > CELLS_NAMED else ""
    return shown + more


#: What blank cells become, for the errors naming text cells.
BLANK_CELLS = ("blank cells are missing values, left out by nan='drop-rows' or nan='drop-features' (--nan on "
               "the command line)")


def _numeric_but_cells(name, col: pd.Series, bad: np.ndarray, how: str) -> ValueError:
    return ValueError(
        f"feature column {str(name)!r} is not numeric in {bad.size:,} cell(s): {_cells_text(col, bad)} "
        f"({ROW_WORDS}); {how}; {BLANK_CELLS}")


def select_features(table: pd.DataFrame, features, exclude, binary=False) -> tuple[list, list]:
    """The feature columns and the columns left out.

    Parameters
    ----------
    table : DataFrame
    features : None, str (regex searched in the names) or list of column names
    exclude : set
        Columns that are labels of the run (perturbation, stratum): never features, not reported.
    binary : bool
        Binary similarities (Jaccard, Hamming): true/false columns are features too (read as 1/0).

    Returns
    -------
    (features, left_out)
        ``features``: the chosen column names in table order; ``left_out``: list of
        (column name as text, reason) for every other column not in ``exclude``.

    Raises
    ------
    ValueError
        No feature column; a regex matching nothing; a chosen column with text cells; with the
        default choice, a column numeric but for a few cells (cells named, see the module text).
    """
    cols = [c for c in table.columns if c not in exclude]
    dtype = _dtype_reader(table)
    left_out = []
    if features is None:
        chosen = []
        cellprofiler = cellprofiler_names(cols)
        for c in cols:
            why = default_left_out(c, cellprofiler and _is_numeric(dtype(c)))
            if why is not None:
                left_out.append((str(c), why))
            elif pd.api.types.is_bool_dtype(dtype(c)):
                if binary:
                    chosen.append(c)
                else:
                    left_out.append((str(c), "true/false values"))
            elif _is_numeric(dtype(c)):
                chosen.append(c)
            else:
                col = table[c]
                bad = _not_numbers(col)
                filled = int(col.notna().sum())
                if filled and bad.size == 0:  # numbers held as text (e.g. with None for blanks): numeric
                    chosen.append(c)
                    continue
                if filled and bad.size < filled and (filled - bad.size) >= MOSTLY_NUMERIC * filled:
                    raise _numeric_but_cells(c, col, bad, "fix or blank those cells, or choose the feature "
                                             "columns with features= (a list or a regex) to leave it out")
                left_out.append((str(c), "text"))
        if not chosen:
            raise ValueError("no numeric feature columns found (feature columns are the numeric columns "
                             "whose names do not start with 'Metadata_', CellProfiler's bookkeeping left out); "
                             "pass features= a list or a regex")
        return chosen, left_out
    if isinstance(features, str):
        pattern = check_regex(features, "features regex")
        chosen = [c for c in cols if pattern.search(str(c))]
        if not chosen:
            raise ValueError(f"features regex {features!r} matches no column; the columns are "
                             f"{', '.join(repr(str(c)) for c in cols[:8])}{' ...' if len(cols) > 8 else ''}")
        why = f"not matched by the features regex {features!r}"
    else:
        chosen = [check_column(table, c, "feature") for c in list(features)]
        if not chosen:
            raise ValueError("features is an empty list; give at least 1 feature column")
        why = "not in the features list"
    for c in chosen:
        if binary and pd.api.types.is_bool_dtype(dtype(c)):
            continue
        if not _is_numeric(dtype(c)):
            col = table[c]
            bad = _not_numbers(col) if not pd.api.types.is_bool_dtype(col) else np.arange(len(col))
            if bad.size == 0:  # text that parses as numbers throughout: a numeric column written as text
                continue
            raise _numeric_but_cells(c, col, bad, "fix those cells or leave the column out of features=")
    picked = set(chosen)
    left_out = [(str(c), why) for c in cols if c not in picked]
    return chosen, left_out
