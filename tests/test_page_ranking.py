"""The ranking editor page (app_pages/ranking.py) under AppTest: default view, presets, edits seeded
through the data editor's session state, the URL form, bad input and k."""

from __future__ import annotations

import base64
import json
from pathlib import Path

import numpy as np
import pytest
from streamlit.testing.v1 import AppTest

import apnull
import apptest
from apnull import metrics as mt
from apnull.views import ranking as rk

LABELS = {"ap": "AP", "r_precision": "R-precision", "auc": "AUC", "rr": "RR", "precision_at_k": "P@{k}",
          "recall_at_k": "R@{k}", "f1_at_k": "F1@{k}", "ap_at_k": "AP@{k}", "ndcg_at_k": "NDCG@{k}"}


def open_page(**query) -> AppTest:
    """The ranking page through dashboard.py with ``query`` in the URL (k, preset, seed get the rk_ prefix)."""
    return apptest.open_page("ranking", {k if k == "r" else "rk_" + k: v for k, v in query.items()}, timeout=60)


def ok(at: AppTest) -> None:
    assert not at.exception, [e.value for e in at.exception]


def cards(at: AppTest) -> dict[str, str]:
    return {m.label: m.value for m in at.metric}


def table(at: AppTest):
    return next(d for d in at.dataframe if d.editing_mode == "read_only").value


def editor(at: AppTest):
    (ed,) = at.data_editor
    return ed


def ranking_shown(at: AppTest) -> list[tuple[str, bool]]:
    t = table(at)
    return list(zip(t["item"].tolist(), [bool(x) for x in t["relevant"]]))


def edit(at: AppTest, edited_rows=None, added_rows=None, deleted_rows=None) -> AppTest:
    """One more edit in the current editor, on top of its earlier edits (as the browser sends them)."""
    key = editor(at).key
    state = at.session_state[key] if key in at.session_state else {}
    rows = {int(i): dict(v) for i, v in (state.get("edited_rows") or {}).items()}
    for i, change in (edited_rows or {}).items():
        rows.setdefault(int(i), {}).update(change)
    at.session_state[key] = {"edited_rows": rows,
                             "added_rows": list(state.get("added_rows") or []) + list(added_rows or []),
                             "deleted_rows": sorted(set(state.get("deleted_rows") or []) | set(deleted_rows or []))}
    return at.run()


def pr_spec(at: AppTest) -> dict:
    charts = at.get("plotly_chart")
    return json.loads(charts[0].proto.spec)


def array(v) -> np.ndarray:
    """A plotly JSON array: a list, or plotly's typed-array form {"dtype", "bdata"}."""
    if isinstance(v, dict) and "bdata" in v:
        return np.frombuffer(base64.b64decode(v["bdata"]), dtype=np.dtype(v["dtype"]))
    return np.asarray(v, dtype=float)


def errors(at: AppTest) -> list[str]:
    return [e.value for e in at.error]


def expected_cards(rel, k) -> dict[str, str]:
    out = {}
    for key, value in rk.metric_values(rel, k).items():
        out[LABELS[key].format(k=k)] = "—" if value is None else f"{value:.4f}"
    return out


# --- default view: the precision-recall example -----------------------------------------------------------------
def test_default_is_the_precision_recall_example():
    at = open_page()
    ok(at)
    assert errors(at) == []
    assert at.title[0].value == "Ranking editor"
    assert ranking_shown(at) == list(rk.PR_EXAMPLE)
    t = table(at)
    assert list(t.columns) == ["rank", "item", "relevant", "precision@k", "recall@k", "in top k"]
    assert t["rank"].tolist() == [1, 2, 3, 4, 5, 6]
    assert t["in top k"].tolist() == [True, True, True, False, False, False]  # k = 3
    assert np.allclose(t["precision@k"], [0, 1 / 2, 1 / 3, 2 / 4, 3 / 5, 3 / 6])
    assert np.allclose(t["recall@k"], [0, 1 / 3, 1 / 3, 2 / 3, 1, 1])
    # AP = (1/2 + 2/4 + 3/5) / 3 = 8/15
    assert cards(at)["AP"] == "0.5333" == f"{(1 / 2 + 2 / 4 + 3 / 5) / 3:.4f}"
    assert cards(at) == expected_cards(rk.relevance(rk.PR_EXAMPLE), 3)
    # the editor starts on the same ranking, positions 1..6
    ed = editor(at).value
    assert ed["position"].tolist() == [1, 2, 3, 4, 5, 6]
    assert ed["item"].tolist() == list("xaybcz")
    assert editor(at).editing_mode == "dynamic"
    # no r in the URL for the default ranking
    assert "r" not in at.query_params


