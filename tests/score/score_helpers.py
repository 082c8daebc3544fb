"""Shared helpers for tests/score (brute-force references; importable as ``score_helpers``)."""

from __future__ import annotations

import itertools

import numpy as np
import pandas as pd


def brute_tie_ap(scores, relevant):
    """Mean AP over every order of the items that breaks ties (all permutations, N <= 8)."""
    scores = np.asarray(scores, float)
    rel = np.asarray(relevant, bool)
    m = rel.sum()
    total, count = 0.0, 0
    for perm in itertools.permutations(range(scores.size)):
        tiebreak = np.empty(scores.size)
        tiebreak[list(perm)] = np.arange(scores.size)
        order = np.lexsort((tiebreak, -scores))
        r = rel[order]
        ranks = np.flatnonzero(r) + 1
        total += np.mean(np.arange(1, m + 1) / ranks)
        count += 1
    return total / count


def tiny_screen(rng, layout, d=5, ties=False):
    """A profile table: layout = {stratum: (n_controls, {pert: replicates})}."""
    rows = []
    for s, (nc, perts) in layout.items():
        rows += [("DMSO", s)] * nc
        for p, k in perts.items():
            rows += [(p, s)] * k
    X = rng.normal(size=(len(rows), d))
    if ties:
        X = np.round(X)  # coarse values: many exact ties in similarity
        X[np.all(X == 0, axis=1), 0] = 1.0
    df = pd.DataFrame(rows, columns=["Metadata_pert", "Metadata_plate"])
    return pd.concat([df, pd.DataFrame(X, columns=[f"f{i}" for i in range(d)])], axis=1)


def reference_ap(sim_q, pos, neg):
    """Tie-aware AP of one query: enumeration of tie orders if scores tie, else plain AP."""
    scores = np.r_[sim_q[pos], sim_q[neg]]
    rel = np.r_[np.ones(len(pos), bool), np.zeros(len(neg), bool)]
    if np.unique(scores).size < scores.size:
        assert scores.size <= 8, "tie enumeration is for tiny rankings"
        return brute_tie_ap(scores, rel)
    order = np.argsort(-scores, kind="stable")
    r = rel[order]
    return float(np.mean(np.arange(1, r.sum() + 1) / (np.flatnonzero(r) + 1)))


def brute_permutation_p(table, pert, similarity="cosine", tol=1e-12):
    """p = #{assignments with mAP >= observed} / #assignments, every assignment enumerated."""
    feats = table.filter(regex="^f").to_numpy(float)
    if similarity == "correlation":
        feats = feats - feats.mean(axis=1, keepdims=True)
    if similarity in ("cosine", "correlation"):
        feats = feats / np.linalg.norm(feats, axis=1, keepdims=True)
        S = feats @ feats.T
    else:
        S = -((feats[:, None, :] - feats[None, :, :]) ** 2).sum(-1)
    lab = table["Metadata_pert"].to_numpy()
    plate = table["Metadata_plate"].to_numpy()
    strata = sorted(set(plate[lab == pert]))
    pools = {s: np.flatnonzero((plate == s) & ((lab == pert) | (lab == "DMSO"))) for s in strata}
    ks = {s: int(np.sum((plate == s) & (lab == pert))) for s in strata}

    def mean_ap(chosen):
        labelled = np.concatenate([chosen[s] for s in strata])
        aps = []
        for q in labelled:
            s = plate[q]
            pos = [x for x in labelled if x != q]
            neg = [x for x in pools[s] if x not in set(labelled)]
            aps.append(reference_ap(S[q], pos, neg))
        return np.mean(aps)

    observed = mean_ap({s: np.flatnonzero((plate == s) & (lab == pert)) for s in strata})
    null = []
    for combo in itertools.product(*[itertools.combinations(pools[s], ks[s]) for s in strata]):
        null.append(mean_ap({s: np.array(c) for s, c in zip(strata, combo)}))
    null = np.array(null)
    return observed, float(np.mean(null >= observed - tol)), null
