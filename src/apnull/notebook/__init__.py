"""apnull in a notebook: a result's figures, drawn as the dashboard draws them.

``res.plot()`` and ``res.plot_null(name)`` of :class:`apnull.score.ScoreResult`,
:class:`~apnull.score.ConsistencyResult` and :class:`~apnull.score.CompareResult` call
:func:`figure_of` and :func:`null_figure_of`; the dashboard's pages build the same figures with the
functions of :mod:`.figures`, so a page and a notebook draw one figure. No streamlit here.
"""

from .figures import figure_of, null_figure_of

__all__ = ["figure_of", "null_figure_of"]
