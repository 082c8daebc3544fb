"""Writes the frozen pycytominer reference that tests/score/test_normalize.py reads (run it by hand).

    pip install pycytominer
    python tests/score/make_pycytominer_reference.py

The raw screen of ``raw_screen.py`` (seed 0, with its NaN cells), and per plate pycytominer's
``normalize(method="mad_robustize")`` against the DMSO wells (``samples="Metadata_Compound == 'DMSO'"``)
and against all wells (``samples="all"``), each written with 17 significant digits. pycytominer is not
imported by the tests: on import it sets a global pandas option (``mode.copy_on_write``) that would
reach every other test of the process. Made with pycytominer 1.7.1.
"""

import pathlib
import sys
import warnings

import pandas as pd

sys.path.insert(0, str(pathlib.Path(__file__).parent))
from raw_screen import FEATURES, META, raw_screen  # noqa: E402

HERE = pathlib.Path(__file__).parent / "data"


def main():
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        from pycytominer import normalize
    raw = raw_screen(seed=0)
    HERE.mkdir(exist_ok=True)
    raw.to_csv(HERE / "raw_screen.csv", index=False, float_format="%.17g")
    for name, samples in (("controls", "Metadata_Compound == 'DMSO'"), ("plate", "all")):
        parts = [normalize(profiles=part, features=list(FEATURES), meta_features=META, samples=samples,
                           method="mad_robustize") for _, part in raw.groupby("Metadata_Plate")]
        out = pd.concat(parts).loc[raw.index, META + list(FEATURES)]
        out.to_csv(HERE / f"raw_screen_pycytominer_{name}.csv", index=False, float_format="%.17g")
    from importlib.metadata import version
    print(f"written with pycytominer {version('pycytominer')} to {HERE}")


if __name__ == "__main__":
    main()
