"""The screen held as arrays: the perturbation table, its components and the rounds in batches."""

import numpy as np
import pandas as pd
import pytest
from grouping_reference import grouped_rows
from score_helpers import tiny_screen

from apnull.score import digits_screen, score_profiles
from apnull.score.engine import executor
from apnull.score.table.segments import ranges
from apnull.score.engine.sequential import FINE_FROM, resolve, rounds_of, schedule
from apnull.score.nulls.permutation import ScreenWork, mean_null
from apnull.score.table.perts import PertTable, components_of
from apnull.score.table.screen import prepare_screen, text_codes
from apnull.score.table.memory import release_arrow, release_memory

KW = dict(perturbation="Metadata_perturbation", stratum="Metadata_plate")


def test_ranges():
    off = np.array([0, 2, 2, 5, 6])
    assert ranges(off, [2, 0, 3]).tolist() == [2, 3, 4, 0, 1, 5]
    assert ranges(off, [1]).size == 0


@pytest.mark.parametrize("ties", [False, True])
def test_perturbation_table_matches_grouped_rows(ties):
    """Rows per perturbation and stratum in canonical order (lexicographic by features, ties in row
    order): the same grouping as one lexsort of every row."""
    rng = np.random.default_rng(4)
    table = tiny_screen(rng, {"A": (5, {"a": 3, "b": 2, "c": 1}), "B": (4, {"a": 2, "d": 3}), "C": (3, {"b": 2})},
                        ties=ties)
    table = pd.concat([table, table.iloc[[6, 7, 8]]], ignore_index=True)  # exact duplicate rows too
    screen = prepare_screen(table, "Metadata_pert", "DMSO", "Metadata_plate", None, "cosine")
    lab = np.array([screen.perts[i].key for i in range(len(screen.perts))])
    labels = table["Metadata_pert"].to_numpy()[screen.rows]
    strata = table["Metadata_plate"].to_numpy()[screen.rows]
    want = {k: (s, reps) for k, s, reps, _ in grouped_rows(screen.X, labels, strata, labels != "DMSO")}
    for i, p in enumerate(screen.perts):
        s, reps = want[lab[i]]
        assert p.strata == s and all(np.array_equal(a, b) for a, b in zip(p.reps, reps))
    assert list(lab) == sorted(lab)
    again = PertTable.from_perts(list(screen.perts), screen.perts.strata)
    assert all(a.reps[0].tolist() == b.reps[0].tolist() and a.strata == b.strata
               for a, b in zip(again, screen.perts))


@pytest.mark.parametrize("layout, crossed", [
    # one replicate a plate (JUMP's layout)
    ({"A": (4, {"x": 1, "y": 1, "z": 1}), "B": (4, {"x": 1, "y": 1}), "C": (4, {"x": 1, "z": 1})}, True),
    # most perturbations crossed, one with two wells on a plate (a positive control): still crossed
    ({"A": (4, {"x": 1, "y": 1, "p": 2}), "B": (4, {"x": 1, "y": 1, "p": 2}), "C": (4, {"x": 1, "y": 1})}, True),
    # replicates together on a plate (block), one plate or several
    ({"A": (4, {"x": 3, "y": 2})}, False),
    ({"A": (4, {"x": 2, "y": 2}), "B": (4, {"x": 2, "z": 3})}, False),
    # half crossed, half not: not most
    ({"A": (4, {"x": 1, "p": 2}), "B": (4, {"x": 1, "p": 2})}, False),
])
def test_the_crossed_layout_as_the_rounds_see_it(layout, crossed):
    """``PertTable.crossed``: most perturbations that span several strata have one replicate on each."""
    table = tiny_screen(np.random.default_rng(3), layout)
    assert prepare_screen(table, "Metadata_pert", "DMSO", "Metadata_plate", None, "cosine").perts.crossed is crossed
    if crossed:  # without a stratum column the screen is one stratum: block
        table = table.assign(Metadata_plate="one")
        assert not prepare_screen(table, "Metadata_pert", "DMSO", "Metadata_plate", None, "cosine").perts.crossed


