"""``score_compare``: two pipelines of the same wells; does one retrieve replicates better, and is it real?

It reads as its stages: the run's options checked (:class:`.options.RunOptions`), the wells of the two
tables paired (:func:`.table.wells.match_wells`), each table scored exactly as ``score_profiles`` scores
it (same settings, same seed, one dask client for both), the perturbations paired, and the two
differences tested by sign flips of whole units (:mod:`.nulls.compare`, run by
:func:`.engine.sequential.resolve`).
"""

from __future__ import annotations

import math
from dataclasses import dataclass

import numpy as np
import pandas as pd

from ..compiled import safe_interrupts
from ..limits import check_choice
from .engine.clock import Scoped
from .engine.connect import starting
from .engine.sequential import resolve, rounds_of
from .nulls.compare import (INTERVAL_DRAWS, LEVEL, MIN_UNITS, TESTS, FlipWork, RetrievedWork, enumerable,
                            flip_interval, flip_null, smallest_p, units_of, which_test)
from .nulls.crossed import crossed_test
from .options import RunOptions
from .profiles import ScoreResult, score_profiles
from .results.display import Shown
from .table.names import output_name
from .results.summary import retrieved_line
from .table.columns import select_features
from .table.io import labels_as_text
from .table.labels import EMPTY_LABELS
from .table.missing import NAN_MODES, MissingValuesError
from .table.normalize import NORMALIZE
from .table.scale import BINARY
from .table.screen import SCORE_SIMILARITIES
from .table.wells import (UNMATCHED, check_relabelled_controls, drop_missing_wells, has_blank_labels, match_wells,
                          set_aside)

__all__ = ["score_compare", "CompareResult", "summary_line", "which_test", "UNMATCHED", "GROUP_COLUMNS", "RETRIEVED",
           "LEVEL", "TESTS", "MIN_UNITS", "which_test_of"]

#: Columns of the per-perturbation table after the perturbation column(s).
GROUP_COLUMNS = ("n_replicates", "mAP_a", "mAP_b", "delta", "p_value_a", "q_value_a", "p_value_b", "q_value_b",
                 "retrieved", "unit")
#: Which side retrieves a perturbation (its q-value at most alpha).
RETRIEVED = ("both", "A only", "B only", "neither")


@dataclass
class CompareResult(Shown):
    """What :func:`score_compare` returns (see there for the columns). In a notebook it shows itself
    (:mod:`.results.display`); ``plot()`` draws mAP of B against mAP of A."""

    _title = "apnull compare: do pipelines A and B retrieve replicates equally well"
    _settings_shown = ("key", "perturbation", "control", "stratum", "features_a", "features_b", "similarity",
                       "permutations", "seed", "alpha")

    def summary_lines(self) -> list:
        """The two lines ``apnull compare`` prints: :func:`summary_line` and the retrieved counts
        (:func:`.results.summary.retrieved_line`)."""
        return [summary_line(self.summary), retrieved_line(self.summary)]

    groups: pd.DataFrame
    summary: dict
    left_out: pd.DataFrame
    warnings: list
    settings: dict
    a: ScoreResult
    b: ScoreResult

    @property
    def looks_raw(self) -> dict:
        """{"A": sentence, "B": sentence} for each table whose features, compared with normalize="none",
        look un-normalised (:attr:`ScoreResult.looks_raw`); empty when neither does."""
        return {side: r.looks_raw for side, r in (("A", self.a), ("B", self.b)) if r.looks_raw}


