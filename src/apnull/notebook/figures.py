"""The figures of a result, one function each, shared by the dashboard's pages and a notebook.

- :func:`volcano`: the "Score your data" page's volcano (mAP against -log10 p; a p that is a bound, no
  null value reaching the mAP, as a triangle), from :func:`apnull.views.score.volcano_data`;
- :func:`labels`: the consistency step's label mAP against -log10 p, from
  :func:`apnull.views.consistency.figure_data`;
- :func:`null_view`: one perturbation's (or label's) permutation null with its observed mAP;
- :func:`pipelines`: the comparison's mAP of B against mAP of A (:func:`apnull.plots.compare.compare_figure`).

:func:`figure_of` and :func:`null_figure_of` take a result (``ScoreResult``, ``ConsistencyResult``,
``CompareResult``) and call these with the result's own settings: its FDR level ``alpha``, its null, its
permutations.
"""

from __future__ import annotations

import numpy as np

from ..plots.compare import compare_figure
from ..plots.consistency import labels_figure
from ..plots.score import null_figure, volcano_figure
from ..views import compare as compare_view
from ..views import consistency as consistency_view
from ..views import score as score_view
from ..views.score_report import NULL_SHORT_WORDS

__all__ = ["volcano", "labels", "null_view", "pipelines", "figure_of", "null_figure_of"]


def volcano(points, fdr: float, null: str, permutations, highlight=None):
    """The volcano of ``points`` (:func:`apnull.views.score.volcano_data`) at FDR level ``fdr``: the BH
    cutoff line, and for a fixed number of ``permutations`` B under a null that draws them the smallest
    attainable p, 1 / (1 + B) ("auto" and "all" have no such floor); the subtitle names the ``null``."""
    fixed = isinstance(permutations, (int, np.integer)) and not isinstance(permutations, bool)
    p_floor = 1.0 / (1 + int(permutations)) if fixed and null in score_view.USES_B else None
    return volcano_figure(points, fdr, cutoff=score_view.p_cutoff(points), p_floor=p_floor, highlight=highlight,
                          method=NULL_SHORT_WORDS[null])


def labels(data, fdr: float, permutations, highlight=None):
    """The consistency figure of ``data`` (:func:`apnull.views.consistency.figure_data`) at ``fdr``: the BH
    cutoff, and the smallest p 1 / (1 + B) for a fixed number of ``permutations`` (none for "auto")."""
    fixed = isinstance(permutations, (int, np.integer)) and not isinstance(permutations, bool)
    return labels_figure(data, fdr, cutoff=score_view.p_cutoff(data),
                         p_floor=1.0 / (1 + int(permutations)) if fixed else None, highlight=highlight)


def null_view(null_maps, observed: float, name: str, p_value: float, q_value: float, n_replicates=None,
              bins: int = 40) -> tuple:
    """(summary, figure) of a permutation null: :func:`apnull.views.score.null_summary` of its finite
    values (a NaN draw: no query had a negative) and the histogram with the observed mAP and the null's
    mean (:func:`apnull.plots.score.null_figure`), titled with ``name``, p and q."""
    null = np.asarray(null_maps, dtype=float)
    hist = score_view.null_histogram(null, observed, bins=bins)
    summary = score_view.null_summary(null[np.isfinite(null)], observed)
    fig = null_figure(hist, observed, name, p_value, q_value, permutations=int(null.size),
                      n_replicates=None if n_replicates is None else int(n_replicates), null_mean=summary["mean"])
    return summary, fig


def pipelines(result):
    """The comparison's figure of a ``CompareResult``: mAP of B against mAP of A, coloured by which side
    retrieves each perturbation at the result's ``alpha``, with the mean delta."""
    pcol = result.settings["perturbation_column"]
    pcol = pcol if isinstance(pcol, str) else pcol[0]
    return compare_figure(compare_view.scatter_data(result.groups, pcol), result.settings["alpha"],
                          result.summary["mean_delta"])


def _kind(result) -> str:
    for kind in ("labels", "summary", "queries"):  # ConsistencyResult, CompareResult, ScoreResult
        if hasattr(result, kind):
            return kind
    raise TypeError(f"no figure for a {type(result).__name__}; give a result of score_profiles, "
                    "score_consistency or score_compare")


def figure_of(result, fdr: float | None = None, highlight=None):
    """The dashboard's figure of ``result`` (a ``plotly.graph_objects.Figure``): the volcano of a
    ``ScoreResult``, the labels' figure of a ``ConsistencyResult``, the mAP_a against mAP_b scatter of a
    ``CompareResult``. ``fdr``: the level of the colours (default: the run's ``alpha``); ``highlight``: a
    perturbation or label to ring (not for a comparison)."""
    kind = _kind(result)
    st = result.settings
    if kind == "summary":
        if fdr is not None or highlight is not None:
            raise ValueError("a comparison's figure takes no fdr or highlight: it colours at the run's alpha")
        return pipelines(result)
    fdr = st["alpha"] if fdr is None else score_view.check_fdr(fdr)
    if kind == "labels":
        data = consistency_view.figure_data(consistency_view.label_table(result.labels, fdr),
                                            st["annotation_column"], fdr)
        return labels(data, fdr, st["permutations"], highlight=highlight)
    pcol = st["perturbation_column"]
    points = score_view.volcano_data(score_view.ranked_groups(result.groups, fdr), pcol, fdr)
    return volcano(points, fdr, st["null"], st["permutations"], highlight=highlight)


def null_figure_of(result, name, bins: int = 40):
    """The permutation null of ``name`` (a perturbation of a ``ScoreResult``, as text or as its value; a
    label of a ``ConsistencyResult``) with its observed mAP: the figure of the dashboard's right-hand
    panel. ValueError when ``name`` was not scored or the run kept no permutation null."""
    if _kind(result) == "labels":
        acol = result.settings["annotation_column"]
        hit = result.labels.loc[result.labels[acol].astype(str) == str(name)]
        if hit.empty:
            raise ValueError(f"{name!r} is not a scored label of this result")
        row = hit.iloc[0]
        return null_view(result.null_maps(str(name)), float(row["mAP"]), str(name), float(row["p_value"]),
                         float(row["q_value"]), bins=bins)[1]
    if _kind(result) != "queries":
        raise ValueError("a comparison has no permutation null per perturbation; plot each side's: res.a, res.b")
    pcol = result.settings["perturbation_column"]
    text = score_view.NAME_SEP.join(map(str, name)) if isinstance(name, tuple) else str(name)
    row = score_view.row_of(result.groups, pcol, text)
    null = result.null_maps(score_view.original_name(result.groups, pcol, text))
    return null_view(null, float(row["mAP"]), text, float(row["p_value"]), float(row["q_value"]),
                     n_replicates=row["n_replicates"], bins=bins)[1]
