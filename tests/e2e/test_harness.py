"""Self-test of the browser harness against a throwaway app (not the dashboard).

If these fail, the e2e tests of the dashboard cannot be trusted either way.
"""

from __future__ import annotations

import inspect
import textwrap

import pytest
import streamlit as st

from harness import (
    assert_charts_rendered,
    assert_no_exception,
    chart_data,
    goto,
    navigate,
    number_input,
    plotly_charts,
    query_params,
    rerun,
    run_mark,
    screenshot,
    set_number_input,
    start_streamlit,
)

BIND = "bind" in inspect.signature(st.number_input).parameters
BIND_ARG = ', bind="query-params"' if BIND else ""

APP = textwrap.dedent(
    f"""
    import numpy as np
    import plotly.graph_objects as go
    import streamlit as st


    def chart_page():
        if st.query_params.get("boom"):
            raise ValueError("boom from the harness self-test")
        slope = st.number_input("Slope", min_value=0, max_value=10, value=2, step=1,
                                key="slope"{BIND_ARG})
        x = list(range(50))
        # y as numpy: plotly sends it in binary form, chart_data must give a plain list back
        st.plotly_chart(go.Figure(go.Scatter(x=x, y=slope * np.arange(50.0), mode="lines")))
        st.write(f"slope is {{slope}}")
        alpha = st.number_input('α "rate"', min_value=0.0, max_value=1.0, value=0.05, key="alpha")
        st.write(f"alpha is {{alpha}}")


    def other_page():
        st.write("this is the other page")


    st.navigation([
        st.Page(chart_page, title="Chart", url_path="chart", default=True),
        st.Page(other_page, title="Other", url_path="other"),
    ]).run()
    """
)


@pytest.fixture(scope="module")
def tiny_url(tmp_path_factory):
    app = tmp_path_factory.mktemp("tiny_app") / "tiny_app.py"
    app.write_text(APP)
    with start_streamlit(app) as url:
        yield url


def slope_of_chart(page) -> float:
    y = chart_data(page)[0]["y"]
    return y[1] - y[0]


def test_loads_without_exception_and_renders_chart(page, tiny_url):
    goto(page, tiny_url)
    assert_no_exception(page)
    assert_charts_rendered(page, 1)
    assert plotly_charts(page).count() == 1
    assert slope_of_chart(page) == 2
    assert chart_data(page)[0]["y"][:3] == [0.0, 2.0, 4.0]
    assert number_input(page, "Slope").input_value() == "2"
    assert not page.page_errors
    path = screenshot(page, "harness-tiny-app")
    assert path.exists() and path.stat().st_size > 1000


def test_changing_the_number_changes_the_chart(page, tiny_url):
    goto(page, tiny_url)
    set_number_input(page, "Slope", 5)
    assert_no_exception(page)
    assert_charts_rendered(page, 1)
    assert slope_of_chart(page) == 5
    assert page.get_by_text("slope is 5").is_visible()
    set_number_input(page, "Slope", 3)
    assert slope_of_chart(page) == 3
    set_number_input(page, 'α "rate"', 0.25)  # non-ASCII and quotes in a label
    assert page.get_by_text("alpha is 0.25").is_visible()
    mark = run_mark(page)
    rerun(page)  # the "R" key: one more run, same view
    assert run_mark(page).finished > mark.finished
    assert slope_of_chart(page) == 3


def test_out_of_range_typing_is_not_applied(page, tiny_url):
    goto(page, tiny_url)
    set_number_input(page, "Slope", 99)  # above max_value: the frontend refuses, no rerun
    assert number_input(page, "Slope").get_attribute("aria-invalid") == "true"
    assert slope_of_chart(page) == 2
    assert page.get_by_text("slope is 2").is_visible()


@pytest.mark.skipif(not BIND, reason='this streamlit has no bind="query-params" on widgets')
def test_query_param_round_trip(page, tiny_url):
    goto(page, tiny_url)
    assert query_params(page) == {}
    set_number_input(page, "Slope", 6)
    assert query_params(page) == {"slope": "6"}
    # a shared link reproduces the view
    goto(page, tiny_url, slope=7)
    assert number_input(page, "Slope").input_value() == "7"
    assert slope_of_chart(page) == 7
    assert query_params(page) == {"slope": "7"}
    # back to the default value: the parameter leaves the URL
    set_number_input(page, "Slope", 2)
    assert query_params(page) == {}
    # an out-of-range value in the URL is ignored and removed
    goto(page, tiny_url, slope=42)
    assert slope_of_chart(page) == 2
    assert query_params(page) == {}
    assert_no_exception(page)


def test_assert_no_exception_catches_a_raising_app(page, tiny_url):
    goto(page, tiny_url, boom=1)
    with pytest.raises(AssertionError, match="boom from the harness self-test"):
        assert_no_exception(page)
    with pytest.raises(AssertionError, match="rendered plotly chart"):
        assert_charts_rendered(page, 1, timeout=1000)


def test_navigation_and_page_not_found(page, tiny_url):
    goto(page, tiny_url)
    navigate(page, "Other")
    assert page.get_by_text("this is the other page").is_visible()
    assert page.url.rstrip("/").endswith("/other")
    assert plotly_charts(page).count() == 0
    goto(page, tiny_url, "other")
    assert page.get_by_text("this is the other page").is_visible()
    # an unknown path falls back to the main page behind a "Page not found" dialog
    goto(page, tiny_url, "no-such-page")
    with pytest.raises(AssertionError, match="Page not found"):
        assert_no_exception(page)
