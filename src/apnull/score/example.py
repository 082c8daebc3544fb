"""Bundled example screens made from the digits data (8x8 images, shipped inside the package).

The images are the UCI "Optical Recognition of Handwritten Digits" test set (E. Alpaydin and C. Kaynak,
1998; https://doi.org/10.24432/C50P49; CC BY 4.0), the same 1,797 x 64 counts (0 to 16) as
scikit-learn's ``load_digits``, stored in ``data/digits.npz`` (uint8), so the examples need no
scikit-learn.
"""

from __future__ import annotations

import math
from functools import lru_cache
from importlib.resources import files

import numpy as np
import pandas as pd

__all__ = ["digits_screen", "digits_example", "EXAMPLE_TARGETS", "digits_null_screen", "digits_mixed_screen", "load_digits_arrays", "DIGIT_SHAPES",
           "digits_plate_screen", "digits_pipeline_pair", "digits_crossed_screen"]

#: How each digit is drawn, as '|'-separated labels: "loop" a closed loop, "bowls" two stacked bowls
#: (3 and 8), "bowl" one open bowl, "stem" a straight stroke. The annotation of the bundled screen,
#: for the consistency step: do digits sharing a stroke look alike?
DIGIT_SHAPES = {0: "loop", 1: "stem", 2: "bowl|stem", 3: "bowls", 4: "stem", 5: "bowl|stem", 6: "loop|stem",
                7: "stem", 8: "bowls|loop", 9: "loop|stem"}


@lru_cache(maxsize=1)
def _digits_file() -> tuple:
    """The bundled images (read-only uint8 pixels, uint8 digits), read once."""
    with (files(__package__) / "data" / "digits.npz").open("rb") as f, np.load(f) as data:
        pixels, digit = data["pixels"], data["digit"]
    pixels.flags.writeable = False
    digit.flags.writeable = False
    return pixels, digit


def load_digits_arrays():
    """(X, y): the 1,797 digit images as float pixels (1,797 x 64, counts 0 to 16) and their digits (int).

    Equal to ``sklearn.datasets.load_digits()``'s ``data`` and ``target`` (float64, int64), read from the
    package's own copy (see the module); a fresh pair of arrays each call.
    """
    pixels, digit = _digits_file()
    return pixels.astype(float), digit.astype(int)


def digits_screen(seed=0, controls_per_plate=(18, 19, 21, 22), n_null=8, real_digits=(3, 8),
                  weak_digits=(6,), weak_mix=0.35, replicates=4, control_digit=0) -> pd.DataFrame:
    """A small profiling screen from real images: controls, null and real "perturbations".

    Every profile is a digit image (64 pixel features ``px_00`` .. ``px_63``). Controls
    (``Metadata_perturbation == "DMSO"``) and the ``n_null`` null perturbations (``null_01`` ...) are
    distinct images of ``control_digit``, so the null ones are exchangeable with the controls. Each
    real perturbation ``digit_<d>`` uses images of digit d; each weak one ``weak_<d>`` mixes images:
    ``(1 - weak_mix) * control-digit image + weak_mix * digit-d image``. Plates ``plate_1`` ...: one
    per entry of ``controls_per_plate`` (unequal counts by default); the replicates of a perturbation
    go to plates in turn (one per plate when ``replicates`` equals the number of plates).

    Columns: Metadata_perturbation, Metadata_plate, Metadata_kind (control, null, real, weak),
    Metadata_digit, Metadata_shape (the digit's strokes, :data:`DIGIT_SHAPES`, e.g. "bowls|loop"), then
    the features. Deterministic for a given ``seed``.

    Raises
    ------
    ValueError
        If the digits are too few for the requested sizes, or the sizes are not positive.
    """
    X, y = load_digits_arrays()
    plates = len(controls_per_plate)
    if plates < 1 or min(controls_per_plate) < 1 or replicates < 2 or n_null < 0:
        raise ValueError("need at least one plate, one control per plate and 2 replicates")
    rng = np.random.default_rng(seed)
    pools = {d: list(rng.permutation(np.flatnonzero(y == d))) for d in range(10)}
    need = sum(controls_per_plate) + (n_null + len(weak_digits)) * replicates
    if need > len(pools[control_digit]):
        raise ValueError(f"digit {control_digit} has {len(pools[control_digit])} images; this layout needs {need}")

    def take(d, count):
        if count > len(pools[d]):
            raise ValueError(f"digit {d} has too few images left for this layout")
        out, pools[d] = pools[d][:count], pools[d][count:]
        return X[out]

    rows = []

    def add(name, kind, digit, feats, plate_of):
        for i, f in enumerate(feats):
            rows.append((name, f"plate_{plate_of(i) + 1}", kind, digit, f))

    for p, count in enumerate(controls_per_plate):
        add("DMSO", "control", control_digit, take(control_digit, count), lambda i, p=p: p)
    turn = lambda i: i % plates  # noqa: E731
    for j in range(n_null):
        add(f"null_{j + 1:02d}", "null", control_digit, take(control_digit, replicates), turn)
    for d in real_digits:
        add(f"digit_{d}", "real", d, take(d, replicates), turn)
    for d in weak_digits:
        mixed = (1 - weak_mix) * take(control_digit, replicates) + weak_mix * take(d, replicates)
        add(f"weak_{d}", "weak", d, mixed, turn)
    table = pd.DataFrame({"Metadata_perturbation": [r[0] for r in rows],
                          "Metadata_plate": [r[1] for r in rows],
                          "Metadata_kind": [r[2] for r in rows],
                          "Metadata_digit": [r[3] for r in rows],
                          "Metadata_shape": [DIGIT_SHAPES[r[3]] for r in rows]})
    feats = pd.DataFrame(np.array([r[4] for r in rows]), columns=[f"px_{i:02d}" for i in range(X.shape[1])])
    return pd.concat([table, feats], axis=1)


