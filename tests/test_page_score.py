"""app_pages/score.py with AppTest: the bundled example, an upload, the volcano plot, one perturbation's
null, and bad input shown as st.error."""

from pathlib import Path

import numpy as np
import pandas as pd
import pytest
from streamlit.testing.v1 import AppTest

from apnull.score import digits_example, score_profiles
from apnull.views import score as view
from apnull.views import score_report as report
from plotly_json import decode, figures, trace

PAGE = str(Path(__file__).resolve().parents[1] / "app_pages" / "score.py")
PERT = "Metadata_perturbation"
#: The page's default number of permutations (quick on the example).
B = 999
GROUP_COLUMNS = [PERT, "n_replicates", "mAP", "mAP_normalized", "p_value", "q_value", "significant", "null",
                 "permutations", "p_value_bound"]


@pytest.fixture(scope="module")
def example():
    return digits_example()


@pytest.fixture(scope="module")
def expected(example):
    """The library's own result for the page's default settings (stratum and control as guessed)."""
    control = view.guess_control(example[PERT])
    return score_profiles(example, perturbation=PERT, control=control, stratum="Metadata_plate", permutations=B,
                          seed=0)


def _run(upload=None, **params):
    at = AppTest.from_file(PAGE, default_timeout=300)
    for key, value in params.items():
        at.query_params["sc_" + key] = str(value)  # the page's parameters carry its prefix
    at.run()
    if upload is not None:
        at.file_uploader(key="upload").set_value(upload).run()
    return at


def _groups(at):
    return next(d.value for d in at.dataframe if "n_replicates" in d.value.columns)


def _trace(fig, prefix):
    return [t for t in fig["data"] if (t.get("name") or "").startswith(prefix)]


def _csv(frame: pd.DataFrame, name="screen.csv"):
    return (name, frame.to_csv(index=False).encode(), "text/csv")


def test_example_gives_the_library_table(expected):
    at = _run()
    assert not at.exception and not at.error, [e.value for e in at.error]
    table = _groups(at)
    assert list(table.columns) == GROUP_COLUMNS
    want = view.ranked_groups(expected.groups, 0.05)
    pd.testing.assert_frame_equal(table.reset_index(drop=True), want, check_dtype=False)
    metrics = {m.label: m.value for m in at.metric}
    assert metrics["Perturbations scored"] == str(len(want))
    assert metrics["Hits at q ≤ 0.05"] == str(int((want["q_value"] <= 0.05).sum()))
    assert metrics["mAP null"] == "shuffles"
    labels = [b.label for b in at.get("download_button")]
    assert "Download the perturbation table (CSV)" in labels and "Download all queries (CSV)" in labels
    assert "Download tables + settings (zip)" in labels


def test_volcano_has_one_point_per_perturbation(expected):
    at = _run()
    volcano, null = figures(at)[:2]  # the consistency step's figures follow
    hits, rest = _trace(volcano, "q ≤ 0.05")[0], _trace(volcano, "q > 0.05")[0]
    floor = _trace(volcano, "no shuffle reached it")  # p is a bound: triangles of their own
    assert len(floor) == 1 and floor[0]["marker"]["symbol"] == "triangle-up"
    assert len(decode(floor[0]["x"])) == int(expected.groups["p_value_bound"].sum()) > 0
    parts = [hits, rest, floor[0]]
    xs = np.concatenate([decode(t["x"]) for t in parts])
    assert sorted(xs) == pytest.approx(sorted(expected.groups["mAP"]))
    ys = np.concatenate([decode(t["y"]) for t in parts])
    assert sorted(ys) == pytest.approx(sorted(-np.log10(expected.groups["p_value"])))
    assert "replicates" in hits["hovertemplate"]
    # the most significant perturbation is inspected first, ringed in the volcano
    first = view.ranked_groups(expected.groups, 0.05)[PERT].iloc[0]
    assert _trace(volcano, f"selected: {first}")
    assert null["layout"]["title"]["text"].startswith(f"{first}: mAP = ")


def test_choosing_a_perturbation_shows_its_null(expected):
    at = _run()
    groups = view.ranked_groups(expected.groups, 0.05)
    name = str(groups[PERT].iloc[-1])  # the least significant one
    at.selectbox(key="sc_inspect").set_value(name).run()
    assert not at.exception and not at.error
    volcano, null = figures(at)[:2]
    assert _trace(volcano, f"selected: {name}")
    row = view.row_of(groups, PERT, name)
    (obs,) = _trace(null, "observed mAP")
    assert decode(obs["x"])[0] == pytest.approx(row["mAP"])
    bars = trace(null, "null")
    assert decode(bars["customdata"]).reshape(-1, 3)[:, 2].astype(float).sum() == B
    np.testing.assert_allclose(np.sort(expected.null_maps(row[PERT])).mean(),
                               decode(_trace(null, "null mean")[0]["x"])[0])
    assert f"p = {row['p_value']:.3g}" in null["layout"]["title"]["text"]
    queries = next(d.value for d in at.dataframe if "precision_at_r" in d.value.columns)
    assert set(queries[PERT].astype(str)) == {name}
    assert len(queries) == row["n_replicates"]


def test_upload_is_scored_when_the_button_is_pressed(example, expected):
    at = _run(upload=_csv(example), data="upload")
    assert not at.exception and not at.error
    assert any("press **Score**" in i.value for i in at.info)
    assert not at.get("plotly_chart")
    at.button(key="score").click().run()
    assert not at.exception and not at.error, [e.value for e in at.error]
    pd.testing.assert_frame_equal(_groups(at).reset_index(drop=True), view.ranked_groups(expected.groups, 0.05),
                                  check_dtype=False)
    assert len(figures(at)) == 2
    # a rerun (another FDR level) reuses the cached scoring: no button needed
    at.number_input(key="sc_fdr").set_value(0.2).run()
    assert not at.error and len(figures(at)) == 2


