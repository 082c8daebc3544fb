"""``score_consistency``: do perturbations that share an annotation (a target, a mechanism) look alike?"""

from __future__ import annotations

from dataclasses import dataclass, field

import numpy as np
import pandas as pd

from ..compiled import safe_interrupts
from .engine.connect import starting
from .engine.sequential import resolve, rounds_of
from ..fdr import benjamini_hochberg
from .kernels import labelsets as K
from .nulls.labelsets import LabelWork, label_null, label_values
from .engine.clock import tell_stage
from .nulls.laws import LawCache
from .options import RunOptions
from .results.display import ShownNull
from .table.names import RESERVED, output_name
from .results.summary import consistency_line
from .table.normalize import raw_warning
from .table.profiles import AGGREGATES, MAX_PROFILES, Profiles, prepare_profiles

__all__ = ["score_consistency", "ConsistencyResult", "AGGREGATES", "MAX_PROFILES"]

#: The result tables' own column names: an input column of one of these names is shown as ``<name>_input``.
TAKEN = RESERVED | {"n_perturbations", "n_profiles", "decision_open"}


@dataclass
class ConsistencyResult(ShownNull):
    """What :func:`score_consistency` returns (see there for the columns). In a notebook it shows itself
    (:mod:`.results.display`); ``plot()`` draws the labels' mAP against p, ``plot_null(label)`` a label's null."""

    _title = "apnull consistency: do perturbations sharing a label look alike"
    _table_name = "labels"
    _settings_shown = ("perturbation", "annotation", "label_sep", "aggregate", "control", "profiles", "features",
                       "similarity", "permutations", "seed", "alpha")

    labels: pd.DataFrame
    queries: pd.DataFrame
    skipped: pd.DataFrame
    warnings: list
    settings: dict
    _profiles: object = field(default=None, repr=False)
    _rows: object = field(default=None, repr=False)

    @property
    def looks_raw(self):
        """Why the features, scored with normalize="none", look un-normalised (a sentence), or None."""
        return getattr(self._profiles, "looks_raw", None)

    def null_maps(self, label) -> np.ndarray:
        """The null mAP values of ``label``, recomputed from the run's stream key: the B draws of a fixed
        run, or the first ``permutations`` draws (the label's column) of an adaptive one; exactly the
        draws its p-value counted (NaN where no query had a negative). ValueError if it was not scored."""
        prof = self._profiles
        label = str(label)
        acol = self.settings["annotation_column"]
        if label not in set(self.labels[acol].astype(str)):
            raise ValueError(f"{label!r} is not a scored label of this result")
        t = prof.labels.index(label)
        B = self.settings["permutations"]
        if B == "auto":
            B = int(self.labels.loc[self.labels[acol].astype(str) == label, "permutations"].iloc[0])
        return label_values(prof, self._rows, t, int(B), self.settings["seed"])

    def summary_lines(self) -> list:
        """The summary ``apnull consistency`` prints (:func:`.results.summary.consistency_line`)."""
        return [consistency_line(self.labels, self.settings)]


