"""Bounded cache of the "Threshold lookup" page: everything the page shows for one input set.

The null laws themselves are in the library's cache (:func:`apnull.ui.cache.null_law`); what a rerun
would otherwise do again on every run (quantiles at five levels, the p-values with their far-tail
counting, the thresholds table, the two figures) is kept per input set in ``VIEWS``, a
:class:`apnull.memo.Memo` of 256 entries and 16 MB (a view is a few kB plus its two figures, under
100 kB for the widest exact laws). Values are shared and only read by the page.
"""

from __future__ import annotations

from typing import NamedTuple

import pandas as pd

from ..memo import Memo, rough_nbytes
from ..significance import choose_method, resolved_pvalue, resolved_threshold
from .cache import cached_law_figure, moments, null_law
from .pageview import PageView

__all__ = ["LookupView", "TABLE_LEVELS", "VIEWS", "lookup_view", "law_words", "pvalue_words",
           "threshold_words"]

#: Levels q of the thresholds table (the chosen q is added).
TABLE_LEVELS = (0.75, 0.90, 0.95, 0.99)
VIEWS = Memo(256, max_bytes=16 * 2**20, sizeof=rough_nbytes)


class LookupView(NamedTuple):
    """The lookup page for one input set: per metric ("ap", "pr") the law's words, threshold at the
    level (``apnull.significance.resolved_threshold``), resolved p-value of the observed score with
    its note, and figure; the closed-form moments of AP; the thresholds table. Words come as (plain
    text, technical text for its tooltip) pairs: ``methods``, ``notes`` and ``threshold_notes`` (None
    where the law's own quantile answered). The laws themselves stay in the library's bounded cache."""

    methods: dict
    thresholds: dict
    tails: dict
    notes: dict
    figures: dict
    mean_ap: float
    sd_ap: float
    table: pd.DataFrame  # the CSV
    shown: pd.DataFrame  # its columns q, alpha, ap_threshold, pr_threshold (displayed)
    threshold_notes: dict = {}


def _key(m, n, q, method, observed, draws, seed, alpha=None) -> tuple:
    return (m, n, q, method, observed["ap"], observed["pr"], draws, seed, alpha)


def law_words(law) -> tuple[str, str]:
    """How a law was computed: (plain words, the technical description for a tooltip)."""
    tech = law.describe()
    if law.method == "exact":
        return tech, "Exact law: every placement of the m positives among the m + n ranks counted (or its closed form)."
    if law.method == "grid":
        return (f"computed on a fine grid, thresholds within ±{law.error_bound:.2g} of the exact ones",
                f"{tech}: the AP law computed on {law.grid_size:,} cells of [0, 1]; every quantile is guaranteed "
                "within the error bound m/G of the exact one.")
    return tech, (f"{tech}: the law estimated from that many random rankings; the same seed gives the same "
                  "draws. Its thresholds and p-values carry sampling error.")


def pvalue_words(tail, law) -> tuple[str, str]:
    """How sure a p-value is (``tail`` from :func:`apnull.significance.resolved_pvalue`): (plain words,
    technical detail for a tooltip)."""
    lo, hi = f"{tail.low:.4g}", f"{tail.high:.4g}"
    if tail.underflows:
        lo, hi = f"10^{tail.log10_low:.4f}", f"10^{tail.log10_high:.4f}"
    if tail.source == "exact":
        return "exact", "Exact: counted from every placement (Precision@R: the hypergeometric law)."
    if tail.source == "grid":
        return (f"guaranteed interval [{lo}, {hi}] (the grid law's error bound)",
                "The exact p lies in this interval: the grid moves each value by less than its error bound.")
    if tail.source == "tail count":
        why = ("too small for ordinary floats, so it was counted in log space" if law.method == "exact" else
               "too rare for the grid or random draws, so the rankings that reach it were counted")
        return (f"guaranteed interval [{lo}, {hi}] (far tail counted: {why})",
                f"Far tail counted: relative error {tail.rel_error:.1g}, log10 p = {tail.log10_p:.4f} "
                f"(in [{tail.log10_low:.4f}, {tail.log10_high:.4f}]); the counting runs in log space, so it holds "
                "below the smallest float too.")
    draws = f"{law.draws.size:,} draws" if law.draws is not None else "draws"
    if tail.source == "mc bound":
        return (f"95% interval [{lo}, {hi}] (none of {draws} reached it, and it is too far out to count)",
                "A 95% Wilson interval of the Monte Carlo share; counting the far tail would take too long here.")
    return (f"95% interval [{lo}, {hi}] ({draws})",
            "A 95% Wilson interval for the share of random rankings scoring at least this.")


