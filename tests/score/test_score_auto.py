"""Adaptive permutations and the conditional per-query null: definitions, validity, determinism, limits."""

from __future__ import annotations

import itertools
from pathlib import Path

import numpy as np
import pandas as pd
import pytest
from scipy.stats import binom, binomtest
from score_helpers import perturbation_case, reference_ap, run_perturbation, tiny_screen

from apnull.law import count_reached
from apnull.score import digits_screen, score_profiles
from apnull.score.engine import sequential as _adaptive
from apnull.score.nulls.permutation import ScreenWork, mean_null
from apnull.score.table.screen import prepare_screen

KW = dict(perturbation="Metadata_perturbation", stratum="Metadata_plate")


def test_schedule_and_clopper_pearson():
    assert _adaptive.schedule() == [100, 400, 1600, 6400, 25600, 102400, 409600, 1_000_000]
    assert _adaptive.schedule(cap=400) == [100, 400]
    for g, L in [(0, 100), (3, 100), (20, 57), (100, 100)]:
        lo, hi = _adaptive.clopper_pearson(g, L, 0.01)
        ci = binomtest(g, L).proportion_ci(confidence_level=0.99, method="exact")
        assert lo == pytest.approx(ci.low, abs=1e-12) and hi == pytest.approx(ci.high, abs=1e-12)


def test_undecided_is_between_bh_on_the_two_ends():
    lo = np.array([0.0, 0.0, 0.2, 1e-6])
    hi = np.array([1e-4, 0.5, 0.9, 0.04])
    # BH at 0.05 on hi rejects unit 0 only; on lo it rejects 0, 1, 3 (and 2: 0.2 > 0.05): undecided 1, 3
    assert _adaptive.undecided(lo, hi, (0.05,)).tolist() == [False, True, False, True]


def test_sequential_pvalue_definition():
    p, bound = _adaptive.sequential_pvalue([20, 3, 0], [57, 999, 1000], [True, False, False])
    np.testing.assert_allclose(p, [20 / 57, 4 / 1000, 1 / 1001])
    assert bound.tolist() == [False, False, True]


def _state(J):
    return {"counters": np.zeros(J, dtype=np.uint64), "drawn": np.zeros(1, np.int64),
            "reached": np.zeros(1, np.int64)}


def test_rounds_continue_one_stream():
    """Round r + 1 continues the streams: two calls draw what one call draws, and what a fixed run draws."""
    screen = prepare_screen(digits_screen(seed=5), "Metadata_perturbation", "DMSO", "Metadata_plate", None, "cosine")
    i = next(j for j, p in enumerate(screen.perts) if p.name == "null_05")
    reps, controls, kind, keys = perturbation_case(screen, i, 11)
    _, _, m, null = run_perturbation(reps, controls, kind, 300, keys)
    st = _state(keys.size)
    run_perturbation(reps, controls, kind, 120, keys, state=st, h=10**9)
    assert (st["drawn"][0], st["reached"][0], st["stopped"][0]) == (120, count_reached(null[:120], m), False)
    _, _, m2, _ = run_perturbation(reps, controls, kind, 300, keys, state=st, h=10**9)
    assert m2 == m and (st["drawn"][0], st["reached"][0], st["stopped"][0]) == (300, count_reached(null, m), False)
    # Besag-Clifford: stops at the draw of the h-th exceedance
    st = _state(keys.size)
    run_perturbation(reps, controls, kind, 300, keys, state=st, h=5)
    hits = np.flatnonzero(null >= m - 1e-12)
    assert st["stopped"][0] and st["reached"][0] == 5 and st["drawn"][0] == hits[4] + 1


def test_auto_pvalues_match_their_definition():
    """Each reported p-value is H / L (stopped at the H-th exceedance) or (1 + g) / (1 + L) over the
    first L draws of the perturbation's stream, L the reported permutations."""
    res = score_profiles(digits_screen(seed=6), permutations="auto", seed=2, **KW)
    assert res.settings["permutations"] == "auto"
    for _, row in res.groups.iterrows():
        null = res.null_maps(row["Metadata_perturbation"])
        L = int(row["permutations"])
        assert null.size == L and 1 <= L <= _adaptive.CAP
        g = count_reached(null, row["mAP"])
        stopped = g == _adaptive.H and null[-1] >= row["mAP"] - 1e-12
        want = g / L if stopped else (1 + g) / (1 + L)
        assert row["p_value"] == pytest.approx(want, rel=1e-12)
        assert bool(row["p_value_bound"]) == (g == 0)
    strong = res.groups.set_index("Metadata_perturbation").loc[["digit_3", "digit_8"]]
    assert (strong["permutations"] > 999).all() and (strong["p_value"] < 1e-3).all()


