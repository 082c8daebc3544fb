"""Properties of read_table, score_profiles and ``apnull score`` over generated tables, names and paths."""

import io
import os
import string

import numpy as np
import pandas as pd
import pytest
from hypothesis import HealthCheck, assume, given, settings
from hypothesis import strategies as st

from apnull.cli import main
from apnull.score import atomic_write, read_table, score_profiles

FAST = settings(max_examples=25, deadline=None, suppress_health_check=list(HealthCheck))

#: Label text as a user may write it: digits, dots, signs, letters, spaces, quotes, commas, unicode.
label_text = st.text(alphabet=st.sampled_from(list(string.digits + ".-+eE _,;'\"xyzNAnul") + ["é", "µ", "\t"]),
                     min_size=1, max_size=20).filter(lambda s: s.strip() == s or not s.isspace())
#: Column names: any printable text except line breaks.
column_name = st.text(alphabet=st.characters(blacklist_categories=("Cs", "Cc")), min_size=1, max_size=12)


def _screen(perts, pcol="pert", scol=None, d=3, seed=0, n_ctl=5, control="DMSO"):
    rng = np.random.default_rng(seed)
    labels = [control] * n_ctl + [p for p in perts for _ in range(3)]
    table = pd.DataFrame({pcol: labels})
    if scol is not None:
        table[scol] = "plate1"
    X = rng.normal(size=(len(labels), d))
    for j in range(d):
        table[f"feature_{j}"] = X[:, j]
    return table


@FAST
@given(labels=st.lists(label_text, min_size=1, max_size=6, unique=True), parquet=st.booleans())
def test_labels_round_trip(tmp_path_factory, labels, parquet):
    assume(all(lab.strip() for lab in labels))
    table = pd.DataFrame({"pert": labels, "x": np.arange(len(labels), dtype=float)})
    path = tmp_path_factory.mktemp("rt") / ("t.parquet" if parquet else "t.csv")
    if parquet:
        table.to_parquet(path, index=False)
    else:
        table.to_csv(path, index=False)
    back = read_table(str(path), labels=["pert"])
    assert back["pert"].tolist() == labels
    assert back["x"].tolist() == table["x"].tolist()


@FAST
@given(ids=st.lists(st.integers(min_value=-10**18, max_value=10**18), min_size=2, max_size=5, unique=True))
def test_integer_ids_keep_their_digits(tmp_path_factory, ids):
    text = "pert,x\n" + "".join(f"{i},{k}\n" for k, i in enumerate(ids)) + ",9\n"
    path = tmp_path_factory.mktemp("ids") / "t.csv"
    path.write_text(text)
    back = read_table(str(path), labels=["pert"])
    assert back["pert"].tolist()[:-1] == [str(i) for i in ids] and back["pert"].isna().iat[-1]


@FAST
@given(exponent=st.integers(min_value=-1000, max_value=1000), seed=st.integers(0, 2**32))
def test_power_of_two_scale_changes_nothing(exponent, seed):
    table = _screen(["a", "b", "c"], seed=seed % 1000)
    scaled = table.copy()
    feats = [c for c in table.columns if c.startswith("feature_")]
    scaled[feats] = np.ldexp(table[feats].to_numpy(), exponent)
    for sim in ("cosine", "correlation"):
        a = score_profiles(table, perturbation="pert", similarity=sim, permutations=19, seed=seed).groups
        b = score_profiles(scaled, perturbation="pert", similarity=sim, permutations=19, seed=seed).groups
        pd.testing.assert_frame_equal(a, b)


@FAST
@given(power=st.integers(min_value=-300, max_value=300))
def test_decimal_scale_keeps_cosine_results(power):
    table = _screen(["a", "b", "c"], seed=1)
    scaled = table.copy()
    feats = [c for c in table.columns if c.startswith("feature_")]
    scaled[feats] = table[feats] * 10.0**power
    a = score_profiles(table, perturbation="pert", permutations=19, seed=5).groups
    b = score_profiles(scaled, perturbation="pert", permutations=19, seed=5).groups
    np.testing.assert_allclose(b["mAP"], a["mAP"], rtol=0, atol=1e-12)
    assert b["p_value"].tolist() == a["p_value"].tolist()


