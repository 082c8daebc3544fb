"""The layering rule of docs/ARCHITECTURE.md, checked on the source: arrows run one way.

pages -> ui -> (views, plots) -> core; cli -> core; score and rendle are core-level packages;
``apnull/__main__.py`` is the command's entry (a cli module). Core imports none of views, plots, ui,
cli; views import neither plots nor streamlit nor plotly; plots import no streamlit, no views; nothing
but ui imports streamlit. Every module stays under 400 lines; ``apnull.score`` keeps at most 16
modules at its top (the rest in its stage packages), and its stages import downward only
(``SCORE_STAGES``: kernels, table, engine, nulls, results, then the public modules). No module
(library or page) takes another module's private name: no ``from x import _y`` (a package's own
private modules excepted: ``from . import _kernels`` inside a package holding ``_kernels.py``), no
name from a private module outside the importing module's own package (``from .._kernels import
uniform``, ``from _plotly_utils.utils import ...``), no ``import x._y`` from outside x's package, no
``module._y`` on an imported module. No two modules import each other, directly or through others
(an import circle). No two modules define the same public
function or class. Only the kernels' own
modules take a kernel compiled by ``apnull.compiled.inner`` (Python cannot call one).
"""

from __future__ import annotations

import ast
import functools
from pathlib import Path

import pytest

SRC = Path(__file__).resolve().parents[1] / "src" / "apnull"
PAGES = Path(__file__).resolve().parents[1] / "app_pages"
LAYERS = ("views", "plots", "ui", "cli", "notebook")
MAX_LINES = 400
#: The private names a module may take from a library it extends (see the module docstring).
EXTENDS = {"apnull/compiled.py": ["from numba import _dynfunc", "caching.CacheImpl._locator_classes",
                                   "from numba.core.serialize import _numba_unpickle"]}
#: The one import up the layers: a result's ``plot()`` reaches the figures of ``apnull.notebook`` when it is
#: called, from inside a function (so ``import apnull.score`` never loads plotly, and the circle it closes,
#: figures -> views -> score -> display, is never walked while modules load). Module -> the names it may import.
DEFERRED = {Path("score/results/display.py"): {"apnull.notebook.figures"}}


@functools.cache
def _parse(source: str) -> ast.Module:
    """A module's syntax tree, parsed once per session: the checks below walk each module several times."""
    return ast.parse(source)


@functools.cache
def _walk(source: str) -> tuple[ast.AST, ...]:
    """Every node of ``source``'s tree (``ast.walk``), listed once per session."""
    return tuple(ast.walk(_parse(source)))


def _modules():
    for path in sorted(SRC.rglob("*.py")):
        yield path.relative_to(SRC), path


def _layer(rel: Path) -> str:
    if rel == Path("__main__.py"):  # ``python -m apnull``: the command's entry
        return "cli"
    return rel.parts[0] if len(rel.parts) > 1 and rel.parts[0] in LAYERS + ("score",) else "core"


def _imports(rel: Path, path: Path, deferred: bool = False) -> set[str]:
    """Fully qualified names imported by a module (relative imports resolved against apnull); the
    :data:`DEFERRED` ones left out unless ``deferred``."""
    package = ["apnull", *rel.parts[:-1]]
    out = set()
    for node in _walk(path.read_text()):
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
    return out if deferred else out - DEFERRED.get(rel, set())


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
    "core": {"views", "plots", "ui", "cli", "score", "notebook", "streamlit", "plotly"},
    "score": {"views", "plots", "ui", "cli", "notebook", "streamlit", "plotly"},
    "views": {"plots", "ui", "cli", "notebook", "streamlit", "plotly"},
    "plots": {"views", "ui", "cli", "notebook", "streamlit"},
    "cli": {"views", "plots", "ui", "notebook", "streamlit", "plotly"},
    "ui": {"cli"},
    "notebook": {"ui", "cli", "streamlit"},
}


def test_the_deferred_imports_sit_inside_functions():
    """Each :data:`DEFERRED` import is made inside a function, never while the module loads, and is there."""
    for rel, names in DEFERRED.items():
        tree = _parse((SRC / rel).read_text())
        top = _imports(rel, SRC / rel, deferred=True) - _imports(rel, SRC / rel)
        assert top == names, (rel, top)
        for node in tree.body:  # module level: no import of a deferred name
            for sub in ast.walk(node) if not isinstance(node, (ast.FunctionDef, ast.ClassDef)) else ():
                if isinstance(sub, ast.ImportFrom):
                    assert "notebook" not in (sub.module or ""), (rel, sub.lineno)
        for cls in (n for n in tree.body if isinstance(n, ast.ClassDef)):
            for sub in ast.walk(cls):
                if isinstance(sub, ast.ImportFrom) and "notebook" in (sub.module or ""):
                    assert any(sub in list(ast.walk(f)) for f in cls.body if isinstance(f, ast.FunctionDef))


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


