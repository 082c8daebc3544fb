"""``apnull compare A B ...``: do two pipelines of the same wells retrieve replicates equally well?

``apnull compare A B --key COL [--key COL] --perturbation COL --control VALUE --stratum COL
[--features-a REGEX] [--features-b REGEX] [--similarity S] [--nan MODE] [--normalize MODE] [--unmatched error|drop]
[--permutations auto|B] [--seed S] [--alpha A] [--workers N | --scheduler ADDRESS] [--out-groups F]
[--out-left-out F] [--json]`` (see :func:`apnull.score.score_compare`).

A and B are CSV or Parquet tables of the same wells (rows matched by the key columns, read as text, in
any order). Prints the answer, the retrieved counts and the per-perturbation table, or one JSON
document with ``--json``: ``{"settings": {...}, "summary": {...}, "groups": [...], "left_out": [...],
"warnings": [...]}``. Output paths are checked before anything is read and never name an input;
both files are written atomically, together or not at all.
"""

from __future__ import annotations


from ..score import (UNMATCHED, check_outputs, p_text, read_table, retrieved_line,
                     score_compare, summary_line, write_tables)
from ..score.table.names import count_text
from ..score.engine.progress import LineProgress
from ._common import (add_json, add_profile_options, add_read_options, add_run_options, cli_words, features_text, json_line,
                      left_out_line, read_kwargs, raw_hint, read_settings, run_kwargs,
                      writable_path)
from .tables import records

__all__ = ["add_parser", "run"]

#: Columns printed to 4 decimals (delta with its sign).
MAP_COLUMNS = ("mAP_a", "mAP_b")
#: Columns printed by :func:`apnull.score.p_text`.
P_COLUMNS = ("p_value_a", "q_value_a", "p_value_b", "q_value_b")


def add_parser(subparsers):
    """Add the ``compare`` subcommand; it sets ``run=run``."""
    p = subparsers.add_parser(
        "compare", help="compare two pipelines (feature tables) of the same wells: which retrieves replicates better",
        description="Score two tables of the same wells (two pipelines, e.g. two feature sets or normalisations) "
                    "as apnull score does, pair the perturbations, and test whether both retrieve replicates "
                    "equally well: the mean mAP difference with a 95% interval and a p-value from sign flips "
                    "of whole plates (components of strata), and the retrieved counts with a paired test.")
    p.add_argument("a", metavar="A", help="CSV or Parquet table of pipeline A")
    p.add_argument("b", metavar="B", help="CSV or Parquet table of pipeline B (the same wells, any row order)")
    p.add_argument("--key", metavar="COL", action="append", required=True,
                   help="column identifying a well in both tables (repeat: e.g. --key Metadata_plate --key Metadata_well)")
    p.add_argument("--perturbation", metavar="COL", action="append", required=True,
                   help="perturbation column; repeat when several columns make a perturbation")
    p.add_argument("--control", metavar="VALUE", action="append",
                   help="control value of the perturbation column; repeat for several (default DMSO)")
    p.add_argument("--stratum", metavar="COL", required=True,
                   help="plate/batch column: the resampling units are its plates (linked by perturbations on several)")
    p.add_argument("--features-a", metavar="REGEX", help="A's feature columns by regex (default: numeric, not Metadata_)")
    p.add_argument("--features-b", metavar="REGEX", help="B's feature columns by regex (default: numeric, not Metadata_)")
    add_profile_options(p, " (the well left out of both)")
    p.add_argument("--unmatched", choices=UNMATCHED, default="error",
                   help="wells in one table only, repeated or blank keys, labels that differ: error (default) or "
                        "drop (left out of both and named)")
    add_run_options(p, ("auto",))
    add_read_options(p)
    p.add_argument("--out-groups", metavar="F", type=writable_path("--out-groups"),
                   help="write the per-perturbation table (CSV/.parquet)")
    p.add_argument("--out-left-out", metavar="F", type=writable_path("--out-left-out"),
                   help="write the wells left out (with --unmatched drop or --nan drop-rows)")
    add_json(p)
    p.set_defaults(run=run)
    return p


def _shown(groups):
    """The per-perturbation table as text columns (mAP and delta to 4 decimals, p and q by p_text)."""
    out = groups.copy()
    for col in MAP_COLUMNS:
        out[col] = out[col].map(lambda v: "nan" if v != v else f"{v:.4f}")
    out["delta"] = out["delta"].map(lambda v: "nan" if v != v else f"{v:+.4f}")
    for col in P_COLUMNS:
        out[col] = out[col].map(p_text)
    return out.to_string(index=False)


def run(args, out, err) -> int:
    """Run ``apnull compare`` with parsed ``args``; writes to ``out``/``err``; returns 0."""
    check_outputs([args.a, args.b], [("--out-groups", args.out_groups), ("--out-left-out", args.out_left_out)])
    labels = [*args.key, *args.perturbation, args.stratum]
    a = read_table(args.a, labels=labels, **read_kwargs(args, labels))
    b = read_table(args.b, labels=labels, **read_kwargs(args, labels))
    perturbation = args.perturbation[0] if len(args.perturbation) == 1 else list(args.perturbation)
    res = score_compare(a, b, key=list(args.key), perturbation=perturbation, control=args.control or ["DMSO"],
                        stratum=args.stratum, features_a=args.features_a, features_b=args.features_b,
                        similarity=args.similarity, nan=args.nan, normalize=args.normalize, unmatched=args.unmatched,
                        progress=LineProgress(err, after=3.0, command="apnull compare", label="perturbations"), **run_kwargs(args))
    raw_hint(err, "compare", res.looks_raw)
    write_tables([(args.out_groups, res.groups), (args.out_left_out, res.left_out)])  # both, or neither
    settings = dict(res.settings, file_a=args.a, file_b=args.b, **read_settings(args))
    warnings = [cli_words(w) for w in res.warnings]
    if args.json:
        doc = {"settings": settings, "summary": res.summary, "groups": records(res.groups),
               "left_out": records(res.left_out), "warnings": warnings}
        out.write(json_line(doc))
        return 0
    shown = ("key", "perturbation", "control", "stratum", "features_a", "features_b", "similarity", "normalize",
             "permutations", "seed", "alpha", *(k for k in ("where", "columns_read") if k in settings))
    out.write("settings: " + ", ".join(f"{k}={settings[k]}" for k in shown) + "\n")
    for side, name, scored in (("A", args.a, res.a), ("B", args.b, res.b)):
        line = left_out_line(scored.settings)
        out.write(f"{side}: {name} ({features_text(scored.settings)})" + (f"; {line}" if line else "\n"))
    out.write("\n")
    out.write(summary_line(res.summary) + "\n")
    out.write(retrieved_line(res.summary) + "\n")
    out.write(f"\n{count_text(len(res.groups), 'perturbations')} (delta = mAP_b - mAP_a; unit: the plates resampled together)\n")
    out.write(_shown(res.groups) + "\n")
    if len(res.left_out):
        out.write(f"\n{count_text(len(res.left_out), 'rows')} left out"
                  + (f" (written to {args.out_left_out})" if args.out_left_out else " (write them with --out-left-out F)")
                  + "\n")
    for w in warnings:
        out.write(f"warning: {w}\n")
    return 0
