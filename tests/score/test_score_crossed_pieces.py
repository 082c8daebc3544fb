"""A crossed perturbation's round cut into pieces that threads draw side by side
(:class:`apnull.score.nulls.pieces.CrossedPieces`): the tables of the rounds drawn whole, bit for bit."""

import numpy as np
import pandas as pd
import pytest
from test_score_crossed import KW
from test_score_crossed_kept import near_line_screen

import apnull.score.nulls.permutation as permutation
import apnull.score.nulls.pieces as pieces
import apnull.score.nulls.pooltables as pooltables
from apnull.score import score_profiles


@pytest.fixture(autouse=True)
def crossed_on_small_screens(monkeypatch):
    """A small screen takes the crossed kernels (from permutation.CROSSED_MIN_PERTURBATIONS on), and its
    short rounds are cut (a piece of a real run has at least ``PIECE_DRAWS`` draws)."""
    monkeypatch.setattr(permutation, "CROSSED_MIN_PERTURBATIONS", 0)
    monkeypatch.setattr(pieces, "PIECE_DRAWS", 40)


def _spy_cuts(monkeypatch):
    cuts = []
    real = pieces.CrossedPieces.cut

    def cut(self, part, pos, st, target, h, count):
        out = real(self, part, pos, st, target, h, count)
        cuts.append((int(st["drawn"][0]), int(st["reached"][0]), target, count, None if out is None else out))
        return out

    monkeypatch.setattr(pieces.CrossedPieces, "cut", cut)
    return cuts


@pytest.mark.parametrize("seed", [1, 5])
def test_pieces_of_a_round_give_the_tables_of_the_round_drawn_whole(monkeypatch, seed):
    """Two threads cut the last rounds' few perturbations into pieces (each from its own counters, from
    the round's exceedances; only past h exceedances and with the pool's tables kept); the tables are one
    thread's, which never cuts, bit for bit."""
    table = near_line_screen(seed)
    cuts = _spy_cuts(monkeypatch)
    two = score_profiles(table, **KW, permutations="auto", seed=2, threads=2)
    cut = [c for c in cuts if c[4] is not None]
    assert cut, cuts
    for drawn, reached, target, count, made in cut:
        assert 2 <= len(made) <= count and reached >= 20  # past the engine's h
        starts = [int(st["drawn"][0]) for st, _ in made]
        ends = [upto for _, upto in made]
        assert starts[0] == drawn and ends[-1] == target and starts[1:] == ends[:-1]
        for st, _ in made:  # each piece's counters: the round's plus the draws before it
            assert (st["counters"] - made[0][0]["counters"] == np.uint64(int(st["drawn"][0]) - drawn)).all()
    cuts.clear()
    one = score_profiles(table, **KW, permutations="auto", seed=2, threads=1)
    assert not cuts  # one thread: nothing to share
    assert two.groups["permutations"].max() >= 25_600
    pd.testing.assert_frame_equal(two.groups, one.groups, check_exact=True)
    pd.testing.assert_frame_equal(two.queries, one.queries, check_exact=True)


def test_a_perturbation_without_kept_tables_is_drawn_whole(monkeypatch):
    """Without rooms for the filled counts (``KEPT_MOST`` 0) no round is cut (two pieces would fill and
    keep one pool), and the tables are the same."""
    table = near_line_screen()
    want = score_profiles(table, **KW, permutations="auto", seed=2, threads=2)
    monkeypatch.setattr(pooltables, "KEPT_MOST", 0)
    cuts = _spy_cuts(monkeypatch)
    got = score_profiles(table, **KW, permutations="auto", seed=2, threads=2)
    assert cuts and all(c[4] is None for c in cuts)
    pd.testing.assert_frame_equal(got.groups, want.groups, check_exact=True)
    pd.testing.assert_frame_equal(got.queries, want.queries, check_exact=True)


def test_a_piece_that_stops_early_is_refused():
    """The join refuses pieces one of which stopped: a cut perturbation must be past its h exceedances."""
    st = {"counters": np.zeros(3, dtype=np.uint64), "drawn": np.array([100]), "reached": np.array([25])}
    out = {"counters": np.full(3, 50, dtype=np.uint64), "drawn": np.array([150]), "reached": np.array([30]),
           "stopped": np.array([False]), "ap": np.zeros(3), "pr": np.zeros(3), "map": np.zeros(1)}
    joined = pieces.CrossedPieces().join(st, [out, dict(out, reached=np.array([27]))])
    assert joined["reached"].tolist() == [32] and joined["drawn"].tolist() == [150]
    with pytest.raises(RuntimeError, match="stopped early"):
        pieces.CrossedPieces().join(st, [out, dict(out, stopped=np.array([True]))])
