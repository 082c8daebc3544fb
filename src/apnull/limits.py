"""Every documented limit, and the input checks that enforce them.

The library, the command line and the dashboard all check their inputs here, once, at the public
boundary; private functions behind it trust their arguments. Every check raises :class:`ValueError`
with a sentence that says what to change, so the CLI can print it as one line and the dashboard can
show it in ``st.error``. The limits keep a server's memory and time bounded; docs/limits.md lists them.
"""

from __future__ import annotations

import difflib
import numbers
import re

import numpy as np

# -- null laws and Monte Carlo ---------------------------------------------------------------------
#: Largest ranking (m + n items) any null computation accepts.
MAX_ITEMS = 1_000_000
#: Largest number of Monte Carlo draws for one (m, n).
MAX_DRAWS = 10_000_000
#: Largest number of placements C(m + n, m) the exact AP law counts when asked for explicitly.
EXACT_MAX_PLACEMENTS = 2_000_000
#: Largest number of cell updates N * m * G of the AP grid law.
GRID_MAX_WORK = 4 * 10**9
#: Largest Monte Carlo work of one call: draws * draw_cost(m, n) (about min(m, n) + 1 sampled ranks
#: a draw, more for lopsided sizes), summed over the sizes asked for (tens of seconds on 2 cores).
MAX_SAMPLING_WORK = 2 * 10**9
#: Largest seed (seeds are non-negative 63-bit integers).
MAX_SEED = 2**63 - 1

#: Largest number of sizes (M*i, N*i), i = 1..K, of one grid sample (library and CLI).
MAX_GRID_SIZES = 1000

# -- dashboard views --------------------------------------------------------------------------------
#: Views over sizes (M*i, N*i): at most this many sizes K ...
MAX_SIZES = 200
#: ... between these many draws per size ...
MIN_VIEW_DRAWS, MAX_VIEW_DRAWS = 100, 1_000_000
#: ... and at most this many draws held in memory for one view (K x draws).
MAX_VIEW_TOTAL_DRAWS = 2_000_000
#: Largest n of a threshold curve (the "Binning n" page).
MAX_CURVE_N = 5000
#: Binning n: breakpoints up to this value, growth exponents in this range.
BINNING_MAX_VALUE = 1_000_000
BINNING_POWER_RANGE = (1.0, 5.0)
#: Largest ranking the ranking editor holds.
MAX_RANKING_ITEMS = 1000

# -- sampled metrics (Rendle) page and `apnull sampled` ------------------------------------------------
#: Largest catalogue n and number of sampled irrelevant items s.
SAMPLED_MAX_ITEMS, SAMPLED_MAX_SAMPLES = 10_000_000, 100_000
#: Most evaluation instances (true ranks) per algorithm.
SAMPLED_MAX_INSTANCES = 1000
#: Largest total instances x (s + 1) for the tables (NDCG and the SD of AP sum over the law of the
#: sampled rank, about 3 s at the limit).
SAMPLED_MAX_TABLE_CELLS = 3_000_000
#: Most simulated repetitions, and the largest repetitions x total instances (about 3 s at the limit).
SAMPLED_MAX_REPETITIONS, SAMPLED_MAX_SIMULATED = 100_000, 2_500_000

# -- scoring a screen (apnull.score, `apnull score`, the "Score your data" page) ---------------------------
#: Largest input file (checked before reading): a table that size needs a few GB once parsed.
SCORE_MAX_FILE_BYTES = 200 * 1024 * 1024
#: Largest part of a Parquet file read by its path (``.parquet``/``.pq``/``.parq``; the library and the
#: command line, not uploads): the uncompressed bytes of the columns asked (and the filter's) in the row
#: groups whose statistics may hold a kept row (the whole file without ``columns=``/``filters=``), from the
#: file's metadata before anything is decoded. It replaces the file limit for such reads, so a whole
#: JUMP screen (641,888 rows x 737 float32 features: 1.9 GB) or one plate of a larger file can be read.
SCORE_MAX_PART_BYTES = 4 * 1024 * 1024 * 1024
#: Most control rows in one stratum: its sorted similarity rows and their ranks take 12 n^2 bytes
#: (1.2 GB at the limit).
SCORE_MAX_STRATUM_CONTROLS = 10_000
#: Most cells of one perturbation's pool table: k replicates x P pool members (each of its strata's
#: replicates and controls; with negatives="others" every profile there), 24 bytes each (a similarity and
#: two counts): 200 MB a pool, one pool a thread in flight. A perturbation on every plate of a large screen
#: (JUMP's positive controls: about 3,900 replicates beside 65,000 pool members, 6 GB) passes it.
SCORE_MAX_POOL_CELLS = 1 << 23
#: Most label permutations per perturbation (library and CLI; B x 8 bytes per perturbation in flight).
SCORE_MAX_PERMUTATIONS = 1_000_000
#: Most label permutations per perturbation on the "Score your data" page (a shared server).
SCORE_PAGE_MAX_PERMUTATIONS = 100_000
#: Most threads of an in-process scoring run.
SCORE_MAX_THREADS = 256
#: ``permutations="all"`` enumerates at most this many label assignments per perturbation.
SCORE_MAX_EXACT_ASSIGNMENTS = 200_000