def test_cap_gives_a_bound():
    screen = prepare_screen(digits_screen(), "Metadata_perturbation", "DMSO", "Metadata_plate", None, "cosine")
    res = _adaptive.resolve(mean_null(ScreenWork(screen, 0)), _adaptive.rounds_of("auto", cap=400), threads=1, cap=400)
    names = [p.name for p in screen.perts]
    i = names.index("digit_3")
    assert (res.drawn[i], res.bound[i]) == (400, True) and res.p_value[i] == 1 / 401
    assert res.drawn.max() <= 400


def _conditional_exact_p(table, row):
    """Exact conditional p of the query at ``row``: every swap of its positives enumerated."""
    X = table.filter(regex="^f").to_numpy(float)
    X = X / np.linalg.norm(X, axis=1, keepdims=True)
    lab = table["Metadata_pert"].to_numpy()
    plate = table["Metadata_plate"].to_numpy()
    t = lab[row]
    others = [r for r in np.flatnonzero(lab == t) if r != row]
    pools = {s: [r for r in np.flatnonzero(((lab == t) | (lab == "DMSO")) & (plate == s)) if r != row]
             for s in sorted(set(plate[others]))}
    sim = X[row] @ X.T

    def ap_of(pos):
        pool_q = np.flatnonzero(((lab == t) | (lab == "DMSO")) & (plate == plate[row]))
        neg = [r for r in pool_q if r != row and r not in pos]
        return reference_ap(sim, list(pos), neg)

    obs = ap_of(others)
    per = [list(itertools.combinations(pools[s], int(np.sum(plate[others] == s)))) for s in pools]
    vals = [ap_of([r for part in combo for r in part]) for combo in itertools.product(*per)]
    return float(np.mean(np.array(vals) >= obs - 1e-12))


@pytest.mark.parametrize("seed", [0, 1])
def test_conditional_null_matches_enumeration(seed):
    rng = np.random.default_rng(seed)
    table = tiny_screen(rng, {"A": (6, {"t": 2, "u": 1}), "B": (5, {"t": 1, "u": 2})})
    B = 4000
    res = score_profiles(table, perturbation="Metadata_pert", stratum="Metadata_plate", permutations=B, seed=seed)
    q = res.queries
    assert set(q["null"]) == {"conditional permutation"} and (q["permutations"] == B).all()
    for _, r in q.iterrows():
        p = _conditional_exact_p(table, int(r["row"]))
        sd = np.sqrt(p * (1 - p) / B) + 1 / B
        assert abs(r["p_value"] - p) < 5 * sd, (r["row"], r["p_value"], p)


def test_exact_law_where_positives_share_the_plate():
    rng = np.random.default_rng(3)
    table = tiny_screen(rng, {"A": (8, {"t": 3}), "B": (7, {"u": 2, "v": 1}), "C": (6, {"v": 1})})
    q = score_profiles(table, perturbation="Metadata_pert", stratum="Metadata_plate", permutations=99).queries
    assert q.groupby("Metadata_pert")["null"].first().to_dict() == {
        "t": "exact law", "u": "exact law", "v": "conditional permutation"}
    assert (q.loc[q["null"] == "exact law", "permutations"] == 0).all()


def _plate_effect_screen(rng, perts=150, plates=4, controls=(20, 20, 20, 20), effect=0.8, d=12):
    """True-null screen, one replicate per plate, a strong additive plate effect."""
    rows, X = [], []
    shift = rng.normal(scale=effect, size=(plates, d))
    for s in range(plates):
        for _ in range(controls[s]):
            rows.append(("DMSO", s))
        for t in range(perts):
            rows.append((f"t{t:03d}", s))
    for _, s in rows:
        X.append(shift[s] + rng.normal(size=d))
    df = pd.DataFrame(rows, columns=["Metadata_pert", "Metadata_plate"])
    return pd.concat([df, pd.DataFrame(np.array(X), columns=[f"f{i}" for i in range(d)])], axis=1)


