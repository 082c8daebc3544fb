"""app_pages/lookup.py with AppTest: the numbers on the page are the library's."""

import numpy as np
import pytest

import apnull
from apptest import decode, figures, metrics, run_page


def _run(**widgets):
    return run_page("lookup", **widgets)  # level before alpha: the helper reruns in between


_metrics = metrics


def _line_x(fig, prefix):
    (t,) = [t for t in fig["data"] if t.get("name", "").startswith(prefix)]
    x = decode(t["x"])
    assert x[0] == x[1]
    return float(x[0])


def test_defaults_give_the_library_numbers():
    at = _run()
    assert not at.exception and not at.error
    metrics = _metrics(at)
    t = apnull.threshold(4, 30)
    assert t == pytest.approx(0.42687908496732)
    assert metrics["AP threshold (95%)"] == f"{t:.5g}" == "0.42688"
    assert metrics["P@R threshold (95%)"] == f"{apnull.threshold(4, 30, 'pr'):.5g}"
    assert metrics["E[AP] (closed form)"] == f"{apnull.expected_ap(4, 30):.5f}"
    assert metrics["SD[AP] (closed form)"] == f"{np.sqrt(apnull.ap_variance(4, 30)):.5f}"
    assert metrics["M/(M+N)"] == f"{4 / 34:.5f}"
    p = apnull.p_value(0.41, 4, 30)
    assert metrics["p-value of AP = 0.41"] == f"{p:.3f}" == "0.060"
    captions = [c.value for c in at.caption]
    assert "method: exact (all placements)" in captions
    sentences = [md.value for md in at.markdown if "null threshold" in md.value]
    assert sentences[0] == ("**AP = 0.41** is less than the 95% null threshold 0.427: it **does not beat** it "
                            "(p = 0.060).")
    # equal to the threshold: the sentence says that only a greater score beats it
    assert sentences[1] == ("**Precision@R = 0.5** equals the 95% null threshold 0.5; a score must be greater "
                            "than the threshold to beat it, so it **does not beat** it (p = 0.059).")


def test_figures_mark_threshold_value_ratio_and_mean():
    at = _run()
    ap_fig, pr_fig = figures(at)
    assert _line_x(ap_fig, "threshold") == apnull.threshold(4, 30)
    assert _line_x(ap_fig, "observed") == 0.41
    assert _line_x(ap_fig, "M/(M+N)") == pytest.approx(4 / 34)
    assert _line_x(ap_fig, "mean") == pytest.approx(apnull.expected_ap(4, 30))
    assert _line_x(pr_fig, "threshold") == apnull.threshold(4, 30, "pr")
    assert _line_x(pr_fig, "observed") == 0.5
    # the Precision@R law has 5 atoms: stems at the exact hypergeometric probabilities
    (pmf,) = [t for t in pr_fig["data"] if t.get("name") == "pmf"]
    law = apnull.null_distribution(4, 30, "pr")
    np.testing.assert_allclose(decode(pmf["y"]), law.probs)
    # the wide AP law is binned: the bars hold all the probability
    (bars,) = [t for t in ap_fig["data"] if t.get("name") == "pmf"]
    assert decode(bars["y"]).sum() == pytest.approx(1.0)


def test_changing_sizes_changes_the_outputs():
    at = _run(m=6, n=40)
    assert not at.exception and not at.error
    t = apnull.threshold(6, 40)
    assert _metrics(at)["AP threshold (95%)"] == f"{t:.5g}"
    ap_fig = figures(at)[0]
    assert _line_x(ap_fig, "threshold") == t
    assert "m = 6, n = 40" in ap_fig["layout"]["title"]["text"]


def test_grid_law_shows_guaranteed_interval():
    at = _run(n=300, ap=0.2)
    assert not at.exception and not at.error
    law = apnull.null_distribution(4, 300)
    assert law.method == "grid"
    assert _metrics(at)["AP threshold (95%)"] == f"{law.quantile(0.95):.5g}"
    captions = [c.value for c in at.caption]
    # plain words on the page, the technical description (G, error bound) in the caption's tooltip
    assert "method: computed on a fine grid, thresholds within ±0.001 of the exact ones" in captions
    assert any(c.proto.help.startswith(law.describe()) for c in at.caption)
    lo, hi = law.pvalue_bounds(0.2)
    assert f"guaranteed interval [{lo:.4g}, {hi:.4g}] (the grid law's error bound)" in captions
    assert _metrics(at)["p-value of AP = 0.2"] == f"{law.pvalue(0.2):.3f}"


def test_small_p_value_keeps_three_significant_digits():
    at = _run(n=300, ap=0.3)
    p = apnull.p_value(0.3, 4, 300)
    assert p < 0.01
    assert _metrics(at)["p-value of AP = 0.3"] == f"{p:.3g}" == "0.00187"


def test_alpha_level_and_monte_carlo():
    at = _run(level="alpha", alpha=0.01, method="mc", draws=20_000, seed=5)
    assert not at.exception and not at.error
    law = apnull.null_distribution(4, 30, method="mc", draws=20_000, seed=5)
    metrics = _metrics(at)
    assert metrics["AP threshold (99%)"] == f"{law.quantile(0.99):.5g}"
    captions = [c.value for c in at.caption]
    assert "method: Monte Carlo, 20,000 draws, seed 5" in captions
    assert any(c.startswith("95% interval") for c in captions)
    assert _line_x(figures(at)[0], "threshold") == pytest.approx(law.quantile(0.99))


