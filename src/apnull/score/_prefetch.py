"""``prefetch(a, i)``: ask the processor to bring element i of array a into its caches (numba intrinsic).

A hint only (LLVM's ``llvm.prefetch``, read, high locality): it changes no value, never faults, and
does not wait for the memory, so a kernel can ask for the records of many future reads at once and
compute meanwhile. ``_draws`` asks for the control-pair records of the next chunk of draws this way.
"""

from __future__ import annotations

from llvmlite import ir
from numba import types
from numba.core import cgutils
from numba.extending import intrinsic

__all__ = ["prefetch"]


@intrinsic
def prefetch(typingctx, arr, idx):  # pragma: no cover - compiled
    """Prefetch ``arr[idx]`` (1-d array, 0 <= idx < arr.size) into the caches; returns nothing."""
    sig = types.void(arr, idx)

    def codegen(context, builder, signature, args):
        aryty = signature.args[0]
        ary = context.make_array(aryty)(context, builder, args[0])
        ptr = cgutils.get_item_pointer(context, builder, aryty, ary, [args[1]], wraparound=False)
        i8p = ir.IntType(8).as_pointer()
        fnty = ir.FunctionType(ir.VoidType(), [i8p, ir.IntType(32), ir.IntType(32), ir.IntType(32)])
        fn = cgutils.get_or_insert_function(builder.module, fnty, "llvm.prefetch.p0")
        i32 = ir.IntType(32)
        builder.call(fn, [builder.bitcast(ptr, i8p), ir.Constant(i32, 0), ir.Constant(i32, 3), ir.Constant(i32, 1)])
        return context.get_dummy_value()

    return sig, codegen
