"""``score_profiles``: which perturbations of a profiling screen beat chance (replicate retrieval)."""

from __future__ import annotations

import time
from dataclasses import dataclass, field

import numpy as np
import pandas as pd

from ..limits import SCORE_MAX_PERMUTATIONS as MAX_PERMUTATIONS
from ..limits import check_choice, check_permutations, check_seed, check_threads, check_workers
from . import _adaptive, _engine, _outputs, conditional
from ._connect import connect
from ._rows import hold_rows
from ._trim import release_memory
from ._keys import combine_columns, key_of
from ._perts import Scores
from ._prepare import Screen, prepare_screen
from .nulls import LawCache
from ._results import NULL_LABELS, RunSettings, add_activity, fixed_draws, group_table, pvalues, query_table
from .summary import activity_summary, check_alpha

__all__ = ["score_profiles", "ScoreResult", "NULLS", "MAX_PERMUTATIONS", "NULL_LABELS"]

NULLS = ("permutation", "independent", "copairs")


@dataclass
class ScoreResult:
    """What :func:`score_profiles` returns (see there for the columns)."""

    groups: pd.DataFrame
    queries: pd.DataFrame
    skipped: pd.DataFrame
    warnings: list
    settings: dict
    _screen: object = field(default=None, repr=False)

    @property
    def activity(self) -> dict:
        """{"active": k, "scored": n, "fraction", "alpha"}: perturbations with q_value <= alpha."""
        return activity_summary(self.groups, self.settings.get("alpha", 0.05))

    def null_maps(self, name) -> np.ndarray:
        """The permutation-null mAP values of perturbation ``name``, recomputed deterministically.

        Same stream keys as the run, so they are exactly the draws its p-value counted (for
        ``permutations="all"``, every assignment). The result keeps no copy of the prepared feature
        rows: the ones this needs are read again from the scored table (:mod:`._rows`). Raises
        ValueError if the run's null was not "permutation", ``name`` was not scored, or the table
        was changed after scoring (a feature value or column).
        """
        st = self.settings
        if st["null"] != "permutation":
            raise ValueError(f"null mAP values are kept for null='permutation' only; this run used {st['null']!r}")
        screen = self._screen
        pt, key = screen.perts, key_of(name)
        matches = [i for i, (n, k) in enumerate(zip(pt.names.tolist(), pt.keys.tolist())) if n == name or k == key]
        if not matches:
            raise ValueError(f"{name!r} is not a scored perturbation of this result")
        i = matches[0]
        strata = list(pt[i].strata)
        comp = _engine.prepare_component(strata, [screen.X[screen.controls[s]] for s in strata], screen.kind)
        spec = _engine.pert_spec(screen, i, strata, st["seed"])
        exact = st["permutations"] == "all"
        B = 0 if exact else st["permutations"]
        if B == "auto":  # the draws this perturbation used: the first B of its stream
            B = int(self.groups["permutations"][self._group_row(pt[i])])
        return _engine.run_batch(comp, [spec], screen.kind, B, exact, keep_null=True)[0].null


    def _group_row(self, pert) -> int:
        """Position in ``groups`` of the perturbation ``pert`` (its key, for several columns)."""
        cols = self.settings["perturbation_column"]
        if isinstance(cols, list):
            keys = [key_of(tuple(v)) for v in zip(*(self.groups[c].tolist() for c in cols))]
            return keys.index(pert.key)
        return int(np.flatnonzero((self.groups[cols] == pert.name).to_numpy())[0])


#: The dask client helper (hard 10 s deadline, see :mod:`apnull.score._connect`), public for the other
#: scorers of a screen (consistency).
open_client = connect


