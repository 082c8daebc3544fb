"""The second half of :func:`apnull.score.score_profiles`: the mAP p-value of each perturbation under
the run's null, every query's p-value, and the two result tables (groups and queries)."""

from __future__ import annotations

from typing import NamedTuple

import numpy as np
import pandas as pd

from . import _engine, conditional
from ._prepare import Pert, Screen
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


class PerturbationScores(NamedTuple):
    """One perturbation's scores and p-values (``pvalues``)."""

    pert: Pert                #: the perturbation (name, strata, replicate rows)
    result: _engine.PerturbationResult  #: per-query AP and Precision@R, mAP, permutation p-value
    m: np.ndarray             #: (k,) positives of each query: k - 1, or those positives_differ_by keeps
    n: np.ndarray             #: (k,) negatives of each query: the controls of its stratum
    rows: np.ndarray          #: (k,) input row of each query
    p_value: float            #: the mAP p-value under the run's null
    query_p: tuple            #: per-query (p, null label, permutations, bound), each (k,) (conditional)
    draws: tuple              #: (permutations, bound) of the mAP p-value


def fixed_draws(pert, res, run: RunSettings) -> tuple:
    """(permutations, bound) of a mAP p-value from a fixed number of draws."""
    if run.null == "independent":
        return 0, False
    if run.exact and run.null == "permutation":
        sizes = [(len(r), len(s)) for r, s in zip(pert.reps, pert.strata)]
        return _engine.assignment_count(sizes), False
    B = run.copairs_B if run.null == "copairs" else run.B
    return B, bool(res.p_value <= 1.0 / (1 + B) * (1 + 1e-9))  # no draw reached the observed mAP


def pvalues(screen: Screen, results: dict, run: RunSettings, draws: dict, query_p: dict) -> list:
    """The mAP p-value of each perturbation under the run's null, and every query's AP p-value.

    Returns
    -------
    list of PerturbationScores
        In ``screen.perts`` order: ``pert``, ``result``, ``m``, ``n``, ``rows``, ``p_value``, ``query_p``.
    """
    laws = LawCache(run.seed)
    out = []
    for i, p in enumerate(screen.perts):
        res = results[i]
        ms = query_positives(screen.codes, p.reps)
        ns = np.concatenate([np.full(len(r), len(screen.controls[s])) for r, s in zip(p.reps, p.strata)])
        rows = screen.rows[np.concatenate(p.reps)]
        if (ms == 0).any():  # positives_differ_by left these queries no positive: no AP
            has = ms > 0
            ms, ns, rows = ms[has], ns[has], rows[has]
            res = res._replace(ap=res.ap[has], precision_at_r=res.precision_at_r[has])
        if run.null == "permutation":
            pval = res.p_value
        elif run.null == "independent":
            pval = laws.independent_pvalue(ms, ns, res.ap)
        else:
            pval = laws.copairs_pvalue(ms, ns, res.map, run.copairs_B)
        used = draws[i] if run.null != "copairs" else (run.copairs_B, pval <= 1.0 / (1 + run.copairs_B) * (1 + 1e-9))
        if not (ms == p.k - 1).all():  # positives_differ_by left positives out: the exact law of the kept m
            k = ms.size
            qp = (laws.query_pvalues(ms, ns, res.ap), np.full(k, conditional.QUERY_NULLS["exact"], dtype=object),
                  np.zeros(k, dtype=np.int64), np.zeros(k, dtype=bool))
        else:
            qp = query_p[i]
        out.append(PerturbationScores(p, res, ms, ns, rows, pval, qp, used))
    return out


def group_table(scored: list, run: RunSettings, pcol: str) -> pd.DataFrame:
    """The perturbation table.

    Returns
    -------
    DataFrame
        [<pcol>, n_replicates, mAP, p_value, q_value (BH across perturbations), null (its label)],
        sorted by p_value then name (as text).
    """
    label = NULL_LABELS["all" if run.exact else run.null]
    groups = pd.DataFrame([(s.pert.name, s.pert.k, s.result.map, s.p_value, label, *s.draws) for s in scored],
                          columns=[pcol, "n_replicates", "mAP", "p_value", "null", "permutations", "p_value_bound"])
    groups.insert(4, "q_value", benjamini_hochberg(groups["p_value"].to_numpy()))
    names = np.array([str(v) for v in groups[pcol].tolist()], dtype=str) if len(groups) else np.empty(0, dtype=str)
    order = np.lexsort((names, groups["p_value"].to_numpy()))  # stable: ties keep the perturbations' order
    return groups.iloc[order].reset_index(drop=True)


def query_table(scored: list, pcol: str) -> pd.DataFrame:
    """The query table.

    Returns
    -------
    DataFrame
        [row (0-based input row), <pcol>, m, n, ap, precision_at_r, p_value, q_value (BH across
        queries), null, permutations, p_value_bound], sorted by row.
    """
    queries = pd.DataFrame({"row": np.concatenate([s.rows for s in scored]),
                            pcol: [s.pert.name for s in scored for _ in range(len(s.m))],
                            "m": np.concatenate([s.m for s in scored]), "n": np.concatenate([s.n for s in scored]),
                            "ap": np.concatenate([s.result.ap for s in scored]),
                            "precision_at_r": np.concatenate([s.result.precision_at_r for s in scored]),
                            "p_value": np.concatenate([s.query_p[0] for s in scored]),
                            "null": np.concatenate([s.query_p[1] for s in scored]),
                            "permutations": np.concatenate([s.query_p[2] for s in scored]),
                            "p_value_bound": np.concatenate([s.query_p[3] for s in scored])})
    queries = queries.sort_values("row", kind="mergesort").reset_index(drop=True)
    queries.insert(7, "q_value", benjamini_hochberg(queries["p_value"].to_numpy()))
    return queries.astype({"row": "int64", "m": "int64", "n": "int64", "permutations": "int64", "p_value_bound": bool})
