"""hierarchical_bh: Simes + BH across families, Benjamini-Bogomolov BH inside the selected ones.

Checked against an exact brute force (rational arithmetic: the procedure run at every level where a
decision can change), against statsmodels' BH and a direct Simes, and by properties (row order, the
two stages agreeing, the special cases one row per family and one family)."""

from fractions import Fraction

import numpy as np
import pandas as pd
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from statsmodels.stats.multitest import multipletests

from apnull.score import benjamini_hochberg, hierarchical_bh

NEW = ["stage1_p_value", "stage1_q_value", "stage1_significant", "stage2_q_value", "q_value", "significant"]


# -- references ---------------------------------------------------------------------------------------

def _families_sorted(families):
    """Each family's finite p-values sorted, and the Simes p-value of each family holding one (exact)."""
    ordered = [sorted(x for x in vals if x is not None) for vals in families]
    simes = {f: min(len(v) * x / j for j, x in enumerate(v, 1)) for f, v in enumerate(ordered) if v}
    return ordered, simes


def exact_procedure(families, a, _sorted=None):
    """The two-stage procedure at level ``a`` in exact arithmetic: the set of (family, member) rejected.
    ``families``: lists of Fractions (None for a missing p-value); ``_sorted``: their
    :func:`_families_sorted`, when the caller runs the procedure at many levels."""
    ordered, simes = _sorted or _families_sorted(families)
    F = len(simes)
    s = sorted(simes.values())
    R = max([i for i in range(1, F + 1) if s[i - 1] <= i * a / F], default=0)
    out = set()
    if R == 0:
        return out
    level = a * R / F
    for f, vals in enumerate(families):
        if f not in simes or simes[f] > R * a / F:
            continue
        v = ordered[f]
        k = len(v)
        m = max([j for j in range(1, k + 1) if v[j - 1] <= j * level / k], default=0)
        out |= {(f, i) for i, x in enumerate(vals) if x is not None and m and x <= v[m - 1]}
    return out


def exact_q(families):
    """Each member's smallest level at which :func:`exact_procedure` rejects it, by running the procedure
    at every level where a decision can change (p_(j) k / j * F / r and s_(j) F / r, and 1); also checks
    that rejections only grow with the level."""
    ordered, simes = _families_sorted(families)
    F = len(simes)
    ratios = set()
    for v in ordered:
        ratios |= {len(v) * x / j for j, x in enumerate(v, 1)}
    levels = sorted({r * F / d for r in ratios for d in range(1, F + 1) if r * F / d <= 1}
                    | {r for r in ratios if r <= 1} | {Fraction(1)})
    q, before = {}, set()
    for a in levels:
        now = exact_procedure(families, a, (ordered, simes))
        assert before <= now, "rejections must grow with the level"
        for key in now - before:
            q[key] = a
        before = now
    return q


def direct_simes(p):
    v = np.sort(np.asarray(p, float))
    k = v.size
    return min(k * v[j - 1] / j for j in range(1, k + 1))


def as_table(families):
    rows = [(f"c{f}", x) for f, vals in enumerate(families) for x in vals]
    return pd.DataFrame({"compound": [r[0] for r in rows],
                         "p_value": [np.nan if r[1] is None else float(r[1]) for r in rows]})


P_VALUES = st.one_of(st.sampled_from([0.0, 1e-4, 0.001, 0.004, 0.01, 0.02, 0.05, 0.2, 0.5, 1.0]),
                     st.floats(0, 1), st.floats(0, 0.01))
FAMILIES = st.lists(st.lists(P_VALUES, min_size=1, max_size=5), min_size=1, max_size=4)
FAMILIES_NAN = st.lists(st.lists(st.one_of(P_VALUES, P_VALUES, st.none()), min_size=1, max_size=5),
                        min_size=1, max_size=4)


# -- correctness ---------------------------------------------------------------------------------------

@given(FAMILIES_NAN, st.floats(0.001, 0.5))
@settings(max_examples=80, deadline=None)
def test_q_values_and_decisions_match_exact_brute_force(families, alpha):
    fr = [[None if x is None else Fraction(x) for x in vals] for vals in families]
    q_ref = exact_q(fr)
    out = hierarchical_bh(as_table(families), "compound", alpha=alpha)
    i = 0
    for f, vals in enumerate(families):
        for j, x in enumerate(vals):
            q = out["q_value"].iloc[i]
            if x is None:
                assert np.isnan(q) and not out["significant"].iloc[i]
            else:
                ref = q_ref[(f, j)]
                assert q == pytest.approx(float(ref), rel=1e-12, abs=1e-300)
                if abs(float(ref) - alpha) > 1e-9 * alpha:  # away from the boundary, floats cannot differ
                    assert bool(out["significant"].iloc[i]) == (ref <= Fraction(alpha))
                    assert bool(out["significant"].iloc[i]) == ((f, j) in exact_procedure(fr, Fraction(alpha)))
            i += 1


