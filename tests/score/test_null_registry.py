"""The mAP nulls' registry: one table of nulls, read by the option check, the command's choices, the
tables' labels and the run; a null added there is scored without another edit."""

import numpy as np
import pytest

from apnull.score import NULLS, digits_screen, score_profiles
from apnull.score.nulls import registry
from apnull.score.nulls.copairs import COPAIRS_AUTO, copairs_pvalues
from apnull.score.nulls.independent import independent_pvalues
from apnull.score.nulls.laws import LawCache

KW = dict(perturbation="Metadata_perturbation", stratum="Metadata_plate")


def test_the_public_choices_are_the_registry():
    assert NULLS == tuple(registry.MAP_NULLS) == ("permutation", "independent", "copairs")
    assert registry.MAP_NULLS["permutation"].engine and not registry.MAP_NULLS["copairs"].engine
    assert registry.null_label("permutation", "all") == "permutation (all assignments, exact)"
    assert registry.null_label("copairs", "all") == "copairs (approximate)"
    import argparse

    from apnull.cli import score_cmd  # the command's --null choices come from it too

    sub = argparse.ArgumentParser().add_subparsers()
    score_cmd.add_parser(sub)
    assert "--null {" + ",".join(NULLS) + "}" in sub.choices["score"].format_help()


def test_a_null_registered_in_one_place_is_scored(monkeypatch):
    seen = {}

    def halves(laws, queries, maps, permutations):
        seen["queries"], seen["maps"] = queries, np.asarray(maps)
        P = len(queries)
        return np.full(P, 0.5), np.full(P, 7, dtype=np.int64), np.zeros(P, dtype=bool)

    monkeypatch.setitem(registry.MAP_NULLS, "halves",
                        registry.MapNull("halves", "halves (test)", halves, draws=False))
    monkeypatch.setitem(registry.NULL_LABELS, "halves", "halves (test)")
    res = score_profiles(digits_screen(), null="halves", permutations="auto", **KW)
    g = res.groups
    assert (g["p_value"] == 0.5).all() and (g["permutations"] == 7).all() and (g["null"] == "halves (test)").all()
    # the calculator got each perturbation's queries (k of them, m = k - 1) and its observed mAP
    assert [len(ms) for ms, _, _ in seen["queries"]] == [4] * len(g)
    assert sorted(seen["maps"].round(12)) == sorted(g["mAP"].round(12))


def test_the_calculators_keep_the_tables_values():
    # the values the tables held when these nulls were branches of the p-value stage
    laws = LawCache(0)
    queries = [(np.array([3, 3, 3, 3]), np.array([20, 21, 19, 22]), np.array([0.9, 0.2, 0.5, 0.6])),
               (np.array([2, 2, 2]), np.array([18, 19, 20]), np.array([0.1, 0.15, 0.3]))]
    p, draws, bound = independent_pvalues(laws, queries, [0.55, 0.18], 99)
    assert draws.dtype == np.int64 and (draws == 0).all() and bound.dtype == bool and not bound.any()
    assert 0 < p[0] < 0.5 < p[1] <= 1
    p, draws, bound = copairs_pvalues(laws, queries, [0.2, 1.0], "auto")
    assert (draws == COPAIRS_AUTO).all()
    assert p[1] == pytest.approx(1 / (1 + COPAIRS_AUTO)) and bound.tolist() == [False, True]
