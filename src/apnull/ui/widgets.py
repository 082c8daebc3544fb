"""Widgets bound to the URL: every input has a key and ``bind="query-params"``, so a link reproduces a view.

The query parameter is the widget's key. A value equal to the default is left out of the URL; an
invalid value in the URL is ignored by Streamlit (the widget keeps its default).

Numeric widgets get a lower bound only where a smaller value is meaningless for any page (e.g. a
negative count); the documented page limits (e.g. m >= 1, K x draws budget) are checked by the
library, so a bad value shows an ``st.error`` saying what to change instead of being silently
clamped.
"""

from __future__ import annotations

import streamlit as st

from .state import drop_unreadable_number

BIND = "query-params"


def bound_int(label: str, key: str, default: int, min_value: int | None = None, max_value: int | None = None,
              step: int = 1, help: str | None = None, container=None) -> int:
    """An integer ``st.number_input`` bound to the URL parameter ``key`` (an overlong or infinite URL
    value is dropped first: the widget keeps its default)."""
    drop_unreadable_number(key)
    box = container or st
    return box.number_input(label, min_value=min_value, max_value=max_value, value=int(default), step=int(step),
                            key=key, help=help, bind=BIND)


def bound_float(label: str, key: str, default: float, min_value: float | None = None,
                max_value: float | None = None, step: float = 0.01, format: str | None = None,
                help: str | None = None, container=None) -> float:
    """A float ``st.number_input`` bound to the URL parameter ``key`` (see :func:`bound_int`)."""
    drop_unreadable_number(key)
    box = container or st
    return box.number_input(label, min_value=min_value, max_value=max_value, value=float(default), step=step,
                            format=format, key=key, help=help, bind=BIND)


def bound_select(label: str, key: str, options, default=None, help: str | None = None, container=None,
                 horizontal: bool = True, format_func=str):
    """A radio choice bound to the URL parameter ``key``."""
    box = container or st
    options = list(options)
    index = options.index(default) if default is not None else 0
    return box.radio(label, options, index=index, key=key, help=help, bind=BIND, horizontal=horizontal,
                     format_func=format_func)


def bound_toggle(label: str, key: str, default: bool = False, help: str | None = None, container=None) -> bool:
    """A toggle bound to the URL parameter ``key``."""
    box = container or st
    return box.toggle(label, value=bool(default), key=key, help=help, bind=BIND)


def bound_text(label: str, key: str, default: str, help: str | None = None, container=None) -> str:
    """A ``st.text_input`` bound to the URL parameter ``key``."""
    box = container or st
    return box.text_input(label, value=default, key=key, help=help, bind=BIND)


def bound_choice(label: str, key: str, options, help: str | None = None, container=None, format_func=str):
    """A ``st.selectbox`` bound to the URL parameter ``key``; its default is the first option (order the
    options with the preferred one first, so a value set through ``st.session_state`` never clashes
    with a widget default)."""
    box = container or st
    return box.selectbox(label, list(options), index=0, key=key, help=help, bind=BIND, format_func=format_func)
