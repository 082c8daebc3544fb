"""The bundled digits: the same numbers as scikit-learn's load_digits, and the examples run without it."""

from __future__ import annotations

import subprocess
import sys
import textwrap
from pathlib import Path

import numpy as np
import pytest

from apnull.score.example import load_digits_arrays

ROOT = Path(__file__).resolve().parents[2]

#: Makes ``import sklearn`` (and any of its submodules) fail, as on an install without scikit-learn.
BLOCKER = textwrap.dedent("""
    import importlib.abc, sys
    class NoSklearn(importlib.abc.MetaPathFinder):
        def find_spec(self, name, path=None, target=None):
            if name == "sklearn" or name.startswith("sklearn."):
                raise ModuleNotFoundError(f"No module named {name!r} (blocked by the test)")
            return None
    sys.meta_path.insert(0, NoSklearn())
""")


def test_the_bundled_digits_equal_load_digits():
    sklearn_datasets = pytest.importorskip("sklearn.datasets")
    ref = sklearn_datasets.load_digits()
    X, y = load_digits_arrays()
    assert X.dtype == ref.data.dtype and y.dtype == ref.target.dtype
    assert X.shape == (1797, 64) and y.shape == (1797,)
    np.testing.assert_array_equal(X, ref.data)
    np.testing.assert_array_equal(y, ref.target)


def test_each_call_gives_fresh_writable_arrays():
    X1, _ = load_digits_arrays()
    X1[0, 0] = -1.0  # a caller's change stays in its own copy
    X2, _ = load_digits_arrays()
    assert X2[0, 0] != -1.0


def test_the_pyproject_ships_the_data_file():
    text = (ROOT / "pyproject.toml").read_text()
    assert '"apnull.score" = ["data/*.npz"]' in text
    assert (ROOT / "src" / "apnull" / "score" / "data" / "digits.npz").exists()
    main = text.split("[project.optional-dependencies]")[0]
    assert "scikit-learn" not in main  # the main dependencies do not name it


def test_the_examples_run_with_scikit_learn_unimportable():
    code = BLOCKER + textwrap.dedent("""
        try:
            import sklearn  # noqa: F401
        except ImportError:
            pass
        else:
            raise SystemExit("the blocker did not block")
        import apnull, apnull.score
        from apnull.score import digits_example, digits_pipeline_pair, digits_screen
        from apnull.score.example import digits_mixed_screen
        shapes = [digits_example().shape, digits_screen().shape, digits_mixed_screen(3).shape,
                  *(t.shape for t in digits_pipeline_pair())]
        assert not any(m == "sklearn" or m.startswith("sklearn.") for m in sys.modules)
        print(shapes)
    """)
    done = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=120)
    assert done.returncode == 0, done.stderr[-2000:]
    from apnull.score import digits_example, digits_pipeline_pair, digits_screen
    from apnull.score.example import digits_mixed_screen
    here = [digits_example().shape, digits_screen().shape, digits_mixed_screen(3).shape,
            *(t.shape for t in digits_pipeline_pair())]
    assert done.stdout.strip() == str(here)
