"""Scale of apnull.score: a random true-null screen of P perturbations x 4 replicates on plates of 40
controls (250 perturbations a plate), B permutations (or "auto"); prints time, peak RSS, the input
table's size and the false-positive rate. A third argument ``--workers N`` runs on a local dask cluster.

    python benchmarks/score_scale.py 100000 99
    python benchmarks/score_scale.py 100000 auto [--workers 2]
"""
import os, pickle, resource, sys, time
import numpy as np, pandas as pd
from apnull.score import score_profiles



def status_mb(field):
    """``VmRSS`` (resident now) or ``VmHWM`` (peak since the last reset) in MB (Linux), else ru_maxrss."""
    try:
        with open("/proc/self/status") as f:
            return next(int(line.split()[1]) for line in f if line.startswith(field + ":")) / 1024
    except (OSError, StopIteration):
        return resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024


def cpu_seconds():
    """(user + system CPU seconds of this process, of its finished child processes: dask workers)."""
    me, kids = resource.getrusage(resource.RUSAGE_SELF), resource.getrusage(resource.RUSAGE_CHILDREN)
    return me.ru_utime + me.ru_stime, kids.ru_utime + kids.ru_stime


def reset_peak():
    """Start VmHWM again from the resident memory now (Linux ``clear_refs``; elsewhere nothing)."""
    try:
        with open("/proc/self/clear_refs", "w") as f:
            f.write("5")
    except OSError:
        pass


def table(P, rng):
    """The screen: P perturbations x 4 replicates on plates of 40 controls (250 perturbations a plate)."""
    plates = max(1, P // 250)

    feat = 20
    pert = np.repeat([f"p{i:06d}" for i in range(P)], 4)
    plate_of = np.repeat(np.arange(P) % plates, 4)
    ctrl_plate = np.repeat(np.arange(plates), 40)
    labels = np.concatenate([pert, np.array(["DMSO"] * ctrl_plate.size)])
    plate = np.concatenate([plate_of, ctrl_plate])
    X = rng.standard_normal((labels.size, feat)).astype(np.float64)
    df = pd.DataFrame(X, columns=[f"f{i}" for i in range(feat)])
    df.insert(0, "Metadata_plate", plate); df.insert(0, "Metadata_pert", labels)
    return df, plates


def main():
    P = int(sys.argv[1]); B = sys.argv[2] if sys.argv[2] == "auto" else int(sys.argv[2])
    workers = int(sys.argv[sys.argv.index("--workers") + 1]) if "--workers" in sys.argv else None
    if "--warm" in sys.argv:
        score_profiles(table(500, np.random.default_rng(1))[0], perturbation="Metadata_pert", control="DMSO",
                       stratum="Metadata_plate", permutations=B, seed=0)
    df, plates = table(P, np.random.default_rng(0))
    reset_peak()
    mb0 = status_mb("VmRSS")
    cpu0 = cpu_seconds()
    t = time.perf_counter()
    res = score_profiles(df, perturbation="Metadata_pert", control="DMSO", stratum="Metadata_plate", permutations=B, seed=0,
                         workers=workers)
    dt = time.perf_counter() - t
    cpu = [b - a for a, b in zip(cpu0, cpu_seconds())]
    mb1 = status_mb("VmHWM")
    mbw = resource.getrusage(resource.RUSAGE_CHILDREN).ru_maxrss / 1024  # largest finished child (dask worker)
    table_mb = df.memory_usage(deep=True).sum() / 2**20
    g = res.groups
    print(f"P={P} rows={len(df):,} plates={plates} B={B} workers={workers}{' warm' if '--warm' in sys.argv else ''}: "
          f"{dt:.1f} s ({cpu[0]:.1f} s CPU in this process, {cpu[1]:.1f} s in worker processes; load average "
          f"{os.getloadavg()[0]:.1f}), peak RSS {mb1:.0f} MB, {mb0:.0f} MB before scoring: added {mb1 - mb0:.0f} MB = "
          f"{(mb1 - mb0) / table_mb:.1f}x the table ({table_mb:.0f} MB); largest worker {mbw:.0f} MB; groups {len(g):,}, queries "
          f"{len(res.queries):,}; FPR@0.05 {np.mean(g['p_value'] <= 0.05):.3f}; BH hits at 0.05 {int((g['q_value'] <= 0.05).sum())}; "
          f"permutations total {int(g['permutations'].sum()):,}, max {int(g['permutations'].max()):,}")
    if "--save" in sys.argv:
        with open(sys.argv[sys.argv.index("--save") + 1], "wb") as f:
            pickle.dump({"groups": res.groups, "queries": res.queries}, f)


if __name__ == "__main__":  # dask worker processes re-import this file
    main()
