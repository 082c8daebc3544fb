"""score_consistency against brute force: label mAP, every labelling of small screens, edge cases."""

import itertools

import numpy as np
import pandas as pd
import pytest

from apnull.law import permutation_pvalue
from apnull.law import VALUE_TOL
from apnull.score import score_consistency, tie_aware_ap
from apnull.score.kernels import labelsets as K
from apnull.score.table.profiles import prepare_profiles, split_labels
from apnull.streams import shuffle


def label_null(t, key, B, rows, lists, perms=None):
    """Label t's first B null mAPs from the stream ``key`` (or under the labellings ``perms``)."""
    G = lists.gm_ptr.size - 1
    perms = np.zeros((0, 0), dtype=np.int64) if perms is None else np.ascontiguousarray(perms, dtype=np.int64)
    B = int(B if perms.shape[0] == 0 else perms.shape[0])
    values = np.full(B, np.nan)
    K.continue_label(np.int64(t), np.uint64(key), np.uint64(0), np.arange(G, dtype=np.int64), np.int64(0),
                     np.int64(0), np.int64(B), np.int64(B) + 1, VALUE_TOL, np.nan, rows, lists, values, perms)
    return values


def _table(n_pert=12, reps=3, d=6, seed=0, cells=None, ties=False):
    rng = np.random.default_rng(seed)
    X = rng.normal(size=(n_pert * reps, d))
    if ties:
        X = rng.integers(1, 3, size=X.shape).astype(float)
    names = np.repeat([f"c{i:02d}" for i in range(n_pert)], reps)
    cells = cells or ["A", "B", "A|B", "C", "C|D", "A"]
    ann = {f"c{i:02d}": cells[i % len(cells)] for i in range(n_pert)}
    df = pd.DataFrame(X, columns=[f"f{i}" for i in range(d)])
    df.insert(0, "Metadata_pert", names)
    df.insert(1, "Metadata_target", [ann[n] for n in names])
    return df


def _brute_map(X, sets, label, euclidean=False):
    """Label mAP by definition: cosine (or minus squared distance) of the given rows, tie-aware AP per
    query, mean over the queries with a negative."""
    if euclidean:
        S = -((X[:, None, :] - X[None, :, :]) ** 2).sum(axis=2)
    else:
        Xn = X / np.linalg.norm(X, axis=1, keepdims=True)
        S = Xn @ Xn.T
    aps = []
    for q, Lq in enumerate(sets):
        if label not in Lq:
            continue
        items = [j for j in range(len(sets)) if j != q and (label in sets[j] or not (set(sets[j]) & set(Lq)))]
        rel = [label in sets[j] for j in items]
        if all(rel):
            continue
        aps.append(tie_aware_ap(S[q, items], rel))
    return float(np.mean(aps)) if aps else np.nan


def _sets(prof, gperm=None):
    """Each profile's labels (as text) when group g carries the labels of group gperm[g]."""
    L = prof.lists
    G = L.gm_ptr.size - 1
    gperm = range(G) if gperm is None else gperm
    by_group = [tuple(prof.labels[i] for i in L.grp_lab[L.grp_ptr[o]:L.grp_ptr[o + 1]]) for o in gperm]
    return [by_group[g] for g in L.group]


def _prof(df, **kw):
    args = dict(label_sep="|", aggregate="median", control=None, only=None, features=None, similarity="cosine",
                alpha=0.05)
    args.update(kw)
    return prepare_profiles(df, "Metadata_pert", "Metadata_target", **args)


def test_split_labels_edge_cases():
    assert split_labels("A|B", "|") == ("A", "B")
    assert split_labels("B| A |A", "|") == ("A", "B")   # stripped, repeats dropped
    assert split_labels("A||", "|") == ("A",)           # empty pieces dropped
    assert split_labels("", "|") == () and split_labels(np.nan, "|") == () and split_labels(None, None) == ()
    assert split_labels("A|B", None) == ("A|B",)


