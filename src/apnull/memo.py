"""A bounded, thread-safe memo shared by every caller in a process: the package's one cache.

The null laws of :mod:`apnull.significance` and the dashboard's per-size summaries and figures
(:mod:`apnull.ui.cache`) are kept in :class:`Memo` objects. Each is bounded twice, by entries and by
bytes (least recently used dropped first; the newest entry is always kept, so one entry larger than
the byte bound still works, alone), so a server's memory stays bounded whatever its visitors ask.

Each key is computed once at a time: when several threads (a class of browser sessions) ask for the
same missing key together, one computes and the others wait for its result instead of repeating the
work. A computation that raises is not stored; the waiting callers then try it themselves. Many keys
can be computed in one call (:meth:`Memo.get_or_compute_many`: one compiled call for a whole view), and
a stored value can be replaced by a better one (``put(replace=...)``: e.g. 10,000 cached draws by
20,000 that extend them).

Entries are shared, not copied: store read-only values (frozen arrays, laws with read-only arrays,
figures that callers only read).
"""

from __future__ import annotations

import dataclasses
import threading
from collections import OrderedDict
from collections.abc import Callable, Hashable
from typing import Any

__all__ = ["Memo", "freeze", "rough_nbytes"]

_MISSING = object()


def freeze(value):
    """``value`` with every numpy array in it (nested in tuples, named tuples, lists and dicts) made read-only in place, so a shared cache entry cannot be changed by one of
    its readers; returns ``value``. Other objects (DataFrames, figures) are left as they are: callers
    only read them."""
    import numpy as np

    if isinstance(value, np.ndarray):
        value.flags.writeable = False
    elif isinstance(value, (tuple, list)):
        for item in value:
            freeze(item)
    elif isinstance(value, dict):
        for item in value.values():
            freeze(item)
    return value


def rough_nbytes(value) -> int:
    """Rough bytes held by ``value``: arrays' ``nbytes``, DataFrames' deep memory, strings' length,
    summed through tuples, lists, dicts, dataclasses and plotly figures; 8 for anything else."""
    import numpy as np

    if isinstance(value, np.ndarray):
        return int(value.nbytes)
    if isinstance(value, (str, bytes)):
        return len(value)
    if isinstance(value, dict):
        return sum(rough_nbytes(v) for v in value.values())
    if isinstance(value, (tuple, list)):
        return sum(rough_nbytes(item) for item in value)
    if dataclasses.is_dataclass(value) and not isinstance(value, type):
        return sum(rough_nbytes(getattr(value, f.name)) for f in dataclasses.fields(value))
    kind = type(value).__name__
    if kind in ("DataFrame", "Series"):
        return int(np.sum(value.memory_usage(deep=True)))
    if kind == "Figure" and hasattr(value, "to_plotly_json"):  # its traces and layout as plain data (a copy)
        return rough_nbytes(value.to_plotly_json())
    return 8


class _Flight:
    """A computation in progress: waiters block on ``done`` and then read ``value``."""

    __slots__ = ("done", "value")

    def __init__(self):
        self.done = threading.Event()
        self.value = _MISSING


class Memo:
    """Least-recently-used memo bounded by ``max_entries`` and ``max_bytes``.

    Parameters
    ----------
    max_entries : int
        Most entries kept (at least 1).
    max_bytes : int, optional
        Most bytes kept, as measured by ``sizeof`` (default: no byte bound).
    sizeof : callable, optional
        Bytes held by one value (default: 0 for every value).
    """

    def __init__(self, max_entries: int, max_bytes: int | None = None,
                 sizeof: Callable[[Any], int] | None = None):
        if max_entries < 1:
            raise ValueError(f"max_entries must be at least 1, got {max_entries}")
        self.max_entries = int(max_entries)
        self.max_bytes = max_bytes
        self._sizeof = sizeof or (lambda value: 0)
        self._data: OrderedDict = OrderedDict()  # key -> (value, bytes)
        self._bytes = 0
        self._flights: dict[Hashable, _Flight] = {}
        self._lock = threading.Lock()

    def __len__(self) -> int:
        return len(self._data)

    def __contains__(self, key: Hashable) -> bool:
        return key in self._data

    @property
    def nbytes(self) -> int:
        """Bytes held by the entries (as measured by ``sizeof``)."""
        return self._bytes

    def get(self, key: Hashable, default=None):
        """The value stored for ``key`` (now the most recently used), or ``default``; never computes."""
        with self._lock:
            item = self._data.get(key)
            if item is None:
                return default
            self._data.move_to_end(key)
            return item[0]

    def get_or_compute(self, key: Hashable, compute: Callable[[], Any]):
        """The value for ``key``, calling ``compute()`` if it is missing (once, whatever the threads)."""
        return self.get_or_compute_many([key], lambda keys: [compute()])[0]

    def get_or_compute_many(self, keys, compute_many: Callable[[list], list]) -> list:
        """The values for ``keys``; ``compute_many(missing)`` makes the missing ones in one call, a list in
        the order of ``missing``. A key another thread is computing is waited for, not computed again; a
        thread computes all its keys before it waits for others', so two threads never wait on each other.
        """
        found, waiting, owned = {}, {}, []
        with self._lock:
            for key in keys:
                item = self._data.get(key)
                if item is not None:
                    self._data.move_to_end(key)
                    found[key] = item[0]
                elif key in self._flights:  # another thread's, or this call's own (a repeated key)
                    waiting[key] = self._flights[key]
                else:
                    self._flights[key] = _Flight()
                    owned.append(key)
        if owned:
            flights = [self._flights[key] for key in owned]
            try:
                values = compute_many(owned)
                if len(values) != len(owned):
                    raise ValueError(f"compute_many returned {len(values)} values for {len(owned)} keys")
                for key, flight, value in zip(owned, flights, values):
                    found[key] = flight.value = self.put(key, value)
            finally:
                with self._lock:
                    for key in owned:
                        self._flights.pop(key, None)
                for flight in flights:
                    flight.done.set()
        for key, flight in waiting.items():
            flight.done.wait()
            # the other thread's computation failed: try it here (and raise its error here)
            found[key] = flight.value if flight.value is not _MISSING else self.get_or_compute_many(
                [key], compute_many)[0]
        return [found[key] for key in keys]

    def put(self, key: Hashable, value, replace: bool | Callable[[Any], bool] = False):
        """Store ``value`` for ``key`` and return the stored value. A value already stored is kept (one
        object per key, so every caller shares it) unless ``replace`` is true or, if callable, returns
        true for the stored value (e.g. ``lambda old: len(old) < len(value)``)."""
        size = int(self._sizeof(value))
        with self._lock:
            item = self._data.get(key)
            if item is not None:
                if not (replace(item[0]) if callable(replace) else replace):
                    self._data.move_to_end(key)
                    return item[0]
                self._bytes -= item[1]
            self._data[key] = (value, size)
            self._data.move_to_end(key)
            self._bytes += size
            while len(self._data) > 1 and (len(self._data) > self.max_entries
                                           or (self.max_bytes is not None and self._bytes > self.max_bytes)):
                _, (_, dropped) = self._data.popitem(last=False)
                self._bytes -= dropped
            return value

    def clear(self) -> None:
        """Drop every entry (computations in progress finish and store theirs)."""
        with self._lock:
            self._data.clear()
            self._bytes = 0

    def values(self) -> list:
        """The stored values, least recently used first (a snapshot)."""
        with self._lock:
            return [value for value, _ in self._data.values()]
