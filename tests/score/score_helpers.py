"""Shared helpers for tests/score (brute-force references; importable as ``score_helpers``)."""

from __future__ import annotations

import functools
import itertools

import numba
import numpy as np
import pandas as pd


@functools.cache
def from_python(kernel):
    """A compiled caller of ``kernel``, an ``apnull.compiled.inner`` kernel (which Python cannot call):
    ``from_python(kernel)(*args)`` is ``kernel(*args)``. One caller per kernel and test process: each
    compiles the kernel's whole body into itself (seconds for ``pool_layout``), once per argument types."""

    @numba.njit
    def call(*args):  # pragma: no cover - compiled
        return kernel(*args)

    return call


def brute_tie_ap(scores, relevant):
    """Mean AP over every order of the items that breaks ties (N <= 8): every order of each tied group,
    group after group from the highest score. An order of all N items breaks the ties as the orders it
    induces on the groups, and each of those comes from the same number of the N! orders, so the mean
    over the groups' orders is the mean over all N! (3! 2! 2! = 24 orders for 7 items, not 5,040)."""
    scores = np.asarray(scores, float)
    rel = np.asarray(relevant, bool)
    m = int(rel.sum())
    groups = [rel[scores == s].tolist() for s in sorted(set(scores.tolist()), reverse=True)]
    total, count = 0.0, 0
    for orders in itertools.product(*(itertools.permutations(g) for g in groups)):
        ranks = [i for i, hit in enumerate((x for g in orders for x in g), start=1) if hit]
        total += sum(k / r for k, r in enumerate(ranks, start=1)) / m
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


def crossed_table(compounds=120, replicates=4, plates=13, controls=5, d=8, seed=0, step=1, dtype=np.float64):
    """A screen in the crossed layout (each replicate on its own plate, JUMP's): compound i's replicates on
    plates ``(step * i + r) mod plates``, r < replicates, one well a plate, beside each plate's ``controls``
    DMSO wells; a plate effect (0.4 of a unit normal per plate) and about a fifth of the compounds active.
    Columns ``cmp``, ``plate``, features ``f0..`` as ``dtype``. With ``plates`` prime to ``step`` every plate
    is linked to every other (one component); ``step = replicates`` puts the wells on the plates in turn."""
    rng = np.random.default_rng(seed)
    comp = np.repeat(np.arange(compounds), replicates)
    plate_of = (step * comp + np.tile(np.arange(replicates), compounds)) % plates
    labels = np.concatenate([[f"c{i:03d}" for i in comp], ["DMSO"] * (plates * controls)])
    pcol = np.concatenate([plate_of, np.repeat(np.arange(plates), controls)])
    X = rng.standard_normal((labels.size, d)) + 0.4 * rng.standard_normal((plates, d))[pcol]
    X[:comp.size] += (rng.random(compounds) < 0.2)[comp, None] * rng.standard_normal((compounds, d))[comp]
    t = pd.DataFrame(X.astype(dtype), columns=[f"f{i}" for i in range(d)])
    t.insert(0, "plate", [f"p{p:03d}" for p in pcol])
    t.insert(0, "cmp", labels)
    return t


