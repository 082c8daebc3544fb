"""The "Compare two pipelines" page's shared caches and table handling (the page stays thin).

Every cache is an :class:`apnull.memo.Memo` shared by all sessions of the server process, bounded by
entries and bytes (least recently used dropped first); cached values are only read:

- ``UPLOADS``: parsed uploaded tables keyed by the SHA-256 of the file's bytes: at most
  :data:`MAX_UPLOADS` = 4 tables and :data:`MAX_UPLOAD_BYTES` = 512 MiB (pandas' deep memory use);
- ``RESULTS``: comparisons keyed by (pair, settings): at most :data:`MAX_RESULTS` = 6 and
  :data:`MAX_RESULT_BYTES` = 256 MiB (the two scored results' feature matrices and tables);
- ``VIEWS``: what the page shows of a result (pair defaults, the scatter, the shown table): 64 entries,
  32 MiB.

A comparison asked for by several sessions at once runs once (``Memo`` in-flight de-duplication); an
error is not cached. Each session keeps in ``st.session_state`` only the hashes and names of its two
uploads and which pair its inputs belong to.
"""

from __future__ import annotations

import io
from operator import attrgetter

import pandas as pd
import streamlit as st

from ..memo import Memo, rough_nbytes
from ..score import digits_pipeline_pair, read_table, score_compare
from ..views import compare as view
from ..views import score as score_view
from .score_cache import ScoreProgress, label_columns_of
from .state import forget_param

__all__ = ["UPLOADS", "RESULTS", "VIEWS", "MAX_UPLOADS", "MAX_UPLOAD_BYTES", "MAX_RESULTS", "MAX_RESULT_BYTES",
           "EXAMPLE_PAIR", "TABLE_KEYS", "example_pair", "remember_upload", "upload_table", "pair_defaults",
           "use_pair", "cached_result", "compare_once", "cached_view", "warm_example"]

MAX_UPLOADS = 4
MAX_UPLOAD_BYTES = 512 << 20
MAX_RESULTS = 6
MAX_RESULT_BYTES = 256 << 20
#: The cache key of the bundled pair.
EXAMPLE_PAIR = "example"
#: The inputs that depend on the pair of tables: set to the new pair's guesses when the pair changes.
TABLE_KEYS = ("cp_key", "cp_key2", "cp_pert", "cp_control", "cp_stratum", "cp_features_a", "cp_features_b")


def _frame_bytes(table) -> int:
    return int(table.memory_usage(deep=True).sum()) if isinstance(table, pd.DataFrame) else 0



UPLOADS = Memo(MAX_UPLOADS, MAX_UPLOAD_BYTES, sizeof=_frame_bytes)
RESULTS = Memo(MAX_RESULTS, MAX_RESULT_BYTES, sizeof=attrgetter("held_bytes"))
VIEWS = Memo(64, max_bytes=32 << 20, sizeof=rough_nbytes)
_EXAMPLE = Memo(1)


def example_pair() -> tuple:
    """The bundled pair (:func:`apnull.score.example.digits_pipeline_pair`), built once per process."""
    return _EXAMPLE.get_or_compute(EXAMPLE_PAIR, digits_pipeline_pair)


def remember_upload(upload, side: str) -> tuple[str, str]:
    """(digest, name) of the Streamlit upload of table ``side`` ("a" or "b"): hashed once per session,
    parsed once per process into ``UPLOADS`` (label columns as text), remembered in the session."""
    seen_key = f"_cp_upload_id_{side}"
    seen = st.session_state.get(seen_key)
    if seen is None or seen[0] != upload.file_id:
        seen = (upload.file_id, score_view.file_digest(upload.getvalue()))
        st.session_state[seen_key] = seen
    digest, name = seen[1], upload.name
    UPLOADS.get_or_compute(digest, lambda: read_table(io.BytesIO(upload.getvalue()), name=name,
                                                      labels=label_columns_of))
    st.session_state[f"_cp_upload_{side}"] = (digest, name)
    return digest, name


def upload_table(side: str):
    """(table, name, digest) of this session's upload of table ``side`` (kept while it stays in
    ``UPLOADS``), or (None, None, None)."""
    saved = st.session_state.get(f"_cp_upload_{side}")
    table = UPLOADS.get(saved[0]) if saved else None
    return (table, saved[1], saved[0]) if table is not None else (None, None, None)


def cached_view(key: tuple, build):
    """``build()``'s value stored for ``key``, computed once for all sessions (read-only)."""
    return VIEWS.get_or_compute(key, build)


def pair_defaults(pair: str, a: pd.DataFrame, b: pd.DataFrame) -> dict:
    """The guessed inputs of a pair of tables (:func:`apnull.views.compare.pair_defaults`), once per pair."""
    return cached_view(("defaults", pair), lambda: view.pair_defaults(a, b))


def use_pair(pair: str, defaults: dict) -> None:
    """Make the pair-dependent inputs (:data:`TABLE_KEYS`) show what applies to the tables ``pair``, before
    the widgets are drawn: the first pair of a session keeps what the URL or the session says and fills
    in ``defaults`` for the rest; another pair (a new upload, or the example/upload switch) gets its
    ``defaults``, and the URL follows."""
    state = st.session_state
    previous = state.get("_cp_pair")
    if previous == pair:
        return
    for key in TABLE_KEYS:
        if previous is None:
            if key not in state and key not in st.query_params:
                state[key] = defaults.get(key, "")
        elif key in defaults:
            state[key] = defaults[key]
        else:
            forget_param(key)
    state["_cp_pair"] = pair


def cached_result(pair: str, key: tuple):
    """The cached comparison of (pair, settings), or None."""
    return RESULTS.get((pair, key))


def warm_example():
    """Compare the bundled pair with the inputs a new visitor of the page first sees, into :data:`RESULTS`
    (the server's warm-up calls this after the score page's: a fresh install compiles the comparison's
    own kernels here, not while its first visitor waits)."""
    from ..views import score_report as report

    a, b = example_pair()
    guess = pair_defaults(EXAMPLE_PAIR, a, b)
    fixed = view.PAGE_DEFAULTS
    settings = view.make_settings(a, b, guess["cp_key"], guess["cp_key2"], guess["cp_pert"], guess["cp_control"],
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
