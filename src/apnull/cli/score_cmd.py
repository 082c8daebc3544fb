"""``apnull score FILE ...``: which perturbations of a screen beat chance, from the shell.

Two forms:

- profiles: ``apnull score FILE --perturbation COL [--control VALUE ...] [--stratum COL]
  [--features REGEX] [--similarity S] [--normalize none|controls|plate] [--negatives controls|others]
  [--hierarchical-by COL] [--null N]
  [--permutations auto|B|all] [--seed S]
  [--workers N | --scheduler ADDRESS] [--out-queries F] [--out-groups F] [--json]``
  (see :func:`apnull.score.score_profiles`);
- rankings: ``apnull score FILE [--out-queries F] [--json]`` when FILE has the columns query, item,
  score and relevant and no ``--perturbation`` is given (see :func:`apnull.score.score_rankings`).

Prints a readable table, or one JSON document with ``--json``:
``{"settings": {...}, "groups": [...], "queries": [...], "skipped": [...], "warnings": [...]}``.
``--out-*`` paths are checked for writability before anything is computed and may name neither
the input nor each other (real paths and inodes compared, links included); ``.parquet``, ``.pq`` or
``.parq`` writes Parquet, ``.tsv`` tab-separated text, anything else CSV. Both outputs are written
to temporary files beside their targets first and moved over them only when both are written: a
failed write (a full disk) leaves every old file as it was. The perturbation and stratum columns are
read as text exactly as written (``1``, ``1.0`` and ``01`` are three perturbations). Bad input raises ValueError (the main wrapper prints one line
``apnull: error: ...`` and exits 2). Runs longer than a few seconds report progress on stderr.
"""

from __future__ import annotations

import argparse
import os
import re

from ..score.table.io import table_format
from ..score import (MAX_FILE_BYTES, NULLS, RANKING_COLUMNS, check_outputs, read_table,
                     score_profiles, score_rankings, write_tables)
from . import _score_activity as activity
from ..score.table.names import count_text
from ..score.engine.progress import LineProgress
from ._common import (add_json, add_profile_options, add_read_options, add_run_options, cli_words, features_text, json_line,
                      left_out_line, read_kwargs, raw_hint, read_settings, run_kwargs,
                      writable_path)
from .tables import format_table, printed_table, records

__all__ = ["add_parser", "run"]

def _regex(text):
    try:
        re.compile(text)
    except re.error as exc:
        raise argparse.ArgumentTypeError(f"--features {text!r} is not a valid regex: {exc}") from None
    return text


def _input_file(text):
    if not os.path.isfile(text):
        raise argparse.ArgumentTypeError(f"FILE {text!r} does not exist or is not a file")
    size = os.path.getsize(text)
    if size > MAX_FILE_BYTES and table_format(text)[0] != "parquet":  # a Parquet file: limited by what it decodes
        raise argparse.ArgumentTypeError(f"FILE {text!r} is {size / 2**20:.0f} MB; the limit is "
                                         f"{MAX_FILE_BYTES / 2**20:.0f} MB")
    return text


def add_parser(subparsers):
    """Add the ``score`` subcommand to an argparse subparsers object; it sets ``run=run``."""
    p = subparsers.add_parser(
        "score", help="score your own screen: per-query AP p-values and mAP p-values by label permutation",
        description="Score a profile table (CSV or Parquet) or a long ranking table (query, item, score, "
                    "relevant). Per query: AP, Precision@R, exact-law p-value, BH q-value; per "
                    "perturbation: mAP, its p-value by label permutation within strata, BH q-value.")
    p.add_argument("file", metavar="FILE", type=_input_file, help="CSV or Parquet table")
    p.add_argument("--perturbation", metavar="COL", action="append",
                   help="perturbation column (profiles form); repeat when several columns make a perturbation")
    p.add_argument("--control", metavar="VALUE", action="append",
                   help="control value of the perturbation column; repeat for several (default DMSO; none "
                        "with --negatives others)")
    p.add_argument("--stratum", metavar="COL", help="plate/batch column: negatives and permutations stay inside it")
    p.add_argument("--features", metavar="REGEX", type=_regex,
                   help="feature columns by regex (default: numeric columns not starting with Metadata_)")
    add_profile_options(p)
    p.add_argument("--null", choices=NULLS, default="permutation",
                   help="mAP null: permutation (exact, default); independent, copairs (approximate)")
    add_run_options(p, ("auto", "all"))
    add_read_options(p)
    p.add_argument("--out-queries", metavar="F", type=writable_path("--out-queries"), help="write the per-query table (CSV/.parquet)")
    p.add_argument("--out-groups", metavar="F", type=writable_path("--out-groups"), help="write the per-perturbation table")
    activity.add_arguments(p)
    add_json(p)
    p.set_defaults(run=run)
    return p


