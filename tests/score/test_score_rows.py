"""A scored result holds no copy of the prepared matrix: its rows are read again from the table, bit for
bit, and a table changed after scoring is refused with a clear message."""

import warnings

import numpy as np
import pytest

from apnull.score import score_profiles
from apnull.score.table.screen import prepare_screen
from apnull.score.table.rows import PreparedRows, hold_rows, reading

from score_helpers import tiny_screen

LAYOUT = {"a": (6, {"A": 2, "B": 3}), "b": (5, {"A": 2, "C": 3}), "c": (7, {"D": 4})}


def _table(seed=0, scale=1.0):
    table = tiny_screen(np.random.default_rng(seed), LAYOUT, d=4)
    feats = [c for c in table.columns if c.startswith("f")]
    table[feats] = table[feats] * scale
    return table


@pytest.mark.parametrize("similarity", ["cosine", "correlation", "euclidean", "abs_cosine"])
@pytest.mark.parametrize("scale", [1.0, 1e-300, 1e300])
def test_rows_read_again_equal_the_prepared_matrix(similarity, scale):
    table = _table(scale=scale)
    screen = prepare_screen(table, "Metadata_pert", "DMSO", "Metadata_plate", None, similarity)
    held = hold_rows(screen, table, similarity)
    idx = np.random.default_rng(1).permutation(screen.X.shape[0])[:7]
    assert held.shape == screen.X.shape
    np.testing.assert_array_equal(held[idx].view(np.uint64), screen.X[idx].view(np.uint64))
    np.testing.assert_array_equal(held[np.arange(held.shape[0])], screen.X)
    np.testing.assert_array_equal(held[3], screen.X[3])
    np.testing.assert_array_equal(held[2:5], screen.X[2:5])


@pytest.mark.parametrize("dtypes", ["float64", "float32", "mixed"])
def test_rows_read_during_a_run_from_the_columns_held_equal_the_rows_read_alone(dtypes):
    table = _table(seed=3)
    feats = ["f0", "f1", "f2", "f3"]
    if dtypes != "float64":
        table = table.astype({f: np.float32 for f in (feats if dtypes == "float32" else feats[1::2])})
    screen = prepare_screen(table, "Metadata_pert", "DMSO", "Metadata_plate", None, "cosine")
    held = hold_rows(screen, table, "cosine")
    idx = np.random.default_rng(2).permutation(held.shape[0])[:9]
    alone = held[idx]
    with reading(held):
        assert held.columns is not None and len(held.columns) == 4
        inside = held[idx]
        with reading(held):  # a second block inside the first keeps the same arrays
            assert held[idx].tobytes() == inside.tobytes()
        assert held.columns is not None
    assert held.columns is None  # let go: a table changed after the run is read again, and refused
    assert inside.tobytes() == alone.tobytes() and inside.flags.c_contiguous
    with reading(screen.X if not isinstance(screen.X, PreparedRows) else np.zeros(1)):  # anything else: nothing
        pass
    table["f1"] = table["f1"] + 1.0
    with pytest.raises(ValueError, match="changed after scoring"):
        held[idx]


def test_rows_after_dropped_rows_and_features_and_odd_column_names():
    table = _table()
    table = table.rename(columns={"f1": 7, "f2": "f 2 (µm)"})
    table.loc[3, "f0"] = np.nan      # a control row with a missing value
    table.loc[10, 7] = np.inf
    for nan in ("drop-rows", "drop-features"):
        screen = prepare_screen(table, "Metadata_pert", "DMSO", "Metadata_plate", None, "cosine", nan=nan)
        held = hold_rows(screen, table, "cosine")
        np.testing.assert_array_equal(held[np.arange(held.shape[0])], screen.X)


def test_result_keeps_no_matrix_and_null_maps_still_reproduce_the_pvalue():
    table = _table()
    res = score_profiles(table, stratum="Metadata_plate", permutations=199, seed=3)
    held = res._screen.X
    assert isinstance(held, PreparedRows)
    assert held.table is table  # the caller's own table, not a copy
    for name, p in zip(res.groups["Metadata_pert"], res.groups["p_value"]):
        null = res.null_maps(name)
        mAP = float(res.groups.loc[res.groups["Metadata_pert"] == name, "mAP"].iloc[0])
        assert p == pytest.approx((1 + np.sum(null >= mAP - 1e-12)) / (1 + null.size))


def test_auto_result_null_maps_use_the_draws_of_the_run():
    table = _table(seed=2)
    res = score_profiles(table, stratum="Metadata_plate", permutations="auto", seed=0)
    name = res.groups["Metadata_pert"].iloc[0]
    assert res.null_maps(name).size == int(res.groups["permutations"].iloc[0])


def test_a_table_changed_after_scoring_is_refused():
    table = _table()
    res = score_profiles(table, stratum="Metadata_plate", permutations=99, seed=0)
    table.loc[table["Metadata_pert"] == "DMSO", "f0"] += 1.0  # the caller edits the table in place
    with pytest.raises(ValueError, match="changed after scoring"):
        res.null_maps("A")
    table2 = _table()
    res2 = score_profiles(table2, stratum="Metadata_plate", permutations=99, seed=0)
    del table2["f3"]
    with pytest.raises(ValueError, match="no longer has the feature column 'f3'"):
        res2.null_maps("B")


def test_several_perturbation_columns_read_rows_of_the_callers_table():
    table = _table()
    table.insert(1, "Metadata_dose", np.where(table["Metadata_pert"] == "DMSO", "0", "1"))
    res = score_profiles(table, perturbation=["Metadata_pert", "Metadata_dose"], stratum="Metadata_plate",
                         permutations=99, seed=0)
    assert res._screen.X.table is table
    name = res._screen.perts.names[0]
    null = res.null_maps(name)
    assert null.size == 99
    row = res._group_row(res._screen.perts[0])
    mAP, p = res.groups["mAP"].iloc[row], res.groups["p_value"].iloc[row]
    assert p == pytest.approx((1 + np.sum(null >= mAP - 1e-12)) / 100)


@pytest.mark.parametrize("change", ["rows dropped", "text column", "zero row", "nan"])
def test_any_change_of_the_table_gives_a_clear_error(change):
    table = _table()
    res = score_profiles(table, stratum="Metadata_plate", permutations=99, seed=0)
    if change == "rows dropped":
        with warnings.catch_warnings():  # in-place drop is deprecated in newer pandas; users still do it
            warnings.simplefilter("ignore")
            table.drop(index=table.index[-6:], inplace=True)
    elif change == "text column":
        table["f1"] = table["f1"].map(lambda v: f"{v:.3f} µm")
    elif change == "zero row":
        table.loc[:, ["f0", "f1", "f2", "f3"]] = 0.0
    else:
        table.loc[0, "f2"] = np.nan
    with pytest.raises(ValueError, match="changed after scoring.*score it again"):
        for name in res.groups["Metadata_pert"]:
            res.null_maps(name)
