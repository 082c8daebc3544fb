"""A crossed perturbation's mAP round cut into pieces that threads draw side by side.

The last rounds of the mAP null's refinement hold the few perturbations whose BH decision sits at the
line (on the 2,000-compound crossed benchmark 11, 5, 3, then 1 of them, up to 1,000,000 draws each):
fewer than the threads can share, so a thread sits idle while the others draw. A perturbation of the
crossed kernels (:mod:`..kernels.crossed`) takes one number of each replicate's stream a draw, so its
counters after its draw d are those at the start of the round plus d - drawn: the round's draws cut into
consecutive pieces are the same draws, each piece starting from its own counters. A piece never stops
early when the perturbation has reached its h-th exceedance already (a draw stops only a unit still
under h, :func:`..kernels.chunks.count_draw`), so the round's exceedances are the sum of its pieces'. The
outputs are those of the round drawn whole, bit for bit, whatever the threads.

A perturbation is cut only when its pool's tables are kept from an earlier round (its filled counts and
its similarities, :mod:`.pooltables`, so no two pieces write one room) and each piece has at least
:data:`PIECE_DRAWS` draws.
"""

from __future__ import annotations

import numpy as np

from ..kernels.crossed import crossed_pools
from .pooltables import kept_already

__all__ = ["PIECE_DRAWS", "CrossedPieces"]

#: Fewest draws of a piece (about a millisecond of draws: a piece costs a pool's set-up, tens of µs).
PIECE_DRAWS = 16_384


class CrossedPieces:
    """The mAP null's :class:`..engine.executor.Pieces` (see the module)."""

    def cut(self, part, pos, st, target, h, count):
        """Pieces of the round of the perturbation at ``pos`` (one) of ``part``: about ``count`` of them, each
        (inputs, target), or None when it is not a crossed perturbation past its h-th exceedance whose
        tables are kept, or when its round is too short."""
        if pos.size != 1 or not part.crossed or not part.shared:
            return None
        drawn = int(st["drawn"][0])
        count = min(count, (target - drawn) // PIECE_DRAWS)
        if count < 2 or st["reached"][0] < h or not crossed_pools(part.arrays, part.comps, part.comp_of, pos)[0]:
            return None
        if not kept_already(part, int(part.comp_of[pos[0]]), int(part.index[pos[0]])):
            return None
        cuts = (drawn + (target - drawn) * np.arange(count + 1) // count).tolist()
        return [({"counters": st["counters"] + np.uint64(a - drawn), "drawn": np.array([a], dtype=np.int64),
                  "reached": st["reached"].copy()}, b) for a, b in zip(cuts[:-1], cuts[1:])]

    def join(self, st, outs: list) -> dict:
        """The round's outputs: the last piece's counters and draws, the exceedances of all (each piece
        started from the round's ``reached``), the observed values of the first (every piece computes
        them alike)."""
        if any(o["stopped"].any() for o in outs):
            raise RuntimeError("a piece of a crossed perturbation's round stopped early: it must not be cut")
        out = dict(outs[0])
        out["counters"], out["drawn"] = outs[-1]["counters"], outs[-1]["drawn"]
        out["reached"] = st["reached"] + sum(o["reached"] - st["reached"] for o in outs)
        return out
