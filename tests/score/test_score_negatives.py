"""``negatives="others"``: a query ranks its positives against every other profile of its stratum.

Checked against enumeration of every assignment of the label (the null the option defines: in every
stratum, k_s of the stratum's profiles take the perturbation's label), written here from the
definition with its own similarities and the tie-aware AP of ``apnull.score.tie_aware_ap``; and a
replicate on a plate without controls: left out, named, the perturbation scored from the others.
"""

from __future__ import annotations

import itertools

import numpy as np
import pandas as pd
import pytest

from apnull.law import VALUE_TOL
from apnull.score import score_profiles, tie_aware_ap
from score_helpers import tiny_screen

KW = dict(perturbation="Metadata_pert", stratum="Metadata_plate")


def similarities(table, similarity):
    feats = table.filter(regex="^f").to_numpy(float)
    if similarity == "cosine":
        feats = feats / np.linalg.norm(feats, axis=1, keepdims=True)
        return feats @ feats.T
    if similarity == "manhattan":
        return -np.abs(feats[:, None, :] - feats[None, :, :]).sum(-1)
    raise AssertionError(similarity)


def brute_others(table, pert, similarity="cosine", control=None, differ=None):
    """(observed mAP, exact p, every null mAP, observed APs by row): every assignment of ``pert``'s label
    to k_s profiles of each of its strata; a query ranks the other labelled profiles (positives; those
    sharing its ``differ`` value left out) and the unlabelled profiles of its stratum (negatives)."""
    S = similarities(table, similarity)
    lab = table["Metadata_pert"].to_numpy()
    plate = table["Metadata_plate"].to_numpy()
    code = None if differ is None else table[differ].to_numpy()
    strata = sorted(set(plate[lab == pert]))
    pools = {s: np.flatnonzero(plate == s) for s in strata}
    ks = {s: int(np.sum((plate == s) & (lab == pert))) for s in strata}

    def aps(chosen):
        labelled = np.concatenate([chosen[s] for s in strata])
        out = {}
        for q in labelled:
            pos = [x for x in labelled if x != q and (code is None or code[x] != code[q])]
            left = [x for x in labelled if x != q and code is not None and code[x] == code[q]]
            neg = [x for x in pools[plate[q]] if x not in set(labelled) and x not in left and x != q]
            if pos:
                scores = np.r_[S[q, pos], S[q, neg]]
                rel = np.r_[np.ones(len(pos), bool), np.zeros(len(neg), bool)]
                out[int(q)] = tie_aware_ap(scores, rel)
        return out

    def mean(d):
        return float(np.mean(list(d.values()))) if d else 0.0

    seen = aps({s: np.flatnonzero((plate == s) & (lab == pert)) for s in strata})
    null = np.array([mean(aps({s: np.array(c) for s, c in zip(strata, combo)}))
                     for combo in itertools.product(*[itertools.combinations(pools[s], ks[s]) for s in strata])])
    obs = mean(seen)
    return obs, float(np.mean(null >= obs - VALUE_TOL)), null, seen


LAYOUTS = [
    {"P1": (0, {"a": 2, "b": 2, "c": 3})},                                     # one stratum, no controls
    {"P1": (2, {"a": 3, "b": 1, "c": 2})},                                     # controls are negatives too
    {"P1": (0, {"a": 2, "b": 2, "c": 1}), "P2": (0, {"a": 1, "b": 2, "d": 2})},  # strata linked by a, b
    {"P1": (1, {"a": 1, "b": 2}), "P2": (2, {"a": 2, "c": 2})},
]


@pytest.mark.parametrize("layout", range(len(LAYOUTS)))
@pytest.mark.parametrize("similarity, ties", [("cosine", False), ("manhattan", True)])
def test_others_equals_enumeration(layout, similarity, ties):
    rng = np.random.default_rng(layout)
    table = tiny_screen(rng, LAYOUTS[layout], d=4, ties=ties)
    control = "DMSO" if (table["Metadata_pert"] == "DMSO").any() else None
    res = score_profiles(table, **KW, control=control, negatives="others", similarity=similarity,
                         permutations="all")
    assert res.settings["negatives"] == "others"
    assert (res.groups["permutations"] > 0).all()
    for _, g in res.groups.iterrows():
        name = g["Metadata_pert"]
        obs, p, null, seen = brute_others(table, name, similarity)
        assert g["mAP"] == pytest.approx(obs, abs=1e-12)
        assert g["p_value"] == pytest.approx(p, abs=1e-12)
        assert g["permutations"] == null.size
        assert np.allclose(np.sort(res.null_maps(name)), np.sort(null), atol=1e-12)
        q = res.queries[res.queries["Metadata_pert"] == name].set_index("row")
        assert sorted(q.index) == sorted(seen)
        for r, ap in seen.items():
            assert q.loc[r, "ap"] == pytest.approx(ap, abs=1e-12)
            plate = table.loc[r, "Metadata_plate"]
            k_s = int(((table["Metadata_pert"] == name) & (table["Metadata_plate"] == plate)).sum())
            assert q.loc[r, "n"] == int((table["Metadata_plate"] == plate).sum()) - k_s
            assert q.loc[r, "m"] == g["n_replicates"] - 1


