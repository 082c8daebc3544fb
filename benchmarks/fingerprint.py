"""A fingerprint of the scoring wing's output tables: one hash per configuration, and one of them all.

Runs the configurations of the benchmarks and the calibration at small sizes with fixed seeds (the
synthetic screen of ``benchmarks/score.py`` with every null; the digit screens of
``benchmarks/calibration.py`` under equal and unequal control counts and the mixed screen; the bundled
example with ``positives_differ_by``, ``negatives="others"``, normalisation and ``permutations="all"``;
the consistency step; a pipeline comparison; a ranking table; score, consistency and compare on a
local dask cluster) and
hashes every table a result holds, column by column: its name, dtype and the bytes of its values (text
as text), so two runs print the same hashes only when every table is the same bit for bit. The
settings, summaries and warnings are hashed too (as sorted JSON; the seconds a warning quotes left out).

Run it before and after a refactor that must not change a result:

    python benchmarks/fingerprint.py            # a line per configuration, then "all <hash>"
    python benchmarks/fingerprint.py --no-dask  # without the local dask cluster (faster)
"""

from __future__ import annotations

import argparse
import dataclasses
import hashlib
import json
import re
import sys

import numpy as np
import pandas as pd

from apnull.score import (digits_example, digits_pipeline_pair, score_compare, score_consistency, score_profiles,
                          score_rankings)
from apnull.score.example import digits_mixed_screen, digits_null_screen


def synthetic(perts=40, reps=4, controls=120, features=24, seed=0, plates=1):
    """``benchmarks/score.py``'s screen, smaller: perturbations shifted from the controls by 0.15 SD;
    with ``plates`` > 1 the rows dealt to plates in turn."""
    rng = np.random.default_rng(seed)
    names = ["DMSO"] * controls + [f"t{i:04d}" for i in range(perts) for _ in range(reps)]
    X = rng.normal(size=(len(names), features))
    X[controls:] += np.repeat(rng.normal(size=(perts, features)) * 0.15, reps, axis=0)
    meta = pd.DataFrame({"Metadata_pert": names, "Metadata_plate": [f"p{i % plates}" for i in range(len(names))]})
    return pd.concat([meta, pd.DataFrame(X, columns=[f"f{i}" for i in range(features)])], axis=1)


#: A duration in words ("1.1 s", "about 11 s"): the run's speed, not its result.
SECONDS = re.compile(r"\d[\d.,]* s\b")


def _update(h, value) -> None:
    """Feed ``value`` (a frame, array, dict, list or scalar) to the hash ``h``, bit for bit."""
    if isinstance(value, pd.DataFrame):
        h.update(repr((list(map(str, value.columns)), [str(t) for t in value.dtypes], value.shape)).encode())
        h.update(repr(list(value.index)).encode())
        for name in value.columns:
            _update(h, value[name])
    elif isinstance(value, pd.Series):
        arr = value.to_numpy()
        if arr.dtype.kind in "biufcmM":
            h.update(np.ascontiguousarray(arr).tobytes())
        else:
            h.update(repr([repr(v) for v in arr.tolist()]).encode())
    elif isinstance(value, np.ndarray):
        _update(h, pd.Series(value.ravel()))
    else:  # the seconds a warning quotes (this machine's speed) left out
        h.update(SECONDS.sub("<seconds>", json.dumps(value, sort_keys=True, default=repr)).encode())


def fingerprint(result) -> str:
    """The hash of every public table and value of a result (a dataclass, a frame or a tuple of them)."""
    h = hashlib.sha256()
    if dataclasses.is_dataclass(result):
        for f in dataclasses.fields(result):
            if not f.name.startswith("_"):
                h.update(f.name.encode())
                _update(h, getattr(result, f.name))
    else:
        _update(h, result)
    return h.hexdigest()[:16]


SCORE = dict(perturbation="Metadata_perturbation", stratum="Metadata_plate")


