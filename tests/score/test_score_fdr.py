"""Benjamini-Hochberg against scipy and a plain reference."""

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from scipy.stats import false_discovery_control

from apnull.score import benjamini_hochberg


def reference_bh(p):
    p = np.asarray(p, float)
    T = p.size
    q = np.empty(T)
    for i in range(T):
        # q_i = min over j with p_j >= p_i of T p_j / rank_j
        ranks = np.array([np.sum(p <= p[j]) for j in range(T)])
        q[i] = min(1.0, min(T * p[j] / ranks[j] for j in range(T) if p[j] >= p[i]))
    return q


@given(st.lists(st.floats(0, 1), min_size=1, max_size=30))
@settings(max_examples=100, deadline=None)
def test_bh_matches_scipy_and_reference(p):
    q = benjamini_hochberg(p)
    np.testing.assert_allclose(q, false_discovery_control(p), rtol=1e-12, atol=1e-15)
    np.testing.assert_allclose(q, reference_bh(p), rtol=1e-12, atol=1e-15)
    order = np.argsort(p)
    assert np.all(np.diff(q[order]) >= -1e-15) and np.all(q <= 1)


def test_nan_kept_and_not_counted():
    q = benjamini_hochberg([0.01, np.nan, 0.04])
    assert np.isnan(q[1])
    np.testing.assert_allclose(q[[0, 2]], false_discovery_control([0.01, 0.04]))
    assert benjamini_hochberg([]).size == 0
    assert np.isnan(benjamini_hochberg([np.nan])).all()
    with pytest.raises(ValueError, match="between 0 and 1"):
        benjamini_hochberg([0.5, 1.5])
