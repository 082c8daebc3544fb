"""The one union-find of the scoring wing (``table.segments.linked_roots``) and its two readers: the
components of a screen's strata (``table.perts.components_of``) and a comparison's units
(``nulls.compare.units_of``), against connected components found by a breadth-first search."""

import numpy as np
import pytest

from apnull.score.nulls.compare import units_of
from apnull.score.table.segments import linked_roots, offsets


def bfs_components(count, groups):
    """Each node's component as the smallest node reached from it (a breadth-first search)."""
    nbr = {i: set() for i in range(count)}
    for g in groups:
        for a in g:
            nbr[a] |= set(g)
    root = [-1] * count
    for start in range(count):
        if root[start] >= 0:
            continue
        seen, todo = {start}, [start]
        while todo:
            x = todo.pop()
            for y in nbr[x] - seen:
                seen.add(y)
                todo.append(y)
        for x in seen:
            root[x] = min(seen)
    return np.array(root)


def roots(count, groups):
    """``linked_roots`` of groups given as lists (their members run after run, and the runs' offsets)."""
    return linked_roots(count, [x for g in groups for x in g], offsets([len(g) for g in groups]))


@pytest.mark.parametrize("seed", range(30))
def test_linked_roots_are_the_components(seed):
    rng = np.random.default_rng(seed)
    count = int(rng.integers(1, 25))
    groups = [rng.choice(count, size=int(rng.integers(1, 4))).tolist() for _ in range(int(rng.integers(0, 15)))]
    np.testing.assert_array_equal(roots(count, groups), bfs_components(count, groups))


@pytest.mark.parametrize("count", [2, 33, 1000])
def test_linked_roots_of_a_long_chain_in_any_order(count):
    """A path whose links come in a random order and whose nodes are numbered at random: one component, the
    smallest node its root (the hooking rounds meet the worst order for a walk along the chain)."""
    rng = np.random.default_rng(count)
    names = rng.permutation(count)
    links = [[int(names[i]), int(names[i + 1])][::int(rng.choice([-1, 1]))] for i in rng.permutation(count - 1)]
    assert roots(count, links).tolist() == [0] * count
    np.testing.assert_array_equal(roots(count + 3, links + [[count + 2, count]]),
                                  bfs_components(count + 3, links + [[count + 2, count]]))


def test_linked_roots_edges():
    assert roots(0, []).tolist() == []
    assert roots(3, [[2], []]).tolist() == [0, 1, 2]
    assert roots(4, [[3, 1], [1, 2]]).tolist() == [0, 1, 1, 1]


@pytest.mark.parametrize("seed", range(20))
def test_units_are_the_components_of_strata_in_order_of_their_smallest(seed):
    rng = np.random.default_rng(100 + seed)
    plates = [f"plate_{i:02d}" for i in range(int(rng.integers(1, 12)))]
    strata_of = [rng.choice(plates, size=int(rng.integers(1, 3))).tolist() for _ in range(int(rng.integers(1, 20)))]
    unit, members = units_of(strata_of)
    names = sorted({s for st in strata_of for s in st})
    index = {s: i for i, s in enumerate(names)}
    root = bfs_components(len(names), [[index[s] for s in st] for st in strata_of])
    expected = [[names[i] for i in range(len(names)) if root[i] == r] for r in sorted(set(root.tolist()))]
    assert members == expected
    assert [min(m) for m in members] == sorted(min(m) for m in members)
    for t, st in enumerate(strata_of):
        assert all(s in members[unit[t]] for s in st)
    assert unit.dtype == np.int64


def test_units_of_nothing():
    unit, members = units_of([])
    assert unit.dtype == np.int64 and unit.size == 0 and members == []
