"""``score_profiles``: which perturbations of a profiling screen beat chance (replicate retrieval).

It reads as its stages: the run's options checked (:class:`.options.RunOptions`), the table prepared
(:func:`.table.screen.prepare_screen`), every perturbation's mAP null run by the engine
(:func:`.nulls.permutation.mean_null`, :func:`.engine.sequential.resolve`), every query's p-value
(:func:`.nulls.conditional.query_pvalues`), and the result tables (:mod:`.results.tables`).
"""

from __future__ import annotations

import contextlib
from dataclasses import dataclass, field

import numpy as np
import pandas as pd

from ..compiled import safe_interrupts
from ..limits import SCORE_MAX_PERMUTATIONS as MAX_PERMUTATIONS, check_choice
from .engine.clock import tell_stage
from .engine.connect import starting
from .engine.executor import Scattered
from .table.memory import release_memory
from .engine.sequential import resolve, rounds_of
from .nulls.conditional import QueriesBeside
from .nulls.laws import LawCache
from .nulls.permutation import MAX_EXACT_ASSIGNMENTS, ScreenWork, assignment_count, mean_null, null_values
from .nulls.registry import MAP_NULLS, NULL_LABELS, NULLS, null_label
from .options import RunOptions
from .results import outputs as _outputs
from .results.display import ShownNull
from .results.summary import activity_line, activity_summary
from .results.tables import add_activity, group_table, pvalues, query_table
from .table.keys import combine_columns, key_of
from .table.normalize import raw_warning
from .table.perts import Scores
from .table.rows import hold_rows, let_go, reading
from .table.screen import Screen, prepare_screen

__all__ = ["score_profiles", "ScoreResult", "NULLS", "MAX_PERMUTATIONS", "NULL_LABELS"]

