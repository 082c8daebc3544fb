"""The two decorators of the package's numba kernels (the scoring wing's and ``streams``'), each
``numba.njit(cache=True)``: compiled on first use and kept in numba's cache.

- :func:`entry`: a kernel that Python calls (the batch kernels the nulls call, and the few that the
  tables and tests call). numba compiles it with its Python entry.
- :func:`inner`: a kernel that only other kernels call. It is compiled without the Python entry (the
  code that unboxes named structures of arrays from Python objects), which numba would otherwise
  build, optimise and copy into every caller's machine code: a large part of what a fresh install
  compiles on its first run (docs/benchmarks.md). Python cannot call it (there is no entry to run:
  the interpreter crashes), so only the kernels' modules import one (``tests/test_architecture.py``),
  and a test reaches one through ``score_helpers.from_python``, a small compiled caller.

Neither builds a C-callable entry: no kernel's address is taken. Small helpers, and the one-caller
steps of a batch kernel, are ``numba.njit(cache=True, inline="always")`` instead: numba copies them
into their callers rather than compiling them apart.
"""

from __future__ import annotations

import numba

__all__ = ["entry", "inner"]


def entry(**options):
    """Decorator of a kernel called from Python: ``numba.njit(cache=True, **options)`` without the C entry."""
    return numba.njit(cache=True, no_cfunc_wrapper=True, **options)


def inner(**options):
    """Decorator of a kernel only other kernels call: compiled without the Python and C entries.

    Calling it from Python crashes the interpreter (numba has no entry to run), so nothing outside the
    kernels' modules imports one (``tests/test_architecture.py``); a test reaches one through a small
    compiled caller.
    """
    return numba.njit(cache=True, no_cfunc_wrapper=True, no_cpython_wrapper=True, **options)
