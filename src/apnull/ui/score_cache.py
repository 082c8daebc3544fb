"""The scoring page's shared caches and its table switch (the page stays thin; its uploads are
:mod:`apnull.ui.uploads`', shared with the comparison page, and its progress bar
:class:`apnull.ui.progress.ScoreProgress`).

Every cache is an :class:`apnull.memo.Memo` shared by all sessions of the server process, bounded
by entries and by bytes (least recently used dropped first):

- ``SCORES``: scoring results keyed by (file hash, settings); at most :data:`MAX_SCORES` = 8 results
  and :data:`MAX_SCORE_BYTES` = 512 MiB (feature matrix plus tables).
- ``PLANS``: the plan of a (file hash, columns) choice (:func:`apnull.score.screen_plan`); 32 plans.

A key asked for by several sessions at once is computed once: when a class of 30 presses **Score**
on the same example with the same settings together, one session scores (with the progress bar)
and the 29 others wait for its result (``Memo`` in-flight de-duplication). An error is not cached.
Cached values are shared and only read.

Each session keeps in ``st.session_state`` only small things: which table its inputs belong to, and
the inputs it set for the tables it left.
"""

from __future__ import annotations

from dataclasses import dataclass
from operator import attrgetter

import pandas as pd
import streamlit as st

from ..memo import Memo, rough_nbytes
from ..score import digits_example, hierarchical_bh, score_profiles, screen_plan
from ..views import score as view
from ..views import score_inputs as inputs
from .progress import ScoreProgress
from .state import inputs_follow
from .uploads import frame_bytes

__all__ = ["SCORES", "PLANS", "VIEWS", "MAX_SCORES", "MAX_SCORE_BYTES", "EXAMPLE_DIGEST", "UPLOAD_SLOT",
           "example_table", "table_choices", "label_choices", "stratum_choices", "ResultsView", "results_view",
           "inspected", "use_table", "cached_score", "score_once", "warm_example", "cached_plan", "cached_view"]

MAX_SCORES = 8
MAX_SCORE_BYTES = 512 << 20
#: the page's upload slot (:func:`apnull.ui.uploads.remember_upload`)
UPLOAD_SLOT = "score"
#: the cache key of the bundled example
EXAMPLE_DIGEST = "example"

SCORES = Memo(MAX_SCORES, MAX_SCORE_BYTES, sizeof=attrgetter("held_bytes"))
PLANS = Memo(32)
#: The page's figures and null summaries (the volcano plot, a perturbation's or a label's null), keyed
#: by the table's digest, the settings and the inputs each follows from: built once for all sessions
#: (a page rerun would otherwise rebuild four validated plotly figures and recompute a null), 256
#: entries and 64 MB at most.
VIEWS = Memo(256, max_bytes=64 * 2**20, sizeof=rough_nbytes)


def cached_view(key: tuple, build):
    """``build()``'s value stored for ``key`` (a tuple naming the view and everything it follows from),
    computed once when many sessions ask at once. Shared and read-only: callers only read it
    (``st.plotly_chart`` serialises a copy). Errors are not stored."""
    return VIEWS.get_or_compute(key, build)


def table_choices(digest: str, table: pd.DataFrame) -> tuple[dict, list]:
    """(the inputs a new table starts with, the perturbation column's choices) of the table ``digest``,
    worked out once per table instead of scanning its columns on every rerun."""
    return cached_view(("table_choices", digest), lambda: (inputs.table_defaults(table),
                                                           inputs.perturbation_options(table)))


def label_choices(digest: str, table: pd.DataFrame) -> list:
    """The table's label columns (:func:`apnull.views.score.label_columns`: the More options boxes'
    choices), once per table instead of testing every column's dtype on every rerun."""
    return cached_view(("label_columns", digest), lambda: view.label_columns(table))


def stratum_choices(digest: str, table: pd.DataFrame, perturbation: str) -> list:
    """The stratum box's choices for the table ``digest`` and its perturbation column, once per pair."""
    return cached_view(("stratum_choices", digest, perturbation),
                       lambda: inputs.stratum_options(table, perturbation))


