"""A page's whole view per input set, kept in a bounded shared Memo: the one home of "is it ready" and
"get it" for every page that caches what it shows (binning, hypergeometric, threshold lookup, the
ranking editor's null, the null densities)."""

from __future__ import annotations

from typing import Callable

import streamlit as st

from ..memo import Memo

__all__ = ["PageView"]


class PageView:
    """``view(*args)``: ``build(*args)`` stored in ``memo`` under ``key(*args)`` (the arguments themselves
    unless ``key`` is given), built once for all sessions asking together; errors are not stored.
    ``view.ready(*args)``: True when the view is stored (it answers at once). ``view.shown(*args,
    spinner=...)``: the view, under ``st.spinner(spinner)`` only when it must be built (a spinner costs
    the page a thread, so a stored view shows none). Stored views are shared and only read."""

    def __init__(self, memo: Memo, build: Callable | None = None, key: Callable[..., tuple] | None = None):
        self.memo, self.build = memo, build
        self._key = key

    def key(self, *args) -> tuple:
        """The Memo key of the view of ``args``."""
        return self._key(*args) if self._key is not None else args

    def ready(self, *args) -> bool:
        """True when the view of ``args`` is stored (it answers at once)."""
        return self.key(*args) in self.memo

    def __call__(self, *args):
        return self.memo.get_or_compute(self.key(*args), lambda: self.build(*args))

    def shown(self, *args, spinner: str, quick: bool = False):
        """The view of ``args`` for a page: at once when stored or ``quick`` (known to take
        milliseconds), else built under ``st.spinner(spinner)``."""
        if quick or self.ready(*args):
            return self(*args)
        with st.spinner(spinner):
            return self(*args)
