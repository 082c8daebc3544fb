"""A result in a notebook: shown as HTML, drawn as the dashboard draws it.

:class:`Shown` is the base of :class:`apnull.score.ScoreResult`, :class:`~apnull.score.ConsistencyResult`
and :class:`~apnull.score.CompareResult`. Jupyter shows a result by its ``_repr_html_``: the summary line
the command line prints (:func:`.summary.activity_line`, :func:`.summary.consistency_line`,
:func:`apnull.score.summary_line` with :func:`.summary.retrieved_line`: one home for each), the
settings that matter, the warnings, and the top rows of its main table as pandas renders a frame.

``plot()`` and ``plot_null(name)`` return the dashboard's own figures (plotly), built by
:mod:`apnull.notebook.figures` from :mod:`apnull.views` and :mod:`apnull.plots`, the same calls the
pages make. That module is imported only when a figure is asked for: the one import from the scoring
core up to the figures (named in docs/ARCHITECTURE.md and ``tests/test_architecture.py``), inside these
methods, so ``import apnull.score`` never loads plotly.
"""

from __future__ import annotations

import html

import pandas as pd

__all__ = ["Shown", "result_html", "TOP_ROWS"]

#: Rows of the main table a result shows in a notebook (the whole table is its attribute).
TOP_ROWS = 10


def _value(v) -> str:
    if isinstance(v, (list, tuple)):
        return ", ".join(str(x) for x in v) if v else "none"
    return "none" if v is None else str(v)


def result_html(title: str, lines: list, settings: dict, table: pd.DataFrame, table_name: str,
                warnings=()) -> str:
    """The HTML of a result: ``title``, the summary ``lines``, ``settings`` as one line of name=value, the
    ``warnings``, then the top :data:`TOP_ROWS` rows of ``table`` (pandas' ``to_html(notebook=True)``,
    the frame's own notebook rendering) with how many rows it has in all. Every text is escaped."""
    esc = html.escape
    parts = [f"<div class='apnull-result'><b>{esc(title)}</b>"]
    parts += [f"<div>{esc(line)}</div>" for line in lines]
    shown = ", ".join(f"{esc(str(k))}={esc(_value(v))}" for k, v in settings.items())
    parts.append(f"<div style='color:#555'>settings: {shown}</div>")
    parts += [f"<div style='color:#a15c00'>warning: {esc(str(w))}</div>" for w in warnings]
    more = f" (the first {TOP_ROWS} of {len(table):,}; all in <code>.{esc(table_name)}</code>)" \
        if len(table) > TOP_ROWS else f" (<code>.{esc(table_name)}</code>)"
    parts.append(f"<div>{len(table):,} rows{more}</div>")
    parts.append(table.head(TOP_ROWS).to_html(notebook=True, max_cols=20))
    parts.append("</div>")
    return "\n".join(parts)


class Shown:
    """What a result shows in a notebook; each result class says what its parts are: ``_title``,
    ``summary_lines()``, ``_settings_shown`` (the names of the settings that matter) and ``_table_name``
    (its main table's attribute)."""

    _title = "result"
    _table_name = "groups"
    _settings_shown: tuple = ()

    def summary_lines(self) -> list:
        """The summary the command line prints for this result, line by line."""
        raise NotImplementedError

    def shown_settings(self) -> dict:
        """The settings that matter for reading the result (all of them are in ``.settings``)."""
        return {k: self.settings[k] for k in self._settings_shown if k in self.settings}

    def _repr_html_(self) -> str:
        return result_html(self._title, self.summary_lines(), self.shown_settings(),
                           getattr(self, self._table_name), self._table_name, self.warnings)

    @property
    def held_bytes(self) -> int:
        """Bytes this result holds in memory (what a cache of results counts against its bound): its tables
        (pandas' deep memory use), the results it holds (a comparison's two sides), and any feature rows
        its prepared screen still keeps."""
        total = 0
        for value in vars(self).values():
            if isinstance(value, pd.DataFrame):
                total += int(value.memory_usage(deep=True).sum())
            elif isinstance(value, Shown):
                total += value.held_bytes
        rows = getattr(vars(self).get("_screen"), "X", None)
        return total + int(getattr(rows, "nbytes", 0) or 0)

    def plot(self, **options):
        """The dashboard's figure of this result (a ``plotly.graph_objects.Figure``; see
        :mod:`apnull.notebook.figures` for what each result draws and the ``options``)."""
        from ...notebook.figures import figure_of  # the one arrow up: see the module docstring

        return figure_of(self, **options)


class ShownNull(Shown):
    """A result whose units (perturbations, labels) have a permutation null to draw."""

    def plot_null(self, name, bins: int = 40):
        """The permutation null of ``name``'s mAP (a histogram of :meth:`null_maps`) with its observed mAP,
        as the dashboard draws it: a ``plotly.graph_objects.Figure``."""
        from ...notebook.figures import null_figure_of  # the one arrow up: see the module docstring

        return null_figure_of(self, name, bins=bins)