@FAST
@given(pcol=column_name, scol=column_name)
def test_any_column_name_works(pcol, scol):
    assume(pcol != scol and not pcol.startswith("feature_") and not scol.startswith("feature_"))
    table = _screen(["a", "b"], pcol=pcol, scol=scol)
    res = score_profiles(table, perturbation=pcol, stratum=scol, permutations=9, seed=0)
    name = res.settings["perturbation_column"]
    assert sorted(res.groups[name]) == ["a", "b"]
    assert len(res.groups.columns) == len(set(res.groups.columns))
    assert len(res.queries.columns) == len(set(res.queries.columns))
    assert res.queries.filter(like=scol).shape[1] >= 1  # the stratum is carried


@FAST
@given(old=st.binary(max_size=200), cut=st.integers(0, 50))
def test_failing_write_leaves_old_file(tmp_path_factory, old, cut):
    folder = tmp_path_factory.mktemp("w")
    target = folder / "out.csv"
    target.write_bytes(old)

    def fail(tmp):
        with open(tmp, "wb") as fh:
            fh.write(b"partial,row\n" * cut)
        raise OSError(28, "No space left on device")

    with pytest.raises(ValueError):
        atomic_write(str(target), fail)
    assert target.read_bytes() == old and os.listdir(folder) == ["out.csv"]


ARGS = st.lists(st.sampled_from([
    "--perturbation", "pert", "--control", "DMSO", "--control", "0", "--stratum", "plate", "--features",
    "^feature", "((", "--similarity", "cosine", "euclidean", "--null", "copairs", "independent",
    "--permutations", "9", "0", "all", "-1", "1e3", "--seed", "9007199254740993", "nan", "--json",
    "--out-queries", "--out-groups", "", " ", "null", "mAP", "--workers", "x", "in.csv", "o.csv"]), max_size=8)


@settings(max_examples=60, deadline=None, suppress_health_check=list(HealthCheck))
@given(argv=ARGS, body=st.sampled_from(["good", "text", "blank", "binary", "header", "nan", "dupcols"]))
def test_no_input_gives_a_traceback(tmp_path_factory, argv, body):
    folder = tmp_path_factory.mktemp("cli")
    path = folder / "in.csv"
    table = _screen(["a", "b"], scol="plate")
    if body == "text":
        table["feature_1"] = table["feature_1"].astype(object)
        table.loc[2, "feature_1"] = "abc"
    if body == "nan":
        table.loc[1, "feature_0"] = np.nan
    if body == "dupcols":
        table.columns = ["pert", "plate", "feature_0", "feature_0", "feature_0"]
    if body == "binary":
        path.write_bytes(bytes(range(256)))
    elif body == "blank":
        path.write_text("")
    elif body == "header":
        path.write_text("pert,plate,feature_0\n")
    else:
        table.to_csv(path, index=False)
    out, err = io.StringIO(), io.StringIO()
    before = path.read_bytes()
    here = os.getcwd()
    os.chdir(folder)  # relative output names land in the test's folder ("in.csv" is the input itself)
    try:
        status = main(["score", "in.csv", *argv], out, err)  # any exception escaping main fails the test
    finally:
        os.chdir(here)
    assert status in (0, 2)
    if status == 2:
        assert err.getvalue().startswith("apnull: error: ") and err.getvalue().count("\n") == 1
    assert path.read_bytes() == before


@settings(max_examples=80, deadline=None, suppress_health_check=list(HealthCheck))
@given(data=st.one_of(st.binary(max_size=300),
                      st.text(alphabet=st.sampled_from(list('a,1.\n"\t;xNA-e ')), max_size=200).map(str.encode)),
       name=st.sampled_from(["t.csv", "t.tsv", "t.parquet", "t.csv.gz", "t"]),
       labels=st.sampled_from([None, ["a"], ["1", "a", "zz"]]))
def test_read_table_reads_or_says_why(data, name, labels):
    try:
        table = read_table(data, name=name, labels=labels)
    except ValueError as exc:
        assert str(exc) and "\n" not in str(exc).strip()
    else:
        assert isinstance(table, pd.DataFrame) and table.shape[0] >= 1
