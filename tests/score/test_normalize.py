"""normalize= none|controls|plate: pycytominer's per-plate mad_robustize, its edge cases, every workflow.

The scientist of the finding scored a raw CellProfiler-like CSV (3 plates, 12 DMSO a plate, 8
compounds with one replicate on each plate, 30 features, NaN cells, plate effects) and got hits that
looked wrong; the same file normalised by hand gave others. Here the raw file scored with
``--normalize controls`` and the hand-normalised file scored as it is find the same hits.
"""

import io
import json
import pathlib

import numpy as np
import pandas as pd
import pytest

from apnull.cli import main
from apnull.score import (MissingValuesError, digits_screen, read_table, score_compare, score_consistency,
                          score_profiles, screen_plan)
from apnull.score.table.normalize import MAD_SCALE, raw_look
from apnull.score.table.screen import prepare_screen
from raw_screen import ACTIVE, FEATURES, META, by_hand, raw_screen

DATA = pathlib.Path(__file__).parent / "data"
KW = dict(perturbation="Metadata_Compound", control="DMSO", stratum="Metadata_Plate", nan="drop-rows")
FEATS = list(FEATURES)


def run(argv):
    out, err = io.StringIO(), io.StringIO()
    status = main(argv, out, err)
    return status, out.getvalue(), err.getvalue()


def frozen(name):
    return read_table(DATA / name, labels=META)


def hits(res):
    g = res.groups
    return sorted(g.loc[g["significant"], "Metadata_Compound"])


@pytest.mark.parametrize("how", ["controls", "plate"])
def test_statistics_equal_pycytominer(how):
    """Per plate, (x - centre) / scale equals pycytominer's mad_robustize output (frozen, made by
    make_pycytominer_reference.py), NaN cells included, to the last bits pycytominer's 1e-18 leaves."""
    raw = frozen("raw_screen.csv")
    ref = frozen(f"raw_screen_pycytominer_{how}.csv")
    screen = prepare_screen(raw, "Metadata_Compound", "DMSO", "Metadata_Plate", None, "cosine", "drop-rows",
                            normalize=how)
    norm = screen.normalization
    assert norm.keep.all() and screen.columns == FEATS
    codes = pd.factorize(raw["Metadata_Plate"])[0]
    ours = (raw[FEATS].to_numpy() - norm.centre[codes]) / norm.scale[codes]
    theirs = ref[FEATS].to_numpy()
    assert np.array_equal(np.isnan(ours), np.isnan(theirs))
    ok = ~np.isnan(ours)
    assert np.allclose(ours[ok], theirs[ok], rtol=1e-12, atol=1e-12)


@pytest.mark.parametrize("how", ["controls", "plate"])
def test_scores_equal_pycytominer_normalised_table(how):
    raw = frozen("raw_screen.csv")
    ref = frozen(f"raw_screen_pycytominer_{how}.csv")
    ours = score_profiles(raw, normalize=how, permutations=199, **KW)
    theirs = score_profiles(ref, permutations=199, **KW)
    assert hits(ours) == hits(theirs)
    pd.testing.assert_frame_equal(ours.groups[["Metadata_Compound", "mAP", "p_value"]],
                                  theirs.groups[["Metadata_Compound", "mAP", "p_value"]], rtol=1e-9)
    assert ours.settings["normalize"] == how and theirs.settings["normalize"] == "none"
    assert ours.looks_raw is None and theirs.looks_raw is None