@given(FAMILIES_NAN, st.floats(0.001, 0.5))
@settings(max_examples=100, deadline=None)
def test_stages_match_statsmodels_and_direct_simes(families, alpha):
    t = as_table(families)
    out = hierarchical_bh(t, "compound", alpha=alpha)
    finite = [(f, [x for x in vals if x is not None]) for f, vals in enumerate(families)]
    finite = [(f, v) for f, v in finite if v]
    simes = np.array([direct_simes(v) for _, v in finite])
    s1q = multipletests(simes, method="fdr_bh")[1] if simes.size else simes
    for (f, v), s, sq in zip(finite, simes, s1q):
        rows = out[out["compound"] == f"c{f}"]
        assert rows["stage1_p_value"].to_numpy() == pytest.approx(np.full(len(rows), s), rel=1e-14, abs=1e-300)
        np.testing.assert_allclose(rows["stage1_q_value"], sq, rtol=1e-12, atol=1e-300)
        ok = rows["p_value"].notna().to_numpy()
        np.testing.assert_allclose(rows["stage2_q_value"].to_numpy()[ok],
                                   multipletests(rows["p_value"].to_numpy()[ok], method="fdr_bh")[1],
                                   rtol=1e-12, atol=1e-300)
    for f, vals in enumerate(families):
        if all(x is None for x in vals):
            rows = out[out["compound"] == f"c{f}"]
            assert rows[["stage1_p_value", "stage1_q_value", "q_value"]].isna().all().all()
            assert not rows["stage1_significant"].any()


@st.composite
def grid_families(draw):
    """(D, families of numerators k of p = k / D, level A): numerators often A D j / k or A D j F / (k r)
    for ranks j <= k (family size) and r <= F (families), where Simes p-values and BH ratios meet A."""
    D = draw(st.sampled_from([20, 100, 1000, 6400, 1_000_000]))
    A = draw(st.sampled_from([Fraction(1, 20), Fraction(1, 10), Fraction(1, 100), Fraction(3, 20)]))
    F = draw(st.integers(1, 4))
    fams = []
    for _ in range(F):
        size = draw(st.integers(1, 5))
        ks = []
        for _ in range(size):
            tie = A * D * draw(st.integers(1, size)) / size * draw(st.integers(1, F)) / draw(st.integers(1, F))
            ks.append(int(tie) if tie.denominator == 1 and tie <= D and draw(st.booleans())
                      else draw(st.integers(0, min(D, int(3 * A * D) + 1))))
        fams.append(ks)
    return D, fams, A


@given(grid_families())
@settings(max_examples=200, deadline=None)
def test_grid_p_values_decided_exactly(case):
    """p-values k / D on a permutation grid, where a Simes p-value, a BH ratio or a q-value often equals
    the level: each q-value is the float of the exact one, and significant is the exact procedure at
    alpha, ties included."""
    D, ks, A = case
    fr = [[Fraction(k, D) for k in vals] for vals in ks]
    q_ref = exact_q(fr)
    chosen = exact_procedure(fr, A)
    out = hierarchical_bh(as_table([[float(x) for x in vals] for vals in fr]), "compound", alpha=float(A))
    i = 0
    for f, vals in enumerate(fr):
        for j, _ in enumerate(vals):
            assert out["q_value"].iloc[i] == float(q_ref[(f, j)])
            assert bool(out["significant"].iloc[i]) == ((f, j) in chosen) == (q_ref[(f, j)] <= A)
            i += 1


def test_families_at_the_level_are_not_lost_to_rounding():
    """Two families, Simes p-values 0.05 (3 p-values of 0.05: 3 * 0.05 / 3) and 0.02: both are selected
    at 0.05 (floats gave 0.05000000000000001 and lost family a, and half of b with it)."""
    t = pd.DataFrame({"compound": ["a"] * 3 + ["b"] * 10, "p_value": [0.05] * 3 + [0.01] * 5 + [0.05] * 5})
    out = hierarchical_bh(t, "compound")
    assert out["stage1_p_value"].iloc[0] == 0.05 and out["stage1_q_value"].iloc[0] == 0.05
    assert out["significant"].all() and out.attrs["hierarchical_bh"]["selected"] == 2
    assert out["q_value"].max() == 0.05


