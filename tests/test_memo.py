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


def test_put_replaces_only_when_asked():
    memo = Memo(4)
    memo.put("draws", (1, 2))
    assert memo.put("draws", (1,), replace=lambda old: len(old) < 1) == (1, 2)  # shorter: kept
    assert memo.put("draws", (1, 2, 3), replace=lambda old: len(old) < 3) == (1, 2, 3)
    assert memo.get("draws") == (1, 2, 3)


def test_many_keys_missing_ones_in_one_call_in_order():
    memo = Memo(16)
    memo.put("b", "B")
    calls = []

    def compute_many(keys):
        calls.append(list(keys))
        return [k.upper() for k in keys]

    assert memo.get_or_compute_many(["a", "b", "c", "a"], compute_many) == ["A", "B", "C", "A"]
    assert calls == [["a", "c"]]
    assert memo.get_or_compute_many(["c", "a"], compute_many) == ["C", "A"] and len(calls) == 1
    with pytest.raises(ValueError, match="2 keys"):
        memo.get_or_compute_many(["x", "y"], lambda keys: ["X"])
    assert "x" not in memo  # nothing stored from a failed call


def test_threads_with_overlapping_batches_compute_each_key_once():
    """8 threads ask for overlapping key sets in different orders: every key is computed exactly once,
    nobody deadlocks, and everybody gets every value."""
    memo = Memo(1000)
    lock = threading.Lock()
    made = []

    def compute_many(keys):
        with lock:
            made.extend(keys)
        time.sleep(0.01)
        return [k * 10 for k in keys]

    def ask(t):
        keys = list(range(t * 5, t * 5 + 30))[:: 1 if t % 2 else -1]
        return keys, memo.get_or_compute_many(keys, compute_many)

    with ThreadPoolExecutor(8) as pool:
        for keys, values in pool.map(ask, range(8)):
            assert values == [k * 10 for k in keys]
    assert sorted(made) == sorted(set(made)) == list(range(8 * 5 + 25))


def test_rejects_an_empty_bound():
    with pytest.raises(ValueError, match="max_entries"):
        Memo(0)
