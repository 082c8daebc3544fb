"""The scoring page's shared caches, upload handling and progress bar (the page stays thin).

Every cache is an :class:`apnull.memo.Memo` shared by all sessions of the server process, bounded
by entries and by bytes (least recently used dropped first):

- ``UPLOADS``: parsed uploaded tables keyed by the SHA-256 of the file's bytes; at most
  :data:`MAX_UPLOADS` = 6 tables and :data:`MAX_UPLOAD_BYTES` = 1 GiB of table memory (pandas'
  ``memory_usage(deep=True)``). 30 students uploading 30 different 50 MB files therefore hold at
  most 6 parsed tables (about 6 x 50-150 MB), never 30; an upload dropped from the cache is read
  again from the browser's copy while the file input holds it, or asked for again.
- ``SCORES``: scoring results keyed by (file hash, settings); at most :data:`MAX_SCORES` = 8 results
  and :data:`MAX_SCORE_BYTES` = 512 MiB (feature matrix plus tables).
- ``PLANS``: the plan of a (file hash, columns) choice (:func:`apnull.score.screen_plan`); 32 plans.

A key asked for by several sessions at once is computed once: when a class of 30 presses **Score**
on the same example with the same settings together, one session scores (with the progress bar)
and the 29 others wait for its result (``Memo`` in-flight de-duplication). An error is not cached.
Cached values are shared and only read.

Each session keeps in ``st.session_state`` only small things: the hash and name of its last upload
(:data:`UPLOAD_STATE`), so the upload survives page visits and the example/upload switch while the
table stays in ``UPLOADS``.
"""

from __future__ import annotations

import io
import time
from dataclasses import dataclass
from operator import attrgetter

import numpy as np
import pandas as pd
import streamlit as st

from ..memo import Memo, rough_nbytes
from ..score import digits_example, hierarchical_bh, read_table, score_profiles, screen_plan
from ..views import score as view
from ..views import score_inputs as inputs
from .state import forget_param

__all__ = ["UPLOADS", "SCORES", "PLANS", "MAX_UPLOADS", "MAX_UPLOAD_BYTES", "MAX_SCORES", "MAX_SCORE_BYTES",
           "UPLOAD_STATE", "EXAMPLE_DIGEST", "example_table", "table_choices", "label_choices", "stratum_choices",
           "ResultsView", "results_view", "inspected", "remember_upload", "use_table", "upload_table",
           "cached_result", "score_once", "warm_example", "cached_plan", "ScoreProgress", "label_columns_of"]

MAX_UPLOADS = 6
MAX_UPLOAD_BYTES = 1 << 30
MAX_SCORES = 8
MAX_SCORE_BYTES = 512 << 20
#: session_state key of this session's last upload: (digest, file name)
UPLOAD_STATE = "_sc_upload"
#: the cache key of the bundled example
EXAMPLE_DIGEST = "example"
#: seconds between two updates of the progress bar
PROGRESS_EVERY = 0.2


def _frame_bytes(table) -> int:
    return int(table.memory_usage(deep=True).sum()) if isinstance(table, pd.DataFrame) else 0



UPLOADS = Memo(MAX_UPLOADS, MAX_UPLOAD_BYTES, sizeof=_frame_bytes)
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


def label_columns_of(columns) -> list:
    """The columns of an upload read as text, exactly as written: ``Metadata_*`` and any column whose
    name suggests a perturbation or a stratum (so ``1``, ``1.0`` and ``01`` stay three labels)."""
    hints = view.PERTURBATION_HINTS + view.STRATUM_HINTS
    return [c for c in columns if str(c).startswith("Metadata_") or any(h in str(c).lower() for h in hints)]


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


def remember_upload(upload) -> tuple[str, str]:
    """(digest, name) of a Streamlit upload, hashing each new file once per session; the table is parsed
    into ``UPLOADS`` (once per process, whatever the sessions) and the pair kept in ``st.session_state``."""
    seen = st.session_state.get("_sc_upload_id")
    if seen is None or seen[0] != upload.file_id:
        seen = (upload.file_id, view.file_digest(upload.getvalue()))
        st.session_state["_sc_upload_id"] = seen
    digest, name = seen[1], upload.name
    UPLOADS.get_or_compute(digest, lambda: read_table(io.BytesIO(upload.getvalue()), name=name,
                                                      labels=label_columns_of))
    st.session_state[UPLOAD_STATE] = (digest, name)
    return digest, name


