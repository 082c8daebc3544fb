"""The ``apnull`` command: thresholds, p-values, null samples, metrics, sampled metrics, scoring, consistency
and the comparison of two pipelines.

Every subcommand prints a readable table, or one JSON document with ``--json``. Bad input prints one
line ``apnull: error: ...`` on stderr and exits with status 2. ``--n`` always means the number of
negatives (non-relevant items) of a ranking.
"""

from __future__ import annotations

import os
import sys

from .. import __version__
from ..compiled import safe_interrupts
from ._common import Parser, UsageError, cli_words

EXIT_USAGE = 2

__all__ = ["main", "build_parser", "EXIT_USAGE"]


def build_parser() -> Parser:
    from . import compare_cmd, consistency_cmd, null, sampled, score_cmd

    parser = Parser(prog="apnull", description="Null distributions of Average Precision and Precision@R.")
    parser.add_argument("--version", action="version", version=f"apnull {__version__}")
    sub = parser.add_subparsers(dest="command", metavar="COMMAND", parser_class=Parser)
    sub.required = True
    null.add_parsers(sub)
    sampled.add_parser(sub)
    score_cmd.add_parser(sub)
    consistency_cmd.add_parser(sub)
    compare_cmd.add_parser(sub)
    return parser


def main(argv=None, out=None, err=None) -> int:
    """Run the command; returns the exit status (0, or 2 for bad input)."""
    out = out or sys.stdout
    err = err or sys.stderr
    try:
        args = build_parser().parse_args(argv)
        with safe_interrupts():  # Ctrl+C raised where it is safe (not inside numba's call back into Python)
            status = args.run(args, out, err)
    except (UsageError, ValueError) as exc:
        err.write(f"apnull: error: {cli_words(' '.join(str(exc).split()))}\n")
        return EXIT_USAGE
    except KeyboardInterrupt:
        err.write("apnull: interrupted\n")
        return 130
    except BrokenPipeError:  # the reader went away (``apnull ... | head``): stop quietly
        try:
            devnull = os.open(os.devnull, os.O_WRONLY)
            os.dup2(devnull, sys.stdout.fileno())
        except (OSError, ValueError, AttributeError):
            pass
        return 141
    return int(status or 0)


if __name__ == "__main__":  # pragma: no cover
    sys.exit(main())
