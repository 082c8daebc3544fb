"""Several perturbation columns and positives_differ_by against copairs 0.5.5 (skipped without copairs).

Run with a Python that has copairs, e.g. ``/work/cpvenv/bin/python -m pytest`` on this file. The
comparison itself is ``benchmarks/copairs_activity.py`` (same screen builder, same copairs settings).
"""

from __future__ import annotations

import importlib.util
from pathlib import Path

import pytest

pytest.importorskip("copairs")


def _bench():
    path = Path(__file__).resolve().parents[2] / "benchmarks" / "copairs_activity.py"
    spec = importlib.util.spec_from_file_location("copairs_activity_bench", path)
    mod = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(mod)
    return mod


@pytest.mark.parametrize("seed, similarity", [(0, "cosine"), (1, "cosine"), (2, "abs_cosine")])
def test_equal_to_copairs(seed, similarity):
    bench = _bench()
    table = bench.make_screen(plates=3, compounds=10, controls=20, features=20, seed=seed)
    c = bench.compare(table, similarity)
    assert c["same_mn"]
    assert c["near_ties"] <= 2
    assert c["d_ap"] < 1e-9 and c["d_map"] < 1e-9