@pytest.mark.parametrize("ties", [False, True])
def test_observed_label_map_equals_brute_force(ties):
    """Integer features under Euclidean distance give exact ties, which the tie-aware AP averages."""
    df = _table(ties=ties, d=3 if ties else 6)
    sim = "euclidean" if ties else "cosine"
    res = score_consistency(df, "Metadata_pert", "Metadata_target", label_sep="|", permutations=19, similarity=sim)
    prof = _prof(df, similarity=sim)
    sets = _sets(prof)
    raw = df.groupby("Metadata_pert").median(numeric_only=True).to_numpy()
    for label, mAP in zip(res.labels["Metadata_target"], res.labels["mAP"]):
        assert mAP == pytest.approx(_brute_map(raw, sets, label, ties), abs=1e-12)


def test_every_labelling_equals_brute_force():
    """On 6 profiles, the kernel's mAP under each of the 720 labellings equals brute force, so the
    permutation null is the exact law when every labelling is drawn."""
    df = _table(n_pert=6, reps=2, cells=["A", "A|B", "B", "C", "A", "B|C"])
    prof = _prof(df)
    rows = K.similarity_rows(prof.X, prof.kind)
    perms = np.array(list(itertools.permutations(range(6))), dtype=np.int32)
    sets = _sets(prof)
    for t, label in enumerate(prof.labels):
        null = label_null(t, 0, 0, rows, prof.lists, perms)
        brute = [_brute_map(prof.X, _sets(prof, perm), label) for perm in perms]
        np.testing.assert_allclose(null, brute, atol=1e-12)
        obs = _brute_map(prof.X, sets, label)
        exact_p = np.mean(np.asarray(brute) >= obs - 1e-12)
        assert permutation_pvalue(null, obs, exact=True) == pytest.approx(exact_p)


def test_aggregate_none_moves_whole_perturbations():
    """With replicates as profiles, a labelling moves a perturbation's label set to all its replicates
    (unequal replicate counts included); every one of the 120 labellings equals brute force."""
    df = _table(n_pert=5, reps=2, cells=["A", "A|B", "B", "C", "A|C"])
    df = pd.concat([df, df.iloc[[0]].assign(f0=0.5)], ignore_index=True)  # c00 has 3 replicates
    prof = _prof(df, aggregate="none")
    rows = K.similarity_rows(prof.X, prof.kind)
    perms = np.array(list(itertools.permutations(range(5))), dtype=np.int64)
    for t, label in enumerate(prof.labels):
        null = label_null(t, 0, 0, rows, prof.lists, perms)
        brute = [_brute_map(prof.X, _sets(prof, perm), label) for perm in perms]
        np.testing.assert_allclose(null, brute, atol=1e-12)


def test_multilabel_edge_cases():
    cells = ["A|B|C|D|E|F", "A", "A", "B", "B|B", "C||", "D", "E", ""]
    df = _table(n_pert=9, reps=2, cells=cells)
    res = score_consistency(df, "Metadata_pert", "Metadata_target", label_sep="|", permutations=19)
    skipped = dict(zip(res.skipped["Metadata_target"], res.skipped["reason"]))
    assert "one perturbation" in skipped["F"]                       # a label carried by one perturbation
    assert any("without an annotation ('c08') is a negative of every query" in w for w in res.warnings)
    q = res.queries
    everything = q[q["Metadata_pert"] == "c00"]      # carries every label: its one negative is the unlabelled c08
    assert len(everything) == 5 and (everything["n"] == 1).all() and everything["ap"].notna().all()
    assert "c08" not in set(q["Metadata_pert"])                # never a query
    assert len(q[q["Metadata_pert"] == "c04"]) == 1            # "B|B" is one label
    assert set(res.labels["Metadata_target"]) == {"A", "B", "C", "D", "E"}
    assert res.labels.loc[res.labels["Metadata_target"] == "A", "n_perturbations"].item() == 3
    assert res.settings["unlabelled"] == 1
    alone = score_consistency(df[df["Metadata_target"] != ""], "Metadata_pert", "Metadata_target", label_sep="|",
                              permutations=19).queries
    everything = alone[alone["Metadata_pert"] == "c00"]        # without it: no negatives, no AP
    assert len(everything) == 5 and everything["ap"].isna().all() and (everything["n"] == 0).all()


