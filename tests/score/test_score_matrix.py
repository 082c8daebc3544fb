"""The one-copy feature matrix gives the same bits as the whole-array computation it replaces."""

import numpy as np
import pandas as pd
import pytest

from grouping_reference import grouped_rows

from apnull.score._matrix import CHUNK, duplicate_rows, feature_matrix, scale_in_place
from apnull.score._scale import euclidean_rows, unit_rows


def _values(rows=CHUNK + 77, d=7, seed=0):
    rng = np.random.default_rng(seed)
    X = rng.standard_normal((rows, d)) * np.exp(rng.uniform(-30, 30, (rows, 1)))
    X[::5, 3] = X[::5, 4]
    return X


@pytest.mark.parametrize("similarity", ["cosine", "correlation", "abs_cosine", "euclidean"])
def test_scale_in_place_matches_whole_array(similarity):
    X = _values()
    want = euclidean_rows(X) if similarity == "euclidean" else unit_rows(X, similarity == "correlation")
    got = scale_in_place(X.copy(), similarity)
    assert got.tobytes() == np.ascontiguousarray(want).tobytes()


def test_feature_matrix_reads_columns_as_numbers():
    df = pd.DataFrame({"a": [1, 2, 3], "b": pd.array([1.5, None, 2.0], dtype="Float64"), "c": ["x", "y", "z"]})
    got = feature_matrix(df, ["a", "b"], np.array([0, 1, 2]))
    assert got.flags.c_contiguous and got[0].tolist() == [1.0, 1.5] and np.isnan(got[1, 1])
    assert feature_matrix(df, ["a"], np.array([2, 0])).ravel().tolist() == [3.0, 1.0]


def test_duplicate_rows_as_pandas():
    rng = np.random.default_rng(1)
    v = rng.integers(0, 2, (400, 3)).astype(float)
    v[v == 0] = -0.0 * rng.integers(0, 2, int((v == 0).sum()))  # -0.0 and 0.0 compare equal
    labels = np.array([f"p{i}" for i in rng.integers(0, 4, 400)], dtype=object)
    strata = np.array([str(i) for i in rng.integers(0, 2, 400)], dtype=object)
    want = pd.concat([pd.DataFrame({"p": labels, "s": strata}), pd.DataFrame(v)], axis=1).duplicated().to_numpy()
    assert np.array_equal(duplicate_rows(labels, strata, v), want) and want.any()


@pytest.mark.parametrize("values", ["ties", "continuous", "first column tied"])
def test_grouped_rows_is_a_lexsort_per_group(values):
    rng = np.random.default_rng(2)
    X = rng.integers(0, 3, (300, 3)).astype(float)
    if values != "ties":
        X = rng.normal(size=(300, 3))
    if values == "first column tied":
        X[::3, 0] = 0.0
    labels = np.array([f"t{i}" for i in rng.integers(0, 20, 300)], dtype=object)
    strata = np.array([f"s{i}" for i in rng.integers(0, 3, 300)], dtype=object)
    members = labels != "t0"
    out = grouped_rows(X, labels, strata, members)
    assert [g[0] for g in out] == sorted(set(labels[members]))
    for key, keys, reps, first in out:
        idx = np.flatnonzero((labels == key) & members)
        assert first == idx[0] and keys == sorted(set(strata[idx]))
        for s, r in zip(keys, reps):
            sub = idx[strata[idx] == s]
            assert np.array_equal(r, sub[np.lexsort(X[sub].T[::-1])])
