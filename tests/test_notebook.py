"""The example notebook, executed as a reader would run it (nbclient, a fresh kernel, an empty folder)."""

from __future__ import annotations

import json
import os
from pathlib import Path

import pytest

nbformat = pytest.importorskip("nbformat")
nbclient = pytest.importorskip("nbclient")
pytest.importorskip("ipykernel")

ROOT = Path(__file__).resolve().parents[1]
NOTEBOOK = ROOT / "docs" / "examples" / "apnull_tour.ipynb"


def test_the_notebook_is_stored_without_outputs():
    nb = nbformat.read(NOTEBOOK, as_version=4)
    nbformat.validate(nb)
    code = [c for c in nb.cells if c.cell_type == "code"]
    assert code and all(not c.outputs and c.execution_count is None for c in code)
    assert "apnull_tour.ipynb" in (ROOT / "README.md").read_text()


@pytest.fixture(scope="module")
def executed(tmp_path_factory):
    """The notebook run in an empty folder (it writes its own files there), with this checkout's package."""
    folder = tmp_path_factory.mktemp("tour")
    nb = nbformat.read(NOTEBOOK, as_version=4)
    env_path = os.environ.get("PYTHONPATH", "")
    os.environ["PYTHONPATH"] = os.pathsep.join(p for p in (str(ROOT / "src"), env_path) if p)
    try:
        nbclient.NotebookClient(nb, timeout=600, kernel_name="python3",
                                resources={"metadata": {"path": str(folder)}}).execute()
    finally:
        os.environ["PYTHONPATH"] = env_path
    return nb, folder


def _outputs(nb, start: str) -> list:
    cells = [c for c in nb.cells if c.cell_type == "code" and start in c.source]
    assert len(cells) == 1, start
    return cells[0].outputs


def _html(outputs) -> str:
    return "".join(o.get("data", {}).get("text/html", "") for o in outputs)


def _figure(outputs) -> dict:
    figs = [o["data"]["application/vnd.plotly.v1+json"] for o in outputs
            if "application/vnd.plotly.v1+json" in o.get("data", {})]
    assert len(figs) == 1
    fig = figs[0]
    return json.loads(fig) if isinstance(fig, str) else fig


@pytest.mark.slow
def test_the_example_notebook_runs_and_shows_each_result(executed):
    nb, folder = executed
    errors = [o for c in nb.cells if c.cell_type == "code" for o in c.outputs if o.output_type == "error"]
    assert not errors, errors
    assert {"screen.csv", "pipeline_a.parquet", "pipeline_b.parquet"} <= {p.name for p in folder.iterdir()}
    score = _html(_outputs(nb, "res = score_profiles"))
    assert "<progress value=" in score and "round 2: " in score and "near the decision line" in score
    assert "active: " in score and "apnull score:" in score and "<table" in score
    volcano = _figure(_outputs(nb, "res.plot()"))
    assert volcano["layout"]["title"]["text"].startswith("Volcano plot")
    assert any(t.get("marker", {}).get("symbol") == "triangle-up" for t in volcano["data"])  # p a bound
    null = _figure(_outputs(nb, 'res.plot_null("digit_3")'))
    assert null["data"][0]["type"] == "bar" and null["layout"]["title"]["text"].startswith("digit_3")
    con = _html(_outputs(nb, "con = score_consistency"))
    assert "consistent: " in con and "target_A" in con
    assert _figure(_outputs(nb, "con.plot()"))["layout"]["title"]["text"].startswith("Consistency")
    cmp = _html(_outputs(nb, "cmp = score_compare"))
    assert "mean delta (B - A)" in cmp and "retrieved at q" in cmp
    assert _figure(_outputs(nb, "cmp.plot()"))["data"]
    counts = _outputs(nb, "two_plates = read_table")[0]["data"]["text/plain"]
    assert "plate_1" in counts and "plate_2" in counts and "plate_3" not in counts
    lookup = "".join(o.get("text", "") for o in _outputs(nb, "m, n = 3, 80"))
    assert "AP needed at p <= 0.05: 0.2373" in lookup
