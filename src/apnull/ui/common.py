"""Page furniture shared by every page: the intro, error guard, CSV downloads, figure display."""

from __future__ import annotations

import threading
import weakref
from collections.abc import Callable
from contextlib import contextmanager

import pandas as pd
import pyarrow as pa
import streamlit as st
from plotly.basedatatypes import BaseFigure


def intro(title: str, text: str) -> None:
    """Page title and the short explanation every page opens with."""
    st.title(title)
    st.markdown(text)


@contextmanager
def guard(words: Callable[[str], str] | None = None):
    """Show a ValueError raised inside the block as ``st.error`` and stop the page there.

    The library's messages say what to change ("m must be at least 1, got 0"), so they are shown
    as they are, or through ``words`` (e.g. :func:`apnull.views.score_report.page_words`: the page's
    controls instead of the library's keywords). The server keeps running; other exceptions are real
    bugs and propagate.
    """
    try:
        yield
    except ValueError as exc:
        st.error(words(f"{exc}") if words else f"{exc}", icon=":material/error:")
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

#: Pixels kept free at the top of every figure a page shows (:func:`with_toolbar_room`): Plotly's
#: toolbar (the modebar, 22 px plus its padding, shown at the top right on hover) and Streamlit's
#: fullscreen button sit there, above the title instead of on it.
TOOLBAR_ROOM = 30
#: Where a shown figure's title has its first baseline, in px from the top: below the toolbar's strip
#: (the title's first line is about 15 px tall above its baseline).
TITLE_BASELINE = TOOLBAR_ROOM + 18


def with_toolbar_room(layout: dict) -> dict:
    """``layout`` (a figure's layout as a plain dict) with :data:`TOOLBAR_ROOM` pixels kept free at the top.

    The top margin and the height grow by that much (the plot keeps its size), and a title that does not
    say where it goes (no ``y``) starts
    just below the strip: its first baseline is pinned :data:`TITLE_BASELINE` px from the top
    (``yref="container"``, ``yanchor="bottom"``, which anchors the first line of a multi-line title
    there and lets the others follow below; the margin was made for the title's lines). Everything
    else in the margin (legends, subplot titles) moves down with the plot. Returns a new dict; the
    layout given is not changed. Every figure a page shows gets it (:func:`prepared`,
    :func:`show_figure`, :func:`chart_slots`).
    """
    out = dict(layout)
    margin = dict(out.get("margin") or {})
    margin["t"] = margin.get("t", 100) + TOOLBAR_ROOM  # 100: plotly's default top margin
    out["margin"] = margin
    # the figure grows by the strip, so the plot keeps its height and whatever sits below it at a share of
    # that height (a legend at y = -0.18) keeps its place under the axis title
    out["height"] = (out.get("height") or 450) + TOOLBAR_ROOM  # 450: plotly's default height
    title = out.get("title")
    if isinstance(title, str):
        title = {"text": title}
    if isinstance(title, dict) and title.get("text") and "y" not in title:
        out["title"] = {**title, "yref": "container", "y": 1 - TITLE_BASELINE / out["height"], "yanchor": "bottom"}
    return out


#: session-state flag: this browser session has been sent a chart (so it has the charting code)
_CHARTS_SENT = "_apnull_charts_sent"


class _PreparedFigure(BaseFigure):
    """A figure whose plotly dict is already made: ``st.plotly_chart`` asks a figure for ``to_dict()``
    (a deep copy of every trace, arrays encoded) and serialises that; this one hands over the dict made
    the first time its figure was shown. Built without ``BaseFigure.__init__``: it only answers
    ``to_dict`` / ``to_plotly_json``."""

    def __init__(self, spec: dict):  # noqa: D107 - deliberately not BaseFigure.__init__
        self._spec = spec

    def to_dict(self):
        return self._spec

    to_plotly_json = to_dict


class _Prepared:
    """What a page shows for an object, made once per object: ``id(obj)`` -> (weak reference to it,
    its prepared form); an entry leaves with its object. Objects from the shared caches are read-only
    and live across reruns, so a rerun reuses their prepared form instead of making it again."""

    def __init__(self, make):
        self.make, self.entries, self.lock = make, {}, threading.Lock()

    def __call__(self, obj):
        ident = id(obj)
        with self.lock:
            entry = self.entries.get(ident)
        if entry is not None and entry[0]() is obj:
            return entry[1]
        made = self.make(obj)
        try:
            ref = weakref.ref(obj, lambda r, ident=ident: self._forget(ident, r))
        except TypeError:
            return made
        with self.lock:
            self.entries[ident] = (ref, made)
        return made

    def _forget(self, ident, ref) -> None:
        with self.lock:
            entry = self.entries.get(ident)
            if entry is not None and entry[0] is ref:
                del self.entries[ident]


def _shown_spec(fig) -> dict:
    spec = fig.to_dict()  # a deep copy: the cached figure is not changed
    spec["layout"] = with_toolbar_room(spec.get("layout") or {})
    return spec


