"""``score_profiles``: which perturbations of a profiling screen beat chance (replicate retrieval)."""

from __future__ import annotations

import numbers
from dataclasses import dataclass, field

import numpy as np
import pandas as pd

from ..limits import SCORE_MAX_PERMUTATIONS as MAX_PERMUTATIONS
from ..limits import as_int
from . import _engine
from ._prepare import prepare_screen
from .fdr import benjamini_hochberg
from .nulls import LawCache

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
        matches = [i for i, p in enumerate(screen.perts) if p.name == name or p.key == str(name)]
        if not matches:
            raise ValueError(f"{name!r} is not a scored perturbation of this result")
        i = matches[0]
        strata = list(screen.perts[i].strata)
        comp = _engine.prepare_component(strata, [screen.X[screen.controls[s]] for s in strata], screen.kind)
        spec = _engine.pert_spec(screen, i, strata, st["seed"])
        exact = st["permutations"] == "all"
        B = 0 if exact else st["permutations"]
        return _engine.run_batch(comp, [spec], screen.kind, B, exact, keep_null=True)[0][5]


def _check_permutations(permutations, null):
    if isinstance(permutations, str):
        if permutations != "all":
            raise ValueError(f"permutations must be a whole number or 'all', got {permutations!r}")
        if null != "permutation":
            raise ValueError("permutations='all' applies to null='permutation' only; give a number")
        return "all"
    if isinstance(permutations, bool) or not isinstance(permutations, numbers.Real) \
            or not float(permutations).is_integer():
        raise ValueError(f"permutations must be a whole number or 'all', got {permutations!r}")
    B = int(permutations)
    if not 1 <= B <= MAX_PERMUTATIONS:
        raise ValueError(f"permutations must be between 1 and {MAX_PERMUTATIONS:,}, got {B:,}")
    return B


def _distributed():
    """dask.distributed, or a ValueError saying how to install it (it is the optional 'dask' extra)."""
    try:
        import dask.distributed
    except ImportError:
        raise ValueError("scheduler=/workers= need dask.distributed, which is not installed: "
                         "pip install 'apnull[dask]' (or run without them, in process)") from None
    return dask.distributed


def _client(scheduler, workers):
    if scheduler is not None and workers is not None:
        raise ValueError("give scheduler= or workers=, not both")
    if workers is not None:
        if isinstance(workers, bool) or not isinstance(workers, numbers.Integral) or workers < 1:
            raise ValueError(f"workers must be a whole number of at least 1, got {workers!r}")
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


