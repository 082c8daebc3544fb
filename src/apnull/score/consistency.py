"""``score_consistency``: do perturbations that share an annotation (a target, a mechanism) look alike?"""

from __future__ import annotations

from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass, field

import numpy as np
import pandas as pd

from ..law import count_reached, permutation_pvalue
from ..limits import as_probability, check_permutations, check_seed, check_threads, check_workers
from . import _consistency_auto, _consistency_kernels as K
from ._consistency_prepare import AGGREGATES, MAX_PROFILES, Profiles, prepare_profiles
from ._engine import default_threads, stream_key
from .fdr import benjamini_hochberg
from .nulls import LawCache
from .profiles import open_client

__all__ = ["score_consistency", "ConsistencyResult", "AGGREGATES", "MAX_PROFILES"]

#: Labels per dask task (progress granularity; results do not depend on it).
LABEL_BATCH = _consistency_auto.LABEL_BATCH


@dataclass
class ConsistencyResult:
    """What :func:`score_consistency` returns (see there for the columns)."""

    labels: pd.DataFrame
    queries: pd.DataFrame
    skipped: pd.DataFrame
    warnings: list
    settings: dict
    _profiles: object = field(default=None, repr=False)
    _rows: object = field(default=None, repr=False)

    def null_maps(self, label) -> np.ndarray:
        """The null mAP values of ``label``, recomputed from the run's stream key: the B draws of a fixed
        run, or the first ``permutations`` draws (the label's column) of an adaptive one; exactly the
        draws its p-value counted (NaN where no query had a negative). ValueError if it was not scored."""
        prof = self._profiles
        label = str(label)
        if label not in set(self.labels[self.settings["annotation"]].astype(str)):
            raise ValueError(f"{label!r} is not a scored label of this result")
        t = prof.labels.index(label)
        B = self.settings["permutations"]
        if B == "auto":
            acol = self.settings["annotation"]
            B = int(self.labels.loc[self.labels[acol].astype(str) == label, "permutations"].iloc[0])
        return _null(prof, self._rows, t, B, self.settings["seed"])


def _null(prof: Profiles, rows, t, B, seed) -> np.ndarray:
    """Null mAP values of label t: its own stream, keyed by (seed, "consistency", label)."""
    key = np.uint64(stream_key(seed, "consistency", prof.labels[t]))
    return K.label_null(t, key, int(B), rows, prof.lists)


def _null_batch(prof, rows, ts, B, seed):
    """{t: p-value inputs} for a batch of labels (one dask task): the null values of each."""
    return {t: _null(prof, rows, t, B, seed) for t in ts}


