"""The crossed layout (one replicate a plate, JUMP's): its look-up kernels against the general path,
against enumeration of every draw on small pools (ties included), and calibrated on a true-null screen."""

import itertools

import numpy as np
import pandas as pd
import pytest
from scipy.stats import binom, chisquare
from score_helpers import brute_permutation_p, draws_before_laws, from_python, reference_ap

import apnull.score.nulls.conditional as conditional
import apnull.score.nulls.permutation as permutation
import apnull.score.nulls.pooltables as pooltables
from apnull.score import score_profiles
from apnull.score.kernels import crossed
from apnull.score.kernels import querylaw

KW = dict(perturbation="Metadata_pert", control="DMSO", stratum="Metadata_plate")


def crossed_screen(rng, perts=12, plates=4, controls=5, d=6, ties=False, plate_effect=0.0, extra=True):
    """Each perturbation on 2 .. plates plates, one replicate each; with ``extra`` one perturbation with
    two replicates on a plate (the general path beside the crossed one)."""
    rows = []
    for p in range(plates):
        rows += [("DMSO", f"P{p}")] * controls
    for i in range(perts):
        k = 2 + i % (plates - 1)
        for p in rng.choice(plates, size=k, replace=False):
            rows.append((f"t{i:02d}", f"P{p}"))
    if extra:
        rows += [("two", "P0"), ("two", "P0"), ("two", "P1")]
    X = rng.normal(size=(len(rows), d))
    if ties:
        X = np.round(X)
        X[np.all(X == 0, axis=1), 0] = 1.0
    shift = plate_effect * rng.normal(size=(plates, d))
    X += shift[[int(s[1:]) for _, s in rows]]
    df = pd.DataFrame(rows, columns=["Metadata_pert", "Metadata_plate"])
    return pd.concat([df, pd.DataFrame(X, columns=[f"f{i}" for i in range(d)])], axis=1)


@pytest.fixture(autouse=True)
def crossed_on_small_screens(monkeypatch):
    """These screens are small: let them take the crossed kernels (a run takes them from
    permutation.CROSSED_MIN_PERTURBATIONS perturbations on)."""
    monkeypatch.setattr(permutation, "CROSSED_MIN_PERTURBATIONS", 0)


@pytest.fixture
def general_only(monkeypatch):
    """Score with the general kernels only (the path before the crossed kernels)."""
    def use(flag):
        fn = (lambda arrays, comps, comp_of, pos: np.zeros(len(pos), dtype=bool)) if flag else crossed.crossed_pools
        monkeypatch.setattr(permutation, "crossed_pools", fn)
        monkeypatch.setattr(conditional, "crossed_pools", fn)
    return use


def assert_same_as_general(general_only, new, table, names=None, **kw):
    """``new`` (scored with the crossed kernels) against ``table`` scored by the general path with the same
    ``kw``: every table, and the null of each perturbation of ``names`` (default all), bit for bit."""
    general_only(True)
    old = score_profiles(table, **KW, **kw)
    pd.testing.assert_frame_equal(new.groups, old.groups)
    pd.testing.assert_frame_equal(new.queries, old.queries)
    for name in new.groups["Metadata_pert"] if names is None else names:
        general_only(False)
        a = new.null_maps(name)
        general_only(True)
        assert np.array_equal(a, old.null_maps(name)), name


@pytest.mark.parametrize("similarity, ties, B", [("cosine", False, 99), ("cosine", True, 99), ("euclidean", False, "auto"),
                                                 ("manhattan", True, "auto"), ("correlation", False, 50), ("cosine", False, 999),
                                                 ("cosine", True, 999)])
def test_crossed_kernels_give_the_general_paths_tables(general_only, monkeypatch, similarity, ties, B):
    """Same draws, same values: every table equal to the general path's, bit for bit (so the same
    p-value distribution), the observed APs included; the crossed kernels did run (their exact
    conditional law off: :func:`test_exact_query_law_in_the_engine` checks it)."""
    monkeypatch.setattr(conditional, "EXACT_DRAWS", 0)
    table = crossed_screen(np.random.default_rng(3), ties=ties, plate_effect=0.5)
    calls = []
    real = crossed.crossed_pools

    def spy(arrays, comps, comp_of, pos):
        out = real(arrays, comps, comp_of, pos)
        calls.append(int(out.sum()))
        return out

    monkeypatch.setattr(permutation, "crossed_pools", spy)
    monkeypatch.setattr(conditional, "crossed_pools", spy)
    new = score_profiles(table, **KW, similarity=similarity, permutations=B, seed=5)
    assert sum(calls) > 0
    assert_same_as_general(general_only, new, table, ("t00", "t05"), similarity=similarity, permutations=B, seed=5)


def test_filled_pools_with_positives_tied_across_plates(general_only):
    """Controls copied from one plate to others: a query's row then holds members of different plates
    as similar to it (no tie with its own plate-mates), which a filled pool's fast draws
    (:func:`apnull.score.kernels.filled.filled_mean`) must leave to the tie-aware walk; and pools of
    more than five replicates, ranked by counting rather than the four-positive network. Every table
    and drawn value the general path's, bit for bit (B = 2999: every pool filled)."""
    for rng, plates, perts in ((np.random.default_rng(21), 4, 10), (np.random.default_rng(22), 7, 8)):
        table = crossed_screen(rng, perts=perts, plates=plates, controls=5, extra=False)
        feats = [c for c in table.columns if c.startswith("f")]
        ctl = table["Metadata_pert"] == "DMSO"
        first = table.loc[ctl & (table["Metadata_plate"] == "P0"), feats].to_numpy()
        for plate in ("P1", "P2", "P3"):
            table.loc[ctl & (table["Metadata_plate"] == plate), feats] = first
        general_only(False)
        new = score_profiles(table, **KW, permutations=2999, seed=4)
        assert_same_as_general(general_only, new, table, permutations=2999, seed=4)


