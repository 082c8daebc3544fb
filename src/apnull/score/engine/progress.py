"""Progress of a scoring run for ``progress=True``: a bar in Jupyter, lines on stderr elsewhere.

A progress reporter is what :func:`.sequential.resolve` calls: ``progress(done, total)`` as batches
finish, ``progress.round(info)`` before each round (a :class:`.sequential.RoundInfo`), and
``progress.compiling()`` / ``progress.compiled(seconds)`` around numba's compilation, and
``progress.stage(units, scope)`` as a new stage of the run starts (:func:`.clock.tell_stage`), and
``progress.spent(spent)`` once the result's tables are made (a :class:`..results.outputs.Spent`:
the draws the run spent, mAP and per-query; :func:`spent_line`). The command line's
reporter is a :class:`LineProgress` whose lines start with the command's name;
``progress=True`` in the library gives :func:`default_progress`: in a Jupyter kernel a
:class:`NotebookProgress` (an HTML progress bar updated in place, with the same round lines; only
IPython, which every Jupyter kernel has, is needed), else a :class:`LineProgress` on stderr (the
command line's lines). ``progress=None`` or ``False`` shows nothing.
"""

from __future__ import annotations

import html
import sys
import threading
import time

from ..table.names import count_text
from .clock import estimate_text

__all__ = ["round_line", "count_line", "spent_line", "in_notebook", "default_progress", "NotebookProgress",
           "LineProgress", "COMPILING"]

#: What a first run says while numba compiles (once per install: the machine code is cached).
COMPILING = "preparing compiled code (first run only) ..."


def round_line(info) -> str:
    """A refinement round before it runs: ``"round 2: 3 perturbations near the decision line, refined to 400
    draws each (1,100 draws so far; at most 900 more, about 2 s)"``."""
    when = "" if info.estimate is None else f", {estimate_text(info.estimate)}"
    return (f"round {info.number + 1}: {count_text(info.units, info.label)} near the decision line, refined to "
            f"{info.target:,} draws each ({info.draws_so_far:,} draws so far; at most {info.draws_at_most:,} "
            f"more{when})")


def count_line(label: str, done: int, total: int, seconds: float) -> str:
    """``"<label>: done of total (s)"``, e.g. ``"perturbations: 40 of 120 (3 s)"``."""
    return f"{label}: {done:,} of {total:,} ({seconds:.0f} s)"


def spent_line(spent, seconds: float) -> str:
    """The draws a finished run spent (``spent``: a :class:`..results.outputs.Spent`, read by its field
    names): ``"draws spent: 13,068,041 mAP draws (5,000 perturbations), 3,516,835 per-query draws (25,000
    queries; the conditional laws of 127 counted, not drawn) (139 s)"`` (``counted``: queries whose
    conditional law was counted over every choice instead of drawn)."""
    laws = f"; the conditional laws of {spent.counted:,} counted, not drawn" if spent.counted else ""
    return (f"draws spent: {spent.map_draws:,} mAP draws ({count_text(spent.perturbations, 'perturbations')}), "
            f"{spent.query_draws:,} per-query draws ({count_text(spent.queries, 'queries')}{laws}) ({seconds:.0f} s)")


def in_notebook() -> bool:
    """True inside a Jupyter kernel (an IPython shell with a kernel), not in a terminal IPython or plain Python."""
    ipython = sys.modules.get("IPython")
    shell = ipython.get_ipython() if ipython is not None and hasattr(ipython, "get_ipython") else None
    return shell is not None and getattr(shell, "kernel", None) is not None


def default_progress():
    """The reporter of ``progress=True``: :class:`NotebookProgress` in Jupyter, else :class:`LineProgress`."""
    return NotebookProgress() if in_notebook() else LineProgress(sys.stderr)


