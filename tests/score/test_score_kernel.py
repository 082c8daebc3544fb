"""The chunked permutation kernel gives the same bits as the per-draw kernel it replaced.

``kernel_reference`` is a frozen copy of the per-draw implementation. Hundreds of random small screens
(one stratum or several, equal or unequal control counts, 1 to 5 replicates per stratum, coarse values
with many exact ties, dot product and distance) are scored by both; every observed AP, Precision@R,
mAP and null value must be equal bit for bit.
"""

from __future__ import annotations

import numpy as np
import pytest

import kernel_reference as ref
from apnull.score.kernels import chunks, controls as ctl, pool as P, similarity, sort
from apnull.score.kernels.pool import Replicates, replicate_counts
from apnull.score.nulls.permutation import all_assignments, assignment_count
from score_helpers import from_python, run_perturbation


def _unit(X):
    norm = np.linalg.norm(X, axis=1, keepdims=True)
    norm[norm == 0] = 1.0
    return X / norm


def random_case(rng):
    """A component (its ControlRows), one perturbation's Replicates, and the similarity kind."""
    J = int(rng.choice([1, 1, 1, 2, 3]))
    d = int(rng.integers(1, 6))
    ties = rng.random() < 0.5
    kind = int(rng.integers(0, 2))
    equal = rng.random() < 0.5
    n0 = int(rng.integers(1, 40))
    sizes = [n0 if equal else int(rng.integers(1, 40)) for _ in range(J)]
    ks = [int(rng.integers(1, 6)) for _ in range(J)]
    if J == 1 and ks[0] == 1:
        ks[0] = 2

    def rows(count):
        X = rng.normal(size=(count, d))
        if ties:
            X = np.round(X * rng.choice([0.5, 1.0, 2.0]))
        return _unit(X) if kind == 0 else X

    Xc_list = [rows(nc) for nc in sizes]
    Xr = rows(sum(ks))
    if ties and rng.random() < 0.5:  # replicates that equal a control exactly
        for r in range(Xr.shape[0]):
            if rng.random() < 0.3:
                s = int(np.repeat(np.arange(J), ks)[r])
                Xr[r] = Xc_list[s][int(rng.integers(0, sizes[s]))]
    comp = ctl.control_rows(Xc_list, kind)
    rep_str = np.repeat(np.arange(J), ks).astype(np.int64)
    reps = Replicates(np.ascontiguousarray(Xr), rep_str, np.arange(J, dtype=np.int64))
    keys = rng.integers(0, 2**63, size=J).astype(np.uint64)
    return comp, reps, kind, keys, list(zip(ks, sizes))


def control_rows(X, kind):
    """``kernels.controls.sorted_control_rows`` into new arrays: (rows, pairs)."""
    return ctl.pair_rows(X, kind)


def _same(a, b):
    return np.array_equal(np.asarray(a), np.asarray(b), equal_nan=True)


@pytest.mark.parametrize("seed", range(6))
def test_random_draws_equal_the_reference(seed):
    rng = np.random.default_rng(1000 + seed)
    for _ in range(60):
        controls, reps, kind, keys, _ = random_case(rng)
        B = int(rng.choice([1, 7, chunks.CHUNK - 1, chunks.CHUNK, chunks.CHUNK + 1, 300]))
        none = np.empty((0, reps.X.shape[0]), dtype=np.int64)
        new = run_perturbation(reps, controls, kind, B, keys)
        old = ref.perturbation_scores(reps, ref.reference_controls(controls, kind), kind, B, keys, none)
        for a, b in zip(new, old):
            assert _same(a, b)


def test_every_assignment_equals_the_reference():
    rng = np.random.default_rng(7)
    done = 0
    while done < 40:
        controls, reps, kind, keys, sizes = random_case(rng)
        if assignment_count(sizes) > 3000:
            continue
        draws = all_assignments(sizes)
        new = run_perturbation(reps, controls, kind, 0, keys, draws=draws)
        old = ref.perturbation_scores(reps, ref.reference_controls(controls, kind), kind, 0, keys, draws)
        for a, b in zip(new, old):
            assert _same(a, b)
        done += 1


