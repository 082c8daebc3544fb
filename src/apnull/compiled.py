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
numba's behaviour: same values, fresh and cached."""

from __future__ import annotations

import llvmlite.binding as ll
import llvmlite.ir as llvmir
import numba
from numba import _dynfunc
from numba.core import compiler, typed_passes
from numba.core.codegen import JITCodeLibrary
from numba.core.compiler_lock import require_global_compiler_lock
from numba.core.compiler_machinery import register_pass

__all__ = ["entry", "inner", "LinkOnlyCompiler"]


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
