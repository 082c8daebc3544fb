"""What a crossed run keeps between its rounds and its two nulls: each pool's similarities
(:func:`apnull.score.nulls.pooltables.kept_pools`) and the prepared replicate rows of a table read when asked
(:meth:`apnull.score.nulls.pooltables.BuiltComponents.keep_rows`), each with the tables of a run keeping none."""

import io
import re
import threading

import numpy as np
import pandas as pd
import pytest
from test_score_crossed import KW, crossed_screen

import apnull.score.nulls.conditional as conditional
import apnull.score.nulls.permutation as permutation
import apnull.score.nulls.pooltables as pooltables
import apnull.score.profiles as profiles
import apnull.score.table.rows as prepared
from apnull.score import score_profiles


@pytest.fixture(autouse=True)
def crossed_on_small_screens(monkeypatch):
    """A small screen takes the crossed kernels (from permutation.CROSSED_MIN_PERTURBATIONS on)."""
    monkeypatch.setattr(permutation, "CROSSED_MIN_PERTURBATIONS", 0)


def near_line_screen(seed=1, float32=False):
    """A crossed screen with a few weak perturbations, refined over several rounds of both nulls."""
    rng = np.random.default_rng(seed)
    table = crossed_screen(rng, perts=16, plates=6, extra=False, plate_effect=0.5)
    feats = [c for c in table.columns if c.startswith("f")]
    for i in range(6):
        rows = table["Metadata_pert"] == f"t{i:02d}"
        table.loc[rows, feats] += 0.5 * rng.normal(size=len(feats))
    if float32:
        table[feats] = table[feats].astype(np.float32)
    return table


def test_pools_are_laid_out_once_for_every_round_and_null(monkeypatch):
    """Each crossed pool's similarities are computed by the first round that lays it out and read by every
    later round of the mAP null and by every round of the queries' null (a room of the component's
    ``pools``, marked done), and the tables are those of a run keeping none (``POOLS_MOST`` 0), bit for bit."""
    calls = {"mAP": [], "queries": []}
    real = pooltables.kept_pools

    def spy(name):
        def kept(part, c, pos):
            out = real(part, c, pos)
            calls[name].append((part.index[np.asarray(pos)].tolist(), out.start.copy(), out.done.copy()))
            return out
        return kept

    monkeypatch.setattr(permutation, "kept_pools", spy("mAP"))
    monkeypatch.setattr(conditional, "kept_pools", spy("queries"))
    table = near_line_screen()
    new = score_profiles(table, **KW, permutations="auto", seed=2)
    seen = set()
    for name in ("mAP", "queries"):
        for index, start, done in calls[name]:
            assert (start >= 0).all()
            assert done.tolist() == [j in seen for j in index]  # kept from the first time on
            seen.update(index)
    assert len(calls["mAP"]) > 1 and calls["queries"] and all(d.all() for _, _, d in calls["queries"])
    monkeypatch.setattr(pooltables, "POOLS_MOST", 0)
    calls = {"mAP": [], "queries": []}
    old = score_profiles(table, **KW, permutations="auto", seed=2)
    assert all((s < 0).all() for name in calls for _, s, _ in calls[name])  # none kept: each computed again
    assert new.groups["permutations"].max() >= 1_600
    pd.testing.assert_frame_equal(new.groups, old.groups)
    pd.testing.assert_frame_equal(new.queries, old.queries)


def test_item_marks_grow_and_keep_their_fill():
    """:class:`apnull.score.nulls.pooltables.ItemMarks`: unset perturbations read as the fill, set ones as
    their marks, whatever order the indices come in and however far the array must grow."""
    marks = pooltables.ItemMarks(-1)
    assert marks.get([0, 5]).tolist() == [-1, -1] and marks.nbytes == 0
    marks.set([5, 2], [7, 0])
    marks.set(np.array([40]), 1)
    assert marks.get([2, 5, 40, 39, 41, 1000]).tolist() == [0, 7, 1, -1, -1, -1]
    assert marks.get(np.zeros(0, dtype=np.int64)).size == 0
    marks.set([], [])
    assert marks.values.size == 41 and pooltables._nbytes({"m": marks}) == marks.values.nbytes


