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
from . import _adaptive, _cond_kernels
from ._engine import stream_key

__all__ = ["QUERY_NULLS", "needs_conditional", "conditional_pvalues", "QueryDraws"]

#: The label of each per-query null, as the ``null`` column of the query table says.
QUERY_NULLS = {"exact": "exact law", "conditional": "conditional permutation"}


def needs_conditional(pert) -> bool:
    """True when t's replicates span several strata (then every query has a positive elsewhere)."""
    return len(pert.strata) > 1


class QueryDraws(NamedTuple):
    """The conditional draws of a perturbation's k queries so far (one array entry per query)."""

    keys: np.ndarray          #: uint64 stream key of each query
    counters: np.ndarray      #: uint64 next uniform index of each stream
    drawn: np.ndarray         #: int64 null draws so far
    reached: np.ndarray       #: int64 of which reached the observed AP
    stopped: np.ndarray       #: bool stopped at the H-th exceedance
    active: np.ndarray        #: bool refined in the next round


def _query_round(comp, specs, states, kind, target, h):
    """One round of the conditional null for the active queries of each spec: [(index, QueryDraws)]."""
    out = []
    for sp, st in zip(specs, states):
        c, d, g = st.counters.copy(), st.drawn.copy(), st.reached.copy()
        _, _, stop = _cond_kernels.conditional_scores(sp.replicates, comp.controls, kind, st.keys, c, d, g,
                                                      st.active, target, h, VALUE_TOL)
        out.append((sp.index, QueryDraws(st.keys, c, d, g, np.where(st.active, stop, st.stopped), st.active)))
    return out


def conditional_pvalues(screen, seed, B, fixed, client=None, threads=None):
    """Conditional-null p-values of the queries of every perturbation that spans several strata.

    Parameters
    ----------
    screen : Screen
    seed : int
    B : int or "auto"
        Draws per query, or adaptive (rounds, Besag-Clifford stop, MMCTest refinement of the BH
        decisions across all queries of the screen, with the exact-law queries as known p-values).
    fixed : dict
        {perturbation index: (k,) exact-law p-values} of the other perturbations.

    Returns
    -------
    dict
        {perturbation index: (p (k,), permutations (k,), bound (k,))} for the conditional ones.
    """
    idx = [i for i, p in enumerate(screen.perts) if needs_conditional(p)]
    if not idx:
        return {}
    states = {}
    for i in idx:
        p = screen.perts[i]
        keys = np.array([stream_key(seed, "query", p.key, j) for j in range(p.k)], dtype=np.uint64)
        z = np.zeros(p.k, dtype=np.int64)
        states[i] = QueryDraws(keys, np.zeros(p.k, dtype=np.uint64), z, z.copy(), np.zeros(p.k, bool),
                               np.ones(p.k, bool))
    auto = B == "auto"
    targets = _adaptive.schedule() if auto else [int(B)]
    h = _adaptive.H if auto else int(B) + 1
    known = np.concatenate([fixed[i] for i in sorted(fixed)]) if fixed else np.empty(0)
    units = sum(screen.perts[i].k for i in idx) + known.size
    err = _adaptive.DELTA / (max(units, 1) * len(targets))
    active = idx
    client = _adaptive.shared(client, screen, seed)  # components sent to dask workers once
    with _adaptive.executor(threads) as pool:
        for target in targets:
            for i, st in _adaptive.run_rounds(screen, seed, active, states, target, h, _query_round, client, pool):
                states[i] = st
            if not auto:
                break
            g = np.concatenate([states[i].reached for i in idx])
            L = np.concatenate([states[i].drawn for i in idx])
            lo, hi = _adaptive.clopper_pearson(g, L, err)
            und = _adaptive.undecided(np.concatenate([lo, known]), np.concatenate([hi, known]))[:g.size]
            und &= L < targets[-1]
            active, pos = [], 0
            for i in idx:
                k = screen.perts[i].k
                a = und[pos:pos + k]
                pos += k
                states[i] = states[i]._replace(active=a)
                if a.any():
                    active.append(i)
            if not active:
                break
    out = {}
    for i in idx:
        st = states[i]
        p, bound = _adaptive.sequential_pvalue(st.reached, st.drawn, st.stopped)
        out[i] = (p, st.drawn.copy(), bound)
    return out


def query_pvalues(screen, results, laws, seed, B, client=None, threads=None) -> dict:
    """Every query's p-value and the null it used, perturbation by perturbation.

    Parameters
    ----------
    results : dict
        {index: PerturbationResult} with each query's observed ``ap``.
    laws : LawCache
        The exact laws of the run.
    B : int or "auto"
        Draws per conditional query (``"auto"``: adaptive).

    Returns
    -------
    dict
        {index: (p (k,), null labels (k,), permutations (k,), bound (k,))}; exact-law queries have
        0 permutations and bound False.
    """
    fixed, out = {}, {}
    exact = [i for i, p in enumerate(screen.perts) if not needs_conditional(p)]
    if exact:  # one call for all of them: the laws' work is per (m, n), not per perturbation
        ks = [screen.perts[i].k for i in exact]
        ms = np.repeat(np.array(ks) - 1, ks)
        ns = np.repeat([len(screen.controls[screen.perts[i].strata[0]]) for i in exact], ks)
        allp = laws.query_pvalues(ms, ns, np.concatenate([results[i].ap for i in exact]))
        for i, part in zip(exact, np.split(allp, np.cumsum(ks)[:-1])):
            k = part.size
            fixed[i] = part
            out[i] = (part, np.full(k, QUERY_NULLS["exact"], dtype=object), np.zeros(k, dtype=np.int64),
                      np.zeros(k, dtype=bool))
    for i, (pv, used, bound) in conditional_pvalues(screen, seed, B, fixed, client, threads).items():
        out[i] = (pv, np.full(pv.size, QUERY_NULLS["conditional"], dtype=object), used, bound)
    return out