#: The made-up targets of :func:`digits_example`'s perturbations (its ``Metadata_target`` column), chosen
#: so the consistency step has something to teach. ``target_A`` is carried by 3, 5, 8 and 9, active
#: perturbations whose images look alike (bowls and loops on the right): consistent. ``target_C`` by 1, 2,
#: 4 and a null one, active perturbations that look nothing alike: not consistent. ``target_B`` (7, weak
#: 6, a null one) and ``target_D`` (weak 6 and two null ones) mix alike and unlike ones; ``weak_6``
#: carries two labels ("target_B|target_D").
EXAMPLE_TARGETS = {"digit_3": "target_A", "digit_5": "target_A", "digit_8": "target_A", "digit_9": "target_A",
                   "digit_1": "target_C", "digit_2": "target_C", "digit_4": "target_C", "null_04": "target_C",
                   "digit_7": "target_B", "weak_6": "target_B|target_D", "null_02": "target_B",
                   "null_01": "target_D", "null_03": "target_D"}
#: The real digits of :func:`digits_example`.
EXAMPLE_DIGITS = (1, 2, 3, 4, 5, 7, 8, 9)


def digits_example(seed=0) -> pd.DataFrame:
    """The dashboard's example screen: :func:`digits_screen` with eight real digits (1, 2, 3, 4, 5, 7, 8,
    9: ``digit_<d>``), ``weak_6`` and four null perturbations (``null_01`` .. ``null_04``, images of the
    control digit 0), four plates with 18/19/21/22 controls, plus an annotation column
    ``Metadata_target`` (after ``Metadata_shape``) for the consistency step: the made-up targets of
    :data:`EXAMPLE_TARGETS`, '|'-separated where a perturbation has two, empty for the controls.

    Some labels are shared by active perturbations that look alike (``target_A``: 3, 5, 8, 9) and some by
    perturbations that do not (``target_C``: 1, 2, 4 and a null one), so the step shows both outcomes
    (with B = 999, seed 0: target_A q = 0.04, target_C p = 0.97).
    Deterministic for a given ``seed``.

    >>> t = digits_example()
    >>> sorted(t.loc[t["Metadata_perturbation"] == "digit_8", "Metadata_target"].unique())
    ['target_A']
    >>> t["Metadata_perturbation"].nunique() - 1  # perturbations besides the controls
    13
    """
    table = digits_screen(seed=seed, real_digits=EXAMPLE_DIGITS, n_null=4)
    targets = table["Metadata_perturbation"].map(EXAMPLE_TARGETS).fillna("")
    table.insert(table.columns.get_loc("Metadata_shape") + 1, "Metadata_target", targets)
    return table


