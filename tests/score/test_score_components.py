"""Components of strata and perturbation specs read from the perturbation table's arrays: the same as
the union-find over ``Pert`` objects and the specs built from them."""

import numpy as np
import pytest
from grouping_reference import components_reference, spec_reference
from score_helpers import tiny_screen

from apnull.score import _engine
from apnull.score._perts import Pert, PertTable, components_of
from apnull.score._prepare import prepare_screen


def _random_table(rng, T, P):
    """P perturbations over T strata (keys sorted), each with replicates in 1 to 3 random strata."""
    strata = np.array([f"s{j:02d}" for j in range(T)], dtype=object)
    perts, row = [], 0
    for i in range(P):
        own = np.sort(rng.choice(T, size=int(rng.integers(1, min(3, T) + 1)), replace=False))
        reps = []
        for _ in own:
            k = int(rng.integers(1, 4))
            reps.append(np.arange(row, row + k))
            row += k
        perts.append(Pert(f"p{i}", f"p{i}", [strata[j] for j in own], reps))
    return perts, strata


@pytest.mark.parametrize("seed", range(12))
def test_components_of_equals_the_union_find_on_strata_keys(seed):
    rng = np.random.default_rng(seed)
    perts, strata = _random_table(rng, T=int(rng.integers(1, 12)), P=int(rng.integers(1, 15)))
    table = PertTable.from_perts(perts, strata)
    got = components_of(table)
    assert [m.tolist() for m, _ in got] == components_reference(perts)
    for members, st in got:  # the strata of a component: every stratum of its perturbations, sorted
        assert st.tolist() == sorted({int(table.seg_stratum[j]) for i in members.tolist()
                                      for j in range(table.soff[i], table.soff[i + 1])})


def test_a_perturbation_spanning_two_components_joins_them():
    strata = np.array(["a", "b", "c", "d"], dtype=object)
    one = [Pert("x", "x", ["a"], [np.array([0, 1])]), Pert("y", "y", ["c"], [np.array([2, 3])]),
           Pert("z", "z", ["d"], [np.array([4, 5])])]
    table = PertTable.from_perts(one, strata)
    assert [m.tolist() for m, _ in components_of(table)] == [[0], [1], [2]]
    both = one + [Pert("w", "w", ["a", "d"], [np.array([6]), np.array([7])])]
    got = components_of(PertTable.from_perts(both, strata))
    assert [(m.tolist(), s.tolist()) for m, s in got] == [([0, 2, 3], [0, 3]), ([1], [2])]
    assert components_of(PertTable.from_perts([], strata)) == []


def test_specs_from_the_arrays_equal_the_specs_from_perts():
    rng = np.random.default_rng(5)
    table = tiny_screen(rng, {"A": (4, {"a": 2, "b": 1}), "B": (4, {"b": 2, "c": 2}), "C": (4, {"d": 3}),
                              "D": (4, {"e": 1}), "E": (5, {"e": 2})})
    screen = prepare_screen(table, "Metadata_pert", "DMSO", "Metadata_plate", None, "cosine")
    pt = screen.perts
    for members, st in components_of(pt):
        keys = [pt.strata[s] for s in st.tolist()]
        idx = members.tolist()
        for spec in _engine.batch_specs(screen, idx, keys, 7) + [_engine.pert_spec(screen, i, keys, 7) for i in idx]:
            X, stratum, strata, skeys, sizes, rows = spec_reference(screen, spec.index, keys, 7, _engine.stream_key)
            rep = spec.replicates
            assert np.array_equal(rep.X, X) and rep.X.flags.c_contiguous
            assert rep.stratum.tolist() == stratum.tolist() and rep.strata.tolist() == strata.tolist()
            assert rep.stratum.dtype == rep.strata.dtype == np.int64
            assert spec.keys.tolist() == skeys.tolist() and spec.keys.dtype == np.uint64
            assert spec.sizes == sizes and spec.rows.tolist() == rows.tolist() and spec.codes is None


def test_specs_carry_the_pool_codes_of_positives_differ_by():
    from apnull.score.positives import pool_codes

    rng = np.random.default_rng(6)
    table = tiny_screen(rng, {"A": (4, {"a": 3, "b": 2}), "B": (5, {"b": 3, "c": 2})})
    table["Metadata_well"] = [f"w{i % 3}" for i in range(len(table))]
    screen = prepare_screen(table, "Metadata_pert", "DMSO", "Metadata_plate", None, "cosine",
                            positives_differ_by=["Metadata_well"])
    pt = screen.perts
    for members, st in components_of(pt):
        keys = [pt.strata[s] for s in st.tolist()]
        for spec in _engine.batch_specs(screen, members.tolist(), keys, 7):
            p = pt[spec.index]
            want = pool_codes(screen.codes, p.reps, [screen.controls[s] for s in p.strata])
            assert spec.codes.tolist() == want.tolist() and spec.codes.flags.c_contiguous


def test_all_assignments_counts_every_assignment():
    """permutations="all": the permutations column is prod_s C(k_s + n_s, k_s), the assignments enumerated."""
    from math import comb

    from apnull.score import score_profiles

    rng = np.random.default_rng(2)
    table = tiny_screen(rng, {"A": (5, {"a": 2, "b": 3}), "B": (4, {"b": 2})})
    res = score_profiles(table, "Metadata_pert", "DMSO", "Metadata_plate", permutations="all")
    got = dict(zip(res.groups["Metadata_pert"], res.groups["permutations"]))
    assert got == {"a": comb(7, 2), "b": comb(8, 3) * comb(6, 2)}


@pytest.mark.parametrize("seed", range(6))
def test_canonical_order_equals_lexsort_of_every_column(seed):
    """Controls in canonical order: np.lexsort of all feature columns (ties in position order), with
    ties in the leading columns, whole duplicate rows and -0.0 next to 0.0."""
    from apnull.score._prepare import canonical_order

    rng = np.random.default_rng(seed)
    n, d = int(rng.integers(2, 60)), int(rng.integers(1, 7))
    X = rng.integers(-1, 2, size=(n + 10, d)).astype(float)  # few values: long runs of ties
    X[rng.random(X.shape) < 0.2] *= -0.0
    X[:, -1] += rng.random(n + 10) * (rng.random(n + 10) < 0.5)
    X[5] = X[7]
    idx = rng.permutation(n + 10)[:n]
    if seed % 2:
        idx = np.sort(idx)
    want = idx[np.lexsort(X[idx].T[::-1])]
    assert canonical_order(X, idx).tolist() == want.tolist()