def score_consistency(table, perturbation, annotation, label_sep=None, aggregate="median", control=None,
                      only=None, features=None, similarity="cosine", permutations="auto", seed=0, alpha=0.05,
                      scheduler=None, workers=None, progress=None, threads=None,
                      query_pvalues=True) -> ConsistencyResult:
    """Phenotypic consistency: label mAP of profiles that share an annotation, with a permutation p-value.

    Definition (copairs's multilabel convention, ``pos_sameby = neg_diffby = [annotation]``): rows whose
    perturbation is a ``control`` value are dropped; each perturbation's replicates are aggregated per
    feature (``aggregate``); a profile carrying the labels L (its annotation cell split on
    ``label_sep``) is a query once per label l in L: positives are the other profiles carrying l,
    negatives the profiles sharing no label with it; profiles sharing another label are left out. AP
    is tie-aware (as in ``score_profiles``). A label's mAP is the mean AP of its queries.

    Null: when the annotation says nothing about the profiles, label sets are exchangeable among the
    perturbations. Label l's null draws B random permutations of the label sets among the
    perturbations (with aggregate "none", a perturbation's replicates move together) and recomputes
    l's mAP (Fisher-Yates shuffles driven by SplitMix64); p = (1 + #{null >= mAP - tol}) / (1 + B)
    (:func:`apnull.law.permutation_pvalue`); q-values are Benjamini-Hochberg across labels. With
    ``permutations="auto"`` each label's stream runs in rounds as in ``score_profiles`` (Besag-Clifford
    stop at the 20th null mAP reaching the observed one, p = 20 / L; otherwise p = (1 + g) / (1 + L);
    MMCTest refines only labels whose BH decision at 0.05 is still open, up to 1,000,000). Label l's
    permutations come from the stream key (seed, "consistency", l) over the perturbations in canonical
    order (sorted by name), so results do not depend on row order or on the other labels. Labels on
    fewer than two perturbations are skipped with a reason.

    Parameters
    ----------
    table : DataFrame
        One row per profile: metadata columns and numeric features.
    perturbation, annotation : str
        Columns naming each row's perturbation and its annotation (e.g. a target, "EGFR|HER2").
    label_sep : str, optional
        Separator of several labels in one cell; None: each cell is one label. Pieces are stripped;
        empty pieces and repeats are dropped. A separator that splits no cell is an error.
    aggregate : {"median", "mean", "none"}
        Per feature over a perturbation's replicates; "none" keeps replicates as separate profiles
        (a replicate is then a positive of its siblings, and the null keeps them together). A
        perturbation's rows must carry one annotation.
    control : str or list of str, optional
        Values of the perturbation column to drop (controls carry no annotation to test).
    only : DataFrame or list, optional
        Keep only these perturbations: a groups table of ``score_profiles`` (its ``significant``
        column, else q_value <= alpha) or names. Activity first, consistency on the active.
    features : None, list of str or str
        As in ``score_profiles``.
    similarity : {"cosine", "correlation", "euclidean"}
        Of the aggregated profiles.
    permutations : "auto" or int
        "auto" (default): adaptive, as many draws per label as its BH decision needs (few for most
        labels); or a fixed B per label, 1 to 1,000,000.
    seed : int
    alpha : float
        ``significant`` is q_value <= alpha.
    scheduler, workers, progress, threads
        As in ``score_profiles``: labels run on threads in process, or in batches as dask tasks;
        results are identical bit for bit.
    query_pvalues : bool
        Compute each query's AP p-value under the exact law of its (m, n) (default). The laws of
        large rankings take a while (about 0.15 s a distinct (m, n) of a few hundred items); False
        leaves the column NaN.

    Returns
    -------
    ConsistencyResult
        ``labels``: [<annotation>, n_perturbations, (n_profiles with aggregate "none"), mAP, p_value,
        q_value, significant, permutations, p_value_bound], one label a row (``permutations``: null
        draws its p-value used; ``p_value_bound``: none reached the observed mAP, so p is an upper bound), sorted by p_value then label; ``queries``: [(row),
        <perturbation>, <annotation> (the label), m, n, ap, p_value] with ``p_value`` of AP under the
        exact law of (m, n) (NaN, and ap NaN, for a query without negatives, which its label's mAP
        leaves out); ``skipped``: [<annotation>, reason]; ``warnings``; ``settings``; and
        ``null_maps(label)``.

    Raises
    ------
    ValueError
        Missing columns (close names suggested), a separator splitting nothing, different annotations
        within an aggregated perturbation, bad features, bad settings, nothing left to score (every
        label on fewer than two profiles, or no query with a negative).
    """
    B = check_permutations(permutations, null="independent")
    seed = check_seed(seed, allow_none=False)
    alpha = as_probability(alpha, "alpha", open_low=True)
    threads = check_threads(threads)
    if scheduler is not None and workers is not None:
        raise ValueError("give scheduler= or workers=, not both")
    check_workers(workers)
    if progress is not None and not callable(progress):
        raise ValueError("progress must be a function progress(done, total)")
    prof = prepare_profiles(table, perturbation, annotation, label_sep, aggregate, control, only, features,
                            similarity, alpha)
    rows = K.similarity_rows(prof.X, prof.kind)
    observed, skipped = _observed(prof, rows)
    if not observed:
        reasons = "; ".join(sorted({r for _, r in skipped}))
        raise ValueError(f"nothing to score: no label has two profiles and a query with negatives ({reasons})")
    pvals = _run(prof, rows, observed, B, seed, scheduler, workers, progress, threads)
    settings = dict(perturbation=perturbation, annotation=annotation, label_sep=label_sep, aggregate=aggregate,
                    control=None if control is None else [control] if isinstance(control, str) else list(control),
                    only=None if only is None else len({str(n) for n in prof.names}), similarity=similarity,
                    permutations=B, seed=seed, alpha=alpha, profiles=int(prof.X.shape[0]),
                    features=len(prof.features))
    return ConsistencyResult(labels=_label_table(prof, observed, pvals, settings),
                             queries=_query_table(prof, observed, settings, bool(query_pvalues)),
                             skipped=pd.DataFrame(skipped, columns=[annotation, "reason"]),
                             warnings=list(prof.warnings), settings=settings, _profiles=prof, _rows=rows)