# -- properties ----------------------------------------------------------------------------------------

@given(FAMILIES_NAN, st.floats(0.001, 0.5), st.randoms(use_true_random=False))
@settings(max_examples=100, deadline=None)
def test_row_order_does_not_matter(families, alpha, rnd):
    t = as_table(families)
    perm = list(range(len(t)))
    rnd.shuffle(perm)
    a = hierarchical_bh(t, "compound", alpha=alpha)
    b = hierarchical_bh(t.iloc[perm], "compound", alpha=alpha).loc[a.index]
    pd.testing.assert_frame_equal(a, b)


@given(FAMILIES_NAN, st.floats(0.001, 0.5))
@settings(max_examples=100, deadline=None)
def test_family_decision_never_contradicts_stage_two(families, alpha):
    out = hierarchical_bh(as_table(families), "compound", alpha=alpha)
    fam = out["compound"].to_numpy()
    s1, sig = out["stage1_significant"].to_numpy(), out["significant"].to_numpy()
    for f in set(fam):
        rows = fam == f
        assert len(set(s1[rows])) == 1 and s1[rows][0] == sig[rows].any()
    q, q1 = out["q_value"].to_numpy(), out["stage1_q_value"].to_numpy()
    assert np.all(q[~np.isnan(q)] >= q1[~np.isnan(q)])


@given(FAMILIES, st.lists(st.floats(0.001, 0.9), min_size=2, max_size=6))
@settings(max_examples=80, deadline=None)
def test_rejections_grow_with_alpha(families, alphas):
    t = as_table(families)
    alphas = sorted(alphas)
    outs = [hierarchical_bh(t, "compound", alpha=a) for a in alphas]
    sig = [out["significant"].to_numpy() for out in outs]
    for lo, hi in zip(sig, sig[1:]):
        assert np.all(hi >= lo)
    q = [out["q_value"].to_numpy() for out in outs]
    assert all(np.array_equal(q[0], x) for x in q)  # q-values do not depend on alpha


@given(st.lists(P_VALUES, min_size=1, max_size=30))
@settings(max_examples=100, deadline=None)
def test_one_row_per_family_is_plain_bh(p):
    t = pd.DataFrame({"compound": [f"c{i}" for i in range(len(p))], "p_value": p})
    out = hierarchical_bh(t, "compound")
    np.testing.assert_array_equal(out["q_value"], benjamini_hochberg(p))
    np.testing.assert_array_equal(out["stage1_q_value"], benjamini_hochberg(p))
    np.testing.assert_array_equal(out["stage2_q_value"], np.asarray(p, float))


@given(st.lists(P_VALUES, min_size=1, max_size=30))
@settings(max_examples=100, deadline=None)
def test_one_family_is_its_bh(p):
    t = pd.DataFrame({"compound": "c", "p_value": p})
    out = hierarchical_bh(t, "compound")
    np.testing.assert_array_equal(out["q_value"], benjamini_hochberg(p))
    assert out["stage1_p_value"].iloc[0] == pytest.approx(direct_simes(p), rel=1e-14, abs=1e-300)


@given(FAMILIES, st.integers(1, 4))
@settings(max_examples=60, deadline=None)
def test_nan_rows_and_nan_families_change_nothing_else(families, extra):
    t = as_table(families)
    base = hierarchical_bh(t, "compound")
    nan_rows = pd.DataFrame({"compound": ["c0"] * extra + ["only_nan"] * extra, "p_value": np.nan})
    more = hierarchical_bh(pd.concat([t, nan_rows], ignore_index=True), "compound")
    pd.testing.assert_frame_equal(more.iloc[:len(t)], base, check_like=False)
    assert more.iloc[len(t):]["q_value"].isna().all() and not more.iloc[len(t):]["significant"].any()


# -- behaviour on tables ----------------------------------------------------------------------------------

