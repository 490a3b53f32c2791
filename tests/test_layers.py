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


def _imports(path: Path, *, runtime_only: bool = False) -> Iterator[tuple[str, list[str], int]]:
    """Each import of ``path`` as (absolute module, names imported from it, line)."""
    tree = ast.parse(path.read_text(encoding="utf-8"))
    hidden = _under_type_checking(tree) if runtime_only else set()
    package = _package(path).split(".")
    for node in ast.walk(tree):
        if node in hidden:
            continue
        if isinstance(node, ast.ImportFrom):
            base = package[: len(package) - node.level + 1] if node.level else []
            module = ".".join([*base, *([node.module] if node.module else [])])
            yield module, [alias.name for alias in node.names], node.lineno
        elif isinstance(node, ast.Import):
            for alias in node.names:
                yield alias.name, [], node.lineno


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
def test_modules_import_only_their_own_layer_and_below(path: Path) -> None:
    module = _module(path)
    rank = LAYERS[_entry(module)]
    for imported, names, line in _imports(path):
        if imported.split(".")[0] != "docmem":
            continue
        for target in _targets(imported, names):
            if target == "docmem":
                raise AssertionError(
                    f"{module}, line {line}: import from the package root; import each name "
                    "from the module that defines it"
                )
            if target != module:
                assert LAYERS[_entry(target)] <= rank, f"{module}, line {line}: imports {target}"


@pytest.mark.parametrize("path", SOURCES, ids=lambda p: str(p.relative_to(DOCMEM)))
def test_the_core_never_imports_a_plug_in(path: Path) -> None:
    for imported, _names, line in _imports(path):
        assert not imported.startswith("docmem_"), f"{_module(path)}, line {line}: {imported}"


def test_no_import_circle() -> None:
    graph: dict[str, set[str]] = {}
    for path in SOURCES:
        edges = graph.setdefault(_module(path), set())
        for imported, names, _line in _imports(path, runtime_only=True):
            if imported.split(".")[0] == "docmem":
                edges |= {t for t in _targets(imported, names) if t != _module(path)}
    done: set[str] = set()

    def visit(module: str, trail: list[str]) -> None:
        if module in trail:
            circle = [*trail[trail.index(module) :], module]
            raise AssertionError("import circle: " + " -> ".join(circle))
        if module in done:
            return
        for target in sorted(graph.get(module, ())):
            visit(target, [*trail, module])
        done.add(module)

    for module in sorted(graph):
        visit(module, [])


#: A citation of docs/design.md: "docs/design.md, section 4.3" (also across a line break).
_CITATION = re.compile(r"design\.md,?\s*(?:#\s*)?sections?\s+([\d.]+\d)(?:\s+and\s+([\d.]+\d))?")


def _sections() -> set[str]:
    headings = re.findall(r"^#{2,3} (\d+(?:\.\d+)?)\.? ", DESIGN.read_text(encoding="utf-8"), re.M)
    return set(headings)


def test_the_design_has_numbered_sections() -> None:
    assert {"1", "3", "4.3", "6.2"} <= _sections()


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
    for match in _CITATION.finditer(path.read_text(encoding="utf-8")):
        for cited in filter(None, match.groups()):
            assert cited in sections, f"{path.relative_to(ROOT)} cites section {cited}"
