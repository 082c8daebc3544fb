"""The engine's shared primitives: the permutation p-value, the stream key, named results, the checks."""

import hashlib

import numpy as np
import pytest

from apnull.law import VALUE_TOL, count_reached, counted_pvalue, permutation_pvalue
from apnull.limits import check_permutations, check_regex, check_stratum
from apnull.metrics import as_relevance
from apnull.score import digits_screen
from apnull.score.engine.sequential import resolve, rounds_of, sequential_pvalue
from apnull.score.nulls.permutation import ScreenWork, mean_null, null_values
from apnull.score.table.screen import prepare_screen
from apnull.streams import stream_key, stream_keys


def test_permutation_pvalue_counts_by_definition():
    null = np.array([0.1, 0.5, 0.5 - VALUE_TOL / 2, 0.7, 0.2])
    assert count_reached(null, 0.5) == 3  # 0.5, 0.5 - tol/2 (within the tolerance) and 0.7
    assert permutation_pvalue(null, 0.5) == (1 + 3) / (1 + 5)
    assert permutation_pvalue(null, 0.5, exact=True) == 3 / 5
    assert permutation_pvalue(null, 0.9) == 1 / 6  # never zero with random permutations
    assert np.isnan(permutation_pvalue(np.empty(0), 0.5))


def test_stream_key_is_blake2b_of_the_parts():
    text = "7\x1fnull_01\x1fplate_2".encode()
    want = int.from_bytes(hashlib.blake2b(text, digest_size=8).digest(), "little")
    assert stream_key(7, "null_01", "plate_2") == want
    assert stream_key(np.int64(7), "law", 3, 20) == stream_key(7, "law", np.int64(3), 20)


def test_stream_keys_are_stream_key_row_by_row():
    """Many keys at once (a screen's segments, its queries) are each row's :func:`stream_key`, bit for bit,
    whatever the parts' types (text, Python and numpy integers, floats, a repeated constant)."""
    names = ["null_01", "t\u00e9", "", "a\x1fb", "x" * 40]
    columns = (names, [3, np.int64(-2), 0, 2**40, 7], [0.5, 1e16, -0.0, 2, np.float32(0.1)], ["query"] * 5)
    got = stream_keys(np.int64(11), *columns)
    assert got.dtype == np.uint64 and got.shape == (5,)
    assert got.tolist() == [stream_key(11, *row) for row in zip(*columns)]
    assert stream_keys(0, [], []).shape == (0,)


def test_null_values_are_what_the_run_counted():
    """A perturbation's null values, drawn again alone, are the draws its p-value counted in the run."""
    screen = prepare_screen(digits_screen(), "Metadata_perturbation", "DMSO", "Metadata_plate", None, "cosine")
    work = ScreenWork(screen, 3)
    null = mean_null(work)
    res = resolve(null, rounds_of(49), threads=1)
    for i in (0, 2, 5):
        values = null_values(work, i, 49)
        assert values.shape == (49,)
        m = null.state["map"][i]
        k = screen.perts[i].k
        ap = null.state["ap"][screen.perts.qoff[i]:screen.perts.qoff[i] + k]
        assert m == pytest.approx(np.mean(ap))
        assert res.p_value[i] == permutation_pvalue(values, m) and res.drawn[i] == 49


def test_score_checks():
    assert check_permutations(99.0) == 99 and check_permutations("all") == "all"
    with pytest.raises(ValueError, match="between 1 and 10 here"):
        check_permutations(11, maximum=10, where=" here")
    with pytest.raises(ValueError, match="'all' applies to null='permutation' only"):
        check_permutations("all", "copairs")
    assert check_regex("^px_").search("px_01")
    with pytest.raises(ValueError, match="not a valid regular expression"):
        check_regex("((")
    with pytest.raises(ValueError, match="use at most 3"):
        check_regex("abcd", max_length=3)
    assert check_stratum(None, "p") is None
    with pytest.raises(ValueError, match="must differ"):
        check_stratum("p", "p")


def test_relevance_column_reads_text_labels():
    assert as_relevance(["1", " TRUE", "0.0", "false"], column="rel").tolist() == [True, True, False, False]
    with pytest.raises(ValueError, match=r"relevant column 'rel' must hold 0/1 or true/false; 1 rows do not"):
        as_relevance(["1", "yes"], column="rel")
    with pytest.raises(ValueError, match="0/1 or True/False"):
        as_relevance(["1", "0"])  # without a column, labels are not text


