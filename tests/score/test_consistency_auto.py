"""Adaptive permutations of the consistency null: sequential p-values, rounds, determinism, validity."""

import numpy as np
import pandas as pd
import pytest
from scipy.stats import binom
from test_consistency import _table

from apnull.law import count_reached
from apnull.score import digits_screen, score_consistency
from apnull.score.engine import sequential as _adaptive
from apnull.score.kernels import labelsets as K
from apnull.score.nulls.labelsets import LabelWork, label_key
from apnull.score.nulls.labelsets import label_null as make_null
from apnull.score.table.profiles import prepare_profiles
from test_consistency import label_null

NO_PERMS = np.zeros((0, 0), dtype=np.int64)


def more(t, counter, key, gperm, target, drawn, reached, obs, h, rows, lists):
    """(counter, drawn, reached, stopped) of label t's stream continued to ``target`` draws."""
    return K.continue_label(np.int64(t), key, np.uint64(counter), gperm, np.int64(drawn), np.int64(reached),
                            np.int64(target), np.int64(h), 1e-12, float(obs), rows, lists, np.empty(0), NO_PERMS)

KW = dict(perturbation="Metadata_pert", annotation="Metadata_target", label_sep="|", query_pvalues=False)


def _prof(df):
    prof = prepare_profiles(df, "Metadata_pert", "Metadata_target", "|", "median", None, None, None, "cosine", 0.05)
    return prof, K.similarity_rows(prof.X, prof.kind)


def _observed(res, label):
    return float(res.labels.set_index("Metadata_target").loc[label, "mAP"])


def test_continued_stream_is_the_fixed_stream():
    """Two calls of label_null_more draw what one call draws, and what label_null draws; the
    Besag-Clifford stop falls on the draw of the h-th exceedance."""
    df = _table(n_pert=24, seed=2)
    prof, rows = _prof(df)
    res = score_consistency(df, permutations=9, **KW)
    t = prof.labels.index("A")
    obs = _observed(res, "A")
    key = label_key(7, prof.labels[t])
    G = prof.lists.gm_ptr.size - 1
    gperm = np.arange(G)
    null = label_null(t, key, 300, rows, prof.lists)
    c, L, g, stop = more(t, 0, key, gperm, 120, 0, 0, obs, 10**9, rows, prof.lists)
    assert (L, g, stop) == (120, count_reached(null[:120], obs), False)
    c, L, g, stop = more(t, c, key, gperm, 300, L, g, obs, 10**9, rows, prof.lists)
    assert (L, g, stop) == (300, count_reached(null, obs), False)
    h = 5
    hits = np.flatnonzero(null >= obs - 1e-12)
    assert hits.size >= h
    _, L, g, stop = more(t, 0, key, np.arange(G), 300, 0, 0, obs, h, rows, prof.lists)
    assert (L, g, stop) == (hits[h - 1] + 1, h, True)


def test_auto_pvalues_follow_the_definition_and_null_maps():
    """Each label: p = H / L when stopped at the H-th exceedance, else (1 + g) / (1 + L), with g counted
    on the first L draws of its stream (null_maps); bound where g = 0."""
    df = _table(n_pert=30, seed=1)
    res = score_consistency(df, seed=3, **KW)
    assert res.settings["permutations"] == "auto"
    assert list(res.labels.columns[-2:]) == ["permutations", "p_value_bound"]
    for row in res.labels.itertuples():
        null = res.null_maps(row.Metadata_target)
        g = count_reached(null, row.mAP)
        assert null.size == row.permutations
        if g == _adaptive.H:  # stopped at the H-th exceedance
            assert null[-1] >= row.mAP - 1e-12 and row.p_value == _adaptive.H / null.size
        else:
            assert null.size in _adaptive.schedule() and row.p_value == (1 + g) / (1 + null.size)
        assert row.p_value_bound == (g == 0)


def test_rounds_equal_one_fixed_run():
    """With the Besag-Clifford stop out of reach (h huge) and refinement forced to the cap, an adaptive
    run in rounds counts what one fixed run of cap permutations counts."""
    df = _table(n_pert=20, seed=4)
    prof, rows = _prof(df)
    fixed = score_consistency(df, permutations=400, seed=5, **KW)
    obs = {prof.labels.index(r.Metadata_target): r.mAP for r in fixed.labels.itertuples()}
    ts = sorted(obs)
    res = _adaptive.resolve(make_null(LabelWork(prof, rows, ts), [obs[t] for t in ts], 5),
                            _adaptive.rounds_of("auto", cap=400, h=10**9), threads=1, cap=400, delta=1.0, levels=(1.0,))
    auto = {t: (res.p_value[i], res.drawn[i], res.bound[i]) for i, t in enumerate(ts)}
    for t, (p, L, bound) in auto.items():
        row = fixed.labels.set_index("Metadata_target").loc[prof.labels[t]]
        assert L in (100, 400)
        if L == 400:
            assert p == row.p_value and bound == row.p_value_bound


