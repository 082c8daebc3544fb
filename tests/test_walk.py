"""Walk every page in one session: change every input of every page, then visit
every page again; no page may show a new error, an exception or another page's URL parameter.

One AppTest session goes through dashboard.py like a student clicking through the sidebar: on each page it
sets every input to a non-default value (``CHANGES``, keys without the page prefix), then it walks all
pages once more. Each page must look as it does when opened alone (no st.error that the clean page does
not show), and the URL must hold only parameters the page owns (``apnull.ui.state.PAGE_PARAMS``).
"""

from __future__ import annotations

import pytest

from apnull.ui.consistency_step import OPEN_KEY
from apnull.ui.state import PAGE_PARAMS, foreign_params
from apnull.views import score as score_view
from apnull.views.sampled import TABS as SAMPLED_TABS
from apptest import PREFIX, app, errors, exceptions, find_widget, open_page, set_widget

#: per page, (key without prefix, value) in the order a user would set them (later widgets may appear only
#: after an earlier choice, e.g. lookup's alpha after level = alpha); the time limits are 0.25 s: the
#: examples' adaptive draws run until the limit, and a walk needs no more of them
CHANGES = {
    "densities": [("M", 3), ("N", 12), ("K", 3), ("draws", 500), ("seed", 5), ("exact", True)],
    "quantiles": [("M", 3), ("N", 12), ("K", 3), ("draws", 500), ("seed", 5), ("method", "exact")],
    "lookup": [("m", 6), ("n", 40), ("q", 0.9), ("method", "grid"), ("ap", 0.5), ("pr", 0.4), ("draws", 20_000),
               ("seed", 5), ("level", "alpha"), ("alpha", 0.01)],
    "binning": [("power", 1.5), ("max", 100), ("rep", "middle"), ("m", 3), ("q", 0.9), ("metric", "pr")],
    "hypergeometric": [("m", 5), ("n", 20), ("k", 3), ("draws", 1000), ("seed", 5)],
    "ranking": [("k", 2), ("preset", "MAP tutorial models"), ("model", "model 2"), ("preset", "Random"), ("seed", 3)],
    "sampled": [("n", 2000), ("s", 50), ("k", 5), ("sampling", "without replacement"), ("metric", "ndcg"),
                ("ranks_range", "all n"), ("ranks_A", "1, 2, 3"), ("ranks_B", "4, 5"), ("ranks_C", "6"),
                ("simulate", True), ("reps", 200), ("sim_seed", 3)],
    "score": [("similarity", "correlation"), ("perms", 99), ("seed", 3), ("fdr", 0.1), ("nan", "leave out those rows"),
              ("negatives", "every other profile of its plate"), ("copairs", True), ("auto", True), ("budget", 0.25),
              ("null", "independent"), ("normalize", "per plate, against all its wells"),
              ("cs_aggregate", "mean"), ("cs_similarity", "correlation"), ("cs_perms", 99), ("cs_seed", 3),
              ("cs_fdr", 0.1), ("cs_scope", "active only (q ≤ FDR level above)")],
    "compare": [("similarity", "correlation"), ("perms", 99), ("seed", 3), ("alpha", 0.1),
                ("features_a", "^px_[0-5]"), ("features_b", "^half_0"), ("normalize", "per plate, against all its wells"),
                ("nan", "leave out those rows"), ("auto", True), ("budget", 0.25)],
}
#: the reported case: lookup with the grid method and its defaults, then every other page
REPORTED_LOOKUP = [("method", "grid"), ("draws", 100_000), ("seed", 0)]


def _visit(at, page):
    at.switch_page(f"app_pages/{page}.py").run()
    at.run()  # AppTest shows the URL of the run before; the second run shows what the page left in it
    return at


def _check_page(at, page, baseline, when):
    assert not at.exception, (when, page, exceptions(at))
    new = [e for e in errors(at) if e not in baseline.get(page, [])]
    assert not new, (when, page, new)
    foreign = foreign_params(page, at.query_params)
    assert not foreign, (when, page, foreign, dict(at.query_params))