def _private(name: str) -> bool:
    return name.startswith("_") and not name.startswith("__")


def _private_uses(path: Path, package: list[str]) -> list[str]:
    """Private names a module takes from other modules (see the module docstring for what is allowed)."""
    tree = _parse(path.read_text())
    bad, imported = [], set()
    for node in ast.walk(tree):
        if isinstance(node, ast.ImportFrom):
            parts = (node.module or "").split(".")
            own = node.level == 1 and len(parts) == 1  # ``from ._kernels import x``: this package's own module
            if any(_private(p) for p in parts) and not own and parts != ["__future__"]:
                bad.append(f"from {'.' * node.level}{node.module} import ...")
            for alias in node.names:
                imported.add(alias.asname or alias.name)
                if not _private(alias.name):
                    continue
                sibling_module = (node.level == 1 and node.module is None and package
                                  and (path.parent / f"{alias.name}.py").exists())
                if not sibling_module:
                    bad.append(f"from {'.' * node.level}{node.module or ''} import {alias.name}")
        elif isinstance(node, ast.Import):
            for alias in node.names:
                parts = alias.name.split(".")
                imported.add(alias.asname or parts[0])
                private = [i for i, part in enumerate(parts) if _private(part)]
                if private and parts[: private[0]] != package:
                    bad.append(f"import {alias.name}")
    for node in ast.walk(tree):
        if isinstance(node, ast.Attribute) and _private(node.attr):
            root, chain = node.value, []
            while isinstance(root, ast.Attribute):  # ``module.Class._name`` too
                chain.append(root.attr)
                root = root.value
            if isinstance(root, ast.Name) and root.id in imported:
                bad.append(f"{'.'.join([root.id, *reversed(chain), node.attr])} (line {node.lineno})")
    return bad


def _all_sources():
    for rel, path in _modules():
        yield str(Path("apnull") / rel), path, ["apnull", *rel.parts[:-1]]
    for path in sorted(PAGES.glob("*.py")):
        yield f"app_pages/{path.name}", path, []


@pytest.mark.parametrize("name, path, package", list(_all_sources()),
                         ids=lambda x: x if isinstance(x, str) else "")
def test_no_module_takes_another_modules_private_name(name, path, package):
    taken = [use for use in _private_uses(path, package) if use.split(" (line")[0] not in EXTENDS.get(name, [])]
    assert not taken, f"{name} takes private names: {taken}"


def test_the_private_name_check_catches_each_form(tmp_path):
    (tmp_path / "_kernels.py").write_text("")
    cases = {
        "from .hypergeom import _pmf": 1,
        "import numba\nnumba.core.caching._x": 1,
        "from . import _kernels": 0,
        "from . import _missing": 1,
        "import apnull._kernels": 1,
        "from . import ranks\nranks._check_n(3)": 1,
        "from .ranks import check_n": 0,
        "from ._kernels import floyd": 0,
        "from .._kernels import uniform": 1,
        "from ..score._kernels import evaluate": 1,
        "from _plotly_utils.utils import to_typed_array_spec": 1,
        "import _plotly_utils.utils": 1,
    }
    for source, expected in cases.items():
        path = tmp_path / "mod.py"
        path.write_text(source)
        assert len(_private_uses(path, ["apnull", "score"])) == expected, source


SCORE_TOP_MODULES = 16


def test_the_score_package_shows_its_stages():
    """At most 16 modules directly in ``apnull.score``: the rest lives in its stage packages."""
    top = sorted(p.name for p in (SRC / "score").glob("*.py"))
    assert len(top) <= SCORE_TOP_MODULES, top
    for stage in ("table", "kernels", "nulls", "engine", "results"):
        assert (SRC / "score" / stage / "__init__.py").exists(), stage


#: The stages of ``apnull.score`` in import order, lowest first: a module of a stage imports from its own
#: stage and those below it only; the public modules at the top of the package (``profiles``,
#: ``consistency``, ...) come after every stage. ``kernels`` (compiled code) imports no stage;
#: ``table`` holds the helpers the stages above share (``segments``, ``names``, ``memory``).
SCORE_STAGES = ("kernels", "table", "engine", "nulls", "results")


