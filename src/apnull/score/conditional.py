"""Per-query p-values that stay calibrated under plate effects: the exact law or a conditional null.

A query q of perturbation t ranks t's other replicates (positives) and the controls of its own
stratum (negatives). Which null each query gets:

- "exact law": every positive shares q's stratum (t has replicates in one stratum). Positives and
  negatives are then exchangeable, and the AP law of (m, n) is exact (:meth:`.nulls.LawCache.query_pvalues`).
- "conditional permutation": some positive lies in another stratum. With a plate effect, a
  positive from another plate is less similar to q than q's own controls whatever t does, so the
  exact law is valid but far too conservative. The conditional null keeps q and gives each positive's
  label to a random member of its own stratum's pool (t's replicates and the controls there, q
  excluded), then recomputes q's AP (kernel: :mod:`._cond_kernels`). Exact under exchangeability
  of t's replicates and the controls within each stratum, given q:
  p = (1 + #{null AP >= AP - tol}) / (1 + L), or adaptive (:mod:`._adaptive`) for ``"auto"``.

Query i of t (position in t's replicate order: strata sorted, canonical rows within) draws from the
stream keyed by (seed, "query", t, i) only.
"""

from __future__ import annotations

from typing import NamedTuple

import numpy as np

from ..law import VALUE_TOL
from . import _adaptive, _cond_kernels, _rounds
from ._engine import stream_key
from ._perts import ranges

__all__ = ["QUERY_NULLS", "needs_conditional", "conditional_pvalues", "query_pvalues", "QueryP"]

#: The label of each per-query null, as the ``null`` column of the query table says.
QUERY_NULLS = {"exact": "exact law", "conditional": "conditional permutation"}


def needs_conditional(pert) -> bool:
    """True when t's replicates span several strata (then every query has a positive elsewhere)."""
    return len(pert.strata) > 1


class QueryP(NamedTuple):
    """Every query's p-value, as arrays over the queries of ``screen.perts`` (replicate order)."""

    p: np.ndarray             #: (Q,) p-value
    conditional: np.ndarray   #: (Q,) bool: the conditional permutation null (else the exact law)
    permutations: np.ndarray  #: (Q,) int64 null draws (0 for the exact law)
    bound: np.ndarray         #: (Q,) bool: no draw reached the observed AP (p is an upper bound)


#: Queries whose exact-law p-values are computed together (a few MB of temporaries at a time).
QUERY_CHUNK = 65536

#: Levels of the conditional rounds' arrays (see :mod:`._rounds`): one entry per query.
QUERY_LEVELS = dict.fromkeys(("keys", "counters", "drawn", "reached", "stopped", "active"), "query")


def _query_batch(part, pos, st, kind, target, h):
    """One round of the conditional null for the active queries of the perturbations ``pos`` of ``part``."""
    qo = np.concatenate([[0], np.cumsum(part.qoff[pos + 1] - part.qoff[pos])])
    c, d, g, stopped = st["counters"].copy(), st["drawn"].copy(), st["reached"].copy(), st["stopped"].copy()
    for t, j in enumerate(pos.tolist()):
        q = slice(int(qo[t]), int(qo[t + 1]))
        active = st["active"][q]
        _, _, stop = _cond_kernels.conditional_scores(part.replicates(j), part.comps[part.comp_of[j]].controls, kind,
                                                      st["keys"][q], c[q], d[q], g[q], active, target, h, VALUE_TOL)
        stopped[q] = np.where(active, stop, stopped[q])
    return {"counters": c, "drawn": d, "reached": g, "stopped": stopped}


