"""The two decorators of the package's numba kernels (the scoring wing's and ``streams``').

- :func:`entry`: a kernel that Python calls (the batch kernels the nulls call, and the few that the
  tables and tests call): ``numba.njit(cache=True)`` without the C-callable entry, which no kernel
  needs. Compiled on first use and kept in numba's cache.
- :func:`inner`: a kernel that only other kernels call. numba compiles any function to machine code as
  soon as a caller is typed, then links the function's LLVM code into each caller and optimises and
  compiles the caller's whole module: only the callers' machine code ever runs. So an inner kernel is
  lowered for linking only (:class:`LinkOnlyCompiler`): numba's passes down to LLVM code, its
  per-function optimisation and the linking of its own callees, but no module optimisation and no
  machine code of its own. numba's cache keeps its module for linking, so a caller compiled later (a
  new command on a warm cache) links it without compiling it again. It has no Python or C entry
  either: Python cannot call it (numba has no entry to run: the interpreter crashes), so only the
  kernels' modules import one (``tests/test_architecture.py``), and a test reaches one through
  ``score_helpers.from_python``, a small compiled caller.

Small helpers, and the one-caller steps of a batch kernel, are ``numba.njit(cache=True,
inline="always")`` instead: numba copies them into their callers rather than compiling them apart.
docs/benchmarks.md measures what each of these saves on a fresh install's first run.

This module extends numba's compiler through its pipeline classes and code libraries (the one module
that takes a numba internal, ``tests/test_architecture.py``); ``tests/test_compiled.py`` holds it to
numba's behaviour: same values, fresh and cached.

numba's cache checks a kernel against its own file only: a kernel whose cached machine code inlines or
links a helper from another module kept running the helper's old code after that module changed (a
checkout updated by ``git pull``, an edited tree). Here a kernel of this package is cached under a
stamp of its file and of every file of the package its module imports, directly or through others
(:func:`source_stamp`; :class:`PackageInTree` and its two siblings, which numba's cache tries before its
own locators), so a change to any of them compiles the kernel again."""

from __future__ import annotations

import contextlib
import functools
import hashlib
import os
import re
import signal
import threading
from pathlib import Path

import llvmlite.binding as ll
import llvmlite.ir as llvmir
import numba
from numba import _dynfunc
from numba.core import caching, compiler, typed_passes
from numba.core.codegen import JITCodeLibrary
from numba.core.compiler_lock import require_global_compiler_lock
from numba.core.compiler_machinery import register_pass
from numba.core.serialize import _numba_unpickle

__all__ = ["entry", "inner", "LinkOnlyCompiler", "STAMPED_ROOTS", "imported_sources", "source_stamp",
           "PackageCacheDir", "PackageInTree", "PackageUserWide", "safe_interrupts", "INTERRUPT_AGAIN"]


def entry(**options):
    """Decorator of a kernel called from Python: ``numba.njit(cache=True, **options)`` without the C entry."""
    return numba.njit(cache=True, no_cfunc_wrapper=True, **options)


def inner(**options):
    """Decorator of a kernel only other kernels call: lowered for linking only (:class:`LinkOnlyCompiler`),
    without the Python and C entries; cached as its module for linking.

    Calling it from Python crashes the interpreter (numba has no entry to run), so nothing outside the
    kernels' modules imports one (``tests/test_architecture.py``); a test reaches one through a small
    compiled caller.
    """
    return numba.njit(cache=True, no_cfunc_wrapper=True, no_cpython_wrapper=True, pipeline_class=LinkOnlyCompiler,
                      **options)


class LinkOnlyLibrary(JITCodeLibrary):
    """numba's code library of an inner kernel: finalizing it links its callees' libraries and stops.

    The module optimisation and the machine code are left to the callers: numba links this library's
    module into each caller (its functions ``linkonce_odr``), then optimises and compiles the caller's
    whole module, so the inner kernel's code is optimised in its caller's context as before, once.
    numba's per-function optimisation still runs as each module is added (``add_llvm_module``).
    """

    def finalize(self):
        require_global_compiler_lock()
        self._raise_if_finalized()
        seen = set()
        for library in self._linking_libraries:
            if library not in seen:
                seen.add(library)
                self._reload_init.update(library._reload_init)
                self._final_module.link_in(library._get_module_for_linking(), preserve=True)
        self._final_module.verify()
        self._finalized = True

    def serialize_using_object_code(self):
        """numba's cache form of a library, ``(name, "object", (machine code, module for linking))``, for a
        library without machine code: the machine code of a module that only defines the library's
        environment pointers (numba sets them when it loads a cached function) and the module for linking.
        Loading it compiles nothing: numba hands the small object to the JIT and keeps the module for
        the callers to link."""
        self._ensure_finalized()
        stub = llvmir.Module(name=self.name)
        for gv in self._final_module.global_variables:  # as numba's CompileResult finds them
            if gv.name.startswith("_ZN08NumbaEnv"):
                env = llvmir.GlobalVariable(stub, llvmir.IntType(8).as_pointer(), name=gv.name)
                env.linkage = "common"
                env.initializer = llvmir.Constant(env.type.pointee, None)
        stub.triple = self._final_module.triple
        stub.data_layout = str(self._final_module.data_layout)
        obj = self._codegen._tm.emit_object(ll.parse_assembly(str(stub)))
        return (self.name, "object", (obj, self._get_module_for_linking().as_bitcode()))


