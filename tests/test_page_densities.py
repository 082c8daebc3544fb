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
    ({"M": 0}, "M (positives of the first size) must be at least 1"),
    ({"draws": 100_000}, "K x draws"),
    ({"K": 0}, "number of sizes K must be at least 1"),
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