def conditional_pvalues(screen, seed, B, known, client=None, threads=None):
    """Conditional-null p-values of the queries of every perturbation that spans several strata.

    Parameters
    ----------
    screen : Screen
    seed : int
    B : int or "auto"
        Draws per query, or adaptive (rounds, Besag-Clifford stop, MMCTest refinement of the BH
        decisions across all queries of the screen, with the exact-law queries as known p-values).
    known : ndarray
        The exact-law p-values of the other queries.
    client : dask client, :class:`._scattered.Scattered` or None

    Returns
    -------
    queries, p, permutations, bound : ndarray
        The conditional queries (positions among all queries) and their (p, draws, bound); empty
        when no perturbation spans several strata.
    """
    pt = screen.perts
    idx = np.flatnonzero(np.diff(pt.soff) > 1)
    if not idx.size:
        empty = np.empty(0, dtype=np.int64)
        return empty, np.empty(0), empty, np.empty(0, dtype=bool)
    Q = int(pt.qoff[-1])
    qidx = ranges(pt.qoff, idx)
    state = {"keys": np.zeros(Q, dtype=np.uint64), "counters": np.zeros(Q, dtype=np.uint64),
             "drawn": np.zeros(Q, dtype=np.int64), "reached": np.zeros(Q, dtype=np.int64),
             "stopped": np.zeros(Q, dtype=bool), "active": np.zeros(Q, dtype=bool)}
    names = pt.keys.tolist()
    state["keys"][qidx] = [stream_key(seed, "query", names[i], j) for i in idx.tolist()
                           for j in range(int(pt.qoff[i + 1] - pt.qoff[i]))]
    state["active"][qidx] = True
    auto = B == "auto"
    targets = _adaptive.schedule() if auto else [int(B)]
    h = _adaptive.H if auto else int(B) + 1
    err = _adaptive.DELTA / (max(qidx.size + known.size, 1) * len(targets))
    starts = np.concatenate([[0], np.cumsum(pt.qoff[idx + 1] - pt.qoff[idx])[:-1]])
    active = idx
    with _adaptive.executor(threads) as pool:
        run = _adaptive.runner(client, screen, seed, pool)
        for target in targets:
            _rounds.run_rounds(run, active, state, QUERY_LEVELS, tuple(QUERY_LEVELS), target, h, _query_batch)
            if not auto:
                break
            g, L = state["reached"][qidx], state["drawn"][qidx]
            lo, hi = _adaptive.clopper_pearson(g, L, err)
            und = _adaptive.undecided(np.concatenate([lo, known]), np.concatenate([hi, known]))[:g.size]
            und &= L < targets[-1]
            state["active"][qidx] = und
            active = idx[np.logical_or.reduceat(und, starts)]
            if not active.size:
                break
    p, bound = _adaptive.sequential_pvalue(state["reached"][qidx], state["drawn"][qidx], state["stopped"][qidx])
    return qidx, p, state["drawn"][qidx], bound


def query_pvalues(screen, scores, laws, seed, B, client=None, threads=None) -> QueryP:
    """Every query's p-value and the null it used.

    Parameters
    ----------
    scores : Scores
        The observed ``ap`` of every query (:class:`._perts.Scores`).
    laws : LawCache
        The exact laws of the run.
    B : int or "auto"
        Draws per conditional query (``"auto"``: adaptive).

    Returns
    -------
    QueryP
        Exact-law queries have 0 permutations and bound False.
    """
    pt = screen.perts
    Q = int(pt.qoff[-1])
    k = pt.k
    single = np.repeat(np.diff(pt.soff) == 1, k)  # the exact law: every positive shares the query's stratum
    out = QueryP(np.empty(Q), ~single, np.zeros(Q, dtype=np.int64), np.zeros(Q, dtype=bool))
    if single.any():  # the laws' work is per (m, n), not per query; chunks of queries bound the temporaries
        ctl = np.array([len(screen.controls.get(s, ())) for s in pt.strata], dtype=np.int64)
        qpert, seg = pt.query_pert(), pt.query_segment()
        for a in range(0, Q, QUERY_CHUNK):
            pos = a + np.flatnonzero(single[a:a + QUERY_CHUNK])
            if pos.size:
                out.p[pos] = laws.query_pvalues(k[qpert[pos]] - 1, ctl[pt.seg_stratum[seg[pos]]], scores.ap[pos])
        del qpert, seg
    where, p, used, bound = conditional_pvalues(screen, seed, B, out.p[single], client, threads)
    out.p[where], out.permutations[where], out.bound[where] = p, used, bound
    return out