def test_scientist_raw_and_by_hand_find_the_same_hits(tmp_path):
    """The finding's reproduction through the command line: raw --normalize controls, and the file
    normalised by hand, find the same hits (the active compounds); raw as it is finds none and the
    command says on stderr to normalise."""
    raw = raw_screen(seed=0)
    raw.to_csv(tmp_path / "raw.csv", index=False)
    by_hand(raw).to_csv(tmp_path / "hand.csv", index=False)
    common = ["--perturbation", "Metadata_Compound", "--control", "DMSO", "--stratum", "Metadata_Plate",
              "--nan", "drop-rows", "--permutations", "199", "--json"]
    docs = {}
    for name, path, extra in (("normalised", "raw.csv", ["--normalize", "controls"]), ("hand", "hand.csv", []),
                              ("raw", "raw.csv", [])):
        status, out, err = run(["score", str(tmp_path / path), *common, *extra])
        assert status == 0, err
        docs[name] = (json.loads(out), err)
    found = {k: sorted(g["Metadata_Compound"] for g in doc["groups"] if g["significant"]) for k, (doc, _) in docs.items()}
    assert found["normalised"] == found["hand"]
    assert set(found["hand"]) <= set(ACTIVE) and len(found["hand"]) >= 3
    assert found["raw"] != found["hand"]
    maps = {k: {g["Metadata_Compound"]: g["mAP"] for g in doc["groups"]} for k, (doc, _) in docs.items()}
    assert all(abs(maps["normalised"][c] - maps["hand"][c]) < 1e-9 for c in maps["hand"])
    assert docs["normalised"][0]["settings"]["normalize"] == "controls"
    hint = [line for line in docs["raw"][1].splitlines() if "hint" in line]
    assert len(hint) == 1 and "--normalize controls" in hint[0] and "un-normalised" in hint[0]
    assert "hint" not in docs["normalised"][1] and "hint" not in docs["hand"][1]


def test_text_output_names_the_setting(tmp_path):
    raw_screen(seed=1).to_csv(tmp_path / "raw.csv", index=False)
    status, out, err = run(["score", str(tmp_path / "raw.csv"), "--perturbation", "Metadata_Compound",
                            "--stratum", "Metadata_Plate", "--nan", "drop-rows", "--normalize", "plate",
                            "--permutations", "99"])
    assert status == 0, err
    assert "normalize=plate" in out.splitlines()[0]


def test_mad_zero_feature_left_out_and_named():
    raw = raw_screen(seed=2, nan_cells=False)
    ctl = (raw["Metadata_Plate"] == "P2") & (raw["Metadata_Compound"] == "DMSO")
    col = FEATS[4]
    raw.loc[ctl[ctl].index[:7], col] = 5.0  # 7 of 12 equal: the median and the MAD's median are 0 away
    res = score_profiles(raw, normalize="controls", permutations=99, **KW)
    left = {d["column"]: d["reason"] for d in res.settings["columns_left_out"]}
    assert left[col] == "MAD 0 on the control rows of stratum 'P2' (normalize='controls')"
    assert res.settings["features"] == len(FEATS) - 1
    assert any(col in w and "MAD 0" in w for w in res.warnings)
    # all wells of P2 are not all equal: normalize="plate" keeps the feature
    assert col not in {d["column"] for d in score_profiles(raw, normalize="plate", permutations=99,
                                                           **KW).settings["columns_left_out"]}
    raw.loc[ctl, FEATS] = 1.0  # every feature constant on P2's controls
    with pytest.raises(ValueError, match="no feature can be normalised"):
        score_profiles(raw, normalize="controls", permutations=99, **KW)


def test_nan_cells_are_skipped_by_the_statistics_then_handled_by_nan():
    raw = raw_screen(seed=3, nan_cells=False)
    col = FEATS[7]
    raw.loc[0, col] = np.nan  # a DMSO well of P1
    screen = prepare_screen(raw, "Metadata_Compound", "DMSO", "Metadata_Plate", None, "cosine", "drop-features",
                            normalize="controls")
    assert col not in screen.columns  # nan="drop-features" after normalising
    full = prepare_screen(raw, "Metadata_Compound", "DMSO", "Metadata_Plate", None, "cosine", "drop-rows",
                          normalize="controls")
    p1 = raw[(raw["Metadata_Plate"] == "P1") & (raw["Metadata_Compound"] == "DMSO")]
    j = FEATS.index(col)
    assert full.normalization.centre[0, j] == p1[col].median()  # 11 values: NaN skipped
    mad = (p1[col] - p1[col].median()).abs().median()
    assert full.normalization.scale[0, j] == MAD_SCALE * mad
    assert 0 not in full.rows.tolist()  # the row itself left out by nan="drop-rows"
    with pytest.raises(MissingValuesError, match=col):
        score_profiles(raw, **dict(KW, nan="error"), normalize="controls")
    raw.loc[(raw["Metadata_Plate"] == "P3") & (raw["Metadata_Compound"] == "DMSO"), col] = np.nan
    res = score_profiles(raw, normalize="controls", permutations=99, **dict(KW, nan="drop-features"))
    reason = {d["column"]: d["reason"] for d in res.settings["columns_left_out"]}[col]
    assert "no finite value" in reason and "'P3'" in reason


