"""``apnull consistency FILE ...``: do perturbations sharing an annotation look alike, from the shell.

``apnull consistency FILE --perturbation COL --annotation COL [--label-sep SEP]
[--aggregate median|mean|none] [--control VALUE ...] [--only GROUPS.csv] [--alpha 0.05]
[--features REGEX] [--similarity S] [--nan MODE] [--normalize MODE [--stratum COL]] [--positives-differ-by COL ...]
[--permutations auto|B] [--seed S] [--budget SECONDS] [--workers N | --scheduler ADDRESS]
[--out-labels F] [--out-queries F] [--json]`` (see :func:`apnull.score.score_consistency`).

Prints the labels table, or one JSON document with ``--json``:
``{"settings": {...}, "summary": {...}, "labels": [...], "queries": [...], "skipped": [...],
"warnings": [...]}``. The table is read as ``apnull score`` reads it: the perturbation, annotation
and pair-rule columns as text exactly as written (``1``, ``1.0`` and ``01`` are three names, ``NA``
is a name; only a blank cell is empty). ``--only`` reads the groups table ``apnull score
--out-groups`` wrote (with or without ``--copairs-names``), its names as text, and keeps its
significant perturbations (activity first, consistency on the active). Both outputs are written to
temporary files first and replace their old files only when both are written; never over an input.
"""

from __future__ import annotations


from ..score import (AGGREGATES, check_outputs, consistency_line, read_table,
                     score_consistency, write_tables)
from ..score.table.names import output_name
from ..score.table.names import count_text
from ..score.engine.progress import LineProgress
from ._common import (add_json, add_profile_options, add_read_options, add_run_options, cli_words, features_text, json_line,
                      left_out_line, read_kwargs, raw_hint, read_settings, run_kwargs,
                      writable_path)
from .tables import printed_table, records

__all__ = ["add_parser", "run"]


def add_parser(subparsers):
    """Add the ``consistency`` subcommand; it sets ``run=run``."""
    p = subparsers.add_parser(
        "consistency", help="phenotypic consistency: label mAP of perturbations sharing an annotation",
        description="For each label of an annotation column (e.g. a target; several per cell with "
                    "--label-sep), how well the perturbations carrying it retrieve each other among the "
                    "perturbations sharing no label (mAP of aggregated profiles), with a p-value by "
                    "permuting label sets among the profiles and BH q-values across labels.")
    p.add_argument("file", metavar="FILE", help="CSV or Parquet profile table")
    p.add_argument("--perturbation", metavar="COL", required=True, help="perturbation column")
    p.add_argument("--annotation", metavar="COL", required=True, help="annotation column (labels)")
    p.add_argument("--label-sep", metavar="SEP", help="separator of several labels in one cell, e.g. '|'")
    p.add_argument("--aggregate", choices=AGGREGATES, default="median",
                   help="per-feature aggregate of a perturbation's replicates (none: keep replicates); default median")
    p.add_argument("--control", metavar="VALUE", action="append",
                   help="perturbation value to drop (controls); repeat for several")
    p.add_argument("--only", metavar="GROUPS", help="keep the significant perturbations of this apnull score --out-groups file")
    p.add_argument("--features", metavar="REGEX", help="feature columns by regex (default: numeric, not Metadata_)")
    add_profile_options(p)
    p.add_argument("--stratum", metavar="COL", help="plate column --normalize works within (default: the whole "
                                                      "table is one plate)")
    p.add_argument("--positives-differ-by", metavar="COL", action="append", dest="positives_differ_by",
                   help="profiles sharing the query's label and this column's value (e.g. the plate) are left "
                        "out of its ranking; repeatable")
    add_run_options(p, ("auto",), unit="label")
    add_read_options(p)
    p.add_argument("--out-labels", metavar="F", type=writable_path("--out-labels"), help="write the labels table (CSV/.parquet)")
    p.add_argument("--out-queries", metavar="F", type=writable_path("--out-queries"), help="write the per-query table")
    add_json(p)
    p.set_defaults(run=run)
    return p


def run(args, out, err) -> int:
    """Run ``apnull consistency`` with parsed ``args``; writes to ``out``/``err``; returns 0."""
    check_outputs([args.file, args.only], [("--out-labels", args.out_labels), ("--out-queries", args.out_queries)])
    differ = list(args.positives_differ_by or [])
    labels = [args.perturbation, args.annotation, *differ, args.stratum]
    table = read_table(args.file, labels=labels, **read_kwargs(args, labels))
    only = None
    if args.only:
        names = [args.perturbation, output_name(args.perturbation)]
        only = read_table(args.only, labels=names)
        if not any(c in only.columns for c in names):
            raise ValueError(f"--only {args.only} has no column {args.perturbation!r}; give the groups file "
                             "apnull score --out-groups wrote for the same --perturbation")
    res = score_consistency(table, perturbation=args.perturbation, annotation=args.annotation,
                            label_sep=args.label_sep, aggregate=args.aggregate, control=args.control, only=only,
                            features=args.features, similarity=args.similarity, nan=args.nan,
                            normalize=args.normalize, stratum=args.stratum, positives_differ_by=differ or None,
                            progress=LineProgress(err, after=3.0, command="apnull consistency", label="labels"), **run_kwargs(args))
    raw_hint(err, "consistency", res.looks_raw)
    write_tables([(args.out_labels, res.labels), (args.out_queries, res.queries)])
    k, n = int(res.labels["significant"].sum()), len(res.labels)
    summary = {"consistent": k, "labels": n, "fraction": k / n}
    settings = dict(res.settings, file=args.file, only_file=args.only, **read_settings(args))
    warnings = [cli_words(w) for w in res.warnings]
    if args.json:
        doc = {"settings": settings, "summary": summary, "labels": records(res.labels),
               "queries": records(res.queries), "skipped": records(res.skipped), "warnings": warnings}
        out.write(json_line(doc))
        return 0
    hidden = ("file", "only_file", "columns_left_out", "dropped_features", "dropped_rows", "feature_columns")
    out.write("settings: " + ", ".join(f"{k}={v}" for k, v in settings.items() if k not in hidden) + "\n")
    out.write(features_text(settings) + "\n")
    out.write(left_out_line(settings))
    out.write(f"\n{consistency_line(res.labels, res.settings)}\n")
    out.write(printed_table(res.labels, args.out_labels) + "\n")
    if not args.out_queries:
        out.write(f"\n{count_text(len(res.queries), 'queries')}: write them with --out-queries F\n")
    for row in records(res.skipped):
        out.write(f"skipped: {row}\n")
    for w in warnings:
        out.write(f"warning: {w}\n")
    return 0
