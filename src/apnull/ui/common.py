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
    """A download button for a table. ``frame`` may be a callable building it on click (big tables)."""
    if callable(frame):
        def data():
            return frame().to_csv(index=False).encode()
    else:
        data = frame.to_csv(index=False).encode()
    st.download_button(label, data=data, file_name=file_name, mime="text/csv", key=key, on_click="ignore",
                       icon=":material/download:")


def show_figure(fig, key: str | None = None) -> None:
    """Plotly figure at full width with the project's chart config."""
    st.plotly_chart(fig, key=key, config={"displaylogo": False, "toImageButtonOptions": {"format": "png"}})
