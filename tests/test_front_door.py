"""The front door holds: the README fits on a screen and tells the truth (its set-up commands are the ones CI
runs, its links lead somewhere, its screen example is a screen apnull reads), and visitors get no
developer toolbar."""

import ast
import builtins
import contextlib
import io
import os
import re
import shlex
import subprocess
import sys
import tomllib
from pathlib import Path

import pytest

from apnull.cli import main
from apnull.score import read_table, screen_plan

ROOT = Path(__file__).resolve().parents[1]
README = (ROOT / "README.md").read_text(encoding="utf-8")
INSTALL_AND_RUN = "pip install -e . && streamlit run app.py"
INSTALL_AND_TEST = "pip install -e '.[test]' && python -m pytest"


def _blocks(text: str, language: str) -> list[str]:
    return re.findall(rf"```{language}\n(.*?)```", text, flags=re.S)


def test_readme_fits_on_a_screen():
    assert len(README.splitlines()) <= 250


def test_the_two_set_up_commands_are_the_ones_ci_runs():
    bash = [b.strip() for b in _blocks(README, "bash")]
    assert INSTALL_AND_RUN in bash and INSTALL_AND_TEST in bash
    # a virtual environment first, and the Python the package asks for
    venv = next(i for i, b in enumerate(bash) if "-m venv" in b)
    assert venv < bash.index(INSTALL_AND_RUN) < bash.index(INSTALL_AND_TEST)
    wanted = tomllib.loads((ROOT / "pyproject.toml").read_text())["project"]["requires-python"]
    assert wanted == ">=3.11" and "Python 3.11 or newer" in README
    ci = [line.strip() for line in (ROOT / ".ci" / "run").read_text().splitlines() if line.strip()]
    assert ci[-1] == INSTALL_AND_TEST  # CI runs the README's test command, unchanged


def test_the_quick_test_command_selects_registered_markers():
    assert '```bash\npython -m pytest -m "not slow and not e2e"\n```' in README
    # how long they take, said for a quiet and for a busy machine ("under 2 minutes" took 5 min 12 s loaded),
    # and in seconds of CPU, the figure a shared machine does not change much
    (said,) = re.findall(r"The quick tests \((.*?)```", README, flags=re.S)
    assert "quiet" in said and "busy" in said and "s of CPU" in said
    markers = tomllib.loads((ROOT / "pyproject.toml").read_text())["tool"]["pytest"]["ini_options"]["markers"]
    assert {m.split(":")[0] for m in markers} >= {"slow", "e2e"}


@pytest.mark.parametrize("doc", ["README.md"] + sorted(p.relative_to(ROOT).as_posix() for p in (ROOT / "docs").glob("*.md")))
def test_every_relative_link_leads_to_a_file(doc):
    path = ROOT / doc
    links = re.findall(r"\]\(([^)#\s]+)(?:#[^)]*)?\)", path.read_text(encoding="utf-8"))
    local = [link for link in links if not re.match(r"[a-z]+://", link)]
    missing = [link for link in local if not (path.parent / link).exists()]
    assert not missing, f"{doc} links to missing files: {missing}"


def test_the_readme_links_every_docs_page():
    for page in (ROOT / "docs").glob("*.md"):
        assert f"docs/{page.name}" in README, f"docs/{page.name} is not linked from the README"


def test_the_screen_example_is_a_screen_apnull_reads():
    """One row per well, label columns read as text, numeric features, a control value: five lines."""
    (example,) = _blocks(README, "csv")
    lines = example.strip().splitlines()
    assert len(lines) == 5
    table = read_table(io.BytesIO(example.encode()), name="screen.csv")
    assert len(table) == 4  # one row per well
    plan = screen_plan(table, "Metadata_perturbation", control="DMSO", stratum="Metadata_plate")
    assert plan.features == ["feature_1", "feature_2", "feature_3"]
    assert list(plan.left_out["column"]) == ["Metadata_target"]  # named, with its reason
    assert plan.perturbations == 1 and list(plan.strata["controls"]) == [1, 1]
    assert table["Metadata_target"].tolist()[2] == "EGFR|HER2"  # labels as written


def test_visitors_get_the_viewer_toolbar():
    """[client] toolbarMode = "viewer": streamlit 1.67 hides Deploy, rerun and clear cache for everyone.
    ``streamlit config show`` run where the server starts is the value the server will use."""
    config = tomllib.loads((ROOT / ".streamlit" / "config.toml").read_text())
    assert config["client"]["toolbarMode"] == "viewer"
    shown = subprocess.run([sys.executable, "-m", "streamlit", "config", "show"], cwd=ROOT, capture_output=True,
                           text=True, timeout=60, check=True).stdout
    assert re.search(r'^toolbarMode = "viewer"$', shown, flags=re.M)
    assert '"viewer" : Hide the developer options' in shown  # the option and its value exist in this streamlit


