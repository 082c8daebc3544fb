"""Shared look of the project's figures, and the fast way to build the ones a page rebuilds often."""

import base64

import numpy as np
import plotly.graph_objects as go
import plotly.io as pio

COLORSCALE = "Viridis"
FONT = dict(family="Inter, Source Sans Pro, sans-serif", size=13)
METRIC_NAMES = {"ap": "Average Precision", "pr": "Precision@R"}
#: plotly_white's layout only, built once: naming the whole template copies it on every figure, and a
#: plain dict is validated again on every figure (about 40 ms each).
TEMPLATE = go.layout.Template(layout=pio.templates["plotly_white"].layout)
PALETTE = {"ap": "#1f77b4", "pr": "#d62728", "mean": "#555555", "ratio": "#9e9e9e", "exact": "#111111",
           "threshold": "#e45756", "value": "#2ca02c"}
_AXIS = dict(showline=True, linecolor="#999", ticks="outside")
#: A legend as a row at the bottom of the figure, under the x axis title (``legend=dict(LEGEND_BELOW)``).
#: Plotly widens the bottom margin to the legend's height, so at a narrow width the rows it wraps into
#: push the plot up instead of covering the axis title (a legend on top of the plot covered the title
#: at 390 px). Not :func:`layout_dict`'s default: a legend placed later by ``y`` alone would inherit
#: ``yref="container"`` and land below the figure.
LEGEND_BELOW = dict(orientation="h", yref="container", yanchor="bottom", y=0, xanchor="left", x=0)


def layout_dict(title: str, x_title: str, y_title: str, height: int = 430, **extra) -> dict:
    """The project's layout as one dict: title on the left, plotly_white, axes with lines and ticks, y
    from zero. ``extra`` adds keys; a dict value is merged into the default of the same key."""
    layout = dict(
        title=dict(text=title, x=0, xanchor="left"), height=height, font=FONT, template=TEMPLATE,
        margin=dict(l=60, r=20, t=60, b=50), hovermode="closest",
        legend=dict(orientation="h", yanchor="bottom", y=1.0, xanchor="right", x=1),
        xaxis=dict(title=dict(text=x_title), **_AXIS), yaxis=dict(title=dict(text=y_title), rangemode="tozero", **_AXIS),
    )
    for key, value in extra.items():
        if isinstance(value, dict) and isinstance(layout.get(key), dict):
            layout[key] = {**layout[key], **value}
        else:
            layout[key] = value
    return layout


def base_layout(fig: go.Figure, title: str, x_title: str, y_title: str, height: int = 430) -> go.Figure:
    """Apply :func:`layout_dict` to an existing figure."""
    fig.update_layout(layout_dict(title, x_title, y_title, height))
    return fig


def fast_figure(traces: list[dict], layout: dict) -> go.Figure:
    """A figure from plain trace and layout dicts, without plotly's property validation.

    Validation costs about 10 ms for a small figure and much more for many traces, on every rerun of
    a page that rebuilds it; the builders that use this are checked against full validation in
    tests/test_plots_validation.py (same JSON), so a typo still fails a test.
    """
    return go.Figure(data=traces, layout=layout, _validate=False)


#: plotly.js's names of the dtypes it reads as typed arrays (plotly.py's encoder uses the same table)
_CODES = {"int8": "i1", "uint8": "u1", "int16": "i2", "uint16": "u2", "int32": "i4", "uint32": "u4",
          "float32": "f4", "float64": "f8"}
#: Layout keys whose arrays plotly.py never encodes (they stay lists)
_SKIPPED_KEYS = ("geojson", "layer", "layers", "range")


def _narrow(arr: np.ndarray) -> np.ndarray | None:
    """A 64-bit integer array as the smallest integer type holding its values (plotly.js has no 64-bit
    integers), or None when none does; other arrays unchanged."""
    kind = {"int64": (np.int8, np.int16, np.int32), "uint64": (np.uint8, np.uint16, np.uint32)}.get(str(arr.dtype))
    if kind is None:
        return arr
    lo, hi = arr.min(), arr.max()
    for t in kind:
        if np.iinfo(t).min <= lo and hi <= np.iinfo(t).max:
            return arr.astype(t)
    return None


def _spec(arr: np.ndarray):
    """plotly's typed-array spec of ``arr`` ({"dtype", "bdata", "shape"}: what plotly.py's encoder makes
    of it), or ``arr`` itself where plotly.js has no typed array for it (empty, 64-bit integers beyond
    32 bits, other dtypes); without the encoder's per-call conversions (about 0.6 ms a call, more than
    encoding a few thousand numbers)."""
    narrow = _narrow(arr) if arr.size else None
    code = None if narrow is None else _CODES.get(str(narrow.dtype))
    if code is None:
        return arr
    arr = narrow
    spec = {"dtype": code, "bdata": base64.b64encode(np.ascontiguousarray(arr)).decode("ascii")}
    if arr.ndim > 1:
        spec["shape"] = str(arr.shape)[1:-1]
    return spec


def typed_array(values, dtype=np.float32) -> dict:
    """``values`` as a plotly.js typed array spec (base64): encoded once when the figure is built, not
    again each time the figure is sent. float32 keeps 7 significant digits, more than any hover shows."""
    return _spec(np.ascontiguousarray(values, dtype=dtype))


def _pack(obj) -> None:
    if isinstance(obj, dict):
        for key, value in obj.items():
            if isinstance(value, np.ndarray) and key not in _SKIPPED_KEYS:
                obj[key] = _spec(value)
            else:
                _pack(value)
    elif isinstance(obj, (list, tuple)):
        for value in obj:
            _pack(value)


def packed(fig: go.Figure) -> go.Figure:
    """``fig`` with every numpy array in its traces and layout replaced, in place, by its typed-array spec
    (base64, the dtype kept), and returned.

    Sending a figure (``to_dict``, as ``st.plotly_chart`` does) encodes its numpy arrays into exactly these
    specs on every call: 2 to 4 ms of Python for a chart of a few thousand points. A figure kept in a cache
    and sent on every rerun is packed once, when it is stored; the JSON sent is the same. Only for figures
    that are read as JSON afterwards (``fig.data[0].y`` then holds the spec, not the array).
    """
    _pack(fig._data)
    _pack(fig._layout)
    return fig


def pending_figure(title: str, x_title: str, y_title: str, note: str = "computing...") -> go.Figure:
    """An empty figure with the axes and title of one still being computed (the page's placeholder)."""
    return fast_figure([], layout_dict(f"{title}<br><sup>{note}</sup>", x_title, y_title,
                                       xaxis=dict(range=[0, 1]), yaxis=dict(range=[0, 1], showticklabels=False)))