def _score_stage(module: list) -> int | None:
    """The rank of the score stage of a module given as its dotted parts (``["apnull", "score",
    "table", "perts"]``): its index in :data:`SCORE_STAGES`, ``len(SCORE_STAGES)`` for the package's top
    (its own modules and ``__init__``), None outside ``apnull.score``."""
    if module[:2] != ["apnull", "score"]:
        return None
    if len(module) > 2 and module[2] in SCORE_STAGES:
        return SCORE_STAGES.index(module[2])
    return len(SCORE_STAGES)


def _back_arrows(rel: Path, names: set[str]) -> list:
    """The imports of module ``rel`` (under apnull) that reach a score stage above its own."""
    own = _score_stage(["apnull", *rel.with_suffix("").parts])
    if own is None:
        return []
    return sorted(n for n in names if (_score_stage(n.split(".")) or 0) > own)


@pytest.mark.parametrize("rel, path", [m for m in _modules() if m[0].parts[0] == "score"],
                         ids=lambda x: str(x) if isinstance(x, Path) else "")
def test_score_stages_import_downward(rel, path):
    """No module of ``apnull.score`` imports from a stage above its own (:data:`SCORE_STAGES`)."""
    assert not _back_arrows(rel, _imports(rel, path)), f"{rel} imports {_back_arrows(rel, _imports(rel, path))}"


def test_the_stage_check_finds_a_back_arrow():
    table = Path("score/table/keys.py")
    assert _back_arrows(table, {"apnull.score.results.outputs"}) == ["apnull.score.results.outputs"]
    assert _back_arrows(table, {"apnull.score.engine.executor", "apnull.score.profiles"}) == [
        "apnull.score.engine.executor", "apnull.score.profiles"]
    assert _back_arrows(table, {"apnull.score.kernels.sort", "apnull.score.table.names", "apnull.law"}) == []
    assert _back_arrows(Path("score/results/tables.py"), {"apnull.score.nulls.laws"}) == []
    assert _back_arrows(Path("score/profiles.py"), {"apnull.score.results.tables", "apnull.score"}) == []


def _module_of(name: str):
    """The source file of the apnull module ``name`` (a package's ``__init__``), or None."""
    parts = name.split(".")
    if parts[0] != "apnull":
        return None
    base = SRC.joinpath(*parts[1:])
    if base.with_suffix(".py").exists():
        return base.with_suffix(".py")
    if (base / "__init__.py").exists():
        return base / "__init__.py"
    return None


def _import_graph() -> dict:
    graph = {}
    for rel, path in _modules():
        targets = set()
        for name in _imports(rel, path):
            target = _module_of(name)
            if target is not None and target != path:
                targets.add(target)
        graph[path] = targets
    return graph


def _circles(graph: dict) -> list:
    """Strongly connected sets of more than one module (Tarjan)."""
    index, low, stack, on, out, counter = {}, {}, [], set(), [], [0]

    def visit(v):
        index[v] = low[v] = counter[0]
        counter[0] += 1
        stack.append(v)
        on.add(v)
        for w in graph.get(v, ()):
            if w not in index:
                visit(w)
                low[v] = min(low[v], low[w])
            elif w in on:
                low[v] = min(low[v], index[w])
        if low[v] == index[v]:
            comp = []
            while True:
                w = stack.pop()
                on.discard(w)
                comp.append(w)
                if w == v:
                    break
            if len(comp) > 1:
                out.append(sorted(str(p.relative_to(SRC)) if p.is_absolute() else str(p) for p in comp))

    for v in list(graph):
        if v not in index:
            visit(v)
    return out


def test_no_import_circles():
    """No module imports itself back through others (imports inside functions count too)."""
    graph = {path: {t for t in targets if t.name != "__init__.py" or t.parent != path.parent}
             for path, targets in _import_graph().items()}
    assert not _circles(graph), _circles(graph)


def test_the_circle_check_finds_a_circle():
    a, b, c = Path("a.py"), Path("b.py"), Path("c.py")
    assert _circles({a: {b}, b: {c}, c: {a}}) == [["a.py", "b.py", "c.py"]]
    assert _circles({a: {b}, b: {c}, c: set()}) == []


