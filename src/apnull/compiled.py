"""The two decorators of the package's numba kernels (``numba.njit(cache=True)``, compiled on first use
and kept in numba's cache).

:func:`entry` marks a kernel that Python calls
(the batch kernels the nulls call, and a few that tests and the tables call): numba compiles it with
its Python entry. :func:`inner` marks a kernel that only other kernels call: it is compiled without
that entry (the code that unboxes named structures of arrays from Python objects), which numba would
otherwise build, optimise and copy into every caller: about a sixth of a fresh install's first
``apnull score``. Calling an ``inner`` kernel from Python is not possible (numba has no entry to run;
tests reach one through a small compiled caller). Neither builds a C-callable entry: no kernel's
address is taken. Small helpers with one or few callers are ``numba.njit(inline="always")``: numba
copies them into their callers instead of compiling them apart.
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
