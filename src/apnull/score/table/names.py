"""The names and words the tables and the messages share, at the bottom of the scoring wing (the
table's preparation, the engine's progress and the results read them).

- :data:`RESERVED` and :func:`output_name`: the output tables' own column names, and an input column's
  name made free of them (``<name>_input``; :mod:`..results.outputs` says why);
- :data:`TEXT`: the dtype pandas infers for a column of Python strings;
- :func:`count_text`: a count with its noun ("1 query", "3 queries");
- :func:`tell_stage`: a progress reporter told which units the next counts are of (the reading, the
  preparation and the engine's stages tell it; :mod:`..engine.clock` re-exports it).
"""

from __future__ import annotations

import pandas as pd

__all__ = ["RESERVED", "TEXT", "output_name", "count_text", "staged", "tell_stage"]

#: Column names the output tables use for their own values (both tables, and those other scoring
#: options may add); an input column of one of these names is carried as ``<name>_input``.
RESERVED = frozenset({"row", "m", "n", "ap", "precision_at_r", "p_value", "q_value", "n_replicates", "mAP",
                      "null", "significant", "mAP_normalized", "reason", "stratum", "permutations",
                      "p_value_bound"})

#: The dtype pandas infers for a column of Python strings.
TEXT = pd.Series(["text"]).dtype


def output_name(name, taken=RESERVED) -> str:
    """``name`` as text, with ``_input`` appended until it is not in ``taken``."""
    out = str(name)
    while out in taken:
        out += "_input"
    return out


def count_text(n: int, label: str) -> str:
    """"1 label", "3 labels", "1 query", "2 queries": a count with its noun (``label``, the plural, in
    -s or -ies)."""
    if n == 1 and label.endswith("ies"):
        label = label[:-3] + "y"
    elif n == 1 and label.endswith("s"):
        label = label[:-1]
    return f"{n:,} {label}"


def staged(progress):
    """``progress`` when it has the ``stage`` hook (it can tell what a count counts), else None: a plain
    ``callable(done, total)`` is told the perturbations only, as ``score_profiles`` promises."""
    return progress if hasattr(progress, "stage") else None


def tell_stage(progress, units: str, scope: str = "") -> None:
    """Tell ``progress`` (when it has the ``stage`` hook) that the run starts counting ``units``."""
    if hasattr(progress, "stage"):
        progress.stage(units, scope)
