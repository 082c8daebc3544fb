"""The comparison null (sign flips of whole units) against enumeration and a plain-numpy reference."""

import itertools
import math

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from apnull.score import benjamini_hochberg
from apnull.score.engine.sequential import resolve, rounds_of
from apnull.score.nulls.compare import (FlipWork, RetrievedWork, enumerable, first_levels, flip_interval, flip_key,
                                        flip_null, smallest_p, units_of)
from apnull.streams import uniforms


def _all_signs(U):
    """Every sign vector, row j flipping unit u when bit u of j is set (the kernel's enumeration order)."""
    j = np.arange(2 ** U)[:, None]
    return np.where((j >> np.arange(U)) & 1, -1.0, 1.0)


def _random_signs(key, U, draws):
    """Flip j flips unit u when uniform j * U + u of the stream is below 1/2 (numpy twin of the kernel)."""
    return np.where(uniforms(key, 0, U * draws).reshape(draws, U) < 0.5, -1.0, 1.0)


def _p(x, signs):
    return np.abs(signs @ x) >= abs(x.sum()) - 1e-12


def _run(x, permutations, exhaustive=False, seed=0):
    work = FlipWork(np.asarray(x, float)[None, :], ["mean_delta"], seed)
    return resolve(flip_null(work, 0, exhaustive=exhaustive), rounds_of(permutations), threads=1), work


@pytest.mark.parametrize("U", [1, 2, 3, 6, 9])
def test_every_flip_enumerated_gives_the_exact_p(U):
    rng = np.random.default_rng(U)
    x = rng.normal(size=U) + 0.4
    res, _ = _run(x, "all", exhaustive=True)
    signs = _all_signs(U)
    assert res.drawn[0] == 2 ** U
    assert res.p_value[0] == _p(x, signs).mean()
    assert res.p_value[0] >= smallest_p(U)


def test_one_unit_and_all_equal_values():
    assert _run([0.3], "all", exhaustive=True)[0].p_value[0] == 1.0  # a flip and its complement
    assert _run([0.0, 0.0, 0.0], "all", exhaustive=True)[0].p_value[0] == 1.0
    assert _run([0.0] * 30, 999)[0].p_value[0] == 1.0  # every random flip reaches 0
    # all units the same sign: only the identity and the complement reach |T|
    assert _run([0.1, 0.2, 0.3, 0.4, 0.5, 0.6], "all", exhaustive=True)[0].p_value[0] == 2 / 64


def test_random_flips_are_the_streams_own():
    rng = np.random.default_rng(7)
    x = rng.normal(size=25) + 0.3
    res, work = _run(x, 999, seed=11)
    g = _p(x, _random_signs(work.keys[0], 25, 999)).sum()
    assert res.p_value[0] == (1 + g) / 1000 and res.drawn[0] == 999
    assert work.keys[0] == flip_key(11, "mean_delta")


def test_adaptive_flips_continue_the_fixed_ones():
    """The first L flips of an adaptive run are those of a fixed run of L; it stops at the 20th reach."""
    x = np.random.default_rng(3).normal(size=30)  # no shift: the observed |T| is reached often
    res, work = _run(x, "auto")
    L = int(res.drawn[0])
    reach = _p(x, _random_signs(work.keys[0], 30, L))
    assert reach.sum() == 20 and reach[-1] and res.p_value[0] == 20 / L


def test_units_are_components_of_strata_in_a_fixed_order():
    unit, members = units_of([["p2"], ["p1"], ["p3", "p2"], ["p4"], ["p5"], ["p4"]])
    assert members == [["p1"], ["p2", "p3"], ["p4"], ["p5"]]
    assert unit.tolist() == [1, 0, 1, 2, 3, 2]
    assert units_of([[""], [""]])[0].tolist() == [0, 0]  # no stratum: one unit


def test_enumeration_limit():
    assert enumerable(17) and not enumerable(18)
    assert smallest_p(1) == 1.0 and smallest_p(6) == 2 / 64


