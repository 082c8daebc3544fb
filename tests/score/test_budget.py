"""A time budget bounds every part of a run: one clock (``Deadline``) for all its stages, the far-tail
counting stopping with bounds that hold, the first round drawn in steps, a comparison's two tables
on one deadline, and progress naming each stage."""

from __future__ import annotations

import contextlib
import io
import threading

import numpy as np
import pandas as pd
import pytest

from apnull.score import compare as compare_module
from apnull.score import digits_screen, score_compare, score_profiles
from apnull.score.engine import sequential as seq
from apnull.score.engine.clock import estimate_text
from apnull.score.engine.clock import COMPARABLE, Deadline, Pace, Scoped, alone_fits, tell_stage
from apnull.score.engine.progress import LineProgress
from apnull.score.example import digits_pipeline_pair
from apnull.score.nulls.laws import LAW_GRACE, LawCache
from apnull.score.nulls.permutation import ScreenWork, mean_null
from apnull.score.table.screen import prepare_screen

KW = dict(perturbation="Metadata_perturbation", stratum="Metadata_plate")


class Clock:
    """A clock the test moves by hand."""

    def __init__(self):
        self.now = 0.0

    def __call__(self):
        return self.now


class Recorder:
    """A progress object that keeps every call."""

    def __init__(self):
        self.calls, self.stages, self.rounds = [], [], []

    def __call__(self, done, total):
        self.calls.append((done, total))

    def stage(self, units, scope=""):
        self.stages.append((units, scope))

    def round(self, info):
        self.rounds.append(info)


def strong_block(P=3, k=10, controls=60, seed=0) -> pd.DataFrame:
    """``P`` strong perturbations x ``k`` replicates on one plate of ``controls`` controls: every query
    under the exact law of (k - 1, controls), its AP in the far tail the grid cannot resolve."""
    rng = np.random.default_rng(seed)
    X = [rng.normal(size=(controls, 20))]
    names = ["DMSO"] * controls
    for t in range(P):
        X.append(rng.normal(size=20) * 0.9 + rng.normal(size=(k, 20)))
        names += [f"p{t}"] * k
    table = pd.DataFrame(np.concatenate(X), columns=[f"f{i}" for i in range(20)])
    table.insert(0, "Metadata_plate", "P1")
    table.insert(0, "Metadata_perturbation", names)
    return table


# -- the clock -----------------------------------------------------------------------------------------

def test_a_deadline_counts_from_its_start_and_shares_its_clock():
    clock = Clock()
    clock.now = 100.0
    d = Deadline(10, clock=clock)
    clock.now = 104.0
    assert d.elapsed() == 4 and d.left() == 6 and not d.passed() and d.passed(6.5)
    a = d.share(0.5)  # half of the 6 s left: until 7 s
    assert a.seconds == 10 and a.limit == 7 and a.elapsed() == 4
    clock.now = 107.5
    assert a.passed() and not d.passed() and "share of the budget of 10 s" in a.text()
    assert d.text() == "the budget of 10 s (7.5 s spent)"
    clock.now = 120.0
    assert d.passed() and d.share(0.5).limit == d.elapsed()  # nothing left to share


def test_one_deadline_per_run_made_when_the_options_are_checked():
    from apnull.score.options import RunOptions

    opts = RunOptions.checked(budget=5)
    assert opts.budget == 5.0 and isinstance(opts.deadline, Deadline) and opts.deadline.seconds == 5
    shared = Deadline(7)
    again = RunOptions.checked(budget=shared)
    assert again.deadline is shared and again.budget == 7.0  # a part of a larger run keeps its clock
    assert RunOptions.checked().deadline is None
    with pytest.raises(ValueError, match="budget must be a positive number"):
        RunOptions.checked(budget=-1)


# -- far tails ------------------------------------------------------------------------------------------

APS = np.array([0.99, 0.95, 1.0, 0.3, np.nan])


