"""``apnull threshold | pvalue | sample | metrics``: the null law of AP and Precision@R from the shell."""

from __future__ import annotations

import math

from ..limits import MAX_DRAWS, MAX_GRID_SIZES
from ..score.engine.progress import LineProgress
from ._common import add_json, emit, float_arg, int_arg, writable_path

__all__ = ["add_parsers"]


def _add_null_options(p, q=False, value=False):
    p.add_argument("--metric", default="ap", choices=("ap", "pr"), help="ap (Average Precision, default) or pr (Precision@R)")
    if value:
        p.add_argument("--value", required=True, type=float_arg("--value"), help="the observed metric value")
    p.add_argument("--m", required=True, type=int_arg("--m", 1), help="number of positives (>= 1)")
    p.add_argument("--n", required=True, type=int_arg("--n", 0), help="number of negatives (>= 0)")
    if q:
        level = p.add_mutually_exclusive_group()
        level.add_argument("--q", type=float_arg("--q"), default=None, help="quantile level in [0, 1] (default 0.95)")
        level.add_argument("--alpha", type=float_arg("--alpha"), default=None,
                           help="false positive rate; the threshold is the (1 - alpha) quantile")
    p.add_argument("--method", default="auto", choices=("auto", "exact", "grid", "mc"), help="default auto")
    p.add_argument("--draws", type=int_arg("--draws", 1, MAX_DRAWS), default=None,
                   help="Monte Carlo draws (default 100,000)")
    p.add_argument("--seed", type=int_arg("--seed", 0), default=None, help="Monte Carlo seed")
    p.add_argument("--tol", type=float_arg("--tol"), default=1e-3, help="grid law accuracy in AP units (default 1e-3)")
    add_json(p)


def _law(args):
    from ..significance import null_distribution

    return null_distribution(args.m, args.n, args.metric, args.method, draws=args.draws, seed=args.seed, tol=args.tol)


def _law_info(law) -> dict:
    from ..exact import ap_variance, expected_ap

    info = {"method": law.method, "method_detail": law.describe(), "error_bound": law.error_bound}
    if law.method == "mc":
        info.update(draws=int(law.draws.size), seed=law.seed)
    info.update(null_mean=law.mean, null_sd=law.std, ratio_m_over_N=law.m / (law.m + law.n))
    if law.metric == "ap":
        info.update(exact_mean=expected_ap(law.m, law.n), exact_sd=ap_variance(law.m, law.n) ** 0.5)
    return info


def _short(metric: str) -> str:
    return "AP" if metric == "ap" else "Precision@R"


def _threshold(args, out, err) -> int:
    from ..limits import as_probability
    from ..significance import resolved_threshold

    if args.alpha is not None:
        alpha = as_probability(args.alpha, "alpha", open_low=True, open_high=True)
        level, q = {"alpha": alpha}, 1 - alpha
    else:
        q = as_probability(0.95 if args.q is None else args.q, "q")
        level = {"q": q}
    law = _law(args)
    thr = resolved_threshold(law, **level)
    bracket = [_finite(thr.low), _finite(thr.high)]
    result = {"metric": law.metric, "m": law.m, "n": law.n, "q": thr.q, "alpha": thr.alpha, "threshold": thr.value,
              "threshold_source": thr.source, "threshold_bounds": bracket, "law_alpha_floor": thr.law_floor,
              **_law_info(law)}
    label = f"alpha = {thr.alpha:g}" if args.alpha is not None else f"q = {q:g}"
    rows = [(f"{_short(law.metric)} threshold ({label})", thr.value), ("m, n", f"{law.m}, {law.n}"),
            ("method", law.describe())]
    if thr.source == "tail count":
        rows.append(("threshold from", "the tail counted in log space (exact)" if law.method == "exact" else
                     f"the far tail counted (the law itself resolves alpha >= {thr.law_floor:.3g})"))
    if thr.source == "tail count" or (thr.source == "exact" and law.method != "exact"):
        rows.append(("exact threshold in", f"[{thr.low:.6g}, {thr.high:.6g}]"))
    rows += [("null mean", law.mean), ("null SD", law.std), ("m / (m + n)", law.m / (law.m + law.n))]
    return emit(args, out, result, rows)


def _finite(v: float):
    """JSON has no NaN or infinity: None for them."""
    return v if math.isfinite(v) else None


