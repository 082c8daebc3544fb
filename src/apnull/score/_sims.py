"""Compiled kernels (numba): blocks of similarities, the bits of ``_kernels.sim`` at a fraction of its cost.

``sim(X, i, Y, j, kind)`` sums over the features in order, one product (or squared difference) at a
time, from 0.0. Here four rows of A are taken against a range of columns of ``XT`` (the other rows,
transposed: feature by feature), and the loop over the columns is innermost, so the compiler runs it
on vector registers, while every single sum still adds its terms in feature order, from 0.0, with no
fused multiply-add: the same bits as ``sim``. One pass over ``XT`` serves four rows.
"""

from __future__ import annotations

import numba

from ._kernels import sim


@numba.njit(cache=True)
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
    if kind != 1:
        t = 0
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


@numba.njit(cache=True)
def sim_rows(A, a0, a1, X, XT, c0, c1, kind, out, r0, o0):  # pragma: no cover - compiled
    """out[r0 + a - a0, o0 + c - c0] = sim(A, a, X, c, kind) for a0 <= a < a1, c0 <= c < c1.

    Four rows at a time by :func:`sim_block4`; the last one to three rows by ``sim`` (same bits).
    """
    a = a0
    while a + 4 <= a1:
        sim_block4(A, a, XT, c0, c1, kind, out, r0 + a - a0, o0)
        a += 4
    while a < a1:
        for c in range(c0, c1):
            out[r0 + a - a0, o0 + c - c0] = sim(A, a, X, c, kind)
        a += 1
