"""The comparison on crossed screens (every compound on several plates): the plate-clustered t test."""

import itertools
import math

import numpy as np
import pytest
from scipy.stats import t as student_t

from apnull.score import score_compare
from apnull.score.compare import MIN_UNITS, TESTS, summary_line, which_test, which_test_of
from apnull.score.example import digits_crossed_screen, digits_plate_screen
from apnull.score.nulls.crossed import MIN_PLATES, crossed_test, shared_plate_sum

KW = dict(key=["Metadata_plate", "Metadata_well"], perturbation="Metadata_perturbation", control="DMSO",
          stratum="Metadata_plate", permutations=99, seed=2)


def _brute(r, plates_of):
    """sum over every ordered pair (t, t') whose plate sets meet (itertools, sets)."""
    return sum(r[i] * r[j] for i, j in itertools.product(range(len(r)), repeat=2)
               if set(plates_of[i]) & set(plates_of[j]))


@pytest.mark.parametrize("seed", range(5))
def test_the_shared_plate_sum_counts_each_meeting_pair_once(seed, monkeypatch):
    rng = np.random.default_rng(seed)
    plates_of = [list(rng.choice(8, size=rng.integers(1, 5), replace=False)) for _ in range(25)]
    r = rng.normal(size=25)
    assert shared_plate_sum(r, plates_of) == pytest.approx(_brute(r, plates_of), rel=1e-12)
    monkeypatch.setattr("apnull.score.nulls.crossed._BLOCK_NONZEROS", 7)  # many small blocks: the same sum
    assert shared_plate_sum(r, plates_of) == pytest.approx(_brute(r, plates_of), rel=1e-12)


def test_the_crossed_test_is_a_t_test_with_the_clustered_variance():
    rng = np.random.default_rng(1)
    plates_of = [list(rng.choice(12, size=3, replace=False)) for _ in range(30)]
    d = rng.normal(0.02, 0.05, size=30)
    got = crossed_test(d, plates_of)
    se = math.sqrt(_dense_variance(d - d.mean(), plates_of)) / 30
    assert got["se"] == pytest.approx(se, rel=1e-12) and got["df"] == 11 and got["plates"] == 12
    assert got["p_value"] == pytest.approx(2 * student_t.sf(abs(d.mean()) / se, 11), rel=1e-10)
    half = student_t.ppf(0.975, 11) * se
    assert (got["ci_low"], got["ci_high"]) == pytest.approx((d.mean() - half, d.mean() + half), rel=1e-12)
    assert (got["p_value"] < 0.05) == (not got["ci_low"] <= 0 <= got["ci_high"])


def test_the_crossed_test_edges():
    plates_of = [[i % 12, (i + 1) % 12] for i in range(24)]
    same = crossed_test(np.zeros(24), plates_of)
    assert same["p_value"] == 1.0 and same["ci_low"] == same["ci_high"] == 0.0
    shifted = crossed_test(np.full(24, 0.125), plates_of)  # every delta the same: no spread, p above 0
    assert shifted["p_value"] == np.nextafter(0.0, 1.0) and shifted["ci_low"] == shifted["ci_high"] == 0.125
    few = crossed_test(np.ones(5), [[i] for i in range(5)])
    assert math.isnan(few["p_value"]) and few["plates"] == 5 < MIN_PLATES


def test_the_plan_says_which_test_and_why():
    assert which_test(20, [["p1"]] * 3)[0] == TESTS[0]
    test, why, plates = which_test(1, [[f"p{i}", f"p{i + 1}"] for i in range(12)])
    assert test == TESTS[1] and plates == 13 and "12 degrees of freedom" in why
    test, why, _ = which_test(3, [["p1"], ["p2"], ["p3"]])
    assert test == TESTS[0] and "cannot reach 0.05" in why
    assert which_test(1, [[""]] * 4)[0] == TESTS[2] and "no stratum" in which_test(1, [[""]] * 4)[1]
    assert which_test(1, [["a", "b"]] * 4)[0] == TESTS[2]