@pytest.mark.parametrize("plates", [6, 8])
def test_untied_pools_draw_the_general_paths_values(general_only, plates):
    """Pools without a tie in any row draw by :func:`apnull.score.kernels.filled.untied_mean` (five
    replicates by the four-positive network, others by counting ranks): every table and drawn value the
    general path's, bit for bit (B = 999: every pool filled)."""
    table = crossed_screen(np.random.default_rng(plates), perts=3 * (plates - 1), plates=plates, extra=False,
                           plate_effect=0.5)
    assert set(table.groupby("Metadata_pert").size().drop("DMSO")) >= {2, 5}
    general_only(False)
    new = score_profiles(table, **KW, permutations=999, seed=9)
    assert_same_as_general(general_only, new, table, permutations=999, seed=9)


def check_shared_blocks(tab, ctl, kind=0) -> set:
    """Every held block of the :class:`apnull.score.kernels.filled.Shared` ``tab`` of the controls
    ``ctl`` against brute force: at ``at[a, b] + i * size[b] + j`` the bits of ``sim`` of control i of
    plate a and control j of plate b, and the counts a scan of i's plate-mates gives; both orders of a
    pair of plates held, and no two blocks overlapping. Returns the pairs of plates a < b held."""
    from apnull.score.kernels.similarity import sim

    X = np.asarray(ctl.X, dtype=float)
    size, start = ctl.size.tolist(), ctl.start.tolist()
    held, cover = set(), np.zeros(tab.v.size, dtype=int)
    for a, b in zip(*np.nonzero(tab.at >= 0)):
        a, b = int(a), int(b)
        assert a != b and tab.at[b, a] >= 0
        held.add((min(a, b), max(a, b)))
        o = int(tab.at[a, b])
        cover[o:o + size[a] * size[b]] += 1
        for i in range(size[a]):
            mates = [sim(X, start[a] + i, X, start[a] + m, kind) for m in range(size[a]) if m != i]
            for j in range(size[b]):
                v = tab.v[o + i * size[b] + j]
                assert v == sim(X, start[a] + i, X, start[b] + j, kind)
                assert (tab.gt[o + i * size[b] + j], tab.eq[o + i * size[b] + j]) == (
                    sum(m > v for m in mates), sum(m == v for m in mates))
    assert np.array_equal(cover, np.ones(tab.v.size, dtype=int))  # every pair in exactly one block
    return held


