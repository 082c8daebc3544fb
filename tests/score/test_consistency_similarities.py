"""Consistency with score's eight similarities: each label's mAP by definition, from scipy's distances."""

import numpy as np
import pandas as pd
import pytest
from scipy.spatial.distance import cdist

from apnull.score import score_consistency, tie_aware_ap

DISTANCE = {"manhattan": "cityblock", "chebyshev": "chebyshev", "hamming": "cityblock"}


def _screen(binary, seed=0, n_pert=14, d=7):
    rng = np.random.default_rng(seed)
    X = rng.integers(0, 2, size=(n_pert, d)).astype(float) if binary else rng.normal(size=(n_pert, d))
    cells = ["A", "B", "A|B", "C", "", "A", "C"]
    df = pd.DataFrame(X, columns=[f"f{i}" for i in range(d)])
    df.insert(0, "Metadata_pert", [f"p{i:02d}" for i in range(n_pert)])
    df.insert(1, "Metadata_target", [cells[i % len(cells)] for i in range(n_pert)])
    return df, X


def _similarity(X, similarity):
    if similarity == "jaccard":
        inter = X @ X.T
        union = np.maximum(X[:, None, :], X[None, :, :]).sum(axis=2)
        return np.where(union > 0, inter / np.where(union > 0, union, 1), 1.0)
    return -cdist(X, X, DISTANCE[similarity])


@pytest.mark.parametrize("similarity", ["manhattan", "chebyshev", "jaccard", "hamming"])
def test_label_maps_by_definition(similarity):
    """Positives: the other profiles carrying the label; negatives: those sharing no label with the query
    (an unlabelled profile is a negative of every query); AP tie-aware (binary features tie often)."""
    df, X = _screen(similarity in ("jaccard", "hamming"))
    res = score_consistency(df, "Metadata_pert", "Metadata_target", label_sep="|", aggregate="none",
                            similarity=similarity, permutations=9, query_pvalues=False)
    S = _similarity(X, similarity)
    sets = [set(c.split("|")) - {""} for c in df["Metadata_target"]]
    for label, got in zip(res.labels["Metadata_target"], res.labels["mAP"]):
        aps = []
        for q, Lq in enumerate(sets):
            if label not in Lq:
                continue
            items = [j for j in range(len(sets)) if j != q and (label in sets[j] or not (sets[j] & Lq))]
            rel = [label in sets[j] for j in items]
            if not all(rel):
                aps.append(tie_aware_ap(S[q, items], rel))
        assert got == pytest.approx(np.mean(aps), abs=1e-12), label


def test_binary_similarities_refuse_other_values_and_aggregates_that_are_not_binary():
    df, _ = _screen(False)
    with pytest.raises(ValueError, match="jaccard similarity compares binary features.*'f0'"):
        score_consistency(df, "Metadata_pert", "Metadata_target", label_sep="|", aggregate="none",
                          similarity="jaccard", permutations=9)
    binary, _ = _screen(True)
    two = pd.concat([binary, binary.assign(f0=1 - binary["f0"])], ignore_index=True)  # medians of 0 and 1: 0.5
    with pytest.raises(ValueError, match="aggregate='none' keeps replicates as they are"):
        score_consistency(two, "Metadata_pert", "Metadata_target", label_sep="|", similarity="hamming",
                          permutations=9)


def test_distances_ignore_the_scale_of_the_features():
    df, _ = _screen(False, seed=3)
    feats = [c for c in df.columns if c.startswith("f")]
    kw = dict(label_sep="|", aggregate="none", similarity="manhattan", permutations=19, query_pvalues=False)
    one = score_consistency(df, "Metadata_pert", "Metadata_target", **kw).labels
    for scale in (2.0 ** 600, 2.0 ** -600):
        big = df.copy()
        big[feats] = big[feats] * scale
        pd.testing.assert_frame_equal(score_consistency(big, "Metadata_pert", "Metadata_target", **kw).labels, one)
