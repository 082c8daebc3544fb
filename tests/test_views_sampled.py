"""apnull.views.sampled: the flip points join the grid of Figure 2 in order."""

import numpy as np

from apnull import rendle as sm
from apnull.views import sampled as sv


def test_flip_sizes_and_merge_put_the_exact_flips_on_the_grid():
    rankings = {k: list(v) for k, v in sm.PAPER_EXAMPLE.items()}
    sizes = np.array([1, 10, 100, 1000])
    curves = sm.expected_metric_curve(rankings, sm.PAPER_N, sizes, "ap")
    changes = sv.exact_order_changes(rankings, sm.PAPER_N, sizes, "ap", curves=curves)
    extra = sv.flip_sizes(sizes, changes)
    flips = [c["samples"] for c in changes[1:]]
    assert set(flips) <= set(extra) | set(sizes.tolist())
    more = sm.expected_metric_curve(rankings, sm.PAPER_N, extra, "ap")
    grid, merged = sv.merge_curves(sizes, curves, extra, more)
    assert np.all(np.diff(grid) > 0) and set(grid) == set(sizes) | set(extra)
    direct = sm.expected_metric_curve(rankings, sm.PAPER_N, grid, "ap")
    for name in rankings:
        np.testing.assert_allclose(merged[name], direct[name], rtol=1e-12)


def test_merge_without_extra_sizes_sorts_only():
    grid, merged = sv.merge_curves(np.array([5, 1]), {"A": np.array([0.5, 0.1])}, np.array([], dtype=np.int64), None)
    assert grid.tolist() == [1, 5] and merged["A"].tolist() == [0.1, 0.5]
