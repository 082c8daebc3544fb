"""The consistency null of a label: the perturbations' label sets permuted among them.

When an annotation says nothing about the profiles, the label sets are exchangeable among the
perturbations. Label l's null draws random labellings (each the previous one shuffled again, from
the identity; :func:`..kernels.labelsets.continue_label`) from the stream keyed by (seed,
"consistency", l) over the profiles in canonical order, and recomputes l's mAP; so each label's
p-value can stop on its own, and never depends on row order or on the other labels. With aggregate
"none", a perturbation's replicates carry their label set together. Perturbations without a label
take part (their empty label sets are permuted with the others: every profile of the rankings is
exchangeable), and the pair rule's values stay with the profiles, so every relabelled screen applies
``positives_differ_by`` as the observed one does. The engine
(:mod:`..engine.sequential`) runs the labels' streams, fixed B or adaptive.

The work (:class:`LabelWork`) is the scored labels over one set of similarity rows, which cannot be
cut: on dask it goes whole to every worker once.
"""

from __future__ import annotations

from typing import NamedTuple

import numpy as np

from ...law import VALUE_TOL
from ...streams import stream_key
from ..engine.executor import WholeWork
from ..engine.sequential import Null
from ..kernels.labelsets import continue_label, label_batch

__all__ = ["LabelPart", "LabelWork", "label_null", "labels_batch", "label_values", "label_key"]

#: Levels of the label null's state arrays: one entry (a row, for "gperm" and "values") per label.
LABEL_LEVELS = dict.fromkeys(("keys", "counters", "gperm", "drawn", "reached", "stopped", "observed"), "item")


class LabelPart(NamedTuple):
    """The data every label's null reads (the whole work)."""

    index: np.ndarray        #: items of the part (positions among the scored labels)
    labels: np.ndarray       #: (items,) label index t of each scored label
    rows: tuple              #: the similarity rows (:func:`..kernels.labelsets.similarity_rows`)
    lists: object            #: the profiles' :class:`..kernels.labelsets.LabelLists`


def label_key(seed: int, label: str) -> np.uint64:
    """The stream key of ``label``'s null: (seed, "consistency", label)."""
    return np.uint64(stream_key(seed, "consistency", label))


class LabelWork(WholeWork):
    """The scored labels ``ts`` (label indices) of a consistency run as the engine's work."""

    def __init__(self, prof, rows, ts):
        self.prof, self.rows = prof, rows
        self.ts = np.asarray(ts, dtype=np.int64)
        self.size = int(self.ts.size)

    def part(self, items, worker: bool) -> LabelPart:
        items = np.asarray(items, dtype=np.int64)
        return LabelPart(items, self.ts[items], self.rows, self.prof.lists)


def labels_batch(part: LabelPart, pos, st, target, h, keep=0):
    """One round of the label nulls at positions ``pos`` of ``part``, one compiled call: {"counters",
    "gperm", "drawn", "reached", "stopped"} and with ``keep`` "values" (the first ``keep`` of each)."""
    pos = np.asarray(pos, dtype=np.int64)
    counters, gperm, drawn, reached = (st["counters"].copy(), st["gperm"].copy(), st["drawn"].copy(),
                                       st["reached"].copy())
    stopped = np.zeros(pos.size, dtype=bool)
    values = np.full((pos.size, keep), np.nan)
    label_batch(part.labels[pos], st["keys"], counters, gperm, drawn, reached, st["observed"], target, h, VALUE_TOL,
                part.rows, part.lists, values, stopped)
    out = {"counters": counters, "gperm": gperm, "drawn": drawn, "reached": reached, "stopped": stopped}
    if keep:
        out["values"] = values
    return out


def label_null(work: LabelWork, observed, seed: int) -> Null:
    """The null of every scored label of ``work`` (observed mAPs ``observed``, in ``work.ts`` order)."""
    T = work.size
    G = work.prof.lists.gm_ptr.size - 1
    state = {"keys": np.array([label_key(seed, work.prof.labels[t]) for t in work.ts.tolist()], dtype=np.uint64),
             "counters": np.zeros(T, dtype=np.uint64), "gperm": np.tile(np.arange(G, dtype=np.int64), (T, 1)),
             "drawn": np.zeros(T, dtype=np.int64), "reached": np.zeros(T, dtype=np.int64),
             "stopped": np.zeros(T, dtype=bool), "observed": np.asarray(observed, dtype=float)}
    return Null(work, labels_batch, state, LABEL_LEVELS, tuple(k for k in LABEL_LEVELS if k != "stopped"), "item",
                np.arange(T), np.arange(T), "labels")


def label_values(prof, rows, t: int, draws: int, seed: int) -> np.ndarray:
    """The first ``draws`` null mAPs of label t (NaN where no query has an AP): the values its p-value
    counted."""
    G = prof.lists.gm_ptr.size - 1
    values = np.full(int(draws), np.nan)
    continue_label(np.int64(t), label_key(seed, prof.labels[t]), np.uint64(0), np.arange(G, dtype=np.int64),
                   np.int64(0), np.int64(0), np.int64(draws), np.int64(draws) + 1, VALUE_TOL, np.nan, rows,
                   prof.lists, values, np.zeros((0, 0), dtype=np.int64))
    return values
