"""Figures and tables from the shared caches are prepared once for display, not on every rerun."""

import gc
import json

import pandas as pd
import plotly.graph_objects as go
import plotly.io as pio
import plotly.tools
import pyarrow as pa
import pytest

from apnull.ui import common


def _figure():
    return go.Figure(go.Scatter(x=[0.0, 0.5, 1.0], y=[1.0, 2.0, 0.5], name="null"), layout=dict(title="t"))


def _as_streamlit_sends(fig) -> dict:
    """The chart spec the way st.plotly_chart makes it from what it is given."""
    figure = plotly.tools.return_figure_from_figure_or_data(fig, validate_figure=True)
    return json.loads(pio.to_json(figure, validate=False))


def test_a_figure_shown_again_is_prepared_once_and_sends_the_same_chart():
    fig = _figure()
    first, again = common.prepared(fig), common.prepared(fig)
    assert first is again
    shown = _as_streamlit_sends(fig)
    shown["layout"] = common.with_toolbar_room(shown["layout"])  # the one change: room for the toolbar
    assert _as_streamlit_sends(first) == shown
    other = _figure()
    assert common.prepared(other) is not first


def test_a_prepared_figure_leaves_with_its_figure():
    fig = _figure()
    common.prepared(fig)
    ident = id(fig)
    assert ident in common._figure_of.entries
    del fig
    gc.collect()
    assert ident not in common._figure_of.entries


def test_anything_but_a_figure_is_passed_as_it_is():
    spec = {"data": [{"type": "bar", "x": [1], "y": [2]}]}
    assert common.prepared(spec) is spec
    stand_in = common.prepared(_figure())
    assert common.prepared(stand_in) is stand_in


def test_a_table_is_converted_to_arrow_once_without_its_index():
    frame = pd.DataFrame({"name": ["a", "b"], "p_value": [0.01, 0.5]}, index=[7, 9])
    table = common._table_of(frame)
    assert isinstance(table, pa.Table) and table.column_names == ["name", "p_value"]
    assert common._table_of(frame) is table
    assert table.to_pandas().equals(frame.reset_index(drop=True))


def test_a_table_arrow_cannot_hold_is_left_to_streamlit():
    frame = pd.DataFrame({"mixed": [1, "a", 2.5]})
    assert common._table_of(frame) is frame


def test_toolbar_room_moves_the_title_below_the_toolbar_and_changes_nothing_else():
    layout = {"title": {"text": "a title<br><sup>a subtitle</sup>", "x": 0}, "height": 400,
              "margin": {"t": 60, "b": 50}, "legend": {"y": 1.0}}
    shown = common.with_toolbar_room(layout)
    assert layout["margin"] == {"t": 60, "b": 50} and "yref" not in layout["title"]  # the input is not changed
    # the figure grows by the strip: the plot keeps its 400 - 60 - 50 px (a legend at a share of it stays put)
    assert shown["margin"] == {"t": 60 + common.TOOLBAR_ROOM, "b": 50} and shown["height"] == 400 + common.TOOLBAR_ROOM
    title = shown["title"]
    assert title["yref"] == "container" and title["yanchor"] == "bottom"
    # the first baseline TITLE_BASELINE px from the top: below the toolbar's strip, above the plot
    assert (1 - title["y"]) * shown["height"] == pytest.approx(common.TITLE_BASELINE)
    assert common.TOOLBAR_ROOM < common.TITLE_BASELINE < shown["margin"]["t"]
    assert shown["legend"] == {"y": 1.0} and title["text"] == layout["title"]["text"]
    go.Layout(shown)  # plotly accepts it
    # a title that says where it goes keeps its place; no margin: plotly's default top margin is grown
    placed = common.with_toolbar_room({"title": {"text": "t", "y": 0.9}})
    assert placed["title"] == {"text": "t", "y": 0.9} and placed["margin"] == {"t": 100 + common.TOOLBAR_ROOM}
    assert placed["height"] == 450 + common.TOOLBAR_ROOM
    assert common.with_toolbar_room({"title": "t", "height": 450})["title"]["yref"] == "container"
