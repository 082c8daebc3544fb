"""The second half of :func:`apnull.score.score_profiles`: the mAP p-value of each perturbation under
the run's null, every query's p-value, and the two result tables (groups and queries)."""

from __future__ import annotations

from typing import NamedTuple

import numpy as np
import pandas as pd

from ...fdr import benjamini_hochberg
from ..nulls.conditional import QUERY_NULLS, QueryP, bounds_undecided
from ..nulls.laws import LawCache
from ..nulls.registry import MAP_NULLS
from ..table.perts import Scores
from ..table.positives import query_positives
from ..table.screen import Screen
from .summary import add_activity_columns, normalized_ap


class Scored(NamedTuple):
    """Every perturbation's and every kept query's scores and p-values, as arrays (``pvalues``)."""

    names: np.ndarray         #: (P,) perturbation names
    shown: object             #: (P,) the names as the tables' column holds them (a pandas array)
    k: np.ndarray             #: (P,) replicates
    map: np.ndarray           #: (P,) observed mAP
    p_value: np.ndarray       #: (P,) mAP p-value under the run's null
    permutations: np.ndarray  #: (P,) draws of the mAP p-value
    bound: np.ndarray         #: (P,) the mAP p-value is an upper bound
    open: np.ndarray          #: (P,) a time budget left its BH decision open (adaptive runs)
    queries: dict             #: (Q,) arrays of the kept queries, in input row order (the query
    # table's): "pert" (its perturbation), "rows" (input row), "m" (positives kept), "n" (negatives:
    # controls of its stratum), "ap", "precision_at_r", "p_value", "q_value", "conditional" (its
    # null), "counted" (its conditional law counted), "permutations", "bound" (:class:`.conditional.QueryP`);
    # :func:`query_table` empties it as its columns take the arrays over; :func:`group_table` leaves "group_pert" (the
    # perturbation of each row of the groups table) for :func:`add_activity`


def pvalues(screen: Screen, scores: Scores, null: str, permutations, query: QueryP, laws: LawCache) -> Scored:
    """The mAP p-value of each perturbation under the run's ``null`` (the engine's, ``scores``'s own, for
    "permutation"; else the registered null's calculator over each perturbation's kept queries,
    :data:`..nulls.registry.MAP_NULLS`), and every query's AP p-value.

    ``scores`` and ``query`` hold every query; where ``positives_differ_by`` leaves a query no
    positive it is left out (no AP), and a perturbation with positives left out gets the exact laws
    of the kept m for its queries from the run's ``laws`` (one :class:`LawCache` a run, its clock
    included: past its deadline, bounds flagged as :func:`.conditional.query_pvalues` flags them).
    """
    pt = screen.perts
    k = pt.k
    ns = screen.query_negatives()
    qpert = pt.query_pert()
    qp = query
    if screen.codes is None:
        ms = np.repeat(k - 1, k)
    else:  # positives_differ_by: the kept positives of each query, the exact law where some are left out
        qp = QueryP(*(a.copy() for a in query))
        ms = np.concatenate([query_positives(screen.codes, pt[i].reps) for i in range(len(pt))])
        uncounted = np.zeros(ms.size, dtype=bool)
        for i in range(len(pt)):
            q = slice(int(pt.qoff[i]), int(pt.qoff[i + 1]))
            has = ms[q] > 0
            if not (ms[q][has] == k[i] - 1).all():
                at = np.arange(q.start, q.stop)[has]
                qp.p[at], uncounted[at] = laws.counted_pvalues(ms[at], ns[at], scores.ap[at])
                qp.conditional[at], qp.permutations[at], qp.bound[at], qp.open[at] = False, 0, uncounted[at], False
                qp.counted[at] = False
        if uncounted.any():
            qp.open[uncounted] = bounds_undecided(qp.p, qp.bound)[uncounted]
    kept = ms > 0
    calculate = MAP_NULLS[null].pvalues
    if calculate is None:  # the engine's draws
        pval, perms, bound = scores.p_value, scores.permutations, scores.bound
    else:
        own = [np.arange(pt.qoff[i], pt.qoff[i + 1])[kept[pt.qoff[i]:pt.qoff[i + 1]]] for i in range(len(pt))]
        pval, perms, bound = calculate(laws, [(ms[q], ns[q], scores.ap[q]) for q in own], scores.map, permutations)
        del own
    queries = {"pert": qpert, "rows": screen.rows[pt.rows], "m": ms, "n": ns, "ap": scores.ap,
               "precision_at_r": scores.precision_at_r, "p_value": qp.p, "conditional": qp.conditional,
               "counted": qp.counted,
               "permutations": qp.permutations, "bound": qp.bound, "open": qp.open}
    if not kept.all():
        queries = {name: a[kept] for name, a in queries.items()}
    # BH q-values do not depend on the order of the p-values (tied p-values get the same q): taken
    # here, before the table's sorted copies exist
    queries["q_value"] = benjamini_hochberg(queries["p_value"])
    order = np.argsort(queries["rows"], kind="stable")
    for name in queries:  # into row order, one array at a time
        queries[name] = queries[name][order]
    del order
    shown = pt.shown if pt.shown is not None else (pd.Series(list(pt.names)) if len(pt) else
                                                    pd.Series([], dtype=object)).array
    return Scored(pt.names, shown, k, scores.map, pval, perms, bound, scores.open, queries)


