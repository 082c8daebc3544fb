"""The dashboard's views built from their parts: a view's data (:mod:`apnull.views.null`) drawn with
its figures (:mod:`apnull.plots`). Plain functions, no streamlit and no caching: :mod:`apnull.ui.cache`
fetches the parts, calls these once per input set and keeps what they return."""

from __future__ import annotations

from ..views import null as summaries

__all__ = ["density_view", "quantile_view_of", "law_view"]


def density_view(parts, M: int, N: int, draws: int, show_exact: bool) -> tuple:
    """The "Null densities" view from one :class:`~apnull.views.null.SizeSummary` per size: per metric,
    (metric, figure, number of sizes with the exact overlay or None). AP gets kernel densities;
    Precision@R, a discrete law, its sampled steps and exact dots."""
    from .. import plots

    out = []
    for metric in summaries.METRICS:
        if metric == "pr":  # a discrete law: sampled steps and exact dots, no kernel density
            out.append((metric, plots.pmf_figure(summaries.discrete_pr_laws(parts), M, N, draws=draws), None))
            continue
        curves = [p.curves[metric] for p in parts]
        exact = summaries.exact_density_curves(curves, metric) if show_exact else None
        fig = plots.density_figure(curves, metric, M, N, exact=exact, draws=draws)
        out.append((metric, fig, None if exact is None else len(exact)))
    return tuple(out)


def quantile_view_of(parts, M: int, N: int, K: int, method: str) -> tuple:
    """The "Quantiles vs size" view from its parts (Monte Carlo size summaries when ``method`` is "mc",
    else exact-law tables): (long summary, wide table, figure; the figure packed, see
    :func:`apnull.plots.packed`)."""
    import pandas as pd

    from .. import plots

    summary = summaries.summarise_draws(parts) if method == "mc" else pd.concat(parts, ignore_index=True)
    fig = plots.packed(plots.quantile_figure(summary, M, N, exact_mean=summaries.exact_mean_curve(M, N, K)))
    return summary, summaries.wide_summary(summary), fig


def law_view(law, threshold: float, value: float, mean: float, q: float):
    """The threshold lookup's figure of one law: :func:`apnull.plots.lookup.law_figure`, packed
    (:func:`apnull.plots.packed`: its arrays encoded once, not on every send)."""
    from ..plots import packed
    from ..plots.lookup import law_figure

    return packed(law_figure(law, threshold, value, mean=mean, q=q))
