"""Browser: page-local URL parameters and hostile URLs.

- The walk: open every page with every input changed (its own prefixed parameters in the URL, plus one
  input typed by hand), then click through the sidebar to every page. No page shows an exception, a new
  error, or another page's parameter in the address bar.
- Hostile URLs: a sample of bad values (empty, negative, 1e308, NaN, text, unknown option, 100 kB,
  repeated key) on a few pages: defaults or an st.error, never an exception; the server keeps answering.
  Screenshots go to artifacts/screenshots/hostile_*.png and walk_*.png.
"""

from __future__ import annotations

import urllib.parse

import pytest

from apnull.ui.state import PAGE_PARAMS, foreign_params
from harness import assert_no_exception, goto, navigate, page_problems, query_params, screenshot, set_number_input

#: page -> (sidebar title, every input changed, as URL parameters; one number input to type by hand)
WALK = {
    "densities": ("Null densities", dict(dn_M=3, dn_N=12, dn_K=3, dn_draws=500, dn_seed=5, dn_exact="true"),
                  ("number of sizes K", 2)),
    "quantiles": ("Quantiles vs size", dict(qt_M=3, qt_N=12, qt_K=3, qt_draws=500, qt_seed=5, qt_method="exact law"),
                  ("number of sizes K", 2)),
    "lookup": ("Threshold lookup", dict(lk_m=6, lk_n=40, lk_level="alpha", lk_alpha=0.01, lk_method="grid",
                                        lk_ap=0.5, lk_pr=0.4, lk_draws=100000, lk_seed=0), ("n (negatives)", 41)),
    "binning": ("Binning n", dict(bn_power=1.5, bn_max=100, bn_rep="middle", bn_m=3, bn_q=0.9, bn_metric="pr"),
                ("m (positives)", 4)),
    "hypergeometric": ("Hypergeometric check", dict(hg_m=5, hg_n=20, hg_k=3, hg_draws=1000, hg_seed=5),
                       ("k (top positions)", 4)),
    "ranking": ("Ranking editor", dict(rk_k=2, rk_preset="Random", rk_seed=3), None),
    "sampled": ("Sampled metrics", dict(sm_n=2000, sm_s=50, sm_k=5, sm_sampling="without replacement",
                                        sm_metric="NDCG", sm_ranks_A="1, 2, 3", sm_ranks_B="4, 5", sm_ranks_C="6",
                                        sm_simulate="true", sm_reps=200),
                ("s (sampled irrelevant items)", 40)),
    "score": ("Score your data", dict(sc_similarity="correlation", sc_seed=3, sc_fdr=0.1), None),
}
ERROR = '[data-testid="stAlertContentError"]'
WARNING = '[data-testid="stAlertContentWarning"]'


def _errors(page) -> list[str]:
    return [e.inner_text() for e in page.locator(ERROR).all()]


def _link_notices(page) -> list[str]:
    """Warnings that a link value could not be used (apnull.ui.widgets.say_unused_link_value)."""
    return [t for t in (w.inner_text() for w in page.locator(WARNING).all()) if "was not used:" in t]


def _path(page) -> str:
    return urllib.parse.urlsplit(page.url).path.strip("/")


def test_walk_every_page_after_changing_every_input(app_url, page):
    for path, (title, params, typed) in WALK.items():  # change every input of every page
        goto(page, app_url, path, **params)
        assert_no_exception(page)
        assert not _errors(page), (path, _errors(page))
        assert not _link_notices(page), (path, _link_notices(page))  # every value of the link was used
        if typed:
            set_number_input(page, typed[0], typed[1])
            assert_no_exception(page)
        assert not foreign_params(path, query_params(page)), (path, query_params(page))
    screenshot(page, "walk_last_page_changed")
    order = list(WALK)
    for path in order + order[::-1]:  # then click through the sidebar, both directions
        navigate(page, WALK[path][0])
        assert _path(page) == path
        assert_no_exception(page)
        assert not _errors(page), (path, _errors(page))
        params = query_params(page)
        assert not foreign_params(path, params), (path, params)
    screenshot(page, "walk_back_on_densities")


def test_reported_lookup_grid_then_quantiles(app_url, page):
    goto(page, app_url, "lookup", lk_method="grid", lk_draws=100000, lk_seed=0)
    assert_no_exception(page)
    navigate(page, "Quantiles vs size")
    assert_no_exception(page)
    assert not _errors(page)
    assert query_params(page) == {}
    screenshot(page, "walk_quantiles_after_lookup")


def test_pasted_link_with_foreign_parameters_keeps_only_its_own(app_url, page):
    goto(page, app_url, "quantiles", qt_K=3, lk_draws=100000, draws=100000, seed=0, method="grid", foo="bar")
    assert_no_exception(page)
    assert not _errors(page)
    assert query_params(page) == {"qt_K": "3"}


def test_a_link_value_the_page_cannot_use_is_named(app_url, page):
    goto(page, app_url, "densities", dn_M=-4, dn_K=3)
    assert_no_exception(page)
    notices = _link_notices(page)
    assert len(notices) == 1 and "dn_M=-4" in notices[0] and notices[0].endswith("; showing 4."), notices
    assert "dn_M" not in query_params(page)  # Streamlit dropped it; the notice says so
    screenshot(page, "link_value_not_used", full_page=False)
    set_number_input(page, "M (positives at i = 1)", 6)  # the input changed: the notice has said its piece
    assert_no_exception(page)
    assert not _link_notices(page), _link_notices(page)
    set_number_input(page, "M (positives at i = 1)", 8)  # a change sent while the URL still says dn_M=6
    assert not _link_notices(page), _link_notices(page)
    assert query_params(page).get("dn_M") == "8"


HOSTILE = [  # (page, parameters); sampled from tests/test_hostile_urls.py's table
    ("densities", dict(dn_K="1e308")),
    ("densities", dict(dn_draws="-1")),
    ("quantiles", dict(qt_method="no such option", qt_K="nan")),
    ("lookup", dict(lk_m="abc", lk_n="", lk_q="nan")),
    ("lookup", dict(lk_ap="1e308")),
    ("lookup", dict(lk_draws="9" * 100_000)),
    ("binning", dict(bn_power="1e308")),
    ("hypergeometric", dict(hg_k=["2", "3"], hg_m="-5")),
    ("ranking", dict(r="x" * 100_000)),
    ("ranking", dict(rk_k="nan", rk_preset="no such option")),
    ("sampled", dict(sm_ranks_A="x" * 100_000)),
    ("sampled", dict(sm_n="1e308", sm_metric="nan")),
]


@pytest.mark.parametrize("path, params", HOSTILE, ids=[f"{p}-{'-'.join(q)}" for p, q in HOSTILE])
def test_hostile_url(app_url, page, path, params):
    goto(page, app_url, path, **params)
    problems = page_problems(page)
    assert not problems, problems
    for text in _errors(page):
        assert text.strip() and len(text) < 2_000, text[:200]
    assert set(query_params(page)) <= PAGE_PARAMS[path]
    name = f"hostile_{path}_{'_'.join(sorted(params))}"
    screenshot(page, name, full_page=False)
    goto(page, app_url, path)  # the server keeps answering
    assert_no_exception(page)
