"""Page-local state: which URL parameters belong to which page, and dropping the others on page entry.

Each page's widget keys (= URL parameter names) carry a short page prefix (``lk_m`` on the lookup page,
``qt_draws`` on the quantiles page, ...), so a value typed on one page never reaches a widget of another
page. Streamlit keeps the query string across ``st.navigation`` page switches; ``keep_page_params`` runs
in dashboard.py right after ``st.navigation`` and removes every parameter the page does not own (foreign
pages' parameters and unknown ones), so a page never opens with another page's inputs and a copied
link holds only the inputs of the page it shows. The table is documented in docs/PAGES.md.
"""

from __future__ import annotations

import copy
import math
from collections.abc import Mapping

import streamlit as st
from streamlit.errors import StreamlitAPIException

from ..memo import Memo

#: url path of the page -> the URL parameters it owns (its widget keys)
PAGE_PARAMS: dict[str, frozenset[str]] = {
    "": frozenset(),  # home
    "densities": frozenset({"dn_M", "dn_N", "dn_draws", "dn_K", "dn_seed", "dn_exact"}),
    "quantiles": frozenset({"qt_M", "qt_N", "qt_K", "qt_draws", "qt_seed", "qt_method"}),
    "lookup": frozenset({"lk_m", "lk_n", "lk_level", "lk_q", "lk_alpha", "lk_method", "lk_ap", "lk_pr",
                         "lk_draws", "lk_seed"}),
    "binning": frozenset({"bn_power", "bn_max", "bn_rep", "bn_m", "bn_q", "bn_metric"}),
    "hypergeometric": frozenset({"hg_m", "hg_n", "hg_k", "hg_draws", "hg_seed"}),
    "ranking": frozenset({"r", "rk_k", "rk_preset", "rk_model", "rk_seed"}),
    "sampled": frozenset({"sm_n", "sm_s", "sm_k", "sm_sampling", "sm_metric", "sm_ranks_range", "sm_ranks_A",
                          "sm_ranks_B", "sm_ranks_C", "sm_simulate", "sm_reps", "sm_sim_seed", "sm_tab"}),
    "score": frozenset({"sc_data", "sc_pert", "sc_control", "sc_stratum", "sc_features", "sc_similarity",
                        "sc_null", "sc_perms", "sc_auto", "sc_seed", "sc_fdr", "sc_inspect", "sc_pert_more",
                        "sc_nan", "sc_negatives", "sc_differ", "sc_hier", "sc_copairs", "sc_budget",
                        "sc_normalize"}
                       # the consistency step (apnull.ui.consistency_step.KEYS)
                       | {"sc_cs", "sc_cs_annotation", "sc_cs_sep", "sc_cs_scope", "sc_cs_aggregate", "sc_cs_similarity",
                          "sc_cs_perms", "sc_cs_seed", "sc_cs_fdr", "sc_cs_label"}),
    "compare": frozenset({"cp_data", "cp_key", "cp_key2", "cp_pert", "cp_control", "cp_stratum", "cp_features_a",
                          "cp_features_b", "cp_similarity", "cp_perms", "cp_seed", "cp_alpha", "cp_nan", "cp_auto", "cp_normalize",
                          "cp_budget"}),
}

#: parameters Streamlit itself reads; never dropped
STREAMLIT_PARAMS = frozenset({"embed", "embed_options"})


#: the dashboard's pages (:func:`page`), one ``st.Page`` per page file and settings, built once per process
PAGES = Memo(64)


def page(path, **settings) -> st.Page:
    """``st.Page(path, **settings)`` for ``st.navigation``, a copy of one built once per process.

    ``st.Page`` resolves its file on every call (a system call per folder of the path, and each one gives
    up the GIL: a server's other sessions then hold it for up to a switch interval), and dashboard.py
    names every page on every run: about 1 ms a run alone, 17 ms under four busy threads. The copy is
    the run's own: ``st.navigation`` marks the page it returns as callable once, and ``run`` clears it.
    """
    key = (str(path), tuple(sorted(settings.items())))
    return copy.copy(PAGES.get_or_compute(key, lambda: st.Page(path, **settings)))


def page_params(url_path: str) -> frozenset[str]:
    """The URL parameters owned by the page at ``url_path`` (empty for an unknown page)."""
    return PAGE_PARAMS.get(url_path, frozenset())


def foreign_params(url_path: str, keys) -> list[str]:
    """The keys among ``keys`` that the page at ``url_path`` does not own."""
    own = page_params(url_path)
    return [key for key in keys if key not in own and key.lower() not in STREAMLIT_PARAMS]


def keep_page_params(url_path: str) -> list[str]:
    """Remove from ``st.query_params`` every parameter the page at ``url_path`` does not own.

    Returns the removed keys. In the browser Streamlit already drops, on a page switch, parameters bound
    to a widget of another page it has seen in this session; this also drops parameters of pages not
    seen yet (a pasted link), unknown ones, and, in AppTest (which skips that step), bound ones: a
    parameter still bound to a widget of the page left behind is unbound first (that widget is not on
    this page, so Streamlit would unbind it at the end of the run anyway).
    """
    removed = []
    for key in foreign_params(url_path, list(st.query_params.keys())):
        try:
            del st.query_params[key]
        except KeyError:
            continue
        except StreamlitAPIException:  # bound to a widget of another page
            if not _unbind_and_remove(key):
                continue
        removed.append(key)
    return removed