def test_plate_without_controls_is_a_clear_error():
    raw = raw_screen(seed=4, nan_cells=False)
    raw = raw[~((raw["Metadata_Plate"] == "P3") & (raw["Metadata_Compound"] == "DMSO"))].reset_index(drop=True)
    with pytest.raises(ValueError, match=r"stratum 'P3' has no control rows to normalise against.*normalize='plate'"):
        score_profiles(raw, normalize="controls", **KW)
    with pytest.raises(ValueError, match="stratum 'P3' has no control rows"):
        screen_plan(raw, "Metadata_Compound", "DMSO", "Metadata_Plate", nan="drop-rows", normalize="controls")
    plan = screen_plan(raw, "Metadata_Compound", "DMSO", "Metadata_Plate", normalize="plate")
    assert plan.perturbations == 8


def test_without_stratum_the_table_is_one_plate():
    raw = raw_screen(seed=5, nan_cells=False)
    screen = prepare_screen(raw, "Metadata_Compound", "DMSO", None, None, "cosine", normalize="controls")
    ctl = raw[raw["Metadata_Compound"] == "DMSO"][FEATS]
    assert screen.normalization.centre.shape == (1, len(FEATS))
    assert np.array_equal(screen.normalization.centre[0], ctl.median().to_numpy())


def test_bad_choices_refused(tmp_path):
    raw = raw_screen(seed=6, nan_cells=False)
    raw.to_csv(tmp_path / "raw.csv", index=False)
    with pytest.raises(ValueError, match="normalize must be one of none, controls, plate"):
        score_profiles(raw, normalize="robust", **KW)
    with pytest.raises(ValueError, match="binary features"):
        score_profiles(raw, normalize="controls", similarity="jaccard", **KW)
    with pytest.raises(ValueError, match="needs control values"):
        score_profiles(raw, **dict(KW, control=None), negatives="others", normalize="controls")
    status, _, err = run(["score", str(tmp_path / "raw.csv"), "--normalize", "robust"])
    assert status == 2 and "invalid choice" in err


def test_null_maps_read_the_normalised_rows_again():
    """A result's null is drawn again from rows read from the table and normalised as the run did:
    the same values the p-value counted."""
    raw = raw_screen(seed=7)
    res = score_profiles(raw, normalize="controls", permutations=199, seed=3, **KW)
    for name in ("cpd_1", "cpd_8"):
        null = res.null_maps(name)
        row = res.groups[res.groups["Metadata_Compound"] == name].iloc[0]
        assert row["p_value"] == (1 + np.sum(null >= row["mAP"] - 1e-12)) / 200
    raw.loc[3, FEATS[0]] += 1.0  # a control: it moves P1's centre, so the run's rows are not these
    with pytest.raises(ValueError, match="changed after scoring"):
        res.null_maps("cpd_1")


def test_consistency_normalises_with_its_controls_before_dropping_them():
    raw = raw_screen(seed=8, nan_cells=False)
    target = {c: ("A" if i % 2 else "B") for i, c in enumerate(sorted(set(raw["Metadata_Compound"]) - {"DMSO"}))}
    raw["Metadata_Target"] = raw["Metadata_Compound"].map(target)
    hand = by_hand(raw)
    common = dict(perturbation="Metadata_Compound", annotation="Metadata_Target", control="DMSO", permutations=99,
                  aggregate="none")
    ours = score_consistency(raw, normalize="controls", stratum="Metadata_Plate", **common)
    theirs = score_consistency(hand, **common)
    pd.testing.assert_frame_equal(ours.labels[["Metadata_Target", "mAP", "p_value"]],
                                  theirs.labels[["Metadata_Target", "mAP", "p_value"]], rtol=1e-9)
    assert ours.settings["normalize"] == "controls" and ours.looks_raw is None
    assert score_consistency(raw, **common).looks_raw is not None


