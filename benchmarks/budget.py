"""Does ``--budget S`` hold? Wall time of ``apnull score``, ``consistency`` and ``compare`` against S.

Each command runs in a fresh process, as a user runs it, with ``--permutations auto --budget S`` on
synthetic screens in both layouts (block: a perturbation's replicates on one plate; crossed: each
replicate on its own plate, beside that plate's controls). The screens are the issue's:

- score: 40 perturbations x 20 replicates, 200 controls a plate (block: one plate; crossed: 20
  plates), 50 features; a third strong, a third weak (near the BH line, where adaptive rounds run
  longest), a third null; strong replicates put their far tails beyond the grid law (the per-query
  tail counting of every strong query);
- consistency: 20 near-identical perturbations sharing a label among 200 others (labels in pairs),
  4 replicates each (block: 10 plates; crossed: 4 plates);
- compare: the two pipelines of the same wells, B = A plus noise (block: 12 plates of 5
  perturbations x 8 replicates and 100 controls; crossed: 8 plates each holding one replicate of
  60 perturbations and 100 controls).

Each command's process times its import of apnull (with Python's start: about 2 to 4 s on a quiet
machine) apart from its run, which includes reading the CSV and loading the compiled kernels from
numba's cache (every command runs once before timing, so compilation is not measured). The contract
is run <= S + 3 s on a quiet machine. CPU is the process's user + system seconds, which a loaded
machine stretches less than the wall time; the load average is printed.

    python benchmarks/budget.py [--budgets 2,10] [--only score,consistency,compare] [--layouts block,crossed]
"""
from __future__ import annotations

import argparse
import os
import resource
import subprocess
import sys
import tempfile
import time

import numpy as np
import pandas as pd


def screen(layout: str, P: int, k: int, plates: int, controls: int, F: int = 50, seed: int = 0,
           effects=(3.0, 0.35, 0.0)) -> pd.DataFrame:
    """A profile table: ``P`` perturbations x ``k`` replicates and ``controls`` controls a plate, with a
    plate effect. Block: perturbation t's replicates all on plate t % plates. Crossed: replicate i on
    plate i (``plates`` = k). Perturbations cycle through ``effects`` (the size of their shared shift,
    against unit noise)."""
    rng = np.random.default_rng(seed)
    offsets = rng.normal(scale=0.5, size=(plates, F))
    rows, perts, plate_of = [], [], []
    for p in range(plates):
        rows.append(offsets[p] + rng.normal(size=(controls, F)))
        perts += ["DMSO"] * controls
        plate_of += [p] * controls
    for t in range(P):
        shift = rng.normal(size=F) * effects[t % len(effects)]
        where = [t % plates] * k if layout == "block" else list(range(k))
        for p in where:
            rows.append((offsets[p] + shift + rng.normal(size=F))[None, :])
            perts.append(f"cpd_{t:03d}")
            plate_of.append(p)
    X = np.concatenate(rows)
    out = pd.DataFrame(X, columns=[f"f{i:02d}" for i in range(F)])
    out.insert(0, "Metadata_pert", perts)
    out.insert(0, "Metadata_well", [f"w{i:05d}" for i in range(len(out))])
    out.insert(0, "Metadata_plate", [f"plate_{p:02d}" for p in plate_of])
    return out


def consistency_screen(layout: str, seed: int = 0) -> pd.DataFrame:
    """20 near-identical perturbations labelled "target" among 200 others labelled in pairs, 4
    replicates each, 16 controls a plate."""
    rng = np.random.default_rng(seed)
    plates = 10 if layout == "block" else 4
    F, k = 50, 4
    offsets = rng.normal(scale=0.5, size=(plates, F))
    centre = rng.normal(size=F) * 3
    rows, perts, labels, plate_of = [], [], [], []
    for p in range(plates):
        rows.append(offsets[p] + rng.normal(size=(16, F)))
        perts += ["DMSO"] * 16
        labels += [""] * 16
        plate_of += [p] * 16
    for t in range(220):
        shift = centre + rng.normal(scale=0.05, size=F) if t < 20 else rng.normal(size=F)
        label = "target" if t < 20 else f"pair_{(t - 20) // 2:03d}"
        where = [t % plates] * k if layout == "block" else list(range(k))
        for p in where:
            rows.append((offsets[p] + shift + rng.normal(scale=0.3, size=F))[None, :])
            perts.append(f"cpd_{t:03d}")
            labels.append(label)
            plate_of.append(p)
    out = pd.DataFrame(np.concatenate(rows), columns=[f"f{i:02d}" for i in range(F)])
    out.insert(0, "Metadata_target", labels)
    out.insert(0, "Metadata_pert", perts)
    out.insert(0, "Metadata_plate", [f"plate_{p:02d}" for p in plate_of])
    return out


