"""Widgets bound to the URL: every input has a key and ``bind="query-params"``, so a link reproduces a view.

The query parameter is the widget's key. A value equal to the default is left out of the URL; an
invalid value in the URL is ignored by Streamlit (the widget keeps its default), and the page says so
under the input (:func:`say_unused_link_value`) until the input is changed: a link that does not
reproduce a view is never silent.

Numeric widgets get a lower bound only where a smaller value is meaningless for any page (e.g. a
negative count); the documented page limits (e.g. m >= 1, K x draws budget) are checked by the
library, so a bad value shows an ``st.error`` saying what to change instead of being silently
clamped.
"""

from __future__ import annotations

import streamlit as st

from .state import drop_unreadable_number

BIND = "query-params"
#: session key of the URL values a page could not use: {key: (URL text, value shown, what the input takes,
#: how the input names the value shown)}
UNUSED = "_link_values_not_used"
#: longest URL text quoted whole in the notice
QUOTED_MOST = 40


def link_value(key: str) -> str | None:
    """The URL's text for ``key`` when it can set the widget about to be made, else None.

    Streamlit seeds a bound widget from the URL only when the session has no value for it yet (a link
    being opened); afterwards the widget's own value wins (the user's change, or the value kept while
    another page was shown) and the URL follows it. A client that reruns with the URL it had before the
    change (a stale ``dn_M=6`` sent with the new M = 8) must not be told that its link was not used."""
    return None if key in st.session_state else st.query_params.get(key)


def say_unused_link_value(key: str, label: str, raw: str | None, shown, used: bool, takes: str,
                          shown_text: str | None = None) -> None:
    """Warn, under the input ``label`` (under its row when the inputs share one), that the URL's value
    ``raw`` for ``key`` was not used and ``shown`` is shown instead.

    ``raw`` is :func:`link_value` before the widget was made (None: no value in the URL, or the widget
    already had a value) and ``used`` says whether the widget took it. Streamlit drops a value it cannot
    use from the URL on that run, so the notice is kept in the session until the input shows another
    value (the user changed it). ``takes`` says what the input accepts (e.g. "whole numbers of at least
    0"); ``shown_text`` is how the input names ``shown`` (default ``str(shown)``)."""
    notes = st.session_state.setdefault(UNUSED, {})
    if raw is not None and not used:
        quoted = raw if len(raw) <= QUOTED_MOST else f"{raw[:20]}... ({len(raw):,} characters)"
        notes[key] = (quoted.replace("`", "'"), shown, takes, shown if shown_text is None else shown_text)
    note = notes.get(key)
    if note is None:
        return
    quoted, was_shown, takes, named = note
    if shown != was_shown:
        del notes[key]
        return
    st.warning(f"The link's value `{key}={quoted}` was not used: {label} takes {takes}; showing {named}.",
               icon=":material/link_off:")


def _number_used(raw: str | None, shown) -> bool:
    try:
        return raw is not None and float(raw) == float(shown)
    except (TypeError, ValueError, OverflowError):
        return False


def _choice_used(raw: str | None, shown, format_func) -> bool:
    return raw is not None and raw in (str(format_func(shown)), str(shown))


def _choices_text(options, format_func) -> str:
    names = [str(format_func(o)) for o in options]
    return "one of " + ", ".join(names) if len(names) <= 8 else f"one of the {len(names)} choices listed"


def _range_text(kind: str, min_value, max_value) -> str:
    if min_value is not None and max_value is not None:
        return f"{kind} from {min_value} to {max_value}"
    if min_value is not None:
        return f"{kind} of at least {min_value}"
    if max_value is not None:
        return f"{kind} of at most {max_value}"
    return kind


def bound_int(label: str, key: str, default: int, min_value: int | None = None, max_value: int | None = None,
              step: int = 1, help: str | None = None, container=None) -> int:
    """An integer ``st.number_input`` bound to the URL parameter ``key`` (an overlong or infinite URL
    value is dropped first: the widget keeps its default)."""
    raw = link_value(key)
    drop_unreadable_number(key)
    box = container or st
    value = box.number_input(label, min_value=min_value, max_value=max_value, value=int(default), step=int(step),
                             key=key, help=help, bind=BIND)
    say_unused_link_value(key, label, raw, value, _number_used(raw, value),
                          _range_text("whole numbers", min_value, max_value))
    return value


def bound_float(label: str, key: str, default: float, min_value: float | None = None,
                max_value: float | None = None, step: float = 0.01, format: str | None = None,
                help: str | None = None, container=None) -> float:
    """A float ``st.number_input`` bound to the URL parameter ``key`` (see :func:`bound_int`)."""
    raw = link_value(key)
    drop_unreadable_number(key)
    box = container or st
    value = box.number_input(label, min_value=min_value, max_value=max_value, value=float(default), step=step,
                             format=format, key=key, help=help, bind=BIND)
    say_unused_link_value(key, label, raw, value, _number_used(raw, value), _range_text("numbers", min_value, max_value))
    return value


def bound_select(label: str, key: str, options, default=None, help: str | None = None, container=None,
                 horizontal: bool = True, format_func=str):
    """A radio choice bound to the URL parameter ``key``."""
    raw = link_value(key)
    box = container or st
    options = list(options)
    index = options.index(default) if default is not None else 0
    value = box.radio(label, options, index=index, key=key, help=help, bind=BIND, horizontal=horizontal,
                      format_func=format_func)
    say_unused_link_value(key, label, raw, value, _choice_used(raw, value, format_func),
                          _choices_text(options, format_func), str(format_func(value)))
    return value


def bound_toggle(label: str, key: str, default: bool = False, help: str | None = None, container=None) -> bool:
    """A toggle bound to the URL parameter ``key``."""
    raw = link_value(key)
    box = container or st
    value = box.toggle(label, value=bool(default), key=key, help=help, bind=BIND)
    say_unused_link_value(key, label, raw, value, raw is not None and raw.lower() == str(value).lower(),
                          "true or false", "on" if value else "off")
    return value


def bound_text(label: str, key: str, default: str, help: str | None = None, container=None) -> str:
    """A ``st.text_input`` bound to the URL parameter ``key``."""
    box = container or st
    return box.text_input(label, value=default, key=key, help=help, bind=BIND)


def bound_choice(label: str, key: str, options, help: str | None = None, container=None, format_func=str):
    """A ``st.selectbox`` bound to the URL parameter ``key``; its default is the first option (order the
    options with the preferred one first, so a value set through ``st.session_state`` never clashes
    with a widget default)."""
    raw = link_value(key)
    box = container or st
    options = list(options)
    value = box.selectbox(label, options, index=0, key=key, help=help, bind=BIND, format_func=format_func)
    say_unused_link_value(key, label, raw, value, _choice_used(raw, value, format_func),
                          _choices_text(options, format_func), str(format_func(value)))
    return value