class _Clock:
    """The seconds of a run, compilation left out (it is not scoring time), and what its lines are about:
    the stage's units and scope (:meth:`stage`) and, while another null's lines interleave with them
    (:meth:`LineProgress.beside`), the null they belong to."""

    def __init__(self):
        self.start = time.monotonic()
        self.compile_seconds = 0.0
        self.units = "units"
        self.where, self.null, self.staged = "", "", False

    @property
    def scope(self) -> str:
        """What starts the lines after the command's name: ``"table A: "``, ``"mAP null: "``, both, or ``""``."""
        said = ", ".join(part for part in (self.where, self.null) if part)
        return f"{said}: " if said else ""

    @property
    def label(self) -> str:
        """What the counts count, with the scope: ``"table A: perturbations"``."""
        return self.scope + self.units

    def stage(self, units: str, scope: str = "") -> None:
        """A new stage of the run (:func:`.clock.tell_stage`): later counts are of ``units`` ("queries,
        exact laws and far tails"), of ``scope`` ("table A"), which its round lines name too."""
        self.where, self.units, self.staged = scope, units, True

    def named(self, info) -> str:
        """The round line of ``info`` with the stage's scope, and the label its counts take."""
        if not self.staged:
            self.units = info.label
        return self.scope + round_line(info)

    def compiled(self, seconds: float) -> None:
        """``seconds`` of compiling so far in this run: they do not count as scoring time."""
        self.start += seconds - self.compile_seconds
        self.compile_seconds = seconds

    def seconds(self) -> float:
        return time.monotonic() - self.start


class _Board:
    """The output cell the notebook reporters of one run share (:meth:`NotebookProgress.beside`): its
    lines, a bar for each reporter, the display handle, and one lock, so two nulls' updates from two
    threads never interleave."""

    def __init__(self):
        self.lines: list = []
        self.bars: list = []
        self.handle, self.last = None, 0.0
        self.lock = threading.Lock()
        self.compiling_told = False


class NotebookProgress(_Clock):
    """A progress bar in a Jupyter output cell, updated in place (at most every ``every`` seconds, and at
    the end of each round): the units done of the round's total, the seconds, and every refinement round
    as :func:`round_line` says it. Shown from the first report on. Two nulls running at once report
    through :meth:`beside`: a bar each, every line and bar naming its null."""

    def __init__(self, every: float = 0.25, *, board: _Board | None = None):
        super().__init__()
        self.every = every
        self.done = self.total = 0
        self.board = board if board is not None else _Board()
        self.board.bars.append(self)

    def _bar(self) -> str:
        return (f"<div><progress value='{self.done}' max='{max(self.total, 1)}' style='width:24em'></progress> "
                f"{html.escape(count_line(self.label, self.done, self.total, self.seconds()))}</div>")

    def _html(self) -> str:
        rows = "".join(f"<div>{html.escape(line)}</div>" for line in self.board.lines)
        return f"<div class='apnull-progress'>{rows}{''.join(bar._bar() for bar in self.board.bars)}</div>"

    def _show(self, force: bool = False, line: str | None = None) -> None:
        """The cell shown again (``line`` added first), unless shown less than ``every`` seconds ago."""
        board = self.board
        with board.lock:
            if line is not None:
                board.lines.append(line)
            now = time.monotonic()
            if not force and now - board.last < self.every:
                return
            board.last = now
            from IPython.display import HTML, display  # a Jupyter kernel always has IPython

            if board.handle is None:
                board.handle = display(HTML(self._html()), display_id=True)
            else:
                board.handle.update(HTML(self._html()))

    def beside(self, mine: str, other: str) -> "NotebookProgress":
        """A reporter for another null that runs beside this one from now on (in another thread), with a bar
        of its own in the same cell: its lines and bar start with ``other`` ("per-query null") and this
        one's with ``mine`` ("mAP null") until :meth:`alone`."""
        twin = NotebookProgress(self.every, board=self.board)
        twin.where, twin.null, twin.start = self.where, other, self.start
        self.null = mine
        return twin

    def alone(self) -> None:
        """The nulls beside this one are done: each one's bar becomes its last count line, and this one's
        lines and bar name no null again."""
        with self.board.lock:
            others = [bar for bar in self.board.bars if bar is not self]
            self.board.bars[:] = [self]
            self.board.lines.extend(count_line(bar.label, bar.done, bar.total, bar.seconds()) for bar in others)
        self.null = ""
        self._show(force=True)

    def compiling(self) -> None:
        """Say that compiled code is being prepared (a fresh install's first run), once a run."""
        with self.board.lock:
            told, self.board.compiling_told = self.board.compiling_told, True
        self._show(force=True, line=None if told else COMPILING)

    def round(self, info) -> None:
        """Before a round: its units' name, and for a refinement round its line."""
        line = self.named(info)
        self._show(force=True, line=line if info.number > 0 else None)

    def __call__(self, done: int, total: int) -> None:
        self.done, self.total = int(done), int(total)
        self._show(force=done >= total)

    def spent(self, spent) -> None:
        """After the run: its :func:`spent_line` of ``spent`` (with the stage's scope)."""
        self._show(force=True, line=self.scope + spent_line(spent, self.seconds()))


