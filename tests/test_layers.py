"""The layers of the core, read from the one map of them in docs/design.md, section 1.

Each module's rank comes from the table there; a module imports only modules
of its own rank or below. The package root is not a way around that (``from
docmem import X`` hides which layer X comes from), the core never imports a
plug-in, no import circle exists, and a comment that cites a section of
docs/design.md cites one that exists.
"""

from __future__ import annotations

import ast
import re
from collections.abc import Iterator
from pathlib import Path

import pytest

import docmem

DOCMEM = Path(docmem.__file__).resolve().parent
ROOT = DOCMEM.parent
DESIGN = ROOT / "docs" / "design.md"
SOURCES = sorted(p for p in DOCMEM.rglob("*.py") if "__pycache__" not in p.parts)


def _layer_table() -> dict[str, int]:
    """Each entry of ``docmem/`` (module or folder, without ``.py``/``/``) to its rank."""
    text = DESIGN.read_text(encoding="utf-8")
    table = text.split("<!-- layers: the layer test reads this table -->", 1)[1].strip()
    ranks: dict[str, int] = {}
    for row in table.split("\n\n", 1)[0].splitlines()[2:]:
        rank, _layer, entries = (cell.strip() for cell in row.strip("|").split("|"))
        for entry in re.findall(r"`([^`]+)`", entries):
            ranks[entry.removesuffix("/").removesuffix(".py")] = int(rank)
    return ranks


LAYERS = _layer_table()


def _module(path: Path) -> str:
    parts = path.relative_to(ROOT).with_suffix("").parts
    return ".".join(parts[:-1] if parts[-1] == "__init__" else parts)


def _package(path: Path) -> str:
    module = _module(path)
    return module if path.name == "__init__.py" else module.rpartition(".")[0]


def _under_type_checking(tree: ast.Module) -> set[ast.AST]:
    """The import nodes inside ``if TYPE_CHECKING:`` blocks: for annotations, never run."""
    hidden: set[ast.AST] = set()
    for node in ast.walk(tree):
        if isinstance(node, ast.If) and "TYPE_CHECKING" in ast.unparse(node.test):
            for inner in node.body:
                hidden |= set(ast.walk(inner))
    return hidden


def _imports_in(
    source: str, package: str, *, runtime_only: bool = False
) -> Iterator[tuple[str, list[str], int]]:
    """Each import of ``source`` (a module of ``package``) as (absolute module, names, line)."""
    tree = ast.parse(source)
    hidden = _under_type_checking(tree) if runtime_only else set()
    parts = package.split(".")
    for node in ast.walk(tree):
        if node in hidden:
            continue
        if isinstance(node, ast.ImportFrom):
            base = parts[: len(parts) - node.level + 1] if node.level else []
            module = ".".join([*base, *([node.module] if node.module else [])])
            yield module, [alias.name for alias in node.names], node.lineno
        elif isinstance(node, ast.Import):
            for alias in node.names:
                yield alias.name, [], node.lineno


def _imports(path: Path, *, runtime_only: bool = False) -> Iterator[tuple[str, list[str], int]]:
    source = path.read_text(encoding="utf-8")
    return _imports_in(source, _package(path), runtime_only=runtime_only)


def _is_module(name: str) -> bool:
    path = ROOT / name.replace(".", "/")
    return path.with_suffix(".py").is_file() or (path / "__init__.py").is_file()


def _targets(module: str, names: list[str]) -> list[str]:
    """The docmem modules an import loads: ``from a import b`` loads ``a.b`` when b is one."""
    found = [f"{module}.{name}" for name in names if _is_module(f"{module}.{name}")]
    return found or [module]


def _entry(module: str) -> str:
    """The entry of ``docmem/`` a module belongs to, as the layer table names it."""
    return module.split(".")[1] if "." in module else "__init__"


def _layer_faults(module: str, source: str, package: str) -> list[str]:
    """What ``source`` (the module ``module``) imports against the layers, one line each."""
    faults = []
    for imported, names, line in _imports_in(source, package):
        if imported.startswith("docmem_"):
            faults.append(f"{module}, line {line}: imports the plug-in {imported}")
        if imported.split(".")[0] != "docmem":
            continue
        for target in _targets(imported, names):
            if target == "docmem":
                faults.append(f"{module}, line {line}: imports from the package root")
            elif target != module and LAYERS[_entry(target)] > LAYERS[_entry(module)]:
                faults.append(f"{module}, line {line}: imports {target}, of a higher layer")
    return faults


def _circle(graph: dict[str, set[str]]) -> list[str] | None:
    """An import circle of ``graph`` (module -> modules it imports), or ``None``."""
    done: set[str] = set()

    def visit(module: str, trail: list[str]) -> list[str] | None:
        if module in trail:
            return [*trail[trail.index(module) :], module]
        if module in done:
            return None
        for target in sorted(graph.get(module, ())):
            found = visit(target, [*trail, module])
            if found:
                return found
        done.add(module)
        return None

    return next(filter(None, (visit(module, []) for module in sorted(graph))), None)


