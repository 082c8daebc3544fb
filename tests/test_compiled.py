"""apnull.compiled: inner kernels are lowered for linking only, and callers compute with them as with any
numba function, on a fresh cache and from a warm one (a new caller of a cached inner kernel included)."""

from __future__ import annotations

import os
import subprocess
import sys
import textwrap

import numba
import numpy as np
import pytest

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


@pytest.mark.slow  # fresh Python processes compiling kernels: 6 to 12 s each
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


def _package_run(tmp_path, code):
    """Run ``code`` in a fresh process where the package ``pkg`` in tmp_path is stamped as apnull is."""
    prelude = ("import sys\nfrom pathlib import Path\nimport apnull.compiled as c\n"
               f"c.STAMPED_ROOTS.append(Path({str(tmp_path / 'pkg')!r}).resolve())\n")
    env = dict(os.environ, NUMBA_CACHE_DIR=str(tmp_path / "cache"), PYTHONPATH=str(tmp_path))
    out = subprocess.run([sys.executable, "-c", prelude + code], cwd=tmp_path, env=env, capture_output=True,
                         text=True, timeout=300)
    assert out.returncode == 0, out.stderr[-3000:]
    return out.stdout.split()


@pytest.mark.slow  # fresh Python processes compiling kernels: 6 to 12 s each
def test_a_cached_kernel_is_compiled_again_when_a_module_it_imports_changes(tmp_path):
    """numba checks a cached kernel against its own file only: a helper inlined from another module kept its
    old code after that module changed. A kernel of a stamped package is checked against every package file
    its module imports (apnull.compiled.source_stamp), and read from the cache while none changes."""
    pkg = tmp_path / "pkg"
    pkg.mkdir()
    (pkg / "__init__.py").write_text("")
    (pkg / "helper.py").write_text("import numba\n\n\n@numba.njit(cache=True, inline='always')\n"
                                   "def value():\n    return 1\n")
    (pkg / "constants.py").write_text("OFFSET = 10\n")
    (pkg / "other.py").write_text("NOTE = 'not imported by the kernel'\n")
    (pkg / "main.py").write_text("from apnull.compiled import entry\n\nfrom .constants import OFFSET\n"
                                 "from .helper import value\n\n\n@entry()\ndef run():\n    return value() + OFFSET\n")
    show = "from pkg.main import run\nprint(run(), len(run.stats.cache_hits), len(run.stats.cache_misses))"
    assert _package_run(tmp_path, show) == ["11", "0", "1"]
    (pkg / "helper.py").write_text((pkg / "helper.py").read_text().replace("return 1", "return 2"))
    assert _package_run(tmp_path, show) == ["12", "0", "1"]  # numba alone printed 11 from its cache
    (pkg / "constants.py").write_text("OFFSET = 20\n")  # a global is frozen into the machine code
    assert _package_run(tmp_path, show) == ["22", "0", "1"]
    (pkg / "other.py").write_text("NOTE = 'changed'\n")  # not imported: the cached kernel stays valid
    assert _package_run(tmp_path, show) == ["22", "1", "0"]  # read from the cache (one fresh process fewer:
    # this hit after a change to a file the kernel does not import also shows an unchanged package hits)


def test_the_stamp_covers_the_kernels_imports_and_nothing_else(tmp_path):
    from pathlib import Path

    import apnull
    from apnull.compiled import STAMPED_ROOTS, imported_sources

    root = Path(apnull.__file__).resolve().parent
    assert root in STAMPED_ROOTS
    names = {str(f.relative_to(root)) for f in imported_sources(root / "score" / "kernels" / "crossed.py")}
    assert {"score/kernels/crossed.py", "score/kernels/filled.py", "score/kernels/lookups.py", "streams.py",
            "compiled.py", "score/kernels/ranking.py"} <= names
    assert not any(n.startswith(("ui/", "views/", "plots/", "score/nulls/")) for n in names), names
    assert "__init__.py" not in names  # ``from ... import exact`` names a module, not the package's names
    outside = tmp_path / "mod.py"  # a file outside the stamped packages: its imports are not followed
    outside.write_text("from apnull import exact\n")
    assert imported_sources(outside) == (outside.resolve(),)


def test_every_module_making_kernels_imports_compiled_first():
    """The stamped cache locators are numba's once apnull.compiled is imported: a module making kernels
    imports it (at its top, before its decorators), or its kernels' cache entries would be stamped by
    numba's rule in one process and by the package's in another, and compiled again at each switch."""
    import re
    from pathlib import Path

    import apnull

    root = Path(apnull.__file__).resolve().parent
    makes = re.compile(r"^@(numba\.)?(njit|jit|entry|inner)\(", re.M)
    imports = re.compile(r"^from \.+(compiled)? import (compiled|.*\b(entry|inner)\b)", re.M)
    makers = [p for p in root.rglob("*.py") if makes.search(p.read_text()) and p.name != "compiled.py"]
    assert len(makers) >= 15
    missing = [str(p.relative_to(root)) for p in makers if not imports.search(p.read_text())]
    assert not missing, missing


