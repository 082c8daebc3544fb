"""Results in a notebook: HTML that says what the command line says, the dashboard's figures, and
progress=True (a bar in Jupyter, the command line's lines elsewhere, nothing when off)."""

from __future__ import annotations

import html
import io
import subprocess
import sys

import numpy as np
import plotly.graph_objects as go
import pytest

from apnull.notebook import figures
from apnull.score import (activity_line, consistency_line, digits_example, digits_pipeline_pair, digits_screen,
                          retrieved_line, score_compare, score_consistency, score_profiles, summary_line)
from apnull.score.engine import progress as live
from apnull.score.engine.sequential import RoundInfo
from apnull.score.results.display import TOP_ROWS
from apnull.views import score as score_view

PCOL = "Metadata_perturbation"


@pytest.fixture(scope="module")
def scored():
    return score_profiles(digits_screen(), perturbation=PCOL, stratum="Metadata_plate", permutations=99, seed=0)


@pytest.fixture(scope="module")
def consistent():
    return score_consistency(digits_example(), perturbation=PCOL, annotation="Metadata_target", label_sep="|",
                             control="DMSO", permutations=99, seed=0)


@pytest.fixture(scope="module")
def compared():
    a, b = digits_pipeline_pair(plates=3)
    return score_compare(a, b, key=["Metadata_plate", "Metadata_well"], perturbation=PCOL,
                         stratum="Metadata_plate", permutations=99, seed=0)


def test_a_score_result_shows_its_summary_settings_and_top_rows(scored):
    page = scored._repr_html_()
    assert html.escape(activity_line(scored.activity)) in page  # the line apnull score prints
    assert "similarity=cosine" in page and "permutations=99" in page and "stratum=Metadata_plate" in page
    assert scored.groups.head(TOP_ROWS).to_html(notebook=True, max_cols=20) in page
    assert f"the first {TOP_ROWS} of {len(scored.groups)}" in page
    for w in scored.warnings:
        assert html.escape(w) in page


def test_consistency_and_compare_show_the_command_lines(consistent, compared):
    page = consistent._repr_html_()
    assert html.escape(consistency_line(consistent.labels, consistent.settings)) in page
    assert consistent.labels.to_html(notebook=True, max_cols=20) in page  # 4 labels: all shown
    page = compared._repr_html_()
    assert html.escape(summary_line(compared.summary)) in page
    assert html.escape(retrieved_line(compared.summary)) in page


def test_text_in_a_result_is_escaped():
    t = digits_screen()
    t[PCOL] = t[PCOL].replace("digit_3", "<script>x</script>")
    res = score_profiles(t, perturbation=PCOL, stratum="Metadata_plate", permutations=9, seed=0)
    assert "<script>" not in res._repr_html_()


def test_plot_is_the_dashboard_volcano(scored):
    fig = scored.plot()
    assert isinstance(fig, go.Figure)
    points = score_view.volcano_data(score_view.ranked_groups(scored.groups, 0.05), PCOL, 0.05)
    page = figures.volcano(points, 0.05, "permutation", 99)  # what the score page draws for these settings
    assert fig.to_json() == page.to_json()
    bound = [t for t in fig.data if t.marker.symbol == "triangle-up"]  # no shuffle reached them: p a bound
    assert len(bound) == 1 and len(bound[0].x) == int(scored.groups["p_value_bound"].sum()) > 0
    assert any(t.name == "smallest p = 0.01" for t in fig.data)
    ringed = scored.plot(fdr=0.2, highlight="digit_3")
    assert ringed.data[-1].name == "selected: digit_3" and "q ≤ 0.2" in ringed.data[0].name


def test_plot_null_draws_the_null_the_p_value_counted(scored):
    null = scored.null_maps("digit_3")
    assert isinstance(null, np.ndarray) and null.size == 99  # null_maps keeps returning the array
    fig = scored.plot_null("digit_3")
    bars = fig.data[0]
    assert bars.type == "bar" and int(np.asarray(bars.customdata)[:, 2].sum()) == 99
    row = scored.groups.loc[scored.groups[PCOL] == "digit_3"].iloc[0]
    assert fig.data[1].name == f"observed mAP = {row['mAP']:.4f}"
    with pytest.raises(ValueError, match="not a scored perturbation"):
        scored.plot_null("digit_7")


def test_consistency_and_compare_plots(consistent, compared):
    fig = consistent.plot()
    assert isinstance(fig, go.Figure) and fig.layout.title.text.startswith("Consistency")
    assert sum(len(t.x) for t in fig.data[:2]) == len(consistent.labels)
    null = consistent.plot_null("target_A")
    assert null.data[0].type == "bar" and null.layout.title.text.startswith("target_A")
    fig = compared.plot()
    assert isinstance(fig, go.Figure)
    assert sum(len(t.x) for t in fig.data if t.mode == "markers") == len(compared.groups)
    with pytest.raises(ValueError, match="no fdr or highlight"):
        compared.plot(fdr=0.1)