def test_the_table_names_every_entry_of_the_package_and_nothing_else() -> None:
    entries = {p.name.removesuffix(".py") for p in DOCMEM.iterdir() if p.name != "__pycache__"}
    assert set(LAYERS) == entries - {"py.typed"}


def test_the_map_names_every_module() -> None:
    section = DESIGN.read_text(encoding="utf-8").split("## 1. ", 1)[1].split("\n## 2. ", 1)[0]
    named = set(re.findall(r"^([\w/]+(?:\.py|/))\s", section, re.M))
    for name in named:
        assert (DOCMEM / name).exists(), f"docs/design.md, section 1, names {name}: no such file"
    for path in SOURCES:
        relative = path.relative_to(DOCMEM).as_posix()
        parts = relative.split("/")
        folders = {"/".join(parts[:n]) + "/" for n in range(1, len(parts))}
        if path.name != "__init__.py":
            assert relative in named or folders & named, f"section 1 misses docmem/{relative}"


@pytest.mark.parametrize("path", SOURCES, ids=lambda p: str(p.relative_to(DOCMEM)))
def test_modules_import_only_their_own_layer_and_below_and_no_plug_in(path: Path) -> None:
    source = path.read_text(encoding="utf-8")
    assert _layer_faults(_module(path), source, _package(path)) == []


def test_no_import_circle() -> None:
    graph: dict[str, set[str]] = {}
    for path in SOURCES:
        edges = graph.setdefault(_module(path), set())
        for imported, names, _line in _imports(path, runtime_only=True):
            if imported.split(".")[0] == "docmem":
                edges |= {t for t in _targets(imported, names) if t != _module(path)}
    assert _circle(graph) is None


@pytest.mark.parametrize(
    ("source", "fault"),
    [
        ("from docmem import FileMemory\n", "imports from the package root"),
        ("from .. import open_store\n", "imports from the package root"),
        ("import docmem\n", "imports from the package root"),
        ("from ..host.runtime import MemoryRuntime\n", "docmem.host.runtime, of a higher layer"),
        ("import docmem_s3\n", "imports the plug-in docmem_s3"),
        ("from docmem_fsspec.probe import check\n", "imports the plug-in docmem_fsspec.probe"),
    ],
)
def test_the_layer_rules_catch_each_fault(source: str, fault: str) -> None:
    faults = _layer_faults("docmem.provider.memory", source, "docmem.provider")
    assert len(faults) == 1, faults
    assert fault in faults[0]


def test_the_layer_rules_allow_the_same_layer_a_lower_one_and_a_submodule_of_the_root() -> None:
    source = "from . import journal\nfrom ..backend import Backend\nfrom .. import telemetry\n"
    assert _layer_faults("docmem.provider.memory", source, "docmem.provider") == []


def test_a_circle_is_found_and_imports_for_annotations_only_are_not_one() -> None:
    assert _circle({"a": {"b"}, "b": {"c"}, "c": {"a"}}) == ["a", "b", "c", "a"]
    assert _circle({"a": {"b"}, "b": {"c"}, "c": set()}) is None
    source = "from typing import TYPE_CHECKING\nif TYPE_CHECKING:\n    from .b import B\n"
    assert list(_imports_in(source, "docmem.storage", runtime_only=True)) == [
        ("typing", ["TYPE_CHECKING"], 1)
    ]


#: A citation of docs/design.md: "docs/design.md, section 4.3" (also across a line break).
_CITATION = re.compile(
    r"design\.md,?\s*(?:#\s*)?sections?\s+(\d+(?:\.\d+)?)(?:\s+and\s+(\d+(?:\.\d+)?))?"
)


def _sections() -> set[str]:
    headings = re.findall(r"^#{2,3} (\d+(?:\.\d+)?)\.? ", DESIGN.read_text(encoding="utf-8"), re.M)
    return set(headings)


def _cited(text: str) -> list[str]:
    """The design sections ``text`` cites."""
    return [cited for match in _CITATION.finditer(text) for cited in match.groups() if cited]


def test_the_design_has_numbered_sections() -> None:
    assert {"1", "3", "4.3", "6.2"} <= _sections()


def test_citations_are_read_in_every_form_the_code_uses() -> None:
    text = (
        "(docs/design.md, section 4.3) (docs/design.md,\n# section 5) design.md, sections 6.2 and 7"
    )
    assert _cited(text) == ["4.3", "5", "6.2", "7"]
    assert "9" not in _sections()
    missing = "docs/design.md, section " + "9"  # written so that this file cites no section 9
    assert _cited(missing) == ["9"]


@pytest.mark.parametrize(
    "path",
    sorted(
        p
        for pattern in (
            "docmem/**/*.py",
            "backends/*/docmem_*/**/*.py",
            "tests/**/*.py",
            "benchmarks/**/*.py",
            "examples/*.py",
        )
        for p in ROOT.glob(pattern)
    ),
    ids=lambda p: str(p.relative_to(ROOT)),
)
def test_every_cited_design_section_exists(path: Path) -> None:
    sections = _sections()
    for cited in _cited(path.read_text(encoding="utf-8")):
        assert cited in sections, f"{path.relative_to(ROOT)} cites section {cited}"