def files(folder: str, layout: str) -> dict:
    """The screens of ``layout`` written as CSV files: {"score": path, "consistency": path, "a": path, "b": path}."""
    out = {}
    if layout == "block":
        s = screen("block", 40, 20, 1, 200)
        a = screen("block", 60, 8, 12, 100, seed=1)
    else:
        s = screen("crossed", 40, 20, 20, 200)
        a = screen("crossed", 60, 8, 8, 100, seed=1)
    b = a.copy()
    feats = [c for c in a.columns if c.startswith("f")]
    b[feats] = a[feats].to_numpy() + np.random.default_rng(2).normal(scale=0.6, size=(len(a), len(feats)))
    for name, table in (("score", s), ("consistency", consistency_screen(layout)), ("a", a), ("b", b)):
        out[name] = os.path.join(folder, f"{layout}_{name}.csv")
        table.to_csv(out[name], index=False)
    return out


def commands(paths: dict, budget: float) -> dict:
    """The command line of each subcommand on these files."""
    run = ["--permutations", "auto", "--budget", f"{budget:g}", "--json"]
    return {
        "score": ["score", paths["score"], "--perturbation", "Metadata_pert", "--control", "DMSO",
                  "--stratum", "Metadata_plate"] + run,
        "consistency": ["consistency", paths["consistency"], "--perturbation", "Metadata_pert",
                        "--annotation", "Metadata_target", "--control", "DMSO"] + run,
        "compare": ["compare", paths["a"], paths["b"], "--key", "Metadata_plate", "--key", "Metadata_well",
                    "--perturbation", "Metadata_pert", "--control", "DMSO", "--stratum", "Metadata_plate"] + run,
    }


#: Runs the command in the measured process: the import (with Python's start) and the run timed apart.
WRAPPER = """
import sys, time
t0 = time.perf_counter()
import apnull.cli, apnull.score, apnull.score.compare, apnull.score.consistency
t1 = time.perf_counter()
status = apnull.cli.main(sys.argv[1:])
t2 = time.perf_counter()
sys.stderr.write(f"\\n__timing__ {t1 - t0:.3f} {t2 - t1:.3f}\\n")
sys.exit(status)
"""


def timed(args: list) -> tuple:
    """(wall seconds, import seconds (with Python's start), run seconds, CPU seconds, exit status) of the
    command ``apnull args`` in a fresh process."""
    before = resource.getrusage(resource.RUSAGE_CHILDREN)
    t0 = time.perf_counter()
    done = subprocess.run([sys.executable, "-c", WRAPPER, *args], capture_output=True, text=True)
    wall = time.perf_counter() - t0
    after = resource.getrusage(resource.RUSAGE_CHILDREN)
    cpu = after.ru_utime - before.ru_utime + after.ru_stime - before.ru_stime
    line = [x for x in done.stderr.splitlines() if x.startswith("__timing__")]
    run = float(line[-1].split()[2]) if line else float("nan")
    return wall, wall - run, run, cpu, done.returncode


def main(argv=None) -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--budgets", default="2,10")
    ap.add_argument("--only", default="score,consistency,compare")
    ap.add_argument("--layouts", default="block,crossed")
    ap.add_argument("--warm-only", action="store_true", help="only fill numba's cache")
    args = ap.parse_args(argv)
    budgets = [float(b) for b in args.budgets.split(",")]
    only = args.only.split(",")
    with tempfile.TemporaryDirectory() as folder:
        paths = {layout: files(folder, layout) for layout in args.layouts.split(",")}
        for layout, p in paths.items():  # warm numba's cache (compiling is not what is measured)
            for name, cmd in commands(p, 1.0).items():
                if name in only:
                    timed(cmd)
        if args.warm_only:
            return
        print(f"load average {os.getloadavg()[0]:.1f} on {os.cpu_count()} cores")
        print(f"{'command':<12} {'layout':<8} {'budget':>6} {'wall':>7} {'import':>7} {'run':>7} {'limit':>6}  ok  "
              f"{'CPU':>6}  status")
        for budget in budgets:
            for layout, p in paths.items():
                for name, cmd in commands(p, budget).items():
                    if name not in only:
                        continue
                    wall, imp, run, cpu, status = timed(cmd)
                    print(f"{name:<12} {layout:<8} {budget:>5g}s {wall:>6.1f}s {imp:>6.1f}s {run:>6.1f}s "
                          f"{budget + 3:>5g}s  {'yes' if run <= budget + 3 else 'NO ':<4}{cpu:>5.1f}s  {status}  "
                          f"(load {os.getloadavg()[0]:.1f})", flush=True)


if __name__ == "__main__":
    main()
