"""The ``apnull`` command: thresholds, p-values, null samples and metrics from the shell.

Every subcommand prints a readable table, or JSON with ``--json``. Bad input prints one line
``apnull: error: ...`` on stderr and exits with status 2.
"""

from __future__ import annotations

import argparse
import json
import sys

from . import __version__

EXIT_USAGE = 2


class _Parser(argparse.ArgumentParser):
    """argparse that reports a usage error in one line (no usage block) and exits 2."""

    def error(self, message):  # noqa: D401 - argparse API
        raise _UsageError(message)


class _UsageError(Exception):
    pass


def _int_arg(name):
    def parse(text):
        try:
            value = float(text)
        except ValueError:
            raise argparse.ArgumentTypeError(f"{name} must be a whole number, got {text!r}") from None
        if not value.is_integer():
            raise argparse.ArgumentTypeError(f"{name} must be a whole number, got {text!r}")
        return int(value)
    return parse


def _float_arg(name):
    def parse(text):
        try:
            return float(text)
        except ValueError:
            raise argparse.ArgumentTypeError(f"{name} must be a number, got {text!r}") from None
    return parse


def _add_null_options(p, q=False, value=False):
    p.add_argument("--metric", default="ap", help="ap (Average Precision) or pr (Precision@R); default ap")
    if value:
        p.add_argument("--value", required=True, type=_float_arg("--value"), help="the observed metric value")
    p.add_argument("--m", required=True, type=_int_arg("--m"), help="number of positives (>= 1)")
    p.add_argument("--n", required=True, type=_int_arg("--n"), help="number of negatives (>= 0)")
    if q:
        p.add_argument("--q", type=_float_arg("--q"), default=None,
                       help="quantile level in [0, 1] (default 0.95); or give --alpha")
        p.add_argument("--alpha", type=_float_arg("--alpha"), default=None,
                       help="significance level; the threshold is the (1 - alpha) quantile")
    p.add_argument("--method", default="auto", help="auto | exact | grid | mc (default auto)")
    p.add_argument("--draws", type=_int_arg("--draws"), default=None, help="Monte Carlo draws (default 100,000)")
    p.add_argument("--seed", type=_int_arg("--seed"), default=None, help="Monte Carlo seed")
    p.add_argument("--tol", type=_float_arg("--tol"), default=1e-3, help="grid law accuracy in AP units (default 1e-3)")
    p.add_argument("--json", action="store_true", help="print JSON")


def _law(args):
    from .significance import null_distribution

    return null_distribution(args.m, args.n, args.metric, args.method, draws=args.draws, seed=args.seed,
                             tol=args.tol)


def _law_info(law) -> dict:
    from .exact import ap_variance, expected_ap

    info = {"method": law.method, "method_detail": law.describe(), "error_bound": law.error_bound}
    if law.method == "mc":
        info.update(draws=int(law.draws.size), seed=law.seed)
    info.update(null_mean=law.mean, null_sd=law.std, ratio_m_over_N=law.m / (law.m + law.n))
    if law.metric == "ap":
        info.update(exact_mean=expected_ap(law.m, law.n), exact_sd=ap_variance(law.m, law.n) ** 0.5)
    return info


def _print_table(rows: list[tuple[str, object]], out):
    width = max(len(k) for k, _ in rows)
    for key, val in rows:
        if isinstance(val, float):
            val = f"{val:.6g}"
        out.write(f"{key:<{width}}  {val}\n")


def _cmd_threshold(args, out) -> int:
    from ._validate import as_probability

    if args.q is not None and args.alpha is not None:
        raise ValueError("give either --q or --alpha, not both")
    if args.alpha is not None:
        q = 1 - as_probability(args.alpha, "alpha", open_low=True, open_high=True)
    else:
        q = as_probability(0.95 if args.q is None else args.q, "q")
    law = _law(args)
    thr = float(law.quantile(q))
    result = {"metric": law.metric, "m": law.m, "n": law.n, "q": q, "threshold": thr, **_law_info(law)}
    if args.json:
        json.dump(result, out)
        out.write("\n")
    else:
        name = "AP" if law.metric == "ap" else "Precision@R"
        _print_table([
            (f"{name} threshold (q = {q:g})", thr),
            ("m, n", f"{law.m}, {law.n}"),
            ("method", law.describe()),
            ("null mean", law.mean),
            ("null SD", law.std),
            ("m / (m + n)", law.m / (law.m + law.n)),
        ], out)
    return 0


def _cmd_pvalue(args, out) -> int:
    from .significance import check_value

    check_value(args.value)
    law = _law(args)
    p = float(law.sf(args.value))
    lo, hi = law.sf_bounds(args.value)
    result = {"metric": law.metric, "m": law.m, "n": law.n, "value": args.value, "p_value": p,
              "p_value_bounds": [float(lo), float(hi)], **_law_info(law)}
    if args.json:
        json.dump(result, out)
        out.write("\n")
    else:
        name = "AP" if law.metric == "ap" else "Precision@R"
        rows = [(f"p-value of {name} = {args.value:g}", p), ("m, n", f"{law.m}, {law.n}"),
                ("method", law.describe())]
        if law.method != "exact":
            label = "guaranteed range" if law.method == "grid" else "95% interval"
            rows.append((label, f"[{float(lo):.6g}, {float(hi):.6g}]"))
        _print_table(rows, out)
    return 0


