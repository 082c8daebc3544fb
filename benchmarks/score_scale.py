"""Scale of apnull.score: a random true-null screen of P perturbations x 4 replicates on plates of 40
controls (250 perturbations a plate), B permutations; prints time, peak RSS and the false-positive rate.

    python benchmarks/score_scale.py 100000 99
"""
import resource, sys, time
import numpy as np, pandas as pd
from apnull.score import score_profiles

P = int(sys.argv[1]); B = int(sys.argv[2]); plates = max(1, P // 250)
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
res = score_profiles(df, perturbation="Metadata_pert", control="DMSO", stratum="Metadata_plate", permutations=B, seed=0)
dt = time.perf_counter() - t
mb1 = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024
print(f"P={P} rows={len(df):,} plates={plates} B={B}: {dt:.1f} s, peak RSS {mb1:.0f} MB (after building the table {mb0:.0f} MB); "
      f"groups {len(res.groups):,}, queries {len(res.queries):,}; FPR@0.05 {np.mean(res.groups['p_value'] <= 0.05):.3f}")