class _Lines:
    """The stream the line reporters of one run share (:meth:`LineProgress.beside`): each write a whole
    line under one lock, so lines of two nulls never tear; on a terminal the count line is rewritten in
    place (over the whole of the longer one before it) and ended before any other line is written."""

    def __init__(self, err):
        self.err, self.lock = err, threading.Lock()
        self.tty = bool(getattr(err, "isatty", lambda: False)())
        self.open = 0  # on a terminal: the length of the count line not ended yet (0: none)
        self.compiling_told = False

    def line(self, text: str) -> None:
        """``text`` on a line of its own."""
        with self.lock:
            self.err.write(("\n" if self.open else "") + text + "\n")
            self.open = 0
            self.err.flush()

    def count(self, text: str, last: bool) -> None:
        """A count line: a line elsewhere; on a terminal over the count line before it, ended when ``last``."""
        with self.lock:
            if self.tty:
                self.err.write("\r" + text.ljust(self.open) + ("\n" if last else ""))
                self.open = 0 if last else len(text)
            else:
                self.err.write(text + "\n")
            self.err.flush()

    def compiling(self, text: str) -> None:
        """``text`` (:data:`COMPILING`) once, whichever null's compile watch says it first."""
        with self.lock:
            told, self.compiling_told = self.compiling_told, True
        if not told:
            self.line(text)


class LineProgress(_Clock):
    """Progress lines on ``err``, the command line's and ``progress=True``'s outside Jupyter
    (:func:`round_line`, :func:`count_line`): on a terminal every update overwrites one line, elsewhere a
    line at most every ``every`` seconds; nothing during the first ``after`` seconds (compiling not
    counted). A new stage's first update is shown at once.

    ``command`` ("apnull score") starts every line, as ``"apnull score: round 2: ..."``. ``label`` names
    what the counts count ("rows read") until a stage says otherwise; without it the counts take each
    round's own units. Two nulls running at once report through :meth:`beside`: every line then names
    its null, and the lines are written whole, one at a time.
    """

    def __init__(self, err, after: float = 2.0, every: float = 5.0, command: str = "", label: str | None = None,
                 *, lines: _Lines | None = None):
        super().__init__()
        self.err, self.after, self.every = err, after, every
        self.prefix = f"{command}: " if command else ""
        if label is not None:
            self.units, self.staged = label, True
        self.last = self.start
        self.out = lines if lines is not None else _Lines(err)

    def beside(self, mine: str, other: str) -> "LineProgress":
        """A reporter for another null that runs beside this one from now on (in another thread): its lines
        start with ``other`` ("per-query null") and this one's with ``mine`` ("mAP null") until
        :meth:`alone`; both write whole lines to the same stream, and count the same run's seconds (each
        leaves out the compiling its own runs watch)."""
        twin = LineProgress(self.err, self.after, self.every, lines=self.out)
        twin.prefix, twin.where, twin.null, twin.start = self.prefix, self.where, other, self.start
        self.null = mine
        return twin

    def alone(self) -> None:
        """The null beside this one is done: its lines name no null again."""
        self.null = ""

    def compiling(self) -> None:
        self.out.compiling(self.prefix + COMPILING)

    def stage(self, units: str, scope: str = "") -> None:
        super().stage(units, scope)
        self.last = time.monotonic() - self.every  # the new stage's first update is shown

    def round(self, info) -> None:
        line = self.named(info)
        if info.number == 0:
            return
        self.out.line(self.prefix + line)
        self.last = time.monotonic()

    def __call__(self, done: int, total: int) -> None:
        now = time.monotonic()
        if now - self.start < self.after or (not self.out.tty and now - self.last < self.every and done < total):
            return
        self.last = now
        self.out.count(self.prefix + count_line(self.label, done, total, self.seconds()), done >= total)

    def spent(self, spent) -> None:
        """After the run: its :func:`spent_line` of ``spent`` (with the stage's scope), shown when the run
        took ``after`` seconds or more, as the other lines: a quick run, and a run whose next step is an
        error, keep stderr to what matters."""
        if self.seconds() < self.after:
            return
        self.out.line(self.prefix + self.scope + spent_line(spent, self.seconds()))
