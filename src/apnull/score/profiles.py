"""``score_profiles``: which perturbations of a profiling screen beat chance (replicate retrieval)."""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import NamedTuple

import numpy as np
import pandas as pd

from ..limits import SCORE_MAX_PERMUTATIONS as MAX_PERMUTATIONS
from ..limits import check_choice, check_permutations, check_seed, check_threads, check_workers
from . import _engine
from ._keys import combine_columns, key_of
from ._prepare import Pert, Screen, prepare_screen
from .fdr import benjamini_hochberg
from .nulls import LawCache
from .positives import query_positives
from .summary import activity_summary, add_activity_columns, check_alpha

__all__ = ["score_profiles", "ScoreResult", "NULLS", "MAX_PERMUTATIONS", "NULL_LABELS"]

NULLS = ("permutation", "independent", "copairs")
NULL_LABELS = {"permutation": "permutation", "all": "permutation (all assignments, exact)",
               "independent": "independent (approximate)", "copairs": "copairs (approximate)"}


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
        ``permutations="all"``, every assignment). Raises ValueError if the run's null was not
        "permutation" or ``name`` was not scored.
        """
        st = self.settings
        if st["null"] != "permutation":
            raise ValueError(f"null mAP values are kept for null='permutation' only; this run used {st['null']!r}")
        screen = self._screen
        matches = [i for i, p in enumerate(screen.perts) if p.name == name or p.key == key_of(name)]
        if not matches:
            raise ValueError(f"{name!r} is not a scored perturbation of this result")
        i = matches[0]
        strata = list(screen.perts[i].strata)
        comp = _engine.prepare_component(strata, [screen.X[screen.controls[s]] for s in strata], screen.kind)
        spec = _engine.pert_spec(screen, i, strata, st["seed"])
        exact = st["permutations"] == "all"
        B = 0 if exact else st["permutations"]
        return _engine.run_batch(comp, [spec], screen.kind, B, exact, keep_null=True)[0].null


def _distributed():
    """dask.distributed, or a ValueError saying how to install it (it is the optional 'dask' extra)."""
    try:
        import dask.distributed
    except ImportError:
        raise ValueError("scheduler=/workers= need dask.distributed, which is not installed: "
                         "pip install 'apnull[dask]' (or run without them, in process)") from None
    return dask.distributed


def _client(scheduler, workers):
    """(dask client or None, a function that closes what was opened) for checked scheduler/workers."""
    if workers is not None:
        dd = _distributed()
        Client, LocalCluster = dd.Client, dd.LocalCluster
        cluster = LocalCluster(n_workers=int(workers), threads_per_worker=1, dashboard_address=None)
        client = Client(cluster)
        return client, lambda: (client.close(), cluster.close())
    if scheduler is None:
        return None, lambda: None
    Client = _distributed().Client
    if isinstance(scheduler, Client):
        return scheduler, lambda: None
    if not isinstance(scheduler, str) or not scheduler:
        raise ValueError(f"scheduler must be a dask scheduler address such as 'tcp://host:8786' or a "
                         f"dask.distributed.Client, got {scheduler!r}")
    try:
        client = Client(scheduler, timeout="10s")
    except (OSError, TimeoutError) as exc:
        raise ValueError(f"cannot reach the dask scheduler at {scheduler!r}: {exc}") from None
    return client, client.close


#: Public name of the dask client helper, for the other scorers of a screen (consistency).
open_client = _client


def score_profiles(table, perturbation="Metadata_pert", control="DMSO", stratum=None, features=None,
                   similarity="cosine", null="permutation", permutations=999, seed=0,
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
    permutations : int or "all"
        B, from 1 to 1,000,000 (default 999); "all" enumerates every assignment (at most 200,000
        per perturbation) and gives p = #{null >= mAP - tol} / #assignments exactly.
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
        significant, null], sorted by p_value then name; mAP_normalized = (mAP - E) / (1 - E), E the
        mean over t's queries of the exact E[AP](m, n); significant = q_value <= alpha
        (see :mod:`apnull.score.summary`; ``.activity`` counts them); ``queries``: [row, <perturbation column>, m, n, ap, precision_at_r, p_value,
        q_value], ``row`` the 0-based input row; ``skipped``: [<perturbation column>, reason];
        ``warnings``; ``settings``. q-values are Benjamini-Hochberg, across perturbations and across
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
    >>> len(res.queries), list(res.queries.columns)  # one row per replicate query
    (44, ['row', 'Metadata_perturbation', 'm', 'n', 'ap', 'precision_at_r', 'p_value', 'q_value'])
    """
    run = _check_inputs(null, permutations, seed, progress, threads, scheduler, workers)
    alpha = check_alpha(alpha)
    keyed = combine_columns(table, perturbation, control, stratum)
    screen = prepare_screen(keyed.table, keyed.column, control, stratum, features, similarity, nan,
                            positives_differ_by)
    _check_exact_sizes(screen, run)
    results = _run(screen, run, scheduler, workers, progress)
    scored = _pvalues(screen, results, run)
    settings = dict(perturbation=perturbation, control=[control] if isinstance(control, str) else list(control),
                    stratum=stratum, features=len(screen.features), similarity=similarity, null=null,
                    permutations=run.B, seed=run.seed, nan=nan, dropped_features=list(screen.dropped_features),
                    dropped_rows=list(screen.dropped_rows), alpha=alpha,
                    positives_differ_by=positives_differ_by)
    pcol = keyed.column
    queries = _query_table(scored, pcol)
    groups = add_activity_columns(_group_table(scored, run, pcol), queries, pcol, alpha)
    return ScoreResult(groups=keyed.expand(groups), queries=keyed.expand(queries),
                       skipped=keyed.expand(pd.DataFrame(screen.skipped, columns=[pcol, "reason"])),
                       warnings=list(screen.warnings), settings=settings, _screen=screen)


