import threading
import time

import numpy as np
import pytest

from apnull.views import null as summaries
from apnull.sampling import sample_null
from apptest import decode, figures, run_page


def _run(**widgets):
    return run_page("densities", **widgets)


_figures = figures


def test_defaults_render_two_density_figures_with_50_sizes():
    at = _run()
    assert not at.exception and not at.error
    ap_fig, pr_fig = _figures(at)
    lines = [t for t in ap_fig["data"] if t.get("mode") == "lines"]
    assert len(lines) == 50
    assert lines[0]["name"] == "m=4, n=30" and lines[-1]["name"] == "m=200, n=1500"
    assert "Precision@R" in pr_fig["layout"]["title"]["text"]


def test_curves_are_the_kde_of_the_library_draws():
    at = _run(K=3, draws=2000, seed=11)
    assert not at.exception and not at.error
    ap_fig = _figures(at)[0]
    lines = [t for t in ap_fig["data"] if t.get("mode") == "lines"]
    samples = []
    for m, n in [(4, 30), (8, 60), (12, 90)]:
        s = sample_null(m, n, 2000, 11)
        samples.append((m, n, s.ap, s.pr))
    expected = summaries.density_curves(samples, "ap")
    assert len(lines) == 3
    for line, curve in zip(lines, expected):
        assert np.allclose(decode(line["y"]), curve["y"])
        assert np.allclose(decode(line["x"]), curve["x"])


def test_exact_overlay_toggle_adds_dashed_curves():
    at = _run(K=4, draws=1000, exact=True)
    assert not at.exception and not at.error
    ap_fig = _figures(at)[0]
    dashed = [t for t in ap_fig["data"] if t.get("line", {}).get("dash") == "dash"]
    assert len(dashed) == 4  # sizes up to (16, 120) are cheap
    assert any("Exact law drawn for 4 of 4" in c.value for c in at.caption)


@pytest.mark.parametrize("widgets, message", [
    ({"draws": 100_000}, "K x draws"),
    ({"K": 201}, "at most 200"),
    ({"draws": 10}, "draws must be at least 100"),
])
def test_bad_input_shows_error_and_no_exception(widgets, message):
    at = _run(**widgets)
    assert not at.exception
    assert any(message in e.value for e in at.error), [e.value for e in at.error]
    assert not at.get("plotly_chart")


def test_precision_at_r_is_drawn_as_a_discrete_law():
    at = _run(K=2, draws=1000, seed=3)
    assert not at.exception and not at.error
    pr_fig = _figures(at)[1]
    steps = [t for t in pr_fig["data"] if t.get("mode") == "lines" and t.get("name", "").startswith("m=")]
    assert [t["name"] for t in steps] == ["m=4, n=30", "m=8, n=60"]
    dots = [t for t in pr_fig["data"] if t.get("mode") == "markers" and t.get("name") == "exact law (hypergeometric)"]
    assert len(dots) == 1 and len(decode(dots[0]["y"])) == 4 + 5  # the values of P at least 1e-3 of the largest
    assert "discrete" in pr_fig["layout"]["title"]["text"]


# --- a new view too large to wait for: a preview from its first draws, the whole view in the background
PREVIEWED = dict(M=3, N=30, K=20, draws=10_000, seed=7)  # 650 ranks a draw: 6.5 million ranks in all


def test_preview_draws_bound_the_ranks_drawn():
    from apnull.ui import cache

    assert cache.preview_draws(3, 30, 20, 10_000) == 6000  # 650 ranks a draw: 2^22 // 650 = 6452, rounded down
    assert cache.preview_draws(8, 30, 50, 10_000) == 400  # the class's largest M: 10,250 ranks a draw
    assert cache.preview_draws(3, 30, 20, 6000) is None  # 3.9 million ranks: shown at once
    assert cache.preview_draws(4, 30, 200, 10_000) == 100  # never fewer than the page's minimum
    assert cache.preview_draws(4, 30, 200, 100) is None  # the preview would not be smaller
    assert cache.preview_draws(1, 1, 1, 1_000_000) is None  # 2 million ranks