def test_the_plan_of_a_table_before_scoring():
    crossed = digits_crossed_screen(0, compounds=30, replicates=3, plates=12, controls=4)
    assert which_test_of(crossed, "Metadata_perturbation", "DMSO", "Metadata_plate")[0] == TESTS[1]
    block = digits_plate_screen(0, plates=8)
    test, why, plates = which_test_of(block, "Metadata_perturbation", "DMSO", "Metadata_plate")
    assert test == TESTS[0] and plates == 8 and MIN_UNITS <= 8
    assert which_test_of(block, "Metadata_perturbation", "DMSO", None)[0] == TESTS[2]


@pytest.fixture(scope="module")
def crossed_pair():
    w = digits_crossed_screen(3, compounds=40, replicates=3, plates=12, controls=4)
    rng = np.random.default_rng(3)
    cols = [c for c in w.columns if c.startswith("px_")]
    a, b = w.copy(), w.copy()
    a[cols] = a[cols].to_numpy() + rng.normal(scale=2.0, size=(len(w), len(cols)))
    b[cols] = b[cols].to_numpy() + rng.normal(scale=6.0, size=(len(w), len(cols)))
    return a, b


def test_a_crossed_screen_gets_a_p_value_and_an_interval(crossed_pair):
    """Every plate is linked to every other (one unit): the old comparison gave no test at all."""
    res = score_compare(*crossed_pair, **KW)
    s = res.summary
    assert s["units"] == 1 and s["plates"] == 12 and s["test"] == TESTS[1]
    assert 0 < s["p_value"] <= 1 and s["ci_low"] <= s["mean_delta"] <= s["ci_high"]
    plates_of = [sorted(set(crossed_pair[0].loc[crossed_pair[0]["Metadata_perturbation"] == n, "Metadata_plate"]))
                 for n in sorted(res.groups["Metadata_perturbation"])]
    by_name = res.groups.set_index("Metadata_perturbation").sort_index()
    assert s["p_value"] == crossed_test(by_name["delta"].to_numpy(), plates_of)["p_value"]
    assert math.isnan(s["retrieved_p_value"]) and "crossed" in s["retrieved_note"]
    assert "plate-clustered t test, 12 plates, 11 degrees of freedom" in summary_line(s)
    assert s["mean_delta"] < 0 and s["p_value"] < 0.2  # B is A with more noise (12 plates: little power)


def _dense_variance(r, plates_of):
    """The corrected clustered variance with dense matrices (numpy): W fitted by moments, c = 1'W1 / tr(AMWM)."""
    names = sorted({p for s in plates_of for p in s})
    Z = np.array([[p in s for p in names] for s in plates_of], dtype=float)
    P = len(r)
    K = Z @ Z.T
    A = (K > 0).astype(float)
    M = np.eye(P) - 1.0 / P
    lhs = np.array([[np.trace(M @ K @ M), P - 1], [np.trace(K @ M @ K @ M), np.trace(K @ M)]])
    s_a, s_e = np.linalg.solve(lhs, [r @ r, r @ K @ r])
    if s_a < 0 or s_e < 0:
        s_a, s_e = (0.0, r @ r / (P - 1)) if s_a < 0 else (r @ r / np.trace(M @ K @ M), 0.0)
    W = s_a * K + s_e * np.eye(P)
    return W.sum() / np.trace(A @ M @ W @ M) * max(r @ A @ r, r @ r)


@pytest.mark.parametrize("seed", range(6))
def test_the_corrected_variance_is_the_dense_formula(seed):
    from apnull.score.nulls.crossed import clustered_variance

    rng = np.random.default_rng(seed)
    plates_of = [list(rng.choice(12, size=rng.integers(1, 5), replace=False)) for _ in range(40)]
    effect = rng.normal(scale=rng.choice([0.0, 0.5, 2.0]), size=12)
    d = np.array([effect[s].sum() for s in plates_of]) + rng.normal(size=40)
    r = d - d.mean()
    assert clustered_variance(r, plates_of)[0] == pytest.approx(_dense_variance(r, plates_of), rel=1e-9)
