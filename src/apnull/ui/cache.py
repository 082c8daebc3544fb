"""The dashboard's caches, shared by every session of the server process.

A class of 30 students asks for the same views, or for views that share sizes, many times a minute,
so each result is computed once and then served from memory. The caches are :class:`apnull.memo.Memo`
objects: bounded by entries (and bytes where entries vary in size), least recently used dropped
first, and a key asked for by several sessions at once is computed by one of them while the others
wait. Shared objects are read-only (frozen arrays, laws with read-only arrays, figures that are only
read: ``st.plotly_chart`` serialises a copy). The views themselves are built by :mod:`apnull.ui.figures`
and the progress bar is :class:`apnull.ui.progress.ProgressBar`; this module only fetches and keeps.

- ``DRAWS``: the Monte Carlo draws (AP and Precision@R, 16 bytes a draw) of each (m, n, seed), at most
  256 MB. Draw i of a size is the same whatever the number of draws, so a view asking for more draws
  of a cached size only draws the new ones (10,000 -> 20,000 costs 10,000), and fewer is a slice.
- ``SUMMARIES``: one :class:`apnull.views.null.SizeSummary` per (m, n, draws, seed), about 7 KB (two
  density curves on 401 points and eight statistics); 8,192 entries, about 60 MB.
- ``EXACT_SUMMARIES``: the exact-law rows of one size (quantiles page, "exact law"); 1,024 tables.
- ``VIEWS``: whole views per input set (the density figure pair, the quantile summary and figure, the
  lookup figures); 96 entries and 128 MB (a density view of 200 sizes is about 1.7 MB).
- ``MOMENTS``: closed-form (E[AP], SD[AP]) pairs; 1,024 entries.
- null laws: the library's own cache (:data:`apnull.significance.CACHE_BYTES`, 256 MB, 64 laws).

A view is looked up first; only when it is missing are its sizes fetched, under a progress bar, in
batches: one compiled call draws a batch's missing rows and one summarises it (:mod:`apnull._kde`),
so a view takes the GIL back a few times, not a thousand (under 30 sessions each time can cost up to
5 ms). A rerun of a cached view costs microseconds of cache work.
"""

from __future__ import annotations

import threading
from collections.abc import Callable, Hashable, Sequence
from concurrent.futures import ThreadPoolExecutor

import numpy as np

from .. import significance
from ..exact import ap_variance, expected_ap
from ..memo import Memo, rough_nbytes
from ..sampling import draw_many
from ..views import null as summaries
from . import figures
from .pageview import PageView
from .progress import ProgressBar


def _draws_bytes(value) -> int:
    return sum(a.nbytes for a in value)


DRAWS = Memo(4096, max_bytes=256 * 2**20, sizeof=_draws_bytes)
SUMMARIES = Memo(8192)
EXACT_SUMMARIES = Memo(1024)
VIEWS = Memo(96, max_bytes=128 * 2**20, sizeof=rough_nbytes)
MOMENTS = Memo(1024)


#: Ranks drawn per batch of sizes (one compiled call to sample them, one to summarise them): about
#: 0.05 s on two cores, so the progress bar moves and the GIL is taken back a few times a view.
BATCH_RANKS = 1 << 24


def _draws(keys) -> list[tuple[np.ndarray, np.ndarray]]:
    """(ap, pr) of the first d draws of each (m, n, d, seed): cached draws are sliced or extended (only
    the missing rows are drawn, all sizes in one call of the sampler), never drawn again."""
    have, requests = [], []
    for m, n, d, seed in keys:
        cur = DRAWS.get((m, n, seed))
        have.append(cur)
        if cur is None or cur[0].size < d:
            requests.append((m, n, seed, 0 if cur is None else cur[0].size, d))
    new = iter(draw_many(requests))
    out = []
    for (m, n, d, seed), cur in zip(keys, have):
        if cur is None or cur[0].size < d:
            ap, pr = next(new)
            if cur is not None:
                ap, pr = np.concatenate([cur[0], ap]), np.concatenate([cur[1], pr])
            for arr in (ap, pr):
                arr.setflags(write=False)
            cur = DRAWS.put((m, n, seed), (ap, pr), replace=lambda old, size=ap.size: old[0].size < size)
        out.append((cur[0][:d], cur[1][:d]))
    return out


def size_draws(m: int, n: int, draws: int, seed: int) -> tuple[np.ndarray, np.ndarray]:
    """(ap, pr): the first ``draws`` Monte Carlo draws of (m, n) under ``seed`` (read-only arrays, the
    numbers of :func:`apnull.sample_null`)."""
    return _draws([(m, n, draws, seed)])[0]


