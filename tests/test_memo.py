"""apnull.memo.Memo: bounded by entries and bytes, least recently used first, one computation per key."""

from __future__ import annotations

import threading
import time
from concurrent.futures import ThreadPoolExecutor

import pytest

from apnull.memo import Memo


def test_keeps_at_most_max_entries_least_recently_used_dropped():
    memo = Memo(3)
    for key in "abc":
        memo.get_or_compute(key, lambda key=key: key.upper())
    assert memo.get("a") == "A"  # a is now the most recently used
    memo.get_or_compute("d", lambda: "D")
    assert "b" not in memo and all(k in memo for k in "acd") and len(memo) == 3


def test_byte_bound_keeps_the_newest_even_when_alone_too_big():
    memo = Memo(100, max_bytes=10, sizeof=len)
    memo.put("a", "x" * 4)
    memo.put("b", "x" * 5)
    assert memo.nbytes == 9 and len(memo) == 2
    memo.put("c", "x" * 3)  # 12 > 10: the oldest goes
    assert "a" not in memo and memo.nbytes == 8
    memo.put("d", "x" * 50)  # alone over the bound: kept, everything else dropped
    assert list(memo.values()) == ["x" * 50] and memo.nbytes == 50


def test_put_keeps_the_first_value_unless_replace():
    memo = Memo(4, max_bytes=100, sizeof=len)
    first = memo.put("k", "one")
    assert memo.put("k", "other") is first
    assert memo.put("k", "longer value", replace=True) == "longer value"
    assert memo.get("k") == "longer value" and memo.nbytes == len("longer value")


def test_concurrent_callers_of_a_missing_key_share_one_computation():
    memo = Memo(8)
    calls = []
    gate = threading.Barrier(8)

    def compute():
        calls.append(1)
        time.sleep(0.2)  # long enough for every thread to arrive while it runs
        return object()

    def ask(_):
        gate.wait()
        return memo.get_or_compute("law", compute)

    with ThreadPoolExecutor(8) as pool:
        results = list(pool.map(ask, range(8)))
    assert len(calls) == 1
    assert all(r is results[0] for r in results)


def test_a_failed_computation_is_not_stored_and_waiters_try_again():
    memo = Memo(8)
    attempts = []
    started = threading.Event()

    def flaky():
        attempts.append(1)
        if len(attempts) == 1:
            started.set()
            time.sleep(0.1)
            raise ValueError("first attempt fails")
        return "ok"

    with ThreadPoolExecutor(2) as pool:
        first = pool.submit(memo.get_or_compute, "k", flaky)
        started.wait(5)
        second = pool.submit(memo.get_or_compute, "k", flaky)
        with pytest.raises(ValueError, match="first attempt"):
            first.result(5)
        assert second.result(5) == "ok"
    assert len(attempts) == 2 and memo.get("k") == "ok"


def test_fits_grows_a_value_in_place_of_its_key():
    memo = Memo(8, max_bytes=1000, sizeof=len)
    grown = []

    def grow(size):
        def compute():
            have = memo.get("draws") or ""
            grown.append(size - len(have))  # only the missing part is made
            return have + "x" * (size - len(have))
        return memo.get_or_compute("draws", compute, fits=lambda v: len(v) >= size)

    assert grow(10) == "x" * 10
    assert grow(5) == "x" * 10  # enough already: nothing made
    assert grow(25) == "x" * 25
    assert grown == [10, 15] and memo.nbytes == 25 and len(memo) == 1


def test_threads_growing_one_key_to_different_sizes_each_get_enough():
    memo = Memo(8)
    lock = threading.Lock()
    made = []

    def ask(size):
        def compute():
            have = memo.get("k") or ()
            with lock:
                made.append(size - len(have))
            time.sleep(0.01)
            return have + tuple(range(len(have), size))
        return memo.get_or_compute("k", compute, fits=lambda v: len(v) >= size)

    sizes = [5, 40, 10, 40, 25, 5, 40, 15] * 3
    with ThreadPoolExecutor(8) as pool:
        results = list(pool.map(ask, sizes))
    for size, value in zip(sizes, results):
        assert len(value) >= size and value[:size] == tuple(range(size))
    assert sum(made) == 40  # every element made exactly once


def test_rejects_an_empty_bound():
    with pytest.raises(ValueError, match="max_entries"):
        Memo(0)