@pytest.mark.parametrize("draws", [0, 10**9])  # one stratum: counted when asked / the rank table
def test_pool_tables_equal_the_reference(draws):
    rng = np.random.default_rng(11)
    pool_layout = from_python(P.pool_layout)
    for _ in range(100):
        controls, reps, kind, _, _ = random_case(rng)
        new = pool_layout(reps, controls, kind, draws)
        old = ref.pool_layout(reps, ref.reference_controls(controls, kind), kind)
        for name in ("sim", "observed", "offset", "row", "control"):
            assert _same(getattr(new, name), getattr(old, name)), name
        if new.gt.shape[1]:  # several strata: the rank table
            assert _same(new.gt, old.gt) and _same(new.eq, old.eq)
            continue
        for r in range(new.sim.shape[0]):  # one stratum: counted when asked, the table's values
            su = int(new.stratum[new.observed[r]])
            for g in np.flatnonzero(new.stratum == su):
                got = replicate_counts(new, r, su, int(g), new.sim[r, g])
                assert got == (old.gt[r, g], old.eq[r, g]), (r, g)


@pytest.mark.parametrize("chunked", [True, False])
def test_rounds_continue_the_streams(chunked):
    """Draws continued from saved state in rounds give the draws of one long run (both kernels)."""
    rng = np.random.default_rng(5)
    done = 0
    while done < 30:
        controls, reps, kind, keys, _ = random_case(rng)
        if chunked and reps.strata.size > 1:
            continue
        whole = run_perturbation(reps, controls, kind, 400, keys, chunked=chunked)[3]
        state = {"counters": np.zeros(keys.size, dtype=np.uint64), "drawn": np.zeros(1, np.int64),
                 "reached": np.zeros(1, np.int64)}
        parts = []
        for target in (1, 151, 151, 400):
            before = int(state["drawn"][0])
            parts.append(run_perturbation(reps, controls, kind, target, keys, chunked=chunked, state=state)[3][before:])
        assert _same(np.concatenate(parts), whole)
        done += 1


def test_benchmark_sized_pool_equals_the_reference():
    rng = np.random.default_rng(3)
    Xc = _unit(rng.normal(size=(300, 20)))
    comp = ctl.control_rows([Xc], 0)
    for t in range(5):
        Xr = _unit(rng.normal(size=(4, 20)) + rng.normal(size=20) * 0.3)
        reps = Replicates(Xr, np.zeros(4, dtype=np.int64), np.zeros(1, dtype=np.int64))
        keys = np.array([t + 1], dtype=np.uint64)
        none = np.empty((0, 4), dtype=np.int64)
        new = run_perturbation(reps, comp, 0, 999, keys)
        old = ref.perturbation_scores(reps, ref.reference_controls(comp, 0), 0, 999, keys, none)
        for a, b in zip(new, old):
            assert _same(a, b)


@pytest.mark.parametrize("kind", [0, 1])
def test_float32_near_ties_equal_the_reference(kind):
    """Similarities that differ in float64 but round to the same float32: the kernel's float32
    comparisons must hand every such query to the exact count."""
    rng = np.random.default_rng(40 + kind)
    for t in range(20):
        n, k = int(rng.integers(3, 30)), int(rng.integers(2, 6))
        steps = rng.integers(0, 6, size=(n + k, 2)) * 2.0 ** -40  # far below float32's resolution
        X = 1.0 + steps
        X[rng.random(n + k) < 0.3, 1] += 0.5  # and some values float32 tells apart
        comp = ctl.control_rows([np.ascontiguousarray(X[:n])], kind)
        reps = Replicates(np.ascontiguousarray(X[n:]), np.zeros(k, dtype=np.int64), np.zeros(1, dtype=np.int64))
        keys = np.array([t + 1], dtype=np.uint64)
        none = np.empty((0, k), dtype=np.int64)
        new = run_perturbation(reps, comp, kind, 300, keys)
        old = ref.perturbation_scores(reps, ref.reference_controls(comp, kind), kind, 300, keys, none)
        for a, b in zip(new, old):
            assert _same(a, b)


