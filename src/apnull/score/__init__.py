"""Score your own screen: per-query AP p-values, a calibrated mAP p-value per perturbation, FDR.

- :func:`score_profiles` — a profile table (``Metadata_*`` columns + numeric features) to per-query
  AP p-values (exact law) and per-perturbation mAP p-values by label permutation within strata.
- :func:`score_consistency` — do perturbations sharing an annotation look alike? Label mAP and a
  p-value by permuting label sets among the aggregated profiles.
- :func:`score_rankings` — a long ranking table (query, item, score, relevant) to per-query p-values.
- :func:`tie_aware_ap`, :func:`benjamini_hochberg`, :func:`read_table`, :func:`digits_screen`.
- :func:`check_outputs`, :func:`write_table`: result files that never replace the input, written
  atomically.

The permutation p-value is exact under exchangeability of a perturbation's replicates and the
controls within each stratum; "independent" and "copairs" nulls are kept for comparison only.
"""

from ._atomic import atomic_write, check_outputs, write_table
from ._outputs import p_text
from ._prepare import SIMILARITIES
from .consistency import ConsistencyResult, score_consistency
from .example import digits_screen
from .fdr import benjamini_hochberg, hierarchical_bh
from .io import MAX_FILE_BYTES, read_table
from .plan import ScreenPlan, screen_plan
from .profiles import MAX_PERMUTATIONS, NULLS, ScoreResult, score_profiles
from .rankings import score_rankings
from .ties import tie_aware_ap, tie_aware_precision_at_r

__all__ = ["score_profiles", "score_consistency", "ConsistencyResult", "score_rankings", "ScoreResult", "read_table", "tie_aware_ap",
           "tie_aware_precision_at_r", "benjamini_hochberg", "hierarchical_bh", "digits_screen", "MAX_FILE_BYTES",
           "MAX_PERMUTATIONS", "SIMILARITIES", "NULLS",
           "check_outputs", "write_table", "atomic_write", "p_text", "screen_plan", "ScreenPlan"]