def test_default_figures_and_p_value_line():
    at = open_page()
    spec = pr_spec(at)
    area = next(t for t in spec["data"] if t.get("fill") == "tozeroy")
    assert np.trapezoid(array(area["y"]), array(area["x"])) == pytest.approx(8 / 15)
    assert len(at.get("plotly_chart")) == 2
    text = " ".join(m.value for m in at.markdown)
    # exact law of (3, 3): 14 of the 20 placements score >= 8/15
    assert "AP = 0.5333** with m = 3 relevant and n = 3" in text
    assert "p = 0.7 (14 of the 20 placements)" in text
    assert "percentile 30.0" in text and "Method: exact" in text
    assert at.get("download_button")


# --- presets -----------------------------------------------------------------------------------
def test_each_preset_changes_the_table():
    at = open_page()
    seen = {tuple(ranking_shown(at))}
    at.radio(key="rk_preset").set_value("Perfect").run()
    ok(at)
    assert ranking_shown(at) == rk.perfect(rk.PR_EXAMPLE)
    assert cards(at)["AP"] == "1.0000"
    assert at.query_params["r"] == "a:1,b:1,c:1,x:0,y:0,z:0"
    seen.add(tuple(ranking_shown(at)))

    at.radio(key="rk_preset").set_value("Worst").run()
    ok(at)
    assert ranking_shown(at) == rk.worst(rk.PR_EXAMPLE)
    assert cards(at)["AP"] == f"{(1 / 4 + 2 / 5 + 3 / 6) / 3:.4f}"
    seen.add(tuple(ranking_shown(at)))

    at.radio(key="rk_preset").set_value("Random").run()
    ok(at)
    shuffled = rk.shuffled(rk.worst(rk.PR_EXAMPLE), 0)
    assert ranking_shown(at) == shuffled
    seen.add(tuple(ranking_shown(at)))

    at.radio(key="rk_preset").set_value("MAP tutorial models").run()
    ok(at)
    assert ranking_shown(at) == rk.tutorial_ranking("model 1")
    assert cards(at)["AP"] == "0.5000"
    seen.add(tuple(ranking_shown(at)))
    at.radio(key="rk_model").set_value("model 3").run()
    assert cards(at)["AP"] == f"{(1 / 9 + 2 / 10) / 2:.4f}"
    at.radio(key="rk_model").set_value("model 2").run()
    assert cards(at)["AP"] == "1.0000"
    assert cards(at)["R@3"] == "1.0000"

    at.radio(key="rk_preset").set_value("Precision-recall example").run()
    ok(at)
    assert ranking_shown(at) == list(rk.PR_EXAMPLE)
    assert len(seen) == 5


def test_random_preset_is_seeded_and_shuffles_again():
    at = open_page()
    at.radio(key="rk_preset").set_value("Random").run()
    first = ranking_shown(at)
    assert first == rk.shuffled(rk.PR_EXAMPLE, 0)
    at.button(key="apply_again").click().run()
    ok(at)
    assert at.number_input(key="rk_seed").value == 1
    assert ranking_shown(at) == rk.shuffled(first, 1)
    # a link with the preset alone reproduces the shuffle of the example
    again = open_page(preset="Random", seed="1")
    ok(again)
    assert ranking_shown(again) == rk.shuffled(rk.PR_EXAMPLE, 1)


