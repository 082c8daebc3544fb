"""apnull's activity options against copairs 0.5.5: several perturbation columns and positives_differ_by.

A screen of plates with controls and (compound, dose) perturbations, one replicate a plate. Half the
compounds sit at the same well position on every plate (their replicates all share the well: no
positive is left, the perturbation is skipped by apnull and dropped by copairs); the other half
repeat the well on some plates only. apnull: ``perturbation=[compound, dose], stratum=plate,
positives_differ_by=[well]``; copairs: ``pos_sameby=[compound, dose, ref], pos_diffby=[well],
neg_sameby=[plate], neg_diffby=[compound, ref]`` (ref: -1 for treatments, unique for each control,
copairs's way of making controls negatives only). Prints the time of each and the largest difference
in per-query AP, in (m, n) against copairs's (n_pos_pairs, n_total_pairs - n_pos_pairs) and in mAP,
leaving out the queries where copairs's float32 similarities may swap a positive and a negative.

    /work/cpvenv/bin/python benchmarks/copairs_activity.py [--plates 4] [--compounds 40] [--controls 64]
        [--similarity cosine|abs_cosine]
"""

from __future__ import annotations

import argparse
import time

import numpy as np
import pandas as pd


def make_screen(plates=4, compounds=40, doses=(1.0, 10.0), controls=64, features=50, seed=0):
    rng = np.random.default_rng(seed)
    rows = []
    for p in range(plates):
        for c in range(controls):
            rows.append(("DMSO", 0.0, f"plate{p}", f"C{c:03d}"))
        for i in range(compounds):
            for j, d in enumerate(doses):
                fixed = i % 2 == 0 and j == 0  # same well on every plate
                well = f"W{i:03d}_{j}" if fixed or p % 2 == 0 else f"W{i:03d}_{j}_p{p}"
                rows.append((f"cmp{i:03d}", d, f"plate{p}", well))
    meta = pd.DataFrame(rows, columns=["Metadata_compound", "Metadata_dose", "Metadata_plate", "Metadata_well"])
    X = rng.normal(size=(len(meta), features))
    effect = {(c, d): rng.normal(size=features) * rng.choice([0.0, 0.3, 1.0])
              for c, d in meta[["Metadata_compound", "Metadata_dose"]].drop_duplicates().itertuples(index=False)}
    for r, (c, d) in enumerate(zip(meta["Metadata_compound"], meta["Metadata_dose"])):
        if c != "DMSO":
            X[r] += effect[(c, d)]
    return pd.concat([meta, pd.DataFrame(X, columns=[f"f{i}" for i in range(features)])], axis=1)


def run_apnull(table, B=99, similarity="cosine"):
    from apnull.score import score_profiles

    return score_profiles(table, ["Metadata_compound", "Metadata_dose"], "DMSO", "Metadata_plate",
                          permutations=B, positives_differ_by=["Metadata_well"], similarity=similarity)


def run_copairs(table, similarity="cosine"):
    from copairs.map import average_precision, mean_average_precision

    meta = table.filter(regex="^Metadata_").copy()
    ctl = meta["Metadata_compound"] == "DMSO"
    meta["Metadata_ref"] = np.where(ctl, np.arange(len(meta)), -1)
    feats = table.filter(regex="^f").to_numpy()
    ap = average_precision(meta, feats, pos_sameby=["Metadata_compound", "Metadata_dose", "Metadata_ref"],
                           pos_diffby=["Metadata_well"], neg_sameby=["Metadata_plate"],
                           neg_diffby=["Metadata_compound", "Metadata_ref"], progress_bar=False,
                           distance=similarity)
    maps = mean_average_precision(ap, ["Metadata_compound", "Metadata_dose"], null_size=99, threshold=0.05,
                                  seed=0, progress_bar=False)
    return ap, maps


