"""read_table(columns=..., filters=...): the same table as a full read then a filter, holding far less;
the command line's --columns and --where."""

from __future__ import annotations

import io
import json
import subprocess
import sys
import textwrap

import numpy as np
import pandas as pd
import pyarrow.compute as pc
import pytest

from apnull.cli import main
from apnull.score import read_table

LABELS = ["Metadata_plate", "Metadata_pert"]


@pytest.fixture(scope="module")
def files(tmp_path_factory):
    d = tmp_path_factory.mktemp("subset")
    rng = np.random.default_rng(3)
    t = pd.DataFrame({"Metadata_plate": np.repeat([f"p{i}" for i in range(6)], 30),
                      "Metadata_pert": np.tile(np.arange(30), 6),  # integers: a label read as text
                      "Metadata_dose": np.tile([0.1, 1.0, 10.0], 60),
                      **{f"f{i}": rng.normal(size=180) for i in range(6)}})
    t.to_parquet(d / "t.parquet", row_group_size=30)
    t.to_csv(d / "t.csv", index=False)
    return d, t


def _full_then_filter(path, mask_of, columns=None):
    full = read_table(path, labels=LABELS)
    out = full.loc[mask_of(full)].reset_index(drop=True)
    return out if columns is None else out[columns]


CASES = [
    # (filters, the same rows as a mask of the full table read with labels as text)
    ({"Metadata_plate": ["p1", "p4"], "Metadata_pert": "7"},
     lambda t: t["Metadata_plate"].isin(["p1", "p4"]) & (t["Metadata_pert"] == "7")),
    ({"Metadata_dose": "10"}, lambda t: t["Metadata_dose"] == 10.0),
    ([("f1", ">", 0.5), ("Metadata_plate", "!=", "p0")], lambda t: (t["f1"] > 0.5) & (t["Metadata_plate"] != "p0")),
    ([[("f2", "<", -1.0)], [("f3", ">", 1.5)]], lambda t: (t["f2"] < -1.0) | (t["f3"] > 1.5)),
    (pc.field("f0") >= 0, lambda t: t["f0"] >= 0),
]


@pytest.mark.parametrize("suffix", ["parquet", "csv"])
@pytest.mark.parametrize("case", range(len(CASES)))
def test_a_filtered_read_equals_a_full_read_then_the_filter(files, suffix, case):
    d, _ = files
    filters, mask = CASES[case]
    path = d / f"t.{suffix}"
    got = read_table(path, labels=LABELS, filters=filters)
    pd.testing.assert_frame_equal(got, _full_then_filter(path, mask))
    cols = ["Metadata_plate", "Metadata_pert", "f1"]
    got = read_table(path, labels=LABELS, columns=cols, filters=filters)
    pd.testing.assert_frame_equal(got, _full_then_filter(path, mask, cols))


@pytest.mark.parametrize("suffix", ["parquet", "csv"])
def test_columns_alone_and_bad_names(files, suffix):
    d, t = files
    path = d / f"t.{suffix}"
    got = read_table(path, columns=["f2", "Metadata_plate"])
    assert list(got.columns) == ["Metadata_plate", "f2"]  # the file's order
    np.testing.assert_array_equal(got["f2"].to_numpy(), t["f2"].to_numpy())
    with pytest.raises(ValueError, match=r"no column 'Metadata_plat'.*close: Metadata_plate"):
        read_table(path, columns=["Metadata_plat"])
    with pytest.raises(ValueError, match=r"no column 'plate_x'"):
        read_table(path, filters={"plate_x": "p1"})
    with pytest.raises(ValueError, match=r"holds int64 values; 'seven' is not one"):
        read_table(path, filters={"Metadata_pert": "seven"})
    with pytest.raises(ValueError, match=r"no row of .* passes the filters"):
        read_table(path, filters={"Metadata_plate": "p9"})
    with pytest.raises(ValueError, match=r"filters name no column 'nope'"):
        read_table(path, filters=[("nope", "==", 1)])


def test_a_parquet_buffer_reads_filtered(files):
    d, t = files
    got = read_table(io.BytesIO((d / "t.parquet").read_bytes()), filters={"Metadata_plate": "p2"}, columns=["f0"])
    np.testing.assert_array_equal(got["f0"].to_numpy(), t.loc[t["Metadata_plate"] == "p2", "f0"].to_numpy())