def block_table(perts=40, replicates=3, plates=8, controls=6, d=8, seed=1, plate_effect=0.0, ties=False,
                dtype=np.float64, feature="f"):
    """A screen in the block layout (a perturbation's replicates on one plate: one component a plate):
    per plate ``controls`` DMSO wells then ``perts // plates`` perturbations of ``replicates`` wells.
    Features ``feature0..`` as ``dtype``: unit normals plus ``plate_effect`` times a normal per plate;
    ``ties``: row 5 a copy of row 3 (two equal controls) and row 7's first feature row 8's (the canonical
    order reads the next feature)."""
    rng = np.random.default_rng(seed)
    rows = []
    for p in range(plates):
        rows += [("DMSO", f"q{p}")] * controls
        rows += [(f"t{p}_{i}", f"q{p}") for i in range(perts // plates) for _ in range(replicates)]
    t = pd.DataFrame(rows, columns=["cmp", "plate"])
    X = rng.standard_normal((len(t), d))
    if plate_effect:
        X += plate_effect * rng.standard_normal((plates, d))[[int(s[1:]) for s in t["plate"]]]
    X = X.astype(dtype)
    if ties:
        X[5, :] = X[3, :]
        X[7, 0] = X[8, 0]
    return pd.concat([t, pd.DataFrame(X, columns=[f"{feature}{i}" for i in range(d)])], axis=1)


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


def run_perturbation(reps, controls, kind, B, keys, draws=None, codes=None, chunked=None, state=None, h=None):
    """(ap, pr, mAP, null values) of one perturbation by the library's batch kernels, the path a run takes.

    ``reps`` a ``kernels.pool.Replicates``, ``controls`` a ``kernels.controls.ControlRows`` (its strata
    ``reps.strata``); ``B`` draws continued to (``state``: a dict of "counters", "drawn", "reached" to
    continue, updated in place, and "stopped" set; values then land at their draw index of a length-B
    array); ``draws`` an explicit enumeration; ``codes`` (rows, C) pair-rule codes of the replicates then
    the controls of each stratum (pool order); ``chunked`` forces the chunked single-stratum kernel
    (default: when the pool spans one stratum without codes or draws); ``h`` a Besag-Clifford stop
    (default none).
    """
    from apnull.law import VALUE_TOL
    from apnull.score.kernels.chunks import FIRST_CHUNK
    from apnull.score.kernels.draws import Counts, Observed, PartRows, mean_batch, single_batch

    k, J = reps.X.shape[0], reps.strata.size
    seg_len = np.bincount(reps.stratum, minlength=J).astype(np.int64)
    no = np.zeros((0, 0), dtype=np.int64)
    if codes is None:
        rep_codes, ctl_codes = np.zeros((k, 0), dtype=np.int64), no
    else:  # pool order: per stratum the replicates, then the controls: split them back
        codes = np.asarray(codes, dtype=np.int64)
        rep_parts, ctl_parts, g = [], [], 0
        for s in range(J):
            ks, ns = int(seg_len[s]), int(controls.size[reps.strata[s]])
            rep_parts.append(codes[g:g + ks])
            ctl_parts.append(codes[g + ks:g + ks + ns])
            g += ks + ns
        rep_codes = np.ascontiguousarray(np.concatenate(rep_parts))
        ctl_codes = np.ascontiguousarray(np.concatenate(ctl_parts))
    part = PartRows(np.ascontiguousarray(reps.X), np.arange(k, dtype=np.int64), np.array([0, k], dtype=np.int64),
                    np.array([0, J], dtype=np.int64), seg_len, np.ascontiguousarray(reps.strata, dtype=np.int64),
                    np.ascontiguousarray(keys, dtype=np.uint64), rep_codes)
    pos = np.zeros(1, dtype=np.int64)
    st = state if state is not None else {"counters": np.zeros(J, dtype=np.uint64), "drawn": np.zeros(1, np.int64),
                                          "reached": np.zeros(1, np.int64)}
    counts = Counts(st["counters"], st["drawn"], st["reached"], np.zeros(1, dtype=bool))
    seen = Observed(np.empty(k), np.empty(k), np.empty(1))
    T = 0 if draws is None else draws.shape[0]
    target = T if T else int(B)
    values = np.full((1, target), np.nan)
    h = target + 1 if h is None else int(h)
    if chunked is None:
        chunked = J == 1 and codes is None and not T and k >= 2
    if chunked:
        single_batch(part, controls, kind, pos, counts, target, h, VALUE_TOL, FIRST_CHUNK if h <= target else target,
                     seen, values)
    else:
        mean_batch(part, controls, ctl_codes, kind, pos, counts, target, h, VALUE_TOL, seen, values,
                   no if draws is None else np.ascontiguousarray(draws, dtype=np.int64))
    if state is not None:
        state["stopped"] = counts.stopped
    return seen.ap, seen.pr, seen.maps[0], values[0]


def perturbation_case(screen, i, seed):
    """(Replicates, ControlRows, kind, stream keys) of perturbation i of a prepared screen, as a run
    builds them (``nulls.permutation.ScreenWork``)."""
    from apnull.score.kernels.pool import Replicates
    from apnull.score.nulls.permutation import ScreenWork

    part = ScreenWork(screen, seed).part(np.array([i]), False)
    X, rep_str = part.replicates(0)
    a = part.arrays
    segs = slice(int(a.soff[0]), int(a.soff[1]))
    reps = Replicates(X, rep_str, np.ascontiguousarray(a.seg_comp[segs]))
    return reps, part.comps[0], part.kind, np.ascontiguousarray(a.keys[segs])


def draws_before_laws(monkeypatch) -> list:
    """Record, as :func:`apnull.score.nulls.conditional.law_batch` is asked to count queries' conditional laws,
    the draws those it counted had made before (one sum a call): the list the run fills."""
    from apnull.score.nulls import conditional

    before, real_law = [], conditional.law_batch

    def law_batch(rows, shape, which, ap, tol, limit, counts, exact):
        drawn = counts.drawn.copy()
        real_law(rows, shape, which, ap, tol, limit, counts, exact)
        before.append(int(drawn[which & exact].sum()))

    monkeypatch.setattr(conditional, "law_batch", law_batch)
    return before