def _cmd_sample(args, out) -> int:
    from .sampling import iter_sample_grid

    if not args.out.lower().endswith((".csv", ".csv.gz")):
        raise ValueError(f"--out must name a .csv or .csv.gz file, got {args.out!r}")
    import pandas as pd

    frames = [s.to_frame() for s in iter_sample_grid(args.m, args.n, args.sizes, args.draws, args.seed)]
    table = pd.concat(frames, ignore_index=True)
    try:
        table.to_csv(args.out, index=False)
    except OSError as exc:
        # pandas raises a bare OSError (strerror None) for a missing directory: use its message then
        raise ValueError(f"cannot write {args.out}: {exc.strerror or exc}") from None
    summary = {"rows": len(table), "sizes": args.sizes, "draws": args.draws, "out": args.out}
    if args.json:
        json.dump(summary, out)
        out.write("\n")
    else:
        out.write(f"wrote {len(table):,} rows (m, n, ap, pr) for {args.sizes} sizes to {args.out}\n")
    return 0


def _parse_relevant(text: str) -> list[int]:
    parts = [p.strip() for p in text.replace(" ", ",").split(",") if p.strip()]
    if not parts:
        raise ValueError("--relevant is empty: give 0/1 labels in rank order, e.g. 0,1,0,1,1,0")
    labels = []
    for p in parts:
        if p.lower() in ("1", "true", "t", "y"):
            labels.append(1)
        elif p.lower() in ("0", "false", "f", "n"):
            labels.append(0)
        else:
            raise ValueError(f"--relevant takes 0/1 labels, got {p!r}")
    return labels


def _cmd_metrics(args, out) -> int:
    from . import metrics as mt
    from .significance import null_distribution

    rel = _parse_relevant(args.relevant)
    size = len(rel)
    k = size if args.k is None else args.k
    if not 1 <= k <= size:
        raise ValueError(f"--k must lie between 1 and the ranking's length {size}, got {k}")
    m = sum(rel)
    result = {"length": size, "m": m, "n": size - m, "k": k,
              "precision_at_k": mt.precision_at_k(rel, k)}
    if m:
        result.update(
            ap=mt.average_precision(rel), r_precision=mt.r_precision(rel), recall_at_k=mt.recall_at_k(rel, k),
            f1_at_k=mt.f1_at_k(rel, k), ap_at_k=mt.average_precision_at_k(rel, k), ndcg_at_k=mt.ndcg_at_k(rel, k),
            reciprocal_rank=mt.reciprocal_rank(rel),
        )
        if size > m:
            result["auc"] = mt.auc(rel)
        law = null_distribution(m, size - m, "ap", "auto", seed=0)
        result.update(ap_p_value=float(law.sf(result["ap"])), ap_null_percentile=100 * float(law.cdf(result["ap"])),
                      null_method=law.method)
    if args.json:
        json.dump(result, out)
        out.write("\n")
    else:
        _print_table([(key, val) for key, val in result.items()], out)
    return 0


def build_parser() -> argparse.ArgumentParser:
    parser = _Parser(prog="apnull", description="Null distributions of Average Precision and Precision@R.")
    parser.add_argument("--version", action="version", version=f"apnull {__version__}")
    sub = parser.add_subparsers(dest="command", metavar="COMMAND", parser_class=_Parser)
    sub.required = True

    p = sub.add_parser("threshold", help="null threshold (quantile) of AP or Precision@R")
    _add_null_options(p, q=True)
    p.set_defaults(func=_cmd_threshold)

    p = sub.add_parser("pvalue", help="p-value of an observed AP or Precision@R")
    _add_null_options(p, value=True)
    p.set_defaults(func=_cmd_pvalue)

    p = sub.add_parser("sample", help="Monte Carlo null draws for sizes (M*i, N*i), i = 1..K, to CSV")
    p.add_argument("--m", required=True, type=_int_arg("--m"), help="M, positives of the first size")
    p.add_argument("--n", required=True, type=_int_arg("--n"), help="N, negatives of the first size")
    p.add_argument("--draws", required=True, type=_int_arg("--draws"), help="draws per size")
    p.add_argument("--sizes", type=_int_arg("--sizes"), default=1, help="K, number of sizes (default 1)")
    p.add_argument("--seed", type=_int_arg("--seed"), default=None, help="seed (default: fresh)")
    p.add_argument("--out", required=True, help="output CSV file (columns m, n, ap, pr)")
    p.add_argument("--json", action="store_true", help="print a JSON summary")
    p.set_defaults(func=_cmd_sample)

    p = sub.add_parser("metrics", help="metrics of one ranking given its 0/1 relevance labels")
    p.add_argument("--relevant", required=True, help="0/1 labels in rank order, e.g. 0,1,0,1,1,0")
    p.add_argument("--k", type=_int_arg("--k"), default=None, help="cut-off k (default: the whole ranking)")
    p.add_argument("--json", action="store_true", help="print JSON")
    p.set_defaults(func=_cmd_metrics)

    from . import cli_sampled

    cli_sampled.register(sub)
    return parser


def main(argv=None, out=None, err=None) -> int:
    """Run the command; returns the exit status (0, or 2 for bad input)."""
    out = out or sys.stdout
    err = err or sys.stderr
    parser = build_parser()
    try:
        args = parser.parse_args(argv)
        status = args.func(args, out)
    except (_UsageError, ValueError) as exc:
        msg = " ".join(str(exc).split())
        err.write(f"apnull: error: {msg}\n")
        return EXIT_USAGE
    except KeyboardInterrupt:
        err.write("apnull: interrupted\n")
        return 130
    return int(status or 0)


if __name__ == "__main__":  # pragma: no cover
    sys.exit(main())