def test_pool_rooms_are_bounded_and_counted(monkeypatch):
    """Past ``POOLS_MOST`` bytes a pool gets no room (it computes its similarities each time, the same
    values); the rooms held count as their bytes in :class:`apnull.score.nulls.pooltables.BuiltComponents`,
    not as the buffer's."""
    rooms = pooltables.Rooms(800, np.float64)  # 100 values
    kept = rooms.kept([3, 5, 7], {3: 60, 5: 50, 7: 40})
    assert kept.start.tolist() == [0, -1, 60] and rooms.nbytes == 800 and kept.buf.size == 100
    assert pooltables._nbytes({"pools": rooms}) == 800
    assert rooms.kept([7], {}).start.tolist() == [60]
    table = near_line_screen()
    base = score_profiles(table, **KW, permutations=99, seed=3)
    monkeypatch.setattr(pooltables, "POOLS_MOST", 8 * 200)  # room for a pool or two of this screen only
    small = score_profiles(table, **KW, permutations=99, seed=3)
    pd.testing.assert_frame_equal(base.groups, small.groups)
    pd.testing.assert_frame_equal(base.queries, small.queries)


def test_rows_of_a_table_read_when_asked_are_made_once(monkeypatch):
    """A float32 table's prepared replicate rows (read when asked) are made by the first in-process part
    and every later round's part of both nulls reads them (the same array), where every part made its own;
    the tables are those of the same screen given as float64 (made once, held as a matrix). The table counts
    as large (a small one is prepared whole)."""
    monkeypatch.setattr(prepared, "FLOAT64_CELLS", 0)
    table = near_line_screen(float32=True)
    parts = []
    real = permutation.ScreenWork.part

    def spy(self, items, worker):
        out = real(self, items, worker)
        parts.append(out.arrays.X)
        return out

    monkeypatch.setattr(permutation.ScreenWork, "part", spy)
    new = score_profiles(table, **KW, permutations="auto", seed=2)
    assert len(parts) > 3 and all(X is parts[0] for X in parts)
    feats = [c for c in table.columns if c.startswith("f")]
    wide = table.astype({c: np.float64 for c in feats})
    old = score_profiles(wide, **KW, permutations="auto", seed=2)
    pd.testing.assert_frame_equal(new.groups, old.groups)
    pd.testing.assert_frame_equal(new.queries, old.queries)


def test_a_batch_does_not_wait_for_a_shared_table_being_built(monkeypatch):
    """While one thread builds a component's shared table of control pairs, a batch of another asking for
    it takes the table as it was (none at first) instead of waiting; once built, the batches read it. The
    tables of a run whose every batch found the table being built (so computed every pair itself) are
    those of a run reading it, bit for bit."""
    table = near_line_screen()
    kw = dict(KW, permutations="auto", threads=2)
    want = score_profiles(table, **kw)
    asked = []
    real = pooltables.shared_table

    def spy(part, c):
        got = real(part, c)
        asked.append(got.v.size)
        return got

    monkeypatch.setattr(permutation, "shared_table", spy)
    assert pooltables._BUILD_LOCK.acquire(blocking=False)  # another thread is building, for the whole run
    try:
        got = score_profiles(table, **kw)
    finally:
        pooltables._BUILD_LOCK.release()
    assert asked and not any(asked)  # every batch went on without a table (none was built yet)
    pd.testing.assert_frame_equal(got.groups, want.groups, check_exact=True)
    pd.testing.assert_frame_equal(got.queries, want.queries, check_exact=True)
    asked.clear()
    score_profiles(table, **dict(kw, threads=1))
    assert asked and all(asked)  # one thread: built by its first batch, read by every batch after it


def _queries_thread() -> bool:
    return any(t.name == "apnull-queries" for t in threading.enumerate())


def _beside_spies(monkeypatch, hold=None):
    """Each batch of either null noted in ``seen`` ("mAP" or "queries", its round's target, whether the
    queries' own thread is running) as it starts; with ``hold``, the mAP null's refinement batches wait (up to 20 s) until a batch of the
    queries' null has started."""
    seen, started = [], threading.Event()
    real_m, real_q = permutation.perturbations_batch, conditional.query_batch

    def mean_batch(part, pos, st, target, h, **kw):
        seen.append(("mAP", target, _queries_thread()))
        if hold and target > 100 and not started.wait(20):
            started.set()  # waited once, in vain: the queries' null comes after this one
        return real_m(part, pos, st, target, h, **kw)

    def query_batch(part, pos, st, target, h):
        seen.append(("queries", target, _queries_thread()))
        started.set()
        return real_q(part, pos, st, target, h)

    monkeypatch.setattr(permutation, "perturbations_batch", mean_batch)
    monkeypatch.setattr(conditional, "query_batch", query_batch)
    return seen