def test_validity_on_a_true_null_screen_with_plate_effect():
    """P(p <= a) <= a within the 99.9% binomial band, for mAP and per-query p-values (auto)."""
    table = _plate_effect_screen(np.random.default_rng(8))
    res = score_profiles(table, perturbation="Metadata_pert", stratum="Metadata_plate", seed=5)
    for p in (res.groups["p_value"], res.queries["p_value"]):
        for a in (0.05, 0.2):
            hi = binom.ppf(0.9995, p.size, a) / p.size
            assert (p <= a).mean() <= hi
    # the conditional null is not the conservative exact law: near-nominal at 0.2 on the queries
    lo = binom.ppf(0.0005, res.queries.shape[0], 0.2) / res.queries.shape[0]
    assert (res.queries["p_value"] <= 0.2).mean() >= lo


def test_same_results_for_any_threads_and_row_order():
    # three null perturbations: first-round stops and refinement rounds still (20 to 1,600 draws), and the
    # per-query draws, in 0.2 s instead of 4 s of CPU a run
    table = digits_screen(seed=7, n_null=3)
    kw = dict(KW, permutations="auto", seed=4)
    one = score_profiles(table, threads=1, **kw)
    two = score_profiles(table.sample(frac=1.0, random_state=1), threads=2, **kw)
    assert one.groups["permutations"].max() > 100 and one.queries["permutations"].sum() > 0  # rounds ran
    cols = ["Metadata_perturbation", "mAP", "p_value", "permutations", "p_value_bound"]
    pd.testing.assert_frame_equal(one.groups[cols], two.groups[cols], check_exact=True)
    a = one.queries.drop(columns="row").sort_values(["Metadata_perturbation", "n", "ap"]).reset_index(drop=True)
    b = two.queries.drop(columns="row").sort_values(["Metadata_perturbation", "n", "ap"]).reset_index(drop=True)
    pd.testing.assert_frame_equal(a.drop(columns="q_value"), b.drop(columns="q_value"), check_exact=True)


@pytest.mark.parametrize("differ", [False, True])
def test_dask_equals_in_process(differ):
    """Dask gives the in-process rounds bit for bit, with the positives_differ_by rule too."""
    from dask.distributed import Client, LocalCluster
    from apnull.score.engine.connect import LOCAL_CLUSTER_HTTP

    table = _well_screen(1) if differ else digits_screen(seed=4)
    kw = dict(KW, permutations="auto", seed=3)
    if differ:
        kw.update(positives_differ_by="Metadata_well")
    local = score_profiles(table, **kw)
    with LocalCluster(n_workers=2, threads_per_worker=1, processes=False, **LOCAL_CLUSTER_HTTP) as cluster, \
            Client(cluster) as client:
        far = score_profiles(table, scheduler=client, **kw)
    pd.testing.assert_frame_equal(local.groups, far.groups, check_exact=True)
    pd.testing.assert_frame_equal(local.queries, far.queries, check_exact=True)


@pytest.mark.parametrize("bad, msg", [("automatic", "'auto'"), (0, "between 1 and"), (2.5, "whole number"),
                                      (True, "whole number")])
def test_bad_permutations(bad, msg):
    with pytest.raises(ValueError, match=msg):
        score_profiles(digits_screen(), permutations=bad, **KW)


# -- positives_differ_by under permutations="auto" ----------------------------------------------------

def _well_screen(seed=0):
    """Four plates, each with 8 controls and one replicate of 6 perturbations; replicates of a
    perturbation share a well on two of the plates (so some positives are left out), and two
    perturbations are strongly alike across plates."""
    rng = np.random.default_rng(seed)
    rows = []
    for plate in range(4):
        rows += [("DMSO", f"p{plate}", f"c{i}") for i in range(8)]
        rows += [(f"t{t}", f"p{plate}", f"w{t}" if plate < 2 else f"w{t}_{plate}") for t in range(6)]
    df = pd.DataFrame(rows, columns=["Metadata_perturbation", "Metadata_plate", "Metadata_well"])
    X = rng.normal(size=(len(df), 6))
    for t in (0, 1):
        X[(df["Metadata_perturbation"] == f"t{t}").to_numpy()] += 2.0 * rng.normal(size=6)
    return pd.concat([df, pd.DataFrame(X, columns=[f"f{i}" for i in range(6)])], axis=1)


