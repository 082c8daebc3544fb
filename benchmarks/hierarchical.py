"""Dose-response screens: apnull's hierarchical_bh (Simes + Benjamini-Bogomolov) vs copairs's min-p two stages.

Each compound is a family of 6 doses. Three procedures on the same screens, all at 0.05:

- apnull: ``apnull.score.hierarchical_bh`` (family p-value by Simes, BH across compounds, BH inside the
  R selected compounds of F at alpha * R / F);
- copairs 0.5.5: its own ``copairs.map.apply_hierarchical_fdr_correction`` (the function its
  ``mean_average_precision_hierarchical`` calls after the p-values; it takes p-values directly): the
  compound's smallest p-value, BH across compounds, BH inside each selected compound at alpha; a dose is
  a discovery when its ``corrected_p_value < 0.05`` (its ``below_corrected_p``);
- flat BH: BH across all (compound, dose) p-values, a compound selected when one of its doses is.

Simulated screens (F compounds x 6 doses; F = 1,000 and 100): a dose's test statistic is
z = effect + sqrt(rho) * U_c + sqrt(1 - rho) * E_cd, with U_c a compound's own latent noise shared by its
doses (correlation rho across the doses of a compound) and E_cd independent; p = P(N(0, 1) >= z), one-sided
as an mAP p-value. Global null: no effect anywhere (rho = 0 and rho = 0.5). Active screens: 10% of the
compounds active at the three highest doses only, effect theta * (0, 0, 0, 1/3, 2/3, 1) with theta ~
U(2, 6) per compound, rho = 0.5.

Real profiles: true-null dose-response screens from scikit-learn's digits (one digit class: 4 plates of 12
controls, 7 compounds x 6 doses of 3 replicates, all exchangeable with the controls), scored by
``apnull.score.score_profiles(perturbation=[compound, dose])`` with its default adaptive permutations.

Rates over the screens, each with a 95% interval:

- "any discovery" (share of screens with at least one (compound, dose) discovery: under the global null,
  the screen's FDR) and "any false discovery": one yes/no per screen, so the count is binomial and the
  interval is Clopper-Pearson's (exact);
- FDR over compounds (a selected compound without an active dose is false), FDR over all (compound, dose)
  discoveries, the average FDR inside the selected compounds (what Benjamini-Bogomolov control), and the
  power (share of active doses found; of active compounds selected): means over screens of a proportion
  in [0, 1] (the screen's false discovery proportion, or share found), not binomial counts; the interval
  is mean +- 1.96 standard errors over the independent screens.

    python benchmarks/hierarchical.py [--screens 300] [--small-screens 1000] [--digits 500] [--seed 0]
"""

from __future__ import annotations

import argparse
import logging
import sys
import time

import numpy as np
import pandas as pd
from scipy.stats import beta, norm

from apnull.score import benjamini_hochberg, hierarchical_bh, score_profiles
from apnull.score.example import digits_null_screen

ALPHA = 0.05
DOSES = 6
ACTIVE_SHARE = 0.10
#: Effect at doses 1..6 relative to the compound's top effect theta: active at the higher doses only.
PROFILE = np.array([0, 0, 0, 1 / 3, 2 / 3, 1])
THETA = (2.0, 6.0)


def clopper_pearson(k: int, n: int, level: float = 0.95) -> tuple[float, float]:
    a = (1 - level) / 2
    lo = beta.ppf(a, k, n - k + 1) if k > 0 else 0.0
    hi = beta.ppf(1 - a, k + 1, n - k) if k < n else 1.0
    return float(lo), float(hi)


def simulate(rng, F: int, rho: float, active: bool):
    """p-values (F x 6) and which doses are active (F x 6)."""
    z = np.sqrt(rho) * rng.standard_normal((F, 1)) + np.sqrt(1 - rho) * rng.standard_normal((F, DOSES))
    truth = np.zeros((F, DOSES), dtype=bool)
    if active:
        k = int(round(ACTIVE_SHARE * F))
        z[:k] += rng.uniform(*THETA, size=(k, 1)) * PROFILE
        truth[:k] = PROFILE > 0
    return norm.sf(z), truth


def as_table(p: np.ndarray) -> pd.DataFrame:
    F = p.shape[0]
    return pd.DataFrame({"compound": np.repeat([f"c{i:04d}" for i in range(F)], DOSES),
                         "dose": np.tile(np.arange(1, DOSES + 1), F), "p_value": p.ravel()})


