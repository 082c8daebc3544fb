"""Figures and tables from the shared caches are prepared once for display, not on every rerun."""

import gc
import json

import pandas as pd
import plotly.graph_objects as go
import plotly.io as pio
import plotly.tools
import pyarrow as pa

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
    assert _as_streamlit_sends(first) == _as_streamlit_sends(fig)
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
