"""Shared AppTest helpers for the page tests: open a page through dashboard.py, set widgets, read the output.

Import as ``from apptest import ...`` (pytest puts tests/ on sys.path). A page runs through dashboard.py
(``st.navigation``), so the test sees what a user sees: page-local URL parameters (each page's keys carry
its prefix, see ``apnull.ui.state.PAGE_PARAMS`` and docs/PAGES.md), foreign parameters dropped.
"""

from __future__ import annotations

from pathlib import Path

from streamlit.testing.v1 import AppTest

from apnull.ui.common import LATER_CHARTS_CAPTION
from apnull.ui.state import PAGE_PARAMS
from plotly_json import decode, figures, trace  # noqa: F401  (re-exported)

ROOT = Path(__file__).resolve().parents[1]
APP = str(ROOT / "dashboard.py")
#: url path -> the widget-key prefix of the page (the score page has none)
PREFIX = {"densities": "dn_", "quantiles": "qt_", "lookup": "lk_", "binning": "bn_", "hypergeometric": "hg_",
          "ranking": "rk_", "sampled": "sm_", "score": "sc_", "compare": "cp_"}
PAGES = [p for p in PAGE_PARAMS if p]  # every page but home
WIDGET_KINDS = ("number_input", "radio", "toggle", "text_input", "selectbox", "checkbox", "slider")


def page_file(page: str) -> str:
    return f"app_pages/{page}.py"


def app(timeout: float = 180) -> AppTest:
    """app.py, not yet run."""
    return AppTest.from_file(APP, default_timeout=timeout)


def open_page(page: str, query: dict | None = None, timeout: float = 180, at: AppTest | None = None,
              first_chart_alone: bool = False) -> AppTest:
    """Run ``page`` through dashboard.py, the URL holding ``query`` (keys as in the URL), like a pasted link.

    A session's first chart comes alone (``apnull.ui.charts_now``) and the browser asks for the rest once
    it is drawn: that ask is made here too, unless ``first_chart_alone`` (the run as the server sent it)."""
    if at is None:
        at = app(timeout)
        at.run()
    at.switch_page(page_file(page))
    at.query_params.clear()
    at.query_params.update(query or {})
    at.run()
    if not first_chart_alone and any(c.value == LATER_CHARTS_CAPTION for c in at.caption):
        at.run()
    return at


def find_widget(at: AppTest, key: str):
    """The widget with ``key`` (any input kind), or None when the page does not show it."""
    for kind in WIDGET_KINDS:
        try:
            return getattr(at, kind)(key=key)
        except KeyError:
            continue
    return None


def set_widget(at: AppTest, key: str, value) -> None:
    """Give the widget ``key`` the value ``value`` (text inputs are typed)."""
    widget = find_widget(at, key)
    if widget is None:
        raise KeyError(f"no widget with key {key!r} on the page")
    if type(widget).__name__ == "TextInput":
        widget.input(value)
    else:
        widget.set_value(value)


def set_widgets(at: AppTest, widgets: dict, prefix: str = "") -> AppTest:
    """Set widgets in order and run; a widget that only appears after an earlier change (e.g. lookup's
    alpha after level = alpha, sampled's reps after simulate) is set after an intermediate run."""
    pending = False
    for key, value in widgets.items():
        if find_widget(at, prefix + key) is None and pending:
            at.run()
            pending = False
        set_widget(at, prefix + key, value)
        pending = True
    if pending:
        at.run()
    return at


def run_page(page: str, timeout: float = 180, first_chart_alone: bool = False, **widgets) -> AppTest:
    """Open ``page`` through dashboard.py with default inputs (:func:`open_page`), then set ``widgets`` (keys
    without the page prefix)."""
    at = open_page(page, timeout=timeout, first_chart_alone=first_chart_alone)
    return set_widgets(at, widgets, PREFIX[page])


def metrics(at: AppTest) -> dict[str, str]:
    """The st.metric cards: label -> shown value."""
    return {m.label: m.value for m in at.metric}


def errors(at: AppTest) -> list[str]:
    return [e.value for e in at.error]


def exceptions(at: AppTest) -> list[str]:
    return [e.value for e in at.exception]


def assert_clean(at: AppTest) -> None:
    """No exception and no st.error on the page."""
    assert not at.exception, exceptions(at)
    assert not at.error, errors(at)


def current_params(at: AppTest) -> dict:
    """The URL parameters after the last run."""
    return dict(at.query_params)
