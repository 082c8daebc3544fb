"""The one-copy feature matrix gives the same bits as the whole-array computation it replaces."""

import numpy as np
import pandas as pd
import pytest

from grouping_reference import grouped_rows

from apnull.score.table.matrix import CELLS, CHUNK, duplicate_rows, feature_matrix, row_hash, scale_in_place
from apnull.score.table.rows import BlockRows, prepared_hashes
from apnull.score.table.scale import euclidean_rows, unit_rows


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


@pytest.mark.parametrize("cells", [1, 30, 1 << 20])
def test_feature_matrix_of_float_columns_equals_column_by_column(cells, monkeypatch):
    """Float64 columns read a tile of rows at a time: the same bits as one column at a time (NaN, -0.0 and
    the row subset included), whatever the number of rows a tile holds (one, a few, all)."""
    from apnull.score.table import matrix as _matrix

    rng = np.random.default_rng(3)
    X = rng.standard_normal((50, 9))
    X[rng.random(X.shape) < 0.1] = np.nan
    X[0, 0] = -0.0
    df = pd.concat([pd.DataFrame({"Metadata_x": ["a"] * 50}), pd.DataFrame(X, columns=[f"f{i}" for i in range(9)]),
                    pd.DataFrame({"i": np.arange(50)})], axis=1)
    feats = ["f3", "f0", "f8", "f1", "f2", "f4", "f5", "f6", "f7"]
    monkeypatch.setattr(_matrix, "TILE_CELLS", cells)
    for used in (np.arange(50), np.array([4, 2, 49, 0, 7])):
        want = np.stack([df[c].to_numpy(dtype=np.float64, na_value=np.nan)[used] for c in feats], axis=1)
        got = feature_matrix(df, feats, used)
        assert got.flags.c_contiguous and got.tobytes() == want.tobytes()
        mixed = feature_matrix(df, feats + ["i"], used)  # an integer column: column by column
        assert mixed[:, :-1].tobytes() == want.tobytes() and mixed[:, -1].tolist() == used.tolist()


def test_a_repeated_column_name_is_an_error_unless_left_out():
    from apnull.score.table.columns import select_features

    df = pd.DataFrame([[1.0, 2.0, 3.0, "x", "y"]], columns=["f0", "f1", "f1", "Metadata_a", "Metadata_a"])
    with pytest.raises(ValueError, match="column 'f1' appears more than once"):
        select_features(df, None, set())
    with pytest.raises(ValueError, match="column 'f1' appears more than once"):
        select_features(df, ["f0", "f1"], set())
    assert select_features(df.iloc[:, [0, 1, 3, 4]], None, set())[0] == ["f0", "f1"]
    assert select_features(df, ["f0"], set())[0] == ["f0"]


def test_duplicate_rows_as_pandas():
    rng = np.random.default_rng(1)
    v = rng.integers(0, 2, (400, 3)).astype(float)
    v[v == 0] = -0.0 * rng.integers(0, 2, int((v == 0).sum()))  # -0.0 and 0.0 compare equal
    labels = np.array([f"p{i}" for i in rng.integers(0, 4, 400)], dtype=object)
    strata = np.array([str(i) for i in rng.integers(0, 2, 400)], dtype=object)
    want = pd.concat([pd.DataFrame({"p": labels, "s": strata}), pd.DataFrame(v)], axis=1).duplicated().to_numpy()
    assert np.array_equal(duplicate_rows(labels, strata, v), want) and want.any()


def test_row_hash_sees_any_one_value_changed_and_not_the_row_order():
    rng = np.random.default_rng(2)
    d = 37
    v = rng.standard_normal((CELLS // d + 9, d))  # more than one block of rows
    h = row_hash([], v)
    assert np.unique(h).size == v.shape[0]
    assert np.array_equal(row_hash([], v[::-1]), h[::-1])  # each row's hash is its own
    for i, j in [(0, 0), (5, d - 1), (v.shape[0] - 1, 17)]:
        for new in (np.nextafter(v[i, j], np.inf), -v[i, j], 0.0):
            w = v.copy()
            w[i, j] = new
            g = row_hash([], w)
            assert g[i] != h[i] and np.array_equal(np.delete(g, i), np.delete(h, i))
    swapped = v.copy()
    swapped[3, [1, 2]] = swapped[3, [2, 1]]  # the same values in other columns
    assert row_hash([], swapped)[3] != h[3]
    zeros = np.zeros((2, 3))
    zeros[1, 1] = -0.0
    assert row_hash([], zeros)[0] == row_hash([], zeros)[1]
    codes = [np.array([0, 1]), np.array([1, 0])]
    assert row_hash(codes, zeros)[0] != row_hash(codes, zeros)[1]


@pytest.mark.parametrize("similarity", ["cosine", "euclidean"])
def test_block_rows_hashed_in_one_pass_keep_the_first_column(similarity):
    v = _values(rows=3000, d=400).astype(np.float32)
    want = scale_in_place(v.astype(np.float64), similarity, 5)
    rows = BlockRows(v, similarity, 5)
    assert rows.first is None
    seen = []
    h = prepared_hashes(rows, lambda done, total: seen.append((done, total)))
    assert np.array_equal(h, row_hash([], want)) and seen[-1] == (3000, 3000) and len(seen) > 1
    idx = np.array([2999, 0, 17])
    assert rows.first is not None and rows[idx, 0].tobytes() == want[idx, 0].tobytes()
    assert rows[idx, 3].tobytes() == want[idx, 3].tobytes()


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