def test_every_test_file_the_docs_name_exists():
    """A test file named in the README or docs/ (``tests/.../test_x.py``) is there: a reader who looks for
    the test a page convention points to finds it (docs/PAGES.md named tests/e2e/test_front_door.py)."""
    named = set()
    for doc in [ROOT / "README.md", *sorted((ROOT / "docs").glob("*.md"))]:
        named |= {(doc.name, m) for m in re.findall(r"tests/[\w/]+\.py", doc.read_text(encoding="utf-8"))}
    assert named, "no test file named in the docs: the pattern is wrong"
    missing = sorted((doc, path) for doc, path in named if not (ROOT / path).exists())
    assert not missing, missing


def _readme_commands() -> list[str]:
    """The shell commands of the README's console and bash blocks ("$ " prompts dropped, "\\" lines joined)."""
    commands = []
    for block in _blocks(README, "console") + _blocks(README, "bash"):
        text = re.sub(r"\\\n\s*", " ", block)
        for line in text.splitlines():
            line = line.strip()
            if line.startswith("$ "):
                commands.append(line[2:])
            elif line.startswith(("apnull ", "python -c")):
                commands.append(line)
    return commands


def _example_commands() -> tuple[str, list[str]]:
    """(the README's line that writes the example files, its apnull lines that read a file)."""
    commands = _readme_commands()
    (writer,) = [c for c in commands if c.startswith("python -c")]
    readers = [c for c in commands if c.startswith(("apnull score ", "apnull compare "))]
    return writer, readers


def _run_readme_line(line: str, cwd: Path, extra=()) -> tuple[int, str]:
    """(exit status, stderr) of a README line run in ``cwd``, in this process: ``apnull ...`` through the
    command's ``main`` (what the console script calls; tests/test_cli.py starts the script itself),
    ``python -c CODE`` by executing CODE as a script (an exception fails the test). Three interpreter
    starts, and their imports, saved."""
    args = shlex.split(line)
    err = io.StringIO()
    with contextlib.chdir(cwd), contextlib.redirect_stdout(io.StringIO()), contextlib.redirect_stderr(err):
        if args[0] == "apnull":
            return main([*args[1:], *extra], out=io.StringIO(), err=err), err.getvalue()
        assert args[:2] == ["python", "-c"] and len(args) == 3, args
        exec(compile(args[2], "<README python -c>", "exec"), {"__name__": "__main__"})  # an error fails the test
        return 0, err.getvalue()


@pytest.mark.parametrize("as_written", [pytest.param(False, id="B=99"), pytest.param(True, marks=pytest.mark.slow,
                                                                                     id="as-written")])
def test_the_readme_writes_the_files_its_commands_use_and_they_run(tmp_path, as_written):
    """A newcomer has no screen.csv, a.csv or b.parquet: the README's python -c line writes them, and its
    `apnull score` and `apnull compare` lines then run on them (quick: with 99 permutations)."""
    writer, readers = _example_commands()
    assert len(readers) == 2
    status, stderr = _run_readme_line(writer, tmp_path)
    assert status == 0, stderr
    for line in readers:
        inputs = [w for w in line.split() if re.fullmatch(r"[\w.-]+\.(csv|parquet)", w) and not w.startswith("--")]
        read = [w for w in inputs if w in line.split()[2:4]]  # the positional file arguments
        assert read and all((tmp_path / f).exists() for f in read), (line, read)
        status, stderr = _run_readme_line(line, tmp_path, () if as_written else ("--permutations", "99"))
        assert status == 0, (line, stderr[-2000:])
    assert {p.name for p in tmp_path.iterdir()} >= {"screen.csv", "a.csv", "b.parquet", "groups.csv",
                                                     "queries.csv", "deltas.csv"}


def test_serving_says_the_first_start_compiles():
    """The first start after an install compiles for about 19 s: docs/serving.md says so and how to pay it
    before a class."""
    serving = (ROOT / "docs" / "serving.md").read_text(encoding="utf-8")
    assert "first start after an install" in serving and "19 s" in serving and "start the server once" in serving


@pytest.mark.parametrize("markexpr, skipped", [
    ("not slow and not e2e", True), ("not e2e", True), ("slow and not e2e", True), ("not (e2e or slow)", True),
    ("", False), ("e2e", False), ("slow", False), ("not slow", False), ("e2e and not slow", False),
    ("not slow or not e2e", False), ("e2e or not e2e", False), ("not e2e-like", False)])
def test_the_browser_tests_are_not_collected_only_when_no_e2e_test_could_run(markexpr, skipped):
    from collection import excludes_e2e

    assert excludes_e2e(markexpr) is skipped