@pytest.mark.parametrize("kind", [0, 1])
def test_control_tables_equal_the_reference(kind):
    rng = np.random.default_rng(20 + kind)
    for t in range(40):
        n = int(rng.integers(1, 60))
        X = rng.normal(size=(n, int(rng.integers(1, 9))))
        if t % 2:
            X = np.round(X)
        X[rng.random(n) < 0.1] = 0.0  # zero rows: similarities of +0.0 and -0.0
        rows, pairs = control_rows(X, kind)
        rows0, greater = ref.sorted_control_rows(X, kind)
        assert np.array_equal(rows, rows0)
        sims, ranks = pairs.view(np.float32), pairs.view(np.int16)
        assert pairs.size == n * (n - 1) // 2
        for a in range(n):
            for b in range(a + 1, n):
                i = ctl.pair_index(a, b, n)
                v = ref.sim(X, a, X, b, kind)
                assert sims[2 * i] == np.float32(v)
                for (q, y), g in zip(((a, b), (b, a)), ranks[4 * i + 2:4 * i + 4]):
                    assert (-1 - g if g < 0 else g) == greater[q, y] == ctl.pair_rank(ranks, 0, q, y, n)
                    assert rows[q, n - 2 - greater[q, y]] == v
                    assert (g < 0) == (np.sum(rows[q] == v) > 1)