def digits_null_screen(digit, seed=0, controls_per_plate=(20, 20, 20, 20), replicates=4,
                       signal_digit=None, mix=0.0, n_signal=0) -> pd.DataFrame:
    """A true-null screen for calibration: one digit class split into controls and fake perturbations.

    The images of ``digit`` are shuffled (``seed``); each plate takes its ``controls_per_plate`` controls
    and the rest form perturbations ``p001`` ... of ``replicates`` images, spread over the plates in
    turn. Every fake perturbation is exchangeable with the controls, so a calibrated test rejects
    it at rate alpha. With ``signal_digit``, the first ``n_signal`` perturbations (named ``s001`` ...)
    get real signal: each replicate becomes ``(1 - mix) * its image + mix * an image of signal_digit``.
    Same columns as :func:`digits_screen`.
    """
    X, y = load_digits_arrays()
    rng = np.random.default_rng(seed)
    idx = rng.permutation(np.flatnonzero(y == digit))
    plates = len(controls_per_plate)
    rows, pos = [], 0
    for p, count in enumerate(controls_per_plate):
        for i in idx[pos:pos + count]:
            rows.append(("DMSO", f"plate_{p + 1}", "control", X[i]))
        pos += count
    others = rng.permutation(np.flatnonzero(y == signal_digit)) if signal_digit is not None else []
    j = 0
    while pos + replicates <= idx.size:
        real = j < n_signal and len(others) >= (j + 1) * replicates
        name = f"s{j + 1:03d}" if real else f"p{j + 1:03d}"
        for r in range(replicates):
            f = X[idx[pos + r]]
            if real:
                f = (1 - mix) * f + mix * X[others[j * replicates + r]]
            rows.append((name, f"plate_{r % plates + 1}", "real" if real else "null", f))
        pos += replicates
        j += 1
    table = pd.DataFrame({"Metadata_perturbation": [r[0] for r in rows],
                          "Metadata_plate": [r[1] for r in rows], "Metadata_kind": [r[2] for r in rows]})
    feats = pd.DataFrame(np.array([r[3] for r in rows]), columns=[f"px_{i:02d}" for i in range(X.shape[1])])
    return pd.concat([table, feats], axis=1)


def digits_mixed_screen(digit, seed=0, mix=0.5, n_signal=10) -> pd.DataFrame:
    """A mixed screen for FDR and power (benchmarks/calibration.py and its test): :func:`digits_null_screen`
    of ``digit`` whose first ``n_signal`` perturbations (``s001`` ...) mix each replicate with an image of
    digit (digit + 5) mod 10; equal control counts per plate (20 each) for even seeds, unequal
    (18/19/21/22) for odd ones."""
    layout = (18, 19, 21, 22) if seed % 2 else (20, 20, 20, 20)
    return digits_null_screen(digit, seed=seed, controls_per_plate=layout, signal_digit=(digit + 5) % 10, mix=mix,
                              n_signal=n_signal)


def digits_plate_screen(seed=0, plates=8, controls=10, replicates=3, digits=2, weak=2, nulls=1,
                        weak_mix=0.35, control_digits=(0,)) -> pd.DataFrame:
    """A screen whose perturbations each sit on one plate (replicate wells of the same plate), from real images.

    Plate ``plate_<p>`` takes its control digit c from ``control_digits`` in turn and holds ``controls``
    images of c (``DMSO``), ``digits`` perturbations of ``replicates`` images of a digit d (``digit_<d>_p<p>``),
    ``weak`` perturbations mixing an image of c with one of d (``(1 - weak_mix) * c + weak_mix * d``,
    ``weak_<d>_p<p>``) and ``nulls`` perturbations of images of c (``null_<j>_p<p>``); the digits d cycle
    through 0..9 (skipping the plate's c) from plate to plate. Each plate's perturbations share only its
    controls, so every plate is a unit of its own for a comparison of two pipelines
    (:func:`apnull.score.score_compare`). Columns: Metadata_perturbation, Metadata_plate, Metadata_well
    (``A01``, ``A02``, ... within the plate), Metadata_kind (control, real, weak, null), Metadata_digit,
    then the 64 pixels ``px_00`` .. ``px_63``. Deterministic for a given ``seed``.

    Raises
    ------
    ValueError
        A digit has too few images (about 180 each) for the layout, or a size is not positive.
    """
    X, y = load_digits_arrays()
    if plates < 1 or controls < 1 or replicates < 2 or min(digits, weak, nulls) < 0 or not len(control_digits):
        raise ValueError("need at least one plate, one control per plate, a control digit and 2 replicates")
    rng = np.random.default_rng(seed)
    pools = {d: list(rng.permutation(np.flatnonzero(y == d))) for d in range(10)}

    def take(d, count):
        if count > len(pools[d]):
            raise ValueError(f"digit {d} has too few images left for this layout ({plates} plates)")
        out, pools[d] = pools[d][:count], pools[d][count:]
        return X[out]

    rows, turn = [], 0
    for p in range(1, plates + 1):
        c = int(control_digits[(p - 1) % len(control_digits)])
        wells = [("DMSO", "control", c, f) for f in take(c, controls)]
        for kind, count in (("digit", digits), ("weak", weak)):
            for _ in range(count):
                d, turn = turn % 10, turn + 1
                if d == c:
                    d, turn = turn % 10, turn + 1
                feats = take(d, replicates) if kind == "digit" else \
                    (1 - weak_mix) * take(c, replicates) + weak_mix * take(d, replicates)
                wells += [(f"{kind}_{d}_p{p}", "real" if kind == "digit" else "weak", d, f) for f in feats]
        for j in range(1, nulls + 1):
            wells += [(f"null_{j}_p{p}", "null", c, f) for f in take(c, replicates)]
        rows += [(name, f"plate_{p}", f"{chr(65 + w // 12)}{w % 12 + 1:02d}", kind, d, f)
                 for w, (name, kind, d, f) in enumerate(wells)]
    table = pd.DataFrame({"Metadata_perturbation": [r[0] for r in rows], "Metadata_plate": [r[1] for r in rows],
                          "Metadata_well": [r[2] for r in rows], "Metadata_kind": [r[3] for r in rows],
                          "Metadata_digit": [r[4] for r in rows]})
    feats = pd.DataFrame(np.array([r[5] for r in rows]), columns=[f"px_{i:02d}" for i in range(X.shape[1])])
    return pd.concat([table, feats], axis=1)