def test_apply_again_restores_a_preset_after_edits():
    at = open_page()
    at.radio(key="rk_preset").set_value("Perfect").run()
    edit(at, edited_rows={0: {"relevant": False}})  # a is no longer relevant
    assert cards(at)["AP"] != "1.0000"
    edit(at, edited_rows={4: {"position": 1}})  # move y to the top
    assert ranking_shown(at)[0] == ("y", False)
    at.button(key="apply_again").click().run()
    ok(at)
    assert cards(at)["AP"] == "1.0000"
    assert [rel for _, rel in ranking_shown(at)] == [True, True, False, False, False, False]


# --- edits ---------------------------------------------------------------------------------------
def test_toggling_relevance_changes_ap():
    at = open_page()
    edit(at, edited_rows={0: {"relevant": True}})  # x becomes relevant
    ok(at)
    rel = [True, True, False, True, True, False]
    assert [r for _, r in ranking_shown(at)] == rel
    assert cards(at)["AP"] == f"{mt.average_precision(rel):.4f}" == f"{(1 + 1 + 3 / 4 + 4 / 5) / 4:.4f}"
    assert at.query_params["r"] == "x:1,a:1,y:0,b:1,c:1,z:0"
    # a second edit on the same editor keeps the first
    edit(at, edited_rows={0: {"relevant": True}, 5: {"item": "zed"}})
    assert ranking_shown(at)[-1] == ("zed", False)
    assert [r for _, r in ranking_shown(at)] == rel


def test_one_click_on_a_pill_toggles_relevance_and_the_editor_follows():
    at = open_page()
    (pills,) = at.get("button_group")
    assert pills.value == [1, 3, 4]  # a, b, c: the relevant items by rank
    pills.set_value([0, 1, 3, 4]).run()  # one click on "1. x"
    ok(at)
    rel = [True, True, False, True, True, False]
    assert [r for _, r in ranking_shown(at)] == rel
    assert editor(at).value["relevant"].tolist() == rel
    assert cards(at)["AP"] == f"{mt.average_precision(rel):.4f}"
    assert at.query_params["r"] == "x:1,a:1,y:0,b:1,c:1,z:0"
    # a tick in the editor moves the pill too, and a click toggles back
    edit(at, edited_rows={2: {"relevant": True}})
    assert at.get("button_group")[0].value == [0, 1, 2, 3, 4]
    at.get("button_group")[0].set_value([1, 2, 3, 4]).run()
    ok(at)
    assert [r for _, r in ranking_shown(at)] == [False, True, True, True, True, False]


def test_position_edit_reorders_and_renumbers():
    at = open_page()
    before = editor(at).key
    edit(at, edited_rows={1: {"position": 5}})  # a: 2 -> 5
    ok(at)
    assert [i for i, _ in ranking_shown(at)] == list("xybcaz")
    # the editor was rebuilt on the new order, renumbered 1..6
    assert editor(at).key != before
    ed = editor(at).value
    assert ed["position"].tolist() == [1, 2, 3, 4, 5, 6] and ed["item"].tolist() == list("xybcaz")
    assert cards(at)["AP"] == f"{mt.average_precision([0, 0, 1, 1, 1, 0]):.4f}"
    edit(at, edited_rows={5: {"position": 1}})  # z to the top: the moved row wins the tie with x
    assert [i for i, _ in ranking_shown(at)] == list("zxybca")
    assert cards(at)["AP"] == f"{mt.average_precision([0, 0, 0, 1, 1, 1]):.4f}"


def test_add_and_delete_rows():
    at = open_page()
    edit(at, added_rows=[{"item": "w", "relevant": True}], deleted_rows=[0])
    ok(at)
    assert ranking_shown(at) == [("a", True), ("y", False), ("b", True), ("c", True), ("z", False), ("w", True)]
    assert editor(at).value["position"].tolist() == [1, 2, 3, 4, 5, 6]
    edit(at, added_rows=[{}])  # an empty new row gets a name and is not relevant
    assert ranking_shown(at)[-1] == ("item 7", False)


