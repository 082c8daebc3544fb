"""Manhattan, Chebyshev (continuous features), Jaccard and Hamming (binary features) in ``score_profiles``.

The kernel's similarity against ``scipy.spatial.distance``; its blocks of four rows and the sorted
control tables against the one-at-a-time ``sim``, bit for bit; the preparation (power-of-two scaling,
binary features only for the binary kinds, true/false columns as 1/0); the scores against enumeration
of every assignment with binary ties; and against copairs where it has the distance (``distance=``).
"""

from __future__ import annotations

import itertools

import numpy as np
import pandas as pd
import pytest
from scipy.spatial.distance import cdist

from apnull.law import VALUE_TOL
from apnull.score import SCORE_SIMILARITIES, score_profiles, tie_aware_ap
from apnull.score.kernels import controls as ctl, pool as P, similarity
from apnull.score.table.screen import KINDS

KW = dict(perturbation="Metadata_pert", stratum="Metadata_plate", control="DMSO")
#: scipy's name of each new similarity, and the kernel value as minus the distance (or 1 - distance).
SCIPY = {"manhattan": "cityblock", "chebyshev": "chebyshev", "jaccard": "jaccard", "hamming": "hamming"}


def _rows(rng, n, d, binary):
    return rng.integers(0, 2, size=(n, d)).astype(float) if binary else rng.normal(size=(n, d))


@pytest.mark.parametrize("name", list(SCIPY))
def test_sim_against_scipy(name):
    rng = np.random.default_rng(1)
    binary = name in ("jaccard", "hamming")
    X = _rows(rng, 30, 9, binary)
    X[3] = 0.0  # an all-zero row: Jaccard 1 with another one, 0 with any other row
    X[7] = 0.0
    kind = KINDS[name]
    got = np.array([[similarity.sim(X, i, X, j, kind) for j in range(30)] for i in range(30)])
    dist = cdist(X, X, metric=SCIPY[name])
    if name == "jaccard":
        want = 1.0 - dist
    elif name == "hamming":
        want = -dist * X.shape[1]  # the kernel counts differing features
    else:
        want = -dist
    assert np.allclose(got, want, rtol=0, atol=1e-12)
    assert np.array_equal(got, got.T)  # exactly symmetric
    # the ranking of every row is scipy's (ties included, binary counts are exact)
    for i in range(30):
        assert np.array_equal(np.argsort(-got[i], kind="stable"), np.argsort(-np.round(want[i], 12), kind="stable"))


@pytest.mark.parametrize("name", list(SCIPY))
def test_blocks_and_tables_equal_sim_bit_for_bit(name):
    rng = np.random.default_rng(2)
    kind = KINDS[name]
    binary = name in ("jaccard", "hamming")
    for _ in range(10):
        n, k, d = int(rng.integers(2, 25)), int(rng.integers(1, 9)), int(rng.integers(1, 12))
        Xc, Xr = _rows(rng, n, d, binary), _rows(rng, k, d, binary)
        rows, _ = ctl.pair_rows(Xc, kind)
        want = np.sort(np.array([[similarity.sim(Xc, a, Xc, b, kind) for b in range(n) if b != a]
                                 for a in range(n)]), axis=1)
        assert np.array_equal(rows, want)
        g_rep = np.r_[np.arange(k), np.full(n, -1)].astype(np.int64)
        g_row = np.r_[np.full(k, -1), np.arange(n)].astype(np.int64)
        got = P.replicate_sims(Xr, Xc, np.ascontiguousarray(Xc.T), g_rep, g_row, kind)
        for r in range(k):
            for g in range(k + n):
                ref = similarity.sim(Xr, r, Xr, g, kind) if g < k else similarity.sim(Xr, r, Xc, g - k, kind)
                assert got[r, g] == ref


def _screen(rng, layout, d, binary):
    rows = []
    for s, (nc, perts) in layout.items():
        rows += [("DMSO", s)] * nc
        for p, k in perts.items():
            rows += [(p, s)] * k
    X = _rows(rng, len(rows), d, binary)
    meta = pd.DataFrame(rows, columns=["Metadata_pert", "Metadata_plate"])
    return pd.concat([meta, pd.DataFrame(X, columns=[f"f{i}" for i in range(d)])], axis=1)


def _similarity_matrix(table, name):
    X = table.filter(regex="^f").to_numpy(float)
    dist = cdist(X, X, metric=SCIPY[name])
    return 1.0 - dist if name == "jaccard" else -dist