def test_bytecode_is_cached_outside_the_tree_only_when_the_shell_forbids_it_in_the_tree(monkeypatch):
    from collection import PYCACHE, cache_bytecode_outside_the_tree

    monkeypatch.setattr(sys, "dont_write_bytecode", False)
    monkeypatch.setattr(sys, "pycache_prefix", None)
    assert not cache_bytecode_outside_the_tree() and sys.pycache_prefix is None  # the tree's __pycache__
    monkeypatch.setattr(sys, "dont_write_bytecode", True)
    assert cache_bytecode_outside_the_tree()
    assert sys.pycache_prefix == str(PYCACHE) and not sys.dont_write_bytecode and not PYCACHE.is_relative_to(ROOT)
    monkeypatch.setattr(sys, "dont_write_bytecode", True)
    monkeypatch.setattr(sys, "pycache_prefix", "/elsewhere")  # a prefix the shell chose is kept
    assert not cache_bytecode_outside_the_tree() and sys.dont_write_bytecode


def test_the_installed_packages_are_scanned_for_components_once_per_test_process(monkeypatch):
    """conftest made the AppTests' component scan a once-per-process scan: a later AppTest does not list
    the installed distributions again, and the scan finds what a fresh scan finds."""
    import importlib.metadata

    from collection import scan_components_once
    from streamlit.components.v2 import manifest_scanner
    from streamlit.testing.v1 import AppTest

    scan = manifest_scanner.scan_component_manifests
    assert scan.scanned_once and not scan_components_once()  # already done by conftest: not wrapped twice
    assert scan() == scan.__wrapped__() and scan() is not scan()  # the same manifests, a fresh list each time
    script = "import streamlit as st\nst.write('hi')"
    AppTest.from_string(script).run()  # the process's scan, if no AppTest ran here before
    listed = []
    distributions = importlib.metadata.distributions
    monkeypatch.setattr(importlib.metadata, "distributions", lambda **k: listed.append(1) or distributions(**k))
    for _ in range(2):
        assert not AppTest.from_string(script).run().exception
    assert listed == []  # neither AppTest scanned the installed packages again


def test_each_page_script_is_compiled_once_per_test_process_and_again_when_it_changes(tmp_path, monkeypatch):
    """conftest keeps the compiled dashboard and page scripts across AppTest runs: a second run of the same
    script compiles nothing, and a script changed on disk (same path) is compiled again and runs new."""
    from collection import compile_scripts_once
    from streamlit.runtime.scriptrunner.script_cache import ScriptCache
    from streamlit.testing.v1 import AppTest

    assert ScriptCache.get_bytecode.compiled_once and not compile_scripts_once()  # conftest did it: not twice
    script = tmp_path / "page.py"
    script.write_text("import streamlit as st\nst.write('first')")
    compiled = []
    real_compile = builtins.compile

    def counting_compile(source, filename, mode, flags=0, *args, **kwargs):
        if filename == str(script) and not flags & ast.PyCF_ONLY_AST:  # to code, not magic's syntax tree
            compiled.append(filename)
        return real_compile(source, filename, mode, flags, *args, **kwargs)

    monkeypatch.setattr(builtins, "compile", counting_compile)
    for _ in range(3):
        at = AppTest.from_file(str(script)).run()
        assert at.markdown[0].value == "first"
    assert compiled == [str(script)]
    script.write_text("import streamlit as st\nst.write('second')")
    assert AppTest.from_file(str(script)).run().markdown[0].value == "second"
    assert compiled == [str(script)] * 2


def test_openmp_workers_wait_passively_in_test_processes(monkeypatch):
    """conftest sets OMP_WAIT_POLICY=PASSIVE before any kernel runs, as the dashboard does, unless the
    shell chose a policy."""
    from collection import quiet_openmp_workers

    assert os.environ.get("OMP_WAIT_POLICY")
    monkeypatch.delenv("OMP_WAIT_POLICY")
    assert quiet_openmp_workers() and os.environ["OMP_WAIT_POLICY"] == "PASSIVE"
    monkeypatch.setenv("OMP_WAIT_POLICY", "ACTIVE")
    assert not quiet_openmp_workers() and os.environ["OMP_WAIT_POLICY"] == "ACTIVE"


def test_the_longest_test_files_go_out_first_whole():
    """The quick run sends whole files to its workers, the longest first (tests/collection.py): the files
    named exist, and the order puts them first, in their order, the others after as collected."""
    from types import SimpleNamespace

    from collection import LONGEST_FIRST, longest_first

    assert len(set(LONGEST_FIRST)) == len(LONGEST_FIRST) and all((ROOT / f).is_file() for f in LONGEST_FIRST)
    first, second = LONGEST_FIRST[:2]
    names = ["tests/test_a.py", second, "tests/test_b.py", first, second, "tests/test_a.py"]
    items = [SimpleNamespace(path=ROOT / name, n=i) for i, name in enumerate(names)]
    ordered = longest_first(items, ROOT)
    assert [(str(i.path.relative_to(ROOT)), i.n) for i in ordered] == [
        (first, 3), (second, 1), (second, 4), ("tests/test_a.py", 0), ("tests/test_b.py", 2), ("tests/test_a.py", 5)]
    addopts = tomllib.loads((ROOT / "pyproject.toml").read_text())["tool"]["pytest"]["ini_options"]["addopts"].split()
    assert "loadfile" in addopts and "--no-loadscope-reorder" in addopts
