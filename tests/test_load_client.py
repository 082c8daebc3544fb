"""The class benchmark's websocket client (benchmarks/load.py) clicks the chart on the page now.

A plotly chart's element id follows its figure (another FDR level draws the volcano as a new element) and an
``st.fragment``'s id follows its position on the page (an element shown above it, e.g. a notice, moves it).
The client used to click the first volcano it had ever seen, naming a fragment the server no longer held: the
server ignores such a rerun, so the click waited for a run that never came and the session was lost.
The messages here are built as the server sends them; no server runs.
"""

from __future__ import annotations

import importlib.util
import json
import random
import sys
from pathlib import Path

import pytest
from streamlit.proto.BackMsg_pb2 import BackMsg
from streamlit.proto.ForwardMsg_pb2 import ForwardMsg

LOAD = Path(__file__).resolve().parents[1] / "benchmarks" / "load.py"


@pytest.fixture(scope="module")
def load():
    spec = importlib.util.spec_from_file_location("load_benchmark", LOAD)
    module = importlib.util.module_from_spec(spec)
    sys.modules[spec.name] = module  # its dataclasses look their module up
    spec.loader.exec_module(module)
    return module


def _start(session) -> None:
    msg = ForwardMsg()
    msg.new_session.page_script_hash = "score"
    session._handle(msg)


def _chart(session, path, name: str, fragment: str, customdata: str) -> None:
    msg = ForwardMsg()
    msg.metadata.delta_path[:] = path
    msg.delta.fragment_id = fragment
    chart = msg.delta.new_element.plotly_chart
    chart.id = f"$$ID-{name}-volcano"
    # x and y in plotly's binary form, as the dashboard sends them (float64 1.0, 2.0 and 3.0, 4.0)
    chart.spec = json.dumps({"data": [{"x": {"dtype": "f8", "bdata": "AAAAAAAA8D8AAAAAAAAAQA=="},
                                       "y": {"dtype": "f8", "bdata": "AAAAAAAACEAAAAAAAAAQQA=="},
                                       "customdata": [[customdata, 1], [customdata, 2]]}]})
    session._handle(msg)


def _text(session, path) -> None:
    msg = ForwardMsg()
    msg.metadata.delta_path[:] = path
    msg.delta.new_element.markdown.body = "text"
    session._handle(msg)


def _finish(session, status: str) -> None:
    msg = ForwardMsg()
    msg.script_finished = ForwardMsg.ScriptFinishedStatus.Value(status)
    session._handle(msg)


def _click(load, session) -> BackMsg:
    async def sent(payload, expect_charts):
        return payload

    session._run = sent
    # run the coroutine by hand, not in an event loop: a browser test's playwright may hold this process's
    # loop (the request is built without waiting for anything)
    click = session.click_point("volcano", random.Random(0))
    try:
        click.send(None)
    except StopIteration as done:
        msg = BackMsg()
        msg.ParseFromString(done.value)
        return msg
    click.close()
    raise AssertionError("the click waited for something")


def _opened(load, fragment):
    """A session whose first run drew a text and, in ``fragment``, the volcano "first"."""
    session = load.WsSession("http://127.0.0.1:1", timeout=1)
    _start(session)
    _text(session, [0, 5])
    _chart(session, [0, 16, 0, 0, 0], "first", fragment, "digit_1")
    _finish(session, "FINISHED_SUCCESSFULLY")
    return session


def test_the_click_names_the_volcano_and_fragment_on_the_page_now(load):
    session = _opened(load, "fragment-at-16")
    # another FDR level, and a notice above the fragment: a new volcano in a fragment one place down
    _start(session)
    _text(session, [0, 5])
    _text(session, [0, 7])
    _chart(session, [0, 17, 0, 0, 0], "second", "fragment-at-17", "digit_2")
    _finish(session, "FINISHED_SUCCESSFULLY")
    msg = _click(load, session)
    assert msg.rerun_script.fragment_id == "fragment-at-17"
    clicked = [w for w in msg.rerun_script.widget_states.widgets if w.id.endswith("-volcano")]
    assert [w.id for w in clicked] == ["$$ID-second-volcano"]
    point = json.loads(clicked[0].string_value)["selection"]["points"][0]
    assert point["customdata"][0] == "digit_2" and (point["x"], point["y"]) in ((1.0, 3.0), (2.0, 4.0)), point


def test_a_fragment_run_keeps_the_rest_of_the_page(load):
    session = _opened(load, "fragment")
    _start(session)  # the fragment alone reruns: a volcano highlighting another point
    _chart(session, [0, 16, 0, 0, 0], "highlighted", "fragment", "digit_3")
    _finish(session, "FINISHED_FRAGMENT_RUN_SUCCESSFULLY")
    assert session.chart("volcano").id == "$$ID-highlighted-volcano"
    assert (0, 5) in session.drawn


def test_no_volcano_on_the_page_fails_loudly(load):
    session = load.WsSession("http://127.0.0.1:1", timeout=1)
    _start(session)
    _chart(session, [0, 16, 0, 0, 0], "first", "fragment", "digit_1")
    _finish(session, "FINISHED_SUCCESSFULLY")
    _start(session)  # a full run that draws no volcano (e.g. the scoring failed)
    _text(session, [0, 5])
    _finish(session, "FINISHED_SUCCESSFULLY")
    with pytest.raises(AssertionError, match="0 selectable charts 'volcano'"):
        _click(load, session)


def test_a_changed_input_is_written_into_the_url_before_the_rerun(load):
    """As the browser does: the rerun asks with the URL holding the new value (a default is left out)."""
    assert load.with_param("sc_control=DMSO&sc_fdr=0.01", "sc_fdr", load.number_text(0.2)) == \
        "sc_control=DMSO&sc_fdr=0.2"
    assert load.with_param("bn_power=1.5", "bn_power", load.number_text(2.0)) == "bn_power=2"
    assert load.with_param("sc_control=DMSO&sc_fdr=0.01", "sc_fdr", None) == "sc_control=DMSO"
