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
from ..significance import choose_method, resolved_pvalue
from ..views.null import pvalue_note
from .cache import cached_law_figure, moments, null_law

__all__ = ["LookupView", "TABLE_LEVELS", "VIEWS", "lookup_view", "lookup_ready"]

#: Levels q of the thresholds table (the chosen q is added).
TABLE_LEVELS = (0.75, 0.90, 0.95, 0.99)
VIEWS = Memo(256, max_bytes=16 * 2**20, sizeof=rough_nbytes)


class LookupView(NamedTuple):
    """The lookup page for one input set: per metric ("ap", "pr") the law's description, threshold at q,
    resolved p-value of the observed score with its note, and figure; the closed-form moments of AP;
    the thresholds table. The laws themselves stay in the library's bounded cache."""

    methods: dict
    thresholds: dict
    tails: dict
    notes: dict
    figures: dict
    mean_ap: float
    sd_ap: float
    table: pd.DataFrame  # the CSV
    shown: pd.DataFrame  # its columns q, alpha, ap_threshold, pr_threshold (displayed)


def _key(m, n, q, method, observed, draws, seed) -> tuple:
    return (m, n, q, method, observed["ap"], observed["pr"], draws, seed)


def lookup_ready(m, n, q, method, observed, draws, seed) -> bool:
    """True when :func:`lookup_view` has this input set (it answers at once)."""
    return _key(m, n, q, method, observed, draws, seed) in VIEWS


def thresholds_table(m: int, n: int, q: float, laws: dict, levels=TABLE_LEVELS) -> pd.DataFrame:
    """Thresholds of AP and Precision@R at the levels ``levels`` and ``q``: columns m, n, q, alpha
    (1 - q), ap_threshold, pr_threshold (each law's q-quantile), ap_method, pr_method."""
    levels = sorted(set(levels) | {round(q, 12)})
    return pd.DataFrame({
        "m": m, "n": n, "q": levels, "alpha": [round(1 - x, 12) for x in levels],
        "ap_threshold": [float(laws["ap"].quantile(x)) for x in levels],
        "pr_threshold": [float(laws["pr"].quantile(x)) for x in levels],
        "ap_method": laws["ap"].describe(), "pr_method": laws["pr"].describe(),
    })


def lookup_view(m: int, n: int, q: float, method: str, observed: dict, draws: int, seed: int) -> LookupView:
    """The page's view for checked inputs: sizes (m, n), level q, the method asked for, the observed
    scores ``{"ap": .., "pr": ..}`` and the Monte Carlo draws and seed (used only by a law that is
    Monte Carlo, and kept out of the other laws' cache keys)."""
    def build():
        laws, figures, thresholds, tails, notes = {}, {}, {}, {}, {}
        mean_ap, sd_ap = moments(m, n)
        for metric in ("ap", "pr"):
            mc_args = (draws, seed) if choose_method(m, n, metric, method) == "mc" else (None, 0)
            law = laws[metric] = null_law(m, n, metric, method, *mc_args)
            t = thresholds[metric] = float(law.quantile(q))
            tails[metric] = resolved_pvalue(observed[metric], law)  # counted where the law cannot resolve a far tail
            notes[metric] = pvalue_note(tails[metric], law)
            mean = mean_ap if metric == "ap" else m / (m + n)
            figures[metric] = cached_law_figure(m, n, metric, method, *mc_args, t, observed[metric], mean, q)
        table = thresholds_table(m, n, q, laws)
        return LookupView({metric: law.describe() for metric, law in laws.items()}, thresholds, tails, notes, figures,
                          mean_ap, sd_ap, table, table[["q", "alpha", "ap_threshold", "pr_threshold"]])

    return VIEWS.get_or_compute(_key(m, n, q, method, observed, draws, seed), build)
