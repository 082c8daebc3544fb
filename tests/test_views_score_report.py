"""apnull.views.score_report: words derived from a result, the calibration marks, the download zip, the
missing-value message; screen_plan's missing values; the page's progress while compiling."""

import io
import json
import zipfile

import numpy as np
import pandas as pd
import pytest

from apnull.score import MissingValuesError, digits_example, score_profiles, screen_plan
from apnull.ui.progress import ScoreProgress
from apnull.views import score as view
from apnull.views import score_report as report

PERT = "Metadata_perturbation"


@pytest.fixture(scope="module")
def result():
    return score_profiles(digits_example(), PERT, "DMSO", "Metadata_plate", permutations=99, seed=1)


def test_nulls_used_and_the_words_follow_the_null_column(result):
    used = report.nulls_used(result.groups, result.queries, 99)
    assert used == {"permutation", "conditional permutation"}  # one replicate per plate in the example
    assert "conditional permutation" in report.query_null_text(result.queries["null"])
    assert "exact null law" not in report.query_null_text(result.queries["null"])
    mixed = report.query_null_text(["exact law", "exact law", "conditional permutation"])
    assert "2 from the exact null law" in mixed and "1 from a conditional permutation" in mixed
    cal = report.calibration_table(used)
    assert cal["this run"].sum() == 2 and list(cal.columns)[0] == "this run"
    text = report.method_text("permutation", "auto", result.queries["null"])
    assert "at the bottom" not in text and "more shuffles where a decision needs them" in text
    assert "conditional permutation" in text


def test_zip_is_deterministic_and_says_how_it_was_made(result):
    settings = view.make_settings(digits_example(), PERT, "DMSO", "Metadata_plate", "", "cosine", "permutation", 99, 1)
    g, q = report.download_tables(view.ranked_groups(result.groups, 0.05), result.queries, 0.05)
    assert "significant_at_fdr_0.05" in g.columns and "significant" not in g.columns
    record = report.settings_record(file="example", digest="abc", settings=settings, alpha=0.05, version="9.9")
    a = report.bundle_zip({"t_perturbations": g, "t_queries": q}, record)
    assert a == report.bundle_zip({"t_perturbations": g, "t_queries": q}, record)
    with zipfile.ZipFile(io.BytesIO(a)) as zf:
        assert [i.date_time for i in zf.infolist()] == [report.ZIP_DATE] * 3
        saved = json.loads(zf.read("settings.json"))
        back = pd.read_csv(zf.open("t_perturbations.csv"))
    assert saved["perturbation"] == [PERT] and saved["permutations"] == 99 and saved["seed"] == 1
    assert saved["nan"] == "error" and saved["apnull_version"] == "9.9" and saved["file_sha256"] == "abc"
    assert saved["normalize"] == "none"
    assert len(back) == len(g)


def test_missing_values_are_named_with_the_page_control_and_planned():
    table = digits_example()
    table.loc[3, "px_20"] = np.nan
    with pytest.raises(MissingValuesError) as err:
        screen_plan(table, PERT, "DMSO", "Metadata_plate")
    assert "'px_20'" in err.value.where and "nan=" not in err.value.where
    message = report.missing_message(err.value.where)
    assert message.startswith("Feature columns with NaN") and "**Missing values**" in message
    # the row named is the file's fourth data row (0-based row 3), and the message says how it counts
    assert "data row 4 (counting from 1 under the header)" in message
    plan = screen_plan(table, PERT, "DMSO", "Metadata_plate", nan="drop-features")
    assert plan.dropped_features == ("px_20",) and "px_20" in report.dropped_text(plan)
    plan = screen_plan(table, PERT, "DMSO", "Metadata_plate", nan="drop-rows")
    assert plan.dropped_rows == (3,) and "data row 4 (counting from 1" in report.dropped_text(plan)
    assert report.dropped_text(screen_plan(digits_example(), PERT, "DMSO", "Metadata_plate")) == ""


