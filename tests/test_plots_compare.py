"""plots/compare.py: mAP of B against mAP of A, the diagonal, one trace per retrieved category."""

import numpy as np
import pandas as pd

from apnull.plots.compare import COLORS, compare_figure


def _data():
    return pd.DataFrame({"name": ["p1", "p2", "p3", "p4"], "mAP_a": [0.9, 0.4, 0.2, 0.7],
                         "mAP_b": [0.8, 0.6, 0.1, 0.7], "delta": [-0.1, 0.2, -0.1, 0.0],
                         "retrieved": ["both", "B only", "neither", "both"], "unit": ["plate_1"] * 4,
                         "q_value_a": [0.01, 0.2, 0.9, 0.02], "q_value_b": [0.02, 0.01, 0.9, 0.03]})


def test_points_diagonal_and_colours():
    fig = compare_figure(_data(), 0.05, mean_delta=0.0)
    names = [t.name for t in fig.data]
    assert names == ["A = B", "mean delta +0.000", "retrieved by both (2)", "by B only (1)", "by neither (1)"]
    assert list(fig.data[0].x) == [0, 1] and list(fig.data[0].y) == [0, 1]
    both = fig.data[2]
    assert list(both.x) == [0.9, 0.7] and list(both.y) == [0.8, 0.7] and both.marker.color == COLORS["both"]
    assert both.customdata[0][0] == "p1" and both.customdata[0][4] == "plate_1"
    assert "q ≤ 0.05" in fig.layout.title.text
    assert fig.layout.xaxis.range == (-0.03, 1.03)


def test_the_mean_line_stays_inside_the_square():
    fig = compare_figure(_data(), 0.1, mean_delta=-0.25)
    line = fig.data[1]
    assert np.allclose(line.x, [0.25, 1.0]) and np.allclose(line.y, [0.0, 0.75])
    assert [t.name for t in compare_figure(_data(), 0.1, mean_delta=float("nan")).data][1] == "retrieved by both (2)"
