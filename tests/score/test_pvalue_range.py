"""Every p-value a command prints is in (0, 1]: consistency's per-query p-values are score's (the exact
law of (m, n), its far tail counted, never 0 or a Monte Carlo floor), BH q-values tie with alpha
exactly, and random small screens (tight clusters included) give no 0 and nothing above 1 in any
table of score, consistency or compare, in the library and in the CLI's JSON."""

import io
import json
import math

import numpy as np
import pandas as pd
import pytest
from hypothesis import HealthCheck, Phase, given, settings
from hypothesis import strategies as st

from apnull.cli import main
from apnull.score import score_compare, score_consistency, score_profiles
from apnull.score.nulls.laws import LawCache


def run(argv):
    out, err = io.StringIO(), io.StringIO()
    status = main([str(a) for a in argv], out=out, err=err)
    assert status == 0, err.getvalue()
    return out.getvalue()


def cluster_screen(replicates=1, seed=0, d=16):
    """20 near-identical perturbations sharing the label T among 200 others with labels of their own."""
    rng = np.random.default_rng(seed)
    base = rng.normal(size=d)
    rows = []
    for i in range(220):
        centre = base if i < 20 else rng.normal(size=d)
        spread = 1e-3 if i < 20 else 0.1
        for _ in range(replicates):
            rows.append({"pert": f"p{i:03d}", "target": "T" if i < 20 else f"U{i}",
                         **{f"f{j}": v for j, v in enumerate(centre + spread * rng.normal(size=d))}})
    return pd.DataFrame(rows)


# -- consistency's per-query p-values are score's ----------------------------------------------------------

@pytest.mark.parametrize("aggregate, replicates, m, n", [("median", 1, 19, 200), ("none", 2, 39, 400)])
def test_consistency_query_pvalues_are_scores_counted_tail(aggregate, replicates, m, n):
    res = score_consistency(cluster_screen(replicates), "pert", "target", aggregate=aggregate, permutations=99)
    q = res.queries[res.queries["target"] == "T"]
    assert (q["m"] == m).all() and (q["n"] == n).all() and (q["ap"] == 1.0).all()
    exact = 1 / math.comb(m + n, m)  # P(AP = 1): the only placement reaching it
    assert (q["p_value"] > 0).all()
    np.testing.assert_allclose(q["p_value"], exact, rtol=1e-6)
    assert (q["p_value"] == LawCache(0).query_pvalue(m, n, 1.0)).all()  # score's own per-query p-value


def test_consistency_cli_prints_the_counted_tail(tmp_path):
    path = tmp_path / "cluster.csv"
    cluster_screen().to_csv(path, index=False)
    out = json.loads(run(["consistency", path, "--perturbation", "pert", "--annotation", "target",
                          "--permutations", 99, "--out-queries", tmp_path / "q.csv", "--json"]))
    p = [r["p_value"] for r in out["queries"] if r["target"] == "T"]
    assert len(p) == 20 and all(v == pytest.approx(1 / math.comb(219, 19), rel=1e-6) for v in p)
    written = pd.read_csv(tmp_path / "q.csv")
    assert (written.loc[written["target"] == "T", "p_value"] > 0).all()


# -- BH ties with alpha in the CLI ---------------------------------------------------------------------------

def test_cli_bh_q_values_tie_with_alpha_exactly(tmp_path):
    """Three queries with exact-law p-values 0.01, 0.04, 0.05 (one relevant item of 100 at ranks 1, 4, 5):
    q-values 0.03, 0.05, 0.05, not 0.05000000000000001."""
    rows = [{"query": q, "item": f"i{i}", "score": 100 - i, "relevant": int(i + 1 == r)}
            for q, r in [("q1", 1), ("q2", 4), ("q3", 5)] for i in range(100)]
    path = tmp_path / "rankings.csv"
    pd.DataFrame(rows).to_csv(path, index=False)
    out = json.loads(run(["score", path, "--json"]))
    assert [r["p_value"] for r in out["queries"]] == [0.01, 0.04, 0.05]
    assert [r["q_value"] for r in out["queries"]] == [0.03, 0.05, 0.05]


# -- the property: every p-value printed is in (0, 1] ----------------------------------------------------------

NO_SHRINK = (Phase.explicit, Phase.reuse, Phase.generate)  # a whole run per example: report, do not shrink
P_COLUMN_WORDS = ("p_value", "q_value", "corrected_p")


def p_columns(frame):
    """The columns holding p- or q-values (not the flags such as p_value_bound)."""
    return [c for c in frame.columns if any(w in str(c) for w in P_COLUMN_WORDS)
            and pd.api.types.is_float_dtype(frame[c])]