def as_int(value, name: str, minimum: int | None = None, maximum: int | None = None) -> int:
    """Return ``value`` as a Python int, or raise ValueError naming ``name`` and the allowed range.

    Accepts ints, integral floats (``4.0``) and numpy integers; rejects bools, fractions, NaN,
    infinities and strings.
    """
    if isinstance(value, (bool, np.bool_)):
        raise ValueError(f"{name} must be a whole number, got {str(value)[:40]!r}")
    if isinstance(value, numbers.Integral):
        out = int(value)
    elif isinstance(value, numbers.Real) and np.isfinite(float(value)) and float(value).is_integer():
        out = int(value)
    else:
        raise ValueError(f"{name} must be a whole number, got {str(value)[:40]!r}")
    if minimum is not None and out < minimum:
        raise ValueError(f"{name} must be at least {minimum:,}, got {out:,}")
    if maximum is not None and out > maximum:
        raise ValueError(f"{name} must be at most {maximum:,}, got {out:,}")
    return out


def as_real(value, name: str, low: float, high: float, why: str = "") -> float:
    """Return ``value`` as a finite float in [low, high], else raise ValueError naming ``name``, the range
    and, when given, ``why`` the range is what it is."""
    rng = f"[{_number_text(low)}, {_number_text(high)}]"
    try:
        out = float(value)
    except (TypeError, ValueError):
        raise ValueError(f"{name} must be a number in {rng}, got {str(value)[:40]!r}") from None
    if not (np.isfinite(out) and low <= out <= high):
        raise ValueError(f"{name} must lie in {rng}{why}, got {_number_text(out)}")
    return out


def _number_text(x: float) -> str:
    """1000000 -> '1,000,000', 0.9 -> '0.9', 1e308 -> '1e+308', nan -> 'nan'."""
    return f"{int(x):,}" if np.isfinite(x) and float(x).is_integer() and abs(x) < 1e15 else f"{x:g}"


def as_probability(value, name: str, open_low: bool = False, open_high: bool = False) -> float:
    """Return ``value`` as a float in [0, 1] (ends excluded on request), else raise ValueError."""
    try:
        out = float(value)
    except (TypeError, ValueError):
        raise ValueError(f"{name} must be a number between 0 and 1, got {str(value)[:40]!r}") from None
    if not np.isfinite(out):
        raise ValueError(f"{name} must be a number between 0 and 1, got {value!r}")
    low_bad = out <= 0 if open_low else out < 0
    high_bad = out >= 1 if open_high else out > 1
    if low_bad or high_bad:
        lo = "(0" if open_low else "[0"
        hi = "1)" if open_high else "1]"
        raise ValueError(f"{name} must lie in {lo}, {hi}, got {out:g}")
    return out


def check_value(value) -> float:
    """An observed AP or Precision@R as a float in [0, 1] (1e-12 of slack at the ends), else ValueError."""
    try:
        v = float(value)
    except (TypeError, ValueError):
        raise ValueError(f"value must be a number between 0 and 1, got {str(value)[:40]!r}") from None
    if not (np.isfinite(v) and -1e-12 <= v <= 1 + 1e-12):
        raise ValueError(f"value must be a number between 0 and 1, got {value!r}")
    return v


def check_sizes(m, n, max_items: int = MAX_ITEMS) -> tuple[int, int]:
    """Validate the null's sizes: m >= 1 positives, n >= 0 negatives, m + n <= ``max_items``."""
    m = as_int(m, "m (number of positives)", minimum=1)
    n = as_int(n, "n (number of negatives)", minimum=0)
    if m + n > max_items:
        raise ValueError(f"m + n must be at most {max_items:,} items, got {m + n:,}; use fewer items")
    return m, n


