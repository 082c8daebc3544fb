"""AppTest of app_pages/hypergeometric.py (the hypergeometric law of Precision@K): defaults reproduce the library, widgets change it,
bad input shows st.error without an exception."""

from __future__ import annotations

import numpy as np
import pytest
from apptest import assert_clean, decode, figures, run_page, trace

from apnull import hypergeom as hg
from apnull.views import hypergeometric as hv

def run(**widgets):
    return run_page("hypergeometric", timeout=120, **widgets)


@pytest.fixture(scope="module")
def default_app():
    return run()


def test_defaults_reproduce_the_library(default_app):
    at = default_app
    assert_clean(at)
    assert at.title[0].value == "Hypergeometric check"
    values = {key: at.number_input(key="hg_" + key).value for key in ("m", "n", "k", "draws", "seed")}
    assert values == {"m": 4, "n": 32, "k": 4, "draws": 10_000, "seed": 2022}
    sample = hv.shuffled_precision_at_k(4, 32, 4, 10_000, seed=2022)
    hyper = hg.hypergeom_precision_at_k(4, 32, 4, 10_000, seed=2022)
    thresholds = at.dataframe[0].value
    expected = hv.thresholds_table(4, 32, 4, sample.precision)
    assert list(thresholds["name"]) == list(expected["name"])
    np.testing.assert_allclose(thresholds["value"], expected["value"])
    assert thresholds["value"].tolist()[2] == 0.5 and round(thresholds["value"].tolist()[0], 4) == 0.1111
    summary = at.dataframe[1].value
    ref = hv.summary_table(4, 32, 4, sample, hyper, seed=2022)
    np.testing.assert_allclose(summary["empirical mean"], ref["empirical mean"])
    np.testing.assert_allclose(summary["exact 95pct"], ref["exact 95pct"])
    np.testing.assert_allclose(summary["empirical 95pct"], ref["empirical 95pct"])


def test_default_figures(default_app):
    at = default_app
    hist, scatter = figures(at)
    sample = hv.shuffled_precision_at_k(4, 32, 4, 10_000, seed=2022)
    hyper = hg.hypergeom_precision_at_k(4, 32, 4, 10_000, seed=2022)
    for name, x in (("shuffled", sample.precision), ("hypergeometric", hyper)):
        bar = trace(hist, name)
        counts = np.bincount(np.rint(x * 4).astype(int))
        np.testing.assert_allclose(decode(bar["y"]), counts / 10_000)
        np.testing.assert_allclose(decode(bar["x"]), np.arange(counts.size) / 4)
    pmf = trace(hist, "exact hypergeometric pmf")
    np.testing.assert_allclose(decode(pmf["y"]), hg.hypergeom_pmf(4, 32, 4)[1])
    names = [t["name"] for t in hist["data"]]
    assert "m / (m + n) = 0.1111" in names and "95% chance threshold = 0.5000" in names
    assert any(n.startswith("empirical mean = ") for n in names)
    points = scatter["data"][0]
    np.testing.assert_allclose(decode(points["customdata"])[:, 1], sample.ap[:4000])


def test_fit_sentence_reports_the_library_numbers_in_plain_words_with_the_terms_in_its_tooltip(default_app):
    sentence = next(m for m in default_app.markdown if m.value.startswith("**Do the bars match the diamonds?**"))
    sample = hv.shuffled_precision_at_k(4, 32, 4, 10_000, seed=2022)
    fit = hg.pmf_fit(sample.precision, 4, 32, 4)
    assert f"off by {fit['tv']:.4f} in all (a fit test gives p = {fit['p_value']:.3f})" in sentence.value
    assert "chi-square" not in sentence.value and "total variation" not in sentence.value
    terms = sentence.proto.help
    assert f"chi-square {fit['chi2']:.2f} on {fit['df']} df (p = {fit['p_value']:.3f})" in terms
    assert f"total variation {fit['tv']:.4f}" in terms and "**total variation** distance" in terms


def test_thresholds_read_in_plain_words_with_r_s_name_in_the_tooltip(default_app):
    words = next(m for m in default_app.markdown if "**95% chance threshold**" in m.value)
    assert "hyper 95pct" not in words.value and "'hyper 95pct'" in words.proto.help
    headers = {h.value: h.proto.help for h in default_app.subheader}
    assert "hyper 95pct" in headers["Chance thresholds"]


def test_changing_k_changes_the_output(default_app):
    at = run(k=9)
    assert_clean(at)
    thresholds = at.dataframe[0].value
    assert thresholds["value"].tolist()[2] == pytest.approx(hg.hypergeom_ppf(4, 32, 9))
    assert thresholds["value"].tolist()[2] != 0.5
    hist = figures(at)[0]
    assert len(decode(trace(hist, "exact hypergeometric pmf")["x"])) == 5  # 0..4 hits out of 9
    assert "Precision@9" in hist["layout"]["title"]["text"]
    # same seed, other k: AP is unchanged (same shuffles), Precision@K is recounted
    ap_default = figures(default_app)[1]["data"][0]
    ap_k9 = figures(at)[1]["data"][0]
    np.testing.assert_array_equal(decode(ap_default["y"]), decode(ap_k9["y"]))


def test_changing_the_seed_changes_the_draws(default_app):
    at = run(seed=7)
    assert_clean(at)
    new = at.dataframe[0].value["value"].tolist()[1]
    old = default_app.dataframe[0].value["value"].tolist()[1]
    assert new != old
    assert new == pytest.approx(hv.shuffled_precision_at_k(4, 32, 4, 10_000, seed=7).precision.mean())


@pytest.mark.parametrize(
    "widgets, message",
    [
        ({"k": 37}, "k (top positions counted) must lie between 1 and m + n = 36, got 37"),
        ({"draws": 50}, "draws must be at least 100"),
        ({"draws": 2_000_000}, "draws must be at most 1,000,000"),
        ({"m": 600_000, "n": 500_000}, "m + n must be at most 1,000,000"),
    ],
)
def test_bad_input_shows_an_error(widgets, message):
    at = run(**widgets)
    assert not at.exception
    assert len(at.error) == 1 and message in at.error[0].value
    assert not at.get("plotly_chart")  # the page stops at the error