def test_threshold_table():
    at = _run()
    (table,) = at.dataframe
    df = table.value
    assert list(df["q"]) == [0.75, 0.9, 0.95, 0.99]
    np.testing.assert_allclose(df["ap_threshold"], [apnull.threshold(4, 30, q=q) for q in df["q"]])
    np.testing.assert_allclose(df["pr_threshold"], [apnull.threshold(4, 30, "pr", q=q) for q in df["q"]])


@pytest.mark.parametrize("widgets, message", [
    (dict(q=1.2), "q must lie in [0, 1], got 1.2"),
    (dict(level="alpha", alpha=0.0), "alpha must lie in (0, 1), got 0"),
    (dict(level="alpha", alpha=1.0), "alpha must lie in (0, 1), got 1"),
    (dict(ap=1.3), "your AP must lie in [0, 1], got 1.3"),
    (dict(pr=-0.2), "your Precision@R must lie in [0, 1], got -0.2"),
    (dict(m=40, n=300, method="exact"), "exact AP law for m=40, n=300 has"),
    (dict(method="mc", draws=0), "draws must be at least 1"),
])
def test_bad_input_shows_error_not_exception(widgets, message):
    at = _run(**widgets)
    assert not at.exception
    assert len(at.error) == 1 and message in at.error[0].value
    assert not at.get("plotly_chart")


def test_far_tail_is_counted_not_zero():
    """P(AP = 1) = 1 / C(270, 30): the grid trims it; the page shows the counted p and its range."""
    import math

    at = _run(m=30, n=240, ap=1.0)
    assert not at.exception and not at.error
    exact = 1 / math.comb(270, 30)
    assert _metrics(at)["p-value of AP = 1"] == f"{exact:.3g}" == "1.62e-40"
    captions = [c.value for c in at.caption]
    assert any(c.startswith("guaranteed interval [1.62e-40, 1.62e-40] (far tail counted") for c in captions)


# -- the edges of the null laws on the page: the same answers as the library and the command line ------
def test_intro_quotes_the_ap_that_is_set():
    at = _run(ap=0.7)
    intro = next(md.value for md in at.markdown if "true matches" in md.value)
    assert "scored **AP = 0.7**" in intro and "0.41" not in intro


def test_alpha_below_what_monte_carlo_resolves_is_counted():
    # the method and its draws before the level: the run in between (alpha shows only after level = alpha)
    # then uses the law of 1,000 draws, not the default method's law at these sizes (0.2 s, not 2 s of CPU;
    # the same page at the end)
    at = _run(m=10, n=100, method="mc", draws=1000, seed=1, level="alpha", alpha=1e-5)
    assert not at.exception and not at.error
    law = apnull.null_distribution(10, 100, method="mc", draws=1000, seed=1)
    thr = apnull.significance.resolved_threshold(law, alpha=1e-5)
    assert thr.source == "tail count"
    assert _metrics(at)["AP threshold (99.999%)"] == f"{thr.value:.5g}"
    assert _line_x(figures(at)[0], "threshold") == thr.value
    captions = [c.value for c in at.caption]
    assert f"counted from the far tail: the exact threshold lies in [{thr.low:.5g}, {thr.high:.5g}]" in captions
    # the table's row of the page's level is the threshold shown, its alpha exact
    df = at.dataframe[0].value
    row = df[df["alpha"] == 1e-5]
    assert list(row["ap_threshold"]) == [thr.value]


def test_a_level_no_law_resolves_says_which_alpha_it_can_answer():
    at = _run(m=3000, n=3000, method="mc", draws=1000, seed=1, level="alpha", alpha=1e-6)  # (order: as above)
    assert not at.exception
    assert len(at.error) == 1 and "use alpha >= 0.01" in at.error[0].value


def test_p_values_below_the_smallest_float_show_their_log():
    at = _run(m=600, n=600, ap=1.0, pr=1.0)
    assert not at.exception and not at.error
    shown = _metrics(at)
    tail = apnull.significance.tail_pvalue(1.0, 600, 600, "pr")
    assert tail.underflows and shown["p-value of P@R = 1"] == f"10^{tail.log10_p:.2f}" == "10^-359.60"
    notes = [c for c in at.caption if c.value.startswith("guaranteed interval [10^-359.5983")]
    assert notes and "log10 p = -359.5983" in notes[0].proto.help


def test_no_negatives_at_a_million_positives():
    at = _run(m=1_000_000, n=0, ap=1.0, pr=1.0)
    assert not at.exception and not at.error
    shown = _metrics(at)
    assert shown["AP threshold (95%)"] == "1" and shown["p-value of AP = 1"] == "1.000"
    assert shown["P@R threshold (95%)"] == "1" and shown["p-value of P@R = 1"] == "1.000"


def test_monte_carlo_floor_is_shown_as_a_bound():
    """m = 200, n = 5000 (Monte Carlo): no draw reaches AP = 0.41, so the p-value 1 / (1 + draws) is an
    upper bound; the card and the verdict say "≤", as the ranking editor writes "p ≤", never "= 1e-05"."""
    at = _run(m=200, n=5000, draws=20_000)
    assert not at.exception and not at.error
    assert _metrics(at)["p-value of AP = 0.41"] == f"≤ {1 / 20_001:.2g}"
    verdicts = [m.value for m in at.markdown if m.value.startswith("**AP = 0.41**")]
    assert verdicts and verdicts[0].endswith(f"(p ≤ {1 / 20_001:.2g}).")