def test_budget_words(result):
    groups = result.groups.assign(decision_open=[True] + [False] * (len(result.groups) - 1))
    assert report.open_decisions(groups, PERT) == [str(groups[PERT].iloc[0])]
    two = groups.assign(dose=[10] + [1] * (len(groups) - 1))  # several perturbation columns: the page's names
    assert report.open_decisions(two, [PERT, "dose"]) == [f"{groups[PERT].iloc[0]} / 10"]
    assert report.open_decisions(two, [PERT, "dose"]) == view.names(two.iloc[:1], [PERT, "dose"])
    assert "stopped 1 decision(s)" in report.draws_caption(groups, 5.0)
    assert "every perturbation's decision was settled" in report.draws_caption(result.groups.assign(decision_open=False), 5.0)
    tails = report.draws_caption(groups, 5.0, {"open_perturbations": 1, "open_queries": 2, "tail_bounds": 7})
    assert "7 query p-value(s) are their exact law's upper bound" in tails and "left 2 query decision(s) open" in tails
    assert "upper bound" not in report.draws_caption(groups, 5.0, {"tail_bounds": 0, "open_queries": 0})
    with pytest.raises(ValueError, match="time limit"):
        view.make_settings(digits_example(), PERT, "DMSO", None, "", "cosine", "permutation", "auto", 0, budget=1e6)


class _Bar:
    def __init__(self):
        self.texts = []

    def progress(self, value, text=""):
        self.texts.append(text)


def test_progress_says_when_compiled_code_is_prepared():
    bar = _Bar()
    progress = ScoreProgress(bar)
    progress.compiling()
    progress.compiled(12.0)
    assert "Preparing compiled code, first run only" in bar.texts[0] and "12 s" in bar.texts[1]


def test_progress_names_each_stage_of_the_run():
    bar = _Bar()
    progress = ScoreProgress(bar)
    progress(4, 4)
    assert bar.texts[-1] == "Per-query p-values and the tables..."
    progress.stage("queries, exact laws and far tails")
    progress(3, 800)
    assert bar.texts[-1] == "Scoring: 3 of 800 queries, exact laws and far tails"
    progress.stage("perturbations", "table B")  # a comparison's second table
    progress(2, 40)
    assert bar.texts[-1] == "Scoring table B: 2 of 40 perturbations"


def test_progress_shows_the_counts_of_a_null_beside_its_own():
    """A null drawing beside the run's (its reporter from ``beside``) only keeps its counts; the bar shows
    them after the run's own until ``alone``."""
    bar = _Bar()
    progress = ScoreProgress(bar)
    twin = progress.beside("mAP null", "per-query null")
    progress(1, 40)
    assert bar.texts[-1] == "Scoring: 1 of 40 perturbations"  # nothing counted beside yet
    twin.stage("queries (conditional null)")
    twin(300, 816)
    assert bar.texts == ["Scoring: 1 of 40 perturbations"]  # the twin never moves the bar itself
    progress.last = 0.0
    progress(2, 40)
    assert bar.texts[-1] == "Scoring: 2 of 40 perturbations · per-query null: 300 of 816 queries (conditional null)"
    progress.last = 0.0
    progress(40, 40)  # a round's end: the run is not finishing while the other null draws
    assert bar.texts[-1] == "Scoring: 40 of 40 perturbations · per-query null: 300 of 816 queries (conditional null)"
    progress.alone()
    progress.last = 0.0
    progress(3, 40)
    assert bar.texts[-1] == "Scoring: 3 of 40 perturbations"


def test_shown_order_puts_score_p_and_q_after_the_names():
    """A phone shows three or four columns: the names, then the score, p, q (downloads keep their order)."""
    cols = ["Metadata_perturbation", "dose", "n_replicates", "mAP", "mAP_normalized", "p_value", "q_value",
            "significant", "null"]
    assert report.shown_order(cols, 2) == ["Metadata_perturbation", "dose", "mAP", "p_value", "q_value",
                                           "significant", "n_replicates", "mAP_normalized", "null"]
    queries = ["row", "Metadata_perturbation", "m", "n", "ap", "p_value", "q_value", "Metadata_plate"]
    assert report.shown_order(queries, 1) == ["row", "ap", "p_value", "q_value", "Metadata_perturbation", "m", "n",
                                              "Metadata_plate"]