def score_profiles(table, perturbation="Metadata_pert", control="DMSO", stratum=None, features=None,
                   similarity="cosine", null="permutation", permutations=999, seed=0,
                   scheduler=None, workers=None, progress=None, threads=None) -> ScoreResult:
    """Per-query AP p-values and a calibrated mAP p-value per perturbation of a profiling screen.

    Queries (replicate retrieval): each replicate q of perturbation t (k replicates) ranks the other
    k - 1 replicates of t (positives, m = k - 1, from any stratum) and the controls of q's own
    stratum (negatives, n) by similarity to q, most similar first. AP is tie-aware (the mean over all
    orders of tied similarities; copairs instead ranks a tied positive first). mAP = mean of the k APs.

    Parameters
    ----------
    table : DataFrame
        One row per profile: metadata columns and numeric feature columns.
    perturbation : str
        Column naming each row's perturbation; rows equal to ``control`` are the controls.
    control : str or list of str
        Control value(s) of the perturbation column (compared as text).
    stratum : str, optional
        Plate/batch column: negatives and permutations stay inside a stratum.
    features : None, list of str or str
        None: every numeric column not starting with ``Metadata_`` (other than the two columns above);
        a list of columns; or a regex searched in the column names.
    similarity : {"cosine", "correlation", "euclidean"}
        Cosine of the raw rows; Pearson correlation (cosine of row-centred rows); Euclidean distance
        (ranked by minus the squared distance).
    null : {"permutation", "independent", "copairs"}
        "permutation" (default, exact under exchangeability): in every stratum s, t's k_s replicates
        and the n_s controls form a pool; k_s members drawn without replacement take t's label, the
        other pool members act as controls, and all k APs and their mean are recomputed; p =
        (1 + #{null >= mAP - 1e-12}) / (1 + B). "independent" and "copairs" are approximate
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

    Returns
    -------
    ScoreResult
        ``groups``: [<perturbation column>, n_replicates, mAP, p_value, q_value, null], sorted by
        p_value then name; ``queries``: [row, <perturbation column>, m, n, ap, precision_at_r, p_value,
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
    """
    if null not in NULLS:
        raise ValueError(f"null must be one of {', '.join(NULLS)}, got {null!r}")
    B = _check_permutations(permutations, null)
    if isinstance(seed, bool) or not isinstance(seed, numbers.Integral) or seed < 0:
        raise ValueError(f"seed must be a whole number >= 0, got {seed!r}")
    seed = int(seed)
    if progress is not None and not callable(progress):
        raise ValueError("progress must be a function progress(done, total)")
    if threads is not None:
        threads = as_int(threads, "threads", 1, 256)
    screen = prepare_screen(table, perturbation, control, stratum, features, similarity)
    exact = B == "all"
    if exact:
        for p in screen.perts:
            sizes = [(len(r), len(screen.controls[s])) for r, s in zip(p.reps, p.strata)]
            count = _engine.assignment_count(sizes)
            if count > _engine.MAX_EXACT_ASSIGNMENTS:
                raise ValueError(f"permutations='all' would enumerate {count:,} assignments for {p.name!r} "
                                 f"(limit {_engine.MAX_EXACT_ASSIGNMENTS:,}); give a number such as 9999")
    run_B = B if null == "permutation" and not exact else 0
    client, close = _client(scheduler, workers)
    try:
        results = _engine.run_screen(screen, seed, run_B, exact and null == "permutation", client, progress,
                                     threads=threads)
    finally:
        close()
    laws = LawCache(seed)
    pcol = perturbation
    g_rows = []
    q_rows, q_names, q_ms, q_ns, q_ap, q_pr = [], [], [], [], [], []
    label = NULL_LABELS["all" if exact else null]
    for i, p in enumerate(screen.perts):
        _, ap, pr, m_obs, p_perm, _ = results[i]
        k = p.k
        ms = np.full(k, k - 1)
        ns = np.concatenate([np.full(len(r), len(screen.controls[s])) for r, s in zip(p.reps, p.strata)])
        if null == "permutation":
            pval = p_perm
        elif null == "independent":
            pval = laws.independent_pvalue(ms, ns, ap)
        else:
            pval = laws.copairs_pvalue(ms, ns, m_obs, B)
        g_rows.append((p.name, k, m_obs, pval, label))
        q_rows.append(screen.rows[np.concatenate(p.reps)])
        q_names += [p.name] * k
        q_ms.append(ms)
        q_ns.append(ns)
        q_ap.append(ap)
        q_pr.append(pr)
    ms, ns, aps = np.concatenate(q_ms), np.concatenate(q_ns), np.concatenate(q_ap)
    queries = pd.DataFrame({"row": np.concatenate(q_rows), pcol: q_names, "m": ms, "n": ns, "ap": aps,
                            "precision_at_r": np.concatenate(q_pr), "p_value": laws.query_pvalues(ms, ns, aps)})
    groups = pd.DataFrame(g_rows, columns=[pcol, "n_replicates", "mAP", "p_value", "null"])
    groups.insert(4, "q_value", benjamini_hochberg(groups["p_value"].to_numpy()))
    order = sorted(range(len(groups)), key=lambda r: (groups["p_value"].iat[r], str(groups[pcol].iat[r])))
    groups = groups.iloc[order].reset_index(drop=True)
    queries = queries.sort_values("row", kind="mergesort").reset_index(drop=True)
    queries["q_value"] = benjamini_hochberg(queries["p_value"].to_numpy())
    queries = queries.astype({"row": "int64", "m": "int64", "n": "int64"})
    skipped = pd.DataFrame(screen.skipped, columns=[pcol, "reason"])
    settings = dict(perturbation=pcol, control=[control] if isinstance(control, str) else list(control),
                    stratum=stratum, features=len(screen.features), similarity=similarity, null=null,
                    permutations=B, seed=seed)
    return ScoreResult(groups=groups, queries=queries, skipped=skipped, warnings=list(screen.warnings),
                       settings=settings, _screen=screen)