@safe_interrupts()  # Ctrl+C raised where it is safe (not inside numba's call back into Python)
def score_consistency(table, perturbation, annotation, label_sep=None, *, aggregate="median", control=None,
                      only=None, features=None, similarity="cosine", nan="error", normalize="none", stratum=None,
                      positives_differ_by=None,
                      permutations="auto", seed=0, alpha=0.05, scheduler=None, workers=None, threads=None,
                      progress=None, budget=None, query_pvalues=True) -> ConsistencyResult:
    """Phenotypic consistency: label mAP of profiles that share an annotation, with a permutation p-value.

    Definition (copairs's multilabel convention, ``pos_sameby = neg_diffby = [annotation]``,
    ``pos_diffby = positives_differ_by``): rows whose perturbation is a ``control`` value are dropped;
    each perturbation's replicates are aggregated per feature (``aggregate``); a profile carrying the
    labels L (its annotation cell split on ``label_sep``) is a query once per label l in L: positives
    are the other profiles carrying l, negatives the profiles sharing no label with it (a profile
    without a label, an empty annotation cell, is a negative of every query and never a query);
    profiles sharing another label are left out, and so are the profiles carrying l that share a
    value with the query in one of the ``positives_differ_by`` columns (the pair rule: its m counts
    only the others). AP is tie-aware (as in ``score_profiles``). A label's mAP is the mean AP of its
    queries that have a positive and a negative.

    Null: when the annotation says nothing about the profiles, label sets are exchangeable among the
    perturbations. Label l's null draws B random permutations of the label sets (the empty ones
    included) among the perturbations (with aggregate "none", a perturbation's replicates move
    together; the pair rule's values stay with the profiles, and each relabelled screen applies the
    same rule) and recomputes l's mAP (Fisher-Yates shuffles driven by SplitMix64); a draw in which no
    query has an AP never reaches the observed mAP; p = (1 + #{null >= mAP - tol}) / (1 + B)
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
        Values of the perturbation column to drop (controls carry no annotation to test), compared
        with the column as text, as in ``score_profiles``: a value that matches no row is an error
        naming the close values (a warning when another value matches).
    only : DataFrame or list, optional
        Keep only these perturbations: a groups table of ``score_profiles`` (its ``significant``
        column, or copairs's ``below_corrected_p``, else q_value (``corrected_p_value``) <= alpha; a
        table with none of these columns is a ValueError naming them) or names, compared as text. Names not in the table are named in a warning (an error when none is).
        Activity first, consistency on the active.
    features : None, list of str or str
        As in ``score_profiles`` (:func:`apnull.score.table.columns.select_features`: a column numeric
        but for a few text cells is an error naming them; every other column left out is in
        ``settings["columns_left_out"]``).
    similarity : {"cosine", "correlation", "euclidean", "abs_cosine", "manhattan", "chebyshev", "jaccard", "hamming"}
        Of the aggregated profiles; rows are scaled by powers of two first, so any magnitude (1e-300
        to 1e300) gives the same ranking.
    nan : {"error", "drop-features", "drop-rows"}
        NaN or infinite feature values in the rows used (before aggregation), as in ``score_profiles``.
    normalize : {"none", "controls", "plate"}
        Per-plate normalisation before aggregation, as in ``score_profiles``: the robust z-score of each
        feature against the ``control`` rows of the row's ``stratum`` ("controls") or against all its
        rows ("plate"); the controls are used for it and then dropped. Without ``stratum`` the whole
        table is one plate.
    stratum : str, optional
        The plate column ``normalize`` works within (used for nothing else).
    positives_differ_by : str or list of str, optional
        Columns (e.g. the plate, or the perturbation column with aggregate "none"): a profile carrying
        the query's label and sharing its value in any of them is left out of its ranking (copairs's
        ``pos_diffby``). With aggregated replicates a perturbation's rows must agree in these columns.
    permutations : "auto" or int
        "auto" (default): adaptive, as many draws per label as its BH decision needs (few for most
        labels); or a fixed B per label, 1 to 1,000,000.
    seed : int
    alpha : float
        ``significant`` is q_value <= alpha.
    scheduler, workers, progress, threads, budget
        As in ``score_profiles``: labels run on threads in process, or in batches as dask tasks;
        results are identical bit for bit (unless the time ``budget`` stops the refinement: labels
        whose decision it left open are named in ``warnings`` and flagged ``decision_open``).
    query_pvalues : bool
        Compute each query's AP p-value under the exact law of its (m, n) (default; the far tail
        counted, :meth:`apnull.score.nulls.laws.LawCache.query_pvalues`). The laws of
        large rankings take a while (about 0.15 s a distinct (m, n) of a few hundred items); False
        leaves the column NaN.

    Returns
    -------
    ConsistencyResult
        ``labels``: [<annotation>, n_perturbations, (n_profiles with aggregate "none"), mAP, p_value,
        q_value, significant, permutations, p_value_bound], one label a row (``permutations``: null
        draws its p-value used; ``p_value_bound``: none reached the observed mAP, so p is an upper
        bound), sorted by p_value then label; ``queries``: [(row), <perturbation>, <annotation> (the
        label), m, n, ap, p_value] with m the positives kept, ``p_value`` of AP under the exact law of
        (m, n), its far tail counted where the law's grid trims it, exactly as ``score_profiles``'s
        per-query p-values (never 0 for an AP that occurred) (NaN, and ap NaN, for a query without a negative or a positive, which its label's mAP
        leaves out); ``skipped``: [<annotation>, reason]; ``warnings`` (including the perturbations
        without a label, ranked as negatives); ``settings`` (``unlabelled``: how many;
        ``columns_left_out``, ``dropped_features``, ``dropped_rows`` as in ``score_profiles``); and
        ``null_maps(label)``. An input column named like one of the tables' own columns (``m``,
        ``mAP``, ``p_value``, ...) is shown as ``<name>_input`` (``settings["perturbation_column"]``,
        ``settings["annotation_column"]``).

    Raises
    ------
    TypeError
        ``table`` not a DataFrame; ``control``, ``features`` or ``only`` of another type than described.
    ValueError
        Missing columns (close names suggested), no row equal to the control values, a separator
        splitting nothing, different annotations within a perturbation, bad features (text cells,
        missing values, zero or constant profiles), bad settings, nothing left to score (every label
        on fewer than two profiles, or no query with a positive and a negative).
    """
    opts = RunOptions.checked(seed=seed, permutations=permutations, alpha=alpha, threads=threads, workers=workers,
                              scheduler=scheduler, progress=progress, budget=budget, null="independent")
    with starting(opts.scheduler, opts.workers) as client:  # a local cluster starts while the profiles are prepared
        prof = prepare_profiles(table, perturbation, annotation, label_sep, aggregate, control, only, features,
                                similarity, opts.alpha, nan, positives_differ_by, normalize, stratum)
        rows = K.similarity_rows(prof.X, prof.kind)
        observed, skipped = _observed(prof, rows)
        if not observed:
            reasons = "; ".join(sorted({r for _, r in skipped}))
            raise ValueError(f"nothing to score: no label has two profiles and a query with negatives ({reasons})")
        pvals, why = _run(prof, rows, observed, opts, client)
    settings = dict(perturbation=perturbation, annotation=annotation, label_sep=label_sep, aggregate=aggregate,
                    control=None if control is None else [control] if isinstance(control, str) else list(control),
                    only=None if only is None else len({str(n) for n in prof.names}), similarity=similarity,
                    nan=nan, normalize=normalize, stratum=stratum, positives_differ_by=positives_differ_by,
                    permutations=opts.permutations, seed=opts.seed, alpha=opts.alpha, profiles=int(prof.X.shape[0]),
                    unlabelled=len(prof.unlabelled), features=len(prof.features), feature_columns=list(prof.features),
                    dropped_features=list(prof.dropped_features), dropped_rows=list(prof.dropped_rows),
                    columns_left_out=[{"column": c, "reason": r} for c, r in prof.left_out])
    settings["perturbation_column"] = output_name(perturbation, TAKEN)
    settings["annotation_column"] = output_name(annotation, TAKEN | {settings["perturbation_column"]})
    if opts.budget is not None:
        settings["budget"] = opts.budget
    warnings = list(prof.warnings) + raw_warning(prof.looks_raw)
    if why:
        opened = [prof.labels[t] for t in sorted(pvals) if pvals[t][3]]
        warnings.append(f"the time budget stopped the adaptive permutations ({why}) before the BH decision of "
                        f"{len(opened):,} label(s) was settled ({', '.join(opened[:5])}{' ...' if len(opened) > 5 else ''}); "
                        "their p-values are valid but may sit on either side of the FDR line")
    return ConsistencyResult(labels=_label_table(prof, observed, pvals, settings),
                             queries=_query_table(prof, observed, settings, bool(query_pvalues), opts.deadline),
                             skipped=pd.DataFrame(skipped, columns=[settings["annotation_column"], "reason"]),
                             warnings=warnings, settings=settings, _profiles=prof, _rows=rows)


