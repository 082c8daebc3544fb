"""Shared helpers for the core-library tests (tests/e2e has its own conftest).

The brute-force reference lives in ``tests/reference.py`` (importable as ``reference`` because pytest
puts ``tests/`` on ``sys.path``); it is re-exported here and offered as fixtures. Test files should
import from ``reference``, not ``conftest``: pytest reuses the module name ``conftest`` for
tests/e2e/conftest.py. Keep this file light: it is also loaded for the browser tests.
"""

from __future__ import annotations

import pytest

from reference import (  # noqa: F401  (re-exported for test files)
    SMALL_SIZES,
    Enumeration,
    ap_fraction,
    bestgen_expected_ap,
    enumerate_ap,
    ks_critical,
    ranking_from_placement,
)


@pytest.fixture(scope="session")
def enumerate_ap_fixture():
    """The brute-force enumerator (cached), for tests that prefer fixtures to imports."""
    return enumerate_ap


@pytest.fixture(scope="session")
def small_sizes():
    return list(SMALL_SIZES)
