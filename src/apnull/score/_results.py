"""The second half of :func:`apnull.score.score_profiles`: the mAP p-value of each perturbation under
the run's null, every query's p-value, and the two result tables (groups and queries)."""

from __future__ import annotations

from typing import NamedTuple

import numpy as np
import pandas as pd

from . import _engine, conditional
from ._perts import Scores
from ._prepare import Screen
from .fdr import benjamini_hochberg
from .nulls import LawCache
from .positives import query_positives

NULL_LABELS = {"permutation": "permutation", "all": "permutation (all assignments, exact)",
               "independent": "independent (approximate)", "copairs": "copairs (approximate)"}


class RunSettings(NamedTuple):
    """The checked settings of a run (``_check_inputs``)."""

    null: str                 #: "permutation", "independent" or "copairs"
    B: object                 #: permutations per perturbation (int), "auto" or "all"
    exact: bool               #: True when every assignment is enumerated (``B == "all"``)
    seed: int                 #: root of every random stream of the run
    threads: int | None       #: in-process threads (None: one per core)

    @property
    def run_B(self) -> int:
        """Random permutations the engine draws: B for the permutation null, else 0 (observed only)."""
        return self.B if self.null == "permutation" and isinstance(self.B, int) else 0

    @property
    def query_B(self):
        """Draws of a conditional per-query null: B, or "auto" for "auto" and "all"."""
        return self.B if isinstance(self.B, int) else "auto"

    @property
    def copairs_B(self) -> int:
        """Rows of the copairs null: B, or 999 for "auto"."""
        return self.B if isinstance(self.B, int) else 999


class Scored(NamedTuple):
    """Every perturbation's and every kept query's scores and p-values, as arrays (``pvalues``)."""

    names: np.ndarray         #: (P,) perturbation names
    k: np.ndarray             #: (P,) replicates
    map: np.ndarray           #: (P,) observed mAP
    p_value: np.ndarray       #: (P,) mAP p-value under the run's null
    permutations: np.ndarray  #: (P,) draws of the mAP p-value
    bound: np.ndarray         #: (P,) the mAP p-value is an upper bound
    pert: np.ndarray          #: (Q,) perturbation of each query (queries in perturbation order)
    rows: np.ndarray          #: (Q,) input row of each query
    m: np.ndarray             #: (Q,) positives: k - 1, or those positives_differ_by keeps
    n: np.ndarray             #: (Q,) negatives: the controls of the query's stratum
    ap: np.ndarray            #: (Q,) tie-aware AP
    precision_at_r: np.ndarray  #: (Q,) tie-aware Precision@R
    query_p: object           #: :class:`.conditional.QueryP` of the kept queries


def fixed_draws(pert, p_value, run: RunSettings) -> tuple:
    """(permutations, bound) of a mAP p-value from a fixed number of draws."""
    if run.null == "independent":
        return 0, False
    if run.exact and run.null == "permutation":
        sizes = [(len(r), len(s)) for r, s in zip(pert.reps, pert.strata)]
        return _engine.assignment_count(sizes), False
    B = run.copairs_B if run.null == "copairs" else run.B
    return B, bool(p_value <= 1.0 / (1 + B) * (1 + 1e-9))  # no draw reached the observed mAP