def test_far_tails_are_not_counted_past_the_deadline_and_say_so():
    ms, ns = [19] * 5, [200] * 5
    counted, none = LawCache(0).counted_pvalues(ms, ns, APS)
    assert not none.any()
    clock = Clock()
    late = Deadline(1.0, clock=clock)
    clock.now = 1.0 + LAW_GRACE / 2  # passed, but the laws are still computed
    p, uncounted = LawCache(0, late).counted_pvalues(ms, ns, APS)
    # 0.99 and 0.95: the grid's guaranteed upper end, never below the counted p, never 0
    assert uncounted.tolist() == [True, True, False, False, False]
    assert (p[:2] >= counted[:2]).all() and (p[:2] > 0).all() and (p[:2] <= 1).all()
    assert p[2] == counted[2] == pytest.approx(1 / 2.4e27, rel=0.2)  # AP = 1: the closed form, exact
    assert p[3] == counted[3] and np.isnan(p[4])  # the bulk needs no counting
    clock.now = 10.0  # far past: no law is computed either: p = 1, but for the closed form of AP = 1
    p, uncounted = LawCache(0, late).counted_pvalues(ms, ns, APS)
    assert p[[0, 1, 3]].tolist() == [1.0] * 3 and uncounted.tolist() == [True, True, False, True, False]
    assert p[2] == pytest.approx(counted[2], rel=1e-12) and np.isnan(p[4])


def test_far_tail_counting_reports_its_progress():
    rec = Recorder()
    LawCache(0).counted_pvalues([19] * 5, [200] * 5, APS, rec)
    assert rec.stages == [("queries, exact laws and far tails", "")]
    assert rec.calls[-1] == (4, 4) and len(rec.calls) >= 4  # the law, then each counted tail


def test_a_tiny_budget_leaves_far_tails_as_flagged_bounds():
    table = strong_block()
    full = score_profiles(table, **KW, seed=0)
    short = score_profiles(table, **KW, seed=0, budget=1e-9)
    q, s = full.queries, short.queries
    assert (q["null"] == "exact law").all() and not q["p_value_bound"].any()
    bounded = s["p_value_bound"].to_numpy()
    assert bounded.any()
    assert (s["p_value"].to_numpy() >= q["p_value"].to_numpy()).all() and (s["p_value"] > 0).all()
    # where no bound was needed the values are those of the full run (AP = 1 by its closed form)
    np.testing.assert_array_equal(s["p_value"].to_numpy()[~bounded], q["p_value"].to_numpy()[~bounded])
    outcome = short.settings["budget_outcome"]
    assert outcome["tail_bounds"] == int(bounded.sum()) and short.settings["budget"] == 1e-9
    assert any("far tails of" in w and "p_value_bound" in w for w in short.warnings)
    assert "decision_open" in s.columns and outcome["open_queries"] == int(s["decision_open"].sum())


def test_bounds_leave_a_decision_open_only_where_it_could_change():
    from apnull.score.nulls.conditional import bounds_undecided

    p = np.array([1e-9, 0.2, 0.3, 0.01])
    bound = np.array([True, True, False, False])
    # 1e-9 is rejected even as an upper bound; 0.2 could be anything in [0, 0.2]: open
    assert bounds_undecided(p, bound).tolist() == [False, True, False, False]


# -- rounds ---------------------------------------------------------------------------------------------

@pytest.fixture(scope="module")
def digits():
    return digits_screen()


def test_a_budget_that_never_binds_changes_no_draw():
    # three null perturbations, not eight: the same first round in steps and refinement rounds (up to 1,600
    # draws), without the 1,000,000 draws one group of the default screen takes (0.3 s, not 9 s of CPU)
    screen = digits_screen(n_null=3)
    plain = score_profiles(screen, **KW, seed=2)
    budgeted = score_profiles(screen, **KW, seed=2, budget=1e6)  # the first round in steps of 10, then 100
    used = plain.groups["permutations"]
    assert used.min() < 100 < used.max() and plain.queries["permutations"].sum() > 0  # stopped early, refined
    for a, b in ((plain.groups, budgeted.groups), (plain.queries, budgeted.queries)):
        np.testing.assert_array_equal(a["p_value"], b["p_value"])
        np.testing.assert_array_equal(a["permutations"], b["permutations"])
    assert not budgeted.groups["decision_open"].any() and budgeted.warnings == plain.warnings


