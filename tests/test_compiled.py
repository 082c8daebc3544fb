"""apnull.compiled: inner kernels are lowered for linking only, and callers compute with them as with any
numba function, on a fresh cache and from a warm one (a new caller of a cached inner kernel included)."""

from __future__ import annotations

import os
import subprocess
import sys
import textwrap

import numba
import numpy as np

from apnull.compiled import entry, inner

KERNELS = textwrap.dedent('''
    import numpy as np
    from apnull.compiled import entry, inner

    @inner()
    def leaf(x, i):
        if i < 0:
            raise ValueError("negative index")
        return x[i] * 0.1 + 1.0 / 3.0

    @inner()
    def middle(x):
        s = 0.0
        for i in range(x.size):
            s += leaf(x, i)
        return s

    @entry()
    def first(x):
        return middle(x) + leaf(x, 0)

    @entry()
    def second(x, i):
        return middle(x) * 2.0 + leaf(x, i)
''')


def _run(tmp_path, code):
    env = dict(os.environ, NUMBA_CACHE_DIR=str(tmp_path / "cache"), PYTHONPATH=str(tmp_path))
    out = subprocess.run([sys.executable, "-c", "import numpy as np, kern\nx = np.arange(7.0)\n" + code],
                         cwd=tmp_path, env=env, capture_output=True, text=True, timeout=300)
    assert out.returncode == 0, out.stderr[-3000:]
    return out.stdout.split()


def _expected(i):
    x = np.arange(7.0)
    leaf = [x[j] * 0.1 + 1.0 / 3.0 for j in range(7)]
    s = 0.0
    for v in leaf:
        s += v
    return float(s + leaf[0]), float(s * 2.0 + leaf[i])


def test_callers_of_inner_kernels_compute_on_a_fresh_and_a_warm_cache(tmp_path):
    (tmp_path / "kern.py").write_text(KERNELS)
    one, two = _expected(3)
    show = "print(repr(float(kern.first(x))))"
    # fresh cache: first and its inner kernels compiled, theirs to LLVM code for linking only
    fresh = _run(tmp_path, show + "\nfor d in (kern.leaf, kern.middle):\n"
                 "    print(*sorted({type(c.library).__name__ for c in d.overloads.values()}))")
    assert fresh == [repr(one), "LinkOnlyLibrary", "LinkOnlyLibrary"]
    # a caller compiled afresh while its inner kernels come from the cache (their module for linking)
    assert _run(tmp_path, "print(repr(float(kern.second(x, 3))))") == [repr(two)]
    # all from the cache; then an error raised in an inner kernel reaches Python through a cached caller
    # (one process for both: each start imports numba again)
    warm = _run(tmp_path, show + "\nprint(repr(float(kern.second(x, 3))))\n"
                "print(sum(len(d.stats.cache_misses) for d in (kern.first, kern.second)))\n"
                "try:\n    kern.second(x, -1)\nexcept ValueError as e:\n    print(str(e).replace(' ', '_'))\n"
                "print(sum(len(d.stats.cache_misses) for d in (kern.first, kern.second)))")
    assert warm == [repr(one), repr(two), "0", "negative_index", "0"]


def test_a_caller_of_an_inner_kernel_computes_the_same_bits():
    @inner()
    def mix(x):  # pragma: no cover - compiled
        s = 0.0
        for v in x:
            s += np.sqrt(v) / 7.0 - v * 1e-3
        return s

    @entry()
    def call(x):  # pragma: no cover - compiled
        return mix(x)

    plain = numba.njit(mix.py_func)
    x = np.random.default_rng(5).random(1001)
    assert call(x) == plain(x)  # same bits


def test_two_inner_kernels_are_told_apart():
    """numba finds a compiled function by its key: each inner kernel has its own."""
    @inner()
    def a(x):  # pragma: no cover - compiled
        return x + 1

    @inner()
    def b(x):  # pragma: no cover - compiled
        return x + 2

    @entry()
    def both(x):  # pragma: no cover - compiled
        return a(x) * 10 + b(x)

    assert both(1) == 23
    (ka,) = [c.entry_point for c in a.overloads.values()]
    (kb,) = [c.entry_point for c in b.overloads.values()]
    assert ka is not kb
