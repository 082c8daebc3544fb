"""The ``>>>`` examples of the functions a user calls first run as written (numbers included)."""

from __future__ import annotations

import doctest

import pytest

from apnull import metrics, significance
from apnull.score import profiles

MODULES = [metrics, significance, profiles]


@pytest.mark.parametrize("module", MODULES, ids=lambda m: m.__name__)
def test_examples_run_as_written(module):
    result = doctest.testmod(module, optionflags=doctest.NORMALIZE_WHITESPACE, verbose=False)
    assert result.attempted > 0 and result.failed == 0, f"{result.failed} of {result.attempted} examples of {module.__name__} failed"


def test_the_first_functions_have_examples():
    import apnull
    from apnull.score import score_profiles

    for func in (apnull.average_precision, apnull.null_distribution, apnull.threshold, apnull.p_value,
                 score_profiles):
        assert ">>>" in func.__doc__, func.__name__
