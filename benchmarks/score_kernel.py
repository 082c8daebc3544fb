"""The permutation kernel alone, before and after, in one process: per-draw reference vs chunked kernel.

The reference is the frozen per-draw implementation kept for the tests (tests/score/kernel_reference.py).
Both score the same perturbations (k replicates against one stratum of n controls, cosine, B draws);
the null values must be equal bit for bit. Prints the control-table time (once per stratum), the time
per perturbation without draws (pool tables and observed APs) and per permutation, in CPU time of this
thread (robust to other load on the machine) and wall time, interleaving the two kernels.

    python benchmarks/score_kernel.py [--controls 1000] [--replicates 4] [--features 100] [--perturbations 60]
"""

from __future__ import annotations

import argparse
import sys
import time
from pathlib import Path

import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "tests" / "score"))

import kernel_reference as ref  # noqa: E402
from score_helpers import run_perturbation  # noqa: E402

from apnull.score.kernels.controls import control_rows  # noqa: E402
from apnull.score.kernels.pool import Replicates  # noqa: E402


def chunked(reps, controls, kind, B, keys, draws):
    """The library's path for a single-stratum pool (the batch kernel a run calls)."""
    return run_perturbation(reps, controls, kind, B, keys)


def _unit(X):
    return X / np.linalg.norm(X, axis=1, keepdims=True)


def timed(fn):
    t0, c0 = time.perf_counter(), time.thread_time()
    out = fn()
    return out, time.thread_time() - c0, time.perf_counter() - t0


def main(argv=None):
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--controls", type=int, default=1000)
    ap.add_argument("--replicates", type=int, default=4)
    ap.add_argument("--features", type=int, default=100)
    ap.add_argument("--perturbations", type=int, default=60)
    ap.add_argument("--permutations", type=int, default=999)
    ap.add_argument("--rounds", type=int, default=3)
    args = ap.parse_args(argv)
    n, k, d, T, B = args.controls, args.replicates, args.features, args.perturbations, args.permutations
    rng = np.random.default_rng(0)
    Xc = _unit(rng.normal(size=(n, d)))
    reps = [Replicates(_unit(rng.normal(size=(k, d)) + rng.normal(size=d) * 0.15), np.zeros(k, dtype=np.int64),
                       np.zeros(1, dtype=np.int64)) for _ in range(T)]
    none = np.empty((0, k), dtype=np.int64)
    print(f"{T} perturbations x {k} replicates, one stratum of {n} controls, {d} features, cosine, {B} draws")
    comp = control_rows([Xc[:10]], 0)  # compile / load both kernels once
    ref.sorted_control_rows(Xc[:10], 0)
    ref.perturbation_scores(reps[0], ref.reference_controls(comp, 0), 0, 9, np.array([1], dtype=np.uint64), none)
    chunked(reps[0], comp, 0, 9, np.array([1], dtype=np.uint64), none)
    _, c_old, _ = timed(lambda: ref.sorted_control_rows(Xc, 0))
    _, c_new, _ = timed(lambda: control_rows([Xc], 0))
    comp = control_rows([Xc], 0)
    controls = {"before": ref.reference_controls(comp, 0), "after": comp}
    print(f"control tables: before {c_old * 1e3:.0f} ms (sorted rows and ranks), after {c_new * 1e3:.0f} ms "
          "(sorted rows and pair records) CPU")
    best = {}
    for _ in range(args.rounds):
        for name, f in (("before", ref.perturbation_scores), ("after", chunked)):
            for b in (0, B):
                res, cpu, wall = timed(lambda: [f(r, controls[name], 0, b, np.array([t + 1], dtype=np.uint64), none)
                                                for t, r in enumerate(reps)])
                key = (name, b)
                if key not in best or cpu < best[key][0]:
                    best[key] = (cpu, wall, res)
    for a, b in zip(best[("before", B)][2], best[("after", B)][2]):
        assert all(np.array_equal(x, y, equal_nan=True) for x, y in zip(a, b)), "kernels differ"
    for name in ("before", "after"):
        c0, w0, _ = best[(name, 0)]
        c1, w1, _ = best[(name, B)]
        print(f"{name:6s}: {c0 / T * 1e3:.3f} ms a perturbation without draws; "
              f"{(c1 - c0) / (T * B) * 1e6:.3f} us a draw; {c1 / (T * B) * 1e6:.3f} us a permutation in all "
              f"(CPU; wall {w1 / (T * B) * 1e6:.3f} us)")
    ratio = best[("before", B)][0] / best[("after", B)][0]
    print(f"same null values bit for bit: True; speed-up {ratio:.1f}x (CPU)")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
