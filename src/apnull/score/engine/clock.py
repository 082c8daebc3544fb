"""The one clock of a scoring run: its time budget (:class:`Deadline`), numba's compilation kept out of
it (:class:`CompileWatch`), the stages its progress names, and how a duration is said
(:func:`duration_text`, :func:`estimate_text`).

A run given ``budget=S`` seconds makes one :class:`Deadline` when its options are checked
(:class:`apnull.score.options.RunOptions`) and every part of the run reads it: the engine's
refinement rounds (:func:`.sequential.resolve` starts no round its estimate would take past it),
the per-query far-tail counting (:meth:`apnull.score.nulls.laws.LawCache.counted_pvalues` counts no
tail once it has passed: the law's guaranteed upper end is reported instead, flagged as a bound),
and a comparison's two tables and its flip tests, which share one deadline
(:meth:`Deadline.share`). Seconds numba spends compiling (a fresh install's first run) are not
counted: they are told to the progress instead.

Progress objects are callables ``progress(done, total)`` with optional hooks: ``round(info)``,
``compiling()``, ``compiled(seconds)`` (see :func:`.sequential.resolve`) and ``stage(units, scope)``,
called as a run starts a new stage whose ``done`` counts ``units`` ("perturbations", "queries, far
tails counted"); ``scope`` says which part of a larger run it belongs to ("table A").
:func:`tell_stage` calls the hook where it exists, and :class:`Scoped` adds a scope to every stage a
progress object is told (a comparison's tables).
"""

from __future__ import annotations

import contextlib
import threading
import time

from ..table.names import tell_stage  # the stage hook, with the progress words (re-exported)

__all__ = ["Deadline", "deadline_of", "drawers_on", "alone_fits", "Pace", "COMPARABLE", "CompileWatch", "Scoped",
           "tell_stage", "duration_text", "estimate_text"]


class CompileWatch:
    """Seconds numba spends compiling while it is installed, told to ``progress`` as it happens.

    The first compilation calls ``progress.compiling()`` (a fresh install's first run: "preparing
    compiled code"), and each finished top-level compilation ``progress.compiled(seconds)``, when
    ``progress`` has those methods; ``seconds`` is the total so far. Compilations run in whatever
    thread first calls a kernel (numba holds one lock while compiling), so nesting is counted per
    thread. Loading a kernel from numba's cache is not compiling, and is counted as the run's time.
    """

    def __init__(self, progress=None):
        self.progress, self.seconds, self._told = progress, 0.0, False
        self._local, self._lock = threading.local(), threading.Lock()

    def on_start(self, event):
        depth = getattr(self._local, "depth", 0)
        self._local.depth = depth + 1
        if depth == 0:
            self._local.t0 = time.monotonic()
            with self._lock:
                first, self._told = not self._told, True
            if first and hasattr(self.progress, "compiling"):
                self.progress.compiling()

    def on_end(self, event):
        if getattr(self._local, "depth", 0) == 0:  # a compilation that started before this watch was installed
            return  # (listeners are global: another thread's run may install a watch while one compiles)
        self._local.depth -= 1
        if self._local.depth == 0:
            with self._lock:
                self.seconds += time.monotonic() - self._local.t0
                total = self.seconds
            if hasattr(self.progress, "compiled"):
                self.progress.compiled(total)

    @contextlib.contextmanager
    def installed(self):
        from numba.core import event

        class Listener(event.Listener):  # numba's interface, forwarding to this watch
            on_start, on_end = self.on_start, self.on_end

        listener = Listener()
        event.register("numba:compile", listener)
        try:
            yield self
        finally:
            event.unregister("numba:compile", listener)


class _Shared:
    """What the deadlines of one run share: the clock, its start and the compile watch."""

    def __init__(self, clock):
        self.clock, self.start, self.watch, self.depth = clock, clock(), CompileWatch(), 0
        self.lock = threading.Lock()
        self.exits: list = []
        self.drawing = 0  # nulls drawing now (:meth:`Deadline.drawing`)
        self.turn = threading.Event()  # clear while the first null holds the others (:meth:`Deadline.held`)
        self.turn.set()


