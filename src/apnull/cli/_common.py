"""What every subcommand shares: the parser class, argparse types, output in one style, progress.

Every subcommand prints a readable table, or ONE JSON document (a single line) with ``--json``.
Arguments are checked by argparse ``type=`` functions (a bad value is a usage error: one line on
stderr, exit 2); the library checks them again at its public boundary.
"""

from __future__ import annotations

import argparse
import decimal
import json
import math
import os
import time


class UsageError(Exception):
    """Bad command-line input: reported as ``apnull: error: ...`` with exit status 2."""


class Parser(argparse.ArgumentParser):
    """argparse that reports a usage error in one line (no usage block)."""

    def error(self, message):  # noqa: D401 - argparse API
        raise UsageError(message)


def exact_int(text: str) -> int | None:
    """``text`` as an exact Python int (``9007199254740993``, ``4``, ``4.0``, ``1e3``), or None.

    Parsed as a decimal, never through a float, so every digit counts: integers beyond 2**53
    keep their value. None for fractions, NaN, infinities, non-numbers and numbers of more than
    400 digits.
    """
    text = str(text).strip()
    if not text or len(text) > 400:
        return None
    try:
        value = decimal.Decimal(text)
    except (decimal.InvalidOperation, ValueError):
        return None
    if not value.is_finite() or value.adjusted() > 400 or value != value.to_integral_value():
        return None
    return int(value)


def int_arg(name: str, minimum: int | None = None, maximum: int | None = None):
    """argparse type: a whole number (``4``, ``4.0``; read exactly, see :func:`exact_int`) within
    [minimum, maximum]."""
    def parse(text):
        value = exact_int(text)
        if value is None:
            raise argparse.ArgumentTypeError(f"{name} must be a whole number, got {text!r}")
        if minimum is not None and value < minimum:
            raise argparse.ArgumentTypeError(f"{name} must be at least {minimum:,}, got {value:,}")
        if maximum is not None and value > maximum:
            raise argparse.ArgumentTypeError(f"{name} must be at most {maximum:,}, got {value:,}")
        return value
    return parse


def permutations_arg(words, maximum: int):
    """argparse type of ``--permutations``: one of ``words`` (e.g. "auto", "all"; any case) or a whole
    number B in 1..``maximum``; a bad value's message lists what is accepted."""
    accepted = ", ".join(f"'{w}'" for w in words)

    def parse(text):
        word = text.strip().lower()
        if word in words:
            return word
        try:
            return int_arg("--permutations", 1, maximum)(text)
        except argparse.ArgumentTypeError as exc:
            if "whole number" not in str(exc):
                raise
            raise argparse.ArgumentTypeError(f"--permutations must be {accepted} or a whole number from 1 to "
                                             f"{maximum:,}, got {text!r}") from None
    return parse


def float_arg(name: str):
    """argparse type: a finite number."""
    def parse(text):
        try:
            value = float(text)
        except ValueError:
            value = math.nan
        if not math.isfinite(value):
            raise argparse.ArgumentTypeError(f"{name} must be a number, got {text!r}")
        return value
    return parse


def writable_path(name: str, suffixes: tuple[str, ...] | None = None):
    """argparse type: a file path whose folder exists and can be written, checked before any work."""
    def parse(text):
        if suffixes and not text.lower().endswith(suffixes):
            raise argparse.ArgumentTypeError(f"{name} must name a {' or '.join(suffixes)} file, got {text!r}")
        folder = os.path.dirname(os.path.abspath(text))
        if not os.path.isdir(folder):
            raise argparse.ArgumentTypeError(f"cannot write {text}: folder {folder!r} does not exist")
        if os.path.isdir(text):
            raise argparse.ArgumentTypeError(f"cannot write {text}: it is a folder; give a file name")
        target = text if os.path.exists(text) else folder
        if not os.access(target, os.W_OK):
            raise argparse.ArgumentTypeError(f"cannot write {text}: permission denied")
        return text
    return parse


def add_json(parser) -> None:
    parser.add_argument("--json", action="store_true", help="print one JSON document instead of a table")


def emit(args, out, result: dict, rows: list[tuple[str, object]] | None = None, text: str | None = None) -> int:
    """Print ``result`` as one JSON line with ``--json``, else the table ``rows`` (or ``text``)."""
    if args.json:
        out.write(json.dumps(result, default=_plain) + "\n")
    elif rows is not None:
        width = max(len(k) for k, _ in rows)
        for key, val in rows:
            out.write(f"{key:<{width}}  {f'{val:.6g}' if isinstance(val, float) else val}\n")
    else:
        out.write(text.rstrip("\n") + "\n")
    return 0


def _plain(value):
    """numpy scalars and arrays as plain JSON values."""
    if hasattr(value, "tolist"):
        return value.tolist()
    raise TypeError(f"cannot write {type(value).__name__} as JSON")


class Progress:
    """Progress lines on ``err`` for long runs: every update on a terminal (overwriting one line),
    else at most every ``every`` seconds, and nothing during the first ``after`` seconds."""

    def __init__(self, err, label: str, after: float = 2.0, every: float = 5.0):
        self.err, self.label, self.after, self.every = err, label, after, every
        self.start = self.last = time.monotonic()
        self.tty = bool(getattr(err, "isatty", lambda: False)())
        self.shown = False

    def __call__(self, done: int, total: int) -> None:
        now = time.monotonic()
        if now - self.start < self.after or (not self.tty and now - self.last < self.every and done < total):
            return
        self.last = now
        start = "\r" if self.tty else ""
        end = "\n" if (not self.tty or done >= total) else ""
        self.err.write(f"{start}{self.label}: {done:,} of {total:,} ({now - self.start:.0f} s){end}")
        self.err.flush()
        self.shown = True
