"""The comparison's test on a crossed screen: the mean difference with a variance clustered by shared plates.

On a crossed screen (JUMP's layout) every compound has replicates on several plates and every plate holds
replicates of many compounds, so all plates are linked into one unit and no swap of whole units exists
(:mod:`.compare`). Swapping the pipelines on one plate cannot be computed either (the two pipelines'
features are not comparable), so there is no randomisation test; the test here is a cluster-robust one.

Model (the question it answers: *plates like these*): perturbation t's difference is
d_t = mu + sum_{p in S_t} a_p + e_t, where S_t are the plates of its replicates, a_p is how much better
B handles plate p than A (random, independent across plates) and e_t the perturbation's own part
(independent across perturbations). Two perturbations are dependent exactly when they share a plate, so
the variance of T = sum_t d_t is ``sum_{t, t'} A_tt' cov(d_t, d_t')`` with A_tt' = 1[S_t and S_t' meet]
(diagonal included). With r = d - mean(d) the residuals:

- the clustered sum Q = sum_{t, t'} A_tt' r_t r_t' (each pair of perturbations sharing at least one plate
  counted once, however many they share; the multi-membership form of a cluster-robust variance); when
  it is below r'r (it has no sign guarantee) r'r is used;
- its bias from centring corrected as CR2 corrects one-way clustering, under a working covariance
  W = s_a K + s_e I (K = Z Z^T, Z the perturbation-by-plate incidence: a common plate variance s_a and
  a perturbation variance s_e, fitted by moments: E r'r = tr(M W M) and E r'Kr = tr(K M W M) with
  M = I - J / P, a negative solution set to 0): V = c max(Q, r'r) with c = 1'W1 / tr(A M W M), so
  E Q = Var(T) when W holds (every trace from Z'Z, Z (Z'1) and A1, never a dense P x P matrix);
- the test of mu = 0 is Student's t with G - 1 degrees of freedom (G plates):
  t = mean(d) / (sqrt(V) / P), p = 2 P(T_{G-1} >= |t|), and the 95% interval
  mean(d) +- t_{0.975, G-1} sqrt(V) / P excludes 0 exactly when p < 0.05.

Every delta equal to 0: p = 1, interval [0, 0]; every delta equal to c != 0 (V = 0): the interval is
[c, c] and p is the smallest double above 0.

It is an asymptotic test (many plates). ``benchmarks/compare_crossed.py`` measures it on JUMP-shaped
pairs of real profiles: see docs/compare.md. Batches of plates processed together share a nuisance that
this model does not see: give such a screen a stratum column naming the batch, not the plate.
"""

from __future__ import annotations

import math

import numpy as np

__all__ = ["crossed_test", "clustered_variance", "shared_plate_sum", "MIN_PLATES"]

#: The fewest plates the clustered test is used with (fewer: no test; its t reference needs many plates).
MIN_PLATES = 10
#: Nonzeros of one block of the perturbation-by-perturbation sharing matrix built at a time.
_BLOCK_NONZEROS = 4_000_000


def _incidence(plates_of: list) -> tuple:
    """(P x G sparse 0/1 incidence of perturbations on plates, G): ``plates_of[t]`` lists t's plates."""
    from scipy import sparse  # here, as scipy.stats below: scipy takes seconds to import; a crossed screen needs it

    names = sorted({p for plates in plates_of for p in plates})
    code = {p: i for i, p in enumerate(names)}
    rows = np.repeat(np.arange(len(plates_of)), [len(set(s)) for s in plates_of])
    cols = np.array([code[p] for s in plates_of for p in sorted(set(s))], dtype=np.int64)
    Z = sparse.csr_matrix((np.ones(cols.size), (rows, cols)), shape=(len(plates_of), len(names)))
    return Z, len(names)


