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