def digits_pipeline_pair(seed=0, **layout) -> tuple:
    """Two pipelines of the same wells, for :func:`apnull.score.score_compare`: (A, B).

    A is :func:`digits_plate_screen` (``layout`` passed on): the 64 pixels of each 8x8 image. B is the
    same wells at half the resolution: each 2x2 block of pixels summed, 16 features ``half_00`` ..
    ``half_15`` (a cheaper profile of the same images). Same metadata columns; the wells match by
    (Metadata_plate, Metadata_well). Deterministic for a given ``seed``.
    """
    a = digits_plate_screen(seed, **layout)
    pixels = a.filter(regex="^px_").to_numpy().reshape(-1, 4, 2, 4, 2).sum(axis=(2, 4)).reshape(len(a), 16)
    meta = a[[c for c in a.columns if c.startswith("Metadata_")]]
    b = pd.concat([meta, pd.DataFrame(pixels, columns=[f"half_{i:02d}" for i in range(16)])], axis=1)
    return a, b


def digits_crossed_screen(seed=0, compounds=240, replicates=4, plates=32, controls=8, control_digit=0,
                          mix=(0.15, 0.6)) -> pd.DataFrame:
    """A crossed screen from real images: each compound's replicates on plates of their own (JUMP's layout).

    Every plate ``plate_<p>`` holds ``controls`` images of ``control_digit`` (``DMSO``); each compound
    ``cpd_<i>`` has ``replicates`` wells on as many distinct plates (drawn at random), each well the mix
    ``(1 - m) * c + m * d`` of a control image c and an image d of the compound's digit (the digits
    other than ``control_digit`` in turn), m drawn per compound uniformly in ``mix`` (weak to strong
    compounds). Images are drawn without replacement within a compound and a plate's controls, and
    reused across them. Every plate is linked to every other by compounds, so a comparison of two
    pipelines has one unit of strata (:func:`apnull.score.score_compare` then tests the crossed way).
    Columns: Metadata_perturbation, Metadata_plate, Metadata_well, Metadata_mix, then ``px_00`` ..
    ``px_63``. Deterministic for a given ``seed``.

    Raises
    ------
    ValueError
        Fewer plates than replicates, or a size that is not positive.
    """
    if compounds < 1 or replicates < 2 or controls < 1 or plates < replicates:
        raise ValueError("need a compound, 2 replicates on as many distinct plates, and a control per plate")
    X, y = load_digits_arrays()
    rng = np.random.default_rng(seed)
    own = np.flatnonzero(y == control_digit)
    digits = [d for d in range(10) if d != control_digit]
    wells = {p: [("DMSO", math.nan, f) for f in X[rng.choice(own, controls, replace=False)]] for p in range(plates)}
    for i in range(compounds):
        d = digits[i % len(digits)]
        m = float(rng.uniform(*mix))
        imgs = X[rng.choice(np.flatnonzero(y == d), replicates, replace=False)]
        base = X[rng.choice(own, replicates, replace=False)]
        for p, f in zip(rng.choice(plates, replicates, replace=False), (1 - m) * base + m * imgs):
            wells[int(p)].append((f"cpd_{i:03d}", m, f))
    rows = [(name, f"plate_{p + 1:02d}", f"W{w + 1:03d}", m, f) for p in range(plates)
            for w, (name, m, f) in enumerate(wells[p])]
    table = pd.DataFrame({"Metadata_perturbation": [r[0] for r in rows], "Metadata_plate": [r[1] for r in rows],
                          "Metadata_well": [r[2] for r in rows], "Metadata_mix": [r[3] for r in rows]})
    feats = pd.DataFrame(np.array([r[4] for r in rows]), columns=[f"px_{i:02d}" for i in range(X.shape[1])])
    return pd.concat([table, feats], axis=1)