def _shared_times(Z, R) -> np.ndarray:
    """A @ R for A_tt' = 1[rows t and t' of the incidence Z share a plate] (diagonal included), built as
    the pattern of Z Z^T a block of rows at a time (its nonzeros bounded), so a screen of 100,000
    perturbations on 2,000 plates needs no dense P x P matrix."""
    Zt = Z.T.tocsr()
    per_row = max(1, int(np.asarray(Z.sum(axis=1)).max() * max(1, np.asarray(Z.sum(axis=0)).max())))
    step = max(1, _BLOCK_NONZEROS // per_row)
    out = np.empty_like(R, dtype=float)
    for start in range(0, Z.shape[0], step):
        block = (Z[start:start + step] @ Zt).tocsr()
        block.data[:] = 1.0
        out[start:start + step] = block @ R
    return out


def shared_plate_sum(r, plates_of: list) -> float:
    """sum_{t, t'} 1[S_t and S_t' meet] r_t r_t' (diagonal included), ``plates_of[t]`` = S_t."""
    r = np.asarray(r, dtype=float)
    Z, _ = _incidence(plates_of)
    return float(r @ _shared_times(Z, r))


def clustered_variance(r, plates_of: list) -> tuple:
    """(V, Q, c): the bias-corrected clustered variance V = c * max(Q, r'r) of T = sum_t d_t from the
    residuals ``r`` (see the module), Q the clustered sum and c the CR2-like correction."""
    r = np.asarray(r, dtype=float)
    P = r.size
    Z, _ = _incidence(plates_of)
    ones = np.ones(P)
    both = _shared_times(Z, np.column_stack([r, ones]))
    Q, A1 = float(r @ both[:, 0]), both[:, 1]
    n = np.asarray(Z.sum(axis=0)).ravel()                    # perturbations per plate
    ZtZ = (Z.T @ Z).toarray()
    K1 = Z @ n                                              # K 1
    trK, oKo = float(Z.sum()), float(n @ n)                 # tr K = sum of memberships, 1'K1
    trMKM = trK - oKo / P
    trKMKM = float((ZtZ ** 2).sum()) - 2.0 * float(K1 @ K1) / P + oKo ** 2 / P ** 2
    q1, q2 = float(r @ r), float(np.square(Z.T @ r).sum())
    det = trMKM * trMKM - (P - 1) * trKMKM                  # [[trMKM, P-1], [trKMKM, trMKM]] [s_a, s_e] = [q1, q2]
    s_a, s_e = ((q1 * trMKM - (P - 1) * q2) / det, (trMKM * q2 - trKMKM * q1) / det) if det != 0 else (0.0, -1.0)
    if s_a < 0 or s_e < 0:
        s_a, s_e = (0.0, q1 / (P - 1)) if s_a < 0 else (q1 / trMKM, 0.0)
    oAo = float(A1.sum())
    trAMKM = oKo - 2.0 * float(A1 @ K1) / P + oAo * oKo / P ** 2
    trAM = P - oAo / P
    denominator = s_a * trAMKM + s_e * trAM
    c = (s_a * oKo + s_e * P) / denominator if denominator > 0 else 1.0
    return c * max(Q, q1), Q, c


def crossed_test(delta, plates_of: list, level: float = 0.95) -> dict:
    """The clustered test of the mean difference (see the module).

    Parameters
    ----------
    delta : (P,) array
        Each perturbation's difference mAP_b - mAP_a.
    plates_of : list of lists
        The plates (strata, as text) of each perturbation's replicates.
    level : float
        Confidence level of the interval.

    Returns
    -------
    dict
        p_value, ci_low, ci_high, se (the standard error of the mean), df (G - 1), plates (G). With
        fewer than :data:`MIN_PLATES` plates or fewer than 3 perturbations: p_value, interval and se are
        NaN.
    """
    d = np.asarray(delta, dtype=float)
    P = d.size
    _, G = _incidence(plates_of)
    nan = math.nan
    out = dict(p_value=nan, ci_low=nan, ci_high=nan, se=nan, df=max(G - 1, 0), plates=G)
    if G < MIN_PLATES or P < 3:
        return out
    mean = float(d.mean())
    V = clustered_variance(d - mean, plates_of)[0]
    se = math.sqrt(V) / P
    from scipy.stats import t as student_t

    q = float(student_t.ppf(0.5 + level / 2, G - 1))
    if se == 0.0:
        p = 1.0 if mean == 0.0 else float(np.nextafter(0.0, 1.0))
    else:
        p = float(min(1.0, max(2.0 * student_t.sf(abs(mean) / se, G - 1), np.nextafter(0.0, 1.0))))
    out.update(p_value=p, ci_low=mean - q * se, ci_high=mean + q * se, se=se)
    return out
