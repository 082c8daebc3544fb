"""Compiled kernels (numba) of the null sampler (its random numbers: :func:`apnull.streams.uniform`).

Imported lazily: only Monte Carlo sampling and the scoring permutations (apnull.score) need them.

``floyd_pieces`` performs exactly the steps of ``sampling._metrics_numpy`` (the plain-numpy reference)
and gives the same numbers; tests hold the two together.
"""

import numba
import numpy as np
from llvmlite import ir
from numba.core import cgutils, types
from numba.extending import intrinsic

from . import compiled  # noqa: F401 - its cache locators, before the kernels below are made
from .streams import uniform


@intrinsic
def _trailing_zeros(typingctx, word):  # pragma: no cover - compiled
    """Index of the lowest set bit of a non-zero uint64 (LLVM's cttz: one tzcnt instruction)."""
    sig = types.uint64(types.uint64)

    def codegen(context, builder, signature, args):
        i64 = ir.IntType(64)
        fn = cgutils.get_or_insert_function(builder.module, ir.FunctionType(i64, [i64, ir.IntType(1)]),
                                            "llvm.cttz.i64")
        return builder.call(fn, [args[0], ir.Constant(ir.IntType(1), 1)])

    return sig, codegen


@numba.njit(cache=True, nogil=True, parallel=True)
def floyd_pieces(keys, row0s, ks, Ns, ms, complements, tops, offsets,
                 item_piece, item_lo, item_hi, ap_out, pr_out, top_out):  # pragma: no cover - compiled
    """AP, Precision@R and the positives in the top ranks of null draws, for many pieces in one call.

    Piece p is rows row0s[p] + r of the stream keys[p] for a ranking of Ns[p] items with ms[p] positives
    (ks[p] ranks drawn: the positives, or the negatives if complements[p]); its row r goes to index
    offsets[p] + r of ap_out, pr_out and top_out (positives in the top tops[p] ranks). The work items
    (item_piece, item_lo, item_hi) split the pieces' rows into parts of similar cost, which the threads
    share. One call for a whole view of sizes means one release of the GIL, not one per block: under
    30 sessions, taking the GIL back costs up to 5 ms each time (Python's switch interval).

    Row r uses uniforms r*k .. r*k+k-1 of its stream. Floyd's algorithm marks k ranks in a bitset;
    the positives (the marked ranks, or the unmarked ones if ``complement``) are then visited in rank
    order one set bit at a time, so a row costs O(k + N/64), not O(N). Speed (the same numbers as a
    plain loop): each work item has its own bitset and index buffer; a row's k candidate indices
    t_c = floor(u_c (j + 1)) are computed first, in a loop without dependencies that the compiler
    vectorises, and only then marked one after another (40% less time than marking each index as it
    is drawn, benchmarks/null_sampling.py).
    """
    one = np.uint64(1)
    for item in numba.prange(item_piece.size):
        p = item_piece[item]
        key, k, N, m, complement, top = keys[p], ks[p], Ns[p], ms[p], complements[p], tops[p]
        nwords = (N + 63) // 64
        tail = np.uint64(N % 64)
        uk = np.uint64(k)
        bits = np.zeros(nwords, dtype=np.uint64)
        cand = np.empty(k, dtype=np.int64)
        for r in range(item_lo[item], item_hi[item]):
            base = np.uint64(row0s[p] + r) * uk
            for c in range(k):
                j = N - k + c
                cand[c] = min(np.int64(uniform(key, base + np.uint64(c)) * (j + 1)), j)
            for c in range(k):
                t = cand[c]
                if (bits[t >> 6] >> np.uint64(t & 63)) & one:
                    t = N - k + c
                bits[t >> 6] |= one << np.uint64(t & 63)
            i = 0
            s = 0.0
            hits = 0
            top_hits = 0
            for w in range(nwords):
                word = bits[w]
                bits[w] = 0  # the bitset is clean again for the next row
                if complement:
                    word = ~word
                    if w == nwords - 1 and tail != 0:
                        word &= (one << tail) - one
                while word != 0:
                    pos = w * 64 + np.int64(_trailing_zeros(word))
                    i += 1
                    s += i / (pos + 1.0)
                    if pos < m:
                        hits += 1
                    if pos < top:
                        top_hits += 1
                    word &= word - one
            out = offsets[p] + r
            ap_out[out] = s / m
            pr_out[out] = hits / m
            top_out[out] = top_hits