def check_metric(metric: str) -> str:
    """Return the canonical metric name ('ap' or 'pr'), else raise ValueError."""
    key = str(metric).strip().lower()
    aliases = {"ap": "ap", "average_precision": "ap", "pr": "pr", "precision@r": "pr",
               "r_precision": "pr", "r-precision": "pr"}
    if key not in aliases:
        raise ValueError(f"metric must be 'ap' (Average Precision) or 'pr' (Precision@R), got {str(metric)[:40]!r}")
    return aliases[key]


def check_choice(value, options, name: str) -> str:
    """``value`` if it is one of ``options``, else ValueError listing them."""
    if value not in options:
        raise ValueError(f"{name} must be one of {', '.join(map(str, options))}, got {str(value)[:40]!r}")
    return value


def check_seed(seed, allow_none: bool = True) -> int:
    """A non-negative 63-bit seed; None draws a fresh one from the operating system's entropy
    (when ``allow_none``; otherwise None is rejected like any other non-number)."""
    if seed is None and allow_none:
        return int(np.random.SeedSequence().entropy % (MAX_SEED + 1))
    return as_int(seed, "seed", minimum=0, maximum=MAX_SEED)


def check_draws(draws, minimum: int = 1, maximum: int = MAX_DRAWS) -> int:
    """A number of Monte Carlo draws in [minimum, maximum]."""
    return as_int(draws, "draws", minimum=minimum, maximum=maximum)


def draw_cost(m: int, n: int) -> int:
    """Monte Carlo work of one draw at (m, n), in units of one sampled rank of a balanced size (about
    20 ns on this project's 2-core machine): the min(m, n) ranks drawn, plus one; each draw also
    visits every positive in rank order, 5 of which cost about one unit (what dominates for m >> n:
    m = 999,990, n = 10 costs 4 ms a draw, not 11 units), and scans the (m + n) / 64 words of a
    bitset, 8 of which cost about one unit (what dominates for n >> m)."""
    m, n = int(m), int(n)
    return min(m, n) + 1 + max(0, m - n) // 5 + (m + n) // 512


def sampling_work(sizes, draws: int) -> int:
    """Monte Carlo work of ``draws`` draws at every (m, n) of ``sizes``: the sum of
    ``draws * draw_cost(m, n)`` (:func:`draw_cost`; ``draws * (min(m, n) + 1)`` for sizes that are not
    lopsided)."""
    return sum(int(draws) * draw_cost(m, n) for m, n in sizes)


