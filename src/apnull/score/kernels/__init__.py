"""Compiled kernels (numba) of the scoring wing; deterministic scalar code, the same bits in any process.

- :mod:`.similarity`: similarities of prepared rows, one at a time or four rows at a time; prefetch;
- :mod:`.sort`: stable argsorts of float64 values;
- :mod:`.ranking`: tie-aware AP and Precision@R, the one tie-block walk (sorted rows or counts);
- :mod:`.controls`: a component's control tables (sorted similarity rows, pair records);
- :mod:`.pool`: a perturbation's pool, one assignment's evaluation (the pair rule a mask), its draw;
- :mod:`.chunks`: the single-stratum mAP null in prefetched chunks;
- :mod:`.draws`: the general and conditional nulls, the batch kernels the nulls call;
- :mod:`.labelsets`: consistency's similarity rows, label mAPs and their label-set null.

The random streams they read are :mod:`apnull.streams`.

Each is compiled by :func:`apnull.compiled.entry` (called from Python) or :func:`apnull.compiled.inner`
(called only by other kernels), or copied into its callers (``inline="always"``).
"""
