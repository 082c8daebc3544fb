"""The "Compare two pipelines" page's shared caches and pair handling (the page stays thin; its two
uploads are :mod:`apnull.ui.uploads`', shared with the scoring page: a file uploaded on both is parsed
once).

Every cache is an :class:`apnull.memo.Memo` shared by all sessions of the server process, bounded by
entries and bytes (least recently used dropped first); cached values are only read:

- ``RESULTS``: comparisons keyed by (pair, settings): at most :data:`MAX_RESULTS` = 6 and
  :data:`MAX_RESULT_BYTES` = 256 MiB (the two scored results' feature matrices and tables);
- ``VIEWS``: what the page shows of a result (pair defaults, the scatter, the shown table): 64 entries,
  32 MiB.

A comparison asked for by several sessions at once runs once (``Memo`` in-flight de-duplication); an
error is not cached. Each session keeps in ``st.session_state`` only which pair its inputs belong to
(its uploads' hashes and names: :mod:`apnull.ui.uploads`).
"""

from __future__ import annotations

from operator import attrgetter

import pandas as pd
import streamlit as st

from ..memo import Memo, rough_nbytes
from ..score import digits_pipeline_pair, score_compare
from ..views import compare as view
from .progress import ScoreProgress
from .state import inputs_follow
from .uploads import frame_bytes

__all__ = ["RESULTS", "VIEWS", "MAX_RESULTS", "MAX_RESULT_BYTES", "EXAMPLE_PAIR", "TABLE_KEYS", "example_pair",
           "upload_slot", "pair_choices", "use_pair", "cached_comparison", "compare_once", "compare_view", "warm_comparison"]

MAX_RESULTS = 6
MAX_RESULT_BYTES = 256 << 20
#: The cache key of the bundled pair.
EXAMPLE_PAIR = "example"
#: The inputs that depend on the pair of tables: set to the new pair's guesses when the pair changes.
TABLE_KEYS = ("cp_key", "cp_key2", "cp_pert", "cp_control", "cp_stratum", "cp_features_a", "cp_features_b")


RESULTS = Memo(MAX_RESULTS, MAX_RESULT_BYTES, sizeof=attrgetter("held_bytes"))
VIEWS = Memo(64, max_bytes=32 << 20, sizeof=rough_nbytes)
_EXAMPLE = Memo(1)


def example_pair() -> tuple:
    """The bundled pair (:func:`apnull.score.example.digits_pipeline_pair`), built once per process."""
    return _EXAMPLE.get_or_compute(EXAMPLE_PAIR, digits_pipeline_pair)


def upload_slot(side: str) -> str:
    """The upload slot (:mod:`apnull.ui.uploads`) of table ``side`` ("a" or "b")."""
    return f"compare_{side}"


def compare_view(key: tuple, build):
    """``build()``'s value stored for ``key``, computed once for all sessions (read-only)."""
    return VIEWS.get_or_compute(key, build)


def pair_choices(pair: str, a: pd.DataFrame, b: pd.DataFrame) -> dict:
    """The guessed inputs of a pair of tables (:func:`apnull.views.compare.pair_defaults`), once per pair."""
    return compare_view(("defaults", pair), lambda: view.pair_defaults(a, b))


def use_pair(pair: str, defaults: dict) -> None:
    """Make the pair-dependent inputs (:data:`TABLE_KEYS`) show what applies to the tables ``pair``, before
    the widgets are drawn (:func:`.state.inputs_follow`): the first pair of a session keeps what the URL
    or the session says and fills in ``defaults`` for the rest; another pair (a new upload, or the
    example/upload switch) gets its ``defaults``, and the URL follows."""
    inputs_follow("_cp_pair", pair, TABLE_KEYS, defaults)


def cached_comparison(pair: str, key: tuple):
    """The cached comparison of (pair, settings), or None."""
    return RESULTS.get((pair, key))


def warm_comparison():
    """Compare the bundled pair with the inputs a new visitor of the page first sees, into :data:`RESULTS`
    (the server's warm-up calls this after the score page's: a fresh install compiles the comparison's
    own kernels here, not while its first visitor waits)."""
    from ..views import score_report as report

    a, b = example_pair()
    guess = pair_choices(EXAMPLE_PAIR, a, b)
    fixed = view.PAGE_DEFAULTS
    settings = view.make_compare_settings(a, b, guess["cp_key"], guess["cp_key2"], guess["cp_pert"], guess["cp_control"],
                                  guess["cp_stratum"], guess["cp_features_a"], guess["cp_features_b"],
                                  fixed["similarity"], fixed["permutations"], fixed["seed"], fixed["alpha"],
                                  next(iter(report.NORMALIZE_CHOICES.values())),
                                  nan=next(iter(report.NAN_CHOICES.values())))
    return RESULTS.get_or_compute((EXAMPLE_PAIR, settings.cache_key()),
                                  lambda: score_compare(a, b, **settings.kwargs()))


def compare_once(pair: str, key: tuple, a, b, kwargs: dict, container=None):
    """Compare (pair, settings) once across sessions, with a progress bar in ``container``."""
    box = container or st
    bar = box.progress(0.0, text="Scoring both tables (or waiting for the same comparison by another session)...")
    try:
        return RESULTS.get_or_compute((pair, key), lambda: score_compare(a, b, **kwargs, progress=ScoreProgress(bar)))
    finally:
        bar.empty()