def test_worked_example_by_hand():
    # a: Simes 3 * 0.001 = 0.003; b: 3 * 0.04 = 0.12; stage 1 (F = 2): q_a = 0.006, q_b = 0.12.
    # alpha = 0.05: R = 1, stage-2 level 0.025; a's within-family q 0.003, 0.03, 0.6 -> only the first.
    t = pd.DataFrame({"compound": list("aaabbb"), "p_value": [0.001, 0.02, 0.6, 0.04, 0.3, 0.9]})
    out = hierarchical_bh(t, "compound")
    np.testing.assert_allclose(out["stage1_p_value"], [0.003] * 3 + [0.12] * 3, rtol=1e-14)
    np.testing.assert_allclose(out["stage1_q_value"], [0.006] * 3 + [0.12] * 3, rtol=1e-14)
    np.testing.assert_allclose(out["stage2_q_value"], [0.003, 0.03, 0.6, 0.12, 0.45, 0.9], rtol=1e-14)
    np.testing.assert_allclose(out["q_value"], [0.006, 0.06, 0.6, 0.12, 0.45, 0.9], rtol=1e-14)
    assert out["significant"].tolist() == [True, False, False, False, False, False]
    assert out.attrs["hierarchical_bh"] == {"alpha": 0.05, "families": 2, "selected": 1, "stage2_level": 0.025,
                                            "by": ["compound"], "p": "p_value"}
    # the second dose (q 0.06) joins at alpha = 0.06, where R is still 1: 0.03 * 2 / 1 = 0.06
    assert hierarchical_bh(t, "compound", alpha=0.06)["significant"].tolist() == [True, True] + [False] * 4


def test_min_p_screen_copairs_would_pass_is_not_selected():
    """The smallest of k p-values is not a p-value: a compound whose best of 6 doses has p = 0.01 among
    100 compounds of uniform-looking doses is not a discovery (Simes 0.06), while min-p BH counts it."""
    rng = np.random.default_rng(3)
    p = rng.uniform(0.2, 1.0, size=(100, 6))
    p[0, 0] = 0.0004  # min-p BH: 0.0004 * 100 = 0.04 <= 0.05; Simes: 6 * 0.0004 = 0.0024, * 100 > 0.05
    t = pd.DataFrame({"compound": np.repeat([f"c{i:03d}" for i in range(100)], 6), "p_value": p.ravel()})
    out = hierarchical_bh(t, "compound")
    assert not out["significant"].any() and not out["stage1_significant"].any()
    assert out["stage1_p_value"].iloc[0] == pytest.approx(0.0024)
    assert multipletests(p.min(axis=1), method="fdr_bh")[0][0]


def test_several_family_columns_compared_as_text():
    t = pd.DataFrame({"cell": ["A", "A", "A", "B", "B", "B"], "compound": ["1", "1", 1, "1", "1", "2"],
                      "dose": [1, 2, 3, 1, 2, 1], "p_value": [0.001, 0.01, 0.02, 0.5, 0.001, 0.3]})
    out = hierarchical_bh(t, ["cell", "compound"])
    # families (as text, as the scoring reads labels): (A, 1) rows 0-2, (B, 1) rows 3-4, (B, 2) row 5
    np.testing.assert_allclose(out["stage1_p_value"], [0.003] * 3 + [0.002] * 2 + [0.3], rtol=1e-14)
    assert out.attrs["hierarchical_bh"]["families"] == 3
    one = t.assign(family=["A1", "A1", "A1", "B1", "B1", "B2"])
    pd.testing.assert_series_equal(out["q_value"], hierarchical_bh(one, "family")["q_value"])
    # a categorical column names the same families
    cat = t.assign(cell=t["cell"].astype("category"))
    pd.testing.assert_series_equal(out["q_value"], hierarchical_bh(cat, ["cell", "compound"])["q_value"])


def test_input_kept_and_clashing_columns_renamed():
    t = pd.DataFrame({"compound": list("aabb"), "dose": [1, 2, 1, 2], "p_value": [0.01, 0.2, 0.03, 0.5],
                      "q_value": [0.04, 0.4, 0.06, 0.5], "significant": [True, False, False, False]})
    before = t.copy()
    out = hierarchical_bh(t, "compound", alpha=0.1)
    pd.testing.assert_frame_equal(t, before)
    assert list(out.columns) == ["compound", "dose", "p_value", "q_value_input", "significant_input"] + NEW
    pd.testing.assert_series_equal(out["q_value_input"], t["q_value"], check_names=False)
    t2 = t.assign(q_value_input=1.0)
    assert "q_value_input_input" in hierarchical_bh(t2, "compound").columns


def test_empty_and_all_nan_tables():
    out = hierarchical_bh(pd.DataFrame({"compound": [], "p_value": []}), "compound")
    assert list(out.columns) == ["compound", "p_value"] + NEW and len(out) == 0
    out = hierarchical_bh(pd.DataFrame({"compound": ["a", "b"], "p_value": [np.nan, np.nan]}), "compound")
    assert out["q_value"].isna().all() and not out["significant"].any()
    assert out.attrs["hierarchical_bh"]["families"] == 0 and out.attrs["hierarchical_bh"]["stage2_level"] == 0.0