def test_radix_argsort_is_the_stable_order():
    rng = np.random.default_rng(4)
    work = sort.radix_work(600)
    swork = sort.sort_work(600)
    radix_argsort, stable_argsort = from_python(sort.radix_argsort), from_python(sort.stable_argsort)
    for t in range(300):
        n = int(rng.integers(0, 600))
        v = rng.normal(size=n) * 10.0 ** rng.integers(-8, 8)
        if t % 2:
            v = np.round(v)
        if t % 3 == 0 and n:
            v[rng.integers(0, n, size=n // 3 + 1)] = -0.0
        if t % 5 == 1:  # a span of subnormal numbers
            v = v * 1e-318
        if t % 7 == 2 and n > 1:  # a span beyond the largest float
            v[0], v[-1] = 1e308, -1e308
        order = np.empty(n, dtype=np.int64)
        radix_argsort(v, order, work)
        assert np.array_equal(order, np.argsort(v, kind="mergesort"))
        order2 = np.full(n, -1, dtype=np.int64)
        stable_argsort(v, order2, swork)
        assert np.array_equal(order2, order)


def _kinds():
    """Similarity kinds of ``kernels.similarity.sim``: 0 and 1, and 2 (absolute dot product) where it is known."""
    X = np.array([[1.0, 0.0], [-1.0, 0.0]])
    return [0, 1, 2] if similarity.sim(X, 0, X, 1, 2) == 1.0 else [0, 1]


def test_blocked_similarities_equal_sim():
    rng = np.random.default_rng(9)
    for kind in _kinds():
        for _ in range(20):
            n, k, d = int(rng.integers(2, 30)), int(rng.integers(1, 9)), int(rng.integers(1, 12))
            Xc, Xr = rng.normal(size=(n, d)), rng.normal(size=(k, d))
            rows, _ = control_rows(Xc, kind)
            want = np.sort(np.array([[similarity.sim(Xc, a, Xc, b, kind) for b in range(n) if b != a]
                                     for a in range(n)]), axis=1)
            assert np.array_equal(rows, want)
            g_rep = np.r_[np.arange(k), np.full(n, -1)].astype(np.int64)
            g_row = np.r_[np.full(k, -1), np.arange(n)].astype(np.int64)
            got = P.replicate_sims(Xr, Xc, np.ascontiguousarray(Xc.T), g_rep, g_row, kind)
            for r in range(k):
                for g in range(k + n):
                    ref_v = similarity.sim(Xr, r, Xr, g, kind) if g < k else similarity.sim(Xr, r, Xc, g - k, kind)
                    assert got[r, g] == ref_v


def coded_pool(rng, pool_layout):
    """(controls, pool, kind, keys, codes): a :func:`random_case` laid out (``pool_layout`` called from
    Python) with pair-rule codes of none or one column for its members."""
    controls, reps, kind, keys, _ = random_case(rng)
    pool = pool_layout(reps, controls, kind, 0)
    codes = rng.integers(0, 3, size=(pool.stratum.size, int(rng.integers(0, 2)))).astype(np.int64)
    return controls, pool, kind, keys, codes


#: ``evaluate``'s memo arguments for no memo.
NO_MEMO = (np.empty(0), np.empty(0, dtype=np.int32), np.empty(0, dtype=np.int32))


def test_pairs_read_from_the_memo_have_the_bits_of_pairs_computed():
    """``evaluate`` with a memo of the pool's pairs across strata, kept over many draws (a pair a draw
    computed, a later draw reads): every query's AP and Precision@R and the mean the bits of the
    evaluation without memo, ties and the pair rule included; the memo holds pairs of members of
    different strata only, and the draws did read some (the same assignment scored twice reads every
    one it needs)."""
    rng = np.random.default_rng(29)
    pool_layout, draw, evaluate = from_python(P.pool_layout), from_python(P.draw_assignment), from_python(P.evaluate)
    read = 0
    for _ in range(120):
        controls, pool, kind, keys, codes = coded_pool(rng, pool_layout)
        k, members = pool.sim.shape[0], pool.stratum.size
        memo = (np.full(members * members, np.nan), np.full(members * members, -1, dtype=np.int32),
                np.zeros(members * members, dtype=np.int32))
        counters = np.zeros(keys.size, dtype=np.uint64)
        D = np.empty(k, dtype=np.int64)
        for _ in range(12):
            draw(pool, keys, counters, D)
            for again in range(2):
                known = int((memo[1] >= 0).sum())
                got, want = [], []
                for table, out in ((memo, got), (NO_MEMO, want)):
                    ap, pr = np.full(k, -7.0), np.full(k, -7.0)
                    m = evaluate(D, True, ap, pr, np.empty((1, k)), np.empty((5, k), dtype=np.int64), controls, pool,
                                 kind, codes, -1, *table)
                    out += [m, *ap, *pr]
                assert all(_same(a, b) for a, b in zip(got, want))
                if again:
                    assert int((memo[1] >= 0).sum()) == known  # every pair of D known: nothing computed again
                    read += known > 0
        u, y = np.divmod(np.flatnonzero(memo[1] >= 0), members)
        assert np.all(pool.stratum[u] != pool.stratum[y])
    assert read > 500


def test_one_query_scored_alone_has_the_bits_of_every_query_scored():
    """``evaluate(..., only=i)`` (a query's conditional null: its own AP only) gives query i the AP and
    Precision@R that scoring every query gives it, bit for bit, ties and the pair rule's left-out
    queries included, and writes no other query's values."""
    rng = np.random.default_rng(23)
    pool_layout, draw, evaluate = from_python(P.pool_layout), from_python(P.draw_assignment), from_python(P.evaluate)
    checked = 0
    for _ in range(120):
        controls, pool, kind, keys, codes = coded_pool(rng, pool_layout)
        k, members = pool.sim.shape[0], pool.stratum.size
        counters = np.zeros(keys.size, dtype=np.uint64)
        D = np.empty(k, dtype=np.int64)
        for _ in range(5):
            draw(pool, keys, counters, D)
            ap, pr = np.full(k, -7.0), np.full(k, -7.0)
            evaluate(D, True, ap, pr, np.empty((1, k)), np.empty((5, k), dtype=np.int64), controls, pool, kind,
                     codes, -1, *NO_MEMO)
            assert not np.isin(-7.0, ap)
            for i in range(k):
                one_ap, one_pr = np.full(k, -7.0), np.full(k, -7.0)
                alone = evaluate(D, True, one_ap, one_pr, np.empty((1, k)), np.empty((5, k), dtype=np.int64), controls,
                                 pool, kind, codes, i, *NO_MEMO)
                assert _same(one_ap[i], ap[i]) and _same(one_pr[i], pr[i])
                assert _same(alone, 0.0 if np.isnan(ap[i]) else ap[i])
                assert np.all(np.delete(one_ap, i) == -7.0) and np.all(np.delete(one_pr, i) == -7.0)
                checked += 1
    assert checked > 1000
