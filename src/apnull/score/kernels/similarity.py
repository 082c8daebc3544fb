"""Compiled kernels (numba): similarities of prepared rows, one at a time (``sim``) or in blocks of four
rows at a fraction of its cost with the same bits (``sim_block4``, ``sim_rows``); ``prefetch``.

Similarity ``kind``: 0 = dot product of prepared rows (cosine and correlation rows are centred and/or
normalised beforehand), 1 = minus the squared Euclidean distance, 2 = absolute dot product (absolute
cosine of normalised rows), 3 = minus the Manhattan (L1) distance (on 0/1 rows: minus the Hamming
count), 4 = minus the Chebyshev (L-infinity) distance, 5 = Jaccard similarity of 0/1 rows
(|x and y| / |x or y|, 1 when both rows are all zero, as ``scipy.spatial.distance.jaccard`` gives distance
0 there). All are exactly symmetric (|x - y| = |y - x|, products commute, max is symmetric). Deterministic scalar code (no BLAS, no
threads, no fastmath): the same inputs give the same bits in any process.

Blocks:

``sim(X, i, Y, j, kind)`` sums over the features in order, one product (or squared difference) at a
time, from 0.0; ``dot4`` runs four such dot products side by side (the same bits, in about the time of
one). ``sim_block4`` takes four rows of A against a range of columns of ``XT`` (the other rows,
transposed: feature by feature), and the loop over the columns is innermost, so the compiler runs it
on vector registers, while every single sum still adds its terms in feature order, from 0.0, with no
fused multiply-add: the same bits as ``sim``. One pass over ``XT`` serves four rows.

``prefetch(a, i)`` asks the processor to bring element i of array a into its caches (LLVM's
``llvm.prefetch``, read, high locality): a hint only, it changes no value, never faults and does not
wait for the memory, so a kernel can ask for the records of many future reads at once and compute
meanwhile (:mod:`.draws` asks for the control-pair records of the next chunk of draws).
"""

from __future__ import annotations

import numpy as np
from llvmlite import ir
from numba import types
from numba.core import cgutils
from numba.extending import intrinsic

from ...compiled import entry, inner

__all__ = ["sim", "dot4", "sim_block4", "sim_rows", "prefetch"]


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


@entry()  # not inline="always": numba's IR inlining of its six branches gave wrong values
def sim(X, i, Y, j, kind):  # pragma: no cover - compiled
    """Similarity of row i of X and row j of Y: dot product (kind 0), -squared distance (kind 1),
    absolute dot product (kind 2), -L1 distance (kind 3), -L-infinity distance (kind 4) or Jaccard of
    0/1 rows (kind 5). Sums run over the features in order, from 0.0. Exactly symmetric."""
    s = 0.0
    if kind == 0 or kind == 2:
        for t in range(X.shape[1]):
            s += X[i, t] * Y[j, t]
        return abs(s) if kind == 2 else s
    if kind == 1:
        for t in range(X.shape[1]):
            diff = X[i, t] - Y[j, t]
            s += diff * diff
        return -s
    if kind == 3:
        for t in range(X.shape[1]):
            s += abs(X[i, t] - Y[j, t])
        return -s
    if kind == 4:
        for t in range(X.shape[1]):
            s = max(s, abs(X[i, t] - Y[j, t]))
        return -s
    union = 0.0  # kind 5: 0/1 values, so both counts are exact integers
    for t in range(X.shape[1]):
        x = X[i, t]
        y = Y[j, t]
        s += x * y
        union += max(x, y)
    return s / union if union > 0.0 else 1.0


@inner()
def dot4(X, a0, b0, a1, b1, a2, b2, a3, b3):  # pragma: no cover - compiled
    """The dot products of four pairs of rows of X, (a0, b0) to (a3, b3), in one pass over the features.

    Each sum adds its products in feature order from 0.0, as ``sim`` (kind 0) does, so each has
    ``sim``'s bits; only the four sums run side by side. One sum's additions each wait for the one
    before, so ``sim`` of a long row is bound by the adder's latency: four independent sums take about
    the time of one (the crossed layout's pairs of two controls, :func:`.lookups.know_all`)."""
    s0 = 0.0
    s1 = 0.0
    s2 = 0.0
    s3 = 0.0
    for t in range(X.shape[1]):
        s0 += X[a0, t] * X[b0, t]
        s1 += X[a1, t] * X[b1, t]
        s2 += X[a2, t] * X[b2, t]
        s3 += X[a3, t] * X[b3, t]
    return s0, s1, s2, s3