def _brute_interval(x, n, signs, mc, level=0.95):
    """The kept mu on a fine grid: p(mu) of the values x - n mu over the same flips."""
    mean = x.sum() / n.sum()
    grid = mean + np.linspace(-1.5, 1.5, 30001)
    kept = []
    for mu in grid:
        y = x - n * mu
        c = (np.abs(signs @ y) >= abs(y.sum()) - 1e-12).sum()
        p = (1 + c) / (1 + len(signs)) if mc else c / len(signs)
        if p > 1 - level:
            kept.append(mu)
    return min(kept), max(kept), grid[1] - grid[0]


@pytest.mark.parametrize("U, mc", [(6, False), (8, False), (10, False), (12, True)])
def test_interval_inverts_the_flip_test(U, mc):
    rng = np.random.default_rng(U)
    n = rng.integers(1, 5, size=U)
    x = rng.normal(scale=0.3, size=U) * n + 0.1 * n
    key = flip_key(0, "mean_delta")
    low, high = flip_interval(x, n, key, exhaustive=not mc, draws=999)
    signs = _random_signs(key, U, 999) if mc else _all_signs(U)
    lo, hi, step = _brute_interval(x, n, signs, mc)
    assert lo - step <= low <= lo + 1e-9 and hi - 1e-9 <= high <= hi + step
    assert low <= x.sum() / n.sum() <= high


def test_no_interval_when_the_test_cannot_reject():
    x, n = np.array([0.1, 0.2, 0.3, 0.1, 0.2]), np.ones(5, dtype=np.int64)
    assert all(math.isnan(v) for v in flip_interval(x, n, np.uint64(1), exhaustive=True))  # 2/32 > 0.05
    assert flip_interval(np.zeros(8), np.ones(8, dtype=np.int64), np.uint64(1), exhaustive=True) == (0.0, 0.0)


@settings(max_examples=40, deadline=None)
@given(st.lists(st.tuples(st.floats(-1, 1, allow_nan=False), st.integers(1, 4)), min_size=6, max_size=9))
def test_interval_holds_the_mean_and_rejects_outside(units):
    x = np.array([v * k for v, k in units], dtype=float)
    n = np.array([k for _, k in units], dtype=np.int64)
    low, high = flip_interval(x, n, np.uint64(5), exhaustive=True)
    mean = x.sum() / n.sum()
    assert low - 1e-12 <= mean <= high + 1e-12
    signs = _all_signs(len(units))
    for mu in (low - 1e-6, high + 1e-6):  # just outside: the test rejects
        y = x - n * mu
        assert (np.abs(signs @ y) >= abs(y.sum()) - 1e-12).mean() <= 0.05 + 1e-12


def test_single_item_null_on_a_work_of_two():
    """Each statistic is its own null (its own decision), on one work; the other's state is untouched."""
    work = FlipWork(np.array([[0.2, 0.1, 0.3, -0.05] * 5, [1.0, 0.0, -1.0, 0.0] * 5]), ["mean_delta", "retrieved"], 0)
    null = flip_null(work, 1)
    res = resolve(null, rounds_of(499), threads=2)
    assert null.state["drawn"].tolist() == [0, 499]
    x = work.sums[1]
    assert res.p_value[0] == (1 + _p(x, _random_signs(work.keys[1], 20, 499)).sum()) / 500
    assert list(itertools.islice(work.names, 2)) == ["mean_delta", "retrieved"]


@settings(max_examples=200, deadline=None)
@given(st.lists(st.sampled_from([0.001, 0.002, 0.0025, 0.005, 0.01, 0.0125, 0.02, 0.025, 0.05, 0.2, 1.0]) |
                st.floats(0, 1, allow_nan=False), min_size=1, max_size=40),
       st.sampled_from([0.05, 0.1, 0.01]))
