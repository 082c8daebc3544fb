"""Input checks shared by the library, the command line and the dashboard.

Every check raises :class:`ValueError` with a sentence that says what to change, so the CLI can
print it as one line and the dashboard can show it in ``st.error``.
"""

from __future__ import annotations

import numbers

import numpy as np

#: Largest ranking (m + n items) any null computation accepts.
MAX_ITEMS = 1_000_000
#: Largest number of Monte Carlo draws for one (m, n).
MAX_DRAWS = 10_000_000


def as_int(value, name: str, minimum: int | None = None, maximum: int | None = None) -> int:
    """Return ``value`` as a Python int, or raise ValueError naming ``name`` and the allowed range.

    Accepts ints, integral floats (``4.0``) and numpy integers; rejects bools, fractions, NaN and
    strings.
    """
    if isinstance(value, (bool, np.bool_)):
        raise ValueError(f"{name} must be a whole number, got {value!r}")
    if isinstance(value, numbers.Integral):
        out = int(value)
    elif isinstance(value, numbers.Real) and float(value).is_integer():
        out = int(value)
    else:
        raise ValueError(f"{name} must be a whole number, got {value!r}")
    if minimum is not None and out < minimum:
        raise ValueError(f"{name} must be at least {minimum}, got {out}")
    if maximum is not None and out > maximum:
        raise ValueError(f"{name} must be at most {maximum:,}, got {out:,}")
    return out


def as_probability(value, name: str, open_low: bool = False, open_high: bool = False) -> float:
    """Return ``value`` as a float in [0, 1] (ends excluded on request), else raise ValueError."""
    try:
        out = float(value)
    except (TypeError, ValueError):
        raise ValueError(f"{name} must be a number between 0 and 1, got {value!r}") from None
    if not np.isfinite(out):
        raise ValueError(f"{name} must be a number between 0 and 1, got {value!r}")
    low_bad = out <= 0 if open_low else out < 0
    high_bad = out >= 1 if open_high else out > 1
    if low_bad or high_bad:
        lo = "(0" if open_low else "[0"
        hi = "1)" if open_high else "1]"
        raise ValueError(f"{name} must lie in {lo}, {hi}, got {out}")
    return out


def check_sizes(m, n) -> tuple[int, int]:
    """Validate the null's sizes: m >= 1 positives, n >= 0 negatives, m + n <= MAX_ITEMS."""
    m = as_int(m, "m (number of positives)", minimum=1)
    n = as_int(n, "n (number of negatives)", minimum=0)
    if m + n > MAX_ITEMS:
        raise ValueError(f"m + n must be at most {MAX_ITEMS:,} items, got {m + n:,}; use fewer items")
    return m, n


def check_metric(metric: str) -> str:
    """Return the canonical metric name ('ap' or 'pr'), else raise ValueError."""
    key = str(metric).strip().lower()
    aliases = {"ap": "ap", "average_precision": "ap", "pr": "pr", "precision@r": "pr",
               "r_precision": "pr", "r-precision": "pr"}
    if key not in aliases:
        raise ValueError(f"metric must be 'ap' (Average Precision) or 'pr' (Precision@R), got {metric!r}")
    return aliases[key]
