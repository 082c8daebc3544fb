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
import re

from ..score import NAN_MODES, NORMALIZE, SCORE_SIMILARITIES
from ..score.table.names import count_text


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


def json_line(doc) -> str:
    """``doc`` as one line of strict JSON (RFC 8259), the one writer of every ``--json``: NaN and
    infinities (which no strict parser reads) become null, numpy numbers and arrays plain values,
    and ``json.dumps(allow_nan=False)`` makes sure nothing else slips through."""
    return json.dumps(_strict(doc), allow_nan=False) + "\n"


def _strict(value):
    """``value`` with every float that is not finite replaced by None, recursively."""
    if isinstance(value, dict):
        return {k: _strict(v) for k, v in value.items()}
    if isinstance(value, (list, tuple)):
        return [_strict(v) for v in value]
    if isinstance(value, (bool, str, int)) or value is None:
        return value
    if isinstance(value, float):
        return value if math.isfinite(value) else None
    if hasattr(value, "tolist"):  # numpy scalars and arrays
        return _strict(value.tolist())
    raise TypeError(f"cannot write {type(value).__name__} as JSON")


def emit(args, out, result: dict, rows: list[tuple[str, object]] | None = None, text: str | None = None) -> int:
    """Print ``result`` as one JSON line with ``--json`` (:func:`json_line`), else the table ``rows``
    (or ``text``)."""
    if args.json:
        out.write(json_line(result))
    elif rows is not None:
        width = max(len(k) for k, _ in rows)
        for key, val in rows:
            out.write(f"{key:<{width}}  {f'{val:.6g}' if isinstance(val, float) else val}\n")
    else:
        out.write(text.rstrip("\n") + "\n")
    return 0


def _alpha(text):
    try:
        value = float(text)
    except ValueError:
        value = float("nan")
    if not 0.0 < value < 1.0:
        raise argparse.ArgumentTypeError(f"--alpha must be a number between 0 and 1 (exclusive), e.g. 0.05; got {text!r}")
    return value


def _budget(text):
    try:
        value = float(text)
    except ValueError:
        value = float("nan")
    if not math.isfinite(value) or value <= 0:
        raise argparse.ArgumentTypeError(f"--budget must be a positive number of seconds, got {text!r}")
    return value


def add_run_options(parser, words=("auto",), maximum: int | None = None, unit: str = "p-value") -> None:
    """Add the run options every scoring subcommand shares (:class:`apnull.score.RunOptions`):
    ``--permutations`` (one of ``words`` or a fixed B), ``--seed``, ``--alpha``, ``--threads``,
    ``--budget`` and ``--workers N | --scheduler ADDRESS``; :func:`run_kwargs` reads them back."""
    from ..limits import SCORE_MAX_PERMUTATIONS, SCORE_MAX_THREADS

    maximum = SCORE_MAX_PERMUTATIONS if maximum is None else maximum
    also = " or 'all' assignments" if "all" in words else ""
    parser.add_argument("--permutations", metavar="|".join(words) + "|B", type=permutations_arg(words, maximum),
                        default="auto",
                        help=f"permutations per {unit}: 'auto' (default: as many as each BH decision needs, up to "
                             f"{maximum:,}), a fixed B in 1..{maximum:,}{also}")
    parser.add_argument("--seed", metavar="S", type=int_arg("--seed", 0), default=0, help="seed (default 0)")
    parser.add_argument("--alpha", metavar="A", type=_alpha, default=0.05,
                        help="FDR level of the significant column: q_value <= A (default 0.05)")
    parser.add_argument("--threads", metavar="N", type=int_arg("--threads", 1, SCORE_MAX_THREADS),
                        help="threads of an in-process run (default: one per core); results do not depend on it")
    parser.add_argument("--budget", metavar="SECONDS", type=_budget,
                        help="with --permutations auto: the whole run's time limit (compiling code on a first "
                             "run excluded): no refinement round that would pass it is started and no far tail "
                             "counted past it; decisions left open and p-values left as bounds are named "
                             "(default: no limit)")
    where = parser.add_mutually_exclusive_group()
    where.add_argument("--workers", metavar="N", type=int_arg("--workers", 1, 256),
                       help="start a local dask cluster of N workers")
    where.add_argument("--scheduler", metavar="ADDRESS", help="dask scheduler address, e.g. tcp://host:8786")


def run_kwargs(args) -> dict:
    """The library's run-option keyword arguments of :func:`add_run_options`'s options."""
    return dict(seed=args.seed, permutations=args.permutations, alpha=args.alpha, threads=args.threads,
                budget=args.budget, workers=args.workers, scheduler=args.scheduler)


def _where(text: str) -> tuple:
    """``COLUMN=VALUE`` -> (column, value), split at the first ``=`` (a value may hold one)."""
    column, sep, value = str(text).partition("=")
    if not sep or not column:
        raise argparse.ArgumentTypeError(f"{text!r}: give COLUMN=VALUE, e.g. Metadata_Plate=BR00117010")
    return column, value


def add_read_options(parser) -> None:
    """Add ``--columns`` and ``--where``, which read part of the input table (:func:`apnull.score.read_table`'s
    ``columns`` and ``filters``); :func:`read_kwargs` reads them back."""
    parser.add_argument("--columns", metavar="COL", nargs="+", action="extend",
                        help="read only these columns (the label columns the command needs are added); "
                             "a Parquet file decodes no other column")
    parser.add_argument("--where", metavar="COLUMN=VALUE", type=_where, action="append",
                        help="read only the rows whose COLUMN holds VALUE; repeat: another column must match "
                             "too, the same column means any of its values. Parquet: only those rows are "
                             "read; CSV: filtered after reading")