@safe_interrupts()  # Ctrl+C raised where it is safe (not inside numba's call back into Python)
def score_compare(a, b, *, key, perturbation="Metadata_pert", control="DMSO", stratum=None, features_a=None,
                  features_b=None, similarity="cosine", nan="error", normalize="none", unmatched="error",
                  permutations="auto", seed=0,
                  alpha=0.05, threads=None, workers=None, scheduler=None, progress=None,
                  budget=None) -> CompareResult:
    """Do pipelines A and B (two tables of the same wells) retrieve replicates equally well?

    Each table is scored as :func:`score_profiles` scores it, with the same settings and seed (its own
    features: ``features_a``, ``features_b``); per perturbation, delta = mAP_b - mAP_a. The overall
    test flips the sign of whole *units*: the components of strata (plates linked by a perturbation
    with replicates on several), so the perturbations of a plate, which share its controls and its
    nuisance, are swapped together (:mod:`apnull.score.nulls.compare`).

    Parameters
    ----------
    a, b : DataFrame
        The two tables: one row per well, the same wells in any order; feature columns may differ.
    key : str or list of str
        Column(s) identifying a well in both tables (e.g. plate and well); compared as text.
    perturbation, control, stratum, similarity, permutations, seed, alpha, threads, workers, scheduler,
    progress, budget
        As in :func:`score_profiles`, applied to both tables (``permutations`` also sets the random
        flips when there are too many units to enumerate them all; "all" then means "auto").
    features_a, features_b : None, list of str or str
        Each table's features, as ``features`` of :func:`score_profiles`; key columns are never features.
    nan : {"error", "drop-features", "drop-rows"}
        As in :func:`score_profiles`, for each table; "drop-rows" leaves a well with a NaN or infinite
        feature value on either side out of both (named in ``left_out``), so both score the same wells.
    normalize : {"none", "controls", "plate"}
        As in :func:`score_profiles`, each table normalised per plate against its own controls (or all
        its rows); with ``nan="drop-rows"`` the wells are left out of both tables first, so the
        statistics read the wells both sides score.
    unmatched : {"error", "drop"}
        Wells with a blank or repeated key, in one table only, or whose perturbation or stratum differ
        between the tables: a ValueError naming them, or ("drop") left out of both and named.

    Returns
    -------
    CompareResult
        ``groups``: [<perturbation column(s)>, n_replicates, mAP_a, mAP_b, delta, p_value_a, q_value_a,
        p_value_b, q_value_b, retrieved, unit], one row per perturbation scored in both, sorted by delta
        then name; mAP, p and q values are those of ``a.groups`` and ``b.groups`` (the two
        ``score_profiles`` results, kept as ``a`` and ``b``); ``retrieved`` is one of :data:`RETRIEVED`
        (q_value <= alpha); ``unit`` names the unit (its first stratum). ``summary``: n_perturbations,
        units, mean_delta, ci_low, ci_high (the 95% interval inverting the flip test), p_value
        (two-sided: both retrieve equally well), flips and exact (all 2^U flips, or random ones),
        smallest_p (2 / 2^U), retrieved_a, retrieved_b, both, a_only, b_only, neither,
        retrieved_difference ((retrieved_b - retrieved_a) / n_perturbations), retrieved_p_value (the
        same flips on each unit's b_only - a_only), alpha, note. With one unit there is no test:
        p-values and interval are NaN and ``note`` says why; with fewer than 6 units the interval is
        NaN (the test cannot reach 0.05). ``test`` names the test of the mean delta (:data:`TESTS`,
        chosen by :func:`which_test`): with fewer than 6 units and at least 10 plates (a crossed screen,
        every compound on several plates) the plate-clustered t test of :mod:`.nulls.crossed` gives
        p_value and interval (``flips`` 0), and the retrieved counts get no test (``retrieved_note``
        says why); ``plates`` counts the strata. ``left_out``: [table, <key columns>, reason] (a key column
        named ``table`` or ``reason`` is carried as ``table_input`` / ``reason_input``); ``warnings``;
        ``settings``.

    Raises
    ------
    ValueError
        Anything :func:`score_profiles` raises for either table (prefixed "table A:" or "table B:"),
        and the well-matching problems above with ``unmatched="error"``.
    """
    opts = RunOptions.checked(seed=seed, permutations=permutations, alpha=alpha, threads=threads, workers=workers,
                              scheduler=scheduler, progress=progress, budget=budget)
    check_choice(nan, NAN_MODES, "nan")
    check_choice(similarity, SCORE_SIMILARITIES, "similarity")
    pcols = [perturbation] if isinstance(perturbation, str) else list(perturbation or [])
    if not pcols:
        raise ValueError("perturbation must name a column (or columns) of both tables")
    roles = {c: "perturbation" for c in pcols}
    roles.setdefault(stratum, "stratum")
    check_choice(normalize, NORMALIZE, "normalize")
    with starting(opts.scheduler, opts.workers) as client:  # one dask client for both tables; a local cluster
        # starts while the wells are matched
        matched = match_wells(a, b, key, roles, unmatched)
        keys = [key] if isinstance(key, str) else list(key)
        labels = set(pcols) | ({stratum} if stratum is not None else set())
        binary = similarity in BINARY
        fa, fb = (_features(side, t, f, labels, keys, binary) for side, t, f in (("A", matched.a, features_a),
                                                                                  ("B", matched.b, features_b)))
        ta, tb, dropped, warnings = drop_missing_wells(matched, fa[0], fb[0], keys, nan)
        warnings = matched.warnings + warnings
        check_relabelled_controls(a, b, ta[0], tb[0], pcols[0], control, matched.relabelled)
        blank_a, blank_b = (has_blank_labels(t[0], pcols, stratum) for t in (ta, tb))
        ta, tb = set_aside(a, ta[1], pcols), set_aside(b, tb[1], pcols)  # rows keep the file's own numbers
        left_out = pd.concat([matched.left_out, dropped], ignore_index=True) if len(dropped) else matched.left_out
        common = dict(perturbation=perturbation, control=control, stratum=stratum, similarity=similarity, nan=nan,
                      normalize=normalize,
                      permutations=opts.permutations, seed=opts.seed, alpha=opts.alpha, threads=opts.threads,
                      progress=opts.progress, budget=opts.deadline)  # one clock for both tables and the tests
        ra = _side("A", ta, fa, common, client(), quiet=ta is not a and not blank_a)
        rb = _side("B", tb, fb, common, client(), quiet=tb is not b and not blank_b)
    pairs = _pairs(ra, rb, ta, pcols, stratum)
    summary, notes = _summary(pairs, opts)
    groups = _group_table(pairs, ra)
    warnings += [f"A: {w}" for w in ra.warnings] + [f"B: {w}" for w in rb.warnings] + pairs["notes"] + notes
    settings = dict(key=keys, perturbation=perturbation, control=[control] if isinstance(control, str) else list(control),
                    stratum=stratum, features_a=features_a, features_b=features_b, similarity=similarity, nan=nan,
                    normalize=normalize,
                    unmatched=unmatched, permutations=opts.permutations, seed=opts.seed, alpha=opts.alpha,
                    perturbation_column=ra.settings["perturbation_column"], level=LEVEL,
                    unit="component of strata" if stratum is not None else "whole table (no stratum)",
                    a=ra.settings, b=rb.settings)
    if opts.budget is not None:
        settings["budget"] = opts.budget
    return CompareResult(groups, summary, left_out, warnings, settings, ra, rb)