def _observed(prof: Profiles, rows) -> tuple:
    """({t: (mAP, ap, n, q, m)} for the scorable labels, [(label, reason)] for the others)."""
    P = prof.X.shape[0]
    L = prof.lists
    G = L.gm_ptr.size - 1
    work = np.zeros((3, P), np.int64)
    ident = np.arange(G, dtype=np.int64)
    carrier, share, counter = np.zeros(P, np.int64), np.zeros(P, np.int64), np.zeros(1, np.int64)
    observed, skipped = {}, []
    for t, label in enumerate(prof.labels):
        if L.lab_ptr[t + 1] - L.lab_ptr[t] < 2:
            skipped.append((label, "carried by one perturbation: nothing to compare it with"))
            continue
        ap, n, q, m = np.empty(P), np.empty(P, np.int64), np.empty(P, np.int64), np.empty(P, np.int64)
        mAP, k = K.label_queries(t, ident, ident, rows, L, carrier, share, counter, work, ap, n, q, m)
        if np.isnan(mAP):
            skipped.append((label, "every profile carrying it shares a label with all the others: no negatives"
                            if not n[:k].any() else "no query keeps a positive: the other profiles carrying it share "
                            "a positives_differ_by value with it"))
            continue
        observed[t] = (float(mAP), ap[:k].copy(), n[:k].copy(), q[:k].copy(), m[:k].copy())
    return observed, skipped


