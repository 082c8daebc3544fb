"""The ``apnull score`` options a copairs user reaches for, kept apart from the subcommand's core.

``--perturbation`` repeated (several columns make a perturbation), ``--positives-differ-by COL``
(repeatable), ``--nan error|drop-features|drop-rows`` and ``--copairs-names`` (copairs's column names in
every output). ``--alpha`` (the ``significant`` column and the "active: k of n" line) is one of the run
options every scoring subcommand shares (``_common.add_run_options``).
"""

from __future__ import annotations

from ..score import NAN_MODES
from ..score import activity_line, to_copairs_names

__all__ = ["add_arguments", "library_kwargs", "perturbation_of", "rename", "summary_text", "check_ranking_form"]


def add_arguments(p) -> None:
    """Add --positives-differ-by, --nan and --copairs-names to the ``score`` parser (--alpha is a run
    option: ``_common.add_run_options``)."""
    p.add_argument("--positives-differ-by", metavar="COL", action="append", dest="positives_differ_by",
                   help="replicates sharing this column's value with the query (e.g. the same well "
                        "position) are left out of its ranking; repeatable")
    p.add_argument("--nan", choices=NAN_MODES, default="error",
                   help="NaN/infinite feature values: error (default), drop-features, drop-rows")
    p.add_argument("--copairs-names", action="store_true",
                   help="write copairs's column names (mean_average_precision, corrected_p_value, "
                        "below_corrected_p, average_precision, n_pos_pairs, n_total_pairs)")


def perturbation_of(args):
    """The --perturbation column, or the list of columns when the flag was repeated (None if absent)."""
    cols = args.perturbation
    if cols is None:
        return None
    return cols[0] if len(cols) == 1 else list(cols)


def check_ranking_form(args) -> None:
    """ValueError when a profile-table option is given for a ranking table."""
    if args.positives_differ_by or args.nan != "error":
        raise ValueError("--positives-differ-by and --nan apply to profile tables (give --perturbation COL); "
                         "a ranking table has its scores already")


def library_kwargs(args) -> dict:
    """The ``score_profiles`` keyword arguments of these options."""
    kwargs = dict(nan=args.nan)
    if args.positives_differ_by:
        kwargs["positives_differ_by"] = list(args.positives_differ_by)
    return kwargs


def rename(args, groups, queries):
    """(groups, queries) under copairs's names with --copairs-names, else unchanged (either may be None)."""
    if not args.copairs_names:
        return groups, queries
    return to_copairs_names(groups, queries, args.alpha)


def summary_text(activity: dict) -> str:
    """The text line ``active: k of n (fraction) at q <= alpha``."""
    return activity_line(activity)
