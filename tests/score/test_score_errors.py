"""Bad input: a ValueError with a sentence that says what to change; skips and warnings."""

import io

import numpy as np
import pandas as pd
import pytest

from apnull.score import MAX_FILE_BYTES, digits_screen, read_table, score_profiles

KW = dict(perturbation="Metadata_perturbation", stratum="Metadata_plate", permutations=9)


@pytest.fixture(scope="module")
def table():
    return digits_screen()


@pytest.mark.parametrize("change, msg", [
    (dict(perturbation="Metadata_perturbaton"), "did you mean 'Metadata_perturbation'"),
    (dict(stratum="Metadata_plat"), "did you mean 'Metadata_plate'"),
    (dict(control="DMS0"), "no control rows.*did you mean 'DMSO'"),
    (dict(features=["px_00", "px_0"]), "feature column 'px_0' is not in the table"),
    (dict(features="^nothing"), "matches no column"),
    (dict(features="(("), "not valid"),
    (dict(features=[]), "at least 1 feature"),
    (dict(permutations=0), "between 1 and 1,000,000"),
    (dict(permutations=2_000_000), "between 1 and 1,000,000"),
    (dict(permutations=2.5), "whole number"),
    (dict(permutations="some"), "'all'"),
    (dict(similarity="minkowski"), "similarity must be one of"),
    (dict(null="bootstrap"), "null must be one of"),
    (dict(seed=-1), "seed"),
    (dict(workers=1, scheduler="tcp://x:1"), "not both"),
])
def test_bad_arguments(table, change, msg):
    with pytest.raises(ValueError, match=msg):
        score_profiles(table, **{**KW, **change})


def test_nan_and_non_numeric_features_named(table):
    bad = table.copy()
    bad.loc[[3, 90], "px_10"] = np.nan
    with pytest.raises(ValueError, match=r"'px_10' \(2 rows\)"):
        score_profiles(bad, **KW)
    bad = table.copy()
    bad["px_11"] = bad["px_11"].astype(object)
    bad.loc[5, "px_11"] = "oops"
    with pytest.raises(ValueError, match="'px_11' is not numeric.*'oops' in data row 6"):
        score_profiles(bad, **KW, features="^px_")
    with pytest.raises(ValueError, match="no numeric feature columns"):
        score_profiles(table[["Metadata_perturbation", "Metadata_plate"]], **KW)


def test_zero_norm_rows_named(table):
    bad = table.copy()
    bad.loc[7, [c for c in bad if c.startswith("px_")]] = 0.0
    with pytest.raises(ValueError, match=r"data row 8 \(counting from 1 under the header\) has all-zero features.*euclidean"):
        score_profiles(bad, **KW)
    res = score_profiles(bad, **KW, similarity="euclidean")
    assert len(res.groups) == 11
    with pytest.raises(ValueError, match="same value in every feature"):
        score_profiles(bad, **KW, similarity="correlation")


def test_skips_and_warnings(table):
    t = table.copy()
    t.loc[t.index[-1], "Metadata_perturbation"] = "lonely"          # one replicate
    t.loc[t["Metadata_perturbation"] == "null_01", "Metadata_plate"] = "plate_9"  # no controls there
    t = pd.concat([t, t.iloc[[100]]], ignore_index=True)            # a duplicate row
    res = score_profiles(t, **KW)
    reasons = dict(zip(res.skipped["Metadata_perturbation"], res.skipped["reason"]))
    assert reasons["lonely"] == "only one replicate: no positives to rank"
    assert reasons["null_01"] == "no control rows in stratum 'plate_9'"
    text = " ".join(res.warnings)
    assert "1 duplicate rows" in text and "were kept" in text and "'plate_9'" in text
    assert "lonely" not in set(res.groups["Metadata_perturbation"])


def test_nothing_to_score(table):
    only = table[table["Metadata_perturbation"].isin(["DMSO"]) | (table.index == 90)]
    with pytest.raises(ValueError, match="nothing to score"):
        score_profiles(only, **KW)


def test_exact_enumeration_limit(table):
    with pytest.raises(ValueError, match="would enumerate .* give a number"):
        score_profiles(table, **dict(KW, stratum=None, permutations="all"))