def test_one_permutation_pvalue_formula():
    """law.counted_pvalue is the formula of permutation_pvalue (from null values) and of the engine's
    sequential_pvalue (Besag-Clifford stop h / L, else (1 + g) / (1 + L)), to the bit."""
    rng = np.random.default_rng(2)
    null = rng.random(999)
    for obs in (0.0, 0.5, 0.999, 2.0):
        g = count_reached(null, obs)
        assert permutation_pvalue(null, obs) == counted_pvalue(g, 999) == (1 + g) / 1000
        assert permutation_pvalue(null, obs, exact=True) == counted_pvalue(g, 999, exact=True) == g / 999
    g, L = np.array([0, 3, 20, 20]), np.array([100, 400, 1600, 350])
    stopped = np.array([False, False, False, True])
    p, bound = sequential_pvalue(g, L, stopped)
    assert p.tolist() == [1 / 101, 4 / 401, 21 / 1601, 20 / 350] and bound.tolist() == [True, False, False, False]


def test_a_round_finds_each_levels_positions_once_a_batch(monkeypatch):
    """A round gathers a batch's state arrays, and writes its outputs back, at the positions of each level
    (a perturbation's strata, its queries) found once for the batch however many arrays share the level,
    and the positions found to gather it used again to write it back: for the mAP null one ``ranges`` call
    a level, two a batch (three when writing back found the strata's again, four before that: the
    outputs ``ap`` and ``pr`` share the queries' level)."""
    import apnull.score.engine.executor as executor

    screen = prepare_screen(digits_screen(), "Metadata_perturbation", "DMSO", "Metadata_plate", None, "cosine")
    null = mean_null(ScreenWork(screen, 3))
    calls, outputs = [], []
    real, fn = executor.ranges, null.fn
    monkeypatch.setattr(executor, "ranges", lambda off, idx: calls.append(len(idx)) or real(off, idx))

    def spy(part, pos, st, target, h):
        out = fn(part, pos, st, target, h)
        outputs.append({null.levels[name] for name in out} - {"item"})
        return out

    null.fn = spy
    resolve(null, rounds_of(20), threads=1)
    gathered = {null.levels[name] for name in null.inputs} - {"item"}
    assert outputs and outputs[0] == {"seg", "query"} and gathered == {"seg"}
    assert len(calls) == len(outputs) * len(gathered | outputs[0]) == 2 * len(outputs)


def test_draws_so_far_never_fall_when_a_units_law_is_counted(monkeypatch):
    """The progress's "draws so far" is a running total: a unit whose law is counted in a later round (its
    count becomes its law's choices, not draws) keeps the draws it made before. Units 1 and 2 stop after
    the first round, unit 0's law is counted in the second and unit 3 draws 10 more there: 400 draws so
    far before the third round, not the 310 of the units still drawn (it fell from 400 to 310 before)."""
    import apnull.score.engine.sequential as seq
    from apnull.score.engine.executor import WholeWork

    class Four(WholeWork):
        size = 4

        def part(self, items, worker):
            return type("Part", (), {"index": np.asarray(items)})()

    def batch(part, pos, st, target, h):
        drawn, exact = st["drawn"].copy(), st["exact"].copy()
        for t, j in enumerate(part.index[pos]):
            if target == 100:
                drawn[t] = 100
            elif j == 0:
                drawn[t], exact[t] = 7, True  # its law: 7 choices, counted
            else:
                drawn[t] += 10
        return {"drawn": drawn, "reached": np.zeros(pos.size, dtype=np.int64),
                "stopped": np.zeros(pos.size, dtype=bool), "exact": exact}

    state = {"drawn": np.zeros(4, dtype=np.int64), "reached": np.zeros(4, dtype=np.int64),
             "stopped": np.zeros(4, dtype=bool), "exact": np.zeros(4, dtype=bool)}
    levels = dict.fromkeys(state, "item")
    null = seq.Null(Four(), batch, state, levels, ("drawn", "exact"), "item", np.arange(4), np.arange(4))
    plan = iter([[True, False, False, True], [False, False, False, True], [False] * 4])
    monkeypatch.setattr(seq, "still_open", lambda *a, **k: np.array(next(plan)))

    class Rounds:
        def __init__(self):
            self.so_far = []

        def __call__(self, done, total):
            pass

        def round(self, info):
            self.so_far.append(info.draws_so_far)

    rounds = Rounds()
    seq.resolve(null, seq.rounds_of("auto"), threads=1, progress=rounds)
    assert rounds.so_far == [0, 400, 410]
    assert state["drawn"].tolist() == [7, 100, 100, 120]