def test_row_order_does_not_matter():
    df = _table(n_pert=15)
    kw = dict(label_sep="|", permutations=99, seed=5, aggregate="mean")
    a = score_consistency(df, "Metadata_pert", "Metadata_target", **kw)
    b = score_consistency(df.sample(frac=1, random_state=3).reset_index(drop=True),
                          "Metadata_pert", "Metadata_target", **kw)
    pd.testing.assert_frame_equal(a.labels, b.labels, check_exact=True)
    pd.testing.assert_frame_equal(a.queries, b.queries, check_exact=True)


def test_aggregate_none_keeps_replicates_and_rows():
    df = _table(n_pert=6, reps=2, cells=["A", "B"])
    res = score_consistency(df, "Metadata_pert", "Metadata_target", aggregate="none", permutations=19)
    assert res.settings["profiles"] == 12
    assert list(res.queries.columns) == ["row", "Metadata_pert", "Metadata_target", "m", "n", "ap", "p_value"]
    assert (res.queries["m"] == 5).all() and "n_profiles" in res.labels.columns


def test_null_maps_are_the_counted_draws():
    df = _table()
    res = score_consistency(df, "Metadata_pert", "Metadata_target", label_sep="|", permutations=49, seed=2)
    row = res.labels.iloc[0]
    null = res.null_maps(row["Metadata_target"])
    assert null.size == 49 and permutation_pvalue(null, row["mAP"]) == row["p_value"]


def test_only_keeps_the_significant_groups():
    df = _table(n_pert=12)
    groups = pd.DataFrame({"Metadata_pert": [f"c{i:02d}" for i in range(12)], "significant": [i < 8 for i in range(12)]})
    res = score_consistency(df, "Metadata_pert", "Metadata_target", label_sep="|", only=groups, permutations=9)
    assert res.settings["profiles"] == 8


def test_dask_equals_in_process():
    from dask.distributed import Client, LocalCluster
    from apnull.score.engine.connect import LOCAL_CLUSTER_HTTP

    df = _table(n_pert=20)
    kw = dict(label_sep="|", permutations=99, seed=1)
    local = score_consistency(df, "Metadata_pert", "Metadata_target", **kw)
    with LocalCluster(n_workers=2, threads_per_worker=1, processes=False, **LOCAL_CLUSTER_HTTP) as cluster, \
            Client(cluster) as client:
        remote = score_consistency(df, "Metadata_pert", "Metadata_target", scheduler=client, **kw)
    pd.testing.assert_frame_equal(local.labels, remote.labels, check_exact=True)
    pd.testing.assert_frame_equal(local.queries, remote.queries, check_exact=True)


@pytest.mark.parametrize("kw, message", [
    (dict(annotation="Metadata_targt"), "did you mean"),
    (dict(label_sep=";"), "splits no annotation cell"),
    (dict(only=pd.DataFrame({"x": ["c01"]})), "no perturbation column"),
    (dict(aggregate="max"), "aggregate must be"),
    (dict(permutations=0), "permutations"),
])
def test_bad_input_is_one_clear_error(kw, message):
    args = dict(annotation="Metadata_target", label_sep="|")
    args.update(kw)
    with pytest.raises(ValueError, match=message):
        score_consistency(_table(), "Metadata_pert", **args)


def test_all_labels_skipped_is_an_error():
    df = _table(n_pert=4, cells=["A", "B", "C", "D"])
    with pytest.raises(ValueError, match="nothing to score"):
        score_consistency(df, "Metadata_pert", "Metadata_target", permutations=9)


def test_different_annotations_within_a_perturbation():
    df = _table(n_pert=4, cells=["A", "B"])
    df.loc[0, "Metadata_target"] = "B"
    with pytest.raises(ValueError, match="different annotations"):
        score_consistency(df, "Metadata_pert", "Metadata_target", permutations=9)


