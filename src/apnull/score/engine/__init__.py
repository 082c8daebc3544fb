"""Running nulls to their decisions: rounds of draws, stopping, p-values, threads or dask.

- :mod:`.sequential`: the one engine (:func:`~.sequential.resolve`): fixed B as one round, adaptive
  rounds with Besag-Clifford stopping and MMCTest refinement of the BH decisions, p-values and
  bounds, progress, a time budget;
- :mod:`.executor`: one interface for where a round runs (threads of this process, or dask workers
  with the work's shards sent once); :mod:`.shards`: the shards (whole components of strata, or a
  component too large for one cut by its perturbations, each shard with its own strata only);
- :mod:`.connect`: the dask client, within a hard deadline; :mod:`.memory`: freed memory handed back
  between the stages of a large run.
"""