@pytest.mark.parametrize("rows", ["read from the table", "held whole"])
def test_the_queries_null_runs_beside_the_refinement_rounds(monkeypatch, rows):
    """With the rows read from a float32 table, or a matrix small enough to hold whole, no deadline and no
    progress, the queries' null starts once the mAP null's first round is done, in a thread of its own, and
    draws while the mAP null's refinement rounds are still to run (a refinement batch waits for it here); the
    tables are those of the run told its progress (the queries' null after the mAP null), bit for bit, with
    two threads and with one. A matrix held whole is made into the result's rows (its hashes) in the queries'
    thread once its null is done, the same rows as a run that makes them after the mAP null."""
    table = near_line_screen(float32=True)
    large = rows == "read from the table"
    for threads in (2, 1):
        monkeypatch.setattr(prepared, "FLOAT64_CELLS", 0 if large else prepared.FLOAT64_CELLS)
        seen = _beside_spies(monkeypatch, hold=True)
        held_in = []
        real_hold = profiles.hold_rows
        monkeypatch.setattr(profiles, "hold_rows", lambda *a: held_in.append(threading.current_thread().name)
                            or real_hold(*a))
        beside = score_profiles(table, **KW, permutations="auto", seed=2, threads=threads)
        assert held_in == ["apnull-queries"]
        first_q = [k for k, s in enumerate(seen) if s[0] == "queries"][0]
        assert not any(s[0] == "mAP" and s[1] == 100 for s in seen[first_q:])  # after the mAP null's first round
        assert any(s[0] == "mAP" and s[1] > 100 for s in seen[first_q:])  # and before its refinement is done
        assert not seen[0][2] and all(s[2] for s in seen if s[0] == "queries")  # in a thread of their own
        monkeypatch.undo()
        monkeypatch.setattr(permutation, "CROSSED_MIN_PERTURBATIONS", 0)
        seen = _beside_spies(monkeypatch)
        after = score_profiles(table, **KW, permutations="auto", seed=2, threads=threads, progress=lambda d, t: None)
        first_q = [k for k, s in enumerate(seen) if s[0] == "queries"][0]
        assert all(s[0] == "queries" for s in seen[first_q:])  # told its progress: one null after the other
        assert not any(s[2] for s in seen)
        pd.testing.assert_frame_equal(beside.groups, after.groups, check_exact=True)
        pd.testing.assert_frame_equal(beside.queries, after.queries, check_exact=True)
        rows_of = (beside._screen.X, after._screen.X)
        assert all(isinstance(X, prepared.PreparedRows) for X in rows_of)
        assert np.array_equal(rows_of[0].hashes, rows_of[1].hashes) and rows_of[0].rows.size == rows_of[1].rows.size
        monkeypatch.undo()
        monkeypatch.setattr(permutation, "CROSSED_MIN_PERTURBATIONS", 0)


def test_a_failure_of_either_null_ends_the_queries_thread(monkeypatch):
    """An error in a refinement round of the mAP null stops the queries' null beside it (at its next batch)
    and is raised once its thread has ended; an error of the queries' null is raised by the run."""
    table = near_line_screen(float32=True)
    real_m, real_q = permutation.perturbations_batch, conditional.query_batch

    def failing_mean(part, pos, st, target, h, **kw):
        if target > 400:
            raise RuntimeError("mAP failed")
        return real_m(part, pos, st, target, h, **kw)

    monkeypatch.setattr(permutation, "perturbations_batch", failing_mean)
    with pytest.raises(RuntimeError, match="mAP failed"):
        score_profiles(table, **KW, permutations="auto", seed=2)
    assert not [t for t in threading.enumerate() if t.name == "apnull-queries"]
    monkeypatch.setattr(permutation, "perturbations_batch", real_m)

    def failing_query(part, pos, st, target, h):
        if target > 100:
            raise ValueError("queries failed")
        return real_q(part, pos, st, target, h)

    monkeypatch.setattr(conditional, "query_batch", failing_query)
    with pytest.raises(ValueError, match="queries failed"):
        score_profiles(table, **KW, permutations="auto", seed=2)
    assert not [t for t in threading.enumerate() if t.name == "apnull-queries"]


class _Terminal(io.StringIO):
    def isatty(self):
        return True