def _observed(prof: Profiles, rows) -> tuple:
    """({t: (mAP, ap, n, q)} for the scorable labels, [(label, reason)] for the others)."""
    P = prof.X.shape[0]
    L = prof.lists
    G = L.gm_ptr.size - 1
    work = np.empty((2, P), np.int64)
    ident = np.arange(G, dtype=np.int64)
    carrier, share, counter = np.zeros(P, np.int64), np.zeros(P, np.int64), np.zeros(1, np.int64)
    observed, skipped = {}, []
    for t, label in enumerate(prof.labels):
        if L.lab_ptr[t + 1] - L.lab_ptr[t] < 2:
            skipped.append((label, "carried by one perturbation: nothing to compare it with"))
            continue
        ap, n, q = np.empty(P), np.empty(P, np.int64), np.empty(P, np.int64)
        mAP, k = K.label_queries(t, ident, ident, rows, L, carrier, share, counter, work, ap, n, q)
        if np.isnan(mAP):
            skipped.append((label, "every profile carrying it shares a label with all the others: no negatives"))
            continue
        observed[t] = (float(mAP), ap[:k].copy(), n[:k].copy(), q[:k].copy())
    return observed, skipped


def _run(prof, rows, observed, B, seed, scheduler, workers, progress, threads) -> dict:
    """{t: (p-value, permutations, bound)} of the ``observed`` labels, on threads or as dask tasks."""
    client, close = open_client(scheduler, workers)
    try:
        if B == "auto":
            return _consistency_auto.run_labels_auto(prof, rows, {t: o[0] for t, o in observed.items()}, seed,
                                                     client, progress, threads)
        nulls = _fixed(prof, rows, sorted(observed), B, seed, client, progress, threads)
        out = {}
        for t, null in nulls.items():
            obs = observed[t][0]
            out[t] = (permutation_pvalue(null, obs), B, count_reached(null, obs) == 0)
        return out
    finally:
        close()


def _fixed(prof, rows, ts, B, seed, client, progress, threads) -> dict:
    """{t: the B null mAP values} of the labels ``ts``."""
    total, done, out = len(ts), 0, {}
    if client is not None:
        import dask.distributed as dd
        pf, rw = client.scatter(prof, broadcast=True), client.scatter(rows, broadcast=True)
        futures = [client.submit(_null_batch, pf, rw, ts[i:i + LABEL_BATCH], B, seed, pure=False)
                   for i in range(0, total, LABEL_BATCH)]
        for fut in dd.as_completed(futures):
            part = fut.result()
            out.update(part)
            done += len(part)
            if progress:
                progress(done, total)
        return out
    with ThreadPoolExecutor(max_workers=threads or default_threads()) as pool:
        for t, null in zip(ts, pool.map(lambda t: _null(prof, rows, t, B, seed), ts)):
            out[t] = null
            done += 1
            if progress:
                progress(done, total)
    return out


def _counts(prof, t) -> tuple:
    """(perturbations, profiles) carrying label t."""
    L = prof.lists
    groups = L.lab_mem[L.lab_ptr[t]:L.lab_ptr[t + 1]]
    return len(groups), int(sum(L.gm_ptr[g + 1] - L.gm_ptr[g] for g in groups))


def _label_table(prof, observed, pvals, st) -> pd.DataFrame:
    """[<annotation>, n_perturbations, (n_profiles), mAP, p_value, q_value, significant, permutations,
    p_value_bound], by p then label."""
    acol = st["annotation"]
    recs = [(prof.labels[t], *_counts(prof, t), observed[t][0], *pvals[t]) for t in sorted(observed)]
    out = pd.DataFrame(recs, columns=[acol, "n_perturbations", "n_profiles", "mAP", "p_value", "permutations",
                                      "p_value_bound"])
    out["q_value"] = benjamini_hochberg(out["p_value"].to_numpy())
    out["significant"] = out["q_value"] <= st["alpha"]
    if st["aggregate"] != "none":
        out = out.drop(columns="n_profiles")
    out = out.sort_values(["p_value", acol], kind="mergesort").reset_index(drop=True)
    out = out[[c for c in out.columns if c not in ("permutations", "p_value_bound")] + ["permutations", "p_value_bound"]]
    return out.astype({"n_perturbations": "int64", "permutations": "int64", "p_value_bound": bool})


def _query_table(prof, observed, st, pvalues) -> pd.DataFrame:
    """[(row), <perturbation>, <annotation>, m, n, ap, p_value], by profile then label."""
    laws = LawCache(st["seed"])
    recs = []
    for t in sorted(observed):
        _, ap, n, q = observed[t]
        for a, nn, qq in zip(ap, n, q):
            p = float(laws.law(len(ap) - 1, nn).pvalue(a)) if nn > 0 and pvalues else np.nan
            recs.append((int(qq), int(prof.rows[qq]), prof.names[qq], prof.labels[t], len(ap) - 1, int(nn), float(a), p))
    out = pd.DataFrame(recs, columns=["_profile", "row", st["perturbation"], st["annotation"], "m", "n", "ap", "p_value"])
    out = out.sort_values(["_profile", st["annotation"]], kind="mergesort").drop(columns="_profile")
    if st["aggregate"] != "none":
        out = out.drop(columns="row")
    return out.reset_index(drop=True)