def threshold_words(thr, law) -> tuple[str, str] | None:
    """Where a threshold came from when the law's own quantile did not give it: (plain words,
    technical detail), else None."""
    if thr.source == "tail count" and thr.low == thr.high:
        return ("counted exactly from the far tail (too far out for the law's own quantile)",
                f"alpha = {thr.alpha:.3g} is below what the {law.describe()} law resolves (alpha >= "
                f"{thr.law_floor:.3g}); the threshold comes from the tail counted in log space.")
    if thr.source == "tail count":
        return (f"counted from the far tail: the exact threshold lies in [{thr.low:.5g}, {thr.high:.5g}]",
                f"alpha = {thr.alpha:.3g} is below what the {law.describe()} law resolves (alpha >= "
                f"{thr.law_floor:.3g}); the threshold is the smallest value whose counted tail bound is <= alpha.")
    if thr.source == "exact" and law.method != "exact":
        return ("exact (closed form)", f"For m = 1 (or n = 0) the threshold has a closed form; the "
                                       f"{law.describe()} law is used for the rest.")
    return None


def lookup_thresholds(m: int, n: int, q: float, laws: dict, levels=TABLE_LEVELS, chosen: dict | None = None,
                     alpha: float | None = None) -> pd.DataFrame:
    """Thresholds of AP and Precision@R at the levels ``levels`` and ``q``: columns m, n, q, alpha
    (1 - q), ap_threshold, pr_threshold (each law's q-quantile), ap_method, pr_method. ``chosen``
    (``{metric: threshold}``) gives the row of the page's own level as the page shows it (from
    :func:`apnull.significance.resolved_threshold`, which may count the far tail), with ``alpha``
    exact when the level was given as alpha."""
    rows = {round(x, 12): (round(1 - x, 12), None) for x in levels}
    rows[round(q, 12)] = (round(1 - q, 12) if alpha is None else alpha, chosen)
    qs = sorted(rows)

    def value(metric, x):
        given = rows[x][1]
        return float(given[metric]) if given is not None else float(laws[metric].quantile(x))

    return pd.DataFrame({
        "m": m, "n": n, "q": qs, "alpha": [rows[x][0] for x in qs],
        "ap_threshold": [value("ap", x) for x in qs], "pr_threshold": [value("pr", x) for x in qs],
        "ap_method": laws["ap"].describe(), "pr_method": laws["pr"].describe(),
    })


def _view(m: int, n: int, q: float, method: str, observed: dict, draws: int, seed: int,
          alpha: float | None = None) -> LookupView:
    """The page's view for checked inputs: sizes (m, n), level q (or ``alpha`` = 1 - q, kept exactly
    when given), the method asked for, the observed scores ``{"ap": .., "pr": ..}`` and the Monte
    Carlo draws and seed (used only by a law that is Monte Carlo, and kept out of the other laws'
    cache keys). Raises ValueError for a level the laws cannot answer (see
    :func:`apnull.significance.resolved_threshold`)."""
    level = {"q": q} if alpha is None else {"alpha": alpha}

    def build():
        laws, figures, thresholds, tails, notes, tnotes = {}, {}, {}, {}, {}, {}
        mean_ap, sd_ap = moments(m, n)
        for metric in ("ap", "pr"):
            mc_args = (draws, seed) if choose_method(m, n, metric, method) == "mc" else (None, 0)
            law = laws[metric] = null_law(m, n, metric, method, *mc_args)
            thr = resolved_threshold(law, **level)
            t = thresholds[metric] = thr.value
            tnotes[metric] = threshold_words(thr, law)
            tails[metric] = resolved_pvalue(observed[metric], law)  # counted where the law cannot resolve a far tail
            notes[metric] = pvalue_words(tails[metric], law)
            mean = mean_ap if metric == "ap" else m / (m + n)
            shown_q = q if alpha is None or alpha >= 1e-6 else None  # "100%" would name no level
            figures[metric] = cached_law_figure(m, n, metric, method, *mc_args, t, observed[metric], mean, shown_q)
        table = lookup_thresholds(m, n, q, laws, chosen=thresholds, alpha=alpha)
        return LookupView({metric: law_words(law) for metric, law in laws.items()}, thresholds, tails, notes,
                          figures, mean_ap, sd_ap, table, table[["q", "alpha", "ap_threshold", "pr_threshold"]], tnotes)

    return build()


#: the page's view of (m, n, q, method, observed, draws, seed, alpha) (``lookup_view.ready(...)``: stored)
lookup_view = PageView(VIEWS, _view, key=_key)
