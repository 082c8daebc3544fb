"""Dask on the crossed layout: one component of every plate, cut into shards of perturbations, each sent
only its own rows and its plates' controls; the results are those of one process, bit for bit."""

import functools

import numpy as np
import pandas as pd
import pytest

import apnull.score.engine.executor as executor
import apnull.score.nulls.conditional as conditional
import apnull.score.nulls.permutation as permutation
from apnull.memo import rough_nbytes
from apnull.score import score_profiles
from apnull.score.engine.shards import screen_shards, strata_order
from apnull.score.table.screen import prepare_screen
from score_helpers import block_table, crossed_table

KW = dict(perturbation="cmp", control="DMSO", stratum="plate", seed=7)


#: the crossed layout (one component of 13 plates by default) and the block layout with a plate effect
crossed = crossed_table
block = functools.partial(block_table, plate_effect=0.4)


def work_of(table):
    feats = [c for c in table.columns if c.startswith("f")]
    screen = prepare_screen(table, "cmp", "DMSO", "plate", feats, "cosine")
    return permutation.ScreenWork(screen, 7)


def _same(a, b):
    pd.testing.assert_frame_equal(a.groups, b.groups, check_exact=True)
    pd.testing.assert_frame_equal(a.queries, b.queries, check_exact=True)


@pytest.fixture
def sent(monkeypatch):
    """Every :class:`executor.Scattered` a run makes (its ``sent``: each part's shard, items, bytes)."""
    made = []
    real = executor.Scattered.__init__

    def spy(self, client, work):
        real(self, client, work)
        made.append(self)

    monkeypatch.setattr(executor.Scattered, "__init__", spy)
    return made


def test_a_shard_is_sent_only_its_rows_and_its_plates_controls():
    """One component of 13 plates cut into 8 shards: each part holds its perturbations' replicate rows
    and the controls of exactly the plates they are on, so what is sent scales with the shard (the code
    before sent the whole component, every plate, as one part)."""
    work = work_of(crossed())
    sc, pt = work.screen, work.screen.perts
    assert len(work.components) == 1
    whole = rough_nbytes(work.part(np.arange(work.size), True))
    shards = work.shards(8)
    assert len(shards) >= 6
    assert np.array_equal(np.sort(np.concatenate(shards)), np.arange(work.size))  # each item in one shard
    total = 0
    for items in shards:
        part = work.part(items, True)
        assert np.array_equal(part.index, items)
        rows = pt.rows[np.concatenate([np.arange(pt.qoff[i], pt.qoff[i + 1]) for i in items])]
        assert np.array_equal(part.arrays.X, sc.X[rows])  # its replicates' rows, nothing else
        plates = np.unique(np.concatenate([pt.seg_stratum[pt.soff[i]:pt.soff[i + 1]] for i in items]))
        [(every, sizes)] = part.comps  # one read of the controls, each plate's count
        assert len(sizes) == plates.size < len(pt.strata)  # the controls of its own plates only
        for got, s in zip(np.split(every, np.cumsum(sizes)[:-1]), plates.tolist()):
            assert np.array_equal(got, sc.X[sc.controls[pt.strata[s]]])
        size = rough_nbytes(part)
        assert size < 0.5 * whole
        total += size
    assert total < 2 * whole


def test_shards_keep_small_components_whole():
    """The block layout (a component a plate, each under a shard's share): whole components, as
    before; and a unit over its share is cut in order of its items' strata."""
    work = work_of(block())
    comps = [set(m.tolist()) for m, _ in work.components]
    for items in work.shards(4):
        got = set(items.tolist())
        assert all(c <= got or not c & got for c in comps)  # never a component cut
    qoff = np.arange(7) * 2
    soff = np.array([0, 2, 4, 6, 7, 9, 11])
    seg = np.array([5, 1, 0, 3, 1, 0, 2, 9, 4, 8, 0])
    # the items' strata: [1 5], [0 3], [0 1], [2], [4 9], [0 8]
    assert strata_order(soff, seg, np.arange(6)).tolist() == [2, 1, 5, 0, 3, 4]
    shards = screen_shards([np.arange(6)], qoff, soff, seg, 3)
    assert [s.tolist() for s in shards] == [[1, 2], [0, 5], [3, 4]]


