"""The nulls of the scoring wing, each one unit: what is observed, and how one null value is drawn.

- :mod:`.permutation`: a perturbation's mAP under label permutation within strata (the pair rule a
  mask on the same draws; every assignment with ``permutations="all"``);
- :mod:`.conditional`: a query's AP under the conditional null (the query kept, each positive's
  label given to a member of its own stratum's pool), beside the exact law of the other queries;
- :mod:`.labelsets`: a label's mAP under permutation of the perturbations' label sets (consistency);
- :mod:`.laws`: the exact null law of each query's AP;
- :mod:`.registry`: the mAP nulls of ``score_profiles`` in one table: "permutation" (the engine's) and
  the two approximate ones kept for comparison, :mod:`.independent` and :mod:`.copairs`, each a
  calculator over the per-query laws;
- :mod:`.compare`, :mod:`.crossed`: the pipeline comparison's nulls.

Each drawn null supplies a :class:`..engine.sequential.Null` (its work, state and batch function); the engine
(:func:`..engine.sequential.resolve`) does the rest.
"""