def summary_line(summary: dict) -> str:
    """The answer in one sentence: which pipeline retrieves better, by how much, and how sure."""
    d, p, units = summary["mean_delta"], summary["p_value"], summary["units"]
    if p != p:
        return (f"no test possible: mean delta (B - A) = {d:+.4f} over {summary['n_perturbations']:,} "
                f"perturbations; {summary['note']}")
    ci = ("" if summary["ci_low"] != summary["ci_low"] else
          f", {LEVEL:.0%} interval {summary['ci_low']:+.4f} to {summary['ci_high']:+.4f}")
    if summary.get("test") == TESTS[1]:
        how = f"plate-clustered t test, {summary['plates']:,} plates, {summary['plates'] - 1:,} degrees of freedom"
    else:
        how = (f"all {summary['flips']:,} sign flips of {units:,} units" if summary["exact"] else
               f"{summary['flips']:,} random sign flips of {units:,} units")
    verdict = ("B retrieves better than A" if d > 0 else "A retrieves better than B") if p <= 0.05 else \
        "no difference shown between A and B"
    return f"{verdict}: mean delta (B - A) = {d:+.4f}{ci}; p = {p:.3g} ({how})"


def which_test_of(table, perturbation="Metadata_pert", control="DMSO", stratum=None) -> tuple:
    """(test, why, plates) of :func:`which_test` for a table before any scoring (what the page shows before
    Compare): the units and plates of its perturbations (every row whose perturbation is not a control)."""
    pcols = [perturbation] if isinstance(perturbation, str) else list(perturbation or [])
    controls = {control} if isinstance(control, str) else set(control)
    strata = _strata_of(table, pcols, stratum)
    keys = sorted(k for k in strata if not (len(k) == 1 and k[0] in controls))
    plates_of = [sorted(strata[k]) for k in keys]
    if not plates_of:
        return TESTS[2], "no perturbation besides the controls", 0
    _, members = units_of(plates_of)
    return which_test(len(members), plates_of)