def test_a_passed_deadline_stops_the_first_round_after_its_first_step(digits):
    screen = prepare_screen(digits, "Metadata_perturbation", ["DMSO"], "Metadata_plate", None, "cosine",
                            "error", None, "controls")
    clock = Clock()
    deadline = Deadline(1.0, clock=clock)
    clock.now = 5.0
    rec = Recorder()
    res = seq.resolve(mean_null(ScreenWork(screen, 0)), seq.rounds_of("auto"), threads=1, budget=deadline,
                      progress=rec)
    assert (res.drawn == seq.FIRST_STEPS[0]).all()
    assert res.stopped_by_budget.startswith(f"drawing for {len(screen.perts)} perturbations to 30 draws each")
    assert (res.p_value >= 1 / 11).all() and res.open.any()
    assert [i.target for i in rec.rounds] == [10]


class Ticks:
    """``time.monotonic`` for :mod:`.sequential`: each call one second after the one before, so every round
    takes one second and a round's rate is 1 / its draws."""

    def __init__(self):
        self.now = 0.0

    def monotonic(self):
        self.now += 1.0
        return self.now


def _small_screen():
    """The digits screen with three null perturbations (refined up to 1,600 draws, not 1,000,000)."""
    return prepare_screen(digits_screen(n_null=3), "Metadata_perturbation", ["DMSO"], "Metadata_plate", None,
                          "cosine", "error", None, "controls")


def _rounds_told(monkeypatch, screen, deadline, after_first=None):
    monkeypatch.setattr(seq, "time", Ticks())
    rec = Recorder()
    null = mean_null(ScreenWork(screen, 0))
    seq.resolve(null, seq.rounds_of("auto"), threads=1, budget=deadline, progress=rec, after_first=after_first)
    return rec.rounds


def test_a_first_round_that_fits_in_the_time_left_skips_its_steps(monkeypatch):
    """Under a deadline the first round is drawn in steps only while the whole round might not fit: once the
    first step's rate says it fits in the time left, the step to 30 draws is skipped; where it does not fit,
    the step is drawn (and estimated). The draws are the same either way."""
    screen = _small_screen()
    far = _rounds_told(monkeypatch, screen, Deadline(1e6, clock=Clock()))
    assert [i.target for i in far[:2]] == [seq.FIRST_STEPS[0], 100]
    # the first step takes 1 s for 10 draws a unit: the whole round (90 more a unit) would take 9 s, the step
    # to 30 draws 2 s; with 5 s left the step is drawn, and the round after it (70 more a unit, 3.5 s) too
    near = _rounds_told(monkeypatch, screen, Deadline(5.0, clock=Clock()))
    assert [i.target for i in near[:3]] == [10, 30, 100]
    assert near[1].estimate == pytest.approx(2.0)  # 20 draws a unit at the first step's 10 a second
    plain = seq.resolve(mean_null(ScreenWork(screen, 0)), seq.rounds_of("auto"), threads=1)
    stepped = seq.resolve(mean_null(ScreenWork(screen, 0)), seq.rounds_of("auto"), threads=1,
                          budget=Deadline(5.0, clock=Clock()))
    np.testing.assert_array_equal(plain.drawn, stepped.drawn)
    np.testing.assert_array_equal(plain.p_value, stepped.p_value)


def test_a_null_drawing_beside_another_expects_its_rounds_to_take_longer(monkeypatch):
    """Two nulls drawing on one deadline's clock share the cores: a round estimated from a round drawn alone
    is expected to take twice as long once another null draws beside it (:meth:`Deadline.drawing`), and a
    round measured while both drew is estimated at its own rate (``deadline.passed`` is asked with the
    estimate the round reports)."""
    screen = _small_screen()
    alone = _rounds_told(monkeypatch, screen, Deadline(1e6, clock=Clock()))
    deadline = Deadline(1e6, clock=Clock())
    other = contextlib.ExitStack()
    with other:
        shared = _rounds_told(monkeypatch, screen, deadline, after_first=lambda: other.enter_context(deadline.drawing()))
    assert [i.target for i in shared] == [i.target for i in alone] and len(alone) >= 4
    assert shared[2].estimate == pytest.approx(2 * alone[2].estimate)  # measured alone, drawn beside the other
    assert shared[3].estimate == pytest.approx(alone[3].estimate)  # measured beside it, drawn beside it


class Capped(Deadline):
    """A deadline that any round estimated at more than ``cap`` seconds would pass."""

    def __init__(self, cap):
        super().__init__(1e6, clock=Clock())
        self.cap = cap

    def passed(self, extra=0.0):
        return extra > self.cap


