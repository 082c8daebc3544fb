"""Constants of Rendle's paper ("Evaluation Metrics for Item Recommendation under Sampling", arXiv:1912.02263, 2019): metric keys and labels, the running example, its tables."""

from __future__ import annotations

#: Metric keys understood by every function of this module.
METRICS = ("auc", "precision", "recall", "ap", "ndcg", "ap@k", "ndcg@k")

#: Display names; ``{k}`` is filled in with the cut-off.
METRIC_LABELS = {
    "auc": "AUC",
    "precision": "Precision@{k}",
    "recall": "Recall@{k}",
    "ap": "AP",
    "ndcg": "NDCG",
    "ap@k": "AP@{k}",
    "ndcg@k": "NDCG@{k}",
}

#: Metrics shown by :func:`sampled_metrics_table` by default (the columns of the paper's tables).
TABLE_METRICS = ("auc", "ap", "ndcg", "recall")

# ----------------------------------------------------------------------------------------------
# The paper's running example (Section 3.2 and 4.3): three algorithms, five instances each, one
# relevant item per instance, n = 10,000 items. Ranks exactly as printed in the paper.
# ----------------------------------------------------------------------------------------------

#: True ranks of the relevant item for algorithms A, B and C (five instances each).
PAPER_EXAMPLE: dict[str, tuple[int, ...]] = {
    "A": (100, 100, 100, 100, 100),
    "B": (40, 40, 8437, 9266, 4482),
    "C": (212, 2, 743, 5342, 1548),
}
#: Catalogue size of the running example.
PAPER_N = 10_000
#: Number of sampled irrelevant items in the paper's sampled table.
PAPER_SAMPLES = 99
#: Number of repetitions behind the paper's sampled table (its +- is the SD over these).
PAPER_REPETITIONS = 1000

#: The paper's exact table as printed (3 decimals): {algorithm: {metric: value}}.
PAPER_EXACT_TABLE: dict[str, dict[str, float]] = {
    "A": {"auc": 0.990, "ap": 0.010, "ndcg": 0.150, "recall": 0.000},
    "B": {"auc": 0.555, "ap": 0.010, "ndcg": 0.122, "recall": 0.000},
    "C": {"auc": 0.843, "ap": 0.101, "ndcg": 0.208, "recall": 0.200},
}

#: The paper's sampled table (s = 99, with replacement, k = 10) as printed: the mean and the SD over
#: 1,000 simulated repetitions of the algorithm's mean metric, {algorithm: {metric: (mean, sd)}}.
PAPER_SAMPLED_TABLE: dict[str, dict[str, tuple[float, float]]] = {
    "A": {"auc": (0.990, 0.004), "ap": (0.630, 0.129), "ndcg": (0.724, 0.097), "recall": (1.000, 0.000)},
    "B": {"auc": (0.555, 0.014), "ap": (0.336, 0.073), "ndcg": (0.444, 0.054), "recall": (0.400, 0.000)},
    "C": {"auc": (0.843, 0.014), "ap": (0.325, 0.050), "ndcg": (0.460, 0.039), "recall": (0.567, 0.092)},
}