def test_compare_normalises_each_table():
    a = raw_screen(seed=9, nan_cells=False)
    b = a.copy()
    b[FEATS] = b[FEATS] * np.random.default_rng(1).uniform(0.5, 2, len(FEATS)) + 3.0  # another pipeline's units
    common = dict(key=["Metadata_Plate", "Metadata_Well"], perturbation="Metadata_Compound", control="DMSO",
                  stratum="Metadata_Plate", permutations=99)
    ours = score_compare(a, b, normalize="controls", **common)
    theirs = score_compare(by_hand(a), by_hand(b), **common)
    assert np.allclose(ours.groups["mAP_a"], theirs.groups["mAP_a"], atol=1e-9)
    assert np.allclose(ours.groups["mAP_b"], theirs.groups["mAP_b"], atol=1e-9)
    assert ours.settings["normalize"] == "controls" and ours.looks_raw == {}
    assert set(score_compare(a, b, **common).looks_raw) == {"A", "B"}


def test_raw_look_quiet_on_normalised_and_example_tables():
    assert score_profiles(digits_screen(), perturbation="Metadata_perturbation", stratum="Metadata_plate",
                          permutations=9).looks_raw is None
    hand = by_hand(raw_screen(seed=10, nan_cells=False))
    assert screen_plan(hand, "Metadata_Compound", "DMSO", "Metadata_Plate").looks_raw is None
    raw = raw_screen(seed=10, nan_cells=False)
    why = screen_plan(raw, "Metadata_Compound", "DMSO", "Metadata_Plate").looks_raw
    assert "spreads span" in why and "plates' median profiles differ" in why


def test_raw_look_each_sign_alone():
    rng = np.random.default_rng(0)
    codes = np.repeat(np.arange(4), 20)
    ref = np.ones(80, dtype=bool)
    same = rng.normal(size=(80, 10))
    assert raw_look(same, codes, ref) is None
    units = same * 10.0 ** np.arange(10)
    assert "spreads span" in raw_look(units, codes, ref) and "plates'" not in raw_look(units, codes, ref)
    plates = same + 3 * rng.normal(size=(4, 10))[codes]
    assert "plates' median profiles differ" in raw_look(plates, codes, ref)
    assert "spreads span" not in raw_look(plates, codes, ref)


def test_consistency_and_compare_commands_take_normalize(tmp_path):
    raw = raw_screen(seed=11, nan_cells=False)
    raw["Metadata_Target"] = raw["Metadata_Compound"].map(lambda c: "" if c == "DMSO" else f"T{int(c[-1]) % 3}")
    raw.to_csv(tmp_path / "raw.csv", index=False)
    b = raw.copy()
    b[FEATS] = b[FEATS] * 2.0
    b.to_csv(tmp_path / "b.csv", index=False)
    base = ["consistency", str(tmp_path / "raw.csv"), "--perturbation", "Metadata_Compound", "--annotation",
            "Metadata_Target", "--control", "DMSO", "--aggregate", "none", "--permutations", "99", "--json"]
    status, out, err = run(base + ["--normalize", "controls", "--stratum", "Metadata_Plate"])
    assert status == 0, err
    settings = json.loads(out)["settings"]
    assert settings["normalize"] == "controls" and settings["stratum"] == "Metadata_Plate" and "hint" not in err
    status, out, err = run(base)
    assert status == 0 and "apnull consistency: hint:" in err and "--normalize controls" in err
    cmp = ["compare", str(tmp_path / "raw.csv"), str(tmp_path / "b.csv"), "--key", "Metadata_Plate", "--key",
           "Metadata_Well", "--perturbation", "Metadata_Compound", "--control", "DMSO", "--stratum", "Metadata_Plate",
           "--permutations", "99"]
    status, out, err = run(cmp + ["--normalize", "plate"])
    assert status == 0, err
    assert "normalize=plate" in out.splitlines()[0] and "hint" not in err
    status, out, err = run(cmp)
    assert status == 0 and err.count("hint:") == 1 and "table A:" in err and "table B:" in err
