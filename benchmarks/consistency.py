"""Phenotypic consistency: apnull's score_consistency against copairs 0.5.5's multilabel pipeline.

Screens of real profiles (scikit-learn's digits): P perturbations of 3 replicates each; each carries
one of T target labels and, with probability 0.3, a second one ("T03|T17"). A replicate is
``(1 - mix) * an image of the perturbation's own digit + mix * the mean prototype image of its
targets`` (each target has one prototype image), so ``mix`` is the strength of what the labels say.

- ``speed``: one screen (P = 300, T = 40, mix 0.3), time and peak resident memory of apnull
  (``score_consistency``, median profiles, B permutations, in process) and of copairs's multilabel
  ``average_precision`` + ``mean_average_precision`` (null_size B) on the same median profiles, in this
  process; the label mAPs must agree to 1e-9.
- ``calibration``: true-null screens (mix 0, labels assigned at random to real, clustered profiles):
  the share of labels with p <= 0.05 and <= 0.01, with the 99.9% binomial band around alpha, for
  apnull's permutation p-value and copairs's p-value.
- ``power``: screens with mix > 0: share of labels with BH q <= 0.05 (copairs: its
  corrected_p_value), with a 95% Wilson interval.
- ``auto`` (``--auto``, apnull only): adaptive permutations (the default) against a fixed B on the
  same screens: time, draws per label, FPR at 0.05 on true-null screens, labels called at BH q <= 0.05
  and how many calls differ between the two.

    /work/cpvenv/bin/python benchmarks/consistency.py [--screens 10] [--permutations 999] [--auto]
"""

from __future__ import annotations

import argparse
import tempfile
import threading
import time

import numpy as np
import pandas as pd
from scipy.stats import binom

from apnull.score import score_consistency
from apnull.score.example import load_digits_arrays

KW = dict(perturbation="Metadata_perturbation", annotation="Metadata_target", label_sep="|")


def screen(seed, P=300, T=40, mix=0.3, reps=3, second=0.3):
    """A consistency screen of P perturbations (3 replicates) with multilabel targets; see the module."""
    X, y = load_digits_arrays()
    rng = np.random.default_rng(seed)
    protos = X[rng.choice(len(X), T, replace=False)]
    rows, names, cells = [], [], []
    for i in range(P):
        labels = {int(rng.integers(T))}
        if rng.random() < second:
            labels.add(int(rng.integers(T)))
        digit = rng.integers(10)
        imgs = X[rng.choice(np.flatnonzero(y == digit), reps, replace=False)]
        proto = protos[sorted(labels)].mean(axis=0)
        for img in imgs:
            rows.append((1 - mix) * img + mix * proto)
            names.append(f"p{i:03d}")
            cells.append("|".join(f"T{t:02d}" for t in sorted(labels)))
    table = pd.DataFrame(np.array(rows), columns=[f"px_{i:02d}" for i in range(X.shape[1])])
    table.insert(0, "Metadata_perturbation", names)
    table.insert(1, "Metadata_target", cells)
    return table


class PeakRSS:
    """Peak resident memory above the start, sampled every 2 ms from /proc/self/statm."""

    def __enter__(self):
        self.page = 4096
        self.base = self.peak = self._rss()
        self.stop = False
        self.thread = threading.Thread(target=self._watch, daemon=True)
        self.thread.start()
        return self

    def _rss(self):
        with open("/proc/self/statm") as fh:
            return int(fh.read().split()[1]) * self.page

    def _watch(self):
        while not self.stop:
            self.peak = max(self.peak, self._rss())
            time.sleep(0.002)

    def __exit__(self, *exc):
        self.stop = True
        self.thread.join()
        self.peak = max(self.peak, self._rss())
        self.mb = (self.peak - self.base) / 2**20


def copairs_labels(table, B, seed):
    """copairs 0.5.5 on the median profiles: multilabel AP (positives share the label, negatives share
    none), then mean_average_precision by label. Returns its per-label table."""
    from copairs.map import mean_average_precision
    from copairs.map.multilabel import average_precision

    med = table.groupby("Metadata_perturbation", sort=True).median(numeric_only=True)
    target = table.groupby("Metadata_perturbation", sort=True)["Metadata_target"].first()
    meta = pd.DataFrame({"Metadata_perturbation": med.index, "Metadata_target": target.str.split("|").to_numpy()})
    ap = average_precision(meta, med.to_numpy(), pos_sameby=["Metadata_target"], pos_diffby=[], neg_sameby=[],
                           neg_diffby=["Metadata_target"], multilabel_col="Metadata_target", progress_bar=False)
    with tempfile.TemporaryDirectory() as cache:
        maps = mean_average_precision(ap, ["Metadata_target"], null_size=B, threshold=0.05, seed=seed,
                                      progress_bar=False, cache_dir=cache)
    return maps.set_index("Metadata_target")


def speed(B):
    table = screen(0)
    score_consistency(table.head(60), **KW, permutations=9)  # compile outside the timing
    copairs_labels(table.head(60), 9, 0)
    with PeakRSS() as mem_a:
        t = time.perf_counter()
        ours = score_consistency(table, **KW, permutations=B, seed=0, query_pvalues=False)
        t_ours = time.perf_counter() - t
    with PeakRSS() as mem_c:
        t = time.perf_counter()
        theirs = copairs_labels(table, B, 0)
        t_theirs = time.perf_counter() - t
    both = ours.labels.set_index("Metadata_target").join(theirs.add_suffix("_copairs"), how="inner")
    diff = float(np.max(np.abs(both["mAP"] - both["mean_average_precision_copairs"])))
    print(f"screen: {ours.settings['profiles']} perturbations (median of 3 replicates), {len(ours.labels)} labels, "
          f"B = {B}")
    print(f"apnull score_consistency : {t_ours:7.2f} s, peak +{mem_a.mb:6.1f} MB (label p-values; "
          "per-query exact-law p-values off, as copairs computes none)")
    print(f"copairs 0.5.5 multilabel : {t_theirs:7.2f} s, peak +{mem_c.mb:6.1f} MB")
    print(f"labels compared: {len(both)}; max |mAP apnull - mAP copairs| = {diff:.2e}")
    assert len(both) == len(ours.labels) and diff < 1e-9