def test_others_with_the_pair_rule_equals_enumeration():
    rng = np.random.default_rng(7)
    table = tiny_screen(rng, {"P1": (0, {"a": 3, "b": 2, "c": 2})}, d=3)
    table["Metadata_well"] = ["w1", "w1", "w2", "w3", "w4", "w5", "w6"]
    res = score_profiles(table, **KW, control=None, negatives="others", permutations="all",
                         positives_differ_by="Metadata_well")
    g = res.groups.set_index("Metadata_pert")
    for name in g.index:
        obs, p, null, _ = brute_others(table, name, differ="Metadata_well")
        assert g.loc[name, "mAP"] == pytest.approx(obs, abs=1e-12)
        assert g.loc[name, "p_value"] == pytest.approx(p, abs=1e-12)


def test_random_draws_follow_the_enumerated_law():
    """A fixed B of random draws from the same pools: the null values are the enumerated ones, in about
    their proportions (a chi-square-free check: every drawn value is an enumerated value, and the share
    reaching the observed mAP is within 5 standard errors of the exact p)."""
    rng = np.random.default_rng(3)
    table = tiny_screen(rng, {"P1": (0, {"a": 2, "b": 2, "c": 2}), "P2": (0, {"a": 2, "b": 2, "d": 1})}, d=4)
    res = score_profiles(table, **KW, control=None, negatives="others", permutations=4000, seed=1)
    for name in ("a", "b"):
        obs, p, null, _ = brute_others(table, name)
        drawn = res.null_maps(name)
        assert drawn.size == 4000
        assert np.all(np.min(np.abs(drawn[:, None] - null[None, :]), axis=1) < 1e-12)
        share = np.mean(drawn >= obs - VALUE_TOL)
        assert abs(share - p) < 5 * np.sqrt(p * (1 - p) / drawn.size) + 1e-9


def test_others_names_what_it_leaves_out():
    rng = np.random.default_rng(5)
    table = tiny_screen(rng, {"P1": (0, {"a": 2, "b": 2, "solo": 1}), "P2": (0, {"a": 2}), "P3": (0, {"b": 1})})
    res = score_profiles(table, **KW, control=None, negatives="others", permutations=99)
    reasons = dict(zip(res.skipped["Metadata_pert"], res.skipped["reason"]))
    assert reasons["solo"] == "only one replicate: no positives to rank"
    # P2 holds only a's replicates and P3 only b's: no negative for them there
    for name, plate in (("a", "P2"), ("b", "P3")):
        rows = table.index[(table["Metadata_pert"] == name) & (table["Metadata_plate"] == plate)].tolist()
        shown = ", ".join(str(r + 1) for r in rows)  # data rows as the file counts them
        assert reasons[name] == (f"replicates left out (data row{'s' if len(rows) > 1 else ''} {shown} "
                                 f"(counting from 1 under the header)): no other profile in "
                                 f"stratum {plate!r} (no negatives); scored from its 2 other replicates")
    assert sorted(res.groups["Metadata_pert"]) == ["a", "b"]
    # solo's single replicate is a negative all the same: each query on P1 ranks 1 positive, 3 negatives
    assert set(res.queries["n"]) == {3} and set(res.queries["m"]) == {1}


def test_control_none_needs_others_and_a_missing_control_is_named():
    rng = np.random.default_rng(0)
    table = tiny_screen(rng, {"P1": (0, {"a": 2, "b": 2})})
    with pytest.raises(ValueError, match="control must be a value"):
        score_profiles(table, **KW, control=None)
    with pytest.raises(ValueError, match=r"no control rows.*control=None"):
        score_profiles(table, **KW, control="DMSO", negatives="others")
    with pytest.raises(ValueError, match="negatives must be one of controls, others"):
        score_profiles(table, **KW, negatives="plates")