def run(args, out, err) -> int:
    """Run ``apnull score`` with parsed ``args``; writes to ``out``/``err``; returns 0."""
    check_outputs([args.file], [("--out-queries", args.out_queries), ("--out-groups", args.out_groups)])
    ranking_form = args.perturbation is None
    labels = ["query", "item"] if ranking_form else [*args.perturbation, args.stratum]
    needed = [*RANKING_COLUMNS] if ranking_form else \
        [*labels, *(args.positives_differ_by or []), *(args.hierarchical_by or [])]
    progress = LineProgress(err, after=3.0, command="apnull score", label="rows read")
    table = read_table(args.file, labels=labels, progress=progress, **read_kwargs(args, needed))
    if ranking_form:
        missing = [c for c in RANKING_COLUMNS if c not in table.columns]
        if missing:
            raise ValueError("give --perturbation COL for a profile table, or a ranking table with the "
                             f"columns query, item, score, relevant (missing: {', '.join(missing)})")
        activity.check_ranking_form(args)
        if args.out_groups:
            raise ValueError("--out-groups applies to profile tables; a ranking table has per-query results only")
        queries = score_rankings(table, seed=args.seed)
        settings = {"form": "rankings", "file": args.file, "seed": args.seed, **read_settings(args)}
        groups, skipped, warnings = None, queries.attrs.get("skipped", []), queries.attrs.get("warnings", [])
        summary = None
        skipped_rows = [{"query": str(q), "reason": r} for q, r in skipped]
    else:
        res = score_profiles(table, perturbation=activity.perturbation_of(args), control=activity.control_of(args),
                             stratum=args.stratum, features=args.features, similarity=args.similarity,
                             null=args.null, normalize=args.normalize,
                             progress=progress,
                             **run_kwargs(args), **activity.library_kwargs(args))
        raw_hint(err, "score", res.looks_raw)
        groups, queries, warnings = res.groups, res.queries, [cli_words(w) for w in res.warnings]
        settings = dict(res.settings, form="profiles", file=args.file, **read_settings(args))
        skipped_rows = records(res.skipped)
        groups, summary = activity.hierarchical(args, groups, res.activity)
    groups, queries = activity.rename(args, groups, queries)
    write_tables([(args.out_queries, queries), (args.out_groups if groups is not None else None, groups)])
    if args.json:
        doc = {"settings": settings, "groups": records(groups) if groups is not None else [],
               "queries": records(queries), "skipped": skipped_rows, "warnings": list(warnings)}
        if summary is not None:
            doc["activity"] = summary
        out.write(json_line(doc))
        return 0
    hidden = ("file", "columns_left_out", "row", "dropped_features", "dropped_rows", "feature_columns")
    shown = {k: v for k, v in settings.items() if k not in hidden}
    out.write("settings: " + ", ".join(f"{k}={v}" for k, v in shown.items()) + "\n")
    if "feature_columns" in settings:
        out.write(features_text(settings) + "\n")
    out.write(left_out_line(settings))
    if groups is not None:
        out.write(f"\n{count_text(len(groups), 'perturbations')} (mAP p-value: {settings['null']} null; "
                  "q: Benjamini-Hochberg)\n")
        out.write(printed_table(groups, args.out_groups) + "\n")
        out.write(activity.summary_text(summary) + "\n")
        if not args.out_queries:
            out.write(f"\n{count_text(len(queries), 'queries')}: write them with --out-queries F\n")
        else:
            out.write(f"\n{count_text(len(queries), 'queries')} written to {args.out_queries} ({settings['row']})\n")
    else:
        out.write(f"\n{count_text(len(queries), 'queries')} (p-value: exact null law of AP; q: Benjamini-Hochberg)\n")
        out.write(format_table(queries) + "\n")
    for row in skipped_rows:
        out.write(f"skipped: {row}\n")
    for w in warnings:
        out.write(f"warning: {w}\n")
    return 0