def group_table(scored: Scored, label: str, pcol: str, budget: bool = False) -> pd.DataFrame:
    """The perturbation table; ``label`` the null's (:func:`..nulls.registry.null_label`).

    Returns
    -------
    DataFrame
        [<pcol>, n_replicates, mAP, p_value, q_value (BH across perturbations), null (its label),
        permutations, p_value_bound, and with ``budget`` decision_open], sorted by p_value then name
        (as text).
    """
    P = scored.names.size
    text = scored.names.tolist()
    if not all(type(v) is str for v in text):  # as the table shows them (e.g. numbers)
        text = scored.shown.tolist()
    text = np.array([str(v) for v in text], dtype=str) if P else np.empty(0, dtype=str)
    order = np.lexsort((text, scored.p_value))  # stable: ties keep the perturbations' order
    del text
    p = scored.p_value[order]
    scored.queries["group_pert"] = order
    groups = pd.DataFrame({pcol: scored.shown.take(order), "n_replicates": scored.k[order].astype(np.int64),
                           "mAP": scored.map[order].astype(float), "p_value": p,
                           "q_value": benjamini_hochberg(scored.p_value)[order],
                           "null": _text([label]).take(np.zeros(P, dtype=np.int64)),
                           "permutations": scored.permutations[order].astype(np.int64),
                           "p_value_bound": scored.bound[order].astype(bool)}, copy=False)
    if budget:
        groups["decision_open"] = scored.open[order].astype(bool)
    return groups


def query_table(scored: Scored, pcol: str, budget: bool = False) -> pd.DataFrame:
    """The query table.

    Returns
    -------
    DataFrame
        [row (0-based input row), <pcol>, m, n, ap, ap_normalized ((AP - E) / (1 - E), E = E[AP](m, n):
        :func:`.summary.normalized_ap`), precision_at_r, p_value, q_value (BH across queries), null,
        permutations, p_value_bound], sorted by row: the arrays of ``scored.queries`` themselves,
        without a copy (with ``budget``, decision_open too).
    """
    q = scored.queries
    conditional_ = q.pop("conditional").astype(np.int64) + q.pop("counted")  # 0 exact law, 1 drawn, 2 counted
    labels = _text([QUERY_NULLS["exact"], QUERY_NULLS["conditional"], QUERY_NULLS["counted"]]).take(conditional_)
    del conditional_
    cols = {"row": q.pop("rows").astype(np.int64, copy=False), pcol: scored.shown.take(q.pop("pert")),
            "m": q.pop("m").astype(np.int64, copy=False), "n": q.pop("n").astype(np.int64, copy=False),
            "ap": q.pop("ap")}
    cols["ap_normalized"] = normalized_ap(cols["ap"], cols["m"], cols["n"])
    cols |= {"precision_at_r": q.pop("precision_at_r"), "p_value": q.pop("p_value"),
            "q_value": q.pop("q_value"), "null": labels,
            "permutations": q.pop("permutations").astype(np.int64, copy=False),
            "p_value_bound": q.pop("bound").astype(bool, copy=False)}
    is_open = q.pop("open")
    if budget:
        cols["decision_open"] = is_open.astype(bool, copy=False)
    return pd.DataFrame(cols, copy=False)


def _text(values: list):
    """``values`` as the column pandas makes of them (e.g. its ``str`` dtype), to ``take`` rows from
    without a text object per row."""
    return pd.Series(values).array


def add_activity(groups: pd.DataFrame, scored: Scored, alpha: float) -> pd.DataFrame:
    """``groups`` with ``mAP_normalized`` and ``significant`` (:func:`.summary.add_activity_columns`).

    That function groups the query table's rows by their perturbation column; here it reads each
    query's perturbation as an integer (``scored.queries``, before :func:`query_table` takes them)
    instead of the names, so no text object is made per query. The groups are the same, each
    perturbation's queries in the same (row) order: the same values bit for bit.
    """
    q = scored.queries
    light_q = pd.DataFrame({"p": q["pert"], "m": q["m"], "n": q["n"]}, copy=False)
    light_g = pd.DataFrame({"p": scored.queries.pop("group_pert"), "mAP": groups["mAP"].to_numpy(),
                            "q_value": groups["q_value"].to_numpy()}, copy=False)
    act = add_activity_columns(light_g, light_q, "p", alpha)
    del light_q, light_g
    for name, after in (("mAP_normalized", "mAP"), ("significant", "q_value")):
        groups.insert(list(groups.columns).index(after) + 1, name, act[name].to_numpy())
    return groups
