"""What the test session collects (used by tests/conftest.py; importable as ``collection``)."""

from __future__ import annotations

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