def test_auto_identical_across_threads_row_order_and_labels():
    df = _table(n_pert=30, seed=6)
    one = score_consistency(df, seed=1, threads=1, **KW)
    two = score_consistency(df.sample(frac=1.0, random_state=3), seed=1, threads=2, **KW)
    pd.testing.assert_frame_equal(one.labels, two.labels, check_exact=True)
    other = score_consistency(df, seed=2, threads=1, **KW)
    assert not one.labels["p_value"].equals(other.labels["p_value"]) or len(one.labels) == 0


def test_auto_dask_equals_in_process():
    from dask.distributed import Client, LocalCluster
    from apnull.score.engine.connect import LOCAL_CLUSTER_HTTP

    df = _table(n_pert=24, seed=8)
    local = score_consistency(df, seed=2, **KW)
    with LocalCluster(n_workers=1, threads_per_worker=2, processes=False, **LOCAL_CLUSTER_HTTP) as cluster, \
            Client(cluster) as client:
        pd.testing.assert_frame_equal(local.labels, score_consistency(df, seed=2, scheduler=client, **KW).labels,
                                      check_exact=True)


def test_auto_is_valid_on_random_labels_of_real_profiles():
    """Every row of the bundled screen is a profile; labels drawn at random (4 profiles each) are
    true nulls: P(p <= a) <= a within a binomial band, at a = 0.05 and 0.2."""
    table = digits_screen(seed=0)
    feats = [c for c in table.columns if c.startswith("px_")]
    ps = []
    for rep in range(8):
        rng = np.random.default_rng(100 + rep)
        df = table[feats].copy()
        df.insert(0, "p", [f"r{i:03d}" for i in range(len(df))])
        df.insert(1, "t", [f"L{i // 4:02d}" for i in rng.permutation(len(df))])
        res = score_consistency(df, "p", "t", seed=rep, query_pvalues=False)
        ps.extend(res.labels["p_value"].tolist())
    ps = np.array(ps)
    assert ps.size == 8 * 31
    for a in (0.05, 0.2):
        k = int((ps <= a).sum())
        assert k <= binom.ppf(0.999, ps.size, a), (a, k, ps.size)


@pytest.mark.parametrize("bad", ["fast", "all", 0, -3, 2.5, True, 10**7])
def test_bad_permutations(bad):
    with pytest.raises(ValueError, match="permutations"):
        score_consistency(_table(), permutations=bad, **KW)


def test_still_open_is_undecided_below_the_cap():
    g, L = np.array([0, 3, 20, 1, 0]), np.array([100, 100, 400, 1000, 1000])
    lo, hi = _adaptive.clopper_pearson(g, L, 1e-3 / (5 * 3))
    expect = _adaptive.undecided(lo, hi) & (L < 1000)
    assert _adaptive.still_open(g, L, 3, cap=1000, delta=1e-3).tolist() == expect.tolist()
    assert not _adaptive.still_open(g, L, 3, cap=100, delta=1e-3).any()


def test_still_open_takes_an_enumerated_unit_as_a_point():
    """A unit whose counts are its enumerated law (``exact``) is never refined, and its BH decision
    counts p = g / L itself, not an interval: here 100 units at p = 0.01 (BH rejects them all at 0.05,
    each undecided on its interval from 1 hit in 100 draws) and one unit with g = 1 of 100."""
    g, L = np.ones(101, dtype=np.int64), np.full(101, 100)
    assert _adaptive.still_open(g, L, 3).all()  # on intervals every one is undecided
    exact = np.ones(101, dtype=bool)
    exact[0] = False
    out = _adaptive.still_open(g, L, 3, exact=exact)
    assert not out[1:].any()
    lo, hi = _adaptive.clopper_pearson(g, L, 1e-3 / (101 * 3))
    p = g / L
    want = _adaptive.undecided(np.r_[lo[:1], p[1:]], np.r_[hi[:1], p[1:]])[0]
    assert out[0] == want
