"""app_pages/compare.py with AppTest: the bundled pair, the scatter, the summary, uploads, the URL, bad input."""

from pathlib import Path

import numpy as np
import pytest
from streamlit.testing.v1 import AppTest

from apnull.score import digits_pipeline_pair, score_compare, summary_line
from apnull.score.example import digits_crossed_screen
from apnull.views import compare as view
from plotly_json import decode, figures

PAGE = str(Path(__file__).resolve().parents[1] / "app_pages" / "compare.py")
KW = dict(key=["Metadata_plate", "Metadata_well"], perturbation="Metadata_perturbation", control="DMSO",
          stratum="Metadata_plate", permutations=999, seed=0)


@pytest.fixture(scope="module")
def pair():
    return digits_pipeline_pair()


@pytest.fixture(scope="module")
def expected(pair):
    return score_compare(*pair, **KW)


def _run(**params):
    at = AppTest.from_file(PAGE, default_timeout=300)
    for key, value in params.items():
        at.query_params["cp_" + key] = str(value)
    return at.run()


def _table(at):
    return next(d.value for d in at.dataframe if "mAP_a" in d.value.columns)


def _csv(frame, name):
    return (name, frame.to_csv(index=False).encode(), "text/csv")


def test_the_example_shows_the_library_answer(expected):
    at = _run()
    assert not at.exception and not at.error, [e.value for e in at.error]
    head, answer, size = view.verdict_words(expected.summary, expected.groups)
    assert at.subheader[0].value == head == "A retrieves replicates better than B"
    assert any(m.value == f"{answer} {size}" for m in at.markdown)
    assert "times the spread of the perturbations' mAP under A" in size
    # the counts' paired test is on the page, not only in a tooltip
    assert any(m.value == view.retrieved_text(expected.summary) and "Paired test" in m.value for m in at.markdown)
    # before Compare: which test, and why
    assert any(i.value.startswith("**Test: sign flips of whole units**") for i in at.info)
    # a fixed B differs from the command line's adaptive draws, and the page says so
    assert any("Differs from the command line" in c.value for c in at.caption)
    cards = {m.label: m.value for m in at.metric}
    assert cards["Mean delta (B − A)"] == f"{expected.summary['mean_delta']:+.4f}"
    assert cards["p-value (A = B)"] == f"{expected.summary['p_value']:.3g}"
    assert cards["Units swapped"] == "8"
    shown = _table(at)
    assert np.array_equal(shown["delta"].to_numpy(), expected.groups["delta"].to_numpy())
    assert shown["retrieved"].tolist() == expected.groups["retrieved"].tolist()
    # the guessed well key: a well name repeats across plates, so plate and well
    assert (at.selectbox(key="cp_key").value, at.selectbox(key="cp_key2").value) == ("Metadata_plate", "Metadata_well")
    assert at.text_input(key="cp_control").value == "DMSO"


def test_the_scatter_has_every_perturbation_and_the_diagonal(expected):
    at = _run()
    (fig,) = figures(at)
    names = [t["name"] for t in fig["data"]]
    assert names[0] == "A = B" and names[1].startswith("mean delta")
    points = [t for t in fig["data"][2:]]
    assert sum(len(decode(t["x"])) for t in points) == len(expected.groups)
    counts = expected.groups["retrieved"].value_counts()
    assert any(t["name"] == f"by A only ({counts['A only']})" for t in points)
    xs = np.sort(np.concatenate([decode(t["x"]) for t in points]))
    assert np.allclose(xs, np.sort(expected.groups["mAP_a"].to_numpy()))


def test_a_link_reproduces_the_settings(pair):
    at = _run(seed=3, perms=199, alpha=0.1, stratum="(none)")
    assert not at.exception and not at.error
    res = score_compare(*pair, **dict(KW, seed=3, permutations=199, alpha=0.1, stratum=None))
    head, answer, size = view.verdict_words(res.summary, res.groups)
    assert at.subheader[0].value == "No test possible" == head
    assert any(m.value == f"{answer} {size}" for m in at.markdown)
    assert any("no p-value" in w.value for w in at.warning)
    assert any(i.value.startswith("**No test will be possible:** no stratum column") for i in at.info)


