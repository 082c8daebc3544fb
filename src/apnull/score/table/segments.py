"""Arrays of runs and links, the lowest of the scoring wing's helpers (the table, the engine and the
nulls read them): components of nodes linked by groups (a union-find)."""

from __future__ import annotations

import numpy as np

__all__ = ["linked_roots"]


def linked_roots(count: int, groups) -> np.ndarray:
    """The component of each of ``count`` nodes (0 .. count - 1) when the members of every group (a
    sequence of node indices) are linked: (count,) int64, each node's root, the smallest node of its
    component (a union-find with path halving, the smaller root kept). A node no group names is its
    own component; a group of one links nothing."""
    parent = list(range(count))

    def find(x):
        while parent[x] != x:
            parent[x] = parent[parent[x]]
            x = parent[x]
        return x

    for group in groups:
        if len(group) < 2:
            continue
        a = find(int(group[0]))
        for s in group[1:]:
            b = find(int(s))
            if a != b:
                parent[max(a, b)] = min(a, b)
                a = min(a, b)
    return np.array([find(s) for s in range(count)], dtype=np.int64)