class Deadline:
    """``seconds`` of a run's time, counted from the deadline's creation; numba's compilation excluded.

    Parameters
    ----------
    seconds : float
        The run's budget (what its settings report).
    clock : callable, optional
        Seconds now (``time.monotonic``); tests inject a fake one.

    A deadline made by :meth:`share` has the same clock, start and budget and an earlier end:
    ``limit`` is the seconds from the start it allows (``seconds`` for the run's own deadline).
    """

    def __init__(self, seconds: float, clock=time.monotonic, *, _shared=None, _limit=None):
        self.seconds = float(seconds)
        self._shared = _shared if _shared is not None else _Shared(clock)
        self.limit = self.seconds if _limit is None else float(_limit)

    def elapsed(self) -> float:
        """Seconds since the start, compiling excluded."""
        s = self._shared
        return s.clock() - s.start - s.watch.seconds

    def left(self) -> float:
        """Seconds left before this deadline (negative once passed)."""
        return self.limit - self.elapsed()

    def passed(self, extra: float = 0.0) -> bool:
        """True when ``extra`` more seconds would take the run past this deadline."""
        return self.elapsed() + extra > self.limit

    def share(self, fraction: float) -> "Deadline":
        """A deadline on the same clock ending once ``fraction`` of the time now left is spent (a
        comparison's table A gets half of what is left, B the rest: both within the one budget)."""
        return Deadline(self.seconds, _shared=self._shared,
                        _limit=self.elapsed() + max(0.0, fraction * self.left()))

    @contextlib.contextmanager
    def drawing(self):
        """Count a null's rounds as drawing on this run's clock while the block runs: two nulls drawing
        at once (the queries' null beside the mAP null's rounds) share the cores, so each one's rounds
        take longer than its rounds alone did (:meth:`drawers`, read by :func:`.sequential.resolve`'s
        estimates). Gives True for the first null drawing (the mAP null), which may hold the others
        (:meth:`held`): its decisions come first, as when the nulls ran in turn."""
        s = self._shared
        with s.lock:
            s.drawing += 1
            first = s.drawing == 1
        try:
            yield first
        finally:
            with s.lock:
                s.drawing -= 1

    def drawers(self) -> int:
        """How many nulls are drawing on this run's clock now (:meth:`drawing`; 1 while the others are
        held, and at least 1)."""
        return max(self._shared.drawing, 1) if self._shared.turn.is_set() else 1

    @contextlib.contextmanager
    def held(self):
        """The other nulls drawing on this clock wait at their next batch (:meth:`wait_turn`) while the
        block runs: the first null's round that fits in the time left alone, not beside them."""
        turn = self._shared.turn
        turn.clear()
        try:
            yield self
        finally:
            turn.set()

    def wait_turn(self, timeout: float | None = None) -> bool:
        """Wait while the first null holds the others (:meth:`held`); False if ``timeout`` seconds passed."""
        return self._shared.turn.wait(timeout)

    def text(self) -> str:
        """The budget and what is spent of it, for messages: "the budget of 10 s (7.2 s spent)"."""
        spent = max(self.elapsed(), 0.0)
        if self.limit < self.seconds:
            return (f"this part's share of the budget of {self.seconds:g} s (up to {self.limit:.1f} s; "
                    f"{spent:.1f} s spent)")
        return f"the budget of {self.seconds:g} s ({spent:.1f} s spent)"

    @contextlib.contextmanager
    def watching(self):
        """Keep numba's compilation out of this deadline's time while the block runs (nested blocks
        of the same run install one watch)."""
        s = self._shared
        with s.lock:
            s.depth += 1
            first = s.depth == 1
            if first:
                stack = contextlib.ExitStack()
                stack.enter_context(s.watch.installed())
                s.exits.append(stack)
        try:
            yield self
        finally:
            with s.lock:
                s.depth -= 1
                if s.depth == 0:
                    s.exits.pop().close()


def drawers_on(deadline) -> int:
    """The nulls drawing now on ``deadline``'s clock (:meth:`Deadline.drawers`); 1 without a deadline."""
    return 1 if deadline is None else deadline.drawers()