def _inner_kernels() -> dict[str, Path]:
    """The kernels compiled by ``apnull.compiled.inner`` (no Python entry), by name: their module."""
    found = {}
    for rel, path in _modules():
        for node in _parse(path.read_text()).body:
            if isinstance(node, ast.FunctionDef) and any(
                    isinstance(d, ast.Call) and getattr(d.func, "id", None) == "inner" for d in node.decorator_list):
                found[node.name] = rel
    return found


def _inner_uses(source: str, inner: dict[str, str]) -> list[str]:
    """Where a module's source takes an inner kernel: ``from <its module> import <kernel>``, or
    ``<alias>.<kernel>`` on a name bound to its module (``inner``: kernel name -> module's last part)."""
    homes = set(inner.values())
    aliases, found = {}, []
    for node in _walk(source):
        if isinstance(node, ast.ImportFrom):
            last = (node.module or "").rsplit(".", 1)[-1]
            for a in node.names:
                if a.name in inner and inner[a.name] == last:
                    found.append(f"imports {a.name}")
                elif a.name in homes:
                    aliases[a.asname or a.name] = a.name
        elif isinstance(node, ast.Import):
            for a in node.names:
                if a.name.rsplit(".", 1)[-1] in homes and a.asname:
                    aliases[a.asname] = a.name.rsplit(".", 1)[-1]
    for node in _walk(source):
        if (isinstance(node, ast.Attribute) and isinstance(node.value, ast.Name) and node.attr in inner
                and aliases.get(node.value.id) == inner[node.attr]):
            found.append(f"takes {node.value.id}.{node.attr}")
    return found


def test_inner_kernels_are_called_by_kernels_only():
    """Calling an ``inner`` kernel from Python crashes the interpreter, so only modules of kernels (those
    that take ``apnull.compiled``'s decorators) take one; tests reach one through
    ``score_helpers.from_python``."""
    inner = {name: rel.stem for name, rel in _inner_kernels().items()}
    assert {"evaluate", "pool_layout", "draw_distinct"} <= set(inner)
    compiled = {rel for rel, path in _modules() if any(
        isinstance(n, ast.ImportFrom) and (n.module or "").endswith("compiled") for n in _walk(path.read_text()))}
    for rel, path in [*_modules(), *((p.relative_to(PAGES.parent), p) for p in PAGES.rglob("*.py"))]:
        if rel not in compiled:
            assert not _inner_uses(path.read_text(), inner), (rel, _inner_uses(path.read_text(), inner))


def test_the_crossed_entries_compile_their_once_a_pool_steps_once():
    """The crossed entries' steps that run once a pool, a query row or a query (not once a draw) are inner
    kernels, typed and lowered once, not IR-copied into each entry and call site (numba's copy of
    ``law_count`` alone cost seconds of a first run; docs/benchmarks.md, first run of the crossed layout)."""
    inner = _inner_kernels()
    once = {"crossed_pool": "filled.py", "quotients": "filled.py", "query_row": "lookups.py",
            "law_count": "querylaw.py", "pool_layout": "pool.py", "know_all": "lookups.py", "fill_all": "lookups.py"}
    assert {name: inner.get(name, Path("not inner")).name for name in once} == once


def test_the_inner_kernel_check_catches_each_form():
    inner = {"evaluate": "pool", "draw_distinct": "streams"}
    assert _inner_uses("from apnull.score.kernels.pool import evaluate", inner) == ["imports evaluate"]
    assert _inner_uses("from ..kernels import pool as P\nP.evaluate(1)", inner) == ["takes P.evaluate"]
    assert _inner_uses("import apnull.streams as S\nS.draw_distinct(1)", inner) == ["takes S.draw_distinct"]
    assert _inner_uses("from apnull import streams\nstreams.draw_distinct(1)", inner) == ["takes streams.draw_distinct"]
    assert _inner_uses("from ..kernels import pool\npool.Pool(1); page.evaluate('x'); sys.exit(0)", inner) == []


#: The modules that make random numbers with numpy's generator instead of apnull.streams, and why: none
#: of them draws a null behind a printed threshold or p-value (docs/ARCHITECTURE.md, ``streams``).
OTHER_RANDOMNESS = {
    "streams.py": "SeedSequence only, to key the sampler's blocks",
    "limits.py": "a fresh seed's entropy when none is given",
    "hypergeom.py": "the hypergeometric check's sampled Precision@K, set against its exact law",
    "rendle/algorithms.py": "the sampled-metrics explorer's toy recommenders",
    "views/ranking.py": "the ranking editor's shuffle button",
    "plots/hypergeom.py": "horizontal jitter of a scatter's points",
    "score/example.py": "the bundled example screens' synthetic profiles",
}


