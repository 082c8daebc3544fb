"""Uploaded tables (apnull.ui.uploads): bounded, and one parse per file whichever page it is uploaded on."""

from pathlib import Path

import numpy as np
import pandas as pd
from streamlit.testing.v1 import AppTest

from apnull.score import digits_pipeline_pair
from apnull.ui import uploads

PAGES = Path(__file__).resolve().parents[1] / "app_pages"


def test_uploads_are_bounded_in_count_and_bytes():
    uploads.UPLOADS.clear()
    big = 50 << 20
    for i in range(30):  # 30 different 50 MB tables
        uploads.UPLOADS.put(f"digest{i}", pd.DataFrame({"x": np.full(big // 8, float(i))}))
        assert len(uploads.UPLOADS) <= uploads.MAX_UPLOADS and uploads.UPLOADS.nbytes <= uploads.MAX_UPLOAD_BYTES
    assert uploads.upload_table("digest29") is not None and uploads.upload_table("digest0") is None
    uploads.UPLOADS.clear()


def test_a_file_uploaded_on_the_score_and_the_compare_page_is_parsed_once(monkeypatch):
    """The same file dropped on the scoring page and as table A of the comparison: one parse, one table
    held, and both pages read that table (the label columns as text on both)."""
    a, b = digits_pipeline_pair()
    file_a = ("a.csv", a.to_csv(index=False).encode(), "text/csv")
    parsed = []
    read = uploads.read_table

    def counting(*args, **kwargs):
        parsed.append(kwargs.get("name"))
        return read(*args, **kwargs)

    monkeypatch.setattr(uploads, "read_table", counting)
    uploads.UPLOADS.clear()
    score = AppTest.from_file(str(PAGES / "score.py"), default_timeout=300)
    score.query_params["sc_data"] = "upload"
    score.run()
    score.file_uploader(key="upload").set_value(file_a).run()
    assert not score.exception and parsed == ["a.csv"] and len(uploads.UPLOADS) == 1
    compare = AppTest.from_file(str(PAGES / "compare.py"), default_timeout=300)
    compare.query_params["cp_data"] = "upload"
    compare.run()
    compare.file_uploader(key="cp_upload_a").set_value(file_a).run()
    compare.file_uploader(key="cp_upload_b").set_value(("b.csv", b.to_csv(index=False).encode(), "text/csv")).run()
    assert not compare.exception and not compare.error, [e.value for e in compare.error]
    assert parsed == ["a.csv", "b.csv"] and len(uploads.UPLOADS) == 2
    (held,) = [t for t in uploads.UPLOADS.values() if "Metadata_perturbation" in t and "half_00" not in t]
    assert held.columns[5] == "px_00" and all(isinstance(v, str) for v in held["Metadata_plate"])  # labels as text
    assert compare.selectbox(key="cp_pert").value == "Metadata_perturbation"
    uploads.UPLOADS.clear()