def size_summaries(sizes: Sequence[tuple[int, int]], draws: int, seed: int, progress=None) -> list:
    """The cached :class:`~apnull.views.null.SizeSummary` of each (m, n) from ``draws`` draws under
    ``seed`` (the same numbers on every page: the draws depend only on (seed, m, n)). Missing ones are
    made in batches of about ``BATCH_RANKS`` ranks, each batch one call to sample and one to summarise;
    ``progress(done, total, m, n)`` is called after each batch."""
    keys = [(m, n, draws, seed) for m, n in sizes]

    def compute(batch):
        return summaries.summarise_sizes([(m, n, *x) for (m, n, _, _), x in zip(batch, _draws(batch))])

    out, batch, ranks = [], [], 0
    for i, key in enumerate(keys, start=1):
        batch.append(key)
        ranks += (min(key[0], key[1]) + 1) * draws if key not in SUMMARIES else 0
        if ranks >= BATCH_RANKS or i == len(keys):
            out += SUMMARIES.get_or_compute_many(batch, compute)
            if progress is not None:
                progress(i, len(keys), *key[:2])
            batch, ranks = [], 0
    return out


def size_summary(m: int, n: int, draws: int, seed: int) -> summaries.SizeSummary:
    """:func:`size_summaries` of one size."""
    return size_summaries([(m, n)], draws, seed)[0]


def cached_exact_size_summary(m: int, n: int, tol: float = 1e-3):
    """Cached :func:`apnull.views.null.exact_size_summary` (a small table; callers only read it)."""
    return EXACT_SUMMARIES.get_or_compute((m, n, tol), lambda: summaries.exact_size_summary(m, n, tol))


def _view(key: Hashable, sizes, fetch: Callable, build: Callable[[list], object], label: str, container=None,
          progress: bool = True):
    """The cached view ``key``. On a miss ``fetch(sizes, progress)`` gets its parts (under a progress
    bar unless not ``progress``) and ``build(parts)`` makes it (once, whatever the sessions asking)."""
    view = VIEWS.get(key)
    if view is None:
        bar = ProgressBar(label, container) if progress else None
        parts = fetch(sizes, bar)
        if bar is not None:
            bar.close()
        view = VIEWS.get_or_compute(key, lambda: build(parts))
    return view


def _exact_parts(sizes, progress=None) -> list:
    out = []
    for i, (m, n) in enumerate(sizes, start=1):
        out.append(cached_exact_size_summary(m, n))
        if progress is not None:
            progress(i, len(sizes), m, n)
    return out


def _density_key(M, N, K, draws, seed, show_exact) -> tuple:
    return ("density", M, N, K, draws, seed, show_exact)


#: the "Null densities" views' keys in ``VIEWS``: ``DENSITY_VIEWS.ready(M, N, K, draws, seed, show_exact)`` is
#: True when :func:`density_figures` has that view (it will answer at once)
DENSITY_VIEWS = PageView(VIEWS, key=_density_key)


def density_figures(M: int, N: int, K: int, draws: int, seed: int, show_exact: bool, container=None,
                    progress: bool = True):
    """The cached "Null densities" view (:func:`apnull.ui.figures.density_view`): per metric (metric,
    figure, sizes with the exact overlay or None)."""
    sizes = summaries.check_grid_request(M, N, K, draws)
    return _view(DENSITY_VIEWS.key(M, N, K, draws, seed, show_exact), sizes,
                 lambda sizes, bar: size_summaries(sizes, draws, seed, bar),
                 lambda parts: figures.density_view(parts, M, N, draws, show_exact), "Sampling null rankings",
                 container, progress)


#: A "Null densities" view not yet cached that draws more ranks than this (about 0.05 s of compiled work)
#: is first shown from fewer draws per size (:func:`preview_draws`) while the whole view is made in the
#: background (:func:`density_in_background`): a new M for a class of 30 was about 1 s of compiled CPU
#: that every student asking waited for, behind the others' runs.
PREVIEW_RANKS = 1 << 22