def _change_everything(at, page):
    prefix = PREFIX[page]
    if page == "score":  # the consistency step's and the options' inputs are built while their box is open
        at.session_state[OPEN_KEY] = at.session_state["sc_more_open"] = True
    for key, value in CHANGES[page]:
        if find_widget(at, prefix + key) is None:
            at.run()
        if page == "sampled" and find_widget(at, prefix + key) is None:  # only the tab shown is built
            at.query_params["sm_tab"] = at.session_state["sm_tab"] = SAMPLED_TABS[1]  # the example's inputs
            at.run()
        set_widget(at, prefix + key, value)
        at.run()
        assert not at.exception, (page, key, exceptions(at))


@pytest.fixture(scope="module")
def baseline():
    """The st.error messages of each page opened alone with its defaults (none expected). The first run of a
    page in a clean clone compiles its kernels (numba's cache is empty): 111 s for the score page on a busy
    2-core machine, past a 120 s limit in one clean-clone run; the limit guards a hang, not the speed."""
    return {page: errors(open_page(page, timeout=600)) for page in CHANGES}


def test_changes_cover_every_page_and_input():
    assert set(CHANGES) == {p for p in PAGE_PARAMS if p}
    for page, steps in CHANGES.items():
        assert {PREFIX[page] + k for k, _ in steps} == PAGE_PARAMS[page] - {"r", "sc_data", "sc_pert", "sc_control",
                                                                           "sc_stratum", "sc_features", "sc_inspect",
                                                                           "sc_cs", "sc_cs_annotation", "sc_cs_sep", "sc_cs_label",
                                                                           "sc_pert_more", "sc_differ", "sc_hier",
                                                                           "cp_data", "cp_key", "cp_key2", "cp_pert",
                                                                           "cp_control", "cp_stratum",
                                                                           "sm_tab"}  # a tab: no AppTest widget


@pytest.mark.slow  # about 24 s of CPU on one worker, quiet: a whole-app walk, run with the full suite
def test_walk_all_pages_after_changing_every_input(baseline, monkeypatch):
    # the adaptive draws of the score and compare examples run until the time limit on (compare: 7 s of
    # the default 10): a default of 0.5 s (the pages read it on every run) spares the walk's CPU; the walk
    # then sets 0.25 s, still a change
    monkeypatch.setattr(score_view, "PAGE_BUDGET", 0.5)
    assert all(not errs for errs in baseline.values()), baseline
    at = app(timeout=120)
    at.run()
    pages = list(CHANGES)
    for page in pages:  # change every input of every page, one page after another
        _visit(at, page)
        _change_everything(at, page)
        assert not at.exception, (page, exceptions(at))
    for page in pages + pages[::-1]:  # then walk every page, in both directions
        _visit(at, page)
        _check_page(at, page, baseline, "walk")


def test_reported_lookup_grid_then_every_page(baseline):
    """Lookup with grid, draws = 100,000, seed = 0, then every page: no foreign error, no foreign parameter."""
    at = open_page("lookup", {"lk_method": "grid", "lk_draws": "100000", "lk_seed": "0"}, timeout=120)
    assert not at.exception and not at.error, errors(at)
    for key, value in REPORTED_LOOKUP:
        set_widget(at, PREFIX["lookup"] + key, value)
    at.run()
    for page in CHANGES:
        _visit(at, page)
        _check_page(at, page, baseline, "after lookup")


def test_a_pasted_link_with_foreign_parameters_opens_clean():
    """Another page's parameters (and unknown ones) in a link are dropped, the page's own are kept."""
    query = {"lk_draws": "100000", "dn_K": "200", "seed": "0", "draws": "100000", "method": "grid", "n": "30",
             "foo": "bar", "qt_K": "3"}
    at = open_page("quantiles", query, timeout=120)
    assert not at.exception and not at.error, errors(at)
    at.run()
    assert dict(at.query_params) == {"qt_K": "3"}
    assert len(at.dataframe[0].value) == 6  # K = 3 sizes x 2 metrics: the link's own parameter was used
