"""The options of a scoring run, checked once: one object shared by every scorer of a screen.

``score_profiles``, ``score_consistency`` (and whatever scores a screen next) take the same run
options as keyword arguments and hand them on as one :class:`RunOptions`, made by
:meth:`RunOptions.checked` with the checks of :mod:`apnull.limits`. What runs behind the public
functions trusts it. The command line adds the same options to every scoring subcommand with one
helper (``apnull.cli._common.add_run_options``).
"""

from __future__ import annotations

from typing import Callable, NamedTuple

from ..limits import (SCORE_MAX_PERMUTATIONS, check_alpha, check_budget, check_permutations, check_progress,
                      check_seed, check_threads, check_where)
from .engine.clock import Deadline
from .engine.progress import default_progress

__all__ = ["RunOptions"]


class RunOptions(NamedTuple):
    """How a scoring run draws and where it runs (every field checked by :meth:`checked`)."""

    seed: int = 0                     #: root of every random stream of the run
    permutations: object = "auto"     #: "auto" (adaptive), a whole number B, or "all" (every assignment)
    alpha: float = 0.05               #: FDR level of the ``significant`` columns
    threads: int | None = None        #: in-process threads (None: one per core)
    workers: int | None = None        #: local dask workers to start (None: none)
    scheduler: object = None          #: a dask scheduler address or client (None: in process)
    progress: Callable | None = None  #: progress(done, total), and optionally .round(info); True -> default_progress()
    budget: float | None = None       #: seconds the whole run may take (None: no limit)
    deadline: object = None           #: the run's one clock (:class:`.engine.clock.Deadline`) when budgeted

    @classmethod
    def checked(cls, *, seed=0, permutations="auto", alpha=0.05, threads=None, workers=None, scheduler=None,
                progress=None, budget=None, null="permutation", max_permutations=SCORE_MAX_PERMUTATIONS):
        """The options, each checked by :mod:`apnull.limits` (ValueError naming what to change).

        ``null`` is the null the permutations are for ("all" applies to "permutation" only);
        ``max_permutations`` the largest fixed B accepted. A ``budget`` with a fixed number of
        permutations (or "all") is refused: it would be ignored.
        """
        scheduler, workers = check_where(scheduler, workers)
        if budget is not None and permutations != "auto":
            raise ValueError(f"budget applies to permutations='auto' (adaptive rounds) only; permutations="
                             f"{permutations!r} has no rounds to stop: leave the budget out")
        progress = check_progress(progress)
        if isinstance(progress, bool):  # True: the library's own reporter (engine.progress); False: none
            progress = default_progress() if progress else None
        deadline = budget if isinstance(budget, Deadline) else None
        seconds = check_budget(deadline.seconds if deadline is not None else budget)
        if deadline is None and seconds is not None:
            deadline = Deadline(seconds)
        return cls(check_seed(seed, allow_none=False), check_permutations(permutations, null, max_permutations),
                   check_alpha(alpha), check_threads(threads), workers, scheduler, progress, seconds, deadline)

    @property
    def adaptive(self) -> bool:
        return self.permutations == "auto"