def assert_in_range(values, where):
    v = np.asarray([x for x in values if x is not None], dtype=float)
    v = v[~np.isnan(v)]
    assert ((v > 0) & (v <= 1)).all(), f"{where}: {v[(v <= 0) | (v > 1)]}"


def check_frame(frame, where):
    for c in p_columns(frame):
        assert_in_range(frame[c].to_numpy(dtype=float), f"{where}.{c}")


def check_json(obj, where="json"):
    if isinstance(obj, dict):
        for k, v in obj.items():
            if isinstance(v, float) and any(w in k for w in P_COLUMN_WORDS):
                assert_in_range([v], f"{where}.{k}")
            else:
                check_json(v, f"{where}.{k}")
    elif isinstance(obj, list):
        for x in obj:
            check_json(x, where)


@st.composite
def small_screens(draw):
    """A screen of 3-4 perturbations x 2-3 replicates and 3-6 controls on each of 1-2 plates; some
    perturbations a tight cluster (replicates equal up to 1e-9), the rest noise; the first two share a
    target, the others have their own."""
    rng = np.random.default_rng(draw(st.integers(0, 2 ** 16)))
    plates = draw(st.integers(1, 2))
    P = draw(st.integers(3, 4))
    k = draw(st.integers(2, 3))
    tight = draw(st.lists(st.booleans(), min_size=P, max_size=P))
    d = 5
    rows = []
    for pl in range(plates):
        for c in range(draw(st.integers(3, 6))):
            rows.append(("DMSO", f"plate{pl}", "", rng.normal(size=d)))
    for t in range(P):
        centre = rng.normal(size=d) * 3
        for r in range(k):
            x = centre + (1e-9 if tight[t] else 1.0) * rng.normal(size=d)
            rows.append((f"pert{t}", f"plate{r % plates}", f"target{0 if t < 2 else t}", x))
    return pd.DataFrame([{"well": f"w{i}", "Metadata_pert": p, "Metadata_plate": pl, "Metadata_target": tg,
                          **{f"f{j}": v for j, v in enumerate(x)}} for i, (p, pl, tg, x) in enumerate(rows)])


@given(small_screens(), st.sampled_from([19, "auto"]))
@settings(max_examples=6, deadline=None, suppress_health_check=[HealthCheck.too_slow], phases=NO_SHRINK)
def test_every_p_value_of_every_table_is_in_0_1(screen, permutations):
    run_kw = dict(permutations=permutations, seed=1)
    res = score_profiles(screen, "Metadata_pert", "DMSO", stratum="Metadata_plate", features="^f", **run_kw)
    check_frame(res.groups, "score.groups")
    check_frame(res.queries, "score.queries")
    cons = score_consistency(screen, "Metadata_pert", "Metadata_target", control="DMSO", features="^f", **run_kw)
    check_frame(cons.labels, "consistency.labels")
    check_frame(cons.queries, "consistency.queries")
    other = screen.copy()
    other["f0"] = other["f0"] + np.random.default_rng(5).normal(size=len(other))
    cmp = score_compare(screen, other, key="well", perturbation="Metadata_pert", stratum="Metadata_plate",
                        features_a="^f", features_b="^f", **run_kw)
    check_frame(cmp.groups, "compare.groups")
    check_json(cmp.summary, "compare.summary")


@given(small_screens())
@settings(max_examples=3, deadline=None, suppress_health_check=[HealthCheck.too_slow], phases=NO_SHRINK)
def test_every_p_value_of_every_cli_json_is_in_0_1(screen):
    import tempfile
    from pathlib import Path

    with tempfile.TemporaryDirectory() as tmp:
        a, b = Path(tmp) / "a.csv", Path(tmp) / "b.csv"
        screen.to_csv(a, index=False)
        other = screen.copy()
        other["f1"] = -other["f1"]
        other.to_csv(b, index=False)
        common = ["--permutations", 19, "--features", "^f"]
        check_json(json.loads(run(["score", a, "--perturbation", "Metadata_pert", "--control", "DMSO", "--stratum",
                                   "Metadata_plate", *common, "--json"])), "score")
        check_json(json.loads(run(["consistency", a, "--perturbation", "Metadata_pert", "--annotation",
                                   "Metadata_target", "--control", "DMSO", *common, "--json"])), "consistency")
        check_json(json.loads(run(["compare", a, b, "--key", "well", "--perturbation", "Metadata_pert", "--control",
                                   "DMSO", "--stratum", "Metadata_plate", "--permutations", 19, "--features-a", "^f",
                                   "--features-b", "^f", "--json"])), "compare")
