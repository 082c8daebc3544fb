"""A bounded, thread-safe memo shared by every caller in a process: the package's one cache.

The null laws of :mod:`apnull.significance` and the dashboard's per-size summaries and figures
(:mod:`apnull.ui.cache`) are kept in :class:`Memo` objects. Each is bounded twice, by entries and by
bytes (least recently used dropped first; the newest entry is always kept, so one entry larger than
the byte bound still works, alone), so a server's memory stays bounded whatever its visitors ask.

Each key is computed once at a time: when several threads (a class of browser sessions) ask for the
same missing key together, one computes and the others wait for its result instead of repeating the
work. A computation that raises is not stored; the waiting callers then try it themselves. A stored
value can also be grown in place of its key (``fits``): e.g. 10,000 cached draws extended to 20,000
by drawing only the 10,000 new ones.

Entries are shared, not copied: store read-only values (frozen arrays, laws with read-only arrays,
figures that callers only read).
"""

from __future__ import annotations

import threading
from collections import OrderedDict
from collections.abc import Callable, Hashable
from typing import Any

__all__ = ["Memo"]

_MISSING = object()


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

    def get_or_compute(self, key: Hashable, compute: Callable[[], Any], fits: Callable[[Any], bool] | None = None):
        """The value for ``key``, calling ``compute()`` if it is missing (once, whatever the threads).

        With ``fits``, a stored value ``v`` for which ``fits(v)`` is false counts as missing too, and
        the value ``compute()`` returns replaces it (``compute`` may read the old one with :meth:`get`
        to extend it). ``fits`` runs under the memo's lock: keep it cheap.
        """
        while True:
            with self._lock:
                item = self._data.get(key)
                if item is not None and (fits is None or fits(item[0])):
                    self._data.move_to_end(key)
                    return item[0]
                flight = self._flights.get(key)
                owner = flight is None
                if owner:
                    flight = self._flights[key] = _Flight()
            if not owner:
                flight.done.wait()
                if flight.value is not _MISSING and (fits is None or fits(flight.value)):
                    return flight.value
                continue  # failed, or too small for this caller: look again (and compute here if need be)
            try:
                value = compute()
                flight.value = self.put(key, value, replace=fits is not None)
                return flight.value
            finally:
                with self._lock:
                    self._flights.pop(key, None)
                flight.done.set()

    def put(self, key: Hashable, value, replace: bool = False):
        """Store ``value`` for ``key`` and return the stored value. A value already stored is kept (one
        object per key, so every caller shares it) unless ``replace``."""
        size = int(self._sizeof(value))
        with self._lock:
            item = self._data.get(key)
            if item is not None:
                if not replace:
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
