"""What the test session collects (used by tests/conftest.py; importable as ``collection``)."""

from __future__ import annotations

import functools
import itertools
import os
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


def quiet_openmp_workers() -> bool:
    """Numba's parallel kernels run on an OpenMP thread pool whose idle workers spin on a barrier by default,
    burning a core between calls; the dashboard sets ``OMP_WAIT_POLICY=PASSIVE`` on its first run
    (apnull.ui.warmup), so a test process did only once an AppTest had run before its first parallel call.
    Set here before any kernel runs (unless the shell chose a policy): the sampling and page tests took
    10% less CPU, measured. Subprocesses inherit it. True when it set the policy."""
    if "OMP_WAIT_POLICY" in os.environ:
        return False
    os.environ["OMP_WAIT_POLICY"] = "PASSIVE"
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


#: the test files that take longest, longest first (CPU seconds of a quick run with a warm numba cache, a
#: file's subprocesses included, measured: 28 s the first, 8 s the last): the quick run sends whole files to
#: its workers (``--dist loadfile``, pyproject.toml) in this order, then the others as collected, so no
#: worker is left with a long file while the other idles at the end. A file missing here only runs later;
#: tests/test_front_door.py checks each one exists.
LONGEST_FIRST = (
    "tests/test_walk.py",
    "tests/score/test_hierarchical.py",
    "tests/test_page_score.py",
    "tests/test_exact.py",
    "tests/score/test_read_memory.py",
    "tests/score/test_read_subset.py",
    "tests/score/test_score_profiles.py",
    "tests/test_hostile_urls.py",
    "tests/test_fdr.py",
    "tests/test_compiled.py",
    "tests/score/test_score_kernel.py",
    "tests/test_page_ranking.py",
    "tests/test_binning_cost.py",
    "tests/score/test_score_auto.py",
    "tests/test_tail.py",
    "tests/score/test_results_display.py",
)


def longest_first(items: list, root: Path) -> list:
    """``items`` (collected tests) with the files of :data:`LONGEST_FIRST` first, in its order; the other
    files after them in collection order; the tests of a file in their order (a stable sort)."""
    rank = {name: i for i, name in enumerate(LONGEST_FIRST)}

    def key(item):
        try:
            name = Path(str(item.path)).resolve().relative_to(root).as_posix()
        except (AttributeError, ValueError):
            return len(rank)
        return rank.get(name, len(rank))

    return sorted(items, key=key)


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


def compile_scripts_once() -> bool:
    """Every ``AppTest.run`` makes a new ``ScriptCache``, so every run reads dashboard.py and the page's
    script, rewrites their syntax trees for Streamlit's magic and compiles them again (about 25 ms of CPU
    a run here, measured; the page tests run AppTests over a thousand times). A served dashboard compiles
    a script once (its one ``ScriptCache``); so does a test process from now on: the compiled code is
    kept per script path and text (a script changed on disk is compiled again) and magic setting. A
    script that fails to compile is not kept: it raises on every run, as before. True when it changed
    the cache."""
    from streamlit import config
    from streamlit.runtime.scriptrunner.script_cache import ScriptCache
    from streamlit.source_util import open_python_file

    get = ScriptCache.get_bytecode
    if getattr(get, "compiled_once", False):
        return False
    compiled = {}

    @functools.wraps(get)
    def get_bytecode(self, script_path):
        path = os.path.abspath(script_path)
        with open_python_file(path) as f:
            key = (path, f.read(), config.get_option("runner.magicEnabled"))
        if key not in compiled:
            compiled[key] = get(self, path)
        return compiled[key]

    get_bytecode.compiled_once = True
    ScriptCache.get_bytecode = get_bytecode
    return True