def test_nullable_and_integer_p_columns():
    t = pd.DataFrame({"compound": list("aab"), "p_value": pd.array([0.01, None, 0.5], dtype="Float64")})
    out = hierarchical_bh(t, "compound")
    assert np.isnan(out["q_value"].iloc[1]) and out["q_value"].iloc[0] == pytest.approx(0.02)
    ints = hierarchical_bh(pd.DataFrame({"compound": list("ab"), "p_value": [0, 1]}), "compound")
    assert ints["q_value"].tolist() == [0.0, 1.0]


@pytest.mark.parametrize("call, error, text", [
    (lambda t: hierarchical_bh(t.to_dict(), "compound"), TypeError, "DataFrame"),
    (lambda t: hierarchical_bh(t, 3), TypeError, "column name"),
    (lambda t: hierarchical_bh(t, ["compound", 3]), TypeError, "column name"),
    (lambda t: hierarchical_bh(t, []), ValueError, "at least one column"),
    (lambda t: hierarchical_bh(t, ["compound", "compound"]), ValueError, "twice"),
    (lambda t: hierarchical_bh(t, "compond"), ValueError, "did you mean 'compound'"),
    (lambda t: hierarchical_bh(t, "compound", p="pvalue"), ValueError, "did you mean 'p_value'"),
    (lambda t: hierarchical_bh(t, ["compound", "p_value"]), ValueError, "cannot also name"),
    (lambda t: hierarchical_bh(t, "compound", p="label"), TypeError, "must hold numbers.*'x'"),
    (lambda t: hierarchical_bh(t, "compound", p="flag"), TypeError, "must hold numbers"),
    (lambda t: hierarchical_bh(t.assign(p_value=[0.1, 1.5, -0.1]), "compound"), ValueError,
     r"2 value\(s\) outside \[0, 1\] \(0-based rows 1, 2\)"),
    (lambda t: hierarchical_bh(t.assign(p_value=[0.1, np.inf, 0.2]), "compound"), ValueError, "outside"),
    (lambda t: hierarchical_bh(t.assign(compound=["a", None, "b"]), "compound"), ValueError,
     r"'compound' has no value in 1 row\(s\) \(0-based rows 1\)"),
    (lambda t: hierarchical_bh(t, "compound", alpha=0), ValueError, "alpha"),
    (lambda t: hierarchical_bh(t, "compound", alpha=1.5), ValueError, "alpha"),
    (lambda t: hierarchical_bh(t, "compound", alpha="x"), ValueError, "alpha"),
])
def test_bad_input_is_named(call, error, text):
    t = pd.DataFrame({"compound": ["a", "a", "b"], "p_value": [0.1, 0.2, 0.3], "label": ["x", "y", "z"],
                      "flag": [True, False, True]})
    with pytest.raises(error, match=text):
        call(t)


@pytest.mark.slow
def test_on_a_scored_dose_response_screen():
    """score_profiles with perturbation=[compound, dose], then the hierarchy over compounds: the plain BH
    q_value of the groups table is kept as q_value_input."""
    from apnull.score import score_profiles
    from apnull.score.example import digits_null_screen

    screen = digits_null_screen(1, seed=2, controls_per_plate=(12, 12, 12, 12), replicates=3)
    perts = sorted(set(screen["Metadata_perturbation"]) - {"DMSO"})[:24]
    screen = screen[screen["Metadata_perturbation"].isin(perts + ["DMSO"])]
    code = {p: (f"cmp{i // 6}", i % 6 + 1) for i, p in enumerate(perts)}
    pert = screen["Metadata_perturbation"]
    screen = screen.assign(Metadata_compound=[code[p][0] if p in code else "DMSO" for p in pert],
                           Metadata_dose=[code[p][1] if p in code else 0 for p in pert])
    res = score_profiles(screen, perturbation=["Metadata_compound", "Metadata_dose"], control="DMSO",
                         stratum="Metadata_plate", permutations=199, seed=0)
    out = hierarchical_bh(res.groups, "Metadata_compound")
    assert out["Metadata_compound"].nunique() == 4 and len(out) == 24
    assert "q_value_input" in out.columns and "significant_input" in out.columns
    per = out.groupby("Metadata_compound").agg(s1=("stage1_significant", "first"), any2=("significant", "any"))
    assert (per["s1"] == per["any2"]).all()