# -- the stages of score_compare -------------------------------------------------------------------

#: Why a key column is not a feature (in ``columns_left_out`` of each side).
KEY_REASON = "key column: it pairs the wells of A and B, never a feature"


def _features(side: str, table, features, labels, keys, binary: bool) -> tuple:
    """(feature columns of ``table``, what to pass to score_profiles, None or {column: reason left out}
    when the key columns were taken out and a list is passed instead of the user's choice): a key
    column is never a feature, whatever the default, regex or list chose (it is taken out and named);
    an error names the table and its own option."""
    try:
        chosen, left = select_features(table, features, labels, binary)
    except ValueError as exc:
        raise ValueError(f"table {side}: {exc}") from None
    if not any(k in chosen for k in keys):
        return chosen, features, None
    reasons = dict(left)
    reasons.update((str(k), KEY_REASON) for k in keys if k in chosen)
    chosen = [c for c in chosen if c not in keys]
    if not chosen:
        raise ValueError(f"table {side}: its features are only key columns ({', '.join(map(repr, keys))}), which "
                         "are never features; choose other feature columns")
    return chosen, chosen, reasons


def _side(side: str, table, features: tuple, common: dict, client, quiet: bool = False) -> ScoreResult:
    """``score_profiles`` of one table (``features``: :func:`_features`'s answer); its errors say which
    table, and so does its progress. With a budget, table A may take half the time left and B the rest
    of the run's one deadline. Where the key columns were taken out of the features, the columns left
    out keep the reasons of the choice the user made (not "not in the features list"). ``quiet``: the
    only rows with an empty perturbation are the wells left out here (named already), so score's
    warning about them is dropped."""
    deadline, progress = common["budget"], common["progress"]
    common = dict(common, budget=deadline.share(0.5) if deadline is not None and side == "A" else deadline,
                  progress=Scoped(progress, f"table {side}") if progress is not None else None)
    try:
        res = score_profiles(table, features=features[1], scheduler=client, **common)
    except MissingValuesError as exc:  # keeps ``where``, so a page can name its own control
        raise MissingValuesError(f"table {side}: {exc}", f"table {side}: {exc.where}") from None
    except ValueError as exc:
        raise ValueError(f"table {side}: {exc}") from None
    if quiet:
        res.warnings[:] = [w for w in res.warnings if EMPTY_LABELS not in w]
    reasons = features[2]
    if reasons is not None:
        res.settings["columns_left_out"] = [dict(d, reason=reasons.get(d["column"], d["reason"]))
                                            for d in res.settings["columns_left_out"]]
    return res


