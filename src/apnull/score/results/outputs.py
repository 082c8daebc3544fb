"""The output tables of ``score_profiles`` as a scientist joins them back to the screen.

- **Names never collide.** The tables' own columns (:data:`RESERVED`) keep their names; an input
  column carried into a table under a clashing name (a perturbation column called ``null``,
  ``mAP``, ``ap``, ``m`` or ``row``) is renamed ``<name>_input`` (``_input`` repeated until the
  name is free). ``settings["perturbation_column"]`` names the perturbation column of the tables.
- **Rows join back.** ``row`` is the 0-based position of the row among the data rows of the input
  (the first row under the header is 0; a spreadsheet shows it as line ``row + 2``). The query
  table carries the stratum and the metadata of each row: every input column that is not a
  feature and is text or named ``Metadata_*``.
- **p-values are numbers.** :func:`p_text` prints them in ``%.3g`` style (``0.001``, ``1e-05``);
  a permutation p-value is at least 1/(1 + B) and never 0.
- **A budget's cut is said.** :func:`budget_report` names the decisions a time budget left open and
  the per-query p-values that are bounds because their far tails were not counted.
- **The floor is said.** :func:`floor_warning` warns when perturbations sit at the smallest
  p-value B allows and says what a larger B costs.
- **The draws are said.** :func:`tell_spent` gives a run's progress reporter the draws it spent (a :class:`Spent`).
"""

from __future__ import annotations

from typing import NamedTuple

import numpy as np
import pandas as pd

from ..nulls.conditional import QUERY_NULLS
from ..table.names import RESERVED, TEXT, output_name

__all__ = ["RESERVED", "ROW_NOTE", "TEXT", "output_name", "carried_columns", "carry_metadata", "p_text", "Spent", "tell_spent",
           "floor_warning", "budget_report"]

#: What ``row`` means, for the JSON settings, the text output and the page.
ROW_NOTE = ("row: 0-based position among the input's data rows (first row under the header = 0; "
            "spreadsheet line = row + 2)")


def carried_columns(table: pd.DataFrame, features, perturbation, stratum) -> list:
    """Input columns carried into the query table: the stratum, then every non-feature column that is
    text (not numeric) or named ``Metadata_*``, in table order (the perturbation column, or the list of
    perturbation columns, is there already)."""
    feats = {str(f) for f in features}
    labels = {str(c) for c in ([perturbation] if isinstance(perturbation, str) else list(perturbation))}
    if stratum is not None:
        labels.add(str(stratum))
    out = [stratum] if stratum is not None else []
    for c in table.columns:
        if str(c) in labels or str(c) in feats:
            continue
        col = table[c]
        numeric = pd.api.types.is_numeric_dtype(col) and not pd.api.types.is_bool_dtype(col)
        if str(c).startswith("Metadata_") or not numeric:
            out.append(c)
    return out


def carry_metadata(queries: pd.DataFrame, table: pd.DataFrame, columns) -> pd.DataFrame:
    """``queries`` with the values of ``columns`` at each query's input ``row`` appended, under names
    free in ``queries`` (see :func:`output_name`)."""
    if not columns:
        return queries
    rows = queries["row"].to_numpy()
    taken = set(RESERVED) | {str(c) for c in queries.columns}
    extra = {}
    for c in columns:
        name = output_name(c, taken)
        taken.add(name)
        col = table[c]
        # a text column of the default dtype is taken as it is (what its values as objects would be
        # inferred to), without a Python string per query
        extra[name] = col.array.take(rows) if col.dtype == TEXT else col.iloc[rows].to_numpy()
    return pd.concat([queries, pd.DataFrame(extra, index=queries.index)], axis=1)


def p_text(p: float) -> str:
    """A p-value as a number in ``%.3g`` style (``0.001``, ``1e-05``); "nan" if missing; a p-value that
    underflowed to 0 is printed as below the smallest positive double."""
    if p != p:
        return "nan"
    if p == 0:
        return f"<{np.finfo(float).tiny:.3g}"
    return f"{p:.3g}"


