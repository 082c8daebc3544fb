"""Sampled ranking metrics (Rendle's "Evaluation Metrics for Item Recommendation under Sampling"): what
a metric on s sampled items measures.

Setting
-------
A recommender ranks ``n`` items for one instance (user, query, ...). Exactly one item is relevant and
it lands at the *true rank* ``r`` (1 = top). A *sampled* evaluation does not rank all ``n`` items: it
draws ``s`` of the ``n - 1`` irrelevant items at random, ranks the relevant item among those ``s + 1``
items, and applies the metric to that *sampled rank* ``R'`` as if the catalogue had ``s + 1`` items.

Each sampled irrelevant item outranks the relevant one with probability ``p = (r - 1) / (n - 1)``
(``r - 1`` of the ``n - 1`` irrelevant items sit above it), so

* with replacement:    ``R' = 1 + Binomial(s, p)``;
* without replacement: ``R' = 1 + Hypergeometric(population n - 1, successes r - 1, draws s)``,
  which needs ``s <= n - 1``.

This module gives the metrics of one rank, the exact law of ``R'``, the exact mean and standard
deviation of every sampled metric (closed forms where they exist, otherwise a sum over the law), the
same for an algorithm evaluated on many instances, a Monte Carlo cross-check, the paper's running
example and a table builder for the dashboard and the command line.

Notation: the paper calls the number of sampled items ``m``; here it is ``s`` because ``m`` already
means "number of relevant items" elsewhere in apnull.

Metrics of a single relevant item at rank ``r`` among ``n`` items (the paper's eqs 9-15):

==============  ==============================  ==========================================
key             value                           note
==============  ==============================  ==========================================
``auc``         ``(n - r) / (n - 1)``           linear in ``r``; needs ``n >= 2``
``precision``   ``[r <= k] / k``                Precision@k
``recall``      ``[r <= k]``                    Recall@k (= hit rate@k)
``ap``          ``1 / r``                       unbounded AP (= reciprocal rank)
``ndcg``        ``1 / log2(r + 1)``             unbounded NDCG
``ap@k``        ``[r <= k] / r``                truncated AP@k
``ndcg@k``      ``[r <= k] / log2(r + 1)``      truncated NDCG@k
==============  ==============================  ==========================================
"""

from .algorithms import (algorithm_exact_metric, algorithm_order, algorithm_sampled_metric, expected_metric_curve,
                         metric_label, order_changes, sampled_metrics_table, simulate_sampled_metric)
from .paper import (METRIC_LABELS, METRICS, PAPER_EXACT_TABLE, PAPER_EXAMPLE, PAPER_N, PAPER_REPETITIONS,
                    PAPER_SAMPLED_TABLE, PAPER_SAMPLES, TABLE_METRICS)
from .ranks import expected_sampled_metric, metric_at_rank, sampled_rank_pmf

__all__ = [
    "METRICS",
    "METRIC_LABELS",
    "TABLE_METRICS",
    "PAPER_EXAMPLE",
    "PAPER_N",
    "PAPER_SAMPLES",
    "PAPER_REPETITIONS",
    "PAPER_EXACT_TABLE",
    "PAPER_SAMPLED_TABLE",
    "metric_at_rank",
    "metric_label",
    "sampled_rank_pmf",
    "expected_sampled_metric",
    "algorithm_exact_metric",
    "algorithm_sampled_metric",
    "simulate_sampled_metric",
    "expected_metric_curve",
    "algorithm_order",
    "order_changes",
    "sampled_metrics_table",
]