def _text_keys(frame: pd.DataFrame, cols) -> list:
    """Each row's values of ``cols`` as a tuple of texts (:func:`labels_as_text`)."""
    return list(labels_as_text(frame[cols].reset_index(drop=True), cols).itertuples(index=False, name=None))


def _pairs(ra: ScoreResult, rb: ScoreResult, table, pcols, stratum) -> dict:
    """The perturbations scored on both sides, in order of their text key, with their units."""
    ca, cb = (r.settings["perturbation_column"] for r in (ra, rb))
    ca, cb = ([c] if isinstance(c, str) else list(c) for c in (ca, cb))
    ga, gb = ra.groups, rb.groups
    ka, kb = _text_keys(ga, ca), _text_keys(gb, cb)
    at_b = {k: i for i, k in enumerate(kb)}
    both = sorted((k, i, at_b[k]) for i, k in enumerate(ka) if k in at_b)
    notes = []
    alone = [k for k in ka if k not in at_b] + [k for k in kb if k not in set(ka)]
    if alone:
        notes.append(f"{len(alone):,} perturbation(s) scored in one table only were left out of the comparison: "
                     f"{', '.join(' | '.join(k) for k in alone[:5])}{' ...' if len(alone) > 5 else ''}")
    if not both:
        raise ValueError("no perturbation is scored in both tables: nothing to compare")
    strata = _strata_of(table, pcols, stratum)
    keys = [k for k, _, _ in both]
    plates = [sorted(strata.get(k, {""})) for k in keys]
    unit, members = units_of(plates)
    ia = np.array([i for _, i, _ in both], dtype=np.int64)
    ib = np.array([j for _, _, j in both], dtype=np.int64)
    sig_a = ga["significant"].to_numpy(dtype=bool)[ia]
    sig_b = gb["significant"].to_numpy(dtype=bool)[ib]
    delta = gb["mAP"].to_numpy(dtype=float)[ib] - ga["mAP"].to_numpy(dtype=float)[ia]
    return dict(keys=keys, ia=ia, ib=ib, unit=unit, members=members, plates=plates, delta=delta, sig_a=sig_a, sig_b=sig_b,
                p_a=ga["p_value"].to_numpy(dtype=float)[ia], p_b=gb["p_value"].to_numpy(dtype=float)[ib], gb=gb,
                notes=notes)


def _strata_of(table, pcols, stratum) -> dict:
    """{perturbation key (texts): set of its strata (texts; {""} without a stratum)} over every row."""
    cols = pcols + ([stratum] if stratum else [])
    rows = labels_as_text(table[cols].reset_index(drop=True), cols)
    strata: dict = {}
    for values in rows.itertuples(index=False, name=None):
        s = values[-1] if stratum else ""
        if s == s and s is not None:
            strata.setdefault(values[:len(pcols)], set()).add(s)
    return strata


def _flip_test(work, units: int, opts: RunOptions) -> tuple:
    """(p-value, flips, exact) of ``work``'s statistic: every flip when they are few enough, else random
    flips as ``opts.permutations`` says ("all" meaning "auto")."""
    exact = enumerable(units)
    rounds = rounds_of("all" if exact else ("auto" if opts.permutations == "all" else opts.permutations))
    res = resolve(flip_null(work, 0, exhaustive=exact), rounds, threads=1, budget=opts.deadline)
    return float(res.p_value[0]), int(res.drawn[0]), exact


