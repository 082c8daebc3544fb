"""Uploaded tables, for every page that takes one (the scoring page, and both tables of the comparison).

``UPLOADS`` is one :class:`apnull.memo.Memo` shared by all sessions and pages of the server process:
parsed tables keyed by the SHA-256 of the file's bytes, at most :data:`MAX_UPLOADS` = 8 tables and
:data:`MAX_UPLOAD_BYTES` = 1 GiB of table memory (pandas' ``memory_usage(deep=True)``; least recently
used dropped first). So the same file uploaded on the scoring page and as a table of the comparison is
parsed and held once, and 30 students uploading 30 different 50 MB files hold at most 8 parsed tables,
never 30. An upload dropped from the cache is read again from the browser's copy while the file input
holds it, or asked for again. Cached tables are shared and only read.

Each session keeps in ``st.session_state`` only small things per upload slot (the scoring page's one,
the comparison's "a" and "b"): the file's hash, kept with the upload's id so a file is hashed once a
session, and (digest, file name) of the slot's last upload, so it survives page visits and the
example/upload switch while the table stays in ``UPLOADS``.
"""

from __future__ import annotations

import io

import pandas as pd
import streamlit as st

from ..memo import Memo
from ..score import read_table
from ..views import score as score_view

__all__ = ["UPLOADS", "MAX_UPLOADS", "MAX_UPLOAD_BYTES", "label_columns_of", "remember_upload", "upload_table",
           "saved_upload", "frame_bytes"]

MAX_UPLOADS = 8
MAX_UPLOAD_BYTES = 1 << 30


def frame_bytes(table) -> int:
    """A frame's memory (pandas' deep ``memory_usage``); 0 for anything else."""
    return int(table.memory_usage(deep=True).sum()) if isinstance(table, pd.DataFrame) else 0


UPLOADS = Memo(MAX_UPLOADS, MAX_UPLOAD_BYTES, sizeof=frame_bytes)


def label_columns_of(columns) -> list:
    """The columns of an upload read as text, exactly as written: ``Metadata_*`` and any column whose
    name suggests a perturbation or a stratum (so ``1``, ``1.0`` and ``01`` stay three labels)."""
    hints = score_view.PERTURBATION_HINTS + score_view.STRATUM_HINTS
    return [c for c in columns if str(c).startswith("Metadata_") or any(h in str(c).lower() for h in hints)]


def _slot_key(slot: str) -> str:
    return f"_upload_{slot}"


def remember_upload(upload, slot: str) -> tuple[str, str]:
    """(digest, name) of a Streamlit upload into the page's ``slot`` (e.g. "score", "compare_a"): the file
    hashed once per session and slot, parsed once per process into ``UPLOADS`` (label columns as text,
    :func:`label_columns_of`), whichever page it was uploaded on; (digest, name) remembered in the
    session for :func:`saved_upload`. A file that cannot be read raises its ValueError (nothing cached)."""
    seen_key = f"_upload_id_{slot}"
    seen = st.session_state.get(seen_key)
    if seen is None or seen[0] != upload.file_id:
        seen = (upload.file_id, score_view.file_digest(upload.getvalue()))
        st.session_state[seen_key] = seen
    digest, name = seen[1], upload.name
    UPLOADS.get_or_compute(digest, lambda: read_table(io.BytesIO(upload.getvalue()), name=name,
                                                      labels=label_columns_of))
    st.session_state[_slot_key(slot)] = (digest, name)
    return digest, name


def upload_table(digest: str) -> pd.DataFrame | None:
    """The parsed table of the file with SHA-256 ``digest``, or None when it was dropped from ``UPLOADS``."""
    return UPLOADS.get(digest)


def saved_upload(slot: str) -> tuple:
    """(table, name, digest) of this session's last upload into ``slot`` while its table stays in
    ``UPLOADS``, else (None, None, None)."""
    saved = st.session_state.get(_slot_key(slot))
    table = UPLOADS.get(saved[0]) if saved else None
    return (table, saved[1], saved[0]) if table is not None else (None, None, None)