def test_shuffles_are_uniform_and_prefix_stable():
    """Every labelling of 4 profiles turns up about equally often; a longer stream starts with a shorter one."""
    perm, counter, seen = np.arange(4), np.uint64(0), {}
    for _ in range(24_000):
        counter = shuffle(perm, np.uint64(12345), counter)
        seen[tuple(perm)] = seen.get(tuple(perm), 0) + 1
    assert len(seen) == 24 and min(seen.values()) > 850 and max(seen.values()) < 1150
    df = _table()
    prof = _prof(df)
    rows = K.similarity_rows(prof.X, prof.kind)
    args = (rows, prof.lists)
    np.testing.assert_array_equal(label_null(0, 7, 30, *args), label_null(0, 7, 90, *args)[:30])


def test_query_pvalues_are_the_exact_law():
    import apnull

    df = _table(n_pert=10)
    res = score_consistency(df, "Metadata_pert", "Metadata_target", label_sep="|", permutations=9)
    row = res.queries.dropna().iloc[0]
    assert row["p_value"] == pytest.approx(apnull.p_value(row["ap"], int(row["m"]), int(row["n"])), rel=1e-9)
    off = score_consistency(df, "Metadata_pert", "Metadata_target", label_sep="|", permutations=9, query_pvalues=False)
    assert off.queries["p_value"].isna().all()
    pd.testing.assert_frame_equal(off.labels, res.labels)


def test_only_as_names_or_q_values():
    df = _table(n_pert=12)
    names = [f"c{i:02d}" for i in range(9)]
    by_names = score_consistency(df, "Metadata_pert", "Metadata_target", label_sep="|", only=names, permutations=9)
    groups = pd.DataFrame({"Metadata_pert": [f"c{i:02d}" for i in range(12)], "q_value": [0.01] * 9 + [0.5] * 3})
    by_q = score_consistency(df, "Metadata_pert", "Metadata_target", label_sep="|", only=groups, permutations=9)
    assert by_names.settings["profiles"] == by_q.settings["profiles"] == 9
    pd.testing.assert_frame_equal(by_names.labels, by_q.labels)


@pytest.mark.slow
def test_worker_processes_equal_in_process():
    df = _table(n_pert=20)
    kw = dict(label_sep="|", permutations=99, seed=1)
    local = score_consistency(df, "Metadata_pert", "Metadata_target", **kw)
    remote = score_consistency(df, "Metadata_pert", "Metadata_target", workers=2, **kw)
    pd.testing.assert_frame_equal(local.labels, remote.labels, check_exact=True)


def test_abs_cosine_ranks_by_absolute_cosine():
    """abs_cosine in consistency ranks by |cosine|: a profile anti-aligned with the query counts as
    similar, so the label mAP equals the one of the table with that profile's sign flipped."""
    import numpy as np
    import pandas as pd

    from apnull.score import score_consistency

    rng = np.random.default_rng(3)
    X = rng.normal(size=(8, 5))
    labels = ["a", "a", "b", "b", "c", "c", "d", "d"]
    table = pd.DataFrame(X, columns=[f"f{i}" for i in range(5)])
    table.insert(0, "target", labels)
    table.insert(0, "pert", [f"p{i}" for i in range(8)])
    flipped = table.copy()
    flipped.loc[1, [f"f{i}" for i in range(5)]] *= -1
    kw = dict(perturbation="pert", annotation="target", permutations=9, seed=0)
    a = score_consistency(table, similarity="abs_cosine", **kw).labels
    b = score_consistency(flipped, similarity="abs_cosine", **kw).labels
    assert np.allclose(a["mAP"].to_numpy(), b["mAP"].to_numpy(), atol=1e-12)
    c = score_consistency(flipped, similarity="cosine", **kw).labels
    assert not np.allclose(a["mAP"].to_numpy(), c["mAP"].to_numpy())