def score_profiles(table, perturbation="Metadata_pert", control="DMSO", stratum=None, features=None,
                   similarity="cosine", null="permutation", permutations="auto", seed=0,
                   scheduler=None, workers=None, progress=None, threads=None, nan="error",
                   alpha=0.05, positives_differ_by=None) -> ScoreResult:
    """Per-query AP p-values and a calibrated mAP p-value per perturbation of a profiling screen.

    Queries (replicate retrieval): each replicate q of perturbation t (k replicates) ranks the other
    k - 1 replicates of t (positives, m = k - 1, from any stratum) and the controls of q's own
    stratum (negatives, n) by similarity to q, most similar first. AP is tie-aware (the mean over all
    orders of tied similarities; copairs instead ranks a tied positive first). mAP = mean of the k APs.

    Parameters
    ----------
    table : DataFrame
        One row per profile: metadata columns and numeric feature columns.
    perturbation : str or list of str
        Column naming each row's perturbation; rows equal to ``control`` are the controls. Several
        columns (e.g. compound and dose): each distinct combination is a perturbation, a row is a
        control when its first column is a control value, and the result tables show every column
        (see :mod:`apnull.score._keys`; ``null_maps`` then takes a tuple of values).
    control : str or list of str
        Control value(s) of the perturbation column (compared as text).
    stratum : str, optional
        Plate/batch column: negatives and permutations stay inside a stratum.
    features : None, list of str or str
        None: every numeric column not starting with ``Metadata_`` (other than the two columns above);
        a list of columns; or a regex searched in the column names.
    similarity : {"cosine", "correlation", "euclidean", "abs_cosine"}
        Cosine of the raw rows; Pearson correlation (cosine of row-centred rows); Euclidean distance
        (ranked by minus the squared distance); absolute cosine |cos| (anti-correlated profiles count
        as similar, as copairs's ``abs_cosine``).
    null : {"permutation", "independent", "copairs"}
        "permutation" (default, exact under exchangeability): in every stratum s, t's k_s replicates
        and the n_s controls form a pool; k_s members drawn without replacement take t's label, the
        other pool members act as controls, and all k APs and their mean are recomputed; p =
        (1 + #{null >= mAP - tol}) / (1 + B), tol = :data:`apnull.law.VALUE_TOL` (1e-12; see
        :func:`apnull.law.permutation_pvalue`). "independent" and "copairs" are approximate
        (see :mod:`apnull.score.nulls`).
    permutations : "auto", int or "all"
        "auto" (default): adaptive permutations (:mod:`apnull.score._adaptive`): each p-value's
        stream is continued in rounds of 100, 400, 1,600, ... draws up to 1,000,000 until its
        Benjamini-Hochberg decision at FDR 0.05 is settled with probability >= 0.999
        (MMCTest, Gandy & Hahn 2014), stopping early at the 20th null value reaching the observed
        one (Besag & Clifford 1991, p = 20 / L). B, from 1 to 1,000,000: a fixed number. "all"
        enumerates every assignment (at most 200,000 per perturbation) and gives p = #{null >= mAP
        - tol} / #assignments exactly. With null="copairs", "auto" means 999 rows. Every setting
        applies ``positives_differ_by`` to the null draws.
    seed : int
        The null stream of perturbation t in stratum s is derived from (seed, str(t), str(s)) only:
        results do not depend on row order or on which other perturbations are in the table.
    scheduler : str or dask.distributed.Client, optional
        Run components of strata and batches of perturbations as dask tasks (identical results).
    workers : int, optional
        Start a local dask cluster with this many single-thread worker processes.
    progress : callable(done, total), optional
        Called as batches of perturbations finish.
    threads : int, optional
        In-process runs score the perturbations of a batch on this many threads (default: one per core
        this process may use). Results do not depend on it.
    nan : {"error", "drop-features", "drop-rows"}
        NaN or infinite feature values in the scored rows: a ValueError (default), leave out the
        feature columns holding any, or leave out the rows holding any. What was dropped is in
        ``warnings`` and in ``settings["dropped_features"]`` / ``settings["dropped_rows"]``
        (see :mod:`apnull.score.missing`).
    positives_differ_by : str or list of str, optional
        Columns (e.g. the well position): a replicate sharing the query's value in any of them is
        left out of the query's ranking entirely (copairs's ``pos_diffby``); m counts only the
        positives kept, a query keeping none is left out of the queries and of the mAP, and the
        permutation null applies the same rule to every relabelled screen (see
        :mod:`apnull.score.positives`).
    alpha : float
        FDR level of the ``significant`` column: q_value <= alpha (default 0.05; 0 < alpha < 1).

    Returns
    -------
    ScoreResult
        ``groups``: [<perturbation column(s)>, n_replicates, mAP, mAP_normalized, p_value, q_value,
        significant, null, permutations, p_value_bound], sorted by p_value then name; mAP_normalized
        = (mAP - E) / (1 - E), E the mean over t's queries of the exact E[AP](m, n); significant =
        q_value <= alpha (see :mod:`apnull.score.summary`; ``.activity`` counts them); ``queries``:
        [row, <perturbation column(s)>, m, n, ap, precision_at_r, p_value, q_value, null,
        permutations, p_value_bound, <stratum>, <metadata columns>...], ``row`` the 0-based position
        among the input's data rows, then the stratum and every text or ``Metadata_*`` column of that
        row. ``permutations``: null draws the p-value used (0 for an exact law); ``p_value_bound``: no
        draw reached the observed value, so p is an upper bound. A query's ``null`` is "exact law"
        when all its positives share its stratum (or ``positives_differ_by`` leaves some of its
        positives out), else "conditional permutation" (:mod:`apnull.score.conditional`: keeps the
        query, swaps each positive with a member of its own stratum's pool; calibrated under plate
        effects); ``skipped``: [<perturbation column>, reason]; ``warnings`` (including one when
        perturbations sit at the p-value floor 1/(1 + B) of a fixed B); ``settings`` (with
        ``perturbation_column``, the name of the perturbation column in the tables: an input name the
        tables use themselves, such as ``null`` or ``mAP``, gets ``_input`` appended; for several
        perturbation columns, the list of their names, each renamed the same way;
        ``columns_left_out``: every column not used as a feature, with the reason). q-values are
        Benjamini-Hochberg, across perturbations and across
        queries separately.

    Raises
    ------
    ValueError
        Missing columns (with close names), no control rows at all, bad features (non-numeric, NaN or
        infinite: column and row count named), zero-norm rows under cosine (constant rows under
        correlation), no feature column, a bad similarity/null/permutations/seed, nothing left to
        score. A perturbation with one replicate, or with replicates in a stratum without controls,
        is skipped with a reason; duplicate rows are kept, with a warning.

    Examples
    --------
    The bundled screen of digit images: controls and null perturbations are images of 0, the real
    ones of 3 and 8 (``weak_6`` mixes a 6 into a 0); four plates are the strata.

    >>> from apnull.score import digits_screen, score_profiles
    >>> res = score_profiles(digits_screen(), perturbation="Metadata_perturbation",
    ...                      stratum="Metadata_plate", permutations=99, seed=0)
    >>> res.groups[["Metadata_perturbation", "n_replicates", "mAP", "p_value"]].head(4).round(3)
      Metadata_perturbation  n_replicates    mAP  p_value
    0               digit_3             4  0.910     0.01
    1               digit_8             4  0.946     0.01
    2                weak_6             4  0.597     0.01
    3               null_08             4  0.511     0.04
    >>> len(res.queries), list(res.queries.columns)[:8]  # one row per replicate query
    (44, ['row', 'Metadata_perturbation', 'm', 'n', 'ap', 'precision_at_r', 'p_value', 'q_value'])
    >>> res.queries["null"].iat[0]  # one replicate per plate: the positives sit on other plates
    'conditional permutation'
    """
    run = _check_inputs(null, permutations, seed, progress, threads, scheduler, workers)
    alpha = check_alpha(alpha)
    keyed = combine_columns(table, perturbation, control, stratum)
    screen = prepare_screen(keyed.table, keyed.column, control, stratum, features, similarity, nan,
                            positives_differ_by)
    keyed = keyed._replace(table=None)  # a copy made for several perturbation columns is not needed again
    _check_exact_sizes(screen, run)
    release_memory()  # the preparation's freed temporaries go back to the system before the rounds
    start = time.monotonic()
    scores, query_p = _run(screen, run, scheduler, workers, progress, lambda: hold_rows(screen, table, similarity))
    seconds = time.monotonic() - start
    scored = pvalues(screen, scores, run, query_p)
    del scores, query_p
    pname = _outputs.output_name(keyed.column)
    settings = dict(perturbation=perturbation, control=[control] if isinstance(control, str) else list(control),
                    stratum=stratum, features=len(screen.features), similarity=similarity, null=null,
                    permutations=run.B, seed=run.seed, nan=nan, dropped_features=list(screen.dropped_features),
                    dropped_rows=list(screen.dropped_rows), alpha=alpha,
                    positives_differ_by=positives_differ_by,
                    perturbation_column=pname if len(keyed.columns) == 1 else list(keyed.names),
                    columns_left_out=[{"column": c, "reason": r} for c, r in screen.left_out],
                    row=_outputs.ROW_NOTE)
    release_memory()  # the rounds' and laws' freed temporaries
    groups = add_activity(group_table(scored, run, pname), scored, alpha)
    release_memory()
    queries = query_table(scored, pname)
    del scored
    release_memory()
    groups = keyed.expand(groups)
    queries = _outputs.carry_metadata(keyed.expand(queries), table,
                                      _outputs.carried_columns(table, screen.features, keyed.columns, stratum))
    warnings = list(screen.warnings)
    floor = _outputs.floor_warning(groups["p_value"], run.B if run.null == "permutation" and isinstance(run.B, int)
                                   else None, seconds)
    if floor:
        warnings.append(floor)
    return ScoreResult(groups=groups, queries=queries,
                       skipped=keyed.expand(pd.DataFrame(screen.skipped, columns=[pname, "reason"])),
                       warnings=warnings, settings=settings, _screen=screen)