def test_read_table(tmp_path, table):
    csv = tmp_path / "s.csv"
    table.to_csv(csv, index=False)
    pd.testing.assert_frame_equal(read_table(csv), table, check_dtype=False)
    pq = tmp_path / "s.parquet"
    table.to_parquet(pq)
    pd.testing.assert_frame_equal(read_table(pq), table)
    upload = io.BytesIO(pq.read_bytes())  # a buffer without a name: sniffed by PAR1
    pd.testing.assert_frame_equal(read_table(upload), table)
    (tmp_path / "empty.csv").write_bytes(b"")
    with pytest.raises(ValueError, match="empty"):
        read_table(tmp_path / "empty.csv")
    (tmp_path / "head.csv").write_text("a,b\n")
    with pytest.raises(ValueError, match="no rows"):
        read_table(tmp_path / "head.csv")
    with pytest.raises(ValueError, match="does not exist"):
        read_table(tmp_path / "missing.csv")
    with pytest.raises(ValueError, match="as Parquet"):
        read_table(io.BytesIO(b"PAR1 not really"), name="x.parquet")


def test_read_table_refuses_large_files_before_reading(tmp_path):
    big = tmp_path / "big.csv"
    with open(big, "wb") as fh:  # sparse file: no data written, nothing read
        fh.truncate(MAX_FILE_BYTES + 1)
    with pytest.raises(ValueError, match="the limit is 200.0 MB"):
        read_table(big)

    class Upload(io.BytesIO):
        size = 2 * 1024**3
    with pytest.raises(ValueError, match="2.0 GB"):
        read_table(Upload(b"x"), name="huge.csv")


def on_every_plate(plates=300, controls=100, everywhere=("pc",)):
    """A screen whose perturbations ``everywhere`` have one replicate on each of ``plates`` plates of
    ``controls`` controls (JUMP's positive controls), beside a compound on two plates."""
    rows = [("DMSO", f"p{s}") for s in range(plates) for _ in range(controls)]
    rows += [(name, f"p{s}") for name in everywhere for s in range(plates)] + [("a", "p0"), ("a", "p1")]
    X = np.random.default_rng(0).normal(size=(len(rows), 3))
    return pd.DataFrame(rows, columns=["pert", "plate"]).join(pd.DataFrame(X, columns=["f0", "f1", "f2"]))


def test_a_perturbation_past_the_pool_limit_is_named_before_any_draw(monkeypatch):
    """300 replicates, one on each of 300 plates of 100 controls: a pool table of 300 x 30,300 cells,
    past the limit (8,388,608): named, with the way out, in a fraction of a second. Leaving them out
    (``filters=``-like: the rows kept) scores the rest; a table of exactly the limit is scored."""
    import time

    import apnull.score.table.screen as screen
    from apnull.views.score_report import page_words

    table = on_every_plate(everywhere=("pc", "pc2"))
    kw = dict(perturbation="pert", control="DMSO", stratum="plate", permutations=9)
    start = time.perf_counter()
    with pytest.raises(ValueError, match=r"perturbation 'pc' and 1 more past the pool limit: 300 replicates on 300 "
                                         r"strata beside 30,300 pool members, a table of 9,090,000 cells .*drop their rows from "
                                         r"the table \(--where\)$") as caught:
        score_profiles(table, **kw)
    assert "--" not in page_words(str(caught.value))  # the page says it without the command line's flag
    assert time.perf_counter() - start < 5
    kept = score_profiles(table[~table["pert"].str.startswith("pc")], **kw)
    assert kept.groups["pert"].tolist() == ["a"]
    small = on_every_plate(plates=20, controls=5)  # 20 x (20 x 6) = 2,400 cells
    monkeypatch.setattr(screen, "MAX_POOL_CELLS", 2400)
    assert sorted(score_profiles(small, **kw).groups["pert"]) == ["a", "pc"]
    monkeypatch.setattr(screen, "MAX_POOL_CELLS", 2399)
    with pytest.raises(ValueError, match=r"'pc' past the pool limit: 20 replicates on 20 strata beside 120 pool"):
        score_profiles(small, **kw)
    numbered = small.assign(pert=small["pert"].map({"DMSO": 0, "a": 1, "pc": 2}))  # labels read as text
    with pytest.raises(ValueError, match=r"^perturbation '2' past the pool limit: 20 replicates"):
        score_profiles(numbered, **{**kw, "control": "0"})
    with pytest.raises(ValueError, match=r"'ctl' and 1 more past the pool limit: 100 replicates on 20 strata beside "
                                         r"122 pool members"):  # negatives="others": every profile of its plates
        score_profiles(small.assign(pert=small["pert"].where(small["pert"] != "DMSO", "ctl")), **{**kw, "control": None},
                       negatives="others")
