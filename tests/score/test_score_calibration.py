"""Calibration on real data (scikit-learn's digits): true-null screens and power on a real signal."""

import numpy as np
import pytest
from scipy.stats import binom

from apnull.score import score_profiles
from apnull.score.example import digits_mixed_screen, digits_null_screen

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
            g = score_profiles(table, null=null, permutations=999, **KW).groups
            p += list(g.loc[g["Metadata_perturbation"].str.startswith("s"), "p_value"])
        power[null] = np.mean(np.array(p) <= 0.05)
    assert power["permutation"] > power["copairs"] + 0.15, power


@pytest.mark.slow
def test_bh_on_mixed_screens_controls_fdr_with_more_power_than_copairs_style():
    """Mixed screens (benchmarks/calibration.py's): BH at 0.05 on permutation p-values (B = 999, as in the
    calibration table) keeps the FDR (mean false share of the discoveries over screens) at the nominal
    level and finds more of the real signals than the copairs-style null."""
    from apnull.score import benjamini_hochberg

    fdp = {"permutation": [], "copairs": []}
    power = {"permutation": [], "copairs": []}
    for digit in range(10):
        for seed in range(2):
            table = digits_mixed_screen(digit, seed=seed)
            for null in fdp:
                g = score_profiles(table, null=null, seed=seed, permutations=999, **KW).groups
                hit = benjamini_hochberg(g["p_value"].to_numpy()) <= 0.05
                real = g["Metadata_perturbation"].str.startswith("s").to_numpy()
                fdp[null].append((hit & ~real).sum() / max(hit.sum(), 1))
                power[null].append((hit & real).sum() / real.sum())
    f = np.array(fdp["permutation"])
    assert f.mean() <= 0.05 + 2 * f.std(ddof=1) / np.sqrt(f.size), f.mean()
    assert np.mean(power["permutation"]) > np.mean(power["copairs"]) + 0.1, power
