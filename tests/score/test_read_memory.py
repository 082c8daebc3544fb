"""Large tables: float32 features are held as float32 and prepared in float64 a block of rows at a time,
with the same results as the float64 path; Parquet by path is limited by what it decodes; reading and
preparing say their progress. The tables here are small, so each test makes them count as large
(``rows.FLOAT64_CELLS`` 0), except the one on the bound itself."""

import functools
import io
import tracemalloc

import numpy as np
import pandas as pd
import pytest

from apnull.cli import main
from apnull.score import read_table, score_profiles
from apnull.score.nulls import permutation
from apnull.score.table.matrix import compact_dtype, feature_matrix, row_hash
from apnull.score.table import rows as prepared
from apnull.score.table.rows import BlockRows, PreparedRows
from apnull.score.table.screen import prepare_screen
from score_helpers import block_table, crossed_table, draws_before_laws


def crossed(compounds=60, d=12, seed=0):
    """The crossed layout with float32 features: 3 replicates, the wells on the plates in turn, 20 a plate."""
    return crossed_table(compounds, 3, max(3, -(-compounds * 3 // 20)), 6, d, seed, step=3, dtype=np.float32)


#: the block layout with float32 features and ties (two equal controls, a tie in the first feature)
block = functools.partial(block_table, perts=30, plates=3, controls=12, d=9, ties=True, dtype=np.float32, feature="g")


@pytest.fixture(autouse=True)
def large(monkeypatch):
    """Every table counts as larger than a run holds whole in float64 (a small one is prepared whole)."""
    monkeypatch.setattr(prepared, "FLOAT64_CELLS", 0)


def as64(t):
    out = t.copy()
    feats = [c for c in t.columns if t[c].dtype == np.float32]
    out[feats] = out[feats].astype(np.float64)
    return out


SIMS = ["cosine", "correlation", "euclidean", "abs_cosine", "manhattan", "chebyshev"]


@pytest.mark.parametrize("layout", [crossed, block])
@pytest.mark.parametrize("similarity", SIMS)
def test_float32_features_give_the_float64_tables_bit_for_bit(layout, similarity):
    """The float32 table, held as float32 and prepared a block at a time, scores exactly as the same values
    given as float64 (held and prepared whole): every table, every null value."""
    t32 = layout()
    t64 = as64(t32)
    kw = dict(perturbation="cmp", control="DMSO", stratum="plate", similarity=similarity, seed=3)
    a = score_profiles(t32, permutations=49, **kw)
    b = score_profiles(t64, permutations=49, **kw)
    assert isinstance(a._screen.X, PreparedRows) and isinstance(b._screen.X, PreparedRows)  # after the run
    pd.testing.assert_frame_equal(a.groups, b.groups)
    pd.testing.assert_frame_equal(a.queries, b.queries)
    name = a.groups["cmp"].iat[0]
    assert a.null_maps(name).tobytes() == b.null_maps(name).tobytes()


def test_near_ties_stay_ties_and_orders_as_the_float64_path():
    """Rows one float32 step apart, and copies of a row: the float32 path keeps exactly the float64 path's
    ties and orders (no tolerance: the float64 values of float32 cells are exact), so the tie-aware APs agree."""
    t32 = crossed(compounds=20, d=6, seed=5)  # rounds refine to 1,431 draws: 0.1 s a run (40 compounds: 1 s)
    feats = [c for c in t32.columns if c.startswith("f")]
    vals = t32[feats].to_numpy().copy()
    vals[1] = np.nextafter(vals[0], np.float32(np.inf))  # one ulp from another replicate
    vals[2] = vals[0]  # an exact copy
    vals[-1] = vals[-2]  # two controls equal
    t32[feats] = vals
    a = score_profiles(t32, "cmp", "DMSO", "plate", permutations="auto", seed=1)
    b = score_profiles(as64(t32), "cmp", "DMSO", "plate", permutations="auto", seed=1)
    pd.testing.assert_frame_equal(a.groups, b.groups)
    pd.testing.assert_frame_equal(a.queries, b.queries)


@pytest.mark.parametrize("kw", [dict(nan="drop-rows"), dict(nan="drop-features"),
                                dict(negatives="others", control=None, nan="drop-rows"),
                                dict(positives_differ_by="well", nan="drop-features")])
def test_the_float32_path_with_missing_values_and_other_designs(kw):
    t32 = block()
    t32["well"] = [f"w{i % 4}" for i in range(len(t32))]
    t32.loc[9, "g2"] = np.nan
    opts = dict(perturbation="cmp", control="DMSO", stratum="plate", permutations=29, seed=0)
    opts.update(kw)
    a = score_profiles(t32, **opts)
    b = score_profiles(as64(t32), **opts)
    pd.testing.assert_frame_equal(a.groups, b.groups)
    pd.testing.assert_frame_equal(a.queries, b.queries)
    assert a.warnings == b.warnings


@pytest.mark.parametrize("layout", [crossed, block])
def test_a_small_float32_table_is_held_whole_with_the_same_results(monkeypatch, layout):
    """A float32 table of at most ``FLOAT64_CELLS`` values is prepared whole in float64 (a part would copy
    about all of its rows anyway), a larger one read from the table when asked: the same tables bit for
    bit, and either result keeps no matrix (its rows read from the table again)."""
    t32 = layout()
    opts = dict(perturbation="cmp", control="DMSO", stratum="plate", permutations="auto", seed=1)
    lazy = score_profiles(t32, **opts)
    cells = len(t32) * sum(t32[c].dtype == np.float32 for c in t32.columns)
    monkeypatch.setattr(prepared, "FLOAT64_CELLS", cells)  # the bound itself: held whole
    s = prepare_screen(t32, "cmp", ["DMSO"], "plate", None, "cosine")
    assert isinstance(s.X, np.ndarray) and s.X.dtype == np.float64 and s.X.flags.c_contiguous
    held = score_profiles(t32, **opts)
    pd.testing.assert_frame_equal(lazy.groups, held.groups, check_exact=True)
    pd.testing.assert_frame_equal(lazy.queries, held.queries, check_exact=True)
    assert isinstance(lazy._screen.X, PreparedRows) and isinstance(held._screen.X, PreparedRows)
    monkeypatch.setattr(prepared, "FLOAT64_CELLS", cells - 1)  # one value more than the bound: read when asked
    assert isinstance(prepare_screen(t32, "cmp", ["DMSO"], "plate", None, "cosine").X, PreparedRows)


def test_normalize_and_binary_keep_the_float64_matrix():
    """normalize= makes new float64 values and binary features are used as they are: those keep the matrix."""
    t32 = block()
    s = prepare_screen(t32, "cmp", ["DMSO"], "plate", None, "cosine", normalize="controls")
    assert isinstance(s.X, np.ndarray) and s.X.dtype == np.float64
    s = prepare_screen(t32, "cmp", ["DMSO"], "plate", None, "cosine")
    assert isinstance(s.X, PreparedRows)


def test_crossed_parts_are_cut_into_groups_with_the_same_results(monkeypatch):
    """A crossed screen is one component; with rows made when asked its parts are cut into groups of about
    PART_CELLS values of replicate rows, the control tables built once: the same tables whatever the cut."""
    t32 = crossed(compounds=50)
    kw = dict(perturbation="cmp", control="DMSO", stratum="plate", permutations="auto", seed=2)
    want = score_profiles(as64(t32), **kw)
    monkeypatch.setattr(permutation, "PART_CELLS", 7 * 12)  # 7 rows of 12 features
    screen = prepare_screen(t32, "cmp", ["DMSO"], "plate", None, "cosine")
    work = permutation.ScreenWork(screen, 2)
    groups = work.groups()
    assert len(work.components) == 1 and len(groups) > 10
    assert np.array_equal(np.concatenate([np.sort(g) for g in groups]), work.components[0][0])  # cut in index order
    got = score_profiles(t32, **kw)
    pd.testing.assert_frame_equal(got.groups, want.groups)
    pd.testing.assert_frame_equal(got.queries, want.queries)


def test_the_next_groups_part_is_made_while_one_group_draws(monkeypatch):
    """In process, a component cut into groups: in each round the first group's part is made where the round
    runs, and each next one on a thread of its own while the batches of the group before it draw (made after
    them, it kept the threads waiting: a third of their time in the full JUMP screen's first round); each
    part once a round, and the same tables as one group."""
    import threading

    from apnull.score.engine import executor

    t32 = crossed(compounds=50)
    kw = dict(perturbation="cmp", control="DMSO", stratum="plate", permutations="auto", seed=2)
    want = score_profiles(as64(t32), **kw)
    monkeypatch.setattr(permutation, "PART_CELLS", 7 * 12)  # 7 rows of 12 features
    made, real_part, real_run = [], permutation.ScreenWork.part, executor.InProcess.run

    def part(self, items, worker):
        made.append((threading.current_thread().name, int(items[0]), items.size))
        return real_part(self, items, worker)

    def run(self, idx, *args, **kwargs):
        made.append(("round", threading.current_thread().name, 0))
        yield from real_run(self, idx, *args, **kwargs)

    monkeypatch.setattr(permutation.ScreenWork, "part", part)
    monkeypatch.setattr(executor.InProcess, "run", run)
    got = score_profiles(t32, **kw)
    pd.testing.assert_frame_equal(got.groups, want.groups)
    pd.testing.assert_frame_equal(got.queries, want.queries)
    rounds, ahead = 0, 0
    for k, entry in enumerate(made):
        if entry[0] != "round":
            continue
        rounds += 1
        parts = []
        for e in made[k + 1:]:
            if e[0] == "round":
                break
            parts.append(e)
        assert parts and parts[0][0] == entry[1]  # the first where the round runs
        assert all(name.startswith("apnull-part") for name, _, _ in parts[1:])  # the others ahead
        assert len({(first, size) for _, first, size in parts}) == len(parts)  # each once
        ahead += len(parts) - 1
    assert rounds > 2 and ahead > 10


def test_no_float64_copy_of_the_whole_table_is_made():
    """Preparing 120,000 rows x 80 float32 features (38 MB) allocates less than one float64 copy of them
    (77 MB) at its peak, its labels and checks included: the features are held as float32 and prepared
    a block of rows at a time (the float64 path allocated 99 MB here, this one 55 MB)."""
    rng = np.random.default_rng(0)
    rows, d = 120_000, 80
    plate = np.arange(rows) % 400
    lab = np.where(np.arange(rows) < 16_000, "DMSO", np.char.add("c", (np.arange(rows) // 4).astype(str)))
    t = pd.DataFrame(rng.standard_normal((rows, d), dtype=np.float32), columns=[f"f{i}" for i in range(d)])
    t.insert(0, "plate", plate.astype(str))
    t.insert(0, "cmp", lab)
    assert compact_dtype(t, [f"f{i}" for i in range(d)]) == np.float32
    table_bytes = rows * d * 4
    tracemalloc.start()
    try:
        screen = prepare_screen(t, "cmp", ["DMSO"], "plate", None, "cosine")
        peak = tracemalloc.get_traced_memory()[1]
    finally:
        tracemalloc.stop()
    assert isinstance(screen.X, PreparedRows)
    assert peak < 2 * table_bytes, f"peak {peak / 2**20:.1f} MB for a {table_bytes / 2**20:.1f} MB table"


def test_a_run_reads_its_rows_from_the_float32_copy_it_keeps_then_from_the_table(monkeypatch):
    """While a run lasts its rows are gathered from the float32 copy the preparation made (whole rows, no
    column of the table read again, no hash to check), with the bits the table gives; when the run ends the
    copy is let go: the result reads the table, and refuses it once changed."""
    t32 = crossed(compounds=50)
    kw = dict(perturbation="cmp", control="DMSO", stratum="plate", permutations="auto", seed=2)
    screen = prepare_screen(t32, "cmp", ["DMSO"], "plate", None, "cosine")
    X = screen.X
    feats = [f"f{i}" for i in range(12)]
    assert isinstance(X, PreparedRows) and X.kept.dtype == np.float32 and X.kept.flags.c_contiguous
    assert X.kept.tobytes() == t32[feats].to_numpy()[screen.rows].tobytes()
    idx = np.array([5, 0, 17, 17, 3])
    kept = X.raw(idx)
    assert kept.hashes is None and kept.values.dtype == np.float32
    from_copy = X[idx]
    prepared.let_go(X)
    assert X.kept is None and X.raw(idx).hashes is not None
    assert X[idx].tobytes() == from_copy.tobytes()

    read = []
    real = prepared.feature_matrix
    monkeypatch.setattr(prepared, "feature_matrix", lambda *a, **k: read.append(1) or real(*a, **k))
    res = score_profiles(t32, **kw)
    assert not read  # every part of the run came from the copy
    want = score_profiles(as64(t32), **kw)
    pd.testing.assert_frame_equal(res.groups, want.groups, check_exact=True)
    pd.testing.assert_frame_equal(res.queries, want.queries, check_exact=True)
    assert res._screen.X.kept is None
    name = res.groups["cmp"].iloc[0]
    assert res.null_maps(name).size == int(res.groups["permutations"].iloc[0]) and read  # read from the table
    t32.loc[t32["cmp"] == "DMSO", "f0"] += np.float32(1.0)
    with pytest.raises(ValueError, match="changed after scoring"):
        res.null_maps(name)


def test_block_rows_are_the_prepared_rows_of_the_float64_path():
    rng = np.random.default_rng(4)
    v = (rng.standard_normal((50, 7)) * np.exp(rng.uniform(-20, 20, (50, 1)))).astype(np.float32)
    t = pd.DataFrame(v, columns=list("abcdefg"))
    from apnull.score.table.matrix import scale_in_place
    for sim, e in [("cosine", 0), ("correlation", 0), ("euclidean", 9)]:
        want = scale_in_place(v.astype(np.float64), sim, e)
        rows = BlockRows(feature_matrix(t, list("abcdefg"), np.arange(50), np.float32), sim, e)
        idx = np.array([7, 3, 49, 0])
        assert rows[idx].tobytes() == want[idx].tobytes()
        assert rows[idx, 2].tobytes() == want[idx, 2].tobytes()
        assert rows[5].tobytes() == want[5].tobytes()
    assert row_hash([], v).tobytes() == row_hash([], v.astype(np.float64)).tobytes()
    with pytest.raises(ValueError, match="float32"):
        feature_matrix(as64(pd.DataFrame(v, columns=list("abcdefg")).assign(cmp="x", plate="y")), ["a"],
                       np.arange(3), np.float32)


# -- reading ----------------------------------------------------------------------------------------------

class Recorder:
    """A progress reporter that keeps what it is told."""

    def __init__(self):
        self.stages, self.calls = [], []

    def stage(self, units, scope=""):
        self.stages.append(units)

    def __call__(self, done, total):
        self.calls.append((self.stages[-1] if self.stages else None, done, total))


@pytest.fixture
def parquet(tmp_path):
    t = crossed(compounds=300, d=5)
    path = tmp_path / "screen.parquet"
    t.to_parquet(path, row_group_size=250)
    return t, path


def test_reading_a_row_group_at_a_time_reads_the_table_and_counts_rows(parquet, monkeypatch):
    """A Parquet file by its path is read a row group at a time (each group's buffers let go before the
    next; small groups a few together, up to READ_ROWS rows): the same table as pandas reads, float32 kept,
    and the rows read told after each read."""
    from apnull.score.table import subset
    from apnull.score.table.io import labels_as_text

    t, path = parquet
    rec = Recorder()
    got = read_table(path, labels=["cmp", "plate"], progress=rec)  # 1,170 rows in groups of 250: one read
    pd.testing.assert_frame_equal(got, labels_as_text(pd.read_parquet(path), ["cmp", "plate"]))
    assert [c[1] for c in rec.calls] == [len(t)]
    monkeypatch.setattr(subset, "READ_ROWS", 600)  # two groups a read
    rec = Recorder()
    got = read_table(path, labels=["cmp", "plate"], progress=rec)
    pd.testing.assert_frame_equal(got, labels_as_text(pd.read_parquet(path), ["cmp", "plate"]))
    assert [c[1] for c in rec.calls] == [500, 1000, len(t)]
    monkeypatch.setattr(subset, "READ_ROWS", 250)  # a group a read
    rec = Recorder()
    got = read_table(path, labels=["cmp", "plate"], progress=rec)
    pd.testing.assert_frame_equal(got, labels_as_text(pd.read_parquet(path), ["cmp", "plate"]))
    pd.testing.assert_frame_equal(read_table(path), pd.read_parquet(path))
    assert got["f0"].dtype == np.float32 and got["cmp"].dtype == object
    assert rec.stages == ["rows read"]
    assert [c[1] for c in rec.calls] == list(range(250, len(t), 250)) + [len(t)] and rec.calls[-1][2] == len(t)
    part = read_table(path, labels=["cmp"], columns=["cmp", "f3"], progress=Recorder())
    pd.testing.assert_frame_equal(part, labels_as_text(pd.read_parquet(path, columns=["cmp", "f3"]), ["cmp"]))
    with open(path, "rb") as fh:  # an upload: the same table
        pd.testing.assert_frame_equal(read_table(io.BytesIO(fh.read()), name="s.parquet", labels=["cmp", "plate"]), got)


def test_scoring_says_the_rows_prepared(parquet):
    t, path = parquet
    rec = Recorder()
    score_profiles(read_table(path, labels=["cmp", "plate"]), "cmp", "DMSO", "plate", permutations=9, progress=rec)
    assert rec.stages[:3] == ["rows checked for duplicates", "rows prepared", "perturbations"]
    for stage in rec.stages[:2]:
        counted = [c for c in rec.calls if c[0] == stage]
        assert counted and counted[-1][1:] == (len(t), len(t))
    plain = []  # a plain callable(done, total) is told the perturbations only, as score_profiles promises
    score_profiles(read_table(path, labels=["cmp", "plate"]), "cmp", "DMSO", "plate", permutations=9,
                   progress=lambda done, total: plain.append(total))
    assert plain and set(plain) == {300}


def test_the_command_line_prints_rows_read_and_prepared(parquet, monkeypatch):
    from apnull.cli import score_cmd
    from apnull.score.engine.progress import LineProgress

    t, path = parquet
    monkeypatch.setattr(score_cmd, "LineProgress", lambda err, after=0, every=0, **names: LineProgress(err, 0.0, 0.0, **names))
    err = io.StringIO()
    assert main(["score", str(path), "--perturbation", "cmp", "--stratum", "plate", "--permutations", "9"],
                out=io.StringIO(), err=err) == 0
    lines = err.getvalue().splitlines()
    assert any(ln.startswith(f"apnull score: rows read: {len(t):,} of {len(t):,} (") for ln in lines)
    assert any(ln.startswith(f"apnull score: rows checked for duplicates: {len(t):,} of {len(t):,} (") for ln in lines)
    assert any(ln.startswith(f"apnull score: rows prepared: {len(t):,} of {len(t):,} (") for ln in lines)
    assert any(ln.startswith("apnull score: perturbations") for ln in lines)


def test_the_command_line_says_the_draws_spent(parquet, tmp_path, monkeypatch):
    """The last progress line gives the draws the run spent, mAP and per-query, as its tables count them, and
    the draws each query whose law was counted made before (recorded here as the count is asked for)."""
    from apnull.cli import score_cmd
    from apnull.score.engine.progress import LineProgress

    t, path = parquet
    monkeypatch.setattr(score_cmd, "LineProgress", lambda err, after=0, every=0, **names: LineProgress(err, 0.0, 0.0, **names))
    before = draws_before_laws(monkeypatch)
    err = io.StringIO()
    g, q = tmp_path / "g.csv", tmp_path / "q.csv"
    assert main(["score", str(path), "--perturbation", "cmp", "--stratum", "plate", "--permutations", "auto",
                 "--out-groups", str(g), "--out-queries", str(q)], out=io.StringIO(), err=err) == 0
    groups, queries = pd.read_csv(g), pd.read_csv(q)
    drew = queries["null"] == "conditional permutation"  # the crossed layout: every query drew or was counted
    counted = int((queries["null"] == "conditional law (all choices counted)").sum())
    assert int(drew.sum()) + counted == len(queries) and groups["permutations"].sum() > 100 * len(groups)
    laws = f"; the conditional laws of {counted:,} counted, not drawn" if counted else ""
    last = err.getvalue().splitlines()[-1]
    assert last.startswith(f"apnull score: draws spent: {int(groups['permutations'].sum()):,} mAP draws "
                           f"({len(groups):,} perturbations), {int(queries['permutations'][drew].sum()) + sum(before):,} "
                           f"per-query draws ({len(queries):,} queries{laws}) (")


def test_the_draws_spent_leave_out_the_laws_counted():
    """A query whose conditional law was counted: its choices are not draws, the draws it made before are."""
    from apnull.score.engine.progress import LineProgress, spent_line
    from apnull.score.results.outputs import Spent, tell_spent

    groups = pd.DataFrame({"permutations": [100, 6400]})
    queries = pd.DataFrame({"null": ["conditional permutation", "conditional law (all choices counted)",
                                     "exact law"], "permutations": [400, 1185921, 0]})
    err = io.StringIO()
    tell_spent(LineProgress(err, command="apnull score"), groups, queries)
    assert err.getvalue() == ""  # a run quicker than the reporter's 2 s: no line, as for every other
    tell_spent(LineProgress(err, after=0.0, command="apnull score"), groups, queries)
    assert err.getvalue() == ("apnull score: draws spent: 6,500 mAP draws (2 perturbations), 400 per-query draws "
                              "(3 queries; the conditional laws of 1 counted, not drawn) (0 s)\n")
    assert Spent.of(groups, queries) == Spent(map_draws=6500, perturbations=2, query_draws=400, queries=3, counted=1)
    assert Spent.of(groups, queries, 250).query_draws == 650  # 250 draws before the law was counted
    assert spent_line(Spent(1, 1, 0, 1, 0), 2.4) == ("draws spent: 1 mAP draws (1 perturbation), 0 per-query draws "
                                                     "(1 query) (2 s)")
    tell_spent(object(), groups, queries)  # a reporter without spent: nothing to say


def test_a_large_parquet_file_is_limited_by_what_it_decodes_not_by_its_size(tmp_path):
    """The command line no longer refuses a Parquet file past 200 MB on disk (read_table counts its
    uncompressed bytes, limit 4 GiB); a CSV keeps the file limit."""
    from apnull.cli.score_cmd import _input_file

    for name in ("big.parquet", "big.csv"):
        with open(tmp_path / name, "wb") as fh:  # sparse: nothing written
            fh.truncate(250 * 2**20)
    assert _input_file(str(tmp_path / "big.parquet")) == str(tmp_path / "big.parquet")
    with pytest.raises(Exception, match="the limit is 200 MB"):
        _input_file(str(tmp_path / "big.csv"))


def test_a_parquet_files_float32_features_are_read_as_one_row_major_array(tmp_path):
    """read_table gives the float32 columns of a Parquet file (labels aside) as the columns of one row-major
    array: the same frame as pandas reads (column order, index, missing values, a float32 label and columns
    of other types in their places), and prepare_screen reads that array itself: the run keeps no copy."""
    from apnull.score.table.io import labels_as_text
    from apnull.score.table.matrix import held_rows, rows_frame

    t = crossed(compounds=60, d=6)
    t.insert(3, "extra", np.arange(len(t), dtype=np.float64))  # another type, between the features
    t.insert(5, "dose", np.float32(0.5))  # a float32 label: read as text, not a feature of the array
    t.insert(6, "Metadata_conc", np.float32(1.5))  # float32 metadata, never a feature by default: beside the array
    t.loc[7, "f2"] = np.nan
    t.index = pd.Index(np.arange(len(t)) * 3 + 1, name="well")  # an index pandas writes and restores
    path = tmp_path / "screen.parquet"
    t.to_parquet(path, row_group_size=64)
    labels = ["cmp", "plate", "dose"]
    got = read_table(path, labels=labels)
    pd.testing.assert_frame_equal(got, labels_as_text(pd.read_parquet(path), labels), check_exact=True)
    feats = [f"f{i}" for i in range(6)]
    every = np.arange(len(got))
    held = held_rows(got, feats, every)
    array = held.array
    assert held.rows is None and array.flags.c_contiguous and array.shape == (len(got), 6)
    assert all(np.shares_memory(got[c].to_numpy(), array) for c in feats)
    assert not np.shares_memory(got["Metadata_conc"].to_numpy(), array)
    for run in (feats[:5], feats[1:4], feats[5:]):  # a run of the array's columns: a view of it, no copy
        view = held_rows(got, run, every).array
        assert np.shares_memory(view, array) and view.base is array
        np.testing.assert_array_equal(view, got[run].to_numpy())
    for apart in (feats[::2], feats[::-1], [feats[1], feats[0]]):  # not side by side in the array's order: a copy
        assert held_rows(got, apart, every) is None
    assert held_rows(t, feats, every) is None  # a frame pandas made: a copy
    some = held_rows(got, feats, every[::3])  # rows left out: still read from the array
    mine = got[feats].to_numpy()[::3]
    assert some.array is array and some.shape == mine.shape and some.nbytes == mine.nbytes
    np.testing.assert_array_equal(np.asarray(some), mine)
    np.testing.assert_array_equal(some[2:5], mine[2:5])
    np.testing.assert_array_equal(some[[4, 0]], mine[[4, 0]])
    cols = np.array([True, False, True, True, False, True])
    np.testing.assert_array_equal(some[:, cols], mine[:, cols])
    np.testing.assert_array_equal(some[3, 2], mine[3, 2])
    fewer = some.where_rows(np.arange(len(mine)) % 2 == 0)
    assert fewer.array is array
    np.testing.assert_array_equal(np.asarray(fewer), mine[::2])

    screen = prepare_screen(got, "cmp", ["DMSO"], "plate", feats, "cosine", nan="drop-rows")
    assert screen.X.kept.array is array and 7 not in screen.X.kept.rows  # the row with a NaN left out: no copy
    path2 = tmp_path / "whole.parquet"
    t.drop(index=t.index[7]).to_parquet(path2)
    whole = read_table(path2, labels=labels)
    screen = prepare_screen(whole, "cmp", ["DMSO"], "plate", feats, "cosine")
    assert np.shares_memory(screen.X.kept.array, whole["f0"].to_numpy())  # the table's own values, no copy
    assert screen.X.nbytes == screen.X.hashes.nbytes + whole[feats].memory_usage(index=False).sum()  # counted once
    part = prepare_screen(whole, "cmp", ["DMSO"], "plate", feats[1:], "cosine")  # a run of the array's columns
    assert np.shares_memory(part.X.kept.array, whole["f1"].to_numpy())
    np.testing.assert_array_equal(part.X[np.arange(9)], prepare_screen(t.drop(index=t.index[7]), "cmp", ["DMSO"],
                                                                      "plate", feats[1:], "cosine").X[np.arange(9)])
    kw = dict(perturbation="cmp", control="DMSO", stratum="plate", features=feats, permutations="auto", seed=4)
    mine = score_profiles(whole, **kw)
    theirs = score_profiles(labels_as_text(pd.read_parquet(path2), labels), **kw)
    pd.testing.assert_frame_equal(mine.groups, theirs.groups, check_exact=True)
    pd.testing.assert_frame_equal(mine.queries, theirs.queries, check_exact=True)
    kw["features"] = feats[1:]  # drawn from a view of the array's columns
    mine = score_profiles(whole, **kw)
    theirs = score_profiles(labels_as_text(pd.read_parquet(path2), labels), **kw)
    pd.testing.assert_frame_equal(mine.groups, theirs.groups, check_exact=True)
    pd.testing.assert_frame_equal(mine.queries, theirs.queries, check_exact=True)
    for similarity in ("cosine", "euclidean"):  # rows left out (a NaN cell, a missing label), drawn from the array
        unlabelled = t.copy()
        unlabelled.loc[unlabelled.index[20], "cmp"] = None
        unlabelled.to_parquet(tmp_path / "gaps.parquet", row_group_size=64)
        opts = dict(kw, features=feats, nan="drop-rows", similarity=similarity)
        gaps = read_table(tmp_path / "gaps.parquet", labels=labels)
        assert prepare_screen(gaps, "cmp", ["DMSO"], "plate", feats, similarity, nan="drop-rows").X.kept.rows.size \
            == len(gaps) - 2
        mine = score_profiles(gaps, **opts)
        theirs = score_profiles(labels_as_text(pd.read_parquet(tmp_path / "gaps.parquet"), labels), **opts)
        pd.testing.assert_frame_equal(mine.groups, theirs.groups, check_exact=True)
        pd.testing.assert_frame_equal(mine.queries, theirs.queries, check_exact=True)

    import pyarrow as pa
    one = pa.table({"cmp": ["a", "b"], "f0": pa.array([1.0, 2.0], pa.float32()), "g": [1.0, 2.0]})
    assert rows_frame([one], ["cmp"]) is None  # a single float32 column: as pyarrow gives it
    nullable = pd.DataFrame({"cmp": ["a", "b"], "f0": pd.array([1.0, None], dtype="Float32"),
                             "f1": pd.array([1.0, 2.0], dtype="Float32"), "f2": np.float32([1, 2])})
    nullable.to_parquet(tmp_path / "nullable.parquet")  # pandas's own Float32 columns come back as Float32
    pd.testing.assert_frame_equal(read_table(tmp_path / "nullable.parquet", labels=["cmp"]),
                                  labels_as_text(pd.read_parquet(tmp_path / "nullable.parquet"), ["cmp"]))
