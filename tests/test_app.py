"""The navigation entry point: every page registered, each runs without an exception."""

from pathlib import Path

import pytest
from streamlit.testing.v1 import AppTest

ROOT = Path(__file__).resolve().parents[1]
APP = str(ROOT / "dashboard.py")
PAGES = ["densities", "quantiles", "lookup", "binning", "hypergeometric", "ranking", "sampled", "score", "compare"]


def test_app_runs_default_page():
    at = AppTest.from_file(APP, default_timeout=180)
    at.run()
    assert not at.exception
    assert at.title[0].value == "AP Null Explorer"
    assert len(at.get("page_link")) == len(PAGES)


@pytest.mark.parametrize("page", PAGES)
def test_every_page_runs_from_the_app(page):
    at = AppTest.from_file(APP, default_timeout=180)
    at.run()
    at.switch_page(f"app_pages/{page}.py").run()
    assert not at.exception, [e.value for e in at.exception]
    assert not at.error, [e.value for e in at.error]
    assert len(at.title) == 1


#: st.columns blocks a page's default run draws at most (each column is one more element a run sends, one
#: more wake-up of the server's event loop: a row of number inputs or metric cards is one horizontal
#: container instead; docs/serving.md). The lookup page keeps its first input row (a radio and its number
#: stacked in one column) and its two metric panels side by side, each two cards wide.
COLUMN_BUDGET = {"densities": 0, "lookup": 10, "binning": 6}


@pytest.mark.parametrize("page", sorted(COLUMN_BUDGET))
def test_rows_of_inputs_and_cards_are_one_element(page):
    at = AppTest.from_file(APP, default_timeout=180)
    at.run()
    at.switch_page(f"app_pages/{page}.py").run()
    assert not at.exception and not at.error
    assert len(at.columns) <= COLUMN_BUDGET[page], len(at.columns)
    assert len(at.metric) == {"densities": 0, "lookup": 7, "binning": 4}[page]  # the cards are all still there


def test_pages_are_resolved_once_per_process(monkeypatch):
    """dashboard.py names every page on every run; st.Page resolves its file each time (a system call
    per folder, each one giving up the GIL to the server's other sessions), so each page is built once
    per process and copied (apnull.ui.state.page): two runs of two sessions build each page once."""
    import streamlit as st

    from apnull.ui import state

    built = []
    real = st.Page

    def counting(*args, **kwargs):
        built.append(str(args[0]))
        return real(*args, **kwargs)

    monkeypatch.setattr(st, "Page", counting)
    state.PAGES.clear()
    for _ in range(2):
        at = AppTest.from_file(APP, default_timeout=180)
        at.run()
        at.switch_page("app_pages/densities.py").run()
        assert not at.exception, [e.value for e in at.exception]
        assert len(at.title) == 1
    assert len(built) == len(set(built)) == len(PAGES) + 1  # every page and home, once each