@pytest.mark.parametrize("plates, crossed", [(3, True), (1, False)])
def test_the_map_null_takes_the_finer_tail_on_the_crossed_layout_only(monkeypatch, plates, crossed):
    """A run's mAP null refines with ``schedule``'s finer tail on the crossed layout, and with the x4
    rounds on the block layout (whose p-values stay those of earlier versions); the queries' null keeps
    the x4 rounds on both."""
    import apnull.score.nulls.conditional as conditional
    import apnull.score.profiles as profiles

    seen = []

    def spy(module):
        real = module.rounds_of

        def rounds(*a, **kw):
            out = real(*a, **kw)
            seen.append((module.__name__.rsplit(".", 1)[1], out.targets))
            return out
        monkeypatch.setattr(module, "rounds_of", rounds)

    spy(profiles)
    spy(conditional)
    rng = np.random.default_rng(5)
    layout = ({"A": (5, {f"t{i}": 1 for i in range(6)}), "B": (5, {f"t{i}": 1 for i in range(6)}),
               "C": (5, {f"t{i}": 1 for i in range(6)})} if plates == 3 else {"A": (8, {f"t{i}": 3 for i in range(6)})})
    score_profiles(tiny_screen(rng, layout), **KW | dict(perturbation="Metadata_pert"), control="DMSO",
                   permutations="auto", seed=0)
    fine, coarse = schedule(fine_from=FINE_FROM), schedule()
    assert ("profiles", fine if crossed else coarse) in seen
    assert all(targets == coarse for name, targets in seen if name == "conditional")
    assert crossed == any(name == "conditional" for name, _ in seen)  # the block screen has no conditional query


def test_the_finer_tail_of_the_schedule():
    assert schedule() == [100, 400, 1600, 6400, 25600, 102400, 409600, 1_000_000]
    assert schedule(fine_from=FINE_FROM) == [100, 400, 1600, 6400, 12800, 25600, 51200, 102400, 204800, 409600,
                                             819200, 1_000_000]
    assert schedule(cap=5000, fine_from=FINE_FROM) == [100, 400, 1600, 5000]
    assert rounds_of("auto", crossed=True).targets == schedule(fine_from=FINE_FROM)
    assert rounds_of("auto").targets == schedule()
    assert rounds_of(999, crossed=True).targets == [999] and rounds_of("all", crossed=True).exhaustive


def test_text_codes_of_numbers_and_text():
    codes, texts = text_codes(pd.Series([3, 1, 3, 10]))
    assert texts[codes].tolist() == ["3", "1", "3", "10"]
    codes, texts = text_codes(pd.Series(["x", None, "y"]))
    assert codes[1] == -1 and texts[codes[[0, 2]]].tolist() == ["x", "y"]


def test_components_as_the_engine_finds_them():
    rng = np.random.default_rng(1)
    table = tiny_screen(rng, {"A": (4, {"a": 2, "b": 1}), "B": (4, {"b": 1, "c": 2}), "C": (4, {"d": 2}),
                              "D": (4, {"e": 1}), "E": (4, {"e": 1})})
    screen = prepare_screen(table, "Metadata_pert", "DMSO", "Metadata_plate", None, "cosine")
    mine = ScreenWork(screen, 0).components
    assert [m.tolist() for m, _ in mine] == [m.tolist() for m, _ in components_of(screen.perts)]
    assert [[screen.perts.strata[s] for s in st] for _, st in mine] == [["A", "B"], ["C"], ["D", "E"]]


@pytest.mark.parametrize("chunk", [1, 3, 64])
def test_rounds_do_not_depend_on_batches_or_threads(chunk, monkeypatch):
    screen = prepare_screen(digits_screen(seed=2), "Metadata_perturbation", "DMSO", "Metadata_plate", None, "cosine")
    def run(threads):
        null = mean_null(ScreenWork(screen, 3))
        res = resolve(null, rounds_of("auto", cap=1600), threads=threads, cap=1600)
        return [res.p_value, res.drawn, res.bound] + [null.state[k] for k in ("ap", "pr", "map", "counters")]

    ref = run(1)
    monkeypatch.setattr(executor, "BATCH", chunk)
    got = run(3)
    for a, b in zip(ref, got):
        assert np.array_equal(a, b)


def test_null_maps_of_several_perturbation_columns():
    """With several perturbation columns and adaptive permutations, null_maps finds the row of the
    perturbation in the groups table by its key (the first column alone is not the key)."""
    table = digits_screen(n_null=3)  # rounds to 1,600 draws in 0.2 s (the default screen: 1,000,000 draws, 5 s)
    res = score_profiles(table, perturbation=["Metadata_perturbation", "Metadata_kind"], stratum="Metadata_plate")
    row = res.groups.iloc[0]
    null = res.null_maps((row["Metadata_perturbation"], row["Metadata_kind"]))
    assert null.size == row["permutations"]


def test_tables_keep_the_input_dtypes_and_leave_the_input_alone():
    table = digits_screen()
    before = table.copy(deep=True)
    res = score_profiles(table, **KW, permutations=99)
    pd.testing.assert_frame_equal(table, before)
    assert res.groups["Metadata_perturbation"].dtype == pd.Series(["x"]).dtype
    assert res.queries["null"].dtype == pd.Series(["x"]).dtype
    assert res.queries["row"].is_monotonic_increasing


def test_release_is_harmless():
    release_arrow()
    assert release_memory() in (True, False)
