"""Result tables and writing them: the groups and queries tables, activity, names, atomic files.

- :mod:`.tables`: the per-perturbation and per-query tables from a run's arrays;
- :mod:`.summary`: ``significant``, ``mAP_normalized``, the active share, copairs's names;
- :mod:`.outputs`: output names that never collide, metadata carried, p-values as text;
- :mod:`.write`: result files that never replace an input, written atomically.
"""