def test_a_large_new_view_shows_its_preview_then_the_whole_view():
    from apnull.ui import cache

    p = PREVIEWED
    key = cache.DENSITY_VIEWS.key(p["M"], p["N"], p["K"], p["draws"], p["seed"], False)
    assert not cache.DENSITY_VIEWS.ready(p["M"], p["N"], p["K"], p["draws"], p["seed"], False)
    gate = threading.Event()  # the one background thread waits, so the whole view cannot be stored before the
    cache._background_worker().submit(gate.wait, 120)  # page shows its preview (on a busy machine it could be)
    try:
        at = _run(**p)
        assert not at.exception and not at.error
        assert len(at.info) == 1 and "Preview from the first 6,000 random rankings per size" in at.info[0].value
        ap_fig = _figures(at)[0]
        assert "6,000 draws each" in ap_fig["layout"]["title"]["text"]
        lines = [t for t in ap_fig["data"] if t.get("mode") == "lines"]
        first = sample_null(3, 30, 6000, 7)  # the preview's draws are the first draws of the whole view's
        assert np.allclose(decode(lines[0]["y"]), summaries.density_curves([(3, 30, first.ap, first.pr)], "ap")[0]["y"])
        # the whole view was started in the background, once whatever the sessions asking
        assert cache.density_in_background(p["M"], p["N"], p["K"], p["draws"], p["seed"], False) is None
    finally:
        gate.set()
    view = cache.density_figures(p["M"], p["N"], p["K"], p["draws"], p["seed"], False, progress=False)  # joins it
    assert key in cache.VIEWS
    at.run()  # what the page's look at the view does when it is stored
    assert not at.exception and not at.error and not at.info
    ap_fig = _figures(at)[0]
    assert "10,000 draws each" in ap_fig["layout"]["title"]["text"]
    whole = sample_null(3, 30, 10_000, 7)
    lines = [t for t in ap_fig["data"] if t.get("mode") == "lines"]
    assert np.allclose(decode(lines[0]["y"]), summaries.density_curves([(3, 30, whole.ap, whole.pr)], "ap")[0]["y"])
    assert view[0][1]["layout"]["title"]["text"] == ap_fig["layout"]["title"]["text"]


def test_the_background_view_is_made_once_for_every_session():
    """Thirty sessions asking for the same new view start one computation; the next ask finds it stored."""
    from concurrent.futures import ThreadPoolExecutor

    from apnull.ui import cache

    args = (5, 31, 9, 20_000, 3, False)
    with ThreadPoolExecutor(8) as pool:
        futures = list(pool.map(lambda _: cache.density_in_background(*args), range(30)))
    started = [f for f in futures if f is not None]
    assert len(started) == 1
    started[0].result(timeout=120)
    assert cache.DENSITY_VIEWS.ready(*args)
    assert cache.density_in_background(*args) is None
    assert cache.density_preview(*args)[1] == 20_000  # stored: the whole view, no preview


def test_a_failed_background_view_is_met_again_in_front(monkeypatch):
    """When the whole view's background build raises, the page's look at it stops waiting (settled) and its
    next run builds the view in front, so the error is shown instead of a preview waiting for ever."""
    from apnull.ui import cache

    args = (4, 33, 20, 10_000, 11, False)  # a new view, large enough for a preview
    real = cache.density_figures

    def failing(M, N, K, draws, seed, show_exact, container=None, progress=True):
        if draws == args[3]:
            raise MemoryError("the whole view could not be made")
        return real(M, N, K, draws, seed, show_exact, container, progress=progress)

    monkeypatch.setattr(cache, "density_figures", failing)
    view, shown = cache.density_preview(*args)
    assert shown < args[3]  # the preview; the whole view was started in the background, and fails there
    deadline = time.monotonic() + 120
    while not cache.settled(cache.DENSITY_VIEWS, *args) and time.monotonic() < deadline:
        time.sleep(0.05)
    assert cache.settled(cache.DENSITY_VIEWS, *args)
    assert not cache.DENSITY_VIEWS.ready(*args)
    with pytest.raises(MemoryError, match="could not be made"):
        cache.density_preview(*args)  # in front: the page shows the error
    assert not cache.settled(cache.DENSITY_VIEWS, *args)  # the failure is met once; a new ask may try again


def test_a_sessions_first_chart_is_sent_alone_then_both():
    """On a browser session's first chart, with the view ready, the page sends the first chart alone (the
    browser draws every chart that arrives while it loads plotly in one task, so the first would show only
    once both are drawn) and a browser-side element in the second slot that asks for the page again once
    a chart is drawn; the next run sends both charts, and no such element."""
    from apnull.ui import cache

    d = summaries.DEFAULT_VIEW
    cache.density_figures(d["M"], d["N"], d["K"], d["draws"], d["seed"], False, progress=False)
    at = run_page("densities", first_chart_alone=True)
    figs = _figures(at)
    assert len(figs) == 1 and "Average Precision" in figs[0]["layout"]["title"]["text"]
    assert any(c.value == "Drawing the chart..." for c in at.caption)
    assert "_apnull_first_drawn" in at.session_state  # the element that asks for the rest
    at.run()  # the browser's ask once the first chart is drawn
    ap_fig, pr_fig = _figures(at)
    assert "Precision@R" in pr_fig["layout"]["title"]["text"]
    assert not any(c.value == "Drawing the chart..." for c in at.caption)
