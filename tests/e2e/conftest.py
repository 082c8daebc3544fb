"""Fixtures for the browser tests: a Streamlit server, the system Chromium, a page.

Every test in tests/e2e is marked ``e2e`` (and gets a 300 s pytest-timeout of its own body, fixtures not
counted, unless it sets one).
Without Chromium or the playwright package the tests are skipped with a loud message (skip
reason, a PytestWarning and a terminal-summary banner), except under CI (CI=true), where each
test FAILS with that message instead.

Fixtures:  app_url (session: base URL of app.py), browser (session), page (function,
1400x1000, screenshot saved as artifacts/screenshots/FAILED-<test>.png when the test fails).
Helpers are in harness.py (import them from there: ``from harness import goto, ...``; this
directory is on sys.path):  goto, wait_idle, expect_rerun, assert_no_exception, page_problems,
navigate, plotly_charts, wait_charts, assert_charts_rendered, chart_data, screenshot,
set_number_input, number_input, choose_radio, query_params, start_streamlit, warm_compiled.
"""

from __future__ import annotations

import os
import sys
import warnings
from pathlib import Path

import pytest

sys.path.insert(0, str(Path(__file__).resolve().parent))

import harness  # noqa: E402
from harness import (  # noqa: E402,F401  (re-exported for tests)
    APP_PATH,
    REPO_ROOT,
    assert_charts_rendered,
    assert_no_exception,
    chart_data,
    expect_rerun,
    goto,
    navigate,
    number_input,
    page_problems,
    plotly_charts,
    query_params,
    screenshot,
    set_number_input,
    start_streamlit,
    wait_charts,
    wait_idle,
)

E2E_DIR = Path(__file__).resolve().parent
IN_CI = os.environ.get("CI", "").strip().lower() == "true"


def _missing() -> str | None:
    """What prevents the browser tests from running here, or None."""
    if not harness.playwright_available():
        return "the playwright Python package is not installed (pip install playwright)"
    if harness.find_chromium() is None:
        env = os.environ.get("APNULL_CHROMIUM")
        return f"APNULL_CHROMIUM={env} does not exist" if env else "no chromium executable found"
    return None


MISSING = _missing()
if MISSING:
    SKIP_TEXT = f"{harness.SKIP_MESSAGE} [{MISSING}]"
    FAIL_TEXT = (
        f"browser tests FAILED because CI=true and {MISSING}: install Debian's chromium "
        "(apt-get install -y chromium) or set APNULL_CHROMIUM=/path/to/chromium"
    )
    MESSAGE = FAIL_TEXT if IN_CI else SKIP_TEXT
else:
    MESSAGE = ""
_e2e_collected = {"n": 0}


def _is_e2e(item: pytest.Item) -> bool:
    try:
        return Path(str(item.path)).resolve().is_relative_to(E2E_DIR)
    except (AttributeError, ValueError):
        return False


def pytest_collection_modifyitems(config, items):
    has_timeout = config.pluginmanager.hasplugin("timeout")
    for item in items:
        if not _is_e2e(item):
            continue
        _e2e_collected["n"] += 1
        item.add_marker(pytest.mark.e2e)
        if has_timeout and item.get_closest_marker("timeout") is None:
            # func_only: the session's server and its one-time numba warm-up (bounded by their own
            # limits) are not charged to whichever test happens to start first
            item.add_marker(pytest.mark.timeout(300, func_only=True))
        if MISSING and not IN_CI:
            item.add_marker(pytest.mark.skip(reason=MESSAGE))
    if MISSING and _e2e_collected["n"]:
        warnings.warn(pytest.PytestWarning(MESSAGE), stacklevel=1)


def pytest_terminal_summary(terminalreporter, exitstatus, config):
    if MISSING and _e2e_collected["n"]:
        verb = "FAILED (CI=true)" if IN_CI else "SKIPPED"
        terminalreporter.write_sep("!", f"{_e2e_collected['n']} browser tests {verb}", red=True, bold=True)
        terminalreporter.write_line(MESSAGE, red=True, bold=True)


@pytest.hookimpl(tryfirst=True)
def pytest_runtest_call(item):
    """Under CI a missing browser is a test failure (reported FAILED, not skipped)."""
    if MISSING and IN_CI and _is_e2e(item):
        pytest.fail(MESSAGE, pytrace=False)


@pytest.hookimpl(wrapper=True, tryfirst=True)
def pytest_runtest_makereport(item, call):
    report = yield
    setattr(item, f"_rep_{report.when}", report)
    return report


@pytest.fixture(scope="session")
def app_url():
    """Base URL of the dashboard (app.py at the repo root) on a fresh server for the session, started
    once numba's cache holds the scoring pages' kernels (:func:`harness.warm_compiled`)."""
    if MISSING:  # only reached under CI: pytest_runtest_call fails the test
        yield None
        return
    if not APP_PATH.exists():
        pytest.fail(f"{APP_PATH} does not exist", pytrace=False)
    harness.warm_compiled(APP_PATH)  # numba's cache filled once, before any page waits for the compiler
    with start_streamlit(APP_PATH) as url:
        yield url


@pytest.fixture(scope="session")
def playwright_instance():
    if MISSING:  # only reached under CI: pytest_runtest_call fails the test
        yield None
        return
    from playwright.sync_api import sync_playwright

    with sync_playwright() as pw:
        yield pw


@pytest.fixture(scope="session")
def browser(playwright_instance):
    if MISSING:
        yield None
        return
    b = harness.launch_browser(playwright_instance)
    yield b
    b.close()


@pytest.fixture
def page(browser, request):
    """A fresh context (viewport 1400x1000) and page; failing tests leave a screenshot."""
    if MISSING:
        yield None
        return
    context = browser.new_context(viewport=harness.VIEWPORT)
    pg = context.new_page()
    harness.track_runs(pg)
    pg.page_errors = []
    pg.on("pageerror", lambda exc: pg.page_errors.append(str(exc)))
    yield pg
    rep = getattr(request.node, "_rep_call", None)
    name = "FAILED-" + request.node.nodeid.split("::", 1)[-1]
    if rep is not None and rep.failed:
        try:
            screenshot(pg, name)
        except Exception:  # noqa: BLE001 - best effort
            pass
    elif rep is not None and rep.passed:  # drop the shot of an earlier failure of this test
        safe = "".join(c if c.isalnum() or c in "-_." else "_" for c in name)
        (harness.SCREENSHOT_DIR / f"{safe}.png").unlink(missing_ok=True)
    context.close()