_figure_of = _Prepared(lambda fig: _PreparedFigure(_shown_spec(fig)))


def _arrow_of_frame(frame: pd.DataFrame):
    try:
        return pa.Table.from_pandas(frame, preserve_index=False)
    except (pa.ArrowException, TypeError, ValueError):  # mixed-type columns: Streamlit's own conversion copes
        return frame


_table_of = _Prepared(_arrow_of_frame)


def prepared(fig):
    """What :func:`show_figure` hands to ``st.plotly_chart`` for ``fig``: a figure shown again (the same
    object, e.g. from a shared cache) reuses the dict made the first time, so a page rerun does not
    deep-copy and re-encode its cached charts. The dict keeps room for the chart's toolbar above the
    title (:func:`with_toolbar_room`). Anything but a plotly figure is passed as it is."""
    if not isinstance(fig, BaseFigure) or isinstance(fig, _PreparedFigure):
        return fig
    return _figure_of(fig)


def show_table(frame: pd.DataFrame, key: str | None = None, **options) -> None:
    """``st.dataframe`` of ``frame`` without its index; ``options`` go to ``st.dataframe``
    (``column_config``, ``height``). A frame shown again (the same object, from a shared cache) is
    converted to Arrow once, not on every rerun; shown frames are only read."""
    st.dataframe(_table_of(frame), hide_index=True, key=key, **options)


def show_figure(fig, key: str | None = None, slot=None, **options) -> None:
    """Plotly figure at full width with the project's chart config (into ``slot`` if given, see
    :func:`chart_slots`); ``options`` go to ``st.plotly_chart`` (``on_select``, ``selection_mode``).
    A figure from a shared cache is encoded once (:func:`prepared`)."""
    (slot or st).plotly_chart(prepared(fig), key=key, config=CHART_CONFIG, **options)
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
            slot.plotly_chart(prepared(placeholder(i)), config=CHART_CONFIG)
        st.session_state[_CHARTS_SENT] = True  # the browser loads plotly for them: no need of charts_now
    return slots


#: What a later chart's slot shows until the browser asks for it (:func:`charts_now`)
LATER_CHARTS_CAPTION = "Drawing the chart..."
#: Seconds after which the browser asks for a page's later charts even if it saw no chart drawn
LATER_CHARTS_AFTER = 10.0
#: A browser-side element (no height) that triggers a rerun once the page shows a drawn plotly chart,
#: in a task of its own after that draw (:func:`charts_now`), or after ``LATER_CHARTS_AFTER`` s
_FIRST_DRAWN = st.components.v2.component("apnull_first_chart_drawn", js="""
export default function (component) {
  const { setTriggerValue } = component;
  const start = performance.now();
  let timer = null;
  const look = () => {
    const drawn = document.querySelector('[data-testid="stPlotlyChart"] .js-plotly-plot g.trace');
    if (drawn || performance.now() - start > %d) {
      timer = null;
      setTriggerValue("drawn", true);
    } else {
      timer = setTimeout(look, 50);
    }
  };
  timer = setTimeout(look, 50);
  return () => { if (timer !== null) clearTimeout(timer); };
}
""" % (LATER_CHARTS_AFTER * 1000))


def charts_now(count: int, slots: list | None = None, height: int = 460) -> int:
    """How many of a page's ``count`` charts to send in this run: all of them, but 1 on a browser
    session's first chart.

    On a first chart the browser loads its charting code (plotly, 4.7 MB evaluated in one long task)
    and then draws every chart that arrived meanwhile in one task: the first showed only once all were
    drawn (the densities page's two charts: 1.6 to 1.8 s of drawing on the 2-core machine). Sent alone,
    the first chart is drawn as soon as plotly is loaded; a small browser-side element in the second
    slot sees it drawn and asks for the page again (a rerun, from a task after that draw), and that run
    sends them all. The later ``slots`` keep the charts' ``height`` (px) meanwhile, so what is below
    them moves once at most. Call it after the page's inputs, before its charts.
    """
    if count <= 1 or st.session_state.get(_CHARTS_SENT):
        return count
    holders = [slot.container(height=height, border=False) for slot in (slots or [])[1:count]]
    for holder in holders:
        holder.caption(LATER_CHARTS_CAPTION)
    with holders[0] if holders else st.container():
        _FIRST_DRAWN(key="_apnull_first_drawn", on_drawn_change=lambda: None)
    return 1


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


#: Seconds between two looks of :func:`wait_for` (a look is a fragment run of a few elements)
WAIT_EVERY = 0.5


def wait_for(ready: Callable[[], bool], every: float = WAIT_EVERY) -> None:
    """Rerun the page once ``ready()`` is true: a fragment that the browser runs every ``every``
    seconds looks (a few milliseconds, no element sent) and reruns the whole page when it is, e.g. when
    a view made in the background is stored. Call it after what is shown meanwhile."""
    @st.fragment(run_every=every)
    def look():
        if ready():
            st.rerun()  # the whole page: it now finds the view stored

    look()
