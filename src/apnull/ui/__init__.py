"""Streamlit helpers for the dashboard pages: bound widgets, guarded errors, cached computations.

This is the only part of the library that imports streamlit.
"""

from .common import chart_slots, charts_now, download_csv, guard, intro, p_formats, show_figure, show_table, wait_for
from .widgets import bound_choice, bound_float, bound_int, bound_select, bound_text, bound_toggle

__all__ = ["bound_choice", "bound_float", "bound_int", "bound_select", "bound_text", "bound_toggle", "chart_slots", "charts_now", "download_csv", "p_formats",
           "guard", "intro", "show_figure", "show_table", "wait_for"]
