"""Shared helpers for the core-library tests (tests/e2e has its own conftest).

The brute-force reference lives in ``tests/reference.py`` (importable as ``reference`` because pytest
puts ``tests/`` on ``sys.path``); it is re-exported here and offered as fixtures. Test files should
import from ``reference``, not ``conftest``: pytest reuses the module name ``conftest`` for
tests/e2e/conftest.py. Keep this file light: it is also loaded for the browser tests.
"""

from __future__ import annotations

from pathlib import Path

import pytest
from collection import (cache_bytecode_outside_the_tree, compile_scripts_once, excludes_e2e, longest_first,
                        quiet_openmp_workers, scan_components_once)

quiet_openmp_workers()  # before numba's OpenMP pool starts, as the dashboard does
cache_bytecode_outside_the_tree()  # before the test modules are imported and rewritten
scan_components_once()  # one scan of the installed packages per test process, not one per AppTest
compile_scripts_once()  # each page script compiled once per test process, not on every AppTest run

from reference import (  # noqa: E402,F401  (re-exported for test files)
    SMALL_SIZES,
    Enumeration,
    ap_fraction,
    bestgen_expected_ap,
    enumerate_ap,
    ks_critical,
    ranking_from_placement,
)


@pytest.fixture(autouse=True)
def main_module_given_back():
    """Each test ends with the ``__main__`` module it began with. Streamlit's script runner (AppTest) runs a
    page as a new module ``__main__`` whose ``__file__`` is the page, and leaves it there; a dask worker
    process started later in the same test process (multiprocessing's spawn runs the parent's main file
    again) would then run the page and fail to start ("Nanny failed to start")."""
    import sys

    main = sys.modules.get("__main__")
    yield
    if main is not None and sys.modules.get("__main__") is not main:
        sys.modules["__main__"] = main


@pytest.fixture(scope="session")
def enumerate_ap_fixture():
    """The brute-force enumerator (cached), for tests that prefer fixtures to imports."""
    return enumerate_ap


@pytest.fixture(scope="session")
def small_sizes():
    return list(SMALL_SIZES)


ROOT = Path(__file__).resolve().parents[1]
E2E = ROOT / "tests" / "e2e"


@pytest.fixture
def jupyter(monkeypatch):
    """A fake Jupyter kernel: IPython's shell has a kernel, and what is displayed is recorded."""
    import types

    import IPython
    import IPython.display

    shown = []

    class Handle:
        def update(self, obj):
            shown.append(("update", obj.data))

    def display(obj, display_id=None):
        shown.append(("display", obj.data))
        return Handle()

    monkeypatch.setattr(IPython, "get_ipython", lambda: types.SimpleNamespace(kernel=object()))
    monkeypatch.setattr(IPython.display, "display", display)
    return shown


def pytest_ignore_collect(collection_path, config):
    """The quick tests (``-m "not slow and not e2e"``) do not import the browser tests at all: every test
    in tests/e2e is marked e2e (tests/e2e/conftest.py), so none could be selected, and importing and
    assertion-rewriting their 16 modules cost every xdist worker seconds."""
    if Path(collection_path) == E2E and excludes_e2e(config.getoption("markexpr", "")):
        return True
    return None


@pytest.hookimpl(trylast=True)
def pytest_collection_modifyitems(config, items):
    """The longest test files first (``collection.LONGEST_FIRST``): with ``--dist loadfile`` the workers
    take whole files in this order, and the run does not end waiting on one long file."""
    items[:] = longest_first(items, ROOT)