def use_table(digest: str, defaults: dict) -> None:
    """Make the table-dependent inputs (:data:`apnull.views.score.TABLE_KEYS`) show what applies to the
    table ``digest``, before the widgets are drawn.

    The first table of a session keeps what the URL (a shared link) or the session says, and fills in
    ``defaults`` (the table's guesses) for the rest. When the table changes (a new upload, or the
    example/upload switch), the inputs of the table left are remembered for it, and the new table's
    remembered inputs, else its ``defaults``, are set; the URL follows them (bound widgets), so nothing
    typed for one table is applied, unseen, to another, and a copied link carries what is shown.
    """
    state = st.session_state
    previous = state.get("_sc_table")
    if previous == digest:
        return
    saved = state.setdefault("_sc_saved", {})
    if previous is None:
        for key, value in defaults.items():
            if key not in state and key not in st.query_params:
                state[key] = value
    else:
        saved[previous] = {k: state[k] for k in inputs.TABLE_KEYS if k in state}
        restore = saved.get(digest, defaults)
        for key in inputs.TABLE_KEYS:
            if key in restore:
                state[key] = restore[key]
            else:
                forget_param(key)
    state["_sc_table"] = digest


def upload_table(digest: str) -> pd.DataFrame | None:
    """The cached table of an earlier upload, or None when it was dropped from ``UPLOADS``."""
    return UPLOADS.get(digest)


def cached_result(digest: str, key: tuple):
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


class ScoreProgress:
    """Progress of a run on a ``st.progress`` bar, updated at most every ``PROGRESS_EVERY`` s; says
    "preparing compiled code (first run only)" while numba compiles (the engine's ``compiling`` and
    ``compiled`` hooks, as the command line's progress) and the round of an adaptive run.

    ``what`` names the run and its units ("Scoring", "perturbations"; consistency: "Consistency",
    "labels"); ``finishing`` is said once every unit is done (None: the count itself).
    """

    def __init__(self, bar, what: tuple = ("Scoring", "perturbations"),
                 finishing: str | None = "Per-query p-values and the tables..."):
        self.bar, self.last, self.round_text = bar, 0.0, ""
        self.what, self.finishing = what, finishing
        self._first = (what, finishing)

    def stage(self, units: str, scope: str = "") -> None:
        """A new stage of the run (the engine's hook, :mod:`apnull.score.engine.clock`): later counts
        are of ``units`` (e.g. "queries, exact laws and far tails") of ``scope`` (e.g. "table A")."""
        (name, first_units), finishing = self._first
        self.what = (f"{name} {scope}" if scope else name, units)
        self.finishing = finishing if units == first_units else None
        self.round_text, self.last = "", 0.0

    def compiling(self) -> None:
        """Numba started compiling: a fresh server's first run."""
        self._show(0.0, "Preparing compiled code, first run only (about a minute; later runs skip this)...")

    def compiled(self, seconds: float) -> None:
        """Compiling is over (``seconds`` of it so far): back to the scoring."""
        self._show(0.0, f"Compiled code ready ({seconds:.0f} s, first run only); scoring...")

    def round(self, info) -> None:
        """Before a round of an adaptive run: which round, and how many perturbations it still draws for."""
        self.round_text = (f" (round {info.number + 1}: {info.units:,} still drawing, up to {info.target:,} "
                           "draws each)" if info.number else "")

    def _show(self, share: float, text: str) -> None:
        try:
            self.bar.progress(float(np.clip(share, 0.0, 1.0)), text=text)
        except Exception:  # noqa: BLE001 (a hook called from a thread without the page's context)
            pass

    def __call__(self, done: int, total: int) -> None:
        now = time.monotonic()
        if not total or (now - self.last < PROGRESS_EVERY and done < total):
            return
        self.last = now
        name, units = self.what
        text = (f"{name}: {done:,} of {total:,} {units}{self.round_text}"
                if done < total or self.finishing is None else self.finishing)
        self._show(done / total, text)