INTERRUPTED = textwrap.dedent('''
    import contextlib
    import signal
    import sys
    import time
    import numpy as np
    from apnull.compiled import safe_interrupts

    signal.signal(signal.SIGINT, signal.default_int_handler)  # as in a terminal, even when started ignoring it
    from apnull.score.kernels import labelsets as K

    X = np.random.default_rng(0).normal(size=(3000, 50))
    K.similarity_rows(X[:5], 0)  # loaded (or compiled) before the interrupt can come
    returned = None
    print("sorting", flush=True)
    try:
        with safe_interrupts() if sys.argv[1] == "safe" else contextlib.nullcontext():
            K.similarity_rows(X, 0)  # KERNEL: about a second, holding the interpreter
            returned = time.monotonic()
            time.sleep(10)  # an interrupt sent again comes here at the latest
        print("finished", flush=True)
    except KeyboardInterrupt as raised:
        print("interrupted", raised.__traceback__.tb_lineno, returned, flush=True)
''')
KERNEL_LINE = next(i for i, line in enumerate(INTERRUPTED.splitlines(), 1) if "# KERNEL" in line)


def test_an_interrupt_during_a_kernel_that_returns_arrays_is_raised_not_a_crash(tmp_path):
    """Ctrl+C (SIGINT from outside) while a kernel that returns arrays runs: Python takes the signal at the
    first Python code after it, which is numba's call back to unpickle the arrays' class; an exception there
    crashed the process (a segmentation fault, every time). Under :func:`safe_interrupts` it is raised once
    the arrays are handed over: KeyboardInterrupt after the kernel's line, the process alive.

    The signal is sent 0.2 s into a sort of about a second. A busy machine may run the script late, so a try
    counts only when the signal came while the kernel ran: the kernel returned after it was sent (or the
    interrupt came before that time could be taken, which only the interrupt sent again does)."""
    import signal
    import time

    script = tmp_path / "interrupted.py"
    script.write_text(INTERRUPTED)
    for _ in range(4):
        proc = subprocess.Popen([sys.executable, str(script), "safe"], stdout=subprocess.PIPE, text=True)
        assert proc.stdout.readline().strip() == "sorting"
        time.sleep(0.2)
        sent = time.monotonic()
        proc.send_signal(signal.SIGINT)
        out, _ = proc.communicate(timeout=120)
        # -11 (a segmentation fault) or a SystemError without safe_interrupts
        assert proc.returncode == 0 and out.split()[0] == "interrupted", (proc.returncode, out)
        _, line, returned = out.split()
        if int(line) > KERNEL_LINE and (returned == "None" or float(returned) > sent):
            return  # the signal came during the kernel and was raised after it
        # else raised at or before the kernel's line (sent before the kernel began), or after it returned
    pytest.fail("in 4 tries the signal never came while the sort ran: the test needs a larger one")


def test_safe_interrupts_defers_only_inside_numbas_call_back(monkeypatch):
    """The handler :func:`safe_interrupts` installs (main thread): an interrupt in numba's unpickling call is
    sent again a moment later (a daemon timer); anywhere else it goes to the handler that was there; on
    leaving, that handler is back."""
    import signal
    import threading
    import types

    from numba.core.serialize import _numba_unpickle

    from apnull.compiled import INTERRUPT_AGAIN, safe_interrupts

    timers = []

    class Timer:
        def __init__(self, seconds, fn, args):
            timers.append((seconds, fn, args))
            self.daemon = False

        def start(self):
            timers.append(("started", self.daemon))

    # Python's own handler, even in a process started with SIGINT ignored (a background job of a shell script)
    restore = signal.signal(signal.SIGINT, signal.default_int_handler)
    try:
        before = signal.getsignal(signal.SIGINT)
        monkeypatch.setattr(threading, "Timer", Timer)
        with safe_interrupts():
            handler = signal.getsignal(signal.SIGINT)
            assert handler is not before
            handler(signal.SIGINT, types.SimpleNamespace(f_code=_numba_unpickle.__code__))
            assert timers == [(INTERRUPT_AGAIN, os.kill, (os.getpid(), signal.SIGINT)), ("started", True)]
            with pytest.raises(KeyboardInterrupt):
                handler(signal.SIGINT, sys._getframe())
        assert signal.getsignal(signal.SIGINT) is before
    finally:
        signal.signal(signal.SIGINT, restore)
