"""Page furniture shared by every page: the intro, error guard, CSV downloads, figure display."""

from __future__ import annotations

from collections.abc import Callable
from contextlib import contextmanager

import pandas as pd
import streamlit as st


def intro(title: str, text: str) -> None:
    """Page title and the short explanation every page opens with."""
    st.title(title)
    st.markdown(text)


@contextmanager
def guard():
    """Show a ValueError raised inside the block as ``st.error`` and stop the page there.

    The library's messages say what to change ("m must be at least 1, got 0"), so they are shown
    as they are. The server keeps running; other exceptions are real bugs and propagate.
    """
    try:
        yield
    except ValueError as exc:
        st.error(f"{exc}", icon=":material/error:")
        st.stop()


def download_csv(frame: "pd.DataFrame | Callable[[], pd.DataFrame]", file_name: str, label: str = "Download CSV", key: str | None = None):
    """A download button for a table (or a callable building it). The CSV is written when the button
    is clicked, not on every run of the page (Streamlit calls ``data`` then, in another thread)."""
    build = frame if callable(frame) else (lambda: frame)

    def data():
        return build().to_csv(index=False).encode()

    st.download_button(label, data=data, file_name=file_name, mime="text/csv", key=key, on_click="ignore",
                       icon=":material/download:")


CHART_CONFIG = {"displaylogo": False, "toImageButtonOptions": {"format": "png"}}
#: session-state flag: this browser session has been sent a chart (so it has the charting code)
_CHARTS_SENT = "_apnull_charts_sent"


def show_figure(fig, key: str | None = None, slot=None) -> None:
    """Plotly figure at full width with the project's chart config (into ``slot`` if given, see
    :func:`chart_slots`)."""
    (slot or st).plotly_chart(fig, key=key, config=CHART_CONFIG)
    st.session_state[_CHARTS_SENT] = True


def chart_slots(count: int, placeholder: Callable[[int], object], ready: bool = False) -> list:
    """``count`` ``st.empty`` slots for the charts to come; the page puts each real figure there with
    ``show_figure(..., slot=)`` (or ``with slot.container():``).

    On the first chart of a browser session, when the figures still have to be computed (not
    ``ready``), slot i shows ``placeholder(i)`` (e.g. a ``plots.pending_figure``) meanwhile: the layout
    is there at once, and the browser loads its charting code while the page computes instead of after
    (about 1 s on a first visit). Later runs, and figures already cached, neither build nor send
    placeholders (server time, and the browser would draw every chart twice).
    """
    slots = [st.empty() for _ in range(count)]
    if not ready and not st.session_state.get(_CHARTS_SENT):
        for i, slot in enumerate(slots):
            slot.plotly_chart(placeholder(i), config=CHART_CONFIG)
    return slots


def p_formats(table: pd.DataFrame, labels: dict | None = None) -> dict:
    """Column configs of the p-value columns of ``table`` (as :func:`apnull.views.score.p_shown` left
    them): numbers in ``%.4g`` (1e-05 reads 0.00001000, never 0), text as text; ``labels``: headers."""
    labels = labels or {}
    out = {}
    for c in ("p_value", "q_value"):
        if c in table.columns:
            numeric = pd.api.types.is_numeric_dtype(table[c])
            out[c] = (st.column_config.NumberColumn(labels.get(c), format="%.4g") if numeric
                      else st.column_config.TextColumn(labels.get(c)))
    return out