def test_bad_input_says_what_to_change():
    at = _run(control="water")
    assert not at.exception
    assert at.error and "control value(s) 'water' not found" in at.error[0].value
    at = _run(features_a="[")
    assert at.error and "features of A" in at.error[0].value


def test_two_uploads_compared_on_press(pair):
    a, b = pair
    at = _run(data="upload")
    assert not at.exception and at.info
    at.file_uploader(key="cp_upload_a").set_value(_csv(a, "a.csv")).run()
    at.file_uploader(key="cp_upload_b").set_value(_csv(b.sample(frac=1, random_state=2), "b.csv")).run()
    assert not at.exception and not at.error, [e.value for e in at.error]
    assert at.selectbox(key="cp_pert").value == "Metadata_perturbation"
    at.button(key="cp_run").click().run()
    assert not at.exception and not at.error
    res = score_compare(a, b, **KW)
    assert at.subheader[0].value == view.verdict_words(res.summary, res.groups)[0]


def _with_nan(table, rows, column):
    out = table.copy()
    out.loc[out.index[rows], column] = np.nan
    return out


def test_an_upload_with_nan_names_the_page_s_choice(pair):
    """NaN cells in B: the error names the page's Missing values choice (not the library's nan=), and
    "leave out those rows" compares the wells left in both tables, as the library does."""
    a, b = pair
    b_nan = _with_nan(b, [3, 17], "half_05")
    at = _run(data="upload")
    at.file_uploader(key="cp_upload_a").set_value(_csv(a, "a.csv")).run()
    at.file_uploader(key="cp_upload_b").set_value(_csv(b_nan, "b.csv")).run()
    at.button(key="cp_run").click().run()
    assert not at.exception and at.error
    message = at.error[0].value
    assert "Table B" in message and "**Missing values**" in message and "nan=" not in message
    at.radio(key="cp_nan").set_value("leave out those rows").run()
    at.button(key="cp_run").click().run()
    assert not at.exception and not at.error, [e.value for e in at.error]
    res = score_compare(a, b_nan, **dict(KW, nan="drop-rows"))
    assert at.subheader[0].value == view.verdict_words(res.summary, res.groups)[0]
    assert len(res.left_out) == 4 and any("2 well(s) with NaN" in w.value for w in at.warning)


def test_a_crossed_upload_says_its_test_before_compare():
    """Every compound on several plates: the page says before Compare that the plate-clustered t test
    will be used, and why; the answer then has a p-value and an interval."""
    w = digits_crossed_screen(1, compounds=30, replicates=3, plates=12, controls=4)
    rng = np.random.default_rng(0)
    cols = [c for c in w.columns if c.startswith("px_")]
    b = w.copy()
    b[cols] = b[cols].to_numpy() + rng.normal(scale=3.0, size=(len(w), len(cols)))
    at = _run(data="upload", perms=99)
    at.file_uploader(key="cp_upload_a").set_value(_csv(w, "a.csv")).run()
    at.file_uploader(key="cp_upload_b").set_value(_csv(b, "b.csv")).run()
    assert not at.exception and not at.error, [e.value for e in at.error]
    assert any(i.value.startswith("**Test: plate-clustered t** (a crossed screen)") and "12 plates" in i.value
               for i in at.info)
    at.button(key="cp_run").click().run()
    assert not at.exception and not at.error, [e.value for e in at.error]
    cards = {m.label: m.value for m in at.metric}
    assert cards["Test"] == "plate-clustered t" and cards["p-value (A = B)"] != "n/a"
    assert any("No paired test of the counts" in m.value for m in at.markdown)


def test_the_warm_up_leaves_the_page_s_first_answer_ready(monkeypatch):
    """The server's warm-up (compare_cache.warm_comparison) compares the bundled pair with exactly the inputs a
    new visitor's page asks for: the page then finds the answer in the cache and compares nothing."""
    from apnull.ui import compare_cache

    compare_cache.RESULTS.clear()
    warmed = compare_cache.warm_comparison()
    calls = []
    monkeypatch.setattr(compare_cache, "score_compare", lambda *a, **k: calls.append(1))
    at = _run()
    assert not at.exception and not calls
    assert compare_cache.RESULTS.values() == [warmed]