@dataclass(frozen=True)
class ResultsView:
    """The scored screen as the page shows it at one FDR level (shared, read-only): ``groups`` ranked
    with ``significant``, ``shown`` (p-values as the page prints them), the perturbations' ``names`` in
    that order, the volcano's ``points`` and the number of ``hits``."""

    groups: pd.DataFrame
    shown: pd.DataFrame
    names: list
    points: pd.DataFrame
    hits: int


def results_view(digest: str, key: tuple, result, perturbation, fdr: float, hierarchical_by=()) -> ResultsView:
    """:class:`ResultsView` of (file, settings, FDR level, hierarchical families), built once for all
    sessions. ``hierarchical_by``: perturbation columns naming families (a compound of compound + dose):
    :func:`apnull.score.hierarchical_bh` at the FDR level replaces the flat q-values."""
    def build():
        groups = result.groups
        if hierarchical_by:
            groups = hierarchical_bh(groups, list(hierarchical_by), alpha=fdr)
        groups = view.ranked_groups(groups, fdr)
        return ResultsView(groups, view.p_shown(groups), view.names(groups, perturbation),
                           view.volcano_data(groups, perturbation, fdr), int(groups["significant"].sum()))

    return cached_view(("results", digest, key, fdr, tuple(hierarchical_by)), build)


def inspected(digest: str, key: tuple, result, groups: pd.DataFrame, perturbation: str, name: str):
    """(its row of the perturbation table, its value in the perturbation column, its queries as shown) of
    the perturbation ``name`` of (file, settings), once for all sessions."""
    def build():
        row = view.row_of(groups, perturbation, name)
        return (row, view.original_name(groups, perturbation, name),
                view.p_shown(view.queries_of(result.queries, perturbation, name)))

    return cached_view(("inspected", digest, key, name), build)


_EXAMPLE = Memo(1)


def example_table() -> pd.DataFrame:
    """The bundled example (:func:`apnull.score.digits_example`), built once per process."""
    return _EXAMPLE.get_or_compute(EXAMPLE_DIGEST, digits_example)


def warm_example():
    """Score the bundled example with the page's default inputs into :data:`SCORES`: the server's
    warm-up calls this (then the consistency step's :func:`apnull.ui.consistency_step.warm_default` on
    what it returns), so a class opening the page together finds both ready instead of waiting.

    Returns (table, settings, result) of the example."""
    table = example_table()
    defaults, _options = table_choices(EXAMPLE_DIGEST, table)
    settings = view.make_settings(table, defaults["sc_pert"], defaults["sc_control"], defaults["sc_stratum"],
                                  defaults["sc_features"], "cosine", "permutation", 999, 0)
    cached_plan(EXAMPLE_DIGEST, settings.plan_key(), table, settings.plan_kwargs())
    label_choices(EXAMPLE_DIGEST, table)
    result = SCORES.get_or_compute((EXAMPLE_DIGEST, settings.key()),
                                   lambda: score_profiles(table, **settings.kwargs()))
    return table, settings, result


def use_table(digest: str, defaults: dict) -> None:
    """Make the table-dependent inputs (:data:`apnull.views.score.TABLE_KEYS`) show what applies to the
    table ``digest``, before the widgets are drawn (:func:`.state.inputs_follow`): a shared link's
    inputs on the first table, the table's guesses ``defaults`` on a new one, and the inputs a table had
    when the user comes back to it."""
    inputs_follow("_sc_table", digest, inputs.TABLE_KEYS, defaults, remember=True)


def cached_score(digest: str, key: tuple):
    """The cached scoring result of (file, settings), or None."""
    return SCORES.get((digest, key))


def score_once(digest: str, key: tuple, table, kwargs: dict, container=None):
    """Score (file, settings) once across sessions: the first caller scores with a progress bar in
    ``container``; callers arriving meanwhile wait for its result."""
    box = container or st
    bar = box.progress(0.0, text="Scoring (or waiting for the same scoring by another session)...")
    progress = ScoreProgress(bar)
    try:
        return SCORES.get_or_compute((digest, key), lambda: score_profiles(table, **kwargs, progress=progress))
    finally:
        bar.empty()


def cached_plan(digest: str, key: tuple, table, kwargs: dict):
    """The :class:`apnull.score.ScreenPlan` of (file, columns), computed once."""
    return PLANS.get_or_compute((digest, key), lambda: screen_plan(table, **kwargs))
