"""The ``apnull score`` options a copairs user reaches for, kept apart from the subcommand's core.

``--perturbation`` repeated (several columns make a perturbation), ``--positives-differ-by COL``
(repeatable), ``--nan error|drop-features|drop-rows``, ``--negatives controls|others`` (whom a query
ranks its positives against; with ``others`` and no ``--control``, the screen has no controls),
``--hierarchical-by COL`` (repeatable: the columns of the perturbation naming a family, e.g. the
compound of compound + dose: :func:`apnull.score.hierarchical_bh` on the groups table) and
``--copairs-names`` (copairs's column names in every output). ``--alpha`` (the ``significant`` column
and the "active: k of n" line) is one of the run options every scoring subcommand shares
(``_common.add_run_options``).
"""

from __future__ import annotations

from ..score import NEGATIVES, hierarchical_bh
from ..score import activity_line, to_copairs_names
from ..score.results.summary import activity_summary

__all__ = ["add_arguments", "library_kwargs", "perturbation_of", "control_of", "hierarchical", "rename",
           "summary_text", "check_ranking_form"]


def add_arguments(p) -> None:
    """Add --positives-differ-by, --negatives, --hierarchical-by and --copairs-names to the
    ``score`` parser (--alpha is a run option: ``_common.add_run_options``)."""
    p.add_argument("--positives-differ-by", metavar="COL", action="append", dest="positives_differ_by",
                   help="replicates sharing this column's value with the query (e.g. the same well "
                        "position) are left out of its ranking; repeatable")
    p.add_argument("--negatives", choices=NEGATIVES, default="controls",
                   help="whom a query ranks its positives against: the controls of its stratum (default), or "
                        "every other profile of its stratum (others; controls too, if --control is given)")
    p.add_argument("--hierarchical-by", metavar="COL", action="append", dest="hierarchical_by",
                   help="a --perturbation column naming families (e.g. the compound of compound + dose): "
                        "two-stage FDR, families by Simes + BH, then BH inside the selected ones; repeatable")
    p.add_argument("--copairs-names", action="store_true",
                   help="write copairs's column names (mean_average_precision, corrected_p_value, "
                        "below_corrected_p, average_precision, n_pos_pairs, n_total_pairs)")


def perturbation_of(args):
    """The --perturbation column, or the list of columns when the flag was repeated (None if absent)."""
    cols = args.perturbation
    if cols is None:
        return None
    return cols[0] if len(cols) == 1 else list(cols)


def control_of(args):
    """The control value(s): --control, else DMSO; with --negatives others and no --control, None (a
    screen without controls)."""
    if args.control:
        return args.control
    return None if args.negatives == "others" else ["DMSO"]


def check_ranking_form(args) -> None:
    """ValueError when a profile-table option is given for a ranking table."""
    if (args.positives_differ_by or args.nan != "error" or args.negatives != "controls" or args.hierarchical_by
            or args.normalize != "none"):
        raise ValueError("--positives-differ-by, --nan, --normalize, --negatives and --hierarchical-by apply to "
                         "profile tables "
                         "(give --perturbation COL); a ranking table has its scores already")


def hierarchical(args, groups, summary):
    """(groups, activity summary) with --hierarchical-by: :func:`apnull.score.hierarchical_bh`'s columns
    added to the groups table (its flat BH q_value and significant kept as q_value_input and
    significant_input) and the "active" count taken from its decisions; else both unchanged.

    Raises ValueError unless every COL is one of the --perturbation columns and some are left to name
    the members of a family."""
    by = args.hierarchical_by
    if not by:
        return groups, summary
    cols = list(args.perturbation or [])
    outside = [c for c in by if c not in cols]
    if outside:
        raise ValueError(f"--hierarchical-by {outside[0]!r} is not a --perturbation column ({', '.join(cols)}); "
                         "give the column naming the families, e.g. --perturbation compound --perturbation dose "
                         "--hierarchical-by compound")
    if set(by) >= set(cols):
        raise ValueError("--hierarchical-by names every --perturbation column: each family would be one "
                         "perturbation (that is plain BH); leave out the column(s) naming the members, e.g. the dose")
    groups = hierarchical_bh(groups, list(by), alpha=args.alpha)
    return groups, activity_summary(groups, args.alpha)


def library_kwargs(args) -> dict:
    """The ``score_profiles`` keyword arguments of these options."""
    kwargs = dict(nan=args.nan, negatives=args.negatives)
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
