"""views/compare.py: shared columns, the guessed well key, settings checks, the summary cards."""

import math
import re

import numpy as np
import pandas as pd
import pytest

from apnull.score import digits_pipeline_pair, p_text, score_compare
from apnull.views import compare as view


@pytest.fixture(scope="module")
def pair():
    return digits_pipeline_pair()


def test_the_example_s_guesses(pair):
    a, b = pair
    assert view.shared_labels(a, b) == ["Metadata_perturbation", "Metadata_plate", "Metadata_well", "Metadata_kind",
                                        "Metadata_digit"]
    d = view.pair_defaults(a, b)
    assert (d["cp_key"], d["cp_key2"]) == ("Metadata_plate", "Metadata_well")  # the well repeats across plates
    assert (d["cp_pert"], d["cp_control"], d["cp_stratum"]) == ("Metadata_perturbation", "DMSO", "Metadata_plate")


def test_a_unique_well_column_is_key_alone():
    t = pd.DataFrame({"Metadata_well_id": ["w1", "w2", "w3"], "Metadata_pert": ["DMSO", "x", "x"], "f": [1.0, 2, 3]})
    assert view.guess_key(t, t.iloc[::-1], view.shared_labels(t, t)) == ["Metadata_well_id"]
    clash = pd.DataFrame({"Metadata_a": ["1", "1"], "Metadata_b": ["2", "2"]})
    assert view.guess_key(clash, clash, ["Metadata_a", "Metadata_b"]) == ["Metadata_a"]  # nothing identifies a row


def test_settings_are_checked(pair):
    a, b = pair
    args = dict(key="Metadata_plate", key2="Metadata_well", perturbation="Metadata_perturbation", control_text="DMSO",
                stratum="Metadata_plate", features_a="", features_b="^half_", similarity="cosine", permutations=999,
                seed=0, alpha=0.05)
    s = view.make_compare_settings(a, b, **args)
    assert s.kwargs()["key"] == ["Metadata_plate", "Metadata_well"] and s.features_a is None
    assert s.kwargs()["features_b"] == "^half_" and view.make_compare_settings(a, b, **dict(args, stratum="(none)")).stratum is None
    bad = {"key2": "Metadata_plate", "key": "Metadata_x" * 10_000, "control_text": "water", "features_a": "(",
           "permutations": 10**9, "alpha": 1.5, "stratum": "nope"}
    words = {"key2": "the two key columns are the same", "key": "choose the key column(s)",
             "control_text": "not found", "features_a": "not a valid regular expression", "permutations": "between 1 and",
             "alpha": "alpha", "stratum": "is not a label column of both tables"}
    for name, value in bad.items():
        with pytest.raises(ValueError, match=re.escape(words[name])) as err:
            view.make_compare_settings(a, b, **dict(args, **{name: value}))
        assert len(str(err.value)) < 1000


def test_cards_and_verdict(pair):
    res = score_compare(*pair, key=["Metadata_plate", "Metadata_well"], perturbation="Metadata_perturbation",
                        stratum="Metadata_plate", permutations=199)
    head, numbers = view.verdict(res.summary)
    assert head == "A retrieves better than B" and numbers.startswith("mean delta (B - A) = -0.0935")
    cards = {label: value for label, value, _ in view.cards(res.summary)}
    assert cards["Mean delta (B − A)"] == "-0.0935" and cards["Units swapped"] == "8"
    one = dict(res.summary, p_value=math.nan, ci_low=math.nan, ci_high=math.nan, retrieved_p_value=math.nan,
               units=1, smallest_p=1.0, note="one unit")
    assert {label: value for label, value, _ in view.cards(one)}["p-value (A = B)"] == "n/a"
    assert view.verdict(one)[0] == "No test possible"
    data = view.scatter_data(res.groups, "Metadata_perturbation")
    assert list(data.columns) == ["name", "mAP_a", "mAP_b", "delta", "retrieved", "unit", "q_value_a", "q_value_b"]
    assert np.array_equal(data["delta"].to_numpy(), res.groups["delta"].to_numpy())
    zero = view.shown_groups(res.groups.assign(p_value_a=0.0))
    assert zero["p_value_a"].iloc[0] == p_text(0.0) and zero["p_value_b"].dtype == float
    assert view.shown_groups(res.groups) is res.groups