def test_session_state_ranking_is_shown():
    at = open_page()
    at.session_state["ranking"] = [("p", 1), ("q", 0), ("r", 1)]
    at.run()
    ok(at)
    assert ranking_shown(at) == [("p", True), ("q", False), ("r", True)]
    assert editor(at).value["item"].tolist() == ["p", "q", "r"]
    assert cards(at)["AP"] == f"{(1 + 2 / 3) / 2:.4f}"


# --- the URL ----------------------------------------------------------------------------------------
def test_url_reproduces_ranking_and_k():
    at = open_page(r="p:1,q:0,r%2Cs:1,t:0", k="2")
    ok(at)
    assert ranking_shown(at) == [("p", True), ("q", False), ("r,s", True), ("t", False)]
    assert at.number_input(key="rk_k").value == 2
    assert cards(at)["P@2"] == "0.5000"
    assert cards(at) == expected_cards([1, 0, 1, 0], 2)


def test_url_change_in_a_running_session():
    at = open_page()
    at.query_params["r"] = "0,1,1"
    at.run()
    ok(at)
    assert ranking_shown(at) == [("item 1", False), ("item 2", True), ("item 3", True)]
    assert at.query_params["r"] == "item 1:0,item 2:1,item 3:1"


def test_bad_url_falls_back_to_the_example():
    at = open_page(r="x:0,a:maybe")
    ok(at)
    (msg,) = errors(at)
    assert "could not be read" in msg and "entry 2" in msg and "x:0,a:1" in msg
    assert ranking_shown(at) == list(rk.PR_EXAMPLE)
    assert cards(at)["AP"] == "0.5333"


# --- bad input ----------------------------------------------------------------------------------
def test_empty_ranking_shows_an_error():
    at = open_page()
    edit(at, deleted_rows=[0, 1, 2, 3, 4, 5])
    ok(at)
    assert any("The ranking is empty: add at least one item" in e for e in errors(at))
    assert not at.get("plotly_chart") and not at.metric
    assert at.query_params["r"] == ""
    # the server keeps running: add an item back
    edit(at, added_rows=[{"item": "only", "relevant": True}])
    ok(at)
    assert errors(at) == ["k = 3 is outside the ranking: choose k between 1 and 1 (the ranking has 1 item)."]
    assert cards(at)["AP"] == "1.0000"
    # the empty ranking from a link
    at = open_page(r="")
    ok(at)
    assert any("empty" in e for e in errors(at))


def test_no_relevant_item_shows_an_error_and_the_precision():
    at = open_page(r="x:0,a:0,y:0")
    ok(at)
    assert any("tick **relevant** for at least one item" in e for e in errors(at))
    c = cards(at)
    assert c["P@3"] == "0.0000" and c["AP"] == "—" and c["R@3"] == "—"
    assert np.allclose(table(at)["precision@k"], 0)
    assert not at.get("plotly_chart")


def test_k_is_bound_and_checked():
    at = open_page()
    at.number_input(key="rk_k").set_value(5).run()
    ok(at)
    assert cards(at) == expected_cards(rk.relevance(rk.PR_EXAMPLE), 5)
    at.number_input(key="rk_k").set_value(7).run()
    ok(at)
    assert any("choose k between 1 and 6" in e for e in errors(at))
    c = cards(at)
    assert c["AP"] == "0.5333" and c["P@k"] == "—"
    assert at.get("plotly_chart")  # AP and its curve do not depend on k
    at = open_page(k="6")
    assert cards(at)["AP@6"] == cards(at)["AP"]


def test_larger_ranking_uses_the_grid_or_monte_carlo():
    rel = [1 if i % 4 == 0 else 0 for i in range(80)]
    at = open_page(r=",".join(str(x) for x in rel))
    ok(at)
    text = " ".join(m.value for m in at.markdown)
    assert "m = 20 relevant and n = 60" in text
    assert "Method: grid law" in text
    rel = [1 if i % 2 == 0 else 0 for i in range(400)]
    at = open_page(r=",".join(str(x) for x in rel))
    ok(at)
    text = " ".join(m.value for m in at.markdown)
    assert "Method: Monte Carlo: 20,000 random orderings (seed 0)" in text
    assert cards(at)["AP"] == f"{mt.average_precision(rel):.4f}"


