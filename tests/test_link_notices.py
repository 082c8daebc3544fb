"""A link value a page cannot use is named under its input (apnull.ui.widgets.say_unused_link_value).

Streamlit ignores a URL value its widget cannot take (a negative count, text in a number, an unknown
choice) and shows the default: the link then does not reproduce the view it came from. The page says so,
naming the value, what the input takes and what it shows instead, until the input is changed.
"""

from __future__ import annotations

from apptest import exceptions, open_page, set_widget

NOTICE = "was not used:"


def _notices(at) -> list[str]:
    return [w.value for w in at.warning if NOTICE in w.value]


def test_a_number_the_link_cannot_use_is_named_until_the_input_changes():
    at = open_page("densities", {"dn_M": "-4", "dn_N": "abc", "dn_K": "3"})
    assert not at.exception, exceptions(at)
    notes = _notices(at)
    assert len(notes) == 2, notes
    assert notes[0] == ("The link's value `dn_M=-4` was not used: M (positives at i = 1) takes whole numbers of "
                        "at least 1; showing 4."), notes[0]
    assert "`dn_N=abc`" in notes[1] and notes[1].endswith("; showing 30."), notes[1]
    at.run()  # Streamlit has dropped the values from the URL: the notices stay
    assert len(_notices(at)) == 2
    set_widget(at, "dn_M", 5)
    at.run()
    notes = _notices(at)
    assert len(notes) == 1 and "dn_N" in notes[0], notes


def test_a_count_of_positives_starts_at_one_on_every_page():
    """No positives leave AP undefined: each page's input takes what the library takes (at least 1)."""
    for page, key in (("densities", "dn_M"), ("quantiles", "qt_M"), ("hypergeometric", "hg_m"),
                      ("binning", "bn_m"), ("lookup", "lk_m")):
        at = open_page(page, {key: "0"})
        assert not at.exception, exceptions(at)
        notes = _notices(at)
        assert len(notes) == 1 and f"`{key}=0`" in notes[0] and "at least 1;" in notes[0], (page, notes)


def test_a_choice_the_link_cannot_use_is_named_with_the_choices():
    at = open_page("quantiles", {"qt_method": "nonsense"})
    notes = _notices(at)
    assert len(notes) == 1, notes
    assert "`qt_method=nonsense`" in notes[0], notes[0]
    assert "takes one of Monte Carlo, exact law; showing Monte Carlo." in notes[0], notes[0]


def test_values_the_link_can_use_give_no_notice():
    assert not _notices(open_page("quantiles", {"qt_method": "exact law", "qt_K": "3", "qt_M": "2"}))
    assert not _notices(open_page("densities", {"dn_M": "5", "dn_K": "3", "dn_draws": "500"}))
    assert not _notices(open_page("lookup", {"lk_level": "alpha", "lk_method": "grid", "lk_q": "0.9"}))


def test_a_long_value_is_quoted_short():
    at = open_page("densities", {"dn_N": "7" * 100_000, "dn_K": "3"})
    notes = _notices(at)
    assert len(notes) == 1 and "100,000 characters" in notes[0] and len(notes[0]) < 400, notes


def test_a_toggle_the_link_cannot_use_is_named():
    at = open_page("densities", {"dn_exact": "maybe", "dn_K": "3"})
    notes = _notices(at)
    assert len(notes) == 1 and "`dn_exact=maybe`" in notes[0] and "true or false" in notes[0], notes
    assert notes[0].endswith("takes true or false; showing off."), notes[0]
    assert not _notices(open_page("densities", {"dn_exact": "true", "dn_K": "3"}))


def test_a_change_sent_with_the_url_it_replaces_gives_no_notice():
    """A client may rerun with the URL it had before the change (the link's dn_M=6 sent with the new M = 8):
    the widget takes the change and the URL follows it, so nothing of the link went unused. The notice used
    to name dn_M=6 here, and a rerun with a stale query string made it appear under any changed input."""
    at = open_page("densities", {"dn_M": "6", "dn_K": "3"})
    assert not _notices(at)
    set_widget(at, "dn_M", 8)
    at.run()
    assert dict(at.query_params).get("dn_M") == "6", at.query_params  # the run was asked with the old URL
    assert not _notices(at), _notices(at)