def check_sampling_work(sizes, draws: int) -> None:
    """The one work check of Monte Carlo sampling: ValueError when :func:`sampling_work` exceeds
    :data:`MAX_SAMPLING_WORK`, saying what to reduce."""
    work = sampling_work(sizes, draws)
    if work > MAX_SAMPLING_WORK:
        most = max(1, MAX_SAMPLING_WORK * int(draws) // work)
        raise ValueError(
            f"{draws:,} draws at these sizes are too much work: {work:.2e} sampled ranks (limit "
            f"{MAX_SAMPLING_WORK:.0e}); "
            f"use at most {most:,} draws, or smaller or fewer sizes")


def check_view(K, draws) -> tuple[int, int]:
    """A dashboard view of K sizes x ``draws`` draws within the view limits (see the module constants)."""
    K = as_int(K, "number of sizes K", minimum=1, maximum=MAX_SIZES)
    draws = check_draws(draws, MIN_VIEW_DRAWS, MAX_VIEW_DRAWS)
    if K * draws > MAX_VIEW_TOTAL_DRAWS:
        raise ValueError(
            f"K x draws = {K * draws:,} is more than the {MAX_VIEW_TOTAL_DRAWS:,} draws one view may hold; "
            f"use at most {MAX_VIEW_TOTAL_DRAWS // K:,} draws for K = {K}, or fewer sizes")
    return K, draws


# -- scoring a screen -------------------------------------------------------------------------------

def check_column(table, name, what: str) -> str:
    """``name`` if it is a column of ``table`` (a DataFrame), else ValueError suggesting close names
    (or listing the first columns). ``what`` names the role, e.g. "perturbation"."""
    if not isinstance(name, str) or not name:
        raise ValueError(f"{what} must be a column name, got {name!r}")
    if name in table.columns:
        return name
    cols = [str(c) for c in table.columns]
    close = difflib.get_close_matches(name, cols, n=3, cutoff=0.6)
    if not close:
        close = [c for c in cols if c.lower() == name.lower()]
    hint = (f"did you mean {', '.join(repr(c) for c in close)}?" if close else
            f"the columns are {', '.join(repr(c) for c in cols[:8])}{' ...' if len(cols) > 8 else ''}")
    raise ValueError(f"{what} column {name!r} is not in the table; {hint}")


def check_regex(text, name: str = "features", max_length: int | None = None) -> re.Pattern:
    """``text`` compiled as a regular expression, else ValueError naming ``name`` (and, with
    ``max_length``, refusing a longer text before compiling it)."""
    text = str(text)
    if max_length is not None and len(text) > max_length:
        raise ValueError(f"{name}: the regular expression has {len(text):,} characters; use at most "
                         f"{max_length:,} (e.g. a prefix such as ^Cells_)")
    try:
        return re.compile(text)
    except re.error as exc:
        shown = repr(text) if len(text) <= 40 else f"{text[:40]!r}...({len(text):,} characters)"
        raise ValueError(f"{name} {shown} is not valid: it is not a valid regular expression ({exc})") from None


def check_stratum(stratum, perturbation):
    """The stratum column (or None), which must differ from the perturbation column."""
    if stratum is not None and stratum == perturbation:
        raise ValueError("the stratum column must differ from the perturbation column")
    return stratum


def check_permutations(permutations, null: str = "permutation", maximum: int = SCORE_MAX_PERMUTATIONS,
                       where: str = ""):
    """B label permutations, a whole number in [1, ``maximum``], "auto" (adaptive: as many as each
    p-value's decision needs, up to ``SCORE_MAX_PERMUTATIONS``) or "all" (every assignment, for the
    "permutation" null only). ``where`` ends the range message (e.g. " on this page")."""
    if isinstance(permutations, str):
        if permutations == "auto":
            return "auto"
        if permutations != "all":
            raise ValueError(f"permutations must be a whole number, 'auto' or 'all', got {permutations!r}")
        if null != "permutation":
            raise ValueError("permutations='all' applies to null='permutation' only; give a number")
        return "all"
    if isinstance(permutations, (bool, np.bool_)) or not isinstance(permutations, numbers.Real) \
            or not float(permutations).is_integer():
        raise ValueError(f"permutations must be a whole number, 'auto' or 'all', got {permutations!r}")
    B = int(permutations)
    if not 1 <= B <= maximum:
        raise ValueError(f"permutations must be between 1 and {maximum:,}{where}, got {B:,}")
    return B


def check_threads(threads):
    """Threads of an in-process run: None (one per core) or a whole number in [1, SCORE_MAX_THREADS]."""
    return None if threads is None else as_int(threads, "threads", 1, SCORE_MAX_THREADS)


def check_workers(workers):
    """Local dask workers: None (no cluster) or a whole number of at least 1."""
    if workers is None:
        return None
    if isinstance(workers, (bool, np.bool_)) or not isinstance(workers, numbers.Integral) or workers < 1:
        raise ValueError(f"workers must be a whole number of at least 1, got {workers!r}")
    return int(workers)


def check_alpha(alpha) -> float:
    """The significance level: a number strictly between 0 and 1, else ValueError."""
    if isinstance(alpha, bool):
        raise ValueError(f"alpha must be a number between 0 and 1 (e.g. 0.05), got {alpha!r}")
    try:
        value = float(alpha)
    except (TypeError, ValueError):
        raise ValueError(f"alpha must be a number between 0 and 1 (e.g. 0.05), got {alpha!r}") from None
    if not (0.0 < value < 1.0):
        raise ValueError(f"alpha must be between 0 and 1 (exclusive), e.g. 0.05; got {alpha!r}")
    return value


def check_budget(budget):
    """Seconds an adaptive run may spend refining: None (no limit) or a positive finite number."""
    if budget is None:
        return None
    if isinstance(budget, (bool, np.bool_)) or not isinstance(budget, numbers.Real) or not np.isfinite(budget) \
            or budget <= 0:
        raise ValueError(f"budget must be a positive number of seconds (or None for no limit), got {budget!r}")
    return float(budget)


def check_progress(progress):
    """A progress callback: None or False (nothing shown), True (the library's own: a bar in Jupyter, lines
    on stderr elsewhere), or a function progress(done, total)."""
    if progress is not None and not isinstance(progress, bool) and not callable(progress):
        raise ValueError("progress must be True, False, None or a function progress(done, total)")
    return progress


def check_where(scheduler, workers):
    """(scheduler, workers) of a run: not both; workers checked by :func:`check_workers`."""
    if scheduler is not None and workers is not None:
        raise ValueError("give scheduler= or workers=, not both")
    return scheduler, check_workers(workers)