def test_the_first_null_holds_the_other_for_a_round_that_fits_only_alone(monkeypatch):
    """The mAP null's decisions come first, as when the nulls ran in turn: a round of the first null drawing
    on the clock whose doubled estimate (another null beside it) would pass the deadline but whose own would
    not is drawn with the other null held (:meth:`Deadline.wait_turn` waits all through it), estimated at its
    own rate; a null that is not the first holds nothing (:func:`alone_fits`)."""
    monkeypatch.setattr(seq, "FIRST_STEPS", (100,))  # no steps: the rounds of the run without a deadline
    screen = _small_screen()
    alone = _rounds_told(monkeypatch, screen, Deadline(1e6, clock=Clock()))
    e1 = alone[1].estimate  # the second round's, from the first round's rate
    deadline = Capped(1.5 * e1)
    held, real = [], seq.run_round

    def watched(*args, **kwargs):
        held.append(not deadline.wait_turn(0))
        return real(*args, **kwargs)

    monkeypatch.setattr(seq, "run_round", watched)
    other = contextlib.ExitStack()
    with other:
        told = _rounds_told(monkeypatch, screen, deadline, after_first=lambda: other.enter_context(deadline.drawing()))
    assert told[1].target == alone[1].target and told[1].estimate == pytest.approx(e1)  # its own rate
    assert held[:2] == [False, True]  # the first round beside nothing; the second with the other held
    assert deadline.wait_turn(0) and deadline.drawers() == 1  # nothing held, nobody drawing once it is done
    assert alone_fits(deadline, True, 2 * e1, 2.0) and not alone_fits(deadline, False, 2 * e1, 2.0)  # the first only
    assert not alone_fits(deadline, True, 4 * e1, 2.0) and not alone_fits(deadline, True, e1, 2.0)  # no need / no use


# -- a comparison: one clock ------------------------------------------------------------------------------

def test_compare_runs_both_tables_and_its_tests_on_one_deadline(monkeypatch):
    seen = []
    real_score, real_resolve = compare_module.score_profiles, compare_module.resolve
    me = threading.get_ident()  # this test's calls only: a dashboard's warm-up thread left by an earlier test
    # of this process may compare the example meanwhile (its idle steps, without a budget)

    def score(table, **kw):
        if threading.get_ident() == me:
            seen.append(("table", kw["budget"], kw["progress"]))
        return real_score(table, **kw)

    def resolve(null, rounds, **kw):
        if threading.get_ident() == me:
            seen.append(("flips", kw.get("budget"), None))
        return real_resolve(null, rounds, **kw)

    monkeypatch.setattr(compare_module, "score_profiles", score)
    monkeypatch.setattr(compare_module, "resolve", resolve)
    rec = Recorder()
    a, b = digits_pipeline_pair(seed=1)
    res = score_compare(a, b, key=["Metadata_plate", "Metadata_well"], perturbation="Metadata_perturbation",
                        stratum="Metadata_plate", seed=3, budget=30, progress=rec)
    tables = [d for kind, d, _ in seen if kind == "table"]
    flips = [d for kind, d, _ in seen if kind == "flips"]
    assert len(tables) == 2 and flips
    deadlines = tables + flips
    assert all(isinstance(d, Deadline) and d.seconds == 30 for d in deadlines)
    assert len({id(d._shared) for d in deadlines}) == 1  # one clock, started once
    assert tables[0].limit < 30 and tables[1].limit == 30  # A: half of what was left; B: the rest
    assert res.settings["budget"] == 30 and res.a.settings["budget"] == 30 == res.b.settings["budget"]
    scopes = {scope for _, scope in rec.stages}
    assert scopes == {"table A", "table B"}  # every stage says which table it refines