def run_apnull(t: pd.DataFrame, F: int):
    out = hierarchical_bh(t, "compound", alpha=ALPHA)
    return out["significant"].to_numpy().reshape(F, DOSES), out["stage1_significant"].to_numpy()[::DOSES]


def run_copairs(t: pd.DataFrame, F: int):
    from copairs.map import apply_hierarchical_fdr_correction

    out = apply_hierarchical_fdr_correction(t, ["compound"], ["compound", "dose"])
    for c in ("compound", "dose"):  # its merge keeps the row order; checked
        assert (out[c].to_numpy() == t[c].to_numpy()).all()
    disc = (out["corrected_p_value"].to_numpy() < ALPHA).reshape(F, DOSES)
    return disc, out["stage1_significant"].to_numpy()[::DOSES]


def run_flat(t: pd.DataFrame, F: int):
    disc = (benjamini_hochberg(t["p_value"].to_numpy()) <= ALPHA).reshape(F, DOSES)
    return disc, disc.any(axis=1)


def copairs_available() -> bool:
    try:
        import copairs.map  # noqa: F401
    except ImportError:
        return False
    logging.getLogger("copairs").setLevel(logging.WARNING)
    return True


#: Per-screen quantities that are yes/no (Clopper-Pearson interval); the others are proportions.
BINARY = ("any discovery", "any false discovery")


def screen_rates(disc, sel, truth) -> dict:
    """One screen's values (NaN where undefined: power without active doses)."""
    active_c = truth.any(axis=1)
    r = {"any discovery": float(disc.any()), "any false discovery": float((disc & ~truth).any())}
    r["FDR compounds"] = (sel & ~active_c).sum() / max(sel.sum(), 1)
    r["FDR (compound, dose)"] = (disc & ~truth).sum() / max(disc.sum(), 1)
    per = (disc & ~truth).sum(axis=1) / np.maximum(disc.sum(axis=1), 1)
    r["average FDR in selected"] = per[sel].mean() if sel.any() else 0.0
    r["power doses"] = (disc & truth).sum() / truth.sum() if truth.any() else np.nan
    r["power compounds"] = (sel & active_c).sum() / active_c.sum() if active_c.any() else np.nan
    return r


def summarise(metric: str, values: np.ndarray) -> str:
    """The mean over screens and its 95% interval: Clopper-Pearson for a yes/no per screen, else mean +- 1.96 SE."""
    values = values[~np.isnan(values)]
    if not values.size:
        return "-"
    if metric in BINARY:
        lo, hi = clopper_pearson(int(values.sum()), values.size)
    else:
        half = 1.96 * values.std(ddof=1) / np.sqrt(values.size) if values.size > 1 else np.inf
        lo, hi = max(values.mean() - half, 0.0), min(values.mean() + half, 1.0)
    return f"{values.mean():.3f} [{lo:.3f}, {hi:.3f}]"


def print_table(title: str, n: int, rates: dict, metrics: list) -> None:
    methods = list(rates)
    print(f"\n{title} ({n} screens)")
    print(f"  {'':26s}" + "".join(f"{m:>26s}" for m in methods))
    for metric in metrics:
        cells = [summarise(metric, np.array([r[metric] for r in rates[m]], dtype=float)) for m in methods]
        print(f"  {metric:26s}" + "".join(f"{c:>26s}" for c in cells))


def simulated(args, methods) -> None:
    settings = [("global null, rho = 0", 0.0, False), ("global null, rho = 0.5", 0.5, False),
                ("10% active (doses 4-6), rho = 0.5", 0.5, True)]
    for F, screens in ((1000, args.screens), (100, args.small_screens)):
        for name, rho, active in settings:
            rng = np.random.default_rng([args.seed, F, int(rho * 10), int(active)])
            rates = {m: [] for m in methods}
            cpu = {m: 0.0 for m in methods}
            for _ in range(screens):
                p, truth = simulate(rng, F, rho, active)
                t = as_table(p)
                for m, run in methods.items():
                    c0 = time.process_time()
                    disc, sel = run(t, F)
                    cpu[m] += time.process_time() - c0
                    rates[m].append(screen_rates(disc, sel, truth))
            metrics = (["any discovery"] if not active else
                       ["any false discovery", "FDR compounds", "FDR (compound, dose)", "average FDR in selected",
                        "power doses", "power compounds"])
            print_table(f"{F:,} compounds x {DOSES} doses, {name}", screens, rates, metrics)
            print("  CPU ms a screen: " + ", ".join(f"{m} {1e3 * cpu[m] / screens:.1f}" for m in methods))
            sys.stdout.flush()