MEASURE = textwrap.dedent("""
    import json, sys, tracemalloc
    import pyarrow as pa
    from apnull.score import read_table
    from apnull.score.table import subset
    path, mode = sys.argv[1], sys.argv[2]
    subset.READ_ROWS = 2_000  # a row group a read, as with a screen's groups of 65,536 rows
    kw = {"full": {}, "filtered": dict(columns=["Metadata_plate", "f0", "f1"], filters={"Metadata_plate": "p03"}),
          "spread": dict(filters={"Metadata_cmp": ["c0007", "c0100"]})}[mode]
    tracemalloc.start()
    table = read_table(path, labels=["Metadata_plate", "Metadata_cmp"], **kw)
    _, peak = tracemalloc.get_traced_memory()
    print(json.dumps({"rows": len(table), "arrow_peak": pa.default_memory_pool().max_memory(), "python_peak": peak}))
""")


def test_a_filtered_parquet_read_holds_far_less_than_a_full_read(tmp_path):
    """Peak memory of the read in a fresh process (pyarrow's pool, plus numpy/pandas through tracemalloc):
    one plate of 20 and 3 of 42 columns against the whole file; two compounds, whose rows are in every row
    group (no group skipped by its statistics), read a row group at a time."""
    rng = np.random.default_rng(0)
    n = 40_000
    t = pd.DataFrame({"Metadata_plate": np.repeat([f"p{i:02d}" for i in range(20)], n // 20),
                      "Metadata_cmp": np.tile([f"c{i:04d}" for i in range(n // 20)], 20),
                      **{f"f{i}": rng.normal(size=n) for i in range(40)}})
    path = tmp_path / "big.parquet"
    t.to_parquet(path, row_group_size=2_000)
    got = {}
    for mode in ("full", "filtered", "spread"):
        done = subprocess.run([sys.executable, "-c", MEASURE, str(path), mode], capture_output=True, text=True,
                              timeout=120)
        assert done.returncode == 0, done.stderr[-2000:]
        got[mode] = json.loads(done.stdout)
    assert got["full"]["rows"] == n and got["filtered"]["rows"] == n // 20
    full = got["full"]["arrow_peak"] + got["full"]["python_peak"]
    part = got["filtered"]["arrow_peak"] + got["filtered"]["python_peak"]
    assert full > 40 * n * 8  # the whole feature matrix passed through memory
    assert part < full / 8, got  # the full read no longer copies the table to convert its labels
    assert got["spread"]["rows"] == 40
    group = 2_000 * 40 * 8  # a row group's features
    assert got["full"]["arrow_peak"] > 20 * group  # the whole file passed through Arrow
    assert got["spread"]["arrow_peak"] < 3 * group, got  # a row group at a time (pyarrow's reader: about 46 of them)


def test_the_command_line_reads_part_of_the_file(files, tmp_path):
    d, t = files
    out, err = io.StringIO(), io.StringIO()
    code = main(["score", str(d / "t.parquet"), "--perturbation", "Metadata_pert", "--control", "1",
                 "--stratum", "Metadata_plate", "--where", "Metadata_plate=p1", "--where", "Metadata_plate=p2",
                 "--where", "Metadata_dose=1", "--columns", "f0", "f1", "--permutations", "9", "--json"],
                out=out, err=err)
    assert code == 0, err.getvalue()
    doc = json.loads(out.getvalue())
    assert doc["settings"]["where"] == {"Metadata_plate": ["p1", "p2"], "Metadata_dose": ["1"]}
    assert doc["settings"]["columns_read"] == ["f0", "f1"] and doc["settings"]["features"] == 2
    # dose 1 holds perturbations 1, 4, ..., 28 (one well per plate); 1 is the control: 9 x 2 queries
    assert len(doc["queries"]) == 18 and len(doc["groups"]) == 9
    assert "--where kept" in doc["settings"]["row"]
    out, err = io.StringIO(), io.StringIO()
    code = main(["score", str(d / "t.csv"), "--perturbation", "Metadata_pert", "--where", "Metadata_dose"],
                out=out, err=err)
    assert code == 2 and "COLUMN=VALUE" in err.getvalue()


def test_consistency_and_compare_read_part_of_their_files(tmp_path):
    from apnull.score import digits_example, digits_pipeline_pair

    screen = tmp_path / "screen.parquet"
    digits_example().to_parquet(screen)
    out, err = io.StringIO(), io.StringIO()
    code = main(["consistency", str(screen), "--perturbation", "Metadata_perturbation", "--annotation",
                 "Metadata_target", "--label-sep", "|", "--control", "DMSO", "--permutations", "9", "--json",
                 "--columns", *(f"px_{i:02d}" for i in range(0, 64, 4)), "--where", "Metadata_kind=control",
                 "--where", "Metadata_kind=real", "--where", "Metadata_kind=weak"], out=out, err=err)
    assert code == 0, err.getvalue()
    doc = json.loads(out.getvalue())
    assert doc["settings"]["where"] == {"Metadata_kind": ["control", "real", "weak"]}
    assert doc["settings"]["features"] == 16 and doc["settings"]["profiles"] == 9  # the 4 null ones left out
    a, b = digits_pipeline_pair(plates=4)
    a.to_parquet(tmp_path / "a.parquet")
    b.to_csv(tmp_path / "b.csv", index=False)
    out, err = io.StringIO(), io.StringIO()
    code = main(["compare", str(tmp_path / "a.parquet"), str(tmp_path / "b.csv"), "--key", "Metadata_plate",
                 "--key", "Metadata_well", "--perturbation", "Metadata_perturbation", "--stratum", "Metadata_plate",
                 "--where", "Metadata_plate=plate_1", "--where", "Metadata_plate=plate_3", "--permutations", "9",
                 "--json"], out=out, err=err)
    assert code == 0, err.getvalue()
    doc = json.loads(out.getvalue())
    assert {g["unit"] for g in doc["groups"]} == {"plate_1", "plate_3"}  # both files read the same two plates


def test_a_parquet_file_past_the_file_limit_is_read_in_part(files, monkeypatch):
    """A Parquet file read by its path is limited by the part it decodes (from the file's metadata), not by
    the file's size: the whole file when it fits, one plate of a file too large to read whole."""
    import io

    import pyarrow.parquet as pq

    from apnull.score.table import io as table_io
    from apnull.score.table import subset

    d, t = files
    path = d / "t.parquet"
    monkeypatch.setattr(table_io, "MAX_FILE_BYTES", 1000)  # far below this file's size
    pd.testing.assert_frame_equal(read_table(path), pd.read_parquet(path))  # by path: limited by what it decodes
    with pytest.raises(ValueError, match=r"the limit is 1000 bytes"):  # an upload keeps the file limit
        read_table(io.BytesIO(path.read_bytes()), name="t.parquet")
    monkeypatch.setattr(subset, "MAX_PART_BYTES", 1000)
    with pytest.raises(ValueError, match=r"'t.parquet': the file is 0 MB uncompressed; the limit is 0 MB"):
        read_table(path)
    monkeypatch.undo()
    monkeypatch.setattr(table_io, "MAX_FILE_BYTES", 1000)
    meta = pq.ParquetFile(path).metadata
    assert meta.num_row_groups == 6  # one plate a row group (30 rows each)
    names = [meta.schema.column(j).name for j in range(meta.num_columns)]
    one_plate = sum(meta.row_group(2).column(names.index(c)).total_uncompressed_size
                    for c in ("Metadata_plate", "f0"))
    assert subset.part_bytes(path, ["f0"], [("Metadata_plate", "in", ["p2"])]) == one_plate  # pruned by statistics
    whole = sum(meta.row_group(i).total_byte_size for i in range(6))
    assert subset.part_bytes(path, None, None) == whole
    monkeypatch.setattr(subset, "MAX_PART_BYTES", one_plate)
    got = read_table(path, columns=["f0"], filters={"Metadata_plate": "p2"})
    np.testing.assert_array_equal(got["f0"].to_numpy(), t.loc[t["Metadata_plate"] == "p2", "f0"].to_numpy())
    with pytest.raises(ValueError, match=r"the part of 't.parquet' asked for is .* read fewer columns or fewer plates"):
        read_table(path, columns=["f0"], filters={"Metadata_plate": ["p2", "p3"]})
