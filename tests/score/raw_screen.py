"""A raw CellProfiler-like screen with plate effects, as the scientist of the normalisation finding had it.

3 plates, 12 DMSO wells a plate, 8 compounds with one replicate on each plate (5 active, 3 inactive),
30 features whose units differ by up to five orders of magnitude, plate effects (a shift and a gain
per plate and feature, larger than the spread within a plate) and a few NaN cells. ``by_hand`` is the
per-plate robust z-score against DMSO written out in pandas, as a user would do it before scoring.
"""

import numpy as np
import pandas as pd

PLATES = ("P1", "P2", "P3")
COMPOUNDS = tuple(f"cpd_{i}" for i in range(1, 9))
ACTIVE = COMPOUNDS[:5]
FEATURES = tuple(f"Cells_Feature_{j:02d}" for j in range(30))
META = ["Metadata_Plate", "Metadata_Well", "Metadata_Compound"]


def raw_screen(seed=0, nan_cells=True) -> pd.DataFrame:
    """The raw table (see the module): one row a well, Metadata_Plate / _Well / _Compound and features."""
    rng = np.random.default_rng(seed)
    d = len(FEATURES)
    units = 10.0 ** rng.uniform(-2, 3, d)
    offset = units * rng.uniform(2, 10, d)
    effect = {c: (rng.normal(0, 1.6, d) * (rng.random(d) < 0.5) if c in ACTIVE else np.zeros(d)) for c in COMPOUNDS}
    rows = []
    for p in PLATES:
        shift, gain = rng.normal(0, 3, d), rng.uniform(0.7, 1.4, d)
        wells = ["DMSO"] * 12 + list(COMPOUNDS)
        for w, c in enumerate(wells):
            z = rng.normal(0, 1, d) + (effect[c] if c != "DMSO" else 0)
            rows.append([p, f"W{w:02d}", c, *(offset + units * gain * (z + shift))])
    table = pd.DataFrame(rows, columns=META + list(FEATURES))
    if nan_cells:  # two compound wells and one DMSO well lose a value
        for row, col in ((14, 3), (33, 17), (5, 25)):
            table.iloc[row, len(META) + col] = np.nan
    return table


def by_hand(table: pd.DataFrame, reference="controls") -> pd.DataFrame:
    """Each plate's features as (x - median) / (1.4826 * MAD) of its DMSO wells (or all its wells), NaN
    skipped, in plain pandas."""
    out = table.copy()
    feats = [c for c in table.columns if c.startswith("Cells_")]
    for _, part in table.groupby("Metadata_Plate"):
        ref = part[part["Metadata_Compound"] == "DMSO"] if reference == "controls" else part
        med = ref[feats].median()
        mad = (ref[feats] - med).abs().median()
        out.loc[part.index, feats] = (part[feats] - med) / (1.4826 * mad)
    return out
