"""Hostile URLs: every page, every parameter, every bad value, through dashboard.py in AppTest.

The table ``CASES`` lists, for every page and every URL parameter it owns (apnull.ui.state.PAGE_PARAMS),
the values missing, empty, negative, huge (1e308), NaN, non-numeric, an unknown option, a 100 kB string
and a repeated key. Each must give the page's defaults or an ``st.error`` that says what to change:
never an exception, never a hang (every run has a timeout), and no parameter of another page left in
the URL.

Every (page, parameter, value) runs alone (about 2.5 minutes of CPU for the whole table: marked slow,
so it runs with every test but not in the quick ones); then, per page, one run per bad value with
*every* parameter of the page set to it at once (in the quick tests too).
"""

from __future__ import annotations

import time

import pytest

from apnull.ui.state import PAGE_PARAMS, foreign_params
from apptest import errors, exceptions, open_page

BIG = "9" * 100_000  # 100 kB: a number far too long to parse
BIG_TEXT = "x" * 100_000
#: name -> the URL value (a list is a repeated key: ?k=a&k=b)
BAD = {
    "empty": "",
    "negative": "-1",
    "huge": "1e308",
    "nan": "nan",
    "non-numeric": "abc",
    "unknown option": "no such option",
    "100 kB": BIG,
    "100 kB text": BIG_TEXT,
    "repeated": ["2", "3"],
}
PAGES = [p for p in PAGE_PARAMS if p]
CASES = [(page, param, bad) for page in PAGES for param in sorted(PAGE_PARAMS[page]) for bad in BAD]
#: a run that takes longer than this counts as a hang
SLOW = 60.0
#: words an error uses to say what to change
ADVICE = ("must", "at least", "at most", "between", "choose", "use ", "lie in", "larger", "smaller", "fewer",
          "add ", "tick", "could not", "needs", "is more than", "should", "instead", "type", "enter", "pick",
          "start at", "not found", "matches no", "the columns are", "values are")


def _check(page: str, query: dict) -> None:
    started = time.perf_counter()
    at = open_page(page, query, timeout=SLOW)
    took = time.perf_counter() - started
    shown = {k: (v if len(str(v)) < 40 else f"{str(v)[:20]}...({len(str(v))} chars)") for k, v in query.items()}
    assert not at.exception, (page, shown, exceptions(at))
    assert took < SLOW, (page, shown, f"{took:.1f} s")
    for text in errors(at):
        assert text.strip(), (page, shown, "empty st.error")
        assert len(text) < 2_000, (page, shown, "the error echoes the whole value")
        assert any(word in text.lower() for word in ADVICE), (page, shown, text)
    assert len(at.title) >= 1, (page, shown, "the page did not render its title")
    at.run()  # AppTest reports the URL of the run before; one more run shows what the page left there
    assert not foreign_params(page, at.query_params), (page, shown, dict(at.query_params))
    assert not at.exception, (page, shown, exceptions(at))


def _all_at_once_cases():
    """Per page and bad value: every parameter of the page set to that value at once."""
    return [pytest.param(page, {p: BAD[bad] for p in PAGE_PARAMS[page]}, id=f"{page}-all-{bad}")
            for page in PAGES for bad in BAD]


def test_the_table_covers_every_page_parameter_and_value():
    assert {(p, q) for p, q, _ in CASES} == {(p, q) for p in PAGES for q in PAGE_PARAMS[p]}
    assert len(CASES) == sum(len(PAGE_PARAMS[p]) for p in PAGES) * len(BAD)


@pytest.mark.slow
@pytest.mark.parametrize("page, param, bad", CASES)
def test_hostile_url(page, param, bad):
    _check(page, {param: BAD[bad]})


@pytest.mark.parametrize("page, query", _all_at_once_cases())
def test_hostile_url_every_parameter_at_once(page, query):
    _check(page, query)


@pytest.mark.parametrize("page", PAGES)
def test_missing_parameters_give_the_defaults(page):
    at = open_page(page, {}, timeout=SLOW)
    assert not at.exception, exceptions(at)
    assert not at.error, errors(at)