def test_shared_blocks_against_brute_force(monkeypatch):
    """The component's shared pairs of two controls (:func:`apnull.score.nulls.pooltables.shared_table`), a
    block for each pair of plates a perturbation spans: each similarity the bits of ``sim``, each count
    what a scan of the control's plate-mates gives, in its place (a block transposed or misplaced fails);
    the pairs held those spanned; built once for the run; within SHARED_MOST, the pairs spanned by the
    most perturbations first; none with no room."""
    from apnull.score.nulls.permutation import ScreenWork
    from apnull.score.nulls.pooltables import shared_table, spanned_pairs
    from apnull.score.table.screen import prepare_screen

    table = crossed_screen(np.random.default_rng(6), perts=5, plates=8, controls=4, ties=True, extra=False)
    screen = prepare_screen(table, "Metadata_pert", "DMSO", "Metadata_plate", None, "cosine")
    work = ScreenWork(screen, 0)
    part = work.part(np.arange(len(screen.perts)), False)
    ctl = part.comps[0]
    position = {screen.perts.strata[s]: i for i, s in enumerate(work.components[0][1].tolist())}  # ControlRows order
    spans = {}  # the pairs of plates of each perturbation (one replicate a plate), counted by hand
    for name, plates in table[table["Metadata_pert"] != "DMSO"].groupby("Metadata_pert")["Metadata_plate"]:
        for pair in itertools.combinations(sorted(position[p] for p in plates), 2):
            spans[pair] = spans.get(pair, 0) + 1
    assert len(spans) < 8 * 7 // 2 and max(spans.values()) > 1  # some pairs not spanned, some more than once
    a, b, count = spanned_pairs(part, 0)
    assert dict(zip(zip(a.tolist(), b.tolist()), count.tolist())) == spans
    tab = shared_table(part, 0)
    assert check_shared_blocks(tab, ctl) == set(spans)
    assert (tab.eq > 0).any()  # ties among them (rounded rows)
    assert shared_table(work.part(np.arange(2), False), 0) is tab  # built once: a part needing no new block
    size = ctl.size
    cost = {pair: 2 * int(size[pair[0]] * size[pair[1]]) for pair in spans}
    S = size.size
    for room in (sum(cost.values()) - 1, max(cost.values()) * 2):
        monkeypatch.setattr(pooltables, "SHARED_MOST", room + S * S // 2)
        held = check_shared_blocks(shared_table(ScreenWork(screen, 0).part(np.arange(len(screen.perts)), False), 0), ctl)
        assert held and held < set(spans) and sum(cost[p] for p in held) <= room
        assert min(spans[p] for p in held) >= max(spans[p] for p in set(spans) - held)  # the most spanned first
    monkeypatch.setattr(pooltables, "SHARED_MOST", S * S // 2)
    assert shared_table(ScreenWork(screen, 0).part(np.arange(len(screen.perts)), False), 0).at.size == 0


def test_shared_blocks_grow_with_the_next_part():
    """The next group of a component (its own part, the same holder) adds the blocks it needs: a new table
    whose old blocks keep their places and values (a batch still reading the old one reads it whole), each
    block checked against brute force."""
    from apnull.score.nulls.permutation import ScreenWork
    from apnull.score.nulls.pooltables import shared_table, spanned_pairs
    from apnull.score.table.screen import prepare_screen

    table = crossed_screen(np.random.default_rng(8), perts=10, plates=6, controls=4, extra=False)
    screen = prepare_screen(table, "Metadata_pert", "DMSO", "Metadata_plate", None, "euclidean")
    work = ScreenWork(screen, 0)
    first = work.part(np.arange(2), False)
    tab = shared_table(first, 0)
    kept = (tab.v.copy(), tab.gt.copy(), tab.eq.copy(), tab.at.copy())
    second = work.part(np.arange(2, len(screen.perts)), False)
    assert second.shared[0] is first.shared[0]  # the same component's holder
    grown = shared_table(second, 0)
    n = kept[0].size
    assert grown is not tab and grown.v.size > n
    assert all(np.array_equal(x, y) for x, y in zip(kept, tab))  # the old table untouched
    assert (np.array_equal(grown.v[:n], kept[0]) and np.array_equal(grown.gt[:n], kept[1])
            and np.array_equal(grown.eq[:n], kept[2]))
    assert np.array_equal(grown.at[kept[3] >= 0], kept[3][kept[3] >= 0])
    wanted = set()
    for part in (first, second):
        a, b, _ = spanned_pairs(part, 0)
        wanted |= set(zip(a.tolist(), b.tolist()))
    assert check_shared_blocks(grown, second.comps[0], kind=1) == wanted


@pytest.mark.parametrize("similarity, B", [("cosine", 99), ("cosine", 999), ("euclidean", "auto"),
                                           ("abs_cosine", 999)])
def test_some_shared_blocks_give_the_same_tables(general_only, monkeypatch, similarity, B):
    """A component too large to share every pair of plates (SHARED_MOST below them all, as on a full JUMP
    screen): the pools read the blocks held and compute the others (lazily, four at a time, or filled a
    block at a time); every table and drawn value that of a run sharing none and the general path's,
    bit for bit. The run did share some blocks and leave some out."""
    monkeypatch.setattr(conditional, "EXACT_DRAWS", 0)
    table = crossed_screen(np.random.default_rng(41), perts=16, plates=6, controls=6, d=48, ties=similarity == "abs_cosine",
                           plate_effect=0.5)
    monkeypatch.setattr(pooltables, "SHARED_MOST", 18 + 5 * 72)  # the index (6 x 6 plates) and 5 pairs of plates
    tables = []
    real = pooltables.shared_table

    def spy(part, c):
        tab = real(part, c)
        a, _, _ = pooltables.spanned_pairs(part, c)
        tables.append(((tab.at >= 0).sum() // 2, a.size))
        return tab

    monkeypatch.setattr(permutation, "shared_table", spy)
    general_only(False)
    new = score_profiles(table, **KW, similarity=similarity, permutations=B, seed=8)
    held, spanned = max(tables)  # a batch asking while another thread builds it goes on without it (held 0)
    assert 0 < held < spanned
    names = ("t00", "t03", "t07", "t12")
    monkeypatch.setattr(pooltables, "SHARED_MOST", 0)
    old = score_profiles(table, **KW, similarity=similarity, permutations=B, seed=8)
    pd.testing.assert_frame_equal(new.groups, old.groups)
    pd.testing.assert_frame_equal(new.queries, old.queries)
    monkeypatch.setattr(pooltables, "SHARED_MOST", 18 + 5 * 72)
    assert_same_as_general(general_only, new, table, names, similarity=similarity, permutations=B, seed=8)


@pytest.mark.parametrize("similarity, ties, B", [("cosine", False, 99), ("abs_cosine", True, 99),
                                                 ("correlation", False, "auto"), ("euclidean", False, 99)])
def test_lazy_control_pairs_without_the_shared_table(general_only, monkeypatch, similarity, ties, B):
    """A component too large for the shared table (:data:`apnull.score.nulls.permutation.SHARED_MOST`,
    as on a full JUMP screen): each pool computes its pairs of two controls as its draws need them, the
    dot products four at a time (:func:`apnull.score.kernels.similarity.dot4`). Every table and drawn
    value the general path's, bit for bit, on rows long enough for the order of a sum to matter."""
    monkeypatch.setattr(conditional, "EXACT_DRAWS", 0)
    monkeypatch.setattr(pooltables, "SHARED_MOST", 0)
    table = crossed_screen(np.random.default_rng(31), perts=14, plates=5, controls=6, d=48, ties=ties,
                           plate_effect=0.5)
    general_only(False)
    new = score_profiles(table, **KW, similarity=similarity, permutations=B, seed=8)
    assert_same_as_general(general_only, new, table, ("t00", "t03", "t07"), similarity=similarity,
                           permutations=B, seed=8)


@pytest.mark.parametrize("similarity, ties, B", [("cosine", False, 99), ("abs_cosine", True, 99),
                                                 ("cosine", True, 300), ("cosine", False, 25), ("abs_cosine", True, 25)])
def test_five_plates_lazy_draws_with_the_shared_table(general_only, monkeypatch, similarity, ties, B):
    """Perturbations on five plates (JUMP's), drawn lazily (rounds under :data:`apnull.score.kernels.lookups.FILL_DRAWS`)
    with the shared table held: the mAP null reads each pair of two controls in the draw loop, draws without
    a tie by :func:`apnull.score.kernels.filled.untied_sum` and with one by the tie-aware walk, and a query's
    draws (B = 25: under :data:`apnull.score.kernels.lookups.ROW_DRAWS`, so no row read first) rank four untied
    positives by it too: every table and drawn
    value the general path's, bit for bit (with ties, a run that took a tie for none gives other values)."""
    monkeypatch.setattr(conditional, "EXACT_DRAWS", 0)
    table = crossed_screen(np.random.default_rng(53), perts=16, plates=5, controls=7, d=6 if ties else 24, ties=ties,
                           plate_effect=0.0 if ties else 0.5)  # rounded rows of 6 without a shift: many ties
    general_only(False)
    new = score_profiles(table, **KW, similarity=similarity, permutations=B, seed=4)
    assert_same_as_general(general_only, new, table, ("t03", "t07", "t11", "t15"), similarity=similarity,
                           permutations=B, seed=4)


def test_untied_sum_adds_the_untied_queries_aps_and_refuses_a_tie():
    """:func:`apnull.score.kernels.filled.untied_sum` (the lazy draws' sum of five strata, an inner kernel):
    each query's AP of four untied positives as :func:`apnull.score.kernels.lookups.untied_ap` gives it,
    added in query order (one query's alone with ``only`` >= 0), bit for bit; -1 when a positive of a
    query summed is tied with a plate-mate (eq) or with another positive (v), not when another query is."""
    from apnull.score.kernels import filled, lookups

    untied_sum, quotients = from_python(filled.untied_sum), from_python(filled.quotients)
    rng = np.random.default_rng(5)
    P = 12
    quot = quotients(4, 9)
    for _ in range(20):
        tv = rng.permutation(P * P).astype(float)  # every similarity distinct
        tg = rng.integers(0, 10, size=P * P).astype(np.int32)
        te = np.zeros(P * P, dtype=np.int32)
        D = rng.choice(P, size=5, replace=False).astype(np.int64)
        aps = [lookups.untied_ap(np.array([tg[D[q] * P + D[y]] for y in range(5) if y != q], dtype=np.int64), 4)
               for q in range(5)]
        assert untied_sum(D, P, tv, tg, te, quot, -1) == (((aps[0] + aps[1]) + aps[2]) + aps[3]) + aps[4]
        assert [untied_sum(D, P, tv, tg, te, quot, q) for q in range(5)] == aps
        eq = te.copy()
        eq[D[1] * P + D[3]] = 1  # query 1's positive 3 as similar as one of its plate-mates
        assert [untied_sum(D, P, tv, tg, eq, quot, q) for q in (-1, 1, 0)] == [-1.0, -1.0, aps[0]]
        v = tv.copy()
        v[D[2] * P + D[4]] = v[D[2] * P + D[0]]  # query 2's positives 4 and 0 equally similar to it
        assert [untied_sum(D, P, v, tg, te, quot, q) for q in (-1, 2, 3)] == [-1.0, -1.0, aps[3]]


def test_tied_values_finds_two_equal_values_of_a_row_as_a_sort_would():
    """:func:`apnull.score.kernels.lookups.tied_values` (an inner kernel, the filled pools' and query rows'
    test for two members of other strata as similar to the query): True exactly when two values outside
    the skipped range are equal under ``==``, as comparing neighbours of the sorted values finds; 0.0 and
    -0.0 are equal, a NaN equals nothing; many sets in one room, each by its own mark, need no clearing."""
    from apnull.score.kernels import lookups

    tied_values = from_python(lookups.tied_values)
    rng = np.random.default_rng(8)

    def by_sort(row, lo, hi):
        kept = np.sort(np.concatenate([row[:lo], row[hi:]]))
        return bool((kept[1:] == kept[:-1]).any())

    P = 23
    width, seen, mark = lookups.value_set(P)  # copied into its callers: callable from Python
    assert 2 ** width >= 2 * P and (mark == -1).all()
    found = 0
    for trial in range(400):
        row = rng.integers(0, 60, size=P) / 7.0  # a few repeats in most rows
        if trial % 4 == 0:
            row = rng.permutation(P) / 3.0  # none
        if trial % 9 == 0:
            row[rng.integers(P)] = np.nan
            row[rng.integers(P)] = np.nan
        lo = int(rng.integers(0, P))
        hi = int(rng.integers(lo, P + 1))
        tv = np.concatenate([rng.random(5), row, rng.random(4)])  # the row at 5 in a larger table
        want = by_sort(row, lo, hi)
        assert tied_values(tv, 5, P, lo, hi, width, seen, mark, trial) == want, (row, lo, hi)
        found += want
    assert 50 < found < 350
    signed = np.array([0.5, -0.0, 0.25, 0.0])
    assert tied_values(signed, 0, 4, 0, 0, width, seen, mark, 1000)  # 0.0 == -0.0
    assert not tied_values(signed, 0, 4, 1, 2, width, seen, mark, 1001)  # -0.0 skipped
    assert not tied_values(np.array([np.nan, np.nan, 1.0]), 0, 3, 0, 0, width, seen, mark, 1002)


def test_dot4_has_the_bits_of_sim():
    """Four dot products side by side, each the bits of ``sim`` (kind 0) one at a time: rows of 737
    features whose sums round differently in another order (checked: a pairwise sum differs)."""
    from score_helpers import from_python

    from apnull.score.kernels import similarity

    dot4, sim = from_python(similarity.dot4), similarity.sim
    rng = np.random.default_rng(2)
    X = rng.normal(size=(9, 737)) * np.exp(rng.normal(size=(9, 737)))
    pairs = rng.integers(0, 9, size=(40, 4, 2))
    reordered = 0
    for quad in pairs:
        got = dot4(X, *quad.ravel().tolist())
        for (a, b), v in zip(quad.tolist(), got):
            assert v == sim(X, a, X, b, 0)
            reordered += v != float(np.sum(X[a] * X[b]))
    assert reordered  # numpy's pairwise sum differs in the last bits: the order is tested


@pytest.mark.parametrize("kind", [0, 1, 2, 3, 4, 5])
def test_sim_rows_have_the_bits_of_sim_for_any_count_of_rows(kind):
    """``sim_rows`` over 1 to 9 rows (four at a time, the one to three left over of at least four taken with
    the rows before them as the last four, fewer than four by ``sim``) into an offset window of ``out``:
    every value the bits of ``sim``, and nothing outside the window written."""
    from score_helpers import from_python

    from apnull.score.kernels import similarity

    sim_rows, sim = from_python(similarity.sim_rows), similarity.sim
    rng = np.random.default_rng(kind)
    A = rng.normal(size=(9, 101)) * np.exp(rng.normal(size=(9, 101)))
    X = rng.normal(size=(12, 101)) * np.exp(rng.normal(size=(12, 101)))
    if kind == 5:  # Jaccard: 0/1 rows
        A, X = (A > 0).astype(np.float64), (X > 0).astype(np.float64)
    XT = np.ascontiguousarray(X.T)
    for a0, a1 in ((0, 1), (2, 5), (0, 4), (1, 6), (0, 7), (2, 9), (0, 9)):
        out = np.full((a1 - a0 + 3, 14), -7.5)
        sim_rows(A, a0, a1, X, XT, 3, 11, kind, out, 2, 5)
        want = np.full_like(out, -7.5)
        for a in range(a0, a1):
            for c in range(3, 11):
                want[2 + a - a0, 5 + c - 3] = sim(A, a, X, c, kind)
        np.testing.assert_array_equal(out, want)


def test_crossed_pools_choose_one_replicate_a_stratum():
    from apnull.score.nulls.permutation import ScreenWork
    from apnull.score.table.screen import prepare_screen

    table = crossed_screen(np.random.default_rng(0), perts=4)
    screen = prepare_screen(table, "Metadata_pert", "DMSO", "Metadata_plate", None, "cosine")
    work = ScreenWork(screen, 0)
    part = work.part(np.arange(len(screen.perts)), False)
    got = crossed.crossed_pools(part.arrays, part.comps, part.comp_of, np.arange(len(screen.perts)))
    names = [screen.perts[int(i)].name for i in part.index]
    assert dict(zip(names, got.tolist())) == {"t00": True, "t01": True, "t02": True, "t03": True, "two": False}
    small = crossed.MAX_TABLE
    try:
        crossed.MAX_TABLE = 10  # a pool whose table would not fit takes the general path
        assert not crossed.crossed_pools(part.arrays, part.comps, part.comp_of, np.arange(5)).any()
    finally:
        crossed.MAX_TABLE = small


def test_pool_sizes_count_each_plates_controls_and_replicates():
    """A perturbation's pool members (``crossed.pool_sizes``): on each of its plates its replicates and that
    plate's controls, counted from the table, on a screen of two components (two sets of plates)."""
    from apnull.score.nulls.permutation import ScreenWork
    from apnull.score.table.screen import prepare_screen

    one = crossed_screen(np.random.default_rng(1), perts=6, controls=5)
    two = crossed_screen(np.random.default_rng(2), perts=5, plates=5, controls=7, extra=False)
    two["Metadata_plate"] = "Q" + two["Metadata_plate"]
    two["Metadata_pert"] = two["Metadata_pert"].where(two["Metadata_pert"] == "DMSO", "u" + two["Metadata_pert"])
    table = pd.concat([one, two], ignore_index=True)
    screen = prepare_screen(table, "Metadata_pert", "DMSO", "Metadata_plate", None, "cosine")
    work = ScreenWork(screen, 0)
    part = work.part(np.arange(len(screen.perts)), False)
    assert len(part.comps) == 2
    pos = np.arange(len(screen.perts))[::-1]  # any order
    got = crossed.pool_sizes(part.arrays, part.comps, part.comp_of, pos)
    ctl = table[table["Metadata_pert"] == "DMSO"].groupby("Metadata_plate").size()
    for t, j in enumerate(pos.tolist()):
        rows = table[table["Metadata_pert"] == screen.perts[int(part.index[j])].name]
        assert got[t] == len(rows) + int(ctl[rows["Metadata_plate"].unique()].sum())


def tiny_crossed(rng, ties):
    rows = [("DMSO", "A")] * 3 + [("DMSO", "B")] * 2 + [("DMSO", "C")] * 3 + [("t", "A"), ("t", "B"), ("t", "C")]
    X = rng.normal(size=(len(rows), 3))
    if ties:
        X = np.round(X * 1.5)
        X[np.all(X == 0, axis=1), 0] = 1.0
    df = pd.DataFrame(rows, columns=["Metadata_pert", "Metadata_plate"])
    return pd.concat([df, pd.DataFrame(X, columns=[f"f{i}" for i in range(3)])], axis=1)


def query_enumeration(table, similarity="cosine"):
    """{row: (AP, exact p)} of each query of "t" under the conditional null: the query kept, each other
    plate's pool member (its replicate or a control) in turn the positive there; every combination."""
    X = table.filter(regex="^f").to_numpy(float)
    if similarity == "cosine":
        X = X / np.linalg.norm(X, axis=1, keepdims=True)
        S = X @ X.T
    else:
        S = -((X[:, None] - X[None]) ** 2).sum(-1)
    lab, plate = table["Metadata_pert"].to_numpy(), table["Metadata_plate"].to_numpy()
    reps = np.flatnonzero(lab == "t")
    out = {}
    for q in reps:
        pools = [np.flatnonzero(plate == plate[r]) for r in reps if r != q]
        negs = [x for x in np.flatnonzero(plate == plate[q]) if x != q]
        obs = reference_ap(S[q], [r for r in reps if r != q], negs)
        null = np.array([reference_ap(S[q], list(c), negs) for c in itertools.product(*pools)])
        out[int(q)] = (obs, float(np.mean(null >= obs - 1e-12)))
    return out


@pytest.mark.parametrize("ties", [False, True])
def test_crossed_nulls_against_enumeration(ties):
    """mAP null: every drawn value is one of the enumerated assignments' values, drawn as often as the
    enumeration says (chi-square); the observed mAP and p agree. Conditional null: each query's AP is
    the reference, and its p within a binomial band of the enumerated exact p."""
    rng = np.random.default_rng(11 if ties else 7)
    table = tiny_crossed(rng, ties)
    B = 6000
    res = score_profiles(table, **KW, permutations=B, seed=1)
    obs, p_exact, null = brute_permutation_p(table, "t")
    row = res.groups.set_index("Metadata_pert").loc["t"]
    assert row["mAP"] == pytest.approx(obs, abs=1e-12)
    drawn = res.null_maps("t")
    values = np.unique(np.round(null, 10))
    idx = np.searchsorted(values, np.round(drawn, 10))
    assert np.allclose(values[np.clip(idx, 0, values.size - 1)], drawn, atol=1e-9)  # every draw a real value
    want = np.array([np.sum(np.isclose(null, v, atol=1e-9)) for v in values]) / null.size * B
    got = np.bincount(idx, minlength=values.size)
    assert chisquare(got, want).pvalue > 1e-4
    lo, hi = binom.interval(1 - 1e-6, B, p_exact)
    assert (lo + 1) / (B + 1) <= row["p_value"] <= (hi + 1) / (B + 1)
    exact = query_enumeration(table)
    q = res.queries.set_index("row")
    for r, (ap, p) in exact.items():
        assert q.loc[r, "ap"] == pytest.approx(ap, abs=1e-12)
        assert q.loc[r, "null"] == "conditional permutation" and q.loc[r, "permutations"] == B
        lo, hi = binom.interval(1 - 1e-6, B, p)
        assert (lo + 1) / (B + 1) <= q.loc[r, "p_value"] <= (hi + 1) / (B + 1)


def true_null_crossed(rng):
    """240 perturbations x 3 replicates on 12 plates of 8 controls, plate effects, no effect of their own."""
    plates, controls, perts, k = 12, 8, 240, 3
    rows = [("DMSO", p) for p in range(plates) for _ in range(controls)]
    for i in range(perts):
        rows += [(f"c{i:03d}", int(p)) for p in rng.choice(plates, size=k, replace=False)]
    X = rng.normal(size=(len(rows), 10)) + 0.8 * rng.normal(size=(plates, 10))[[p for _, p in rows]]
    table = pd.concat([pd.DataFrame(rows, columns=["Metadata_pert", "Metadata_plate"]),
                       pd.DataFrame(X, columns=[f"f{i}" for i in range(10)])], axis=1)
    return table


def test_crossed_true_null_calibration():
    """A true-null crossed screen with plate effects: the mAP p-values reject at 0.05 within the
    binomial band of the level (not pushed to the floor by the plates); the per-query p-values at
    most its upper end (a query's AP of 2 positives among 8 negatives takes few values, so its
    p-values are discrete and reject less)."""
    table = true_null_crossed(np.random.default_rng(2))
    res = score_profiles(table, **KW, permutations=199, seed=0)
    g, q = res.groups, res.queries
    assert (q["null"] == "conditional permutation").all()
    n, hits = len(g), int((g["p_value"] <= 0.05).sum())
    assert binom.ppf(1e-4, n, 0.05) <= hits <= binom.ppf(1 - 1e-4, n, 0.05), (hits, n)
    n, hits = len(q), int((q["p_value"] <= 0.05).sum())
    assert hits <= binom.ppf(1 - 1e-4, n, 0.05), (hits, n)


def test_exact_query_law_true_null_calibration(monkeypatch):
    """The same true-null screen under "auto" with every untied query's exact conditional law counted
    (from its first round): the per-query p-values reject at 0.05 at most the level's upper band, and
    no more often than under the draws; the mAP p-values are the mAP null's, unchanged."""
    table = true_null_crossed(np.random.default_rng(2))
    monkeypatch.setattr(conditional, "EXACT_DRAWS", 1)
    monkeypatch.setattr(conditional, "EXACT_MIN_QUERIES", 1)
    law = score_profiles(table, **KW, permutations="auto", seed=0)
    monkeypatch.setattr(conditional, "EXACT_DRAWS", 0)
    drawn = score_profiles(table, **KW, permutations="auto", seed=0)
    q = law.queries
    enumerated = (q["permutations"] == 81) & ~q["p_value_bound"]  # 9 x 9 choices: two other plates' pools
    assert enumerated.mean() > 0.9
    assert (enumerated == (q["null"] == "conditional law (all choices counted)")).all()
    n, hits = len(q), int((q["p_value"] <= 0.05).sum())
    assert hits <= binom.ppf(1 - 1e-4, n, 0.05), (hits, n)
    assert hits <= int((drawn.queries["p_value"] <= 0.05).sum()) + 3 * np.sqrt(n * 0.05)
    pd.testing.assert_frame_equal(law.groups, drawn.groups)


def test_the_draws_spent_count_what_a_query_drew_before_its_law(monkeypatch):
    """A query whose conditional law is counted in a later round drew before: the run's "draws spent" counts
    those draws (recorded here as each count is asked for), not its law's choices, beside every drawn query's
    draws; the tables keep the choices as its ``permutations``."""
    from apnull.score.results.outputs import Spent

    table = true_null_crossed(np.random.default_rng(2))
    monkeypatch.setattr(conditional, "EXACT_DRAWS", 200)  # counted from the second round (100 draws made)
    monkeypatch.setattr(conditional, "EXACT_MIN_QUERIES", 1)
    before = draws_before_laws(monkeypatch)

    class Told:
        def __call__(self, done, total):
            pass

        def spent(self, spent):
            self.told = spent

    told = Told()
    res = score_profiles(table, **KW, permutations="auto", seed=0, progress=told)
    q = res.queries
    counted = q["null"] == "conditional law (all choices counted)"
    assert counted.any() and sum(before) >= 100 * counted.sum()  # each counted after at least its first round
    assert (q["permutations"][counted] == 81).all()
    assert told.told == Spent(int(res.groups["permutations"].sum()), len(res.groups),
                              int(q["permutations"][~counted].sum()) + sum(before), len(q), int(counted.sum()))


def test_crossed_same_answer_on_any_threads():
    """The crossed kernels' tables do not depend on the threads (each batch its own look-up tables);
    dask workers: tests/score/test_score_dask.py (the digits screen is crossed)."""
    table = crossed_screen(np.random.default_rng(9), perts=40, plates=5, ties=False, plate_effect=0.3)
    one = score_profiles(table, **KW, permutations="auto", seed=2, threads=1)
    two = score_profiles(table, **KW, permutations="auto", seed=2, threads=2)
    pd.testing.assert_frame_equal(one.groups, two.groups)
    pd.testing.assert_frame_equal(one.queries, two.queries)


@pytest.mark.parametrize("threads", [1, 2])
def test_each_perturbation_is_judged_crossed_once_a_run(monkeypatch, threads):
    """Whether a perturbation takes the crossed kernels is decided once for the run
    (:func:`apnull.score.nulls.pooltables.crossed_of`, kept in its component's holder), not again in every
    batch of every round of both nulls; the tables are those of deciding every time."""
    table = crossed_screen(np.random.default_rng(12), perts=30, plates=5, plate_effect=0.3)
    want = score_profiles(table, **KW, permutations="auto", seed=3, threads=threads)
    decided = []
    real = crossed.crossed_pools

    def spy(arrays, comps, comp_of, pos):
        decided.append(len(pos))
        return real(arrays, comps, comp_of, pos)

    monkeypatch.setattr(permutation, "crossed_pools", spy)
    monkeypatch.setattr(conditional, "crossed_pools", spy)
    got = score_profiles(table, **KW, permutations="auto", seed=3, threads=threads)
    assert sum(decided) == table["Metadata_pert"].nunique() - 1  # each perturbation once (DMSO is none)
    pd.testing.assert_frame_equal(got.groups, want.groups)
    pd.testing.assert_frame_equal(got.queries, want.queries)


#: :func:`apnull.score.kernels.querylaw.law_count` (an inner kernel) called from Python.
law_count = from_python(querylaw.law_count)


def brute_law_count(row, first, size, qi, observed, tol=1e-12):
    """Choices (one member of each other plate's pool) whose untied AP reaches ``observed - tol``,
    every one enumerated; and all of them."""
    pools = [row[first[s]:first[s] + size[s]] for s in range(size.size) if s != qi]
    m = len(pools)
    aps = np.array([sum((b + 1.0) / (g + b + 1.0) for b, g in enumerate(sorted(c))) / m
                    for c in itertools.product(*pools)])
    return int(np.sum(aps >= observed - tol)), aps


def test_query_law_count_against_enumeration():
    """The exact count of choices reaching the observed AP equals the enumeration's on random small
    pools (counts repeated across and within plates, one to four other plates, every observed value
    of the law and values between), and gives up (-1) past its step limit."""
    rng = np.random.default_rng(4)
    for _ in range(150):
        k = int(rng.integers(2, 6))
        size = rng.integers(1, 6, size=k).astype(np.int64)
        first = np.concatenate([[0], np.cumsum(size)[:-1]]).astype(np.int64)
        row = rng.integers(0, 7, size=int(size.sum())).astype(np.int64)
        qi = int(rng.integers(k))
        _, aps = brute_law_count(row, first, size, qi, 0.0)
        for obs in np.concatenate([rng.choice(aps, 3), [aps.max(), aps.min(), aps.max() + 0.01, 0.5]]):
            want, _ = brute_law_count(row, first, size, qi, obs)
            got, steps = law_count(row, first, size, qi, obs, 1e-12, 10 ** 9)
            assert got == want
    size = np.full(4, 12, dtype=np.int64)
    first = np.arange(4, dtype=np.int64) * 12
    row = rng.integers(0, 20, size=48).astype(np.int64)
    got, steps = law_count(row, first, size, 0, 0.5, 1e-12, 5)
    assert got == -1 and steps == 6


def test_query_law_count_against_monte_carlo():
    """Pools of 33 members on 4 other plates (1,185,921 choices, too many to enumerate in a test):
    the exact share within a binomial band of 200,000 uniform draws, at several tail levels."""
    rng = np.random.default_rng(8)
    size = np.full(5, 33, dtype=np.int64)
    first = np.arange(5, dtype=np.int64) * 33
    row = rng.integers(0, 33, size=165).astype(np.int64)
    B = 200_000
    picks = np.stack([row[first[s] + rng.integers(0, 33, size=B)] for s in range(1, 5)], axis=1)
    picks.sort(axis=1)
    aps = ((np.arange(4) + 1.0) / (picks + np.arange(4) + 1.0)).sum(axis=1) / 4
    for q in (0.5, 0.9, 0.99, 0.999):
        obs = float(np.quantile(aps, q))
        got, _ = law_count(row, first, size, 2, obs, 1e-12, 10 ** 9)  # plate 2 the query's: the others'
        picks2 = np.stack([row[first[s] + rng.integers(0, 33, size=B)] for s in (0, 1, 3, 4)], axis=1)
        picks2.sort(axis=1)
        hits = int(np.sum(((np.arange(4) + 1.0) / (picks2 + np.arange(4) + 1.0)).sum(axis=1) / 4 >= obs - 1e-12))
        p = got / 33 ** 4
        lo, hi = binom.interval(1 - 1e-6, B, p)
        assert lo <= hits <= hi, (q, p, hits / B)


@pytest.mark.parametrize("ties", [False, True])
def test_exact_query_law_in_the_engine(monkeypatch, ties):
    """With the exact law on from the first draw, each untied query of a tiny crossed screen gets the
    enumerated p-value exactly (its permutations: all T choices); a query whose row has ties keeps the
    conditional draws, its p within their binomial band; every observed AP the reference."""
    monkeypatch.setattr(conditional, "EXACT_DRAWS", 1)
    monkeypatch.setattr(conditional, "EXACT_MIN_QUERIES", 1)
    rng = np.random.default_rng(11 if ties else 7)
    table = tiny_crossed(rng, ties)
    res = score_profiles(table, **KW, permutations="auto", seed=1)
    q = res.queries.set_index("row")
    plate = table["Metadata_plate"].to_numpy()
    enumerated = 0
    for r, (ap, p) in query_enumeration(table).items():
        assert q.loc[r, "ap"] == pytest.approx(ap, abs=1e-12)
        T = np.prod([np.sum(plate == s) for s in set(plate) if s != plate[r]])
        if q.loc[r, "null"] == "conditional law (all choices counted)":  # said as counted, not drawn
            enumerated += 1
            assert q.loc[r, "permutations"] == T and not q.loc[r, "p_value_bound"]
            assert q.loc[r, "p_value"] == pytest.approx(p, rel=1e-12)
        else:
            assert q.loc[r, "null"] == "conditional permutation"
            B = int(q.loc[r, "permutations"])
            lo, hi = binom.interval(1 - 1e-6, B, p)
            assert lo / B - 1e-9 <= q.loc[r, "p_value"] <= (hi + 1) / (B + 1) + 1e-9
    if ties:
        assert enumerated < 3
    else:
        assert enumerated == 3


def test_a_small_screen_draws_every_query(monkeypatch):
    """Under EXACT_MIN_QUERIES crossed queries no query counts its law (its compiled code would cost a
    fresh install more than the draws it saves): the same table with the minimum lowered counts some."""
    table = true_null_crossed(np.random.default_rng(2))
    monkeypatch.setattr(conditional, "EXACT_DRAWS", 1)
    small = score_profiles(table, **KW, permutations="auto", seed=0).queries
    assert len(small) < conditional.EXACT_MIN_QUERIES
    assert not (small["permutations"] == 81).any()
    monkeypatch.setattr(conditional, "EXACT_MIN_QUERIES", len(small))
    counted = score_profiles(table, **KW, permutations="auto", seed=0).queries
    assert (counted["permutations"] == 81).any()


def test_a_small_screen_takes_the_general_kernels(monkeypatch):
    """Under CROSSED_MIN_PERTURBATIONS perturbations no batch takes the crossed kernels (they would cost a
    fresh install their compiling for nothing: the general kernels give the same values), the same tables."""
    table = crossed_screen(np.random.default_rng(3), ties=False, plate_effect=0.5)
    crossed_run = score_profiles(table, **KW, permutations=99, seed=5)
    monkeypatch.setattr(permutation, "CROSSED_MIN_PERTURBATIONS", 10**6)
    calls = []
    monkeypatch.setattr(permutation, "crossed_pools", lambda *a: calls.append(1))
    monkeypatch.setattr(conditional, "crossed_pools", lambda *a: calls.append(1))
    general = score_profiles(table, **KW, permutations=99, seed=5)
    assert not calls
    pd.testing.assert_frame_equal(crossed_run.groups, general.groups)
    pd.testing.assert_frame_equal(crossed_run.queries, general.queries)


def test_kept_fills_give_the_same_tables(monkeypatch):
    """Filled pools' counts kept between rounds (:func:`apnull.score.nulls.pooltables.kept_fills`): with
    adaptive rounds a pool near the decision line fills once, later rounds draw from the counts kept
    (seen: a round finds them there), and the tables are those of a run keeping none, bit for bit."""
    rng = np.random.default_rng(1)
    table = crossed_screen(rng, perts=16, plates=6, extra=False, plate_effect=0.5)
    feats = [c for c in table.columns if c.startswith("f")]
    for i in range(6):  # weak effects: a few perturbations near the line, refined over several rounds
        rows = table["Metadata_pert"] == f"t{i:02d}"
        table.loc[rows, feats] += 0.5 * rng.normal(size=len(feats))
    found = []
    real = pooltables.kept_fills

    def spy(*args, **kw):
        kept = real(*args, **kw)
        found.append(int(kept.done.sum()))  # perturbations whose counts an earlier round kept
        return kept

    monkeypatch.setattr(permutation, "kept_fills", spy)
    new = score_profiles(table, **KW, permutations="auto", seed=2)
    assert sum(found) > 0
    monkeypatch.setattr(pooltables, "KEPT_MOST", 0)
    old = score_profiles(table, **KW, permutations="auto", seed=2)
    assert old.groups["permutations"].max() >= 25_600
    pd.testing.assert_frame_equal(new.groups, old.groups)
    pd.testing.assert_frame_equal(new.queries, old.queries)


def test_a_pool_with_a_room_fills_from_fill_kept_draws(monkeypatch):
    """A round of :data:`apnull.score.kernels.lookups.FILL_KEPT` to :data:`apnull.score.kernels.lookups.FILL_DRAWS`
    draws (B = 300): a pool given a room for its counts fills its table and keeps them (so a later round
    draws from them, not lazily now and from a fill later); without rooms (``KEPT_MOST`` 0) it draws lazily.
    The same tables either way, bit for bit."""
    from apnull.score.kernels.lookups import FILL_DRAWS, FILL_KEPT

    B = 300
    assert FILL_KEPT <= B < FILL_DRAWS
    table = crossed_screen(np.random.default_rng(7), perts=12, plates=5, extra=False, plate_effect=0.5)
    given = []
    real = pooltables.kept_fills

    def spy(*args, **kw):
        kept = real(*args, **kw)
        given.append(kept)  # the kernel marks done the rooms it filled
        return kept

    monkeypatch.setattr(permutation, "kept_fills", spy)
    filled = score_profiles(table, **KW, permutations=B, seed=3)
    assert any((k.start >= 0).any() for k in given) and any(k.done.any() for k in given)
    given.clear()
    monkeypatch.setattr(pooltables, "KEPT_MOST", 0)
    lazy = score_profiles(table, **KW, permutations=B, seed=3)
    assert given and not any((k.start >= 0).any() or k.done.any() for k in given)
    pd.testing.assert_frame_equal(filled.groups, lazy.groups)
    pd.testing.assert_frame_equal(filled.queries, lazy.queries)


def test_components_are_built_once_for_every_round(monkeypatch):
    """A screen of two crossed components (disjoint plates), adaptive: each component's control tables and
    holder (shared pairs, kept counts) are built once for all the rounds and both nulls
    (:class:`apnull.score.nulls.pooltables.BuiltComponents`), where keeping only the last one built made
    every round build both again; the tables are those of a run keeping the last one only, bit for bit."""
    rng = np.random.default_rng(4)
    halves = []
    for half, plate in (("a", "P"), ("b", "Q")):
        part = crossed_screen(rng, perts=10, plates=5, extra=False, plate_effect=0.5)
        part["Metadata_plate"] = part["Metadata_plate"].str.replace("P", plate)
        part["Metadata_pert"] = part["Metadata_pert"].where(part["Metadata_pert"] == "DMSO",
                                                            half + part["Metadata_pert"])
        halves.append(part)
    table = pd.concat(halves, ignore_index=True)
    feats = [c for c in table.columns if c.startswith("f")]
    for name in ("at00", "at01", "bt00", "bt01"):  # weak effects: refined over several rounds
        rows = table["Metadata_pert"] == name
        table.loc[rows, feats] += 0.5 * rng.normal(size=len(feats))
    builds = []
    real = permutation.control_rows

    def spy(rows, kind):
        builds.append(len(rows))
        return real(rows, kind)

    monkeypatch.setattr(permutation, "control_rows", spy)
    kept = score_profiles(table, **KW, permutations="auto", seed=2)
    assert kept.groups["permutations"].max() > 1000  # several rounds
    assert builds == [5, 5]
    builds.clear()

    class LastOnly(pooltables.BuiltComponents):  # what was kept before: the last component built
        def get(self, comp):
            return self._last[1] if self._last is not None and self._last[0] == comp else None

    monkeypatch.setattr(permutation, "BuiltComponents", LastOnly)
    again = score_profiles(table, **KW, permutations="auto", seed=2)
    assert len(builds) > 4  # each round builds both again
    pd.testing.assert_frame_equal(kept.groups, again.groups)
    pd.testing.assert_frame_equal(kept.queries, again.queries)


def test_built_components_stay_within_their_bound(monkeypatch):
    """The first components built are kept while their arrays fit BUILT_MOST; one past it is not, the last
    one built is at hand all the same, and kept ones growing past the bound are let go, the last kept first."""
    monkeypatch.setattr(pooltables, "BUILT_MOST", 1000)
    held = pooltables.BuiltComponents()
    a, b, c = np.zeros(50), np.zeros(50), np.zeros(100)  # 400, 400 and 800 bytes
    held.keep(0, a, {})
    held.keep(1, b, {})
    held.keep(2, c, {})  # 1,600 bytes: past the bound, not kept
    assert held.get(0).rows is a and held.get(1).rows is b and held.get(2).rows is c  # c: the last one built
    held.keep(3, np.zeros(1), {})
    assert held.get(2) is None and held.get(3) is not None
    held.get(1).holder["kept"] = {"buf": np.zeros(100)}  # component 1's kept counts grow: 1,600 bytes
    assert held.get(1) is None and held.get(0).rows is a  # let go, the first kept stays
