"""Calibration on real data (scikit-learn's digits): true-null screens and power on a real signal."""

import numpy as np
import pytest
from scipy.stats import binom

from apnull.score import score_profiles
from apnull.score.example import digits_null_screen

KW = dict(perturbation="Metadata_perturbation", stratum="Metadata_plate")


@pytest.mark.slow
@pytest.mark.parametrize("layout", [(20, 20, 20, 20), (18, 19, 21, 22)], ids=["equal", "unequal"])
def test_permutation_false_positive_rate_within_binomial_band(layout):
    groups, queries = [], []
    for digit in range(10):
        for seed in range(2):
            res = score_profiles(digits_null_screen(digit, seed=seed, controls_per_plate=layout), seed=seed, **KW)
            groups += list(res.groups["p_value"])
            queries += list(res.queries["p_value"])
    for p in (np.array(groups), np.array(queries)):
        lo, hi = binom.interval(0.999, p.size, 0.05)
        assert lo <= np.sum(p <= 0.05) <= hi, (p.size, np.sum(p <= 0.05), lo, hi)


@pytest.mark.slow
def test_power_above_copairs_style_null():
    power = {}
    for null in ("permutation", "copairs"):
        p = []
        for seed in range(3):
            table = digits_null_screen(0, seed=seed, signal_digit=6, mix=0.2, n_signal=10)
            g = score_profiles(table, null=null, **KW).groups
            p += list(g.loc[g["Metadata_perturbation"].str.startswith("s"), "p_value"])
        power[null] = np.mean(np.array(p) <= 0.05)
    assert power["permutation"] > power["copairs"] + 0.15, power