def _pvalue(args, out, err) -> int:
    from ..limits import check_value
    from ..significance import resolved_pvalue
    from ..tail import NORMAL_MIN

    value = check_value(args.value)
    law = _law(args)
    tail = resolved_pvalue(value, law)
    result = {"metric": law.metric, "m": law.m, "n": law.n, "value": value, "p_value": tail.p,
              "p_value_bounds": [tail.low, tail.high], "log10_p_value": _finite(tail.log10_p),
              "log10_p_value_bounds": [_finite(tail.log10_low), _finite(tail.log10_high)],
              "relative_error": tail.rel_error, "p_value_source": tail.source,
              "p_value_underflows": tail.underflows, **_law_info(law)}
    if tail.underflows:
        result["p_value_note"] = (f"p is below the smallest normal float ({NORMAL_MIN:.3g}): p_value is a float at or "
                                  "above it (a valid, conservative p) and p_value_bounds are [0, p_value]; "
                                  "log10_p_value and log10_p_value_bounds give its value")
    head = f"p-value of {_short(law.metric)} = {value:g}"
    rows = [(head, f"10^{tail.log10_p:.6f}" if tail.underflows else tail.p), ("m, n", f"{law.m}, {law.n}"),
            ("method", law.describe())]
    if tail.source != "exact" and not tail.underflows:
        label = {"mc": "95% interval", "mc bound": "95% interval (no draw reached it)"}.get(tail.source,
                                                                                            "guaranteed range")
        rows.append((label, f"[{tail.low:.6g}, {tail.high:.6g}]"))
    if tail.source != "exact":
        rows.append(("relative error", f"{tail.rel_error:.2g}"))
    if tail.source == "tail count":
        rows.append(("tail", "counted: the placements that reach the value, in log space"))
    if tail.log10_p > -math.inf:
        label = "log10 p (range guaranteed)" if tail.underflows and tail.source != "mc bound" else "log10 p"
        rows.append((label, f"{tail.log10_p:.6f} in [{tail.log10_low:.6f}, {tail.log10_high:.6f}]"))
    if tail.underflows:
        rows.append(("note", f"p is below the smallest normal float ({NORMAL_MIN:.3g}): given as log10 only"))
    return emit(args, out, result, rows)


def _sample(args, out, err) -> int:
    import pandas as pd

    from ..sampling import iter_sample_grid
    from ..score.results.write import write_table

    report = LineProgress(err, label="sampling sizes")
    frames = []
    for i, s in enumerate(iter_sample_grid(args.m, args.n, args.sizes, args.draws, args.seed), start=1):
        frames.append(s.to_frame())
        report(i, args.sizes)
    table = pd.concat(frames, ignore_index=True)
    write_table(table, args.out)  # atomic: an old file stays whole when writing fails or is interrupted
    result = {"rows": len(table), "sizes": args.sizes, "draws": args.draws, "out": args.out}
    return emit(args, out, result, text=f"wrote {len(table):,} rows (m, n, ap, pr) for {args.sizes} sizes to {args.out}")


def _metrics(args, out, err) -> int:
    from .. import metrics as mt
    from ..significance import null_distribution, null_position

    rel = mt.relevance_from_text(args.relevant, "--relevant").astype(int).tolist()
    size = len(rel)
    k = size if args.k is None else args.k
    if not 1 <= k <= size:
        raise ValueError(f"--k must lie between 1 and the ranking's length {size}, got {k}")
    m = sum(rel)
    result = {"length": size, "m": m, "n": size - m, "k": k, "precision_at_k": mt.precision_at_k(rel, k)}
    if m:
        result.update(
            ap=mt.average_precision(rel), r_precision=mt.r_precision(rel), recall_at_k=mt.recall_at_k(rel, k),
            f1_at_k=mt.f1_at_k(rel, k), ap_at_k=mt.average_precision_at_k(rel, k), ndcg_at_k=mt.ndcg_at_k(rel, k),
            reciprocal_rank=mt.reciprocal_rank(rel),
        )
        if size > m:
            result["auc"] = mt.auc(rel)
        pos = null_position(result["ap"], null_distribution(m, size - m, "ap", "auto", seed=0))
        result.update(ap_p_value=pos.p, ap_null_percentile=pos.percentile, null_method=pos.method)
    return emit(args, out, result, list(result.items()))


def add_parsers(sub) -> None:
    """Add threshold, pvalue, sample and metrics to the subparsers ``sub``."""
    p = sub.add_parser("threshold", help="null threshold (quantile) of AP or Precision@R")
    _add_null_options(p, q=True)
    p.set_defaults(run=_threshold)

    p = sub.add_parser("pvalue", help="p-value of an observed AP or Precision@R")
    _add_null_options(p, value=True)
    p.set_defaults(run=_pvalue)

    p = sub.add_parser("sample", help="Monte Carlo null draws for sizes (M*i, N*i), i = 1..K, to CSV")
    p.add_argument("--m", required=True, type=int_arg("--m", 1), help="M, positives of the first size")
    p.add_argument("--n", required=True, type=int_arg("--n", 0), help="N, negatives of the first size")
    p.add_argument("--draws", required=True, type=int_arg("--draws", 1, MAX_DRAWS), help="draws per size")
    p.add_argument("--sizes", type=int_arg("--sizes", 1, MAX_GRID_SIZES), default=1,
                   help="K, number of sizes (default 1)")
    p.add_argument("--seed", type=int_arg("--seed", 0), default=None, help="seed (default: fresh)")
    p.add_argument("--out", required=True, type=writable_path("--out", (".csv", ".csv.gz")),
                   help="output CSV file (columns m, n, ap, pr); checked before any drawing")
    add_json(p)
    p.set_defaults(run=_sample)

    p = sub.add_parser("metrics", help="metrics of one ranking given its 0/1 relevance labels")
    p.add_argument("--relevant", required=True, help="0/1 labels in rank order, e.g. 0,1,0,1,1,0")
    p.add_argument("--k", type=int_arg("--k", 1), default=None, help="cut-off k (default: the whole ranking)")
    add_json(p)
    p.set_defaults(run=_metrics)
