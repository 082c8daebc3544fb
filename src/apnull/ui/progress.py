"""The progress widget of work over sizes (drawing or summarising a view's sizes)."""

from __future__ import annotations

import time

import streamlit as st

__all__ = ["PROGRESS_EVERY", "ProgressBar"]

#: seconds between two updates of a progress bar
PROGRESS_EVERY = 0.1


class ProgressBar:
    """``st.progress`` for work over sizes: ``bar(done, total, m, n)`` moves it (at most every
    ``PROGRESS_EVERY`` seconds: a message each time would cost more than cached sizes do), ``close()``
    removes it."""

    def __init__(self, label: str, container=None):
        self.label = label
        self.bar = (container or st).progress(0.0, text=f"{label}...")
        self.shown = time.monotonic()

    def __call__(self, done: int, total: int, m: int, n: int) -> None:
        if time.monotonic() - self.shown >= PROGRESS_EVERY:
            self.bar.progress(done / total, text=f"{self.label}: size {done} of {total} (m = {m}, n = {n})")
            self.shown = time.monotonic()

    def close(self) -> None:
        self.bar.empty()