def configurations(dask: bool):
    """(name, thunk) of every configuration."""
    syn = synthetic()
    syn_plates = synthetic(plates=4, seed=1)
    out = []
    for null in ("permutation", "independent", "copairs"):
        for B in (99, "auto"):
            out.append((f"benchmark {null} B={B}", lambda null=null, B=B: score_profiles(
                syn, perturbation="Metadata_pert", null=null, permutations=B, seed=3)))
    out.append(("benchmark 4 plates, correlation", lambda: score_profiles(
        syn_plates, perturbation="Metadata_pert", stratum="Metadata_plate", similarity="correlation",
        permutations=199, seed=5)))
    for layout in ((20, 20, 20, 20), (18, 19, 21, 22)):
        for digit in (0,):
            table = digits_null_screen(digit, seed=1, controls_per_plate=layout)
            for null in ("permutation", "independent", "copairs"):
                for B in (99, "auto"):
                    out.append((f"calibration null {layout} digit {digit} {null} B={B}",
                                lambda t=table, null=null, B=B: score_profiles(t, null=null, permutations=B, seed=1,
                                                                               **SCORE)))
    mixed = digits_mixed_screen(4, seed=2, mix=0.5)
    out.append(("calibration mixed auto", lambda: score_profiles(mixed, permutations="auto", seed=2, **SCORE)))
    ex = digits_example()
    ex_cols = ex.assign(Metadata_column=[f"c{i % 3}" for i in range(len(ex))])  # some replicates share one
    out.append(("example positives_differ_by", lambda: score_profiles(
        ex_cols, positives_differ_by="Metadata_column", permutations=199, seed=4, **SCORE)))
    out.append(("example negatives=others, normalize", lambda: score_profiles(
        ex, negatives="others", normalize="controls", permutations=99, seed=6, **SCORE)))
    small = ex[ex["Metadata_perturbation"].isin(["DMSO", "digit_3", "null_01", "weak_6"])]
    out.append(("example permutations=all", lambda: score_profiles(small, permutations="all", **SCORE)))
    out.append(("consistency", lambda: score_consistency(
        ex[ex["Metadata_perturbation"] != "DMSO"], "Metadata_perturbation", "Metadata_target", label_sep="|",
        permutations=199, seed=2)))
    out.append(("consistency auto", lambda: score_consistency(
        ex[ex["Metadata_perturbation"] != "DMSO"], "Metadata_perturbation", "Metadata_target", label_sep="|",
        seed=3)))
    a, b = digits_pipeline_pair(seed=1)
    out.append(("compare", lambda: score_compare(a, b, key=["Metadata_plate", "Metadata_well"],
                                                 perturbation="Metadata_perturbation", stratum="Metadata_plate",
                                                 permutations=199, seed=1)))
    rng = np.random.default_rng(8)
    ranking = pd.DataFrame({"query": np.repeat([f"q{i}" for i in range(30)], 40), "item": np.tile(np.arange(40), 30),
                            "score": rng.normal(size=1200).round(1), "relevant": rng.random(1200) < 0.1})
    out.append(("rankings", lambda: score_rankings(ranking, seed=2)))
    if dask:
        out.append(("benchmark permutation B=99 on dask", lambda: score_profiles(
            syn, perturbation="Metadata_pert", permutations=99, seed=3, workers=1)))
        out.append(("consistency on dask", lambda: score_consistency(
            ex[ex["Metadata_perturbation"] != "DMSO"], "Metadata_perturbation", "Metadata_target", label_sep="|",
            permutations=199, seed=2, workers=1)))
        out.append(("compare on dask", lambda: score_compare(a, b, key=["Metadata_plate", "Metadata_well"],
                                                             perturbation="Metadata_perturbation",
                                                             stratum="Metadata_plate", permutations=199, seed=1,
                                                             workers=1)))
    return out


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--no-dask", action="store_true", help="leave out the runs on a local dask cluster")
    args = ap.parse_args(argv)
    total = hashlib.sha256()
    for name, run in configurations(not args.no_dask):
        fp = fingerprint(run())
        total.update(f"{name} {fp}".encode())
        print(f"{fp}  {name}", flush=True)
    print(f"{total.hexdigest()[:16]}  all")
    return 0


if __name__ == "__main__":
    sys.exit(main())
