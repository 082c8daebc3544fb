"""The ``apnull sampled`` subcommand: exact vs expected sampled metrics (Rendle's "Evaluation Metrics
for Item Recommendation under Sampling").

Usage::

    apnull sampled --ranks 100,100,100,100,100 --ranks B=40,40,8437,9266,4482 --items 10000 --samples 99
    apnull sampled --paper-example --json

Each ``--ranks`` gives one algorithm: the true rank of the single relevant item in each evaluation
instance, as a comma list of positive integers, optionally prefixed by ``NAME=``. Unnamed
algorithms are called A, B, C, ... by their position on the command line.

``--items`` is the catalogue size (``--n`` means the number of negatives in every other subcommand).
"""

from __future__ import annotations

import argparse
import re
import string

from .. import rendle as sampled
from ..limits import SAMPLED_MAX_ITEMS, SAMPLED_MAX_SAMPLES
from ._common import add_json, emit, int_arg

_NAME_RE = re.compile(r"^[A-Za-z0-9_.\- ]+$")


def add_parser(subparsers) -> argparse.ArgumentParser:
    """Add the ``sampled`` subcommand to an argparse subparsers object and return its parser."""
    parser = subparsers.add_parser(
        "sampled",
        help="exact vs sampled metrics (AUC, AP, NDCG, Recall@k) of algorithms given true ranks",
        description=(
            "For each algorithm, given the true rank of the one relevant item in each evaluation "
            "instance among ITEMS items, print the exact AUC, AP, NDCG and Recall@K and the mean +- SD "
            "that an evaluation ranking the relevant item among SAMPLES random irrelevant items "
            "would report (exact expectation, no simulation)."
        ),
    )
    parser.add_argument(
        "--ranks",
        action="append",
        default=None,
        metavar="[NAME=]R1,R2,...",
        help="true ranks (integers 1..N) of one algorithm; repeat for several algorithms "
        "(unnamed ones are called A, B, C, ...)",
    )
    parser.add_argument(
        "--paper-example",
        action="store_true",
        help="add the paper's algorithms A, B, C (use with --items 10000, the default)",
    )
    parser.add_argument("--items", type=int_arg("--items", 2, SAMPLED_MAX_ITEMS), default=10_000, metavar="ITEMS",
                        help="number of items ranked, the catalogue (default 10000)")
    parser.add_argument("--samples", type=int_arg("--samples", 1, SAMPLED_MAX_SAMPLES), default=99, metavar="S",
                        help="number of sampled irrelevant items (default 99)")
    parser.add_argument("--k", type=int_arg("--k", 1), default=10, metavar="K", help="cut-off of Recall@K (default 10)")
    parser.add_argument(
        "--without-replacement",
        action="store_true",
        help="sample the irrelevant items without replacement (then SAMPLES <= N - 1)",
    )
    add_json(parser)
    parser.set_defaults(run=run)
    return parser


def default_name(index: int) -> str:
    """Name of the ``index``-th (0-based) unnamed algorithm: A..Z, then A27, A28, ..."""
    return string.ascii_uppercase[index] if index < 26 else f"A{index + 1}"


def parse_ranks_option(text: str, index: int = 0) -> tuple[str, list[int]]:
    """Parse one ``--ranks`` value, ``"1,2,3"`` or ``"name=1,2,3"``, into ``(name, ranks)``.

    Raises
    ------
    ValueError
        Empty list, empty or odd name, an entry that is not a whole number, or a rank < 1.
    """
    raw = "" if text is None else str(text)
    name = default_name(index)
    body = raw
    if "=" in raw:
        name, body = (part.strip() for part in raw.split("=", 1))
        if not name or not _NAME_RE.match(name):
            raise ValueError(
                f"--ranks {raw!r}: the algorithm name before '=' must be letters, digits, '_', '-', '.' "
                "or spaces, e.g. --ranks B=40,40,8437"
            )
    entries = [e.strip() for e in body.split(",")]
    if not body.strip():
        raise ValueError(
            f"--ranks {raw!r} is empty: give the true ranks as a comma list of positive integers, "
            "e.g. --ranks 100,100,100"
        )
    ranks = []
    for entry in entries:
        if not entry:
            raise ValueError(f"--ranks {raw!r} has an empty entry; remove the extra comma")
        try:
            value = int(entry)
        except ValueError:
            raise ValueError(
                f"--ranks {raw!r}: {entry!r} is not a whole number; ranks are positive integers "
                "(1 = top of the list)"
            ) from None
        if value < 1:
            raise ValueError(f"--ranks {raw!r}: ranks start at 1 (the top of the list), got {value}")
        ranks.append(value)
    return name, ranks


def collect_rankings(args) -> dict[str, list[int]]:
    """Algorithms named on the command line, in order: the paper example first if asked."""
    rankings: dict[str, list[int]] = {}
    if getattr(args, "paper_example", False):
        rankings.update({k: list(v) for k, v in sampled.PAPER_EXAMPLE.items()})
    for i, text in enumerate(args.ranks or []):
        name, ranks = parse_ranks_option(text, len(rankings) if getattr(args, "paper_example", False) else i)
        if name in rankings:
            raise ValueError(f"algorithm name {name!r} is used twice; give each --ranks its own NAME=")
        rankings[name] = ranks
    if not rankings:
        raise ValueError("give at least one --ranks R1,R2,... (or --paper-example)")
    return rankings


def build(args):
    """Validate the arguments and return (settings dict, long DataFrame from sampled_metrics_table)."""
    rankings = collect_rankings(args)
    n, samples, k = args.items, args.samples, args.k
    replace = not args.without_replacement
    largest = max(max(r) for r in rankings.values())
    if largest > n:
        raise ValueError(f"a rank ({largest}) exceeds --items {n}; ranks must lie between 1 and n")
    if not replace and samples > n - 1:
        raise ValueError(
            f"--samples {samples} is too large without replacement: at most n - 1 = {n - 1} "
            "irrelevant items exist"
        )
    table = sampled.sampled_metrics_table(rankings, n, samples, k=k, replace=replace)
    settings = {"items": n, "samples": samples, "k": k, "replace": replace}
    return settings, table


def sampled_text(settings: dict, table) -> str:
    """Readable text: one line per (algorithm, metric) with exact and sampled mean +- SD."""
    how = "with" if settings["replace"] else "without"
    lines = [
        f"{settings['items']} items, {settings['samples']} sampled irrelevant items "
        f"({how} replacement), k = {settings['k']}",
        "sampled = exact expectation over the random sample; +- = SD of one evaluation run",
        "",
    ]
    name_w = max(9, *(len(a) for a in table["algorithm"]))
    label_w = max(6, *(len(x) for x in table["label"]))
    lines.append(f"{'algorithm':<{name_w}}  {'metric':<{label_w}}  {'exact':>7}  sampled mean +- SD")
    for row in table.itertuples(index=False):
        lines.append(
            f"{row.algorithm:<{name_w}}  {row.label:<{label_w}}  {row.exact:7.4f}  "
            f"{row.sampled_mean:.4f} +- {row.sampled_sd:.4f}"
        )
    return "\n".join(lines)


def run(args, out, err) -> int:
    """Run ``apnull sampled``: the table (or JSON) on ``out``. Raises ValueError on bad input."""
    settings, table = build(args)
    return emit(args, out, dict(settings, rows=table.to_dict(orient="records")), text=sampled_text(settings, table))