def _random_uses(text: str) -> list[str]:
    """numpy or Python randomness a module's source reaches for."""
    found = []
    for node in _walk(text):
        if isinstance(node, ast.Attribute) and node.attr == "random" and isinstance(node.value, ast.Name) \
                and node.value.id in {"np", "numpy"}:
            found.append("numpy.random")
        elif isinstance(node, ast.Import) and any(a.name in {"random", "numpy.random"} for a in node.names):
            found.append("import random")
        elif isinstance(node, ast.ImportFrom) and node.module in {"random", "numpy.random"}:
            found.append(f"from {node.module}")
    return found


def test_one_random_stream_and_the_named_exceptions():
    """Every null of the package draws from apnull.streams; the few modules that use another generator are
    named, with their reason, in OTHER_RANDOMNESS (and each of them still does)."""
    users = {str(rel): _random_uses(path.read_text()) for rel, path in _modules()}
    assert {rel for rel, uses in users.items() if uses} == set(OTHER_RANDOMNESS)
    assert _random_uses("import numpy as np\nnp.random.default_rng(1)") == ["numpy.random"]
    assert _random_uses("from numpy.random import default_rng") == ["from numpy.random"]
    assert _random_uses("import random") == ["import random"]


def _private_getattr(text: str) -> list[str]:
    """Private names read through getattr/hasattr/setattr with a literal string (``getattr(x, "_y")``)."""
    found = []
    for node in _walk(text):
        if isinstance(node, ast.Call) and isinstance(node.func, ast.Name) \
                and node.func.id in {"getattr", "hasattr", "setattr"} and len(node.args) >= 2:
            name = node.args[1]
            if isinstance(name, ast.Constant) and isinstance(name.value, str) and name.value.startswith("_") \
                    and not name.value.startswith("__"):
                found.append(f"{node.func.id}(..., {name.value!r})")
    return found


def test_no_private_name_is_read_through_getattr():
    """The private-name rule holds for names spelled as strings too (``getattr(pool, "_max_workers")``)."""
    paths = [p for _, p in _modules()] + sorted(PAGES.glob("*.py"))
    found = {str(p): _private_getattr(p.read_text()) for p in paths}
    assert {p: f for p, f in found.items() if f} == {}
    assert _private_getattr('getattr(pool, "_max_workers", 1)') == ["getattr(..., '_max_workers')"]
    assert _private_getattr('getattr(x, "__name__")') == []


#: The modules that reach numba's compiler internals (numba.core), and why.
NUMBA_CORE = {
    "compiled.py": "the link-only compiler pipeline of inner kernels",
    "_kernels.py": "an intrinsic (cgutils)",
    "score/kernels/similarity.py": "an intrinsic (cgutils)",
    "score/engine/clock.py": "numba.core.event: compiling is not counted against a time budget",
}


def test_numba_internals_are_reached_by_the_named_modules_only():
    users = {str(rel) for rel, path in _modules()
             if any(name == "numba.core" or name.startswith("numba.core.") for name in _imports(rel, path, True))}
    assert users == set(NUMBA_CORE)


#: The modules keeping a functools cache (small pure helpers; docs/ARCHITECTURE.md, ``memo``); every other
#: cache is an apnull.memo.Memo.
LRU_CACHES = {"compiled.py", "streams.py", "exact.py", "tail.py", "hypergeom.py", "binning_cost.py", "score/example.py"}


def test_caches_are_memos_but_the_named_small_helpers():
    def keeps(path: Path) -> bool:
        tree = _parse(path.read_text())
        names = {a.name for n in ast.walk(tree) if isinstance(n, ast.ImportFrom) and n.module == "functools"
                 for a in n.names}
        return bool(names & {"lru_cache", "cache"}) or "functools.lru_cache" in path.read_text() \
            or "functools.cache" in path.read_text()

    paths = [(str(rel), p) for rel, p in _modules()] + [(f"app_pages/{p.name}", p) for p in sorted(PAGES.glob("*.py"))]
    assert {rel for rel, p in paths if keeps(p)} == LRU_CACHES
    assert not [rel for rel, p in paths if "st.cache_data" in p.read_text().replace("``st.cache_data``", "")
                or "st.cache_resource" in p.read_text()]


#: At most this many modules directly in src/apnull (the law side; docs/ARCHITECTURE.md's pipeline table).
TOP_MODULES = 20
ARCHITECTURE = SRC.parents[1] / "docs" / "ARCHITECTURE.md"