def test_importing_the_scoring_library_loads_no_plotly():
    code = "import sys, apnull, apnull.score; print('plotly' in sys.modules, 'streamlit' in sys.modules)"
    done = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=120)
    assert done.stdout.split() == ["False", "False"], done.stderr[-1000:]


# -- progress ------------------------------------------------------------------------------------------

INFO = RoundInfo(number=1, units=3, label="perturbations", target=400, draws_so_far=1_100, draws_at_most=900,
                 estimate=2.0)


def test_the_command_line_and_the_library_say_a_round_in_the_same_words():
    err = io.StringIO()
    cli = live.LineProgress(err, command="apnull score", label="perturbations")  # the command line's
    cli.round(INFO)
    assert err.getvalue() == f"apnull score: {live.round_line(INFO)}\n"
    assert live.round_line(INFO) == ("round 2: 3 perturbations near the decision line, refined to 400 draws each "
                                     "(1,100 draws so far; at most 900 more, about 2 s)")
    err = io.StringIO()
    lines = live.LineProgress(err, after=0.0)
    lines.round(INFO)
    lines(5, 5)
    assert err.getvalue().splitlines() == [live.round_line(INFO), live.count_line("perturbations", 5, 5, 0)]


def test_progress_true_in_jupyter_shows_one_bar_updated_in_place(jupyter, capsys):
    assert live.in_notebook()
    res = score_profiles(digits_screen(), perturbation=PCOL, stratum="Metadata_plate", permutations=19, seed=0,
                         progress=True)
    assert jupyter[0][0] == "display" and all(kind == "update" for kind, _ in jupyter[1:])
    last = jupyter[-1][1]
    # the draws the run spent, as its tables count them (the bar shows the line at once, however quick the run)
    assert f"draws spent: {int(res.groups['permutations'].sum()):,} mAP draws ({len(res.groups)} perturbations)" in last
    # the run's last stage: the queries' conditional null, counted by perturbation
    assert "<progress value='11' max='11'" in last
    assert "perturbations (conditional null of their queries): 11 of 11" in last
    assert capsys.readouterr().err == ""  # nothing on stderr in a notebook


def test_an_adaptive_run_in_jupyter_lists_its_rounds(jupyter):
    bar = live.NotebookProgress(every=0.0)
    bar.round(RoundInfo(0, 11, "perturbations", 100, 0, 1100, None))
    bar(11, 11)
    bar.round(INFO)
    bar(3, 3)
    assert html.escape(live.round_line(INFO)) in jupyter[-1][1]


@pytest.mark.parametrize("off", [None, False])
def test_progress_off_shows_nothing(jupyter, capsys, off):
    score_profiles(digits_screen(), perturbation=PCOL, stratum="Metadata_plate", permutations=19, seed=0,
                   progress=off)
    assert jupyter == [] and capsys.readouterr().err == ""


def test_progress_true_outside_jupyter_writes_lines(capsys, monkeypatch):
    monkeypatch.setattr(live, "in_notebook", lambda: False)
    reporter = live.default_progress()
    assert isinstance(reporter, live.LineProgress)
    with pytest.raises(ValueError, match="progress must be True, False, None or a function"):
        score_profiles(digits_screen(), perturbation=PCOL, progress="yes")


class _Terminal(io.StringIO):
    def isatty(self):
        return True


def test_two_nulls_lines_name_their_null_and_table_and_overwrite_whole():
    """A reporter made for a null beside (``beside``) and the run's own name their null while both run, keep a
    comparison's table (:class:`Scoped`), and name no null once the other is done; on a terminal a count line
    written over a longer one covers all of it, and any other line ends the count line first."""
    from apnull.score.engine.clock import Scoped

    for err in (io.StringIO(), _Terminal()):
        run = Scoped(live.LineProgress(err, after=0.0, every=0.0, command="apnull compare"), "table A")
        twin = run.beside("mAP null", "per-query null")
        twin.stage("perturbations (conditional null of their queries)")
        twin(1, 2)
        run(3, 4)
        run.round(INFO)
        run.alone()
        run(4, 4)
        want = ["apnull compare: table A, per-query null: perturbations (conditional null of their queries): 1 of 2 "
                "(0 s)", "apnull compare: table A, mAP null: perturbations: 3 of 4 (0 s)",
                f"apnull compare: table A, mAP null: {live.round_line(INFO)}",
                "apnull compare: table A: perturbations: 4 of 4 (0 s)"]
        if isinstance(err, _Terminal):
            assert err.getvalue() == ("\r" + want[0] + "\r" + want[1].ljust(len(want[0])) + "\n" + want[2] + "\n"
                                      + "\r" + want[3] + "\n")
        else:
            assert err.getvalue().splitlines() == want