@pytest.mark.parametrize("B", [99, "auto"])
def test_crossed_screen_on_dask_equals_in_process(monkeypatch, sent, B):
    """Fixed B and adaptive rounds (the exact query law counted too) on a cut component: the tables of
    one process, bit for bit, and the work went out in several shards, each with fewer plates."""
    from dask.distributed import Client, LocalCluster
    from apnull.score.engine.connect import LOCAL_CLUSTER_HTTP

    monkeypatch.setattr(permutation, "CROSSED_MIN_PERTURBATIONS", 0)  # the crossed kernels on a small screen
    monkeypatch.setattr(conditional, "EXACT_MIN_QUERIES", 1)
    table = crossed()
    local = score_profiles(table, permutations=B, **KW)
    with LocalCluster(n_workers=2, threads_per_worker=1, processes=False, **LOCAL_CLUSTER_HTTP) as cluster, \
            Client(cluster) as client:
        _same(local, score_profiles(table, permutations=B, scheduler=client, **KW))
    [where] = sent
    assert len(where.sent) >= 8
    assert sum(n for _, n, _ in where.sent) == table["cmp"].nunique() - 1  # every perturbation sent once
    if B == "auto":
        assert (local.queries["permutations"] > 999).any()  # later rounds ran, on the shards of their units


def test_block_screen_on_dask_unchanged(sent):
    """The block layout: whole components a shard, the same tables as in process."""
    from dask.distributed import Client, LocalCluster
    from apnull.score.engine.connect import LOCAL_CLUSTER_HTTP

    table = block()
    local = score_profiles(table, permutations="auto", **KW)
    with LocalCluster(n_workers=2, threads_per_worker=1, processes=False, **LOCAL_CLUSTER_HTTP) as cluster, \
            Client(cluster) as client:
        _same(local, score_profiles(table, permutations="auto", scheduler=client, **KW))


@pytest.mark.slow
@pytest.mark.parametrize("B", [99, "auto"])
def test_worker_processes_on_a_crossed_screen(B):
    """``workers=2`` (two worker processes) on a crossed screen of 240 compounds (the crossed kernels'
    size), fixed B and adaptive: the tables of one process, bit for bit."""
    table = crossed(compounds=240, replicates=5, plates=23, controls=8, d=10, seed=3)
    _same(score_profiles(table, permutations=B, **KW), score_profiles(table, permutations=B, workers=2, **KW))


@pytest.mark.slow
def test_a_local_cluster_runs_without_the_profiler():
    """``workers=N``: the cluster apnull starts takes LOCAL_CLUSTER_CONFIG in its worker processes (no
    statistical profiler sampling every 10 ms, slower polling), not dask's defaults."""
    from apnull.score.engine.connect import LOCAL_CLUSTER_CONFIG, starting

    def settings():
        import dask

        return {key: dask.config.get(key) for key in LOCAL_CLUSTER_CONFIG}

    with starting(None, 1) as client:
        [got] = client().run(settings).values()
    assert got == LOCAL_CLUSTER_CONFIG


def test_in_process_groups_are_drawn_in_order_of_their_plates():
    """In process, a group's perturbations are drawn in :func:`strata_order` (the pools of one set of
    plates read the same shared blocks of control pairs one after the other), each batch consecutive
    perturbations of that order; in index order before, which on this screen is not that order."""
    work = work_of(crossed())
    pt = work.screen.perts
    [group] = work.groups()
    want = strata_order(pt.soff, pt.seg_stratum, np.arange(work.size))
    assert not np.array_equal(want, np.arange(work.size))
    assert np.array_equal(group, want)
    seen = []

    def fn(part, pos, st, target, h):
        seen.append(part.index[pos])
        return {}

    run = executor.InProcess(work)
    items = np.arange(0, work.size, 3)  # a round of some of them: their order kept
    for _ in run.run(items, lambda chunk: {}, 0, 1, fn):
        pass
    assert len(seen) > 1 and all(b.size <= executor.BATCH for b in seen)
    assert np.array_equal(np.concatenate(seen), want[np.isin(want, items)])


@pytest.mark.parametrize("threads", [1, 2])
def test_the_order_of_drawing_changes_no_value(monkeypatch, threads):
    """The crossed tables are the same bits whether a group is drawn in order of its plates or of its
    perturbations' indices (each perturbation reads its own pools and streams)."""
    table = crossed(compounds=60)
    want = score_profiles(table, permutations="auto", threads=threads, **KW)
    monkeypatch.setattr(permutation, "strata_order", lambda soff, seg_stratum, items: np.sort(items))
    _same(score_profiles(table, permutations="auto", threads=threads, **KW), want)