def pvalues(screen: Screen, scores: Scores, run: RunSettings, query: conditional.QueryP) -> Scored:
    """The mAP p-value of each perturbation under the run's null, and every query's AP p-value.

    ``scores`` and ``query`` hold every query; where ``positives_differ_by`` leaves a query no
    positive it is left out (no AP), and a perturbation with positives left out gets the exact laws
    of the kept m for its queries.
    """
    pt = screen.perts
    k = pt.k
    ctl = np.array([len(screen.controls.get(s, ())) for s in pt.strata], dtype=np.int64)
    ns = ctl[pt.seg_stratum[pt.query_segment()]]
    qpert = pt.query_pert()
    laws = LawCache(run.seed)
    qp = conditional.QueryP(*(a.copy() for a in query))
    if screen.codes is None:
        ms = np.repeat(k - 1, k)
    else:  # positives_differ_by: the kept positives of each query, the exact law where some are left out
        ms = np.concatenate([query_positives(screen.codes, pt[i].reps) for i in range(len(pt))])
        for i in range(len(pt)):
            q = slice(int(pt.qoff[i]), int(pt.qoff[i + 1]))
            has = ms[q] > 0
            if not (ms[q][has] == k[i] - 1).all():
                at = np.arange(q.start, q.stop)[has]
                qp.p[at] = laws.query_pvalues(ms[at], ns[at], scores.ap[at])
                qp.conditional[at], qp.permutations[at], qp.bound[at] = False, 0, False
    kept = ms > 0
    if run.null == "permutation":
        pval = scores.p_value
    else:
        pval = np.empty(len(pt))
        for i in range(len(pt)):
            q = np.arange(pt.qoff[i], pt.qoff[i + 1])[kept[pt.qoff[i]:pt.qoff[i + 1]]]
            pval[i] = (laws.independent_pvalue(ms[q], ns[q], scores.ap[q]) if run.null == "independent" else
                       laws.copairs_pvalue(ms[q], ns[q], scores.map[i], run.copairs_B))
    if run.null == "copairs":
        perms = np.full(len(pt), run.copairs_B, dtype=np.int64)
        bound = pval <= 1.0 / (1 + run.copairs_B) * (1 + 1e-9)
    else:
        perms, bound = scores.permutations, scores.bound
    if not kept.all():
        qp = conditional.QueryP(*(a[kept] for a in qp))
    pick = (lambda a: a) if kept.all() else (lambda a: a[kept])
    return Scored(pt.names, k, scores.map, pval, perms, bound, pick(qpert), pick(screen.rows[pt.rows]), pick(ms),
                  pick(ns), pick(scores.ap), pick(scores.precision_at_r), qp)


def group_table(scored: Scored, run: RunSettings, pcol: str) -> pd.DataFrame:
    """The perturbation table.

    Returns
    -------
    DataFrame
        [<pcol>, n_replicates, mAP, p_value, q_value (BH across perturbations), null (its label),
        permutations, p_value_bound], sorted by p_value then name (as text).
    """
    label = NULL_LABELS["all" if run.exact else run.null]
    P = scored.names.size
    names = pd.Series(list(scored.names)) if P else pd.Series([], dtype=object)
    text = np.array([str(v) for v in names.tolist()], dtype=str) if P else np.empty(0, dtype=str)
    order = np.lexsort((text, scored.p_value))  # stable: ties keep the perturbations' order
    del text
    p = scored.p_value[order]
    groups = pd.DataFrame({pcol: names.array.take(order), "n_replicates": scored.k[order].astype(np.int64),
                           "mAP": scored.map[order].astype(float), "p_value": p,
                           "q_value": benjamini_hochberg(scored.p_value)[order], "null": np.full(P, label, dtype=object),
                           "permutations": scored.permutations[order].astype(np.int64),
                           "p_value_bound": scored.bound[order].astype(bool)}, copy=False)
    return groups


def query_table(scored: Scored, pcol: str) -> pd.DataFrame:
    """The query table.

    Returns
    -------
    DataFrame
        [row (0-based input row), <pcol>, m, n, ap, precision_at_r, p_value, q_value (BH across
        queries), null, permutations, p_value_bound], sorted by row. Built column by column from
        the arrays (each in row order, then the next), without a copy of the whole table.
    """
    order = np.argsort(scored.rows, kind="stable")
    names = pd.Series(list(scored.names)) if scored.names.size else pd.Series([], dtype=object)
    qp = scored.query_p
    p = qp.p[order]
    cols = {"row": scored.rows[order].astype(np.int64), pcol: names.array.take(scored.pert[order]),
            "m": scored.m[order].astype(np.int64), "n": scored.n[order].astype(np.int64),
            "ap": scored.ap[order], "precision_at_r": scored.precision_at_r[order], "p_value": p,
            "q_value": benjamini_hochberg(p), "null": qp.labels()[order],
            "permutations": qp.permutations[order].astype(np.int64), "p_value_bound": qp.bound[order].astype(bool)}
    return pd.DataFrame(cols, copy=False)