def alone_fits(deadline, first: bool, estimate, slower: float) -> bool:
    """Whether the first null drawing on ``deadline``'s clock (``first``, :meth:`Deadline.drawing`) holds the
    others for its next round (:meth:`Deadline.held`): its ``estimate`` beside them (``slower`` times its rate
    alone) passes the deadline, and alone it does not."""
    return bool(first and deadline is not None and estimate is not None and slower > 1
                and deadline.passed(estimate) and not deadline.passed(estimate / slower))


#: A round's rate estimates another's only when it drew at least 1/COMPARABLE of that round's draws
#: (:class:`Pace`).
COMPARABLE = 8


class Pace:
    """A null's seconds per draw (each draw at its unit's cost), from its rounds so far, for the estimate
    of its next round (:func:`.sequential.resolve`).

    A round's time is its draws at some rate plus what does not grow with them: a dask round's
    latency (tasks sent, outputs gathered: tenths of a second), and the exact laws counted in place
    of draws (time, but no draw). The rate of a round much smaller than the next would carry that part
    over many times (a per-query round of 3,415 draws that also counted 140 laws estimated the next one,
    668,585 draws, at 14 s; it took a fraction of a second). So the estimate of a round of ``draws``
    takes the rate of the latest round that drew at least ``draws / COMPARABLE`` (whose fixed part is
    then carried over at most :data:`COMPARABLE` times), or, when none did, of the round that drew the
    most; with ``slower``: the nulls drawing now (``drawers``) over those that drew during all of that
    round, at least 1 (two nulls drawing at once share the cores)."""

    def __init__(self):
        self.rounds = []  # (seconds a draw, draws, nulls drawing during all of it), in order

    def add(self, seconds: float, draws: float, during: int) -> None:
        """A round's time (compiling left out) and its draws at their costs; a round that drew nothing
        tells no rate."""
        if draws > 0:
            self.rounds.append((seconds / draws, draws, during))

    def ahead(self, draws: float, drawers: int) -> tuple:
        """(seconds or None before any round, slower) of a round of ``draws`` draws at their costs."""
        if not self.rounds:
            return None, 1.0
        near = [r for r in self.rounds if r[1] * COMPARABLE >= draws]
        rate, _, during = near[-1] if near else max(self.rounds, key=lambda r: r[1])
        slower = max(1.0, drawers / during)
        return draws * rate * slower, slower


def deadline_of(budget) -> Deadline | None:
    """A :class:`Deadline`: ``budget`` itself when it is one, a new one of ``budget`` seconds, or None."""
    if budget is None or isinstance(budget, Deadline):
        return budget
    return Deadline(float(budget))


class Scoped:
    """``progress`` with ``scope`` given to every stage it is told (e.g. "table A" of a comparison),
    and to the reporter it makes for a null beside (``beside``); every other call is passed on as it is."""

    def __init__(self, progress, scope: str):
        self.progress, self.scope = progress, scope
        tell_stage(progress, "perturbations", scope)

    def __call__(self, done: int, total: int) -> None:
        self.progress(done, total)

    def __getattr__(self, name):  # round, compiling, compiled, beside, alone: as the wrapped object has them
        found = getattr(self.progress, name)
        if name == "beside":  # the reporter of the null beside keeps the scope too
            return lambda mine, other: Scoped(found(mine, other), self.scope)
        return found

    def stage(self, units: str, scope: str = "") -> None:
        tell_stage(self.progress, units, f"{self.scope}, {scope}" if scope else self.scope)


def duration_text(seconds: float) -> str:
    """A duration as people say it: "under 1 s", "45 s", "12 min", "3.2 h"."""
    if seconds < 0.5:
        return "under 1 s"
    if seconds < 90:
        return f"{seconds:.0f} s"
    if seconds < 5400:
        return f"{seconds / 60:.0f} min"
    return f"{seconds / 3600:.1f} h"


def estimate_text(seconds: float) -> str:
    """An estimated duration as people say it: "about 45 s", "about 12 min", or "under 1 s" (never
    "about under 1 s")."""
    text = duration_text(seconds)
    return text if text.startswith("under") else f"about {text}"