def test_auto_applies_positives_differ_by():
    """The adaptive rounds apply the pair rule: each p-value is its sequential definition over the first
    L draws of the rule's own null (``null_maps``), the observed scores are those of a fixed run, and no
    fallback to a fixed B is taken."""
    table = _well_screen()
    kw = dict(perturbation="Metadata_perturbation", stratum="Metadata_plate", seed=4,
              positives_differ_by="Metadata_well")
    res = score_profiles(table, permutations="auto", **kw)
    fixed = score_profiles(table, permutations=99, **kw)
    assert res.settings["permutations"] == "auto"
    assert not any("B = 999" in w for w in res.warnings)
    pd.testing.assert_series_equal(res.groups["mAP"], fixed.groups["mAP"])
    pd.testing.assert_series_equal(res.queries["ap"], fixed.queries["ap"])
    assert (res.queries["m"] < 3).any()  # the rule leaves positives out here
    for _, row in res.groups.iterrows():
        null = res.null_maps(row["Metadata_perturbation"])
        L = int(row["permutations"])
        assert null.size == L
        first = min(L, 99)  # the same stream: the first draws are the fixed run's
        np.testing.assert_array_equal(null[:first], fixed.null_maps(row["Metadata_perturbation"])[:first])
        g = count_reached(null, row["mAP"])
        stopped = g == _adaptive.H and null[-1] >= row["mAP"] - 1e-12
        assert row["p_value"] == pytest.approx(g / L if stopped else (1 + g) / (1 + L), rel=1e-12)
    strong = res.groups.set_index("Metadata_perturbation").loc[["t0", "t1"]]
    assert (strong["permutations"] > 99).all()


def test_clopper_pearson_is_scipy_stats_beta_ppf_bit_for_bit():
    """The intervals come from scipy.special.betaincinv (no scipy.stats import): the very values of
    scipy.stats.beta.ppf, the textbook Clopper-Pearson ends, over every count of small L and the ends and
    random counts of large L, at the levels the engine uses."""
    from scipy.stats import beta

    rng = np.random.default_rng(3)
    for L in [1, 2, 7, 100, 999, 6400, 10**6]:
        g = np.arange(L + 1) if L <= 999 else np.unique(np.r_[np.arange(200), rng.integers(0, L + 1, 2000),
                                                              L - np.arange(200)])
        g, Lf = g.astype(float), np.full(g.size, float(L))
        for err in [1e-3, 1e-6, 0.05 / (7 * 8), 1e-12]:
            lo, hi = _adaptive._interval(g, Lf, err)
            with np.errstate(invalid="ignore", divide="ignore"):
                ref_lo = np.where(g > 0, beta.ppf(err / 2, g, Lf - g + 1), 0.0)
                ref_hi = np.where(g < Lf, beta.ppf(1 - err / 2, g + 1, Lf - g), 1.0)
            assert np.array_equal(lo, np.nan_to_num(ref_lo, nan=0.0)) and np.array_equal(hi, np.nan_to_num(ref_hi, nan=1.0))


def test_an_adaptive_run_imports_no_scipy_stats():
    """scipy.stats takes about 1.2 s of CPU to import, and a run with permutations="auto" (block and crossed
    layouts) needs none of it: a fresh process scores both and has not imported it."""
    import subprocess
    import sys

    code = ("import sys\nfrom score_helpers import block_table, crossed_table\nfrom apnull.score import score_profiles\n"
            "for t in (block_table(plate_effect=0.3), crossed_table(compounds=30, plates=7)):\n"
            "    score_profiles(t, perturbation='cmp', stratum='plate', permutations='auto', seed=1)\n"
            "print('scipy.stats' in sys.modules, flush=True)\n")
    here = str(Path(__file__).parent)
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=600, cwd=here)
    assert out.stdout.strip() == "False", out.stdout + out.stderr


