"""Components of strata and the parts of a screen read from the perturbation table's arrays: the same
as the union-find over ``Pert`` objects and the perturbations' data built from them."""

import numpy as np
import pytest
from grouping_reference import components_reference, spec_reference
from score_helpers import from_python, tiny_screen

from apnull.score.engine.shards import touched_strata
from apnull.score.kernels import draws
from apnull.score.kernels.pool import Replicates
from apnull.score.nulls.permutation import ScreenWork, _sizes
from apnull.score.table.perts import Pert, PertTable, components_of
from apnull.score.table.screen import prepare_screen
from apnull.streams import stream_key


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


def _pool_codes_reference(codes, reps: list, controls: list) -> np.ndarray:
    """(P, C) codes of a perturbation's pool members in pool order: per stratum, its replicates
    (``reps[s]``, rows of the screen) then its controls (``controls[s]``)."""
    parts = []
    for r, c in zip(reps, controls):
        parts.append(codes[r])
        parts.append(codes[c])
    return np.ascontiguousarray(np.concatenate(parts))


def test_parts_from_the_arrays_equal_the_perturbations_data():
    """Every perturbation of a part (one component in process, a shard for a worker) reads the rows,
    strata, stream keys and sizes its ``Pert`` gives."""
    rng = np.random.default_rng(5)
    table = tiny_screen(rng, {"A": (4, {"a": 2, "b": 1}), "B": (4, {"b": 2, "c": 2}), "C": (4, {"d": 3}),
                              "D": (4, {"e": 1}), "E": (5, {"e": 2})})
    screen = prepare_screen(table, "Metadata_pert", "DMSO", "Metadata_plate", None, "cosine")
    work = ScreenWork(screen, 7)
    pt = screen.perts
    comps = components_of(pt)
    parts = ([(work.part(members, False), False) for members in work.groups()]
             + [(work.part(s, True), True) for s in work.shards(2)])
    for part, worker in parts:
        if worker:  # sent as (control rows, each stratum's count): made into tables on the worker
            part = work.prepare(part)
        for j, i in enumerate(part.index.tolist()):
            strata_of = next(st for members, st in comps if i in members.tolist())
            if worker:  # a shard's part holds the strata its perturbations of the component are in
                mates = part.index[part.comp_of == part.comp_of[j]]
                strata_of = touched_strata(pt.soff, pt.seg_stratum, mates, strata_of)
                assert part.comps[part.comp_of[j]].size.tolist() == [len(screen.controls[pt.strata[s]])
                                                                     for s in strata_of.tolist()]
            keys = [pt.strata[s] for s in strata_of.tolist()]
            X, stratum, strata, skeys, sizes, rows = spec_reference(screen, i, keys, 7, stream_key)
            rX, rstr = part.replicates(j)
            a = part.arrays
            segs = slice(int(a.soff[j]), int(a.soff[j + 1]))
            assert np.array_equal(rX, X) and rX.flags.c_contiguous
            assert rstr.tolist() == stratum.tolist() and a.seg_comp[segs].tolist() == strata.tolist()
            assert a.keys[segs].tolist() == skeys.tolist() and a.keys.dtype == np.uint64
            assert _sizes(part, part.comps[part.comp_of[j]], j) == sizes
            assert screen.rows[np.asarray(a.rows)[a.qoff[j]:a.qoff[j + 1]]].tolist() == rows.tolist() \
                or a.X is not screen.X
            assert a.rep_codes.shape == (a.rows.size, 0)


def test_pool_codes_of_positives_differ_by():
    """The kernels' pool codes (replicates, then controls, stratum by stratum) are each member's codes."""
    rng = np.random.default_rng(6)
    pool_codes = from_python(draws.pool_codes)
    table = tiny_screen(rng, {"A": (4, {"a": 3, "b": 2}), "B": (5, {"b": 3, "c": 2})})
    table["Metadata_well"] = [f"w{i % 3}" for i in range(len(table))]
    screen = prepare_screen(table, "Metadata_pert", "DMSO", "Metadata_plate", None, "cosine",
                            positives_differ_by=["Metadata_well"])
    work = ScreenWork(screen, 7)
    for members in work.groups():
        part = work.part(members, False)
        for j, i in enumerate(part.index.tolist()):
            p = screen.perts[i]
            X, rstr = part.replicates(j)
            a = part.arrays
            segs = slice(int(a.soff[j]), int(a.soff[j + 1]))
            reps = Replicates(X, rstr, np.ascontiguousarray(a.seg_comp[segs]))
            comp = part.comps[part.comp_of[j]]
            P = X.shape[0] + sum(int(comp.size[s]) for s in reps.strata)
            got = pool_codes(a.rep_codes, part.ctl_codes[part.comp_of[j]], comp, reps, a.qoff[j],
                             np.empty((P, a.rep_codes.shape[1]), dtype=np.int64))
            want = _pool_codes_reference(screen.codes, p.reps, [screen.controls[s] for s in p.strata])
            assert got.tolist() == want.tolist() and got.flags.c_contiguous


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
    from apnull.score.table.screen import canonical_order

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
