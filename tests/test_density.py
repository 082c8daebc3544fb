import numpy as np
import pytest
from scipy.stats import gaussian_kde

from apnull.density import bw_nrd0, kde, smooth_pmf


def test_bw_nrd0_matches_r_formula():
    x = np.random.default_rng(0).normal(size=1000)
    sd = np.std(x, ddof=1)
    iqr = np.subtract(*np.percentile(x, [75, 25]))
    assert bw_nrd0(x) == pytest.approx(0.9 * min(sd, iqr / 1.34) * 1000 ** -0.2)


def test_bw_nrd0_zero_spread_falls_back():
    assert bw_nrd0(np.full(50, 0.25)) > 0


def test_kde_matches_scipy_gaussian_kde():
    x = np.random.default_rng(1).beta(2, 7, size=5000)
    grid, dens, bw = kde(x, grid=np.linspace(-0.2, 1.2, 701))
    ref = gaussian_kde(x, bw_method=bw / np.std(x, ddof=1))(grid)
    # linear binning on a grid of step 0.002: error well under 1% of the peak
    assert np.max(np.abs(dens - ref)) < 0.01 * ref.max()
    assert np.trapezoid(dens, grid) == pytest.approx(1, abs=1e-3)


def test_smooth_pmf_of_a_point_mass_is_the_kernel():
    grid = np.linspace(0, 1, 1001)
    dens = smooth_pmf([0.5], [1.0], 0.05, grid)
    expected = np.exp(-0.5 * ((grid - 0.5) / 0.05) ** 2) / (0.05 * np.sqrt(2 * np.pi))
    assert np.max(np.abs(dens - expected)) < 1e-6 * expected.max() + 1e-9


def test_kde_of_sample_equals_smoothed_empirical_law():
    x = np.random.default_rng(2).integers(0, 5, size=400) / 4
    grid = np.linspace(0, 1, 201)
    _, d1, bw = kde(x, grid=grid)
    values, counts = np.unique(x, return_counts=True)
    d2 = smooth_pmf(values, counts / x.size, bw, grid)
    assert np.allclose(d1, d2)


def test_kde_rejects_empty():
    with pytest.raises(ValueError, match="no draws"):
        kde([])


# --- the compiled summaries (apnull._kde) against numpy ------------------------------------------
def _numpy_smooth(values, probs, bw, grid):
    """The same linear binning and convolution written with numpy (bincount, np.convolve): an independent
    implementation of apnull.density.smooth_pmf."""
    dx = grid[1] - grid[0]
    bw = max(float(bw), dx / 2)
    pad = int(np.ceil(6 * bw / dx))
    pos = (values - grid[0]) / dx + pad
    size = grid.size + 2 * pad
    left = np.floor(pos).astype(np.int64)
    frac = pos - left
    ok = (left >= 0) & (left < size)
    weights = (np.bincount(left[ok], probs[ok] * (1 - frac[ok]), minlength=size + 1)
               + np.bincount(left[ok] + 1, probs[ok] * frac[ok], minlength=size + 1))
    t = np.arange(-pad, pad + 1) * dx
    kernel = np.exp(-0.5 * (t / bw) ** 2) / (bw * np.sqrt(2 * np.pi))
    return np.convolve(weights[:size], kernel)[pad:pad + size][pad:pad + grid.size]


LENGTHS = [1, 2, 3, 7, 8, 9, 127, 128, 129, 255, 256, 1000, 1003, 20_000, 65_537]


def test_sample_summaries_statistics_equal_numpys():
    """Quartiles, q90, q95 (type 7), mean and SD (ddof = 1) equal numpy's bit for bit, whatever the length
    (numpy's pairwise summation blocks of 128 and their halving), for many samples in one call."""
    from apnull.density import STATS, sample_summaries

    rng = np.random.default_rng(5)
    samples = [rng.random(n) for n in LENGTHS] + [rng.integers(0, 6, 4000) / 5.0]  # ties, as in Precision@R
    _, stats = sample_summaries(samples, np.linspace(0, 1, 101))
    for x, row in zip(samples, stats):
        got = dict(zip(STATS, row))
        assert [got[q] for q in ("q25", "q75", "q90", "q95")] == list(np.quantile(x, [0.25, 0.75, 0.9, 0.95]))
        assert got["mean"] == np.mean(x)
        if x.size > 1:
            assert got["sd"] == np.std(x, ddof=1)
            assert got["bw"] == pytest.approx(0.9 * min(np.std(x, ddof=1), np.subtract(*np.percentile(x, [75, 25]))
                                                        / 1.34) * x.size ** -0.2, rel=1e-15)


def test_sample_summaries_curves_are_the_numpy_kde():
    from apnull.density import STATS, sample_summaries

    rng = np.random.default_rng(6)
    samples = [rng.beta(2, 9, n) for n in (50, 999, 20_000)] + [np.full(30, 0.3), rng.normal(0.5, 2, 500)]
    grid = np.linspace(0, 1, 401)
    curves, stats = sample_summaries(samples, grid)
    for x, curve, row in zip(samples, curves, stats):
        ref = _numpy_smooth(x, np.full(x.size, 1 / x.size), row[STATS.index("bw")], grid)
        np.testing.assert_allclose(curve, ref, rtol=1e-12, atol=1e-12 * ref.max())
    law_values, law_probs = np.array([0.1, 0.25, 0.9, 1.4, -0.3]), np.array([0.2, 0.3, 0.1, 0.2, 0.2])
    np.testing.assert_allclose(smooth_pmf(law_values, law_probs, 0.04, grid),
                               _numpy_smooth(law_values, law_probs, 0.04, grid), rtol=1e-12, atol=1e-12)


def test_sample_summaries_rejects_an_empty_sample_and_a_bad_grid():
    from apnull.density import sample_summaries

    with pytest.raises(ValueError, match="no draws"):
        sample_summaries([np.ones(3), np.empty(0)], np.linspace(0, 1, 5))
    with pytest.raises(ValueError, match="two points"):
        sample_summaries([np.ones(3)], [0.5])
