"""Reading and preparing a table: the one path every workflow reads its profiles through.

- :mod:`.io`: CSV or Parquet, label columns as text exactly as written;
- :mod:`.columns`: which columns are features, and why every other column is left out;
- :mod:`.missing`: missing feature values (stop, or leave out features or rows);
- :mod:`.matrix`, :mod:`.scale`: the feature matrix held once, scaled at any magnitude;
- :mod:`.keys`: several perturbation columns as one key;
- :mod:`.screen`: a profile table to a :class:`~.screen.Screen` (controls, strata, perturbations);
- :mod:`.perts`: the perturbations as arrays; :mod:`.positives`: the pair rule's codes;
- :mod:`.profiles`: aggregated, labelled profiles for consistency;
- :mod:`.rows`: the prepared rows read again from the table after a run.
"""