def test_batch_bounds_give_a_heavy_item_a_batch_of_its_own():
    """:func:`executor.batch_bounds` cuts a group's items in order, every item once: by ``size`` when
    their costs are equal (as without weights), and a heavy item (a perturbation with replicates on
    every plate) never shares a batch with another heavy one."""
    def covers(bounds, count):
        return [a for a, _ in bounds] == [0] + [b for _, b in bounds[:-1]] and bounds[-1][1] == count

    for count, size in ((1, 1), (10, 2), (250, 64), (2000, 64)):
        plain = executor.batch_bounds(count, None, size, 0.0)
        assert covers(plain, count) and all(b - a <= size for a, b in plain)
        assert executor.batch_bounds(count, np.full(count, 21.0), size, size * 21.0) == plain
    w = np.full(300, 21.0)
    heavy = [5, 6, 7, 150, 299]
    w[heavy] = 4557.0  # k = 68 against k = 5
    size = 10
    bounds = executor.batch_bounds(w.size, w, size, size * w.mean())
    assert covers(bounds, w.size) and all(b - a <= size for a, b in bounds)
    assert all(sum(a <= h < b for h in heavy) == 1 for a, b in bounds if any(a <= h < b for h in heavy))
    assert sum(any(a <= h < b for h in heavy) for a, b in bounds) == len(heavy)


def with_controls(count=3):
    """A crossed screen of 60 compounds with ``count`` positive controls of two wells on every plate
    (JUMP's plates carry them), its work and the controls' item indices."""
    table = crossed(compounds=60)
    feats = [c for c in table.columns if c.startswith("f")]
    rng = np.random.default_rng(3)
    plates = sorted(table["plate"].unique())
    rows = pd.DataFrame({"cmp": [f"pos{i}" for i in range(count) for _ in plates for _ in range(2)],
                         "plate": [p for _ in range(count) for p in plates for _ in range(2)]})
    rows[feats] = rng.standard_normal((len(rows), len(feats)))
    table = pd.concat([table, rows], ignore_index=True)
    work = work_of(table)
    names = work.screen.perts.keys
    pos = {i for i in range(work.size) if str(names[i]).startswith("pos")}
    assert len(pos) == count and np.all(np.diff(work.screen.perts.qoff)[sorted(pos)] == 2 * len(plates))
    return table, work, pos


def test_heavy_perturbations_spread_over_batches_and_change_no_value():
    """A crossed screen with positive controls of two wells on every plate: in process, each control's
    round is its own batch or shares one with light perturbations only (before, the controls,
    consecutive in drawing order, filled one batch and so one thread); the tables are the same bits on
    one thread and on two."""
    table, work, pos = with_controls()
    seen = []

    def fn(part, at, st, target, h):
        seen.append(set(part.index[at].tolist()))
        return {}

    with executor.thread_pool(2) as pool:
        for _ in executor.InProcess(work, pool).run(np.arange(work.size), lambda chunk: {}, 0, 1, fn):
            pass
    assert all(len(batch & pos) <= 1 for batch in seen) and sum(len(batch & pos) for batch in seen) == 3
    _same(score_profiles(table, permutations=199, threads=1, **KW),
          score_profiles(table, permutations=199, threads=2, **KW))


def test_heavy_perturbations_spread_over_shards_and_tasks_on_dask(sent, monkeypatch):
    """On dask the shards are of similar cost, not of similar replicates: each of four positive controls
    (k = 26: 651 pairs a draw, a compound's 21) has a shard of its own, so the workers holding them
    share them; sized by replicates, they had shared one. A round's tasks are cut by cost too: with every
    item in one shard, each control is a task of its own (before, a task of the round's mean size). The
    tables are those of one process, bit for bit."""
    from dask.distributed import Client, LocalCluster
    from apnull.score.engine.connect import LOCAL_CLUSTER_HTTP

    table, work, pos = with_controls(4)
    shards = work.shards(4)
    assert np.array_equal(np.sort(np.concatenate(shards)), np.arange(work.size))
    assert [len(pos & set(s.tolist())) for s in shards].count(1) == 4  # one control a shard
    plain = screen_shards([m for m, _ in work.components], work.screen.perts.qoff, work.screen.perts.soff,
                          work.screen.perts.seg_stratum, 4)
    assert max(len(pos & set(s.tolist())) for s in plain) > 1  # by replicates they shared one
    def fn(part, at, st, target, h):
        return {"items": set(part.index[at].tolist())}

    with LocalCluster(n_workers=2, threads_per_worker=1, processes=False, **LOCAL_CLUSTER_HTTP) as cluster, \
            Client(cluster) as client:
        for whole in (False, True):  # the controls in shards of their own, then all in one shard
            if whole:
                monkeypatch.setattr(work, "shards", lambda count: [np.arange(work.size)])
            seen = [out["items"] for _, out in executor.Scattered(client, work).run(np.arange(work.size),
                                                                                     lambda chunk: {}, 0, 1, fn)]
            assert all(len(task & pos) <= 1 for task in seen) and sum(len(task & pos) for task in seen) == 4
            assert set().union(*seen) == set(range(work.size))
        _same(score_profiles(table, permutations=199, **KW), score_profiles(table, permutations=199, scheduler=client,
                                                                            **KW))