def floor_warning(p_values, B, seconds: float | None = None, fraction: float = 0.1, minimum: int = 2) -> str | None:
    """A warning when at least ``minimum`` perturbations and ``fraction`` of them sit at the smallest
    p-value of B permutations, 1/(1 + B); None otherwise or when B is not a number.

    Their true p-value may be smaller; B ten times larger lowers the floor ten times and costs about
    ten times the permutation time (``seconds``, this run's, when given).
    """
    if not isinstance(B, (int, np.integer)) or B <= 0:
        return None
    p = np.asarray(p_values, dtype=float)
    floor = 1.0 / (1 + B)
    at = int(np.sum(p <= floor * (1 + 1e-9)))
    if at < minimum or at < fraction * p.size:
        return None
    bigger = 10 * (B + 1) - 1
    cost = f" (this run: {seconds:.1f} s, so about {10 * seconds:.0f} s)" if seconds is not None else ""
    return (f"{at:,} of {p.size:,} perturbations sit at the smallest p-value B = {B:,} permutations allow, "
            f"{p_text(floor)}; their true p-values may be smaller and their q-values are limited by it. "
            f"B = {bigger:,} lowers the floor to {p_text(1 / (1 + bigger))} and takes about 10 times as long{cost}.")


def budget_report(scored) -> tuple:
    """(warnings, outcome) of what a time budget cut short, from :func:`.tables.pvalues`'s ``Scored``
    (before the query table takes its arrays): the perturbations and queries whose BH decision stayed
    open (``decision_open``), and the exact-law queries whose far tail was not counted (their p-value
    is the law's upper end: ``p_value_bound``). ``outcome`` counts them for the settings:
    {"open_perturbations", "open_queries", "tail_bounds"}; the warnings are empty when nothing was cut.
    """
    q = scored.queries
    tails = int((q["bound"] & ~q["conditional"]).sum())
    outcome = {"open_perturbations": int(scored.open.sum()), "open_queries": int(q["open"].sum()),
               "tail_bounds": tails}
    out = []
    if scored.open.any():
        names = [str(scored.names[i]) for i in np.flatnonzero(scored.open)]
        out.append(f"the time budget stopped the adaptive permutations before the BH decision of "
                   f"{len(names):,} perturbation(s) was settled ({', '.join(names[:5])}"
                   f"{' ...' if len(names) > 5 else ''}): their p-values are valid but may sit on either side "
                   "of the FDR line; give a larger budget to settle them")
    if tails:
        out.append(f"the time budget passed before the far tails of {tails:,} query p-value(s) were counted: "
                   "each is its exact law's guaranteed upper end (p_value_bound), "
                   f"{outcome['open_queries']:,} query decision(s) left open (decision_open); give a larger "
                   "budget to count them")
    elif outcome["open_queries"]:
        out.append(f"the time budget stopped the conditional null before the BH decision of "
                   f"{outcome['open_queries']:,} query p-value(s) was settled (decision_open in the queries table); "
                   "give a larger budget to settle them")
    return out, outcome


class Spent(NamedTuple):
    """The draws a finished run spent, as its tables count them (:meth:`of`); what
    :func:`..engine.progress.spent_line` prints."""

    map_draws: int      #: the perturbations' mAP draws (``permutations`` of the groups table)
    perturbations: int  #: rows of the groups table
    query_draws: int    #: the queries' draws: a counted query's draws before its law was counted, not its choices
    queries: int        #: rows of the queries table
    counted: int        #: queries whose conditional law was counted over every choice, not drawn

    @classmethod
    def of(cls, groups: pd.DataFrame, queries: pd.DataFrame, before: int = 0) -> Spent:
        """The draws of a run's tables: a query whose conditional law was counted over every choice drew
        ``before`` in all before it was counted (its ``permutations`` are the choices counted, not draws:
        :attr:`.nulls.conditional.QueryP.before`)."""
        counted = (queries["null"] == QUERY_NULLS["counted"]).to_numpy()
        return cls(int(groups["permutations"].sum()), len(groups),
                   int(queries["permutations"].to_numpy()[~counted].sum()) + int(before), len(queries),
                   int(counted.sum()))


def tell_spent(progress, groups, queries, before: int = 0) -> None:
    """Tell ``progress`` (when it has ``spent``, :mod:`..engine.progress`) the draws the run spent, from its
    tables and the draws its counted queries made before their laws were counted (:meth:`Spent.of`)."""
    if hasattr(progress, "spent"):
        progress.spent(Spent.of(groups, queries, before))