#: Every whole line of a run's progress (after its command's name), the null it names if any.
_LINE = re.compile(r"^(?:(?P<null>mAP null|per-query null): )?(?:"
                   r"round \d+: [\d,]+ (?P<round>perturbation|query|queries)s? near the decision line, refined to [\d,]+ draws "
                   r"each \([\d,]+ draws so far; at most [\d,]+ more(, (about|under) [\d.]+ s)?\)"
                   r"|(?P<count>[a-z][a-z ,()']*): [\d,]+ of [\d,]+ "
                   r"\(\d+ s\)"
                   r"|draws spent: .+ \(\d+ s\)|preparing compiled code \(first run only\) \.\.\.)$")


def _progress_lines(text, tty):
    """The lines written, each checked whole (on a terminal, each count written over the one before it)."""
    pieces = [p.rstrip(" ") for line in text.split("\n") for p in (line.split("\r") if tty else [line]) if p]
    for piece in pieces:
        found = _LINE.match(piece)
        assert found, f"a torn or unnamed line: {piece!r}"
        if found["null"] == "per-query null":
            assert found["round"] in ("query", "queries") or "conditional" in (found["count"] or "")
        elif found["null"] == "mAP null":
            assert found["round"] == "perturbation" or found["count"] == "perturbations"
    return pieces


def test_the_command_lines_progress_keeps_the_queries_null_beside(monkeypatch):
    """Told the command line's progress (a :class:`LineProgress`, on a terminal or not), the queries' null
    still runs in a thread of its own beside the mAP null's refinement rounds; every line written meanwhile
    names its null and is written whole; the tables are those of the run without progress and of the run
    told a plain function (one null after the other), bit for bit, with two threads and with one; and with
    a budget that never binds (both nulls' rounds estimated on its one clock), the same; with a budget
    whose time left is short of ``BESIDE_ROOM`` times the first round's, the nulls run in turn."""
    from apnull.score.engine.progress import LineProgress

    table = near_line_screen(float32=True)
    for threads in (2, 1):
        quiet = score_profiles(table, **KW, permutations="auto", seed=2, threads=threads)
        after = score_profiles(table, **KW, permutations="auto", seed=2, threads=threads, progress=lambda d, t: None)
        for err in (io.StringIO(), _Terminal()):
            seen = _beside_spies(monkeypatch, hold=True)
            told = score_profiles(table, **KW, permutations="auto", seed=2, threads=threads,
                                  progress=LineProgress(err, after=0.0, every=0.0))
            assert any(s[0] == "queries" and s[2] for s in seen)  # in their own thread
            first_q = [k for k, s in enumerate(seen) if s[0] == "queries"][0]
            assert any(s[0] == "mAP" and s[1] > 100 for s in seen[first_q:])  # beside the refinement rounds
            lines = _progress_lines(err.getvalue(), isinstance(err, _Terminal))
            named = [line.split(":")[0] for line in lines]
            assert "mAP null" in named and "per-query null" in named
            assert lines[-1].startswith("draws spent")  # once both are done, no null named
            for res in (quiet, after):
                pd.testing.assert_frame_equal(told.groups, res.groups, check_exact=True)
                pd.testing.assert_frame_equal(told.queries, res.queries, check_exact=True)
            monkeypatch.undo()
            monkeypatch.setattr(permutation, "CROSSED_MIN_PERTURBATIONS", 0)
    seen = _beside_spies(monkeypatch, hold=True)
    err = io.StringIO()
    budgeted = score_profiles(table, **KW, permutations="auto", seed=2, budget=600,
                              progress=LineProgress(err, after=0.0, every=0.0))
    assert any(s[0] == "queries" and s[2] for s in seen) and "per-query null:" in err.getvalue()
    for mine, plain in ((budgeted.groups, quiet.groups), (budgeted.queries, quiet.queries)):
        assert not mine.pop("decision_open").any()  # a budgeted run's tables say which decisions it left open
        pd.testing.assert_frame_equal(mine, plain, check_exact=True)
    monkeypatch.undo()
    monkeypatch.setattr(permutation, "CROSSED_MIN_PERTURBATIONS", 0)
    monkeypatch.setattr(conditional, "BESIDE_ROOM", 1e12)  # a budget without room for both: in turn
    seen = _beside_spies(monkeypatch)
    err = io.StringIO()
    turn = score_profiles(table, **KW, permutations="auto", seed=2, budget=600, progress=LineProgress(err, after=0.0))
    assert seen and not any(s[2] for s in seen) and "null:" not in err.getvalue()
    pd.testing.assert_frame_equal(turn.groups, budgeted.groups.assign(decision_open=False)[turn.groups.columns])