# -- the stages of score_profiles ----------------------------------------------------------------------

class RunSettings(NamedTuple):
    """The checked settings of a run (``_check_inputs``)."""

    null: str                 #: "permutation", "independent" or "copairs"
    B: object                 #: permutations per perturbation (int), or "all"
    exact: bool               #: True when every assignment is enumerated (``B == "all"``)
    seed: int                 #: root of every random stream of the run
    threads: int | None       #: in-process threads (None: one per core)

    @property
    def run_B(self) -> int:
        """Random permutations the engine draws: B for the permutation null, else 0 (observed only)."""
        return self.B if self.null == "permutation" and not self.exact else 0


class PerturbationScores(NamedTuple):
    """One perturbation's scores and p-values (``_pvalues``)."""

    pert: Pert                #: the perturbation (name, strata, replicate rows)
    result: _engine.PerturbationResult  #: per-query AP and Precision@R, mAP, permutation p-value
    m: np.ndarray             #: (k,) positives of each query: k - 1
    n: np.ndarray             #: (k,) negatives of each query: the controls of its stratum
    rows: np.ndarray          #: (k,) input row of each query
    p_value: float            #: the mAP p-value under the run's null
    query_p: np.ndarray       #: (k,) per-query AP p-values, exact (auto) law of each (m, n)


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
    for p in screen.perts:
        sizes = [(len(r), len(screen.controls[s])) for r, s in zip(p.reps, p.strata)]
        count = _engine.assignment_count(sizes)
        if count > _engine.MAX_EXACT_ASSIGNMENTS:
            raise ValueError(f"permutations='all' would enumerate {count:,} assignments for {p.name!r} "
                             f"(limit {_engine.MAX_EXACT_ASSIGNMENTS:,}); give a number such as 9999")


def _run(screen: Screen, run: RunSettings, scheduler, workers, progress) -> dict:
    """Score every perturbation, in process or on dask.

    Returns
    -------
    dict
        {index in ``screen.perts``: :class:`_engine.PerturbationResult`}.
    """
    client, close = _client(scheduler, workers)
    try:
        return _engine.run_screen(screen, run.seed, run.run_B, run.exact and run.null == "permutation", client,
                                  progress, threads=run.threads)
    finally:
        close()


def _pvalues(screen: Screen, results: dict, run: RunSettings) -> list:
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
            pval = laws.copairs_pvalue(ms, ns, res.map, run.B)
        out.append(PerturbationScores(p, res, ms, ns, rows, pval,
                                      laws.query_pvalues(ms, ns, res.ap)))
    return out


def _group_table(scored: list, run: RunSettings, pcol: str) -> pd.DataFrame:
    """The perturbation table.

    Returns
    -------
    DataFrame
        [<pcol>, n_replicates, mAP, p_value, q_value (BH across perturbations), null (its label)],
        sorted by p_value then name (as text).
    """
    label = NULL_LABELS["all" if run.exact else run.null]
    groups = pd.DataFrame([(s.pert.name, s.pert.k, s.result.map, s.p_value, label) for s in scored],
                          columns=[pcol, "n_replicates", "mAP", "p_value", "null"])
    groups.insert(4, "q_value", benjamini_hochberg(groups["p_value"].to_numpy()))
    order = sorted(range(len(groups)), key=lambda r: (groups["p_value"].iat[r], str(groups[pcol].iat[r])))
    return groups.iloc[order].reset_index(drop=True)


def _query_table(scored: list, pcol: str) -> pd.DataFrame:
    """The query table.

    Returns
    -------
    DataFrame
        [row (0-based input row), <pcol>, m, n, ap, precision_at_r, p_value, q_value (BH across
        queries)], sorted by row.
    """
    queries = pd.DataFrame({"row": np.concatenate([s.rows for s in scored]),
                            pcol: [s.pert.name for s in scored for _ in range(len(s.m))],
                            "m": np.concatenate([s.m for s in scored]), "n": np.concatenate([s.n for s in scored]),
                            "ap": np.concatenate([s.result.ap for s in scored]),
                            "precision_at_r": np.concatenate([s.result.precision_at_r for s in scored]),
                            "p_value": np.concatenate([s.query_p for s in scored])})
    queries = queries.sort_values("row", kind="mergesort").reset_index(drop=True)
    queries["q_value"] = benjamini_hochberg(queries["p_value"].to_numpy())
    return queries.astype({"row": "int64", "m": "int64", "n": "int64"})