def _law_stages() -> list[tuple[str, list[str]]]:
    """(stage, modules) rows of ARCHITECTURE's "The law side" table, in order."""
    text = ARCHITECTURE.read_text().split("## The law side", 1)[1].split("\n## ", 1)[0]
    rows = [line.split("|") for line in text.splitlines() if line.startswith("| ") and "`" in line]
    return [(cells[1].strip(), [m.strip(" `") for m in cells[2].split(",")]) for cells in rows]


def test_the_law_side_is_the_pipeline_architecture_draws():
    top = {p.stem for p in SRC.glob("*.py") if p.stem not in ("__init__", "__main__")}
    stages = _law_stages()
    listed = [m for _, mods in stages for m in mods]
    assert sorted(listed) == sorted(top) and len(top) <= TOP_MODULES
    stage_of = {m: i for i, (_, mods) in enumerate(stages) for m in mods}
    for module, i in stage_of.items():
        rel = Path(f"{module}.py")
        below = {name.split(".")[1] for name in _imports(rel, SRC / rel, True) if name.startswith("apnull.")
                 and name.split(".")[1] in stage_of and stage_of[name.split(".")[1]] > i}
        assert not below, f"{module} ({stages[i][0]}) imports from a later stage: {sorted(below)}"


#: Functions several modules define by design: every ``apnull`` subcommand module defines ``add_parser``
#: and ``run`` (the command's protocol, docs/ARCHITECTURE.md "A subcommand").
SHARED_PROTOCOL = {"add_parser", "run"}



def _public_definitions() -> dict:
    """{name: [modules]} of the public functions and classes each module of apnull defines at its top
    (a name imported, e.g. re-exported, is not a definition)."""
    out: dict = {}
    for rel, path in _modules():
        for node in _parse(path.read_text()).body:
            defines = isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef))
            if defines and not node.name.startswith("_"):
                out.setdefault(node.name, []).append(str(rel))
    return out


def test_no_two_modules_define_the_same_public_name():
    """A public function or class has one home; a module that offers it too re-exports it (imports it)."""
    twice = {name: where for name, where in _public_definitions().items()
             if len(where) > 1 and name not in SHARED_PROTOCOL}
    assert not twice, twice


def _compiled_functions(source: str):
    """The functions of ``source`` that numba compiles (decorated by ``entry``, ``inner`` or ``njit``)."""
    for node in _walk(source):
        if isinstance(node, ast.FunctionDef) and any(
                any(isinstance(n, (ast.Name, ast.Attribute)) and getattr(n, "id", getattr(n, "attr", None)) in
                    {"entry", "inner", "njit", "jit"} for n in ast.walk(d)) for d in node.decorator_list):
            yield node


def _array_slice_assignments(source: str) -> list[str]:
    """Assignments ``a[i:j] = b`` of something other than a number inside compiled functions: numba
    compiles such a copy with its shape-mismatch error, whose message formatting (strings, repr, integer
    to text) cost several seconds of a first run's compiling, measured."""
    found = []
    for fn in _compiled_functions(source):
        for node in ast.walk(fn):
            if isinstance(node, ast.Assign):
                for target in node.targets:
                    if (isinstance(target, ast.Subscript)
                            and any(isinstance(n, ast.Slice) for n in ast.walk(target.slice))
                            and not (isinstance(node.value, ast.Constant)
                                     or (isinstance(node.value, ast.UnaryOp) and isinstance(node.value.operand, ast.Constant)))):
                        found.append(f"{fn.name}, line {node.lineno}")
    return found


def test_compiled_code_copies_arrays_by_loops():
    """No compiled function assigns an array to a slice (a loop copies the same values): each such
    copy makes a first run compile numba's shape-mismatch message (see _array_slice_assignments)."""
    found = {str(rel): _array_slice_assignments(path.read_text()) for rel, path in _modules()}
    assert {rel: f for rel, f in found.items() if f} == {}
    # the check finds the form, with numbers (a fill) allowed
    assert _array_slice_assignments("@inner()\ndef f(a, b):\n    a[1:3] = b[0:2]\n    a[:] = 0\n    a[0] = b[1]\n") \
        == ["f, line 3"]
    assert _array_slice_assignments("@numba.njit(cache=True)\ndef g(a, b):\n    a[:, 0:2] = b\n") == ["g, line 3"]
    assert _array_slice_assignments("def h(a, b):\n    a[1:3] = b\n") == []