def _run(prof, rows, observed, opts: RunOptions, client) -> tuple:
    """({t: (p-value, permutations, bound, decision open)} of the ``observed`` labels, on threads or as
    dask tasks (``client()``: :func:`.engine.connect.starting`'s), and why a budget stopped the refinement
    ("" if it did not)."""
    ts = sorted(observed)
    work = LabelWork(prof, rows, ts)
    null = label_null(work, [observed[t][0] for t in ts], opts.seed)
    tell_stage(opts.progress, "labels")
    res = resolve(null, rounds_of(opts.permutations), client=client(), threads=opts.threads,
                  progress=opts.progress, budget=opts.deadline)
    return ({t: (float(res.p_value[i]), int(res.drawn[i]), bool(res.bound[i]), bool(res.open[i]))
             for i, t in enumerate(ts)}, res.stopped_by_budget)


def _counts(prof, t) -> tuple:
    """(perturbations, profiles) carrying label t."""
    L = prof.lists
    groups = L.lab_mem[L.lab_ptr[t]:L.lab_ptr[t + 1]]
    return len(groups), int(sum(L.gm_ptr[g + 1] - L.gm_ptr[g] for g in groups))


def _label_table(prof, observed, pvals, st) -> pd.DataFrame:
    """[<annotation>, n_perturbations, (n_profiles), mAP, p_value, q_value, significant, permutations,
    p_value_bound, (decision_open with a budget)], by p then label."""
    acol = st["annotation_column"]
    recs = [(prof.labels[t], *_counts(prof, t), observed[t][0], *pvals[t][:3]) for t in sorted(observed)]
    out = pd.DataFrame(recs, columns=[acol, "n_perturbations", "n_profiles", "mAP", "p_value", "permutations",
                                      "p_value_bound"])
    out["q_value"] = benjamini_hochberg(out["p_value"].to_numpy())
    out["significant"] = out["q_value"] <= st["alpha"]
    if st["aggregate"] != "none":
        out = out.drop(columns="n_profiles")
    out = out.sort_values(["p_value", acol], kind="mergesort").reset_index(drop=True)
    if st.get("budget") is not None:
        out["decision_open"] = [pvals[t][3] for t in sorted(observed)]
        out = out.sort_values(["p_value", acol], kind="mergesort").reset_index(drop=True)
    tail = [c for c in ("permutations", "p_value_bound", "decision_open") if c in out.columns]
    out = out[[c for c in out.columns if c not in tail] + tail]
    return out.astype({"n_perturbations": "int64", "permutations": "int64", "p_value_bound": bool})


def _query_table(prof, observed, st, pvalues, deadline=None) -> pd.DataFrame:
    """[(row), <perturbation>, <annotation>, m, n, ap, p_value], by profile then label; the per-query
    p-values are score's (the exact law of (m, n), its far tail counted within the run's ``deadline``)."""
    recs = []
    for t in sorted(observed):
        _, ap, n, q, m = observed[t]
        for a, nn, qq, mm in zip(ap, n, q, m):
            recs.append((int(qq), int(prof.rows[qq]), prof.names[qq], prof.labels[t], int(mm), int(nn), float(a)))
    acol = st["annotation_column"]
    out = pd.DataFrame(recs, columns=["_profile", "row", st["perturbation_column"], acol, "m", "n", "ap"])
    out["p_value"] = np.nan
    if pvalues:  # score's per-query p-values: the exact law of (m, n), its far tail counted (never 0)
        ok = ((out["m"] > 0) & (out["n"] > 0)).to_numpy()
        out.loc[ok, "p_value"] = LawCache(st["seed"], deadline).query_pvalues(out["m"].to_numpy()[ok], out["n"].to_numpy()[ok],
                                                                    out["ap"].to_numpy()[ok])
    out = out.sort_values(["_profile", acol], kind="mergesort").drop(columns="_profile")
    if st["aggregate"] != "none":
        out = out.drop(columns="row")
    return out.reset_index(drop=True)