def test_a_rounds_estimate_counts_its_units_draws_at_their_costs():
    """:func:`seq.unit_costs`: a perturbation's draw costs k (k - 1) + 1 (its work's weight), a query's
    draw that shared among its perturbation's queries, and a null whose work has no weights costs one a
    unit; so a round of light units after a round of heavy ones (positive controls on every plate) is
    not timed at the heavy ones' pace."""
    from apnull.score.nulls.conditional import query_null

    rows = [("DMSO", f"P{p}") for p in range(4) for _ in range(5)]
    rows += [(f"t{i}", f"P{p}") for i in range(3) for p in range(i % 2, 4, 2)]  # two plates, one well each
    rows += [("pos", f"P{p}") for p in range(4) for _ in range(2)]  # two wells on every plate: k = 8
    X = np.random.default_rng(0).normal(size=(len(rows), 5))
    table = pd.concat([pd.DataFrame(rows, columns=["pert", "plate"]), pd.DataFrame(X, columns=list("abcde"))],
                      axis=1)
    work = ScreenWork(prepare_screen(table, "pert", ["DMSO"], "plate", None, "cosine"), 0)
    k = np.diff(work.screen.perts.qoff)
    assert np.array_equal(seq.unit_costs(mean_null(work)), k * (k - 1) + 1.0)
    queries = query_null(work, 0)
    per_query = (k * (k - 1) + 1.0) / k
    assert np.allclose(seq.unit_costs(queries), per_query[queries.unit_item])
    assert np.array_equal(seq.unit_costs(seq.Null(work=object(), fn=None, state={}, levels={}, inputs=(),
                                                   unit_level="item", units=np.arange(3), unit_item=np.arange(3))),
                          np.ones(3))


def test_a_round_is_estimated_from_the_latest_round_of_comparable_draws():
    """:class:`Pace`: what does not grow with the draws (a dask round's latency, the laws counted in place of
    draws) is not carried over from a small round to a large one. The per-query null of the 2,000-compound
    crossed screen on two dask workers: a round of 470,000 draws in 0.2 s, then one of 3,415 draws that also
    counted 140 laws in 0.15 s; the next round, 668,585 draws, was said to take about 14 s (from the small
    round's rate) and took a fraction of a second."""
    pace = Pace()
    assert pace.ahead(1000.0, 1) == (None, 1.0)  # before any round: unknown
    pace.add(0.2, 470_000.0, 1)
    pace.add(0.15, 3_415.0, 1)
    pace.add(0.1, 0.0, 1)  # a round that drew nothing tells no rate
    seconds, slower = pace.ahead(668_585.0, 1)
    assert seconds == pytest.approx(0.2 / 470_000 * 668_585) and slower == 1.0
    assert pace.ahead(3_415.0 * COMPARABLE, 1)[0] == pytest.approx(0.15 * COMPARABLE)  # the small one, comparable
    assert pace.ahead(3_415.0 * COMPARABLE + 1, 1)[0] == pytest.approx(0.2 / 470_000 * (3_415 * COMPARABLE + 1))
    assert pace.ahead(1e8, 1)[0] == pytest.approx(0.2 / 470_000 * 1e8)  # none comparable: the largest round's
    falling = Pace()  # fewer units a round, so fewer threads busy: the latest comparable round's rate is the one
    falling.add(1.0, 1e6, 1)
    falling.add(1.0, 5e5, 2)  # drawn beside another null
    assert falling.ahead(1e6, 2) == (pytest.approx(2.0), 1.0)
    assert falling.ahead(1e6, 4) == (pytest.approx(4.0), 2.0)  # four nulls now, two then: twice as slow
    assert falling.ahead(1e7, 1) == (pytest.approx(10.0), 1.0)  # none comparable: the largest, drawn alone


# -- progress words ---------------------------------------------------------------------------------------

def test_progress_never_says_about_under_1_s():
    assert estimate_text(0.2) == "under 1 s" and estimate_text(45) == "about 45 s"
    err = io.StringIO()
    progress = LineProgress(err, after=0.0, every=0.0, command="apnull compare", label="perturbations")
    scoped = Scoped(progress, "table B")
    tell_stage(scoped, "queries, conditional null")
    scoped.round(seq.RoundInfo(1, 3, "queries", 400, 1000, 900, 0.2))
    line = err.getvalue()
    assert line.startswith("apnull compare: table B: round 2: 3 queries near the decision line, refined to 400")
    assert line.rstrip().endswith("at most 900 more, under 1 s)") and "about under" not in line
    progress(1, 3)  # the count line names the stage with the command's words
    assert err.getvalue().splitlines()[-1].startswith("apnull compare: table B: queries, conditional null: 1 of 3 (")
