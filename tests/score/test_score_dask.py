"""Dask runs give the in-process results bit for bit."""

import numpy as np
import pandas as pd
import pytest

from apnull.score import digits_screen, score_profiles

KW = dict(perturbation="Metadata_perturbation", stratum="Metadata_plate", permutations=199, seed=3)


def _check_same(a, b):
    pd.testing.assert_frame_equal(a.groups, b.groups, check_exact=True)
    pd.testing.assert_frame_equal(a.queries, b.queries, check_exact=True)


def test_local_cluster_equals_in_process():
    from dask.distributed import Client, LocalCluster
    from apnull.score.engine.connect import LOCAL_CLUSTER_HTTP

    table = digits_screen(seed=4)
    local = score_profiles(table, **KW)
    with LocalCluster(n_workers=2, threads_per_worker=1, processes=False, **LOCAL_CLUSTER_HTTP) as cluster, \
            Client(cluster) as client:
        _check_same(local, score_profiles(table, scheduler=client, **KW))
        _check_same(local, score_profiles(table, scheduler=cluster.scheduler_address, **KW))


@pytest.mark.slow
def test_worker_processes_equal_in_process():
    table = digits_screen(seed=4)
    _check_same(score_profiles(table, **KW), score_profiles(table, workers=2, **KW))


def test_missing_dask_is_a_clear_error(monkeypatch):
    """Without the optional extra, asking for workers says how to install it (no traceback)."""
    import builtins

    from apnull.score import digits_screen, score_profiles

    real_import = builtins.__import__

    def no_dask(name, *args, **kwargs):
        if name.startswith("dask"):
            raise ImportError("No module named 'dask'")
        return real_import(name, *args, **kwargs)

    monkeypatch.setattr(builtins, "__import__", no_dask)
    with pytest.raises(ValueError, match=r"pip install 'apnull\[dask\]'"):
        score_profiles(digits_screen(), perturbation="Metadata_perturbation", control="DMSO", workers=2)


def test_adaptive_rounds_on_dask_equal_in_process():
    """permutations="auto": the components scattered once give the in-process rounds bit for bit."""
    from dask.distributed import Client, LocalCluster
    from apnull.score.engine.connect import LOCAL_CLUSTER_HTTP

    table = digits_screen(seed=9)  # refined to 6,400 draws in 0.3 s of CPU a run (seed 5: 2.5 s)
    kw = dict(KW, permutations="auto")
    local = score_profiles(table, **kw)
    assert local.groups["permutations"].max() > 1600  # several rounds after the first
    with LocalCluster(n_workers=2, threads_per_worker=1, processes=False, **LOCAL_CLUSTER_HTTP) as cluster, \
            Client(cluster) as client:
        _check_same(local, score_profiles(table, scheduler=client, **kw))


def test_a_local_cluster_leaves_port_8787_alone():
    """Every local cluster (``connect``'s and the tests') serves its scheduler's HTTP routes on a free port:
    with 8787 taken (another cluster, another run) no "Port 8787 is already in use" warning, and the port
    is not 8787. ``dashboard_address=None`` alone still bound 8787."""
    import socket
    import warnings

    from dask.distributed import LocalCluster

    from apnull.score.engine.connect import LOCAL_CLUSTER_HTTP

    holder = socket.socket()
    try:
        holder.bind(("", 8787))
        holder.listen()
    except OSError:
        pass  # already taken by something else: the same situation
    try:
        with warnings.catch_warnings(record=True) as caught:
            warnings.simplefilter("always")
            with LocalCluster(n_workers=1, threads_per_worker=1, processes=False, **LOCAL_CLUSTER_HTTP) as cluster:
                port = cluster.scheduler.http_server.port
    finally:
        holder.close()
    assert port != 8787
    assert not [w for w in caught if "already in use" in str(w.message)]


def _spy_connect(monkeypatch, prepared):
    """Replace the dask connection by a spy that runs in process: each call's thread and whether the
    table was prepared by then; what it opened, closed (a count)."""
    import threading

    import apnull.score.engine.connect as connect

    calls, closed = [], []

    def spy(scheduler, workers, seconds=None):
        calls.append((threading.current_thread() is threading.main_thread(), bool(prepared)))
        return None, lambda: closed.append(1)

    monkeypatch.setattr(connect, "connect", spy)
    return calls, closed