def test_a_notebooks_bar_shows_the_two_nulls_beside_each_other(monkeypatch, jupyter):
    """``progress=True`` in Jupyter: the notebook's reporter can speak for two nulls (``beside``), so the
    queries' null runs beside the mAP null's refinement there too, each with a bar naming its null in the one
    cell; once the queries are done, their bar becomes its last count line. The tables are those of the run
    without progress, bit for bit."""
    table = near_line_screen(float32=True)
    seen = _beside_spies(monkeypatch, hold=True)
    shown = score_profiles(table, **KW, permutations="auto", seed=2, progress=True)
    first_q = [k for k, s in enumerate(seen) if s[0] == "queries"][0]
    assert any(s[0] == "mAP" and s[1] > 100 for s in seen[first_q:]) and all(s[2] for s in seen if s[0] == "queries")
    both = [html for _, html in jupyter if "per-query null: " in html and "mAP null: " in html]
    assert both and max(html.count("<progress") for html in both) == 2
    last = jupyter[-1][1]
    assert last.count("<progress") == 1 and "null" not in last.split("<progress")[-1]  # its bar names no null
    assert re.search(r"<div>per-query null: perturbations \(conditional null of their queries\): (\d+) of \1 ", last)
    monkeypatch.undo()
    monkeypatch.setattr(permutation, "CROSSED_MIN_PERTURBATIONS", 0)
    quiet = score_profiles(table, **KW, permutations="auto", seed=2)
    pd.testing.assert_frame_equal(shown.groups, quiet.groups, check_exact=True)
    pd.testing.assert_frame_equal(shown.queries, quiet.queries, check_exact=True)


def test_the_pages_bar_keeps_the_queries_null_beside_under_its_time_limit(monkeypatch):
    """The score page's run (a :class:`ScoreProgress` bar, a time limit always set): the queries' null runs
    beside the mAP null's refinement rounds there too; its counts, told from its own thread, are shown by the
    page's bar after the mAP null's own (the bar is only ever moved from the run's thread), and the bar names
    it no more once it is done. The tables are those of the run without a limit, bit for bit."""
    from apnull.ui.progress import ScoreProgress

    class Bar:
        def __init__(self):
            self.texts, self.threads = [], set()

        def progress(self, value, text=""):
            self.texts.append(text)
            self.threads.add(threading.current_thread().name)

    table = near_line_screen(float32=True)
    quiet = score_profiles(table, **KW, permutations="auto", seed=2)
    seen = _beside_spies(monkeypatch, hold=True)
    bar = Bar()
    progress = ScoreProgress(bar)
    progress.every = 0.0  # every count shown
    paged = score_profiles(table, **KW, permutations="auto", seed=2, budget=60, progress=progress)
    assert any(s[0] == "queries" and s[2] for s in seen)  # in their own thread, beside
    first_q = [k for k, s in enumerate(seen) if s[0] == "queries"][0]
    assert any(s[0] == "mAP" and s[1] > 100 for s in seen[first_q:])
    both = [t for t in bar.texts if " · per-query null: " in t]
    assert both and all(re.search(r" · per-query null: [\d,]+ of [\d,]+ \w", t) for t in both)
    assert bar.threads == {threading.current_thread().name} and progress.twin is None
    for mine, plain in ((paged.groups, quiet.groups), (paged.queries, quiet.queries)):
        assert not mine.pop("decision_open").any()
        pd.testing.assert_frame_equal(mine, plain, check_exact=True)


def test_the_queries_null_waits_while_the_map_null_holds_it():
    """While the mAP null draws a round with the queries' null held (:meth:`Deadline.held`), the queries'
    progress (told at each of its batches) waits, then goes on; a run that fails meanwhile ends it."""
    from apnull.score.engine.clock import Deadline

    deadline, stop, counts = Deadline(60), threading.Event(), []
    checked = conditional._Checked(stop, lambda done, total: counts.append((done, total)), deadline)
    with deadline.held():
        batch = threading.Thread(target=checked, args=(1, 2))
        batch.start()
        batch.join(0.3)
        assert batch.is_alive() and not counts  # held
    batch.join(5)
    assert not batch.is_alive() and counts == [(1, 2)]
    ended = []

    def failing():
        try:
            checked(2, 2)
        except conditional._Stopped:
            ended.append(True)

    with deadline.held():
        batch = threading.Thread(target=failing)
        batch.start()
        stop.set()  # the run failed while the queries were held
        batch.join(5)
    assert ended == [True] and counts == [(1, 2)]