@register_pass(mutates_CFG=True, analysis_only=False)
class LinkOnlyLowering(typed_passes.NativeLowering):
    """numba's native lowering pass, ending in a :class:`LinkOnlyLibrary` instead of machine code.

    The function is registered for its callers as numba registers any compiled function (its
    descriptor and library, under a key object: a function object with no code behind it, as numba
    makes for a kernel without Python entry).
    """

    _name = "apnull_link_only_lowering"

    def run_pass(self, state):
        state.flags.no_compile = True  # numba's pass lowers, then registers nothing and makes no executable
        super().run_pass(state)
        library = state.library
        if type(library) is not JITCodeLibrary:  # inner kernels are numba.njit's: its CPU JIT
            raise RuntimeError(f"apnull.compiled: an inner kernel's library is a {type(library).__name__}, not "
                               "numba's JITCodeLibrary")
        library.__class__ = LinkOnlyLibrary
        lowered = state["cr"]
        library.finalize()  # links the callees (what numba's executable would have finalized)
        key = _dynfunc.make_function(lowered.fndesc.lookup_module(), lowered.fndesc.qualname.split(".")[-1],
                                     "a kernel only other kernels call", 0, lowered.env, (library,))
        state.targetctx.insert_user_function(key, lowered.fndesc, [library])
        state.reload_init.extend(library._reload_init)
        state["cr"] = lowered._replace(cfunc=key)
        return True


class LinkOnlyCompiler(compiler.CompilerBase):
    """numba's nopython pipeline with :class:`LinkOnlyLowering` in place of its native lowering."""

    def define_pipelines(self):
        pm = compiler.DefaultPassBuilder.define_nopython_pipeline(self.state)
        passes = [p for p, _ in pm.passes]
        if typed_passes.NativeLowering not in passes:  # a numba whose pipeline this does not know
            raise RuntimeError("apnull.compiled: numba's nopython pipeline has no NativeLowering pass")
        pm.passes = [(LinkOnlyLowering if p is typed_passes.NativeLowering else p, d) for p, d in pm.passes]
        pm.finalize()
        return [pm]


#: Package folders whose kernels are cached under :func:`source_stamp` (this package's; a test adds its own).
STAMPED_ROOTS: list[Path] = [Path(__file__).resolve().parent]

_FROM = re.compile(r"^[ \t]*from[ \t]+(\.*)([\w.]*)[ \t]+import[ \t]+(\([^)]*\)|[^\n#]*)", re.M)
_IMPORT = re.compile(r"^[ \t]*import[ \t]+([^\n#]*)", re.M)


def _root_of(path: Path) -> Path | None:
    return next((root for root in STAMPED_ROOTS if path.is_relative_to(root)), None)


def _module_file(where: Path) -> Path | None:
    """The file of the module at ``where`` (a path without suffix): ``where.py`` or its ``__init__.py``."""
    for candidate in (where.with_name(where.name + ".py"), where / "__init__.py"):
        if candidate.is_file():
            return candidate
    return None


@functools.lru_cache(maxsize=512)
def _direct_imports(path: Path, mtime_ns: int, size: int) -> tuple[Path, ...]:
    """The files of this package's root that ``path`` imports by name (``from .x import y``: x, and y when it
    is a module; ``import apnull.x``), read from its text; (mtime, size) key the memo. No files (an empty tuple)
    for a file outside :data:`STAMPED_ROOTS`: its stamp is its own."""
    root = _root_of(path)
    if root is None:
        return ()
    text = path.read_text(encoding="utf-8")
    targets: list[tuple[Path, list[str]]] = []
    for dots, module, names in _FROM.findall(text):
        if dots:
            base = path.parent
            for _ in range(len(dots) - 1):
                base = base.parent
        elif module.split(".")[0] == root.name:
            base, module = root.parent / root.name, ".".join(module.split(".")[1:])
        else:
            continue
        where = base.joinpath(*module.split(".")) if module else base
        listed = [n.split(" as ")[0].strip() for n in names.strip("()").replace("\\", "").split(",")]
        targets.append((where, [n for n in listed if n.isidentifier()]))
    for line in _IMPORT.findall(text):
        for name in (n.split(" as ")[0].strip() for n in line.split(",")):
            parts = name.split(".")
            if parts[0] == root.name:
                targets.append((root.joinpath(*parts[1:]) if parts[1:] else root, []))
    found = []
    for where, names in targets:
        modules = [_module_file(where / n) for n in names]
        # ``from . import a, b`` of modules a and b reads nothing of the package's __init__
        named = [] if names and all(modules) else [_module_file(where)]
        for file in (*named, *modules):
            if file is not None and file.is_relative_to(root) and file != path:
                found.append(file)
    return tuple(dict.fromkeys(found))


