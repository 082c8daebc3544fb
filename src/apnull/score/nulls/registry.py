"""The mAP nulls of :func:`apnull.score.score_profiles`, registered in one place, :data:`MAP_NULLS` (as
scipy's ``permutation_test`` keeps its null calculators in one table).

A null is a :class:`MapNull`: its name (the ``null=`` choice and the command's ``--null``), its label
(the groups table's ``null`` column) and how a perturbation's mAP p-value is computed. The
"permutation" null is the engine's (its rounds of draws, :func:`.permutation.mean_null`); every other
null is a calculator over the per-query laws, one module each (:mod:`.independent`, :mod:`.copairs`).
Adding a null is one such module and its line in :data:`MAP_NULLS`; the option checks, the command's
choices, the tables' labels and the run's stages read it from here.
"""

from __future__ import annotations

from typing import Callable, NamedTuple

from .copairs import copairs_pvalues
from .independent import independent_pvalues

__all__ = ["MapNull", "MAP_NULLS", "NULLS", "NULL_LABELS", "null_label"]


class MapNull(NamedTuple):
    """One mAP null.

    ``pvalues(laws, queries, maps, permutations) -> (p, draws, bound)``: ``laws`` the run's
    :class:`.laws.LawCache`, ``queries`` one (ms, ns, aps) of kept queries per perturbation, ``maps``
    their observed mAPs, ``permutations`` the run's setting; it returns each perturbation's p-value,
    the draws it counted (int64) and whether it is an upper bound (bool). None: the permutation
    engine's rounds give them. ``draws``: the null uses ``permutations`` (else a fixed B is named in
    the run's warnings as never drawn, unless a query drew it).
    """

    name: str
    label: str
    pvalues: Callable | None
    draws: bool

    @property
    def engine(self) -> bool:
        """The mAP p-values come from the permutation engine's rounds (:func:`..engine.sequential.resolve`)."""
        return self.pvalues is None


#: Every mAP null by name, the default first.
MAP_NULLS = {null.name: null for null in (
    MapNull("permutation", "permutation", None, draws=True),
    MapNull("independent", "independent (approximate)", independent_pvalues, draws=False),
    MapNull("copairs", "copairs (approximate)", copairs_pvalues, draws=True),
)}
#: The choices of ``null=``.
NULLS = tuple(MAP_NULLS)
#: The groups table's ``null`` label of each null, and "all" for the permutation null enumerated.
NULL_LABELS = {"permutation": MAP_NULLS["permutation"].label, "all": "permutation (all assignments, exact)",
               **{name: null.label for name, null in MAP_NULLS.items() if name != "permutation"}}


def null_label(name: str, permutations) -> str:
    """The groups table's ``null`` label of a run of null ``name`` with ``permutations``."""
    return NULL_LABELS["all" if name == "permutation" and permutations == "all" else name]
