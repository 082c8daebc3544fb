"""The dashboard's progress bars, one throttle for all: work over sizes (drawing or summarising a view's
sizes, :class:`ProgressBar`) and a scoring run (scoring, consistency, a comparison: :class:`ScoreProgress`)."""

from __future__ import annotations

import time

import numpy as np
import streamlit as st

__all__ = ["PROGRESS_EVERY", "RUN_PROGRESS_EVERY", "ThrottledBar", "ProgressBar", "ScoreProgress"]

#: seconds between two updates of a progress bar over sizes (a message each time would cost more than
#: the work it reports does when that work is cached)
PROGRESS_EVERY = 0.1
#: seconds between two updates of a scoring run's bar (its hooks are called from the engine's rounds)
RUN_PROGRESS_EVERY = 0.2


class ThrottledBar:
    """A ``st.progress`` bar moved at most every ``every`` seconds (and always at the end of the work):
    :meth:`due` says whether a count should be shown, :meth:`show` shows it. ``first_at_once``: the first
    count is shown at once (else ``every`` seconds after the bar was made)."""

    def __init__(self, bar, every: float = PROGRESS_EVERY, first_at_once: bool = True):
        self.bar, self.every = bar, every
        self.last = 0.0 if first_at_once else time.monotonic()

    def due(self, done: int, total: int) -> bool:
        """True when (done, total) should be shown: a count ``every`` s after the last one shown, or the
        last count of the work; False for an empty work."""
        now = time.monotonic()
        if not total or (now - self.last < self.every and done < total):
            return False
        self.last = now
        return True

    def show(self, share: float, text: str) -> None:
        """Move the bar to ``share`` (clipped to [0, 1]) with ``text``; a call from a thread without the
        page's context (a hook of the engine's workers) is ignored."""
        try:
            self.bar.progress(float(np.clip(share, 0.0, 1.0)), text=text)
        except Exception:  # noqa: BLE001 (a hook called from a thread without the page's context)
            pass

    def close(self) -> None:
        """Remove the bar."""
        self.bar.empty()


class ProgressBar(ThrottledBar):
    """``st.progress`` for work over sizes: ``bar(done, total, m, n)`` moves it, ``close()`` removes it."""

    def __init__(self, label: str, container=None):
        self.label = label
        super().__init__((container or st).progress(0.0, text=f"{label}..."), first_at_once=False)

    def __call__(self, done: int, total: int, m: int, n: int) -> None:
        if self.due(done, total):
            self.show(done / total, f"{self.label}: size {done} of {total} (m = {m}, n = {n})")


class ScoreProgress(ThrottledBar):
    """Progress of a run on a ``st.progress`` bar; says "preparing compiled code (first run only)" while
    numba compiles (the engine's ``compiling`` and ``compiled`` hooks, as the command line's progress)
    and the round of an adaptive run.

    ``what`` names the run and its units ("Scoring", "perturbations"; consistency: "Consistency",
    "labels"); ``finishing`` is said once every unit is done (None: the count itself).
    """

    def __init__(self, bar, what: tuple = ("Scoring", "perturbations"),
                 finishing: str | None = "Per-query p-values and the tables..."):
        super().__init__(bar, RUN_PROGRESS_EVERY)
        self.round_text = ""
        self.what, self.finishing = what, finishing
        self._first = (what, finishing)
        self.twin: _Beside | None = None  # the null drawing beside this one (:meth:`beside`)

    def beside(self, mine: str, other: str) -> "_Beside":
        """A reporter for another null that runs beside this one from now on, in a thread without the
        page's context (the queries' null, :class:`apnull.score.nulls.conditional.QueriesBeside`): it only
        keeps its counts, which this bar shows after its own ("· per-query null: 300 of 816 perturbations"),
        until :meth:`alone`. ``mine``: this null's name, which the bar leaves implicit."""
        self.twin = _Beside(other)
        return self.twin

    def alone(self) -> None:
        """The null beside this one is done: the bar shows this run's counts only."""
        self.twin = None

    def stage(self, units: str, scope: str = "") -> None:
        """A new stage of the run (the engine's hook, :mod:`apnull.score.engine.clock`): later counts
        are of ``units`` (e.g. "queries, exact laws and far tails") of ``scope`` (e.g. "table A")."""
        (name, first_units), finishing = self._first
        self.what = (f"{name} {scope}" if scope else name, units)
        self.finishing = finishing if units == first_units else None
        self.round_text, self.last = "", 0.0

    def compiling(self) -> None:
        """Numba started compiling: a fresh server's first run."""
        self.show(0.0, "Preparing compiled code, first run only (about a minute; later runs skip this)...")

    def compiled(self, seconds: float) -> None:
        """Compiling is over (``seconds`` of it so far): back to the scoring."""
        self.show(0.0, f"Compiled code ready ({seconds:.0f} s, first run only); scoring...")

    def round(self, info) -> None:
        """Before a round of an adaptive run: which round, and how many perturbations it still draws for."""
        self.round_text = (f" (round {info.number + 1}: {info.units:,} still drawing, up to {info.target:,} "
                           "draws each)" if info.number else "")

    def __call__(self, done: int, total: int) -> None:
        if not self.due(done, total):
            return
        name, units = self.what
        twin = self.twin  # a null beside this one: still drawing, so not finishing yet at a round's end
        text = (f"{name}: {done:,} of {total:,} {units}{self.round_text}"
                if done < total or self.finishing is None or twin is not None else self.finishing)
        self.show(done / total, text + (twin.text() if twin is not None else ""))


class _Beside:
    """The counts of a null drawing beside a :class:`ScoreProgress`'s (:meth:`ScoreProgress.beside`), told from
    its own thread and shown by that bar: ``done`` of ``total`` of its stage's ``units``."""

    def __init__(self, name: str):
        self.name, self.units, self.done, self.total = name, "units", 0, 0

    def stage(self, units: str, scope: str = "") -> None:
        self.units = units

    def __call__(self, done: int, total: int) -> None:
        self.done, self.total = int(done), int(total)

    def text(self) -> str:
        """" · per-query null: 300 of 816 queries", or nothing before its first count."""
        return f" · {self.name}: {self.done:,} of {self.total:,} {self.units}" if self.total else ""