def _stated_sources(path) -> tuple[tuple[Path, int, int], ...]:
    """:func:`imported_sources` with each file's (mtime, size), each file stated once."""
    start = Path(path).resolve()
    seen, todo, stated = {start}, [start], []
    while todo:
        file = todo.pop()
        st = file.stat()
        stated.append((file, st.st_mtime_ns, st.st_size))
        for other in _direct_imports(file, st.st_mtime_ns, st.st_size):
            if other not in seen:
                seen.add(other)
                todo.append(other)
    return tuple(sorted(stated))


def imported_sources(path) -> tuple[Path, ...]:
    """``path`` and every file of its package root that it imports, directly or through other such files,
    in a fixed (sorted) order: the sources a kernel of ``path`` can inline, link or read a constant from."""
    return tuple(file for file, _, _ in _stated_sources(path))


@functools.lru_cache(maxsize=512)
def _combined(stated: tuple[tuple[Path, int, int], ...]) -> bytes:
    root = _root_of(stated[0][0]) or stated[0][0].parent
    h = hashlib.sha256()
    for file, _, _ in stated:
        h.update(str(file.relative_to(root)).encode() + b"\0" + hashlib.sha256(file.read_bytes()).digest())
    return h.digest()


def source_stamp(path) -> bytes:
    """SHA-256 of the relative names and contents of :func:`imported_sources` of ``path``: a kernel's cache
    entry stays valid while none of those files changes (their (mtime, size) key the memo of the digest)."""
    return _combined(_stated_sources(path))


class _Stamped:
    """A numba cache locator for this package's kernels: numba's own (the parent class next in line) for
    where the cache lives, :func:`source_stamp` for when an entry is stale; not used for other files."""

    def __init__(self, py_func, py_file):
        super().__init__(py_func, py_file)
        self.source = Path(py_file).resolve()

    @classmethod
    def from_function(cls, py_func, py_file):
        if _root_of(Path(py_file).resolve()) is None:
            return None
        return super().from_function(py_func, py_file)

    def get_source_stamp(self):
        return source_stamp(self.source)


class PackageCacheDir(_Stamped, caching.UserProvidedCacheLocator):
    """numba's ``NUMBA_CACHE_DIR`` locator with :func:`source_stamp`."""


class PackageInTree(_Stamped, caching.InTreeCacheLocator):
    """numba's ``__pycache__`` locator with :func:`source_stamp`."""


class PackageUserWide(_Stamped, caching.UserWideCacheLocator):
    """numba's user-wide cache locator (a read-only install) with :func:`source_stamp`."""


_STAMPED = [PackageCacheDir, PackageInTree, PackageUserWide]
if caching.CacheImpl._locator_classes[: len(_STAMPED)] != _STAMPED:  # once per process, before any kernel
    caching.CacheImpl._locator_classes = [*_STAMPED, *caching.CacheImpl._locator_classes]


#: Seconds after which an interrupt that came inside numba's call back into Python is raised again.
INTERRUPT_AGAIN = 0.01


@contextlib.contextmanager
def safe_interrupts():
    """Ctrl+C (SIGINT, a notebook's interrupt) raised only where an exception is safe, while the block runs.

    A kernel that returns an array (or a tuple of them) has numba's compiled code call back into Python as
    it hands the result over: ``numba.core.serialize._numba_unpickle`` gives it the array's Python class. An
    interrupt that arrived during a long kernel is raised at the first Python code run after it, which is
    that call; the compiled caller does not check it for an error and goes on without the class: the
    process ends on a segmentation fault (``apnull consistency`` interrupted while its similarity rows were
    sorted, every time). Here an interrupt taken inside that call is raised again a moment later
    (:data:`INTERRUPT_AGAIN`), once the result is handed over; every other one goes to the handler that was
    there (Python's: KeyboardInterrupt). Only the main thread receives signals: elsewhere (a dashboard's
    script thread) this does nothing, as it does when SIGINT is not handled by Python code."""
    previous = signal.getsignal(signal.SIGINT) if threading.current_thread() is threading.main_thread() else None
    if not callable(previous):
        yield
        return

    def handler(signum, frame):
        if frame is not None and frame.f_code is _numba_unpickle.__code__:
            again = threading.Timer(INTERRUPT_AGAIN, os.kill, (os.getpid(), signum))
            again.daemon = True  # a run that ends meanwhile exits without it
            again.start()
            return
        previous(signum, frame)

    signal.signal(signal.SIGINT, handler)
    try:
        yield
    finally:
        signal.signal(signal.SIGINT, previous)
