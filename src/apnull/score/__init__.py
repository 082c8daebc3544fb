"""Score your own screen: per-query AP p-values, a calibrated mAP p-value per perturbation, FDR.

- :func:`score_profiles` — a profile table (``Metadata_*`` columns + numeric features) to per-query
  AP p-values (exact law) and per-perturbation mAP p-values by label permutation within strata.
- :func:`score_consistency` — do perturbations sharing an annotation look alike? Label mAP and a
  p-value by permuting label sets among the aggregated profiles.
- :func:`score_compare` — two pipelines (feature tables) of the same wells: per-perturbation mAP
  differences, and whether one retrieves replicates better overall (sign flips of whole plates).
- :func:`score_rankings` — a long ranking table (query, item, score, relevant) to per-query p-values.
- :func:`tie_aware_ap`, :func:`benjamini_hochberg`, :func:`read_table`, :func:`digits_screen`, :func:`digits_example`,
  :func:`digits_pipeline_pair`.
- :func:`check_outputs`, :func:`write_table`, :func:`write_tables`: result files that never replace the
  input, written atomically (all the outputs of a run replaced together, or none).

The package reads as the stages of a run: ``table`` (reading and preparing a table), ``kernels``
(compiled code), ``nulls`` (each null one unit: what is observed and how one null value is drawn),
``engine`` (rounds of draws to each decision, threads or dask) and ``results`` (tables and files),
with the public modules (``profiles``, ``consistency``, ``rankings``, ``plan``) on top.
Imports run down these stages in the order ``kernels`` (imports none), ``table`` (with the helpers
the stages above share), ``engine``, ``nulls``, ``results``, then the public modules.

The permutation p-value is exact under exchangeability of a perturbation's replicates and the
controls within each stratum; "independent" and "copairs" nulls are kept for comparison only.
"""

from .compare import UNMATCHED, CompareResult, score_compare, summary_line
from .consistency import AGGREGATES, ConsistencyResult, score_consistency
from .example import digits_example, digits_pipeline_pair, digits_screen
from .fdr import benjamini_hochberg, hierarchical_bh
from .options import RunOptions
from .plan import ScreenPlan, screen_plan
from .profiles import MAX_PERMUTATIONS, NULLS, ScoreResult, score_profiles
from .rankings import RANKING_COLUMNS, score_rankings
from .results.outputs import p_text
from .results.summary import activity_line, consistency_line, retrieved_line, to_copairs_names
from .results.write import atomic_write, check_outputs, write_table, write_tables
from .table.io import MAX_FILE_BYTES, read_table
from .table.missing import NAN_MODES, MissingValuesError
from .table.normalize import NORMALIZE
from .table.screen import NEGATIVES, SCORE_SIMILARITIES, SIMILARITIES
from .ties import tie_aware_ap, tie_aware_precision_at_r

__all__ = ["score_profiles", "score_consistency", "ConsistencyResult", "score_rankings", "ScoreResult", "read_table",
           "score_compare", "CompareResult", "summary_line", "UNMATCHED", "digits_pipeline_pair",
           "tie_aware_ap", "tie_aware_precision_at_r", "benjamini_hochberg", "hierarchical_bh", "digits_screen",
           "digits_example",
           "MAX_FILE_BYTES", "MAX_PERMUTATIONS", "SIMILARITIES", "SCORE_SIMILARITIES", "NEGATIVES", "NULLS",
           "NAN_MODES", "NORMALIZE", "MissingValuesError", "AGGREGATES", "RANKING_COLUMNS", "RunOptions", "check_outputs", "write_table", "write_tables",
           "atomic_write", "p_text", "screen_plan", "ScreenPlan",
           "activity_line", "consistency_line", "retrieved_line", "to_copairs_names"]