def _unbind_and_remove(key: str) -> bool:
    """Drop a parameter bound to a widget that is not on this page (Streamlit internals, pinned 1.67)."""
    try:
        from streamlit.runtime.state.session_state_proxy import get_session_state

        with get_session_state().query_params() as qp:
            binding = qp.get_binding_for_param(key)
            if binding is not None:
                qp.unbind_widget(binding.widget_id)
            return bool(qp.remove_param(key))
    except Exception:  # noqa: BLE001 - an internal API moved: leave the parameter, Streamlit drops it later
        return False


#: Longest number text a numeric URL parameter may hold (longer ones are dropped, not parsed).
MAX_NUMBER_TEXT = 64


def drop_unreadable_number(key: str) -> bool:
    """Remove the URL parameter ``key`` when it is no finite number of at most ``MAX_NUMBER_TEXT``
    characters (e.g. 100 kB of digits, which Streamlit's number_input would turn into infinity and
    fail on). Streamlit ignores other unreadable values itself; the widget then keeps its default.
    Returns True when something was removed."""
    raw = st.query_params.get(key)
    if raw is None:
        return False
    try:
        readable = len(raw) <= MAX_NUMBER_TEXT and math.isfinite(float(raw))
    except (TypeError, ValueError):
        return False  # not a number at all: Streamlit ignores it
    if readable:
        return False
    try:
        del st.query_params[key]
    except StreamlitAPIException:  # already bound to this widget from an earlier run
        _unbind_and_remove(key)
    _forget_initial_value(key)
    return True


def rewrite_renamed_value(key: str, renamed: Mapping[str, str]) -> bool:
    """Replace the value of the URL parameter ``key`` by its new name when it is an old one (a key of
    ``renamed``), before the widget bound to ``key`` is made: a link made before a renaming opens on
    the renamed choice, and the address bar shows the new name. Returns True when a value was rewritten."""
    raw = st.query_params.get(key)
    if raw not in renamed:
        return False
    new = renamed[raw]
    try:
        st.query_params[key] = new
    except StreamlitAPIException:  # already bound to this widget from an earlier run: it holds a choice
        return False
    _set_initial_value(key, new)
    return True


def _set_initial_value(key: str, value: str) -> None:
    """Seed the bound widget ``key`` with ``value``: Streamlit reads the URL as it was when the page
    loaded (see :func:`_forget_initial_value`; internals, pinned 1.67)."""
    try:
        from streamlit.runtime.state.session_state_proxy import get_session_state

        with get_session_state().query_params() as qp:
            if key in qp._initial_query_params:
                qp._initial_query_params[key] = [value]
    except Exception:  # noqa: BLE001 - an internal API moved: the renamed-preset test will say so
        pass


def _forget_initial_value(key: str) -> None:
    """Streamlit seeds a bound widget from the URL as it was when the page loaded, not from the current
    query parameters: drop ``key`` from that snapshot too (internals, pinned 1.67)."""
    try:
        from streamlit.runtime.state.session_state_proxy import get_session_state

        with get_session_state().query_params() as qp:
            qp._initial_query_params.pop(key, None)
    except Exception:  # noqa: BLE001 - an internal API moved: the hostile-URL tests will say so
        pass


def forget_param(key: str) -> None:
    """Drop the widget value and the URL parameter ``key`` (bound or not): the widget shows its default
    at its next appearance and a copied link no longer carries the old value."""
    st.session_state.pop(key, None)
    try:
        del st.query_params[key]
    except KeyError:
        pass
    except StreamlitAPIException:  # bound to a widget: unbind first
        _unbind_and_remove(key)
    _forget_initial_value(key)


def inputs_follow(marker: str, current: str, keys, defaults: dict, remember: bool = False) -> None:
    """Make the inputs ``keys`` that depend on a table (or a pair of tables) show what applies to the table
    ``current``, before the widgets are drawn; ``st.session_state[marker]`` holds the table shown last.

    The first table of a session keeps what the URL (a shared link) or the session says, and fills in
    ``defaults`` (the table's guesses) for the rest. When the table changes (a new upload, or the
    example/upload switch), the new table gets its ``defaults``; with ``remember``, the inputs of the
    table left are kept for it and given back when it returns. A key with no value to give is dropped,
    URL parameter too (:func:`forget_param`), so nothing typed for one table is applied, unseen, to
    another, and a copied link carries what is shown.
    """
    state = st.session_state
    previous = state.get(marker)
    if previous == current:
        return
    if previous is None:
        for key in keys:
            if key in defaults and key not in state and key not in st.query_params:
                state[key] = defaults[key]
    else:
        restore = defaults
        if remember:
            saved = state.setdefault(f"{marker}_saved", {})
            saved[previous] = {k: state[k] for k in keys if k in state}
            restore = saved.get(current, defaults)
        for key in keys:
            if key in restore:
                state[key] = restore[key]
            else:
                forget_param(key)
    state[marker] = current


def holds_settings(defaults: Mapping) -> bool:
    """True when one of the bound inputs ``defaults`` (key -> default value) holds another value: in the URL (a
    bound input with its default is left out of it) or in the session (a bound input keeps its value while it
    is not drawn, e.g. while its page is left). An expander holding such an input builds its content whether
    open or closed, so the value stays applied and in the URL."""
    state = st.session_state
    return any(key in st.query_params or (key in state and state[key] != default) for key, default in defaults.items())


def open_when_linked(open_key: str, keys) -> None:
    """Open the expander ``open_key`` on a session's first run when the link carries one of its inputs
    ``keys`` (an expander whose content is built only while open shows what the copied link showed)."""
    if open_key not in st.session_state and any(key in st.query_params for key in keys):
        st.session_state[open_key] = True