def preview_draws(M: int, N: int, K: int, draws: int) -> int | None:
    """Draws per size of the preview of the view (M, N, K, draws): at most ``PREVIEW_RANKS`` ranks drawn
    in all, rounded down to one significant digit, at least 100 (the page's minimum); None when the
    whole view draws no more than that (it is shown at once) or the preview would not be smaller.

    The preview's draws are the first draws of each size, the numbers the whole view starts with
    (draw i of a size does not depend on the number of draws), so the whole view then draws only
    the rest (:data:`DRAWS`)."""
    sizes = summaries.check_grid_request(M, N, K, draws)
    per_draw = sum(min(m, n) + 1 for m, n in sizes)  # ranks drawn per draw of every size (see size_summaries)
    if per_draw * draws <= PREVIEW_RANKS:
        return None
    d = max(1, PREVIEW_RANKS // per_draw)
    unit = 10 ** (len(str(d)) - 1)
    d = max(100, d // unit * unit)
    return d if d < draws else None


_BACKGROUND = None  # one worker thread, made on first use
_PENDING: set = set()
_FAILED: set = set()  # keys whose background build raised: the next page run builds them in front, showing why
_PENDING_LOCK = threading.Lock()


def _background_worker():
    global _BACKGROUND
    with _PENDING_LOCK:
        if _BACKGROUND is None:
            _BACKGROUND = ThreadPoolExecutor(max_workers=1, thread_name_prefix="apnull-density-view")
        return _BACKGROUND


def _in_background(key: Hashable, make: Callable[[], object]):
    """Run ``make()`` (which stores the view ``key`` in :data:`VIEWS`) on the background worker (one
    thread for the server, its compiled draws on one core so the pages' runs keep the other), unless
    the view is stored or already on its way. Returns the Future, or None."""
    with _PENDING_LOCK:
        if key in VIEWS or key in _PENDING:
            return None
        _PENDING.add(key)

    def work():
        try:
            import numba  # loaded by the sampler anyway; the thread count is this thread's own

            numba.set_num_threads(1)
            make()
        except Exception:
            with _PENDING_LOCK:
                _FAILED.add(key)
            raise  # kept by the Future; the page's next run meets the error itself
        finally:
            with _PENDING_LOCK:
                _PENDING.discard(key)

    return _background_worker().submit(work)


def settled(view: PageView, *args) -> bool:
    """True when the view of ``args`` is stored, or its background build failed: either way the page's
    next run has something to show (the view, or the error met again in front)."""
    return view.ready(*args) or view.key(*args) in _FAILED


def _failed_before(key) -> bool:
    """True (once) when the background build of ``key`` failed: build it in front this time."""
    with _PENDING_LOCK:
        if key in _FAILED:
            _FAILED.discard(key)
            return True
        return False


def _whole_in_background(view: PageView, args: tuple, make: Callable):
    """Start making the whole view ``view`` of ``args`` (M, N, K, draws, ...) in the background with
    ``make(draws, container, progress)`` (:func:`_in_background`): the Future, or None."""
    return _in_background(view.key(*args), lambda: make(args[3], None, False))


def summarised(M: int, N: int, K: int, draws: int, seed: int) -> bool:
    """True when every size summary of the view (M, N, K, draws, seed) is in :data:`SUMMARIES`: its
    view is then quick to make whatever its size (a view made for the densities page leaves them for the
    quantiles page, and the other way round), so it needs no preview."""
    return all((m, n, draws, seed) in SUMMARIES for m, n in summaries.check_grid_request(M, N, K, draws))


def _preview(view: PageView, args: tuple, make: Callable, container=None, sampled: bool = True):
    """(view, draws shown) of the page view ``view`` of ``args`` (M, N, K, draws, seed, ...): the whole
    view when it is stored, cheap, its sizes all summarised (:func:`summarised`), not ``sampled`` (an
    exact view has no preview) or its background build failed (built here, so the page meets the
    error); else its preview from :func:`preview_draws` draws per size, the whole view started in the
    background (:func:`_whole_in_background`). ``make(draws, container, progress)`` makes the view of
    ``args`` with ``draws`` draws per size."""
    M, N, K, draws, seed = args[:5]
    ready, failed = view.ready(*args), _failed_before(view.key(*args))
    quick = ready or failed or not sampled or summarised(M, N, K, draws, seed)
    few = None if quick else preview_draws(M, N, K, draws)
    if few is None:
        return make(draws, container, True), draws
    _whole_in_background(view, args, make)
    return make(few, container, True), few


def _density_maker(M: int, N: int, K: int, seed: int, show_exact: bool) -> Callable:
    return lambda draws, container, progress: density_figures(M, N, K, draws, seed, show_exact, container,
                                                              progress=progress)


def density_in_background(M: int, N: int, K: int, draws: int, seed: int, show_exact: bool):
    """Start making the "Null densities" view (M, N, K, draws, seed, show_exact) in the background;
    several sessions asking start it once. Returns the Future, or None when the view is cached or
    already on its way. A session asking for it meanwhile with :func:`density_figures` joins the
    computation in progress (:class:`~apnull.memo.Memo`)."""
    return _whole_in_background(DENSITY_VIEWS, (M, N, K, draws, seed, show_exact),
                                _density_maker(M, N, K, seed, show_exact))


def density_preview(M: int, N: int, K: int, draws: int, seed: int, show_exact: bool, container=None):
    """(view, draws shown): the "Null densities" view when it is cached or cheap; else its preview from
    :func:`preview_draws` draws per size (cached too), the whole view started in the background
    (:func:`density_in_background`). The page shows the preview and asks again until the whole view
    is ready (:func:`settled`). A view made here shows its progress in ``container``."""
    return _preview(DENSITY_VIEWS, (M, N, K, draws, seed, show_exact), _density_maker(M, N, K, seed, show_exact),
                    container)


def _quantile_key(M, N, K, draws, seed, method) -> tuple:
    return ("quantiles", M, N, K, draws if method == "mc" else None, seed if method == "mc" else None, method)


#: the "Quantiles vs size" views' keys in ``VIEWS`` (``QUANTILE_VIEWS.ready(M, N, K, draws, seed, method)``)
QUANTILE_VIEWS = PageView(VIEWS, key=_quantile_key)


def quantile_view(M: int, N: int, K: int, draws: int, seed: int, method: str, container=None,
                  progress: bool = True):
    """The cached "Quantiles vs size" view (:func:`apnull.ui.figures.quantile_view_of`): (long summary,
    wide table, figure), Monte Carlo or exact laws."""
    sizes = summaries.check_grid_request(M, N, K, draws)
    if method == "mc":
        fetch, label = (lambda sizes, bar: size_summaries(sizes, draws, seed, bar)), "Sampling null rankings"
    else:
        fetch, label = _exact_parts, "Exact laws"
    return _view(QUANTILE_VIEWS.key(M, N, K, draws, seed, method), sizes, fetch,
                 lambda parts: figures.quantile_view_of(parts, M, N, K, method), label, container, progress)


def quantile_preview(M: int, N: int, K: int, draws: int, seed: int, method: str, container=None):
    """(view, draws shown): :func:`quantile_view`, or while a large Monte Carlo view is not cached its
    preview from :func:`preview_draws` draws per size, the whole view made in the background
    (:func:`_preview`; the size summaries it needs are the densities page's: a view made for one page
    serves the other)."""
    return _preview(QUANTILE_VIEWS, (M, N, K, draws, seed, method),
                    lambda d, c, p: quantile_view(M, N, K, d, seed, method, c, progress=p), container,
                    sampled=method == "mc")


def null_law(m: int, n: int, metric: str = "ap", method: str = "auto", draws: int | None = None,
             seed: int | None = 0, tol: float = 1e-3):
    """The null law (see apnull.null_distribution, whose bounded, thread-safe cache holds it); seed
    defaults to 0 so Monte Carlo is reproducible."""
    return significance.null_distribution(m, n, metric, method, draws=draws, seed=seed, tol=tol)


def cached_law_figure(m: int, n: int, metric: str, method: str, draws: int | None, seed: int | None,
                      threshold: float, value: float, mean: float, q: float):
    """:func:`apnull.plots.lookup.law_figure` of the cached :func:`null_law` (through
    :func:`apnull.ui.figures.law_view`), built once per input set (a wide exact law takes tens of
    milliseconds to bin and draw)."""
    key = ("law", m, n, metric, method, draws, seed, threshold, value, mean, q)
    return VIEWS.get_or_compute(key, lambda: figures.law_view(null_law(m, n, metric, method, draws=draws, seed=seed),
                                                              threshold, value, mean, q))


def moments(m: int, n: int) -> tuple[float, float]:
    """(E[AP], SD[AP]) in closed form."""
    return MOMENTS.get_or_compute((m, n), lambda: (expected_ap(m, n), float(np.sqrt(ap_variance(m, n)))))


def warm_default_views() -> None:
    """Compute what a visitor sees first, so the first visitors find it cached: the default view of the
    densities and quantiles pages (the reference experiment, :data:`apnull.views.null.DEFAULT_VIEW`) and the threshold lookup's laws for its first
    size (about 0.3 s). Runs in the warm-up thread (see :mod:`apnull.ui.warmup`); a visitor who asks
    meanwhile joins the computation in progress instead of repeating it."""
    d = summaries.DEFAULT_VIEW
    density_figures(d["M"], d["N"], d["K"], d["draws"], d["seed"], False, progress=False)
    quantile_view(d["M"], d["N"], d["K"], d["draws"], d["seed"], "mc", progress=False)
    for metric in summaries.METRICS:
        null_law(d["M"], d["N"], metric)
    moments(d["M"], d["N"])