@inner()
def sim_block4(A, a, XT, c0, c1, kind, out, r0, o0):  # pragma: no cover - compiled
    """out[r0 + i, o0 + c - c0] = sim(A, a + i, X, c, kind) for i < 4 and c0 <= c < c1, X = XT.T."""
    d = XT.shape[0]
    w = c1 - c0
    for i in range(4):
        for c in range(w):
            out[r0 + i, o0 + c] = 0.0
    o_0 = out[r0, o0:o0 + w]
    o_1 = out[r0 + 1, o0:o0 + w]
    o_2 = out[r0 + 2, o0:o0 + w]
    o_3 = out[r0 + 3, o0:o0 + w]
    if kind == 0 or kind == 2:
        t = np.int64(0)
        while t + 2 <= d:
            p0, p1, p2, p3 = A[a, t], A[a + 1, t], A[a + 2, t], A[a + 3, t]
            q0, q1, q2, q3 = A[a, t + 1], A[a + 1, t + 1], A[a + 2, t + 1], A[a + 3, t + 1]
            T0 = XT[t, c0:c1]
            T1 = XT[t + 1, c0:c1]
            for c in range(w):
                y0 = T0[c]
                y1 = T1[c]
                o_0[c] = (o_0[c] + p0 * y0) + q0 * y1
                o_1[c] = (o_1[c] + p1 * y0) + q1 * y1
                o_2[c] = (o_2[c] + p2 * y0) + q2 * y1
                o_3[c] = (o_3[c] + p3 * y0) + q3 * y1
            t += 2
        if t < d:
            p0, p1, p2, p3 = A[a, t], A[a + 1, t], A[a + 2, t], A[a + 3, t]
            T0 = XT[t, c0:c1]
            for c in range(w):
                y0 = T0[c]
                o_0[c] = o_0[c] + p0 * y0
                o_1[c] = o_1[c] + p1 * y0
                o_2[c] = o_2[c] + p2 * y0
                o_3[c] = o_3[c] + p3 * y0
        if kind == 2:  # absolute dot product, as in ``sim``
            for c in range(w):
                o_0[c] = abs(o_0[c])
                o_1[c] = abs(o_1[c])
                o_2[c] = abs(o_2[c])
                o_3[c] = abs(o_3[c])
        return
    if kind == 3 or kind == 4:  # L1: sums of |differences|; L-infinity: their maxima (one step each)
        for t in range(d):
            p0, p1, p2, p3 = A[a, t], A[a + 1, t], A[a + 2, t], A[a + 3, t]
            T0 = XT[t, c0:c1]
            if kind == 3:
                for c in range(w):
                    y0 = T0[c]
                    o_0[c] = o_0[c] + abs(p0 - y0)
                    o_1[c] = o_1[c] + abs(p1 - y0)
                    o_2[c] = o_2[c] + abs(p2 - y0)
                    o_3[c] = o_3[c] + abs(p3 - y0)
            else:
                for c in range(w):
                    y0 = T0[c]
                    o_0[c] = max(o_0[c], abs(p0 - y0))
                    o_1[c] = max(o_1[c], abs(p1 - y0))
                    o_2[c] = max(o_2[c], abs(p2 - y0))
                    o_3[c] = max(o_3[c], abs(p3 - y0))
    else:
        for t in range(d):
            p0, p1, p2, p3 = A[a, t], A[a + 1, t], A[a + 2, t], A[a + 3, t]
            T0 = XT[t, c0:c1]
            for c in range(w):
                y0 = T0[c]
                e0 = p0 - y0
                e1 = p1 - y0
                e2 = p2 - y0
                e3 = p3 - y0
                o_0[c] = o_0[c] + e0 * e0
                o_1[c] = o_1[c] + e1 * e1
                o_2[c] = o_2[c] + e2 * e2
                o_3[c] = o_3[c] + e3 * e3
    for c in range(w):
        o_0[c] = -o_0[c]
        o_1[c] = -o_1[c]
        o_2[c] = -o_2[c]
        o_3[c] = -o_3[c]


@inner()
def sim_rows(A, a0, a1, X, XT, c0, c1, kind, out, r0, o0):  # pragma: no cover - compiled
    """out[r0 + a - a0, o0 + c - c0] = sim(A, a, X, c, kind) for a0 <= a < a1, c0 <= c < c1.

    Four rows at a time by :func:`sim_block4`; one to three rows left over, of at least four, come with
    the rows before them as the last four (a row by ``sim`` is bound by the adder's latency: five rows
    took about twice the time of four); fewer than four rows by ``sim``. The same bits either way.
    Jaccard (kind 5) takes ``sim`` for every pair (binary screens are small).
    """
    a = a0
    while a + 4 <= a1 and kind != 5:
        sim_block4(A, a, XT, c0, c1, kind, out, r0 + a - a0, o0)
        a += 4
    if a < a1 and a1 - a0 >= 4 and kind != 5:  # the last four rows, some again (the same values): a row by
        sim_block4(A, a1 - 4, XT, c0, c1, kind, out, r0 + a1 - 4 - a0, o0)  # ``sim`` waits on each addition
        a = a1
    while a < a1:
        for c in range(c0, c1):
            out[r0 + a - a0, o0 + c - c0] = sim(A, a, X, c, kind)
        a += 1