# -- the stages of score_profiles ----------------------------------------------------------------------

def _check_inputs(null, permutations, seed, progress, threads, scheduler, workers) -> RunSettings:
    """Check the run's arguments (not the table: ``prepare_screen`` does) with :mod:`apnull.limits`.

    Returns
    -------
    RunSettings
        ``null``, ``B`` (int or "all"), ``exact``, ``seed`` (int), ``threads`` (int or None).
    """
    check_choice(null, NULLS, "null")
    B = check_permutations(permutations, null)
    seed = check_seed(seed, allow_none=False)
    if progress is not None and not callable(progress):
        raise ValueError("progress must be a function progress(done, total)")
    threads = check_threads(threads)
    if scheduler is not None and workers is not None:
        raise ValueError("give scheduler= or workers=, not both")
    check_workers(workers)
    return RunSettings(null, B, B == "all", seed, threads)


def _check_exact_sizes(screen: Screen, run: RunSettings) -> None:
    """For ``permutations="all"``: ValueError if a perturbation has more assignments than the limit."""
    if not run.exact:
        return
    for p in screen.perts:  # only for "all": screens small enough to enumerate
        sizes = [(len(r), len(screen.controls[s])) for r, s in zip(p.reps, p.strata)]
        count = _engine.assignment_count(sizes)
        if count > _engine.MAX_EXACT_ASSIGNMENTS:
            raise ValueError(f"permutations='all' would enumerate {count:,} assignments for {p.name!r} "
                             f"(limit {_engine.MAX_EXACT_ASSIGNMENTS:,}); give a number such as 9999")