@pytest.mark.parametrize("null, sub, words", [("independent", "independent-AP", "formula"),
                                             ("copairs", "copairs", "copairs")])
def test_approximate_null_has_no_histogram(null, sub, words):
    at = _run(null=null)
    assert not at.exception and not at.error
    volcano = figures(at)[0]  # the consistency step's figures follow
    assert f"{sub} null" in volcano["layout"]["title"]["text"]
    assert bool(_trace(volcano, "smallest p")) == (null == "copairs")
    assert any("no null of its own" in i.value for i in at.info)
    assert {m.label: m.value for m in at.metric}["mAP null"] == words
    assert set(_groups(at)["null"]) == {f"{null} (approximate)"}


def test_calibration_note_is_shown():
    at = _run()
    cal = at.table[0].value  # a static table: its cells wrap at 390 px
    assert list(cal.columns) == ["this run", "method", "false hits at α = 0.05", "at α = 0.01", "verdict"]
    assert cal["method"].tolist() == report.calibration_table()["method"].tolist()
    # the example's queries use the conditional null (one replicate per plate), its mAP fixed-B shuffles
    used = dict(zip(report.calibration_table()["method"], cal["this run"]))
    assert [m for m, u in used.items() if u] == [c["method"] for c in report.CALIBRATION
                                                 if c["key"] in ("permutation", "conditional permutation")]
    assert any(report.CALIBRATION_SOURCE[len("measured by "):] in c.value for c in at.caption)


@pytest.mark.parametrize("params, message", [
    (dict(control="nope"), "control value(s) 'nope' not found in column 'Metadata_perturbation'"),
    (dict(perms=0), "permutations must be between 1 and 100,000"),
    (dict(features="(["), "not a valid regular expression"),
    (dict(fdr=1.5), "the FDR level q must lie in (0, 1)"),
    (dict(stratum="Metadata_kind"), "no control rows in stratum"),  # the library's message, at scoring
])
def test_bad_settings_show_an_error(params, message):
    at = _run(**params)
    assert not at.exception
    assert len(at.error) == 1 and message in at.error[0].value
    assert not at.get("plotly_chart")


def test_bad_files_show_an_error(example):
    # empty file: refused when read
    at = _run(upload=("empty.csv", b"", "text/csv"), data="upload")
    assert not at.exception and len(at.error) == 1
    # a table without the chosen control value's column content: controls missing
    no_controls = example.loc[example[PERT] != view.guess_control(example[PERT])]
    at = _run(upload=_csv(no_controls), data="upload", control=view.guess_control(example[PERT]))
    assert not at.exception and len(at.error) == 1 and "not found in column" in at.error[0].value
    # a missing feature value: the library names the column in the plan, before anything is scored
    bad = example.copy()
    bad.loc[5, "px_10"] = np.nan
    at = _run(upload=_csv(bad), data="upload")
    assert not at.exception and len(at.error) == 1 and "px_10" in at.error[0].value
    assert not at.get("plotly_chart")


def test_one_replicate_is_skipped_and_reported(example):
    one = example.copy()
    one.loc[one[PERT] == "null_01", PERT] = ["solo", "null_01", "null_01", "null_01"]
    at = _run(upload=_csv(one), data="upload")
    at.button(key="score").click().run()
    assert not at.exception and not at.error
    labels = [e.label for e in at.expander]  # options, the method text, the plan (said before scoring), skipped,
    # the consistency step
    assert labels == ["More options (as in copairs and the command line)", "How the p-values are made",
                      "Plan: 4 plate(s) or batch(es), 4 columns left out, 1 perturbations to skip",
                      "1 perturbation(s) skipped", "Consistency: do perturbations that share an annotation look alike?"]
    at.session_state["sc_plan_open"] = True  # the plan's tables are built while its expander is open
    at.run()
    planned = next(d.value for d in at.dataframe if list(d.value.columns) == ["perturbation", "reason"])
    assert planned["perturbation"].tolist() == ["solo"]  # said before scoring
    skipped = next(d.value for d in at.dataframe if "reason" in d.value.columns and PERT in d.value.columns)
    assert skipped[PERT].tolist() == ["solo"] and "one replicate" in skipped["reason"].iloc[0]
    assert "solo" not in set(_groups(at)[PERT])


def test_adaptive_permutations_give_the_library_table(example):
    """The "adaptive B" toggle scores with permutations="auto": the table is the library's, the card
    gives the draws the perturbations used, and a strong hit's p-value goes below 1/1,000."""
    at = _run(auto="true", budget=120)  # a limit this example never reaches: the result is the library's
    assert not at.exception and not at.error, [e.value for e in at.error]
    control = view.guess_control(example[PERT])
    want = score_profiles(example, perturbation=PERT, control=control, stratum="Metadata_plate",
                          permutations="auto", seed=0, budget=120)
    table = _groups(at)
    mine = view.ranked_groups(want.groups, 0.05)
    pd.testing.assert_frame_equal(table.reset_index(drop=True), mine, check_dtype=False)
    used = want.groups["permutations"]
    assert {m.label: m.value for m in at.metric}["mAP null"] == "shuffles"
    caption = next(c.value for c in at.caption if c.value.startswith("More draws where needed"))
    assert f"from {used.min():,} to {used.max():,} draws ({used.sum():,} in all" in caption  # in full
    assert "Time limit 120 s: every perturbation's decision was settled" in caption and not table["decision_open"].any()
    assert want.groups["p_value"].min() < 1 / 1000
    assert at.query_params.get("sc_auto") in ("true", "True", True, ["true"])
