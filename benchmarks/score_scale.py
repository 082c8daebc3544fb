"""Scale of apnull.score: a random true-null screen of P perturbations x 4 replicates on plates of 40
controls (250 perturbations a plate), B permutations (or "auto"); prints time, peak RSS, the input
table's size and the false-positive rate. A third argument ``--workers N`` runs on a local dask cluster.

    python benchmarks/score_scale.py 100000 99
    python benchmarks/score_scale.py 100000 auto [--workers 2]
"""
import pickle, resource, sys, time
import numpy as np, pandas as pd
from apnull.score import score_profiles



def main():
    P = int(sys.argv[1]); B = sys.argv[2] if sys.argv[2] == "auto" else int(sys.argv[2]); plates = max(1, P // 250)
    workers = int(sys.argv[sys.argv.index("--workers") + 1]) if "--workers" in sys.argv else None
    rng = np.random.default_rng(0)

    feat = 20
    pert = np.repeat([f"p{i:06d}" for i in range(P)], 4)
    plate_of = np.repeat(np.arange(P) % plates, 4)
    ctrl_plate = np.repeat(np.arange(plates), 40)
    labels = np.concatenate([pert, np.array(["DMSO"] * ctrl_plate.size)])
    plate = np.concatenate([plate_of, ctrl_plate])
    X = rng.standard_normal((labels.size, feat)).astype(np.float64)
    df = pd.DataFrame(X, columns=[f"f{i}" for i in range(feat)])
    df.insert(0, "Metadata_plate", plate); df.insert(0, "Metadata_pert", labels)
    mb0 = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024
    t = time.perf_counter()
    res = score_profiles(df, perturbation="Metadata_pert", control="DMSO", stratum="Metadata_plate", permutations=B, seed=0,
                         workers=workers)
    dt = time.perf_counter() - t
    mb1 = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024
    mbw = resource.getrusage(resource.RUSAGE_CHILDREN).ru_maxrss / 1024  # largest finished child (dask worker)
    table_mb = df.memory_usage(deep=True).sum() / 2**20
    g = res.groups
    print(f"P={P} rows={len(df):,} plates={plates} B={B} workers={workers}: {dt:.1f} s, peak RSS {mb1:.0f} MB (after "
          f"building the table {mb0:.0f} MB; the table itself {table_mb:.0f} MB; largest worker {mbw:.0f} MB); groups {len(g):,}, queries "
          f"{len(res.queries):,}; FPR@0.05 {np.mean(g['p_value'] <= 0.05):.3f}; BH hits at 0.05 {int((g['q_value'] <= 0.05).sum())}; "
          f"permutations total {int(g['permutations'].sum()):,}, max {int(g['permutations'].max()):,}")
    if "--save" in sys.argv:
        with open(sys.argv[sys.argv.index("--save") + 1], "wb") as f:
            pickle.dump({"groups": res.groups, "queries": res.queries}, f)


if __name__ == "__main__":  # dask worker processes re-import this file
    main()
