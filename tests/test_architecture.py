"""The layering rule of docs/ARCHITECTURE.md, checked on the source: arrows run one way.

pages -> ui -> (views, plots) -> core; cli -> core; score and rendle are core-level packages. Core
imports none of views, plots, ui, cli; views import neither plots nor streamlit nor plotly; plots
import no streamlit, no views; nothing but ui imports streamlit. Every module stays under 400 lines.
"""

from __future__ import annotations

import ast
from pathlib import Path

import pytest

SRC = Path(__file__).resolve().parents[1] / "src" / "apnull"
LAYERS = ("views", "plots", "ui", "cli")
MAX_LINES = 400


def _modules():
    for path in sorted(SRC.rglob("*.py")):
        yield path.relative_to(SRC), path


def _layer(rel: Path) -> str:
    return rel.parts[0] if len(rel.parts) > 1 and rel.parts[0] in LAYERS + ("score",) else "core"


def _imports(rel: Path, path: Path) -> set[str]:
    """Fully qualified names imported by a module (relative imports resolved against apnull)."""
    package = ["apnull", *rel.parts[:-1]]
    out = set()
    for node in ast.walk(ast.parse(path.read_text())):
        if isinstance(node, ast.Import):
            out.update(alias.name for alias in node.names)
        elif isinstance(node, ast.ImportFrom):
            if node.level:
                base = package[: len(package) - node.level + 1]
                mod = ".".join(base + ([node.module] if node.module else []))
                out.add(mod)
                if not node.module:
                    out.update(f"{mod}.{alias.name}" for alias in node.names)
            else:
                out.add(node.module)
    return out


def _targets(names: set[str]) -> set[str]:
    """The apnull layers and the outside frameworks a set of imports reaches."""
    hit = set()
    for name in names:
        parts = name.split(".")
        if parts[0] == "apnull" and len(parts) > 1 and parts[1] in LAYERS + ("score",):
            hit.add(parts[1])
        elif parts[0] in ("streamlit", "plotly"):
            hit.add(parts[0])
    return hit


FORBIDDEN = {
    "core": {"views", "plots", "ui", "cli", "score", "streamlit", "plotly"},
    "score": {"views", "plots", "ui", "cli", "streamlit", "plotly"},
    "views": {"plots", "ui", "cli", "streamlit", "plotly"},
    "plots": {"views", "ui", "cli", "streamlit"},
    "cli": {"views", "plots", "ui", "streamlit", "plotly"},
    "ui": {"cli"},
}


@pytest.mark.parametrize("rel, path", list(_modules()), ids=lambda x: str(x) if isinstance(x, Path) else "")
def test_arrows_run_one_way(rel, path):
    layer = _layer(rel)
    bad = _targets(_imports(rel, path)) & FORBIDDEN[layer]
    assert not bad, f"{rel} ({layer}) imports {sorted(bad)}"


@pytest.mark.parametrize("rel, path", list(_modules()), ids=lambda x: str(x) if isinstance(x, Path) else "")
def test_modules_stay_small(rel, path):
    lines = len(path.read_text().splitlines())
    assert lines < MAX_LINES, f"{rel} has {lines} lines"


def test_pages_import_no_private_helpers():
    pages = Path(__file__).resolve().parents[1] / "app_pages"
    for path in pages.glob("*.py"):
        for name in _imports(Path(path.name), path):
            assert not any(part.startswith("_") and part != "__future__" for part in name.split(".")), (path.name, name)
