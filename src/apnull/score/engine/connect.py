"""Reaching dask for ``score_profiles(scheduler=..., workers=...)`` within a hard deadline.

``dask.distributed.Client(address, timeout=...)`` bounds the TCP connection, but a peer that
accepts the connection and then never answers the handshake can hold it much longer (until the
peer closes). :func:`connect` therefore builds the client on a helper thread and waits at most
:data:`CONNECT_SECONDS` for it, whatever the peer does; past the deadline it raises ValueError
("cannot reach the dask scheduler ... within 10 s"), and a client that connects later is closed
at once by that thread. :func:`starting` begins a local cluster (``workers=``) on a thread of its own,
so its worker processes start while the caller prepares its table (``score_profiles``), matches the
wells of two tables (``score_compare``) or prepares its profiles (``score_consistency``).
"""

from __future__ import annotations

import contextlib
import threading

__all__ = ["connect", "starting", "CONNECT_SECONDS", "LOCAL_CLUSTER_CONFIG", "LOCAL_CLUSTER_HTTP"]

#: Longest wait, in seconds, for a dask scheduler to accept and answer.
CONNECT_SECONDS = 10.0

#: dask settings of a local cluster :func:`connect` starts (``workers=``): no statistical profiler (by
#: default it samples each worker's stack every 10 ms, busy or idle), memory polled once a second (not
#: every 100 ms), the system monitor every 2 s (not 0.5 s) and the event loops' watch every 200 ms (not
#: 20 ms). Idle, two workers and their nannies then take about
#: 0.8 s of CPU a 30 s instead of 2.6 s (measured on this project's 2-core machine under load): on a
#: machine of few cores that overhead is taken from the draws. A cluster the caller starts keeps its own.
#: Each worker also imports the scoring wing as it starts (``preload``), both workers at once while the
#: cluster starts, not each in turn when the first shard sent to it is unpickled (about 0.5 s each).
LOCAL_CLUSTER_CONFIG = {"distributed.worker.profile.enabled": False,
                        "distributed.worker.memory.monitor-interval": "1s",
                        "distributed.admin.system-monitor.interval": "2s",
                        "distributed.admin.tick.interval": "200ms",
                        "distributed.worker.preload": ["apnull.score"]}

#: ``LocalCluster`` keywords of every local cluster (:func:`connect`'s, the tests'): the scheduler's HTTP
#: server (health and metrics routes) on a free port, and no dashboard. ``dashboard_address=None`` only
#: turns the dashboard off: the HTTP server still takes port 8787, and a second cluster on the machine
#: (another run, another test process) then warns "Port 8787 is already in use".
LOCAL_CLUSTER_HTTP = {"dashboard_address": ":0", "scheduler_kwargs": {"dashboard": False}}


def _distributed():
    """dask.distributed, or a ValueError saying how to install it (it is the optional 'dask' extra)."""
    try:
        import dask.distributed
    except ImportError:
        raise ValueError("scheduler=/workers= need dask.distributed, which is not installed: "
                         "pip install 'apnull[dask]' (or run without them, in process)") from None
    return dask.distributed


def _within(make, seconds: float, what: str):
    """``make()`` on a daemon thread; its value, or ValueError if it fails or takes over ``seconds``."""
    box, lock, done = {}, threading.Lock(), threading.Event()

    def target():
        try:
            value = make()
        except BaseException as exc:  # reported to the caller below
            box["error"] = exc
            done.set()
            return
        with lock:
            if box.get("abandoned"):
                try:
                    value.close()
                except Exception:
                    pass
                return
            box["value"] = value
        done.set()

    threading.Thread(target=target, name="apnull-dask-connect", daemon=True).start()
    finished = done.wait(seconds)
    with lock:
        if not finished and "value" not in box:
            box["abandoned"] = True
            raise ValueError(f"cannot reach {what} within {seconds:g} s (no answer); check the address "
                             "and that the scheduler is running") from None
    if "error" in box:
        exc = box["error"]
        raise ValueError(f"cannot reach {what}: {' '.join(str(exc).split())[:200] or type(exc).__name__}") from None
    return box["value"]


def connect(scheduler, workers, seconds: float | None = None):
    """(dask client or None, a function that closes what was opened) for checked scheduler/workers.

    Parameters
    ----------
    scheduler : None, str address (``tcp://host:8786``) or dask.distributed.Client
    workers : None or int
        Start a local cluster of this many single-thread worker processes.
    seconds : float, optional
        Hard deadline for reaching an address (default :data:`CONNECT_SECONDS`, read at the call).
    """
    seconds = CONNECT_SECONDS if seconds is None else seconds
    if workers is not None:
        dd = _distributed()
        import dask

        with dask.config.set(LOCAL_CLUSTER_CONFIG):  # the workers take the config they start with
            cluster = dd.LocalCluster(n_workers=int(workers), threads_per_worker=1, **LOCAL_CLUSTER_HTTP)
            client = dd.Client(cluster)
        return client, lambda: (client.close(), cluster.close())
    if scheduler is None:
        return None, lambda: None
    Client = _distributed().Client
    if isinstance(scheduler, Client):
        return scheduler, lambda: None
    if not isinstance(scheduler, str) or not scheduler:
        raise ValueError(f"scheduler must be a dask scheduler address such as 'tcp://host:8786' or a "
                         f"dask.distributed.Client, got {scheduler!r}")
    client = _within(lambda: Client(scheduler, timeout=f"{seconds:g}s"), seconds,
                     f"the dask scheduler at {scheduler!r}")
    return client, client.close


@contextlib.contextmanager
def starting(scheduler, workers, seconds: float | None = None):
    """:func:`connect` as a ``with`` block, the one every public function opens and closes its client in,
    for a caller with work to do before it needs the client: a local cluster (``workers``) starts on a
    daemon thread as the block begins, so its worker processes start while the caller reads and prepares
    its table (about 1.5 s on a 2-core machine). Yields a function that
    returns the client (None: in process), waiting for the start the first time it is called; an address
    (``scheduler``) is reached only then, so a bad table is named before a connection is tried. What was
    opened is closed on leaving, also on an error (a start still under way is waited for, then closed)."""
    box, done = {}, threading.Event()

    def start():
        try:
            box["opened"] = connect(scheduler, workers, seconds)
        except BaseException as exc:  # raised to the caller by client()
            box["error"] = exc
        finally:
            done.set()

    if workers is not None:
        threading.Thread(target=start, name="apnull-dask-start", daemon=True).start()

    def client():
        if workers is None and not done.is_set():
            start()
        done.wait()
        if "error" in box:
            raise box["error"]
        return box["opened"][0]

    try:
        yield client
    finally:
        if workers is not None or done.is_set():
            done.wait()
            if "opened" in box:
                box["opened"][1]()