def near_ties(table, queries, tol=1e-6, similarity="cosine"):
    """Rows of ``queries`` (apnull's query table) where a positive and a negative are within ``tol`` in
    float64 cosine: copairs computes similarities in float32 (about 6e-8 apart at 1), so it may order
    them the other way, which changes AP by far more than 1e-9."""
    X = table.filter(regex="^f").to_numpy(float)
    X = X / np.linalg.norm(X, axis=1, keepdims=True)
    comp, dose = table["Metadata_compound"].to_numpy(), table["Metadata_dose"].to_numpy()
    plate, well = table["Metadata_plate"].to_numpy(), table["Metadata_well"].to_numpy()
    out = set()
    for r in queries["row"]:
        s = np.abs(X @ X[r]) if similarity == "abs_cosine" else X @ X[r]
        pos = (comp == comp[r]) & (dose == dose[r]) & (well != well[r])
        neg = (comp == "DMSO") & (plate == plate[r])
        if np.min(np.abs(s[pos][:, None] - s[neg][None, :])) < tol:
            out.add(int(r))
    return out


def compare(table, similarity="cosine"):
    """dict: max |AP diff| and |mAP diff| away from float32 near-ties, (m, n) all equal, counts, seconds."""
    t0 = time.perf_counter()
    res = run_apnull(table, similarity=similarity)
    t1 = time.perf_counter()
    ap, maps = run_copairs(table, similarity)
    t2 = time.perf_counter()
    cp = ap[ap["n_pos_pairs"] > 0]
    q = res.queries.set_index("row")
    assert sorted(q.index) == sorted(cp.index), "different queries scored"
    tied = near_ties(table, res.queries, similarity=similarity)
    clean = [r for r in cp.index if r not in tied]
    d_ap = float(np.max(np.abs(q.loc[clean, "ap"].to_numpy() - cp.loc[clean, "average_precision"].to_numpy())))
    same_mn = bool((q.loc[cp.index, "m"].to_numpy() == cp["n_pos_pairs"].to_numpy()).all()
                   and (q.loc[cp.index, "n"].to_numpy() == (cp["n_total_pairs"] - cp["n_pos_pairs"]).to_numpy()).all())
    keys = ["Metadata_compound", "Metadata_dose"]
    mine = res.groups.set_index(keys)["mAP"]
    theirs = maps.set_index(keys)["mean_average_precision"]
    assert sorted(mine.index) == sorted(theirs.index), "different perturbations scored"
    tied_groups = {tuple(table.loc[r, keys]) for r in tied}
    ok = [g for g in theirs.index if g not in tied_groups]
    d_map = float(np.max(np.abs(mine.loc[ok].to_numpy() - theirs.loc[ok].to_numpy())))
    return dict(d_ap=d_ap, same_mn=same_mn, d_map=d_map, groups=len(theirs), queries=len(cp),
                near_ties=len(tied), seconds_apnull=t1 - t0, seconds_copairs=t2 - t1)


def main(argv=None):
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--plates", type=int, default=4)
    ap.add_argument("--compounds", type=int, default=40)
    ap.add_argument("--controls", type=int, default=64)
    ap.add_argument("--similarity", choices=["cosine", "abs_cosine"], default="cosine")
    args = ap.parse_args(argv)
    table = make_screen(args.plates, args.compounds, controls=args.controls)
    c = compare(table, args.similarity)
    print(f"screen: {len(table)} rows, {args.plates} plates, {args.compounds} compounds x 2 doses, "
          f"{args.controls} controls a plate, {args.similarity}")
    print(f"apnull (99 permutations, positives_differ_by): {c['seconds_apnull']:.2f} s; "
          f"copairs (null_size 99): {c['seconds_copairs']:.2f} s")
    print(f"{c['groups']} perturbations, {c['queries']} queries compared; (m, n) equal: {c['same_mn']}; "
          f"{c['near_ties']} queries with a positive within 1e-6 of a negative left out (float32 in copairs); "
          f"max |AP - copairs AP| {c['d_ap']:.2e}; max |mAP - copairs mAP| {c['d_map']:.2e}")
    assert c["d_ap"] < 1e-9 and c["d_map"] < 1e-9 and c["same_mn"]


if __name__ == "__main__":
    main()