def digits_dose_screen(seed: int) -> pd.DataFrame:
    """A true-null dose-response screen of real images: digit class seed % 10, 4 plates of 12 controls,
    7 compounds x 6 doses of 3 replicates, every replicate an image of the controls' class."""
    t = digits_null_screen(seed % 10, seed=seed, controls_per_plate=(12, 12, 12, 12), replicates=3)
    perts = sorted(set(t["Metadata_perturbation"]) - {"DMSO"})[:7 * DOSES]
    t = t[t["Metadata_perturbation"].isin(perts + ["DMSO"])]
    code = {p: (f"cmp{i // DOSES + 1}", i % DOSES + 1) for i, p in enumerate(perts)}
    pert = t["Metadata_perturbation"]
    return t.assign(Metadata_compound=[code[p][0] if p in code else "DMSO" for p in pert],
                    Metadata_dose=[code[p][1] if p in code else 0 for p in pert]).drop(columns="Metadata_perturbation")


def real_profiles(args, methods) -> None:
    rates = {m: [] for m in methods}
    low_p, tail_p, n_p, t0 = 0, 0, 0, time.perf_counter()
    tail = ALPHA / (7 * DOSES)  # the largest p-value that alone makes a discovery in a true-null screen
    for s in range(args.digits):
        screen = digits_dose_screen(args.seed * 100_000 + s)
        g = score_profiles(screen, perturbation=["Metadata_compound", "Metadata_dose"], control="DMSO",
                           stratum="Metadata_plate", seed=s).groups
        g = g.sort_values(["Metadata_compound", "Metadata_dose"], kind="stable")
        t = pd.DataFrame({"compound": g["Metadata_compound"].to_numpy(), "dose": g["Metadata_dose"].to_numpy(),
                          "p_value": g["p_value"].to_numpy()})
        F = t["compound"].nunique()
        assert len(t) == F * DOSES
        truth = np.zeros((F, DOSES), dtype=bool)
        low_p += int(np.sum(t["p_value"] <= ALPHA))
        tail_p += int(np.sum(t["p_value"] <= tail))
        n_p += len(t)
        for m, run in methods.items():
            rates[m].append(screen_rates(*run(t, F), truth))
    print_table(f"real profiles (digits): true-null screens of 7 compounds x {DOSES} doses, 3 replicates, "
                f"4 plates x 12 controls, score_profiles(permutations='auto')", args.digits, rates,
                ["any discovery"])
    lo, hi = clopper_pearson(low_p, n_p)
    print(f"  (compound, dose) p-values <= 0.05: {low_p / n_p:.3f} [{lo:.3f}, {hi:.3f}] of {n_p:,} "
          f"(pooled; the doses of a screen share its controls)")
    lo, hi = clopper_pearson(tail_p, n_p)
    print(f"  (compound, dose) p-values <= {tail:.5f} (= 0.05 / 42, what one discovery needs): {tail_p / n_p:.5f} "
          f"[{lo:.5f}, {hi:.5f}]  [{time.perf_counter() - t0:.0f} s]")


def main(argv=None) -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--screens", type=int, default=300, help="screens per setting at 1,000 compounds")
    ap.add_argument("--small-screens", type=int, default=1000, help="screens per setting at 100 compounds")
    ap.add_argument("--digits", type=int, default=500, help="true-null screens of real profiles (0: none)")
    ap.add_argument("--seed", type=int, default=0)
    args = ap.parse_args(argv)
    methods = {"apnull (Simes + BB)": run_apnull}
    if copairs_available():
        methods["copairs 0.5.5 (min-p)"] = run_copairs
    else:
        print("copairs is not installed (pip install 'copairs>=0.5.5'): its column is left out")
    methods["flat BH (all doses)"] = run_flat
    t0 = time.perf_counter()
    print(f"alpha = {ALPHA}; value = mean over screens [95% interval: Clopper-Pearson for 'any ...' rows, "
          "mean +- 1.96 SE for FDR and power]")
    simulated(args, methods)
    if args.digits:
        real_profiles(args, methods)
    print(f"\n({time.perf_counter() - t0:.0f} s)")


if __name__ == "__main__":
    main()