@dataclass
class ScoreResult(ShownNull):
    """What :func:`score_profiles` returns (see there for the columns). In a notebook it shows itself
    (:mod:`.results.display`); ``plot()`` draws the volcano, ``plot_null(name)`` a perturbation's null."""

    _title = "apnull score: which perturbations beat chance (replicate retrieval)"
    _settings_shown = ("perturbation", "control", "stratum", "features", "similarity", "negatives", "null",
                       "permutations", "seed", "alpha")

    groups: pd.DataFrame
    queries: pd.DataFrame
    skipped: pd.DataFrame
    warnings: list
    settings: dict
    _screen: object = field(default=None, repr=False)

    @property
    def looks_raw(self):
        """Why the features, scored with normalize="none", look un-normalised (a sentence), or None."""
        return getattr(self._screen, "looks_raw", None)

    @property
    def activity(self) -> dict:
        """{"active": k, "scored": n, "fraction", "alpha"}: perturbations with q_value <= alpha."""
        return activity_summary(self.groups, self.settings.get("alpha", 0.05))

    def summary_lines(self) -> list:
        """The summary ``apnull score`` prints: the active share (:func:`.results.summary.activity_line`)."""
        return [activity_line(self.activity)]

    def null_maps(self, name) -> np.ndarray:
        """The permutation-null mAP values of perturbation ``name``, recomputed deterministically.

        Same stream keys as the run, so they are exactly the draws its p-value counted (for
        ``permutations="all"``, every assignment). The result keeps no copy of the prepared feature
        rows: the ones this needs are read again from the scored table (:mod:`.table.rows`). Raises
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
        work = ScreenWork(screen, st["seed"])
        if st["permutations"] == "all":
            return null_values(work, i, 0, exhaustive=True)
        B = st["permutations"]
        if B == "auto":  # the draws this perturbation used: the first B of its stream
            B = int(self.groups["permutations"][self._group_row(pt[i])])
        return null_values(work, i, B)

    def _group_row(self, pert) -> int:
        """Position in ``groups`` of the perturbation ``pert`` (its key, for several columns)."""
        cols = self.settings["perturbation_column"]
        if isinstance(cols, list):
            keys = [key_of(tuple(v)) for v in zip(*(self.groups[c].tolist() for c in cols))]
            return keys.index(pert.key)
        return int(np.flatnonzero((self.groups[cols] == pert.name).to_numpy())[0])


@safe_interrupts()  # Ctrl+C raised where it is safe (not inside numba's call back into Python)
def score_profiles(table, perturbation="Metadata_pert", control="DMSO", stratum=None, *, features=None,
                   similarity="cosine", negatives="controls", null="permutation", permutations="auto", seed=0,
                   alpha=0.05, nan="error", normalize="none", positives_differ_by=None, scheduler=None, workers=None,
                   threads=None, progress=None, budget=None) -> ScoreResult:
    """Per-query AP p-values and a calibrated mAP p-value per perturbation of a profiling screen.

    Queries (replicate retrieval): each replicate q of perturbation t (k replicates) ranks the other
    k - 1 replicates of t (positives, m = k - 1, from any stratum) and the controls of q's own
    stratum (negatives, n) by similarity to q, most similar first. AP is tie-aware (the mean over all
    orders of tied similarities; copairs instead ranks a tied positive first). mAP = mean of the k APs.
    With ``negatives="others"`` the negatives are every other profile of q's stratum (the other
    perturbations' replicates, and the controls if any).

    Parameters
    ----------
    table : DataFrame
        One row per profile: metadata columns and numeric feature columns.
    perturbation : str or list of str
        Column naming each row's perturbation; rows equal to ``control`` are the controls. Several
        columns (e.g. compound and dose): each distinct combination is a perturbation, a row is a
        control when its first column is a control value, and the result tables show every column
        (see :mod:`apnull.score.table.keys`; ``null_maps`` then takes a tuple of values).
    control : str, list of str or None
        Control value(s) of the perturbation column (compared as text). None (a screen without
        controls) only with ``negatives="others"``.
    stratum : str, optional
        Plate/batch column: negatives and permutations stay inside a stratum.
    negatives : {"controls", "others"}
        "controls" (default): a query's negatives are the controls of its stratum. "others": every
        profile of its stratum not of its perturbation (copairs's ``neg_diffby=[perturbation]`` with
        ``neg_sameby=[stratum]``); the null then permutes t's label among every profile of each
        stratum (exact under exchangeability of t's replicates with the other profiles there), and a
        query's exact law is that of its (m, n). A replicate whose stratum has no control (no other
        profile, for "others") is left out and named in ``skipped``; its perturbation is scored from
        the replicates it keeps.
    features : None, list of str or str
        None: every numeric column not starting with ``Metadata_`` (other than the two columns above);
        a list of columns; or a regex searched in the column names.
    similarity : {"cosine", "correlation", "euclidean", "abs_cosine", "manhattan", "chebyshev", "jaccard", "hamming"}
        Cosine of the raw rows; Pearson correlation (cosine of row-centred rows); Euclidean distance
        (ranked by minus the squared distance); absolute cosine |cos| (anti-correlated profiles count
        as similar, as copairs's ``abs_cosine``); Manhattan (L1) and Chebyshev (largest difference)
        distances (ranked by minus the distance: copairs's 1 / (1 + d) gives the same order); for
        binary features (0/1 or true/false; another value is a ValueError naming it, and true/false
        columns are features), Jaccard |x and y| / |x or y| (1 for two all-zero rows, as scipy) and
        Hamming (ranked by minus the count of differing features). Binary features tie often: the
        tie-aware AP averages over their orders.
    null : {"permutation", "independent", "copairs"}
        "permutation" (default, exact under exchangeability): in every stratum s, t's k_s replicates
        and the n_s controls form a pool; k_s members drawn without replacement take t's label, the
        other pool members act as controls, and all k APs and their mean are recomputed; p =
        (1 + #{null >= mAP - tol}) / (1 + B), tol = :data:`apnull.law.VALUE_TOL` (1e-12; see
        :func:`apnull.law.permutation_pvalue`). "independent" and "copairs" are approximate
        (:mod:`apnull.score.nulls.independent`, :mod:`apnull.score.nulls.copairs`; every null is
        registered in :mod:`apnull.score.nulls.registry`).
    permutations : "auto", int or "all"
        "auto" (default): adaptive permutations (:mod:`apnull.score.engine.sequential`): each p-value's
        stream is continued in rounds of 100, 400, 1,600, ... draws up to 1,000,000 (x2 from 6,400 on the
        crossed layout) until its Benjamini-Hochberg decision at FDR 0.05 is settled with probability >= 0.999
        (MMCTest, Gandy & Hahn 2014), stopping early at the 20th null value reaching the observed
        one (Besag & Clifford 1991, p = 20 / L). B, from 1 to 1,000,000: a fixed number. "all"
        enumerates every assignment (at most 200,000 per perturbation) and gives p = #{null >= mAP
        - tol} / #assignments exactly. With null="copairs", "auto" means 999 rows; with
        null="independent" only the queries under the conditional null draw (a fixed B that no query
        drew is named in ``warnings``). Every setting applies ``positives_differ_by`` to the null
        draws.
    seed : int
        The null stream of perturbation t in stratum s is derived from (seed, str(t), str(s)) only:
        results do not depend on row order or on which other perturbations are in the table.
    scheduler : str or dask.distributed.Client, optional
        Run batches of perturbations as dask tasks (identical results). The workers hold shards of the
        screen: whole components of strata, or, where one component holds most of the screen (the
        crossed layout), sets of perturbations, each shard with its perturbations' rows and the
        controls of their plates only.
    workers : int, optional
        Start a local dask cluster with this many single-thread worker processes.
    progress : True, callable(done, total) or None
        True: a progress bar in Jupyter, lines on stderr elsewhere (the rounds and draws as ``apnull
        score`` prints them; :mod:`.engine.progress`); None or False (default): nothing shown. A callable
        is called as batches of perturbations finish, in every round; when it also has a method
        ``round(info)``, that is called before each round (:class:`.engine.sequential.RoundInfo`: the
        units, draws so far, the draws the round may take and their estimated time).
    threads : int, optional
        In-process runs score the perturbations of a batch on this many threads (default: one per core
        this process may use). Results do not depend on it.
    nan : {"error", "drop-features", "drop-rows"}
        NaN or infinite feature values in the scored rows: a ValueError (default), leave out the
        feature columns holding any, or leave out the rows holding any. What was dropped is in
        ``warnings`` and in ``settings["dropped_features"]`` / ``settings["dropped_rows"]``
        (see :mod:`apnull.score.table.missing`).
    normalize : {"none", "controls", "plate"}
        Per-plate normalisation of the features before any similarity (:mod:`apnull.score.table.normalize`):
        "none" (default, for a table normalised already); "controls": per stratum and feature the robust
        z-score (x - median) / (1.4826 * MAD) against the stratum's control rows (pycytominer's
        ``normalize(method="mad_robustize", samples=<controls>)`` plate by plate); "plate": the same
        against every scored row of the stratum. Without ``stratum`` the whole table is one plate. The
        statistics skip NaN cells, which ``nan`` then handles; a feature with MAD 0 on some stratum is
        left out and named; a stratum without control rows is a ValueError with "controls". The
        permutation null keeps the normalisation of the observed labels (docs/calibration.md measures
        what that does to the false-positive rate). With "none", features that look raw (units that
        differ by orders of magnitude, or plate effects) get a warning (``ScoreResult.looks_raw``).
    positives_differ_by : str or list of str, optional
        Columns (e.g. the well position): a replicate sharing the query's value in any of them is
        left out of the query's ranking entirely (copairs's ``pos_diffby``); m counts only the
        positives kept, a query keeping none is left out of the queries and of the mAP, and the
        permutation null applies the same rule to every relabelled screen (see
        :mod:`apnull.score.positives`).
    alpha : float
        FDR level of the ``significant`` column: q_value <= alpha (default 0.05; 0 < alpha < 1).
    budget : float or Deadline, optional
        Seconds the whole run may take (``permutations="auto"``), on one clock started as the options
        are checked (:class:`apnull.score.engine.clock.Deadline`; numba's compilation on a first run
        not counted; a Deadline to share another run's clock): an adaptive round (after the first)
        whose estimated time would pass it is not started, and past it no per-query far tail is
        counted (the p-value is then its law's guaranteed upper end, ``p_value_bound``). The
        perturbations and queries whose BH decision is then still open are flagged ``decision_open``,
        and all of it is named in ``warnings`` and counted in ``settings["budget_outcome"]``. None
        (default): no limit. A budget makes results depend on the machine's speed; the run says when
        it applied. With a fixed number of permutations (no rounds to stop) a budget is refused.

    Returns
    -------
    ScoreResult
        ``groups``: [<perturbation column(s)>, n_replicates, mAP, mAP_normalized, p_value, q_value,
        significant, null, permutations, p_value_bound], sorted by p_value then name; mAP_normalized
        = (mAP - E) / (1 - E), E the mean over t's queries of the exact E[AP](m, n); significant =
        q_value <= alpha (see :mod:`apnull.score.results.summary`; ``.activity`` counts them). For
        families of perturbations (a compound's doses, ``perturbation=[compound, dose]``) the two-stage
        FDR is :func:`apnull.score.hierarchical_bh` ``(res.groups, by=compound)``. ``queries``:
        [row, <perturbation column(s)>, m, n, ap, ap_normalized ((AP - E) / (1 - E), E = E[AP](m, n)
        of that query), precision_at_r, p_value, q_value, null,
        permutations, p_value_bound, <stratum>, <metadata columns>...], ``row`` the 0-based position
        among the input's data rows, then the stratum and every text or ``Metadata_*`` column of that
        row. ``permutations``: null draws the p-value used (0 for an exact law); ``p_value_bound``: no
        draw reached the observed value, so p is an upper bound. A query's ``null`` is "exact law"
        when all its positives share its stratum (or ``positives_differ_by`` leaves some of its
        positives out), else "conditional permutation" (:mod:`apnull.score.nulls.conditional`: keeps the
        query, swaps each positive with a member of its own stratum's pool; calibrated under plate
        effects), or "conditional law (all choices counted)", the same null counted over every choice
        instead of drawn where that is cheaper (adaptive runs of large crossed screens; p exact,
        ``permutations`` the number of choices); ``skipped``: [<perturbation column>, reason]; ``warnings`` (including one when
        perturbations sit at the p-value floor 1/(1 + B) of a fixed B); ``settings`` (with
        ``perturbation_column``, the name of the perturbation column in the tables: an input name the
        tables use themselves, such as ``null`` or ``mAP``, gets ``_input`` appended; for several
        perturbation columns, the list of their names, each renamed the same way;
        ``features``: how many feature columns were used, ``feature_columns``: their names, in table
        order; ``columns_left_out``: every column not used as a feature, with the reason). q-values are
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
    >>> len(res.queries), list(res.queries.columns)[:7]  # one row per replicate query
    (44, ['row', 'Metadata_perturbation', 'm', 'n', 'ap', 'ap_normalized', 'precision_at_r'])
    >>> res.queries["null"].iat[0]  # one replicate per plate: the positives sit on other plates
    'conditional permutation'
    """
    check_choice(null, tuple(MAP_NULLS), "null")
    opts = RunOptions.checked(seed=seed, permutations=permutations, alpha=alpha, threads=threads, workers=workers,
                              scheduler=scheduler, progress=progress, budget=budget, null=null)
    keyed = combine_columns(table, perturbation, control, stratum)
    with starting(opts.scheduler, opts.workers) as client:  # a local cluster starts while the table is prepared
        screen = prepare_screen(keyed.table, keyed.column, control, stratum, features, similarity, nan,
                                positives_differ_by, negatives, normalize, opts.progress)
        keyed = keyed._replace(table=None)  # a copy made for several perturbation columns is not needed again
        _check_exact_sizes(screen, opts)
        release_memory()  # the preparation's freed temporaries go back to the system before the rounds
        laws = LawCache(opts.seed, opts.deadline)  # the run's one cache of per-query laws
        scores, query_p, seconds = _run(screen, null, opts, lambda: hold_rows(screen, table, similarity), laws, client)
        let_go(screen.X)  # the float32 copy a run of a large float32 table keeps: the result reads the table
    scored, before = pvalues(screen, scores, null, opts.permutations, query_p, laws), int(query_p.before.sum())
    del scores, query_p  # (before: the draws of the queries whose law was counted later, not in the tables)
    pname = _outputs.output_name(keyed.column)
    settings = dict(perturbation=perturbation,
                    control=[control] if isinstance(control, str) else list(control or []),
                    stratum=stratum, features=len(screen.features), feature_columns=list(screen.features),
                    similarity=similarity, negatives=negatives, null=null,
                    permutations=opts.permutations, seed=opts.seed, nan=nan, normalize=normalize,
                    dropped_features=list(screen.dropped_features), dropped_rows=list(screen.dropped_rows),
                    alpha=opts.alpha, positives_differ_by=positives_differ_by,
                    perturbation_column=pname if len(keyed.columns) == 1 else list(keyed.names),
                    columns_left_out=[{"column": c, "reason": r} for c, r in screen.left_out],
                    row=_outputs.ROW_NOTE)
    if budgeted := opts.budget is not None:
        settings["budget"] = opts.budget
    release_memory()  # the rounds' and laws' freed temporaries
    label = null_label(null, opts.permutations)
    groups = add_activity(group_table(scored, label, pname, budgeted), scored, opts.alpha)
    release_memory()
    budget_words, outcome = _outputs.budget_report(scored)
    if budgeted:
        settings["budget_outcome"] = outcome
    warnings = list(screen.warnings) + budget_words + raw_warning(screen.looks_raw)
    queries = query_table(scored, pname, budgeted)
    warnings += _unused_permutations(null, opts, queries)
    del scored
    release_memory()
    groups = keyed.expand(groups)
    queries = _outputs.carry_metadata(keyed.expand(queries), table,
                                      _outputs.carried_columns(table, screen.features, keyed.columns, stratum))
    _outputs.tell_spent(opts.progress, groups, queries, before)
    fixed = opts.permutations if MAP_NULLS[null].engine and isinstance(opts.permutations, int) else None
    if floor := _outputs.floor_warning(groups["p_value"], fixed, seconds):
        warnings.append(floor)
    return ScoreResult(groups=groups, queries=queries,
                       skipped=keyed.expand(pd.DataFrame(screen.skipped, columns=[pname, "reason"])),
                       warnings=warnings, settings=settings, _screen=screen)


# -- the stages of score_profiles ----------------------------------------------------------------------

def _check_exact_sizes(screen: Screen, opts: RunOptions) -> None:
    """For ``permutations="all"``: ValueError if a perturbation has more assignments than the limit."""
    if opts.permutations != "all":
        return
    inside = screen.negatives == "others"  # the pool holds the replicates among its members
    for p in screen.perts:  # only for "all": screens small enough to enumerate
        sizes = [(len(r), len(screen.controls[s]) - (len(r) if inside else 0)) for r, s in zip(p.reps, p.strata)]
        count = assignment_count(sizes)
        if count > MAX_EXACT_ASSIGNMENTS:
            raise ValueError(f"permutations='all' would enumerate {count:,} assignments for {p.name!r} "
                             f"(limit {MAX_EXACT_ASSIGNMENTS:,}); give a number such as 9999")


def _run(screen: Screen, null: str, opts: RunOptions, held, laws: LawCache, connection):
    """Score every perturbation and every query's p-value, in process or on dask (``connection()``'s client).

    The mAP null runs only for ``null="permutation"`` (the other nulls: one round of no draws), the queries'
    null beside its refinement rounds where :class:`.nulls.conditional.QueriesBeside` can (the same p-values).
    Then ``screen.X`` becomes ``held()`` (a :class:`.table.rows.PreparedRows`: the matrix let go; made in the
    queries' thread when it ran beside), which a queries' null not run beside reads, and the result keeps.

    Returns
    -------
    scores, query_p, seconds : Scores, QueryP, float
        The observed scores and mAP p-values (:class:`.table.perts.Scores`), every query's p-value
        (:func:`.nulls.conditional.query_pvalues`; where ``positives_differ_by`` leaves a query out,
        ``pvalues`` uses the exact laws of the kept m instead), and the seconds the mAP rounds took.
    """
    work = ScreenWork(screen, opts.seed)
    watching = opts.deadline.watching() if opts.deadline is not None else contextlib.nullcontext()
    client = connection()
    with watching:
        tell_stage(opts.progress, "perturbations")
        where = None if client is None else Scattered(client, work)  # the screen goes to dask workers once
        rounds = rounds_of(opts.permutations if (mapped := MAP_NULLS[null].engine) else 0, crossed=screen.perts.crossed)
        means = mean_null(work, exhaustive=rounds.exhaustive)
        beside = QueriesBeside(work, means.state, laws, opts, where, held)  # the queries' null, beside it where it can
        with reading(screen.X), beside:
            res = resolve(means, rounds, client=where, threads=opts.threads, progress=opts.progress,
                          budget=opts.deadline, after_first=beside.start)
            query_p = beside.result()  # None unless the queries' null ran beside the mAP null's rounds
        st = means.state
        scores = Scores.observed(st["ap"], st["pr"], st["map"])
        if mapped:
            scores = scores._replace(p_value=res.p_value, permutations=res.drawn, bound=res.bound, open=res.open)
        del means, st
        screen.X = held() if beside.kept is None else beside.kept  # the matrix let go (the result keeps no copy)
        if query_p is None:
            with reading(screen.X):
                query_p = beside.after(scores)
        return scores, query_p, res.seconds


def _unused_permutations(null: str, opts: RunOptions, queries) -> list:
    """A sentence naming a fixed number of permutations the run never drew, or none: a null that draws
    none for the mAP (``MapNull.draws`` False: "independent"), when no query drew either (a query draws
    only under the conditional null: positives on other plates)."""
    if MAP_NULLS[null].draws or not isinstance(opts.permutations, int) or (queries["permutations"] > 0).any():
        return []
    return [f"permutations={opts.permutations:,} was not used: the {null!r} null draws no permutations and "
            "every query's p-value comes from its exact law; leave permutations out, or use null='permutation'"]
