"""Rounds of adaptive permutations on dask with the screen sent to the workers once.

Each round of :func:`._adaptive.run_rounds` needs, for every perturbation still refined, its
replicate rows and its component's prepared controls. Shipping them with every round's tasks costs
the whole screen again per round (the scheduler, in the client process of a local cluster, holds
every pending task's data, and keeps a task's data while its result may be recomputed).
:class:`Scattered` instead builds each component once and scatters it to a worker
(``client.scatter``: the data is not part of any task): its prepared controls
(:func:`._engine.prepare_component`) and the :class:`._engine.PerturbationSpec` of every
perturbation of the component, over all the component's strata. A round's task then carries only
the indices of its batch and their small stream states, and runs where the component lives.

The results are those of the in-process rounds bit for bit: a perturbation's scores depend on its
own rows, its strata's controls and its stream keys, not on which other strata share its component.
"""

from __future__ import annotations

import numpy as np

from . import _engine

__all__ = ["Scattered", "build_component", "run_part", "TASK_BATCH"]

#: Perturbations per dask task at least (a task's overhead is that of scoring a few perturbations).
TASK_BATCH = 512


def build_component(strata, control_rows, kind, specs):
    """(Component, {perturbation index: spec}) of one component."""
    return _engine.prepare_component(strata, control_rows, kind), {sp.index: sp for sp in specs}


def run_part(data, indices, states, kind, target, h, one_batch):
    """``one_batch`` on the perturbations ``indices`` of a built component (runs on a worker)."""
    comp, specs = data
    return one_batch(comp, [specs[i] for i in indices], states, kind, target, h)


class Scattered:
    """The components of ``screen`` built on the workers of ``client`` as rounds first need them.

    Releasing the object (end of a run) releases the workers' copies.
    """

    def __init__(self, client, screen, seed):
        self.client, self.screen, self.seed = client, screen, seed
        self._comps = None            # list of component index lists
        self._of = None               # perturbation index -> component number
        self._futures = {}            # component number -> future of build_component

    def _component(self, c):
        if c not in self._futures:
            sc = self.screen
            idx = self._comps[c]
            strata = sorted({s for i in idx for s in sc.perts[i].strata})
            specs = [_engine.pert_spec(sc, i, strata, self.seed) for i in idx]
            rows = [np.ascontiguousarray(sc.X[sc.controls[s]]) for s in strata]
            [self._futures[c]] = self.client.scatter([build_component(strata, rows, sc.kind, specs)], hash=False)
        return self._futures[c]

    def run(self, indices, states, target, h, one_batch, batch, progress=None):
        """The outputs of ``one_batch`` over the perturbations ``indices`` (any order)."""
        from dask.distributed import as_completed

        if self._comps is None:
            self._comps = _engine.components(self.screen)
            self._of = {i: c for c, idx in enumerate(self._comps) for i in idx}
        by_comp: dict = {}
        for i in sorted(indices):
            by_comp.setdefault(self._of[i], []).append(i)
        futures, batch = [], max(batch, TASK_BATCH)
        for c in sorted(by_comp):
            todo, data = by_comp[c], self._component(c)
            for a in range(0, len(todo), batch):
                b = todo[a:a + batch]
                futures.append(self.client.submit(run_part, data, b, [states[i] for i in b], self.screen.kind,
                                                  target, h, one_batch, pure=False))
        out, done, total = [], 0, len(indices)
        for fut in as_completed(futures):
            part = fut.result()
            out.extend(part)
            done += len(part)
            if progress:
                progress(done, total)
        return out