def test_a_local_cluster_starts_while_the_table_is_prepared(monkeypatch):
    """``workers=N``: the cluster's start begins on its own thread before the table is prepared (its worker
    processes start meanwhile, about 1.5 s on two cores), and what it opened is closed once, after the
    run, or after an error in the table; an address (``scheduler=``) is reached only once the table is
    checked, so a bad table is named without a connection tried."""
    import time

    import apnull.score.profiles as profiles

    prepared, real = [], profiles.prepare_screen

    def prepare(*args, **kwargs):
        time.sleep(0.2)  # a preparation that takes a while: the start has begun meanwhile
        out = real(*args, **kwargs)
        prepared.append(1)
        return out

    monkeypatch.setattr(profiles, "prepare_screen", prepare)
    calls, closed = _spy_connect(monkeypatch, prepared)
    table = digits_screen(seed=4)
    local = score_profiles(table, **KW)
    assert calls == [(True, True)] and closed == [1]  # in process: connect(None, None) when the rounds begin
    calls.clear(), closed.clear(), prepared.clear()
    _check_same(local, score_profiles(table, workers=2, **KW))  # (the spy's client: in process)
    assert calls == [(False, False)] and closed == [1]
    calls.clear(), closed.clear(), prepared.clear()
    bad = table.assign(px_00=float("nan"))
    with pytest.raises(ValueError, match="px_00"):
        score_profiles(bad, workers=2, **KW)
    assert calls == [(False, False)] and closed == [1]
    calls.clear(), closed.clear()
    with pytest.raises(ValueError, match="px_00"):
        score_profiles(bad, scheduler="tcp://127.0.0.1:1", **KW)
    assert calls == [] and closed == []


@pytest.mark.parametrize("command", ["compare", "consistency"])
def test_compare_and_consistency_start_their_cluster_while_they_read(monkeypatch, command):
    """``workers=N`` in a comparison or a consistency run: the local cluster's start begins on its own
    thread before the wells are matched (a comparison) or the profiles prepared (consistency), and what it
    opened is closed once, after the run or after an error in the tables; the answer is the in-process one."""
    import time

    import apnull.score.compare as compare_module
    import apnull.score.consistency as consistency_module
    from apnull.score import score_compare, score_consistency
    from apnull.score.example import digits_pipeline_pair

    module, name = ((compare_module, "match_wells") if command == "compare" else
                    (consistency_module, "prepare_profiles"))
    prepared, real = [], getattr(module, name)

    def slow(*args, **kwargs):
        time.sleep(0.2)  # reading that takes a while: the start has begun meanwhile
        out = real(*args, **kwargs)
        prepared.append(1)
        return out

    monkeypatch.setattr(module, name, slow)
    calls, closed = _spy_connect(monkeypatch, prepared)
    if command == "compare":
        a, b = digits_pipeline_pair(seed=1)
        kw = dict(key=["Metadata_plate", "Metadata_well"], perturbation="Metadata_perturbation",
                  stratum="Metadata_plate", permutations=99)

        def run(**more):
            return score_compare(a, b, **kw, **more).groups
        bad = dict(a=a, b=b.drop(columns="Metadata_well"))  # the key column missing: refused as the wells are matched
    else:
        rng = np.random.default_rng(0)
        table = pd.DataFrame(rng.normal(size=(36, 6)), columns=[f"f{i}" for i in range(6)])
        table.insert(0, "Metadata_pert", np.repeat([f"c{i:02d}" for i in range(12)], 3))
        table.insert(1, "Metadata_target", np.repeat(["A", "B", "A|B", "C", "C|D", "A"] * 2, 3))

        def run(**more):
            return score_consistency(table, "Metadata_pert", "Metadata_target", label_sep="|", permutations=99,
                                     **more).labels
        bad = table.assign(f0=float("nan"))
    local = run()
    assert calls and set(calls) == {(True, True)} and len(closed) == len(calls)  # in process: connect(None, None)
    calls.clear(), closed.clear(), prepared.clear()  # when the rounds begin (a comparison's two tables: each too)
    pd.testing.assert_frame_equal(run(workers=2), local)  # (the spy's client: in process)
    assert calls[0] == (False, False)  # started off the main thread, before the reading ended; a comparison's
    assert set(calls[1:]) <= {(True, True)} and len(calls) == (3 if command == "compare" else 1)  # tables each
    assert len(closed) == len(calls)  # take the client it hands them (and close nothing of it)
    calls.clear(), closed.clear(), prepared.clear()
    with pytest.raises(ValueError):
        if command == "compare":
            score_compare(bad["a"], bad["b"], workers=2, **kw)
        else:
            score_consistency(bad, "Metadata_pert", "Metadata_target", label_sep="|", workers=2)
    assert calls == [(False, False)] and closed == [1]
