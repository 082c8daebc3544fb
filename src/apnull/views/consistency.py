"""Data shaping for the consistency step of "Score your data": guesses, settings, the labels figure."""

from __future__ import annotations

from dataclasses import astuple, dataclass

import numpy as np
import pandas as pd

from ..limits import SCORE_PAGE_MAX_PERMUTATIONS, check_permutations, check_seed
from ..score import AGGREGATES

__all__ = ["SEPARATORS", "SEPARATOR_NAMES", "NO_SEPARATOR", "PICK", "ALL", "ACTIVE", "ConsistencySettings", "guess_annotation",
           "guess_separator", "make_consistency_settings", "active_names", "label_table", "figure_data",
           "AGGREGATES"]

#: Separators offered for several labels in one cell, in the order they are guessed.
SEPARATORS = ("|", ";", ",", "/", "+")
NO_SEPARATOR = "none (one label a cell)"
#: The annotation box's first choice when no column is guessed.
PICK = "(pick a column)"
#: How the separators are shown (the bare characters are hard to read).
SEPARATOR_NAMES = {"|": "| (vertical bar)", ";": "; (semicolon)", ",": ", (comma)", "/": "/ (slash)", "+": "+ (plus)"}
ALL = "all perturbations"
ACTIVE = "active only (q ≤ FDR level above)"
#: Smallest p shown on the figure's log scale.
P_FLOOR = 1e-300


@dataclass(frozen=True)
class ConsistencySettings:
    """What the consistency result depends on (besides the file): hashable, keys the page's cache."""

    perturbation: str
    annotation: str
    label_sep: str | None
    aggregate: str
    control: tuple
    only: tuple | None        #: the active perturbations (sorted text), or None for all
    similarity: str
    permutations: int
    seed: int
    normalize: str = "none"   #: per-plate normalisation, as the activity step's
    stratum: str | None = None  #: the plate column it works within

    def kwargs(self) -> dict:
        """Keyword arguments of :func:`apnull.score.score_consistency`."""
        return dict(perturbation=self.perturbation, annotation=self.annotation, label_sep=self.label_sep,
                    aggregate=self.aggregate, control=list(self.control) or None,
                    only=None if self.only is None else list(self.only), similarity=self.similarity,
                    permutations=self.permutations, seed=self.seed, normalize=self.normalize, stratum=self.stratum)

    def key(self) -> tuple:
        return tuple(str(x) for x in astuple(self))


def _constant_within(table: pd.DataFrame, column: str, perturbation: str) -> bool:
    return bool((table.groupby(table[perturbation].astype(str))[column].nunique(dropna=False) <= 1).all())


def guess_annotation(table: pd.DataFrame, perturbation: str, exclude=()) -> str | None:
    """A column that looks like an annotation: text, constant within each perturbation, with fewer
    distinct values than perturbations (so some share a label). Names with target, moa, mechanism,
    annotation, pathway, gene or shape come first. None when no column fits."""
    n_pert = table[perturbation].nunique()
    fits = []
    for c in table.columns:
        c = str(c)
        if c == perturbation or c in exclude or pd.api.types.is_float_dtype(table[c]):
            continue
        distinct = table[c].nunique()
        if 1 < distinct < n_pert and _constant_within(table, c, perturbation):
            fits.append(c)
    hints = ("target", "moa", "mechanism", "annotation", "pathway", "gene", "shape", "label", "class")
    for hint in hints:
        for c in fits:
            if hint in c.lower():
                return c
    return fits[0] if fits else None


def guess_separator(values: pd.Series) -> str:
    """The separator most cells use among :data:`SEPARATORS`, else :data:`NO_SEPARATOR`."""
    text = values.dropna().astype(str)
    if text.empty:
        return NO_SEPARATOR
    counts = {sep: int(text.str.contains(sep, regex=False).sum()) for sep in SEPARATORS}
    best = max(SEPARATORS, key=lambda s: counts[s])
    return best if counts[best] > 0 else NO_SEPARATOR


def active_names(groups: pd.DataFrame, perturbation: str) -> tuple:
    """The perturbations the activity step called significant (``significant`` column), sorted text."""
    return tuple(sorted(groups.loc[groups["significant"].astype(bool), perturbation].astype(str)))


def make_consistency_settings(table: pd.DataFrame, perturbation: str, annotation: str | None, separator: str, scope: str,
                  groups: pd.DataFrame | None, control, aggregate: str, similarity: str, permutations: int,
                  seed: int, normalize: str = "none", stratum: str | None = None) -> ConsistencySettings:
    """Check the step's inputs and bundle them. ValueError says what to change."""
    if not annotation or annotation not in table.columns:
        raise ValueError("pick the annotation column: the labels (targets, mechanisms, ...) whose perturbations "
                         "should look alike")
    if annotation == perturbation:
        raise ValueError("the annotation column must differ from the perturbation column")
    if aggregate not in AGGREGATES:
        raise ValueError(f"aggregate must be one of {', '.join(AGGREGATES)}")
    only = None
    if scope == ACTIVE:
        if groups is None:
            raise ValueError("score the activity first, or choose all perturbations")
        only = active_names(groups, perturbation)
        if len(only) < 2:
            raise ValueError(f"{len(only)} perturbation(s) are active at this FDR level; consistency needs at least "
                             "two: raise the FDR level or choose all perturbations")
    permutations = check_permutations(permutations, "independent", SCORE_PAGE_MAX_PERMUTATIONS, " on this page")
    control = tuple(str(c) for c in ([control] if isinstance(control, str) else list(control or ())))
    sep = None if separator in (None, "", NO_SEPARATOR) else separator
    return ConsistencySettings(str(perturbation), str(annotation), sep, aggregate, control, only, similarity,
                               int(permutations), check_seed(seed, allow_none=False), str(normalize),
                               None if normalize == "none" else stratum)


def label_table(labels: pd.DataFrame, fdr: float) -> pd.DataFrame:
    """The labels table with ``significant`` at the page's FDR level, most significant first."""
    out = labels.copy()
    out["significant"] = out["q_value"] <= fdr
    return out.reset_index(drop=True)


def figure_data(labels: pd.DataFrame, annotation: str, fdr: float) -> pd.DataFrame:
    """One row a label: ``name`` (text), ``n_perturbations``, ``mAP``, ``p_value``, ``q_value``,
    ``neg_log10_p``, ``significant`` (q <= fdr)."""
    p = labels["p_value"].to_numpy(dtype=float)
    return pd.DataFrame({"name": labels[annotation].astype(str).to_numpy(),
                         "n_perturbations": labels["n_perturbations"].to_numpy(),
                         "mAP": labels["mAP"].to_numpy(dtype=float), "p_value": p,
                         "q_value": labels["q_value"].to_numpy(dtype=float),
                         "neg_log10_p": -np.log10(np.maximum(p, P_FLOOR)),
                         "significant": (labels["q_value"] <= fdr).to_numpy()})