def _brute_controls(table, pert, name):
    """(mAP, exact p) of ``pert`` under the control design, every assignment enumerated, with scipy's
    similarities and the tie-aware AP."""
    S = _similarity_matrix(table, name)
    lab, plate = table["Metadata_pert"].to_numpy(), table["Metadata_plate"].to_numpy()
    strata = sorted(set(plate[lab == pert]))
    pools = {s: np.flatnonzero((plate == s) & ((lab == pert) | (lab == "DMSO"))) for s in strata}
    ks = {s: int(np.sum((plate == s) & (lab == pert))) for s in strata}

    def mean_ap(chosen):
        labelled = np.concatenate([chosen[s] for s in strata])
        aps = []
        for q in labelled:
            pos = [x for x in labelled if x != q]
            neg = [x for x in pools[plate[q]] if x not in set(labelled)]
            rel = np.r_[np.ones(len(pos), bool), np.zeros(len(neg), bool)]
            aps.append(tie_aware_ap(np.round(np.r_[S[q, pos], S[q, neg]], 12), rel))
        return float(np.mean(aps))

    obs = mean_ap({s: np.flatnonzero((plate == s) & (lab == pert)) for s in strata})
    null = np.array([mean_ap({s: np.array(c) for s, c in zip(strata, combo)})
                     for combo in itertools.product(*[itertools.combinations(pools[s], ks[s]) for s in strata])])
    return obs, float(np.mean(null >= obs - VALUE_TOL))


@pytest.mark.parametrize("name", list(SCIPY))
def test_scores_equal_enumeration_with_ties(name):
    """Binary features tie often (few distinct Jaccard or Hamming values): the tie-aware AP of every
    assignment, enumerated, gives the exact p-value."""
    rng = np.random.default_rng(4)
    binary = name in ("jaccard", "hamming")
    table = _screen(rng, {"P1": (5, {"a": 2, "b": 3}), "P2": (4, {"a": 2, "c": 2})}, 4 if binary else 3, binary)
    res = score_profiles(table, **KW, similarity=name, permutations="all")
    for _, g in res.groups.iterrows():
        obs, p = _brute_controls(table, g["Metadata_pert"], name)
        assert g["mAP"] == pytest.approx(obs, abs=1e-12)
        assert g["p_value"] == pytest.approx(p, abs=1e-12)


def test_distances_do_not_depend_on_a_common_scale():
    """Rows divided by one power of two: a table times 2**900 (squares and sums would overflow) or
    2**-900 scores as the table itself."""
    rng = np.random.default_rng(5)
    table = _screen(rng, {"P1": (8, {"a": 3, "b": 3})}, 5, False)
    feats = [c for c in table if c.startswith("f")]
    for name in ("manhattan", "chebyshev", "euclidean"):
        base = score_profiles(table, **KW, similarity=name, permutations=99)
        for factor in (2.0 ** 900, 2.0 ** -900):
            scaled = table.copy()
            scaled[feats] = scaled[feats] * factor
            got = score_profiles(scaled, **KW, similarity=name, permutations=99)
            pd.testing.assert_frame_equal(got.groups, base.groups)


def test_binary_similarities_need_binary_features():
    rng = np.random.default_rng(6)
    table = _screen(rng, {"P1": (6, {"a": 2, "b": 2})}, 4, True)
    table.loc[3, "f2"] = 0.5
    with pytest.raises(ValueError, match=r"jaccard similarity compares binary features \(0/1 or true/false\); "
                                         r"feature column 'f2' holds 0.5 in data row 4"):
        score_profiles(table, **KW, similarity="jaccard")
    with pytest.raises(ValueError, match="hamming similarity compares binary features"):
        score_profiles(table, **KW, similarity="hamming")
    score_profiles(table, **KW, similarity="manhattan", permutations=9)  # a continuous distance takes it


def test_true_false_columns_are_binary_features():
    """Read as 1/0 by the binary similarities (left out, and named, by the others): the same scores as
    the 0/1 table."""
    rng = np.random.default_rng(7)
    table = _screen(rng, {"P1": (6, {"a": 3, "b": 2}), "P2": (5, {"a": 2})}, 5, True)
    booleans = table.copy()
    for c in ("f1", "f3"):
        booleans[c] = booleans[c].astype(bool)
    for name in ("jaccard", "hamming"):
        want = score_profiles(table, **KW, similarity=name, permutations=99)
        got = score_profiles(booleans, **KW, similarity=name, permutations=99)
        pd.testing.assert_frame_equal(got.groups, want.groups)
        assert got.settings["features"] == 5
    res = score_profiles(booleans, **KW, similarity="cosine", permutations=9)
    assert res.settings["features"] == 3
    assert {"column": "f1", "reason": "true/false values"} in res.settings["columns_left_out"]


def test_every_similarity_is_listed_and_checked():
    assert SCORE_SIMILARITIES == ("cosine", "correlation", "euclidean", "abs_cosine", "manhattan", "chebyshev",
                                  "jaccard", "hamming")
    rng = np.random.default_rng(8)
    table = _screen(rng, {"P1": (6, {"a": 2, "b": 2})}, 4, True)
    table.loc[:, "f0"] = 1.0  # no all-zero row (cosine is defined), but constant rows may remain
    for name in SCORE_SIMILARITIES:
        if name == "correlation":
            continue
        res = score_profiles(table, **KW, similarity=name, permutations=9)
        assert res.settings["similarity"] == name and len(res.groups) == 2