def test_the_next_shard_is_made_while_one_is_sent(monkeypatch, sent):
    """The client makes the next shard's part on a thread of its own while it sends one (sending waits on
    the worker): every shard but the first is made ahead, each once, and the tables are those of one
    process, bit for bit."""
    import threading

    from dask.distributed import Client, LocalCluster
    from apnull.score.engine.connect import LOCAL_CLUSTER_HTTP

    monkeypatch.setattr(permutation, "CROSSED_MIN_PERTURBATIONS", 0)
    made, real = [], permutation.ScreenWork.part

    def part(self, items, worker):
        if worker:
            made.append((threading.current_thread().name, tuple(np.asarray(items).tolist())))
        return real(self, items, worker)

    monkeypatch.setattr(permutation.ScreenWork, "part", part)
    table = crossed()
    local = score_profiles(table, permutations="auto", **KW)
    with LocalCluster(n_workers=2, threads_per_worker=1, processes=False, **LOCAL_CLUSTER_HTTP) as cluster, \
            Client(cluster) as client:
        _same(local, score_profiles(table, permutations="auto", scheduler=client, **KW))
    [where] = sent
    assert len(made) == len(where.sent) >= 8 and len({items for _, items in made}) == len(made)  # each once
    assert sum(not name.startswith("apnull-shard") for name, _ in made) == 1  # the first, made as it is sent


@pytest.mark.parametrize("normalize", ["none", "plate"])
def test_a_float32_table_is_sent_as_it_is_held_and_prepared_on_the_worker(monkeypatch, normalize):
    """A float32 table read when asked (as a large one is): a worker is sent its rows and controls as the
    table holds them (:class:`RawRows`, float32: half the bytes of the prepared float64 rows) and prepares
    them there, with the plates' normalisation when asked; the tables are those of one process, bit for bit.
    The rows come from the float32 copy the run keeps (a table changed once the run is over is refused when
    read: ``test_score_rows``)."""
    from dask.distributed import Client, LocalCluster
    import apnull.score.table.rows as rows_module
    from apnull.score.engine.connect import LOCAL_CLUSTER_HTTP
    from apnull.score.table.rows import RawRows

    monkeypatch.setattr(permutation, "CROSSED_MIN_PERTURBATIONS", 0)
    monkeypatch.setattr(rows_module, "FLOAT64_CELLS", 0)  # read from the table when asked, as a large one is
    made, real = [], permutation.ScreenWork.part

    def part(self, items, worker):
        out = real(self, items, worker)
        if worker:
            made.append(out)
        return out

    monkeypatch.setattr(permutation.ScreenWork, "part", part)
    table = crossed(dtype=np.float32)
    local = score_profiles(table, permutations="auto", normalize=normalize, **KW)
    with LocalCluster(n_workers=2, threads_per_worker=1, processes=False, **LOCAL_CLUSTER_HTTP) as cluster, \
            Client(cluster) as client:
        _same(local, score_profiles(table, permutations="auto", normalize=normalize, scheduler=client, **KW))
    sent = [p.arrays.X for p in made] + [every for p in made for every, _ in p.comps]
    if normalize == "plate":  # normalised values are float64, held whole: their prepared rows are sent
        assert made and all(isinstance(x, np.ndarray) and x.dtype == np.float64 for x in sent)
        return
    assert made and all(isinstance(x, RawRows) and x.values.dtype == np.float32 for x in sent)
    sample = made[0].arrays.X  # from the float32 copy the run keeps: the table's values, nothing to check
    feats = [c for c in table.columns if table[c].dtype == np.float32]
    assert sample.hashes is None and sample.prepared().dtype == np.float64
    assert sample.values.tobytes() == table[feats].to_numpy()[sample.rows].tobytes()