def test_clopper_pearson_of_many_units_equals_one_by_one():
    """Many units: each distinct (g, L) pair is computed once and spread; same values as unit by unit."""
    rng = np.random.default_rng(7)
    L = rng.choice([100, 400, 1600, 10**6], size=5000).astype(float)
    L[:300] = rng.integers(1, 3000, 300)
    g = np.minimum(rng.integers(0, 40, size=L.size), L)
    g[:40] = L[:40]  # every draw reached
    g[40:80] = 0
    lo, hi = _adaptive.clopper_pearson(g, L, 1e-6)
    for i in rng.choice(L.size, 200, replace=False).tolist() + list(range(80)):
        a, b = _adaptive.clopper_pearson(g[i:i + 1], L[i:i + 1], 1e-6)
        assert (lo[i], hi[i]) == (a[0], b[0])


@pytest.mark.parametrize("h", [1, 3, 7])
def test_single_stratum_stop_leaves_the_stream_where_one_draw_at_a_time_would(h):
    """One stratum (chunks of draws): a stop at the h-th exceedance leaves the stream right after that
    draw, so continuing it gives the draws and counts of one uninterrupted run."""
    table = tiny_screen(np.random.default_rng(h), {"a": (30, {"t": 4, "u": 3})}, d=3)
    screen = prepare_screen(table, "Metadata_pert", "DMSO", "Metadata_plate", None, "cosine")
    for i in range(len(screen.perts)):
        reps, controls, kind, keys = perturbation_case(screen, i, 5)
        _, _, m, null = run_perturbation(reps, controls, kind, 700, keys)
        whole = _state(1)
        run_perturbation(reps, controls, kind, 700, keys, state=whole, h=10**9, chunked=True)
        assert (whole["drawn"][0], whole["reached"][0], whole["stopped"][0]) == (700, count_reached(null, m), False)
        st = _state(1)
        run_perturbation(reps, controls, kind, 700, keys, state=st, h=h, chunked=True)
        hits = np.flatnonzero(null >= m - 1e-12)
        assert st["stopped"][0] and st["reached"][0] == h and st["drawn"][0] == hits[h - 1] + 1
        run_perturbation(reps, controls, kind, 700, keys, state=st, h=h, chunked=True)
        assert (st["drawn"][0], st["reached"][0], st["stopped"][0], st["counters"][0]) == (
            700, count_reached(null, m), False, whole["counters"][0])


def test_intervals_kept_over_rounds_are_clopper_pearson():
    """:class:`Intervals`, kept over a run's rounds (each distinct (g, L) computed once), gives every round
    the very values of :func:`clopper_pearson`; a new level starts afresh, and counts it cannot key (floats,
    L of 2^32 or more) are computed as clopper_pearson does."""
    rng = np.random.default_rng(5)
    memo = _adaptive.Intervals()
    g, L = np.zeros(3000, dtype=np.int64), np.zeros(3000, dtype=np.int64)
    for target in _adaptive.schedule(10**6)[:6]:
        step = rng.random(g.size) < 0.4 if L.any() else np.ones(g.size, dtype=bool)  # the units drawn again
        new = np.full(g.size, target) - L
        g = g + np.where(step, rng.binomial(new, rng.choice([0.001, 0.01, 0.3], g.size)), 0)
        L = np.where(step, target, L)
        for _ in range(2):  # the same round twice: every pair known the second time
            lo, hi = memo(g, L, 1e-6)
            want = _adaptive.clopper_pearson(g, L, 1e-6)
            assert np.array_equal(lo, want[0]) and np.array_equal(hi, want[1])
        seen = np.unique(np.c_[g, L], axis=0) if target == 100 else np.unique(np.r_[seen, np.c_[g, L]], axis=0)
        assert memo.keys.size == seen.shape[0]  # each pair met once
    lo, hi = memo(g, L, 2e-7)
    want = _adaptive.clopper_pearson(g, L, 2e-7)
    assert np.array_equal(lo, want[0]) and np.array_equal(hi, want[1])
    assert memo.keys.size == np.unique(np.c_[g, L], axis=0).shape[0]  # a new level: its own pairs only
    big = np.array([0, 3, 2**32 + 5])
    for args in ((g.astype(float), L.astype(float)), (np.minimum(big, 7), big)):
        lo, hi = memo(*args, 1e-6)
        want = _adaptive.clopper_pearson(*args, 1e-6)
        assert np.array_equal(lo, want[0]) and np.array_equal(hi, want[1])