def band(N, alpha, level=0.999):
    lo, hi = binom.ppf((1 - level) / 2, N, alpha), binom.ppf(1 - (1 - level) / 2, N, alpha)
    return lo / N, hi / N


def wilson(k, N, z=1.959963984540054):
    p = k / N
    c = (p + z * z / (2 * N)) / (1 + z * z / N)
    h = z * np.sqrt(p * (1 - p) / N + z * z / (4 * N * N)) / (1 + z * z / N)
    return c - h, c + h


def calibration_and_power(screens, B, mixes, calibration=True):
    if calibration:
        calibration_rows(screens, B)
    power_rows(screens, B, mixes)


def calibration_rows(screens, B):
    print("\n| screens | method | FPR at 0.05 | FPR at 0.01 | labels |")
    rows = {"apnull": [], "copairs": []}
    for s in range(screens):
        table = screen(100 + s, mix=0.0)
        ours = score_consistency(table, **KW, permutations=B, seed=s, query_pvalues=False).labels
        theirs = copairs_labels(table, B, s)
        rows["apnull"] += list(ours["p_value"])
        rows["copairs"] += list(theirs["p_value"])
    for who, ps in rows.items():
        ps = np.asarray(ps)
        N = ps.size
        lo5, hi5 = band(N, 0.05)
        lo1, hi1 = band(N, 0.01)
        print(f"| true null, mix 0 | {who} | {np.mean(ps <= 0.05):.3f} (band {lo5:.3f}-{hi5:.3f}) | "
              f"{np.mean(ps <= 0.01):.4f} (band {lo1:.4f}-{hi1:.4f}) | {N} |")


def power_rows(screens, B, mixes):
    print("\n| mix | apnull: labels with q <= 0.05 | copairs: corrected p <= 0.05 | labels |")
    for mix in mixes:
        k_a = k_c = N = 0
        for s in range(screens):
            table = screen(200 + s, mix=mix)
            ours = score_consistency(table, **KW, permutations=B, seed=s, query_pvalues=False).labels
            theirs = copairs_labels(table, B, s)
            k_a += int((ours["q_value"] <= 0.05).sum())
            k_c += int((theirs["corrected_p_value"] <= 0.05).sum())
            N += len(ours)
        la, ha = wilson(k_a, N)
        lc, hc = wilson(k_c, N)
        print(f"| {mix} | {k_a / N:.3f} ({la:.3f}-{ha:.3f}) | {k_c / N:.3f} ({lc:.3f}-{hc:.3f}) | {N} |")


def auto_rows(screens, B, mixes):
    """Adaptive against fixed B, apnull only (see the module)."""
    score_consistency(screen(0).head(60), **KW, permutations="auto")  # compile outside the timing
    print(f"\n| mix | method | time per screen (s) | draws per label: median, max | FPR at 0.05 | "
          f"labels with q <= 0.05 | calls differing | labels |")
    for mix in [0.0] + list(mixes):
        stats = {"auto": [0.0, [], [], []], f"B = {B}": [0.0, [], [], []]}
        for s in range(screens):
            table = screen(300 + s, mix=mix)
            for name, perms in (("auto", "auto"), (f"B = {B}", B)):
                t = time.perf_counter()
                lab = score_consistency(table, **KW, permutations=perms, seed=s, query_pvalues=False).labels
                row = stats[name]
                row[0] += time.perf_counter() - t
                lab = lab.sort_values("Metadata_target")
                row[1] += list(lab["permutations"])
                row[2] += list(lab["p_value"])
                row[3] += list(lab["q_value"] <= 0.05)
        calls = {k: np.asarray(v[3]) for k, v in stats.items()}
        differ = int(np.sum(calls["auto"] != calls[f"B = {B}"]))
        for name, (sec, draws, ps, sig) in stats.items():
            ps, draws = np.asarray(ps), np.asarray(draws)
            fpr = f"{np.mean(ps <= 0.05):.3f}" if mix == 0 else "-"
            print(f"| {mix} | {name} | {sec / screens:.2f} | {int(np.median(draws)):,}, {int(draws.max()):,} | {fpr} | "
                  f"{int(np.sum(sig))} | {differ} | {ps.size} |")


def main(argv=None):
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--screens", type=int, default=10, help="screens per calibration / power row")
    ap.add_argument("--permutations", type=int, default=999)
    ap.add_argument("--mixes", default="0.1,0.2", help="signal strengths of the power rows")
    ap.add_argument("--skip-speed", action="store_true")
    ap.add_argument("--skip-calibration", action="store_true")
    ap.add_argument("--auto", action="store_true", help="only the adaptive-against-fixed rows (apnull only)")
    args = ap.parse_args(argv)
    if args.auto:
        auto_rows(args.screens, args.permutations, [float(m) for m in args.mixes.split(",")])
        return
    if not args.skip_speed:
        speed(args.permutations)
    calibration_and_power(args.screens, args.permutations, [float(m) for m in args.mixes.split(",")],
                          calibration=not args.skip_calibration)


if __name__ == "__main__":
    main()