def read_kwargs(args, needed=()) -> dict:
    """``columns`` and ``filters`` of :func:`add_read_options`'s options for ``read_table``; ``needed``: the
    columns the command reads besides (its label columns), added to ``--columns``."""
    columns = None
    if args.columns:
        columns = list(dict.fromkeys([*args.columns, *(c for c in needed if c)]))
    filters = None
    if args.where:
        filters = {}
        for column, value in args.where:
            filters.setdefault(column, []).append(value)
    return dict(columns=columns, filters=filters)


def read_settings(args) -> dict:
    """What ``--where`` and ``--columns`` left out, for a run's settings (printed and in --json): the rows
    kept (``where``: column -> values; ``row`` then counts among the kept rows) and the columns read
    (``columns_read``); empty when neither was given."""
    out = {}
    kw = read_kwargs(args)
    if kw["filters"]:
        out["where"] = kw["filters"]
        out["row"] = ("row: 0-based position among the rows --where kept, in the file's order (not the file's "
                      "line number)")
    if args.columns:
        out["columns_read"] = list(args.columns)
    return out


#: Library keywords whose values messages quote (``nan='drop-rows'``), said as the command's options.
OPTION_WORDS = ("nan", "similarity", "unmatched", "negatives", "aggregate", "permutations", "null", "label_sep",
                "alpha", "seed", "budget", "positives_differ_by", "control", "stratum", "perturbation", "only",
                "features", "scheduler", "workers", "threads", "normalize")
_VALUE = re.compile(r"\b(" + "|".join(OPTION_WORDS) + r")='([^']*)'")
_NUMBER = re.compile(r"\b(" + "|".join(OPTION_WORDS) + r")=(\d(?:[\d.]|,(?=\d))*)")
_BARE = re.compile(r"\b(" + "|".join(OPTION_WORDS) + r")=(?=[\s,;)/]|$)")
_TWICE = re.compile(r"(--[\w-]+(?: [\w-]+)?) \((?:\1|--[\w-]+(?: [\w-]+)?)(?: on the command line)?\)")


def cli_words(text: str) -> str:
    """A library message said in the command's words: ``nan='drop-rows'`` becomes ``--nan drop-rows``,
    ``features=`` becomes ``--features`` (``--features-a`` / ``--features-b`` in a message about table
    A or B of ``apnull compare``, ``--features REGEX`` where the library offers a list or a regex), and
    a flag the library names beside its own keyword ("(--nan on the command line)") is said once."""
    side = re.match(r"\s*table ([AB]):", text)

    def flag(name: str) -> str:
        if name == "features" and side:
            return f"--features-{side.group(1).lower()}"
        return "--" + name.replace("_", "-")

    text = re.sub(r"\bfeatures= \(?a list or a regex\)?", lambda m: flag("features") + " REGEX", text)
    text = _VALUE.sub(lambda m: f"{flag(m.group(1))} {m.group(2)}", text)
    text = _NUMBER.sub(lambda m: f"{flag(m.group(1))} {m.group(2).replace(',', '')}", text)
    text = _BARE.sub(lambda m: flag(m.group(1)), text)
    text = _TWICE.sub(lambda m: m.group(1), text)
    return text.replace(" (--nan on the command line)", "")


def features_text(settings: dict, shown: int = 12) -> str:
    """The feature columns a scoring run used (``settings["feature_columns"]``), counted and named (the
    first ``shown``; all of them in the JSON)."""
    cols = list(settings.get("feature_columns") or [])
    more = f", and {len(cols) - shown:,} more (see --json)" if len(cols) > shown else ""
    return f"{count_text(len(cols), 'features')}: " + ", ".join(map(str, cols[:shown])) + more


def add_profile_options(parser, nan_more: str = "") -> None:
    """Add the options every profile-table command shares: ``--similarity``, ``--nan`` (``nan_more``: what
    drop-rows means for this command, appended to the help) and ``--normalize none|controls|plate``
    (per-plate robust z-scores, ``normalize=`` of the scorers)."""
    parser.add_argument("--similarity", choices=SCORE_SIMILARITIES, default="cosine",
                        help="default cosine; jaccard and hamming compare binary (0/1, true/false) features")
    parser.add_argument("--nan", choices=NAN_MODES, default="error",
                        help="NaN/infinite feature values: error (default), drop-features, drop-rows" + nan_more)
    parser.add_argument("--normalize", choices=NORMALIZE, default="none",
                        help="per-plate normalisation of the features: none (default, a normalised table), controls "
                             "(robust z-score against each stratum's controls, as pycytominer's mad_robustize), "
                             "plate (against all its rows)")


def raw_hint(err, command: str, looks_raw) -> None:
    """One line on ``err`` when the features, given with --normalize none, look raw (``looks_raw``: the
    library's sentence, or None; a dict of them per table for compare)."""
    if isinstance(looks_raw, dict):
        looks_raw = "; ".join(f"table {side}: {why}" for side, why in looks_raw.items())
    if looks_raw:
        err.write(f"apnull {command}: hint: {looks_raw}; normalise per plate with --normalize controls\n")


def left_out_line(settings: dict, shown: int = 20) -> str:
    """The text line naming the columns a scoring run left out (``settings["columns_left_out"]``), or ""."""
    left_out = settings.get("columns_left_out") or []
    if not left_out:
        return ""
    return (f"columns left out ({len(left_out):,}): " + "; ".join(f"{d['column']} ({cli_words(d['reason'])})" for d in left_out[:shown])
            + (f"; and {len(left_out) - shown:,} more (see --json)" if len(left_out) > shown else "") + "\n")


