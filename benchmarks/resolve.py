"""Does a screen's BH decision resolve? A 3,000-perturbation screen (20 plates of 100 controls,
4 replicates of each perturbation on one plate, 20 strongly active perturbations) scored with
B = 999, B = 99,999 and ``permutations="auto"``: hits at FDR 0.05 (q <= 0.05), false hits, time,
and permutations drawn.

    python benchmarks/resolve.py [--configs 999,99999,auto] [--threads 2]
"""

from __future__ import annotations

import argparse
import time

import numpy as np
import pandas as pd

from apnull.score import score_profiles

PLATES, CONTROLS, PERTS, ACTIVE, REPS, FEATURES = 20, 100, 3000, 20, 4, 20


def screen(seed=0, strength=1.5):
    """The table: null perturbations and controls are N(0, I) profiles; each active perturbation
    adds its own direction (norm ``strength`` * sqrt(FEATURES)) to its four replicates."""
    rng = np.random.default_rng(seed)
    names = [f"p{i:04d}" for i in range(PERTS)]
    active = set(names[:: PERTS // ACTIVE][:ACTIVE])
    rows, X = [], []
    for s in range(PLATES):
        for _ in range(CONTROLS):
            rows.append(("DMSO", s))
            X.append(rng.standard_normal(FEATURES))
    for i, name in enumerate(names):
        shift = rng.standard_normal(FEATURES) * strength if name in active else np.zeros(FEATURES)
        for _ in range(REPS):
            rows.append((name, i % PLATES))
            X.append(shift + rng.standard_normal(FEATURES))
    df = pd.DataFrame(rows, columns=["Metadata_pert", "Metadata_plate"])
    feats = pd.DataFrame(np.array(X), columns=[f"f{j}" for j in range(FEATURES)])
    return pd.concat([df, feats], axis=1), active


def main(argv=None):
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--configs", default="999,99999,auto")
    ap.add_argument("--threads", type=int, default=None)
    args = ap.parse_args(argv)
    table, active = screen()
    print(f"screen: {PERTS:,} perturbations x {REPS} replicates, {PLATES} plates x {CONTROLS} controls, "
          f"{ACTIVE} active; BH at 0.05 needs p <= {0.05 * ACTIVE / PERTS:.2e} for {ACTIVE} hits")
    print(f"{'permutations':>12} {'hits':>5} {'false':>5} {'missed':>6} {'time s':>8} {'CPU s':>8} {'draws':>14} "
          f"{'max draws':>10} {'min p':>9}")
    for cfg in args.configs.split(","):
        B = cfg if cfg == "auto" else int(cfg)
        t, c = time.perf_counter(), time.process_time()
        res = score_profiles(table, perturbation="Metadata_pert", stratum="Metadata_plate", permutations=B,
                             seed=0, threads=args.threads)
        dt, dc = time.perf_counter() - t, time.process_time() - c
        g = res.groups
        hits = set(g.loc[g["q_value"] <= 0.05, "Metadata_pert"])
        print(f"{cfg:>12} {len(hits & active):>5} {len(hits - active):>5} {len(active - hits):>6} {dt:>8.1f} {dc:>8.1f} "
              f"{int(g['permutations'].sum()):>14,} {int(g['permutations'].max()):>10,} {g['p_value'].min():>9.2e}",
              flush=True)


if __name__ == "__main__":
    main()
