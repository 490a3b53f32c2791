"""Distribution names, the install lines that name them, and what an extra alone imports.

On PyPI, ``docmem`` is an unrelated project: every install line names the
distributions the pyprojects declare (``agent-docmem``, ``agent-docmem-s3``,
``agent-docmem-fsspec``) or a path in this repository.
"""

from __future__ import annotations

import re
import subprocess
import sys
from importlib import metadata
from pathlib import Path
from typing import Any

import pytest

import docmem
import docmem.storage.registry as registry

ROOT = Path(__file__).resolve().parents[1]
PLUGINS = sorted(ROOT.glob("backends/*/pyproject.toml"))
#: Where install lines are written: the docs, the examples, and messages in the code.
TEXTS = sorted(
    {
        *ROOT.glob("*.md"),
        *ROOT.glob("docs/*.md"),
        *ROOT.glob("backends/**/*.md"),
        *ROOT.glob("examples/*.py"),
        *ROOT.glob("docmem/**/*.py"),
        *ROOT.glob("backends/*/docmem_*/**/*.py"),
    }
)
#: ``pip install NAME`` or ``pip install "NAME[extra]"``: a name, not a path or a flag.
INSTALL = re.compile(r"""pip install\s+["']?([A-Za-z][\w.-]*)(?:\[[^\]]*\])?""")
#: An extra of a distribution named ``docmem``, quoted or in prose: ``docmem[mcp]``.
OLD_EXTRA = re.compile(r"(?<![\w./-])docmem\[")


def _project(pyproject: Path) -> dict[str, Any]:
    if sys.version_info >= (3, 11):
        import tomllib
    else:
        tomllib = pytest.importorskip("tomli")
    project: dict[str, Any] = tomllib.loads(pyproject.read_text(encoding="utf-8"))["project"]
    return project


def _name(requirement: str) -> str:
    found = re.match(r"[A-Za-z0-9][\w.-]*", requirement)
    assert found is not None, requirement
    return found.group(0).lower()


OURS = {
    str(_project(ROOT / "pyproject.toml")["name"]),
    *(str(_project(pyproject)["name"]) for pyproject in PLUGINS),
}


def test_the_registry_names_the_distributions_the_pyprojects_declare() -> None:
    assert _project(ROOT / "pyproject.toml")["name"] == registry.CORE_DISTRIBUTION
    named = {registry.CORE_DISTRIBUTION} | {known.distribution for known in registry.SCHEMES}
    assert named == OURS


def test_the_installed_core_is_this_one() -> None:
    assert metadata.version(registry.CORE_DISTRIBUTION) == docmem.__version__


@pytest.mark.parametrize("pyproject", [ROOT / "pyproject.toml", *PLUGINS], ids=str)
def test_requirements_on_docmem_name_our_distributions(pyproject: Path) -> None:
    project = _project(pyproject)
    requirements = list(project.get("dependencies", []))
    for extra in project.get("optional-dependencies", {}).values():
        requirements += extra
    named = {_name(requirement) for requirement in requirements}
    assert {name for name in named if "docmem" in name} <= OURS


@pytest.mark.parametrize("path", TEXTS, ids=lambda path: str(path.relative_to(ROOT)))
def test_install_lines_name_our_distributions(path: Path) -> None:
    text = path.read_text(encoding="utf-8")
    named = {match.group(1) for match in INSTALL.finditer(text)}
    # The README warns that `pip install docmem` installs the unrelated project.
    strangers = named - OURS - ({"docmem"} if path == ROOT / "README.md" else set())
    assert not strangers, f"{path.name}: pip install {sorted(strangers)}"
    assert not OLD_EXTRA.search(text), f"{path.name} names an extra of 'docmem'"


@pytest.mark.process
def test_the_langchain_fake_model_needs_no_test_tools() -> None:
    pytest.importorskip("langchain_core")
    code = (
        "import sys\n"
        "import docmem.testing.langchain_model\n"
        "loaded = {'pytest', 'hypothesis'} & set(sys.modules)\n"
        "assert not loaded, loaded\n"
    )
    subprocess.run([sys.executable, "-I", "-c", code], check=True, timeout=120)


def _next_minor(version: str) -> str:
    major, minor = version.split(".")[:2]
    return f"{major}.{int(minor) + 1}.0"


@pytest.mark.parametrize("pyproject", PLUGINS, ids=lambda path: path.parent.name)
def test_each_plug_in_requires_the_core_release_it_was_tested_with(pyproject: Path) -> None:
    from packaging.requirements import Requirement

    core = [
        Requirement(line)
        for line in _project(pyproject)["dependencies"]
        if _name(line) == registry.CORE_DISTRIBUTION
    ]
    assert len(core) == 1, f"{pyproject.parent.name} must require {registry.CORE_DISTRIBUTION}"
    assert docmem.__version__ in core[0].specifier
    assert _next_minor(docmem.__version__) not in core[0].specifier


def _stable_modules() -> set[str]:
    """The modules docs/design.md, section 1, marks [stable], and the package root."""
    section = (ROOT / "docs" / "design.md").read_text(encoding="utf-8").split("## 1. ")[1]
    block = section.split("```\n", 2)[1]
    entries: list[str] = []
    for line in block.splitlines():
        if line[:1].strip():
            entries.append(line)
        elif entries:
            entries[-1] += line
    stable = {"docmem"}
    for entry in entries:
        if "[stable]" in entry:
            path = entry.split()[0].removesuffix("/").removesuffix(".py")
            stable.add("docmem." + path.replace("/", "."))
    return stable


@pytest.mark.parametrize(
    "path",
    sorted(ROOT.glob("backends/*/docmem_*/**/*.py")),
    ids=lambda path: str(path.relative_to(ROOT)),
)
def test_plug_ins_use_only_the_stable_api(path: Path) -> None:
    import ast

    stable = _stable_modules()
    assert {"docmem.backend", "docmem.localfs.flock", "docmem.testing"} <= stable
    for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
        if isinstance(node, ast.ImportFrom) and not node.level:
            names = [node.module or ""]
        elif isinstance(node, ast.Import):
            names = [alias.name for alias in node.names]
        else:
            continue
        for name in names:
            if name.split(".")[0] == "docmem":
                assert any(name == s or name.startswith(s + ".") for s in stable), (
                    f"{path.name}, line {node.lineno}: {name} is not stable API"
                )