def test_a_replicate_on_a_plate_without_controls_is_left_out_and_named():
    """Its perturbation is scored from the replicates it keeps: the same values (and the same random
    streams, keyed by stratum) as the table without that row."""
    rng = np.random.default_rng(11)
    table = tiny_screen(rng, {"P1": (6, {"a": 2, "b": 3}), "P2": (5, {"a": 1, "b": 2}), "P3": (0, {"a": 1, "c": 2})})
    res = score_profiles(table, **KW, control="DMSO", permutations=200, seed=3)
    reasons = dict(zip(res.skipped["Metadata_pert"], res.skipped["reason"]))
    row = int(table.index[(table["Metadata_pert"] == "a") & (table["Metadata_plate"] == "P3")][0])
    assert reasons["a"] == (f"replicates left out (data row {row + 1} (counting from 1 under the header)): no "
                            "control rows in stratum 'P3'; "
                            "scored from its 3 other replicates")
    assert reasons["c"] == "no control rows in stratum 'P3'"
    assert any("'P3'" in w and "left out" in w for w in res.warnings)
    without = table[table["Metadata_plate"] != "P3"]
    ref = score_profiles(without, **KW, control="DMSO", permutations=200, seed=3)
    cols = ["Metadata_pert", "n_replicates", "mAP", "p_value", "permutations"]
    pd.testing.assert_frame_equal(res.groups[cols], ref.groups[cols])
    pd.testing.assert_frame_equal(res.queries[["row", "ap", "p_value"]], ref.queries[["row", "ap", "p_value"]])


def test_one_replicate_left_with_controls_is_skipped():
    rng = np.random.default_rng(12)
    table = tiny_screen(rng, {"P1": (4, {"a": 1, "b": 2}), "P2": (0, {"a": 1})})
    res = score_profiles(table, **KW, control="DMSO", permutations=50)
    reasons = dict(zip(res.skipped["Metadata_pert"], res.skipped["reason"]))
    row = int(table.index[(table["Metadata_pert"] == "a") & (table["Metadata_plate"] == "P2")][0])
    assert reasons["a"] == (f"no control rows in stratum 'P2': its replicates there left out (data row {row + 1} "
                            "(counting from 1 under the header)); "
                            "one replicate left: no positives to rank")
    assert list(res.groups["Metadata_pert"]) == ["b"]


def test_conditional_query_null_of_others_follows_its_enumeration():
    """A query whose positives sit on other plates: its p-value is the conditional permutation null
    (the query kept, each positive's label given to a profile of its own plate, the query excluded).
    Enumerated here; the drawn p-value within 5 standard errors of it."""
    rng = np.random.default_rng(21)
    table = tiny_screen(rng, {"P1": (0, {"a": 1, "b": 2, "c": 2}), "P2": (0, {"a": 2, "b": 1, "d": 2})}, d=4)
    B = 20000
    res = score_profiles(table, **KW, control=None, negatives="others", permutations=B, seed=2)
    S = similarities(table, "cosine")
    lab, plate = table["Metadata_pert"].to_numpy(), table["Metadata_plate"].to_numpy()
    q = res.queries[res.queries["null"] == "conditional permutation"]
    assert len(q) >= 4
    for _, row in q.iterrows():
        r, name = int(row["row"]), row["Metadata_pert"]
        mates = [x for x in np.flatnonzero(lab == name) if x != r]
        per = {s: sum(plate[x] == s for x in mates) for s in sorted(set(plate[mates]))}
        pools = {s: [x for x in np.flatnonzero(plate == s) if x != r] for s in per}

        def ap(pos):
            neg = [x for x in np.flatnonzero(plate == plate[r]) if x != r and x not in set(pos)]
            rel = np.r_[np.ones(len(pos), bool), np.zeros(len(neg), bool)]
            return tie_aware_ap(np.r_[S[r, pos], S[r, neg]], rel)

        null = np.array([ap([x for c in combo for x in c]) for combo in
                         itertools.product(*[itertools.combinations(pools[s], per[s]) for s in per])])
        p = float(np.mean(null >= ap(mates) - VALUE_TOL))
        assert row["ap"] == pytest.approx(ap(mates), abs=1e-12)
        assert row["permutations"] == B
        assert abs(row["p_value"] - p) < 5 * np.sqrt(p * (1 - p) / B) + 2.0 / B