def test_too_many_rows_show_an_error_and_keep_the_ranking():
    at = open_page()
    edit(at, added_rows=[{"item": f"w{i}"} for i in range(rk.MAX_RANKING_ITEMS)])
    ok(at)
    assert any("at most 1,000" in e and "remove some items" in e for e in errors(at))
    assert at.session_state["ranking"] == list(rk.PR_EXAMPLE)
    assert "r" not in at.query_params


def test_a_perfect_long_ranking_gets_its_counted_p_value():
    """200 relevant items first, 200 after: no random ordering of 20,000 reaches AP = 1; the page shows
    the counted p = 1 / C(400, 200), not the Monte Carlo floor."""
    import math

    rel = [1] * 200 + [0] * 200
    at = open_page(r=",".join(str(x) for x in rel))
    ok(at)
    text = " ".join(m.value for m in at.markdown)
    log10 = -math.log10(math.comb(400, 200))
    assert f"p = {10 ** log10:.4g}" in text
    assert "the far tail counted" in text and "random orderings reached it" not in text


@pytest.mark.parametrize("old, new, ranking", [
    ("Seed 001 example", "Precision-recall example", lambda: list(rk.PR_EXAMPLE)),
    ("Seed 002 models", "MAP tutorial models", lambda: rk.tutorial_ranking("model 2")),
])
def test_a_link_with_an_earlier_preset_name_opens_on_the_renamed_preset(old, new, ranking):
    at = open_page(preset=old, model="model 2")
    ok(at)
    assert at.radio(key="rk_preset").value == new
    # the address bar shows the new name (the default preset is left out of it, as every default)
    assert at.query_params.get("rk_preset") == (None if new == rk.PRESETS[0] else new)
    assert ranking_shown(at) == ranking()


def test_method_line_is_plain_with_the_technical_detail_in_its_tooltip():
    rel = [1 if i % 4 == 0 else 0 for i in range(80)]
    at = open_page(r=",".join(str(x) for x in rel))
    ok(at)
    line = next(m for m in at.markdown if m.value.startswith("Method: grid law"))
    assert "fine grid" in line.value and "G=" not in line.value
    law = apnull.null_distribution(20, 60)
    assert line.proto.help.startswith(law.describe())
    rel = [1] * 200 + [0] * 200
    at = open_page(r=",".join(str(x) for x in rel))
    ok(at)
    line = next(m for m in at.markdown if m.value.startswith("Method: the far tail counted"))
    assert "relative error" not in line.value and "relative error" in line.proto.help


def test_the_page_says_rows_are_reordered_by_position_not_dragged():
    """A teacher tried to drag a row: the editor cannot do that, and the words under it (and the intro)
    say how to reorder instead."""
    at = open_page()
    ok(at)
    captions = [c.value for c in at.caption]
    (help_text,) = [c for c in captions if "reorder" in c]
    assert "cannot be dragged" in help_text and "**position**" in help_text
    assert "type its new rank" in at.markdown[0].value


def test_the_warm_up_leaves_the_first_visit_built(monkeypatch):
    """The server's warm-up (first phase) builds what the page's first visit shows: the editor's frame, the
    view at the default k and the null position of the default ranking. The first visit then builds nothing
    (under a class, the first visitors waited for one another's build of it)."""
    from apnull.ui import ranking_cache as rc
    from apnull.ui import warmup

    for memo in (rc.RANKINGS, rc.NULLS, rc.FRAMES):
        memo.clear()
    warmup._other_default_views()  # the first phase's step for the pages' default views
    built = []
    for memo in (rc.RANKINGS, rc.NULLS, rc.FRAMES):
        real = memo.get_or_compute

        def counting(key, compute, real=real):
            return real(key, lambda: built.append(key) or compute())

        monkeypatch.setattr(memo, "get_or_compute", counting)
    at = open_page()
    ok(at)
    assert cards(at)["AP"] and not built, built