def _summary(pairs: dict, opts: RunOptions) -> tuple:
    """(summary dict, notes) of the paired perturbations (see :func:`score_compare`)."""
    delta, unit, sig_a, sig_b = pairs["delta"], pairs["unit"], pairs["sig_a"], pairs["sig_b"]
    P, U = int(delta.size), len(pairs["members"])
    counts = np.bincount(unit, minlength=U)
    sums = np.bincount(unit, weights=delta, minlength=U)
    nan = math.nan
    p, flips, exact, rp, low, high, note = nan, 0, False, nan, nan, nan, ""
    notes = []
    test, why, plates = which_test(U, pairs["plates"])
    rnote = ""
    if test == TESTS[0]:
        work = FlipWork(sums[None, :], ["mean_delta"], opts.seed)
        p, flips, exact = _flip_test(work, U, opts)
        rp = _flip_test(RetrievedWork(pairs["p_a"], pairs["p_b"], unit, U, opts.alpha, opts.seed), U, opts)[0]
        low, high = flip_interval(sums, counts, work.keys[0], exhaustive=exact, draws=max(INTERVAL_DRAWS, flips),
                                  level=LEVEL)
        if U < MIN_UNITS:
            note = why
            notes.append(note)
    elif test == TESTS[1]:
        got = crossed_test(delta, pairs["plates"], level=LEVEL)
        p, low, high = got["p_value"], got["ci_low"], got["ci_high"]
        rnote = ("on a crossed screen Benjamini-Hochberg couples every plate, and the pipelines cannot be swapped "
                 "on single plates")
        notes.append(f"no paired test of the retrieved counts: {rnote}")
    else:
        note = why
        rnote = why
        notes.append(f"no p-value and no interval: {note}")
    both = int((sig_a & sig_b).sum())
    a_only, b_only = int((sig_a & ~sig_b).sum()), int((~sig_a & sig_b).sum())
    summary = dict(n_perturbations=P, units=U, mean_delta=float(delta.mean()), ci_low=low, ci_high=high,
                   p_value=p, flips=flips, exact=bool(exact), smallest_p=smallest_p(U) if U else nan,
                   retrieved_a=int(sig_a.sum()), retrieved_b=int(sig_b.sum()), both=both, a_only=a_only,
                   b_only=b_only, neither=P - both - a_only - b_only,
                   retrieved_difference=(int(sig_b.sum()) - int(sig_a.sum())) / P, retrieved_p_value=rp,
                   alpha=opts.alpha, note=note, test=test, plates=plates, retrieved_note=rnote)
    return summary, notes


def _group_table(pairs: dict, ra: ScoreResult) -> pd.DataFrame:
    """The per-perturbation table (see :func:`score_compare`), sorted by delta then name."""
    ga, gb, ia, ib = ra.groups, pairs["gb"], pairs["ia"], pairs["ib"]
    cols = ra.settings["perturbation_column"]
    cols = [cols] if isinstance(cols, str) else list(cols)
    out = pd.DataFrame({output_name(c, frozenset(GROUP_COLUMNS)): ga[c].to_numpy()[ia] for c in cols})
    sig_a, sig_b = pairs["sig_a"], pairs["sig_b"]
    names = [m[0] if len(m) == 1 else f"{m[0]} (+{len(m) - 1} strata)" for m in pairs["members"]]
    names = ["(whole table)" if n == "" else n for n in names]
    out["n_replicates"] = ga["n_replicates"].to_numpy()[ia]
    out["mAP_a"] = ga["mAP"].to_numpy()[ia]
    out["mAP_b"] = gb["mAP"].to_numpy()[ib]
    out["delta"] = pairs["delta"]
    out["p_value_a"], out["q_value_a"] = ga["p_value"].to_numpy()[ia], ga["q_value"].to_numpy()[ia]
    out["p_value_b"], out["q_value_b"] = gb["p_value"].to_numpy()[ib], gb["q_value"].to_numpy()[ib]
    out["retrieved"] = np.select([sig_a & sig_b, sig_a, sig_b], list(RETRIEVED[:3]), RETRIEVED[3])
    out["unit"] = [names[u] for u in pairs["unit"]]
    order = np.lexsort((np.arange(len(out)), out["delta"].to_numpy()))  # pairs come in key order already
    return out.iloc[order].reset_index(drop=True)
