"""What the test session collects (used by tests/conftest.py; importable as ``collection``)."""

from __future__ import annotations

import functools
import itertools
import re
import sys
import tempfile
from pathlib import Path

#: where bytecode goes when the shell asked for none in the source tree (PYTHONDONTWRITEBYTECODE)
PYCACHE = Path(tempfile.gettempdir()) / "apnull-test-pycache"


def cache_bytecode_outside_the_tree() -> bool:
    """With PYTHONDONTWRITEBYTECODE set (no ``__pycache__`` in source trees), every test process compiles
    every module from source and pytest rewrites every test module's asserts again: about 10 s of CPU
    per xdist worker, measured. Then bytecode and rewritten tests are cached in :data:`PYCACHE`
    (``sys.pycache_prefix``) instead, still never in the tree. True when it changed the setting."""
    if not sys.dont_write_bytecode or sys.pycache_prefix is not None:
        return False
    sys.pycache_prefix = str(PYCACHE)
    sys.dont_write_bytecode = False
    return True


def excludes_e2e(markexpr: str) -> bool:
    """True when the ``-m`` expression ``markexpr`` selects no test marked ``e2e``, whatever its other
    marks: false for every truth value of the expression's other names with ``e2e`` true. Only plain
    expressions (names, and/or/not, parentheses) are judged; any other says False (collect)."""
    if not markexpr or not re.fullmatch(r"[\w\s()]+", markexpr):
        return False
    names = sorted(set(re.findall(r"\w+", markexpr)) - {"and", "or", "not", "e2e"})
    try:
        code = compile(markexpr, "<markexpr>", "eval")
        return not any(eval(code, {"__builtins__": {}}, {**dict(zip(names, values)), "e2e": True})
                       for values in itertools.product((False, True), repeat=len(names)))
    except Exception:  # noqa: BLE001 (an expression Python cannot read: let pytest judge it)
        return False


def scan_components_once() -> bool:
    """Every ``AppTest`` scans the metadata of every installed distribution for Streamlit components on its
    first run (``streamlit.components.v2.manifest_scanner.scan_component_manifests``): about 0.47 s of CPU
    per AppTest here, measured, about a third of a page test. A served dashboard scans once at server
    start; so does a test process from now on (the installed packages do not change during a session).
    True when it changed the scanner."""
    from streamlit.components.v2 import manifest_scanner

    scan = manifest_scanner.scan_component_manifests
    if getattr(scan, "scanned_once", False):
        return False
    cached = functools.cache(scan)

    @functools.wraps(scan)
    def scan_once(*args, **kwargs):
        return list(cached(*args, **kwargs))  # a fresh list: a caller may change it, never the cache

    scan_once.scanned_once = True
    manifest_scanner.scan_component_manifests = scan_once
    return True
