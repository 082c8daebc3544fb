"""Where time and memory go in ``score_scale.py``: wall and CPU seconds and the peak resident memory
(sampled every 5 ms) of each stage of ``score_profiles`` (preparing the screen, the mAP rounds, the
per-query null, the p-values, the two tables, the metadata), and the process's memory after importing
apnull.score and numba. Same arguments as ``score_scale.py``:

    python benchmarks/score_stages.py 100000 auto [--workers 2]
"""
import os, sys, threading, time

import psutil


def main():
    proc = psutil.Process()
    import numpy, pandas  # noqa: F401
    base_py = proc.memory_info().rss / 2**20
    import numba  # noqa: F401
    from apnull.score import profiles as PR
    from apnull.score.results import outputs as _outputs
    base_imp = proc.memory_info().rss / 2**20
    rows, cur, stop = [], {"name": "building the table", "peak": 0}, [False]

    def cpu():
        return sum(proc.cpu_times()[:2])

    def sampler():
        while not stop[0]:
            cur["peak"] = max(cur["peak"], proc.memory_info().rss)
            time.sleep(0.005)

    def stage(name):
        r, c = proc.memory_info().rss, cpu()
        rows.append((cur["name"], time.perf_counter() - cur["t"], c - cur["c"], max(cur["peak"], r) / 2**20, r / 2**20))
        cur.update(name=name, peak=r, t=time.perf_counter(), c=c)

    def wrap(mod, attr, name):
        f = getattr(mod, attr)

        def timed(*a, **k):
            stage(name)
            out = f(*a, **k)
            stage("(between)")
            return out
        setattr(mod, attr, timed)

    for mod, attr, name in [(PR, "prepare_screen", "prepare_screen"), (PR, "resolve", "mAP rounds"),
                            (PR, "query_pvalues", "per-query null"),
                            (PR, "pvalues", "pvalues"), (PR, "group_table", "group_table"), (PR, "add_activity", "activity"),
                            (PR, "query_table", "query_table"), (_outputs, "carry_metadata", "carry_metadata")]:
        wrap(mod, attr, name)
    cur.update(t=time.perf_counter(), c=cpu())
    threading.Thread(target=sampler, daemon=True).start()
    sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
    import score_scale
    score_scale.main()
    stage("end")
    stop[0] = True
    print(f"process memory: {base_py:.0f} MB with Python, numpy and pandas; {base_imp:.0f} MB after importing "
          "apnull.score and numba")
    for name, wall, c, peak, end in rows:
        if wall > 0.05 or name != "(between)":
            print(f"{name:20s} {wall:7.2f} s wall {c:7.2f} s CPU  peak {peak:6.0f} MB  end {end:6.0f} MB")


if __name__ == "__main__":  # dask worker processes re-import this file
    main()