def test_first_levels_count_what_bh_rejects(p, alpha):
    """BH's rejections are exactly the levels <= R, R = max{k : #{levels <= k} >= k}: the q-values' own
    decisions, boundaries (p = alpha k / T) included."""
    p = np.array(p)
    c = first_levels(p, alpha)
    T = p.size
    counts = np.array([(c <= k).sum() for k in range(1, T + 1)])
    R = max([k for k in range(1, T + 1) if counts[k - 1] >= k], default=0)
    assert ((c <= R) == (benjamini_hochberg(p) <= alpha)).all()


def _bh_diff(pa, pb, unit, flipped, alpha):
    swap = flipped[unit]
    a, b = np.where(swap, pb, pa), np.where(swap, pa, pb)
    return int((benjamini_hochberg(b) <= alpha).sum()) - int((benjamini_hochberg(a) <= alpha).sum())


@pytest.mark.parametrize("permutations", ["all", 299])
def test_retrieved_flips_recount_bh_on_both_sides(permutations):
    rng = np.random.default_rng(4)
    U = 7 if permutations == "all" else 20
    unit = np.sort(rng.integers(0, U, size=60))
    unit[:U] = np.arange(U)
    unit = np.sort(unit)
    pa = rng.choice([0.001, 0.004, 0.01, 0.03, 0.2, 0.6], size=60)
    pb = np.minimum(1, pa * rng.choice([0.3, 1, 1, 3], size=60))
    work = RetrievedWork(pa, pb, unit, U, 0.05, 6)
    exhaustive = permutations == "all"
    res = resolve(flip_null(work, 0, exhaustive=exhaustive), rounds_of(permutations), threads=1)
    observed = abs(_bh_diff(pa, pb, unit, np.zeros(U, dtype=bool), 0.05))
    signs = _all_signs(U) if exhaustive else _random_signs(work.keys[0], U, 299)
    reach = np.array([abs(_bh_diff(pa, pb, unit, s < 0, 0.05)) >= observed for s in signs])
    assert observed > 0
    assert res.p_value[0] == (reach.mean() if exhaustive else (1 + reach.sum()) / 300)


def test_a_compilation_started_before_the_watch_is_ignored():
    """numba's compile listeners are global: a run may install its watch while another thread compiles
    (the comparison page's first run beside the server's warm-up did); that compilation's end is ignored."""
    from apnull.score.engine.sequential import CompileWatch

    watch = CompileWatch()
    watch.on_end(None)
    watch.on_start(None)
    watch.on_end(None)
    assert watch.seconds >= 0.0


def test_the_besag_clifford_stop_is_written_once():
    """Every kernel of the scoring wing counts a draw and decides its early stop through ``count_draw``:
    no other ``reached >= h`` test (the flips kernel wrote its own twice)."""
    import pathlib
    import re

    import apnull.score as pkg

    root = pathlib.Path(pkg.__file__).parent
    hits = [(p.relative_to(root).as_posix(), line.strip()) for p in sorted(root.rglob("*.py"))
            for line in p.read_text().splitlines()
            if re.search(r"\b\w+\s*>=\s*h\b", line) and not line.strip().startswith(("#", '"', "'")) and "``" not in line]
    assert hits == [("kernels/chunks.py", "return reached, early and reached >= h")]


@settings(max_examples=200, deadline=None)
@given(st.lists(st.floats(0, 1, allow_nan=False) | st.sampled_from([0.01, 0.0125, 0.025, 0.05]), min_size=1,
                max_size=30), st.sampled_from([0.05, 0.1]))
def test_the_compiled_bh_count_is_the_bh_decision(p, alpha):
    """The flips kernel's compiled BH rejects as many tests as :func:`benjamini_hochberg` at alpha."""
    from apnull.fdr import bh_count

    p = np.array(p)
    c = first_levels(p, alpha)
    hist = np.bincount(c, minlength=p.size + 2).astype(np.int64)
    assert bh_count(hist, p.size) == int((benjamini_hochberg(p) <= alpha).sum())
