"""apnull, the AP Null Explorer: how Average Precision and Precision@R behave when a ranking is random.

Given m positives and n negatives in uniformly random order (every placement equally likely), apnull
gives the null law of AP and Precision@R exactly where that is possible and by fast Monte Carlo where
it is not, with thresholds (quantiles) and p-values. See ``apnull.significance`` for the choice of
method and ``apnull.exact`` for the formulas.
"""

from .binning import breakpoints
from .exact import ap_variance, expected_ap
from .law import NullDistribution
from .metrics import average_precision, precision_at_k, r_precision, ranking_table, recall_at_k
from .sampling import sample_grid, sample_null
from .significance import null_distribution, p_value, threshold

__version__ = "0.1.0"

__all__ = [
    "NullDistribution",
    "ap_variance",
    "average_precision",
    "breakpoints",
    "expected_ap",
    "null_distribution",
    "p_value",
    "precision_at_k",
    "r_precision",
    "ranking_table",
    "recall_at_k",
    "sample_grid",
    "sample_null",
    "threshold",
]