def _run(screen: Screen, run: RunSettings, scheduler, workers, progress, held):
    """Score every perturbation and every query's p-value, in process or on dask.

    Once the mAPs are scored, ``screen.X`` is replaced by ``held()`` (a :class:`._rows.PreparedRows`):
    the per-query nulls read the rows they need from it, and the matrix's memory is free for the rest.

    Returns
    -------
    scores, query_p : Scores, QueryP
        The observed scores and mAP p-values (:class:`._perts.Scores`; for a null other than
        "permutation" only the observed scores count), and every query's p-value
        (:func:`conditional.query_pvalues`; where ``positives_differ_by`` leaves a query out,
        ``pvalues`` uses the exact laws of the kept m instead).
    """
    client, close = connect(scheduler, workers)
    try:
        shared = _adaptive.shared(client, screen, run.seed)  # the screen goes to dask workers once
        if run.null == "permutation" and run.B == "auto":
            scores = _adaptive.run_screen_auto(screen, run.seed, shared, progress, run.threads)
        else:
            results = _engine.run_screen(screen, run.seed, run.run_B, run.exact and run.null == "permutation",
                                         client, progress, threads=run.threads)
            exact = run.exact and run.null == "permutation"  # only the exact count reads the perturbation
            draws = {i: fixed_draws(screen.perts[i] if exact else None, r.p_value, run, screen.controls)
                     for i, r in results.items()}
            scores = Scores.from_results(results, draws)
            del results
        screen.X = held()
        query_p = conditional.query_pvalues(screen, scores, LawCache(run.seed), run.seed, run.query_B, shared,
                                            run.threads)
        return scores, query_p
    finally:
        close()
