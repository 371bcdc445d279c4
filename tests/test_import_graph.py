"""asyncmongo's import graph, built from the source with ast: no cycles, and layers point down.

The graph. Its nodes are the package's modules: every ``.py`` file (a package is its
``__init__.py``) and every ``.pyi`` stub without a ``.py`` twin (the C accelerators). An edge
``A -> B`` is one import statement of ``A``, with its file:line, that makes Python execute ``B``:

- every ``import`` and ``from ... import`` counts: at top level, in class bodies, under
  ``if TYPE_CHECKING:`` and inside functions. Each edge says whether it is typing-only or
  function-local, for the failure messages; every kind counts, since a typing-only cycle is
  still two modules that cannot be understood (or type-checked) apart;
- relative imports are resolved against the importing module (a package's ``__init__`` is its
  own base for ``from . import``);
- ``from pkg import name`` points at ``pkg.name`` when that is a submodule, else at ``pkg``;
- an edge to a package is an edge to its ``__init__``. Naming ``a.b.c`` also executes the
  ``__init__`` of ``a`` and ``a.b``: those implicit edges count for the packages that do not
  contain the importer, whose own packages have already started executing when it runs. So
  ``asyncmongo/x/sub.py`` depends on ``asyncmongo/x/__init__.py`` only when it names the package
  itself (``import asyncmongo.x``, ``from asyncmongo.x import name`` with ``name`` not a
  submodule, ``from . import name`` likewise), while ``from asyncmongo.y.sub import name``
  depends on ``asyncmongo/y/__init__.py`` too;
- dynamic imports (``importlib``, ``__import__``) and imports made by C code are not edges.

The checks: no strongly connected component (Tarjan) of more than one module and no module
importing itself; each layer of :data:`LAYERS` imports only the layers it lists; nothing below
the API imports the API; only ``asyncmongo.testing`` imports ``asyncmongo.testing``. Layer
contracts look at the import statements (the implicit parent edges land in the layer of the
module named). The checker's own tests run it on small packages written to a temporary
directory, so it cannot pass by seeing nothing.
"""

from __future__ import annotations

import ast
import functools
from collections import deque
from collections.abc import Callable, Iterable, Iterator, Mapping
from dataclasses import dataclass
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parent.parent
PACKAGE = "asyncmongo"


@dataclass(frozen=True, slots=True)
class Layer:
    """A ring of the package: the module prefixes it holds and the layers it may import."""

    prefixes: tuple[str, ...]
    allowed: frozenset[str]


def _layer(prefixes: Iterable[str], allowed: Iterable[str]) -> Layer:
    return Layer(tuple(prefixes), frozenset(allowed))


#: Layer name -> its module prefixes -> the layers it may import. A module belongs to the layer
#: of its longest matching prefix, so "api" holds every module no other layer claims, and a
#: single module named like a layer's package (``asyncmongo/monitoring.py``) is in that layer.
LAYERS: dict[str, Layer] = {
    "bson": _layer(["asyncmongo.bson"], ["bson"]),
    "errors": _layer(["asyncmongo.errors"], ["errors", "bson"]),
    "core": _layer(["asyncmongo.core"], ["core", "bson", "errors"]),
    "monitoring": _layer(["asyncmongo.monitoring"], ["monitoring", "core", "bson", "errors"]),
    "runtime": _layer(["asyncmongo.runtime"], ["runtime", "monitoring", "core", "bson", "errors"]),
    "sessions": _layer(
        ["asyncmongo.sessions"], ["sessions", "runtime", "monitoring", "core", "bson", "errors"]
    ),
    "api": _layer(
        ["asyncmongo"], ["api", "sessions", "runtime", "monitoring", "core", "bson", "errors"]
    ),
    # the demo runs on an embedded simulated deployment by default
    "tools": _layer(
        ["asyncmongo.demo", "asyncmongo.__main__"],
        ["tools", "testing", "api", "sessions", "runtime", "monitoring", "core", "bson", "errors"],
    ),
    "testing": _layer(
        ["asyncmongo.testing"],
        ["testing", "tools", "api", "sessions", "runtime", "monitoring", "core", "bson", "errors"],
    ),
}


@dataclass(frozen=True, slots=True)
class Edge:
    """One import statement of ``source`` that makes Python execute ``target``."""

    source: str
    target: str
    location: str
    typing_only: bool
    local: bool
    implicit: bool

    def __str__(self) -> str:
        kinds = [
            kind
            for kind, on in (
                ("typing-only", self.typing_only),
                ("function-local", self.local),
                ("parent package of the module named", self.implicit),
            )
            if on
        ]
        suffix = f"  [{', '.join(kinds)}]" if kinds else ""
        return f"{self.source} -> {self.target}  ({self.location}){suffix}"


@dataclass(frozen=True, slots=True)
class Graph:
    """Modules (name -> file), which of them are packages, the edges, and dangling imports."""

    modules: Mapping[str, Path]
    packages: frozenset[str]
    edges: tuple[Edge, ...]
    unresolved: tuple[str, ...]

    def successors(self, module: str) -> list[str]:
        return sorted({e.target for e in self.edges if e.source == module})


@dataclass(frozen=True, slots=True)
class _Statement:
    line: int
    level: int
    module: str | None
    names: tuple[str, ...] | None
    typing_only: bool
    local: bool


class _Collector(ast.NodeVisitor):
    """Every import statement of a module, with whether it is typing-only or function-local."""

    def __init__(self) -> None:
        self.statements: list[_Statement] = []
        self._typing_only = False
        self._local = False

    def visit_If(self, node: ast.If) -> None:
        if not _is_type_checking(node.test):
            self.generic_visit(node)
            return
        outer, self._typing_only = self._typing_only, True
        for stmt in node.body:
            self.visit(stmt)
        self._typing_only = outer
        for stmt in node.orelse:
            self.visit(stmt)

    def visit_FunctionDef(self, node: ast.FunctionDef | ast.AsyncFunctionDef) -> None:
        outer, self._local = self._local, True
        self.generic_visit(node)
        self._local = outer

    visit_AsyncFunctionDef = visit_FunctionDef

    def visit_Import(self, node: ast.Import) -> None:
        for alias in node.names:
            self._add(node.lineno, 0, alias.name, None)

    def visit_ImportFrom(self, node: ast.ImportFrom) -> None:
        self._add(node.lineno, node.level, node.module, tuple(a.name for a in node.names))

    def _add(
        self, line: int, level: int, module: str | None, names: tuple[str, ...] | None
    ) -> None:
        self.statements.append(
            _Statement(line, level, module, names, self._typing_only, self._local)
        )


def _is_type_checking(test: ast.expr) -> bool:
    if isinstance(test, ast.Name):
        return test.id == "TYPE_CHECKING"
    return isinstance(test, ast.Attribute) and test.attr == "TYPE_CHECKING"


def _under(module: str, prefix: str) -> bool:
    return module == prefix or module.startswith(prefix + ".")


def _ancestors(module: str) -> list[str]:
    parts = module.split(".")
    return [".".join(parts[:i]) for i in range(1, len(parts))]


def discover(root: Path, package: str) -> tuple[dict[str, Path], frozenset[str]]:
    """The modules under ``root/package`` by dotted name, and the names that are packages."""
    modules: dict[str, Path] = {}
    packages: set[str] = set()
    files = [p for p in (root / package).rglob("*.py*") if p.suffix in (".py", ".pyi")]
    for path in sorted(files, key=lambda p: (p.suffix != ".py", p)):
        parts = path.relative_to(root).with_suffix("").parts
        if parts[-1] == "__init__":
            parts = parts[:-1]
            packages.add(".".join(parts))
        modules.setdefault(".".join(parts), path)
    return modules, frozenset(packages)


def _base(importer: str, is_package: bool, stmt: _Statement) -> str | None:
    """The absolute module a statement names before its ``names`` (None: beyond the top)."""
    if stmt.level == 0:
        return stmt.module
    parts = importer.split(".") if is_package else importer.split(".")[:-1]
    if stmt.level - 1 >= len(parts):
        return None
    kept = parts[: len(parts) - (stmt.level - 1)]
    return ".".join([*kept, stmt.module] if stmt.module else kept)


def _named(base: str, stmt: _Statement, modules: Mapping[str, Path]) -> list[str]:
    """The modules one statement names: ``pkg.name`` for submodules, else ``pkg`` itself."""
    if stmt.names is None:
        return [base]
    named = [f"{base}.{n}" if f"{base}.{n}" in modules else base for n in stmt.names]
    return list(dict.fromkeys(named))


def build_graph(root: Path, package: str) -> Graph:
    """The import graph of ``root/package`` (see the module docstring for what an edge is)."""
    modules, packages = discover(root, package)
    edges: list[Edge] = []
    unresolved: list[str] = []
    for importer, path in modules.items():
        if path.suffix != ".py":
            continue
        collector = _Collector()
        collector.visit(ast.parse(path.read_text(), str(path)))
        own = {*_ancestors(importer), importer}
        for stmt in collector.statements:
            location = f"{path.relative_to(root)}:{stmt.line}"
            base = _base(importer, importer in packages, stmt)
            if base is None or not _under(base, package):
                continue
            for target in _named(base, stmt, modules):
                if target not in modules:
                    unresolved.append(f"{location}: {target}")
                    continue
                edges.append(Edge(importer, target, location, stmt.typing_only, stmt.local, False))
                for parent in _ancestors(target):
                    if parent not in own and parent in packages:
                        edges.append(
                            Edge(importer, parent, location, stmt.typing_only, stmt.local, True)
                        )
    return Graph(modules, packages, tuple(dict.fromkeys(edges)), tuple(unresolved))


def strongly_connected(
    nodes: Iterable[str], successors: Callable[[str], Iterable[str]]
) -> list[list[str]]:
    """Tarjan's strongly connected components, iteratively, each sorted, in discovery order."""
    index: dict[str, int] = {}
    low: dict[str, int] = {}
    stack: list[str] = []
    on_stack: set[str] = set()
    components: list[list[str]] = []

    def enter(node: str) -> tuple[str, Iterator[str]]:
        index[node] = low[node] = len(index)
        stack.append(node)
        on_stack.add(node)
        return node, iter(successors(node))

    for root in nodes:
        if root in index:
            continue
        work = [enter(root)]
        while work:
            node, pending = work[-1]
            for succ in pending:
                if succ not in index:
                    work.append(enter(succ))
                    break
                if succ in on_stack:
                    low[node] = min(low[node], index[succ])
            else:
                work.pop()
                if work:
                    parent = work[-1][0]
                    low[parent] = min(low[parent], low[node])
                if low[node] == index[node]:
                    component: list[str] = []
                    while not component or component[-1] != node:
                        component.append(stack.pop())
                        on_stack.discard(component[-1])
                    components.append(sorted(component))
    return components


@dataclass(frozen=True, slots=True)
class Cycle:
    """A strongly connected component that loops: its modules and the edges inside it."""

    modules: tuple[str, ...]
    edges: tuple[Edge, ...]

    def example(self) -> list[str]:
        """One shortest loop through the first module (a readable witness of the cycle)."""
        start = self.modules[0]
        succ: dict[str, list[str]] = {}
        for edge in self.edges:
            succ.setdefault(edge.source, []).append(edge.target)
        came_from: dict[str, str] = {}
        queue = deque([start])
        while queue:
            node = queue.popleft()
            for nxt in sorted(set(succ.get(node, ()))):
                if nxt == start:
                    path = [node]
                    while path[-1] != start:
                        path.append(came_from[path[-1]])
                    return [*reversed(path), start]
                if nxt not in came_from:
                    came_from[nxt] = node
                    queue.append(nxt)
        raise AssertionError(f"no loop through {start}")

    def __str__(self) -> str:
        lines = [
            f"cycle of {len(self.modules)} module(s): {', '.join(self.modules)}",
            f"  e.g. {' -> '.join(self.example())}",
        ]
        lines += [f"    {edge}" for edge in self.edges]
        return "\n".join(lines)


def cycles(graph: Graph) -> list[Cycle]:
    """The graph's cycles: components of several modules, and modules importing themselves."""
    found: list[Cycle] = []
    for component in strongly_connected(sorted(graph.modules), graph.successors):
        members = set(component)
        inside = tuple(e for e in graph.edges if e.source in members and e.target in members)
        if len(component) > 1 or inside:
            found.append(Cycle(tuple(component), inside))
    return found


def layer_of(module: str, layers: Mapping[str, Layer]) -> str | None:
    """The layer whose longest prefix holds ``module``."""
    held = [
        (len(prefix), name)
        for name, layer in layers.items()
        for prefix in layer.prefixes
        if _under(module, prefix)
    ]
    return max(held)[1] if held else None


def violations(graph: Graph, layers: Mapping[str, Layer], layer: str) -> list[str]:
    """The import statements of ``layer`` that reach a layer it does not list."""
    found = []
    for edge in graph.edges:
        if edge.implicit or layer_of(edge.source, layers) != layer:
            continue
        target_layer = layer_of(edge.target, layers)
        if target_layer not in layers[layer].allowed:
            found.append(f"{edge}  <- {layer} imports {target_layer}")
    return found


def _importers_of(
    graph: Graph, layers: Mapping[str, Layer], target_layer: str, allowed_sources: Iterable[str]
) -> list[str]:
    allowed = set(allowed_sources)
    return [
        f"{edge}  <- {layer_of(edge.source, layers)} imports {target_layer}"
        for edge in graph.edges
        if not edge.implicit
        and layer_of(edge.target, layers) == target_layer
        and layer_of(edge.source, layers) not in allowed
    ]


@functools.cache
def package_graph() -> Graph:
    return build_graph(ROOT, PACKAGE)


# The package.


def test_the_package_graph_is_not_empty() -> None:
    graph = package_graph()
    assert len(graph.modules) > 150
    assert len(graph.edges) > 500
    assert any(e.typing_only for e in graph.edges)
    assert any(e.local for e in graph.edges)
    assert {layer_of(m, LAYERS) for m in graph.modules} >= {"bson", "core", "runtime", "api"}


def test_the_layer_table_names_only_its_layers() -> None:
    for name, layer in LAYERS.items():
        assert name in layer.allowed
        assert layer.allowed <= LAYERS.keys(), name
        assert all(_under(prefix, PACKAGE) for prefix in layer.prefixes), name


def test_every_package_import_resolves() -> None:
    dangling = package_graph().unresolved
    assert not dangling, "imports of modules that do not exist:\n" + "\n".join(dangling)


def test_no_import_cycles() -> None:
    found = cycles(package_graph())
    assert not found, f"{len(found)} import cycle(s):\n" + "\n\n".join(map(str, found))


@pytest.mark.parametrize("layer", list(LAYERS))
def test_layer_imports_only_what_it_may(layer: str) -> None:
    graph = package_graph()
    members = [m for m in graph.modules if layer_of(m, LAYERS) == layer]
    if not members and layer == "tools":
        pytest.skip("no asyncmongo.demo or asyncmongo.__main__ module")
    assert members, f"no module in the {layer} layer: is its prefix right?"
    bad = violations(graph, LAYERS, layer)
    allowed = ", ".join(sorted(LAYERS[layer].allowed))
    assert not bad, f"{layer} may import only {allowed}:\n" + "\n".join(bad)


def test_nothing_below_the_api_imports_the_api() -> None:
    bad = _importers_of(package_graph(), LAYERS, "api", ["api", "tools", "testing"])
    assert not bad, "the layers below the API import it:\n" + "\n".join(bad)


def test_nothing_outside_testing_and_the_tools_imports_testing() -> None:
    bad = _importers_of(package_graph(), LAYERS, "testing", ["testing", "tools"])
    assert not bad, "asyncmongo.testing is imported from outside it:\n" + "\n".join(bad)


# The checker, on small packages.


def _write(root: Path, files: Mapping[str, str]) -> Graph:
    for name, source in files.items():
        path = root / name
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(source)
    return build_graph(root, "pkg")


def _pairs(graph: Graph) -> set[tuple[str, str]]:
    return {(e.source, e.target) for e in graph.edges}


def test_the_checker_finds_a_cycle_with_its_lines(tmp_path: Path) -> None:
    graph = _write(
        tmp_path,
        {
            "pkg/__init__.py": "",
            "pkg/a.py": "import os\n\nfrom pkg.b import x\n",
            "pkg/b.py": "from pkg import c\n",
            "pkg/c.py": "import pkg.a\n",
            "pkg/d.py": "from pkg.a import y\n",
        },
    )
    [cycle] = cycles(graph)
    assert cycle.modules == ("pkg.a", "pkg.b", "pkg.c")
    assert cycle.example() == ["pkg.a", "pkg.b", "pkg.c", "pkg.a"]
    text = str(cycle)
    assert "pkg.a -> pkg.b  (pkg/a.py:3)" in text
    assert "pkg.c -> pkg.a  (pkg/c.py:1)" in text
    assert "pkg.d" not in text


def test_the_checker_sees_typing_only_and_function_local_imports(tmp_path: Path) -> None:
    graph = _write(
        tmp_path,
        {
            "pkg/__init__.py": "",
            "pkg/a.py": (
                "from typing import TYPE_CHECKING\nif TYPE_CHECKING:\n    from pkg.b import B\n"
                "else:\n    from pkg.e import E\n"
            ),
            "pkg/b.py": "def f():\n    from pkg.a import A\n",
            "pkg/c.py": (
                "import typing\nclass C:\n    async def g(self):\n"
                "        if typing.TYPE_CHECKING:\n            import pkg.d\n"
            ),
            "pkg/d.py": "",
            "pkg/e.py": "",
        },
    )
    kinds = {(e.source, e.target): (e.typing_only, e.local) for e in graph.edges}
    assert kinds == {
        ("pkg.a", "pkg.b"): (True, False),
        ("pkg.a", "pkg.e"): (False, False),
        ("pkg.b", "pkg.a"): (False, True),
        ("pkg.c", "pkg.d"): (True, True),
    }
    [cycle] = cycles(graph)
    assert cycle.modules == ("pkg.a", "pkg.b")
    assert "[typing-only]" in str(cycle) and "[function-local]" in str(cycle)


def test_the_checker_resolves_relative_imports(tmp_path: Path) -> None:
    graph = _write(
        tmp_path,
        {
            "pkg/__init__.py": "from .sub import thing\nfrom . import top\n",
            "pkg/top.py": "from .sub.leaf import x\nfrom . import sub\n",
            "pkg/sub/__init__.py": "from . import leaf\nfrom .leaf import y\n",
            "pkg/sub/leaf.py": "from ..top import z\nfrom .. import other\nfrom . import name\n",
            "pkg/other.py": "from .sub import *\n",
        },
    )
    assert _pairs(graph) == {
        ("pkg", "pkg.sub"),
        ("pkg", "pkg.top"),
        ("pkg.top", "pkg.sub.leaf"),
        ("pkg.top", "pkg.sub"),
        ("pkg.sub", "pkg.sub.leaf"),
        ("pkg.sub.leaf", "pkg.top"),
        ("pkg.sub.leaf", "pkg.other"),
        ("pkg.sub.leaf", "pkg.sub"),
        ("pkg.other", "pkg.sub"),
    }
    assert graph.unresolved == ()


def test_from_package_import_name_means_the_submodule_or_the_init(tmp_path: Path) -> None:
    graph = _write(
        tmp_path,
        {
            "pkg/__init__.py": "",
            "pkg/ops/__init__.py": "VALUE = 1\n",
            "pkg/ops/find.py": "",
            "pkg/user.py": "from pkg.ops import find\nfrom pkg.ops import VALUE\n",
            "pkg/gone.py": "from pkg.missing import x\nimport pkg.ops.nothing\n",
        },
    )
    assert _pairs(graph) == {("pkg.user", "pkg.ops.find"), ("pkg.user", "pkg.ops")}
    assert graph.unresolved == ("pkg/gone.py:1: pkg.missing", "pkg/gone.py:2: pkg.ops.nothing")


def test_a_submodule_depends_on_its_own_package_only_when_it_names_it(tmp_path: Path) -> None:
    files = {
        "pkg/__init__.py": "",
        "pkg/x/__init__.py": "from pkg.x.sub import y\n",
        "pkg/x/sibling.py": "",
        "pkg/x/sub.py": "from pkg.x.sibling import s\n",
    }
    assert cycles(_write(tmp_path / "implicit", files)) == []
    for names_it in ("from pkg.x import name\n", "import pkg.x\n", "from . import name\n"):
        graph = _write(tmp_path / str(len(names_it)), {**files, "pkg/x/sub.py": names_it})
        [cycle] = cycles(graph)
        assert cycle.modules == ("pkg.x", "pkg.x.sub"), names_it


def test_naming_a_module_executes_the_other_packages_on_its_path(tmp_path: Path) -> None:
    graph = _write(
        tmp_path,
        {
            "pkg/__init__.py": "",
            "pkg/low/__init__.py": "from pkg.high import H\n",
            "pkg/low/deep.py": "",
            "pkg/high.py": "from pkg.low.deep import D\n",
        },
    )
    [cycle] = cycles(graph)
    assert cycle.modules == ("pkg.high", "pkg.low")
    assert "[parent package of the module named]" in str(cycle)


def test_a_module_importing_itself_is_a_cycle(tmp_path: Path) -> None:
    graph = _write(tmp_path, {"pkg/__init__.py": "from pkg import VALUE\nVALUE = 1\n"})
    [cycle] = cycles(graph)
    assert cycle.modules == ("pkg",)


def test_tarjan_finds_every_component() -> None:
    succ = {"a": ["b"], "b": ["c", "d"], "c": ["a"], "d": ["e"], "e": ["d", "f"], "f": []}
    found = strongly_connected(sorted(succ), succ.__getitem__)
    assert sorted(found) == [["a", "b", "c"], ["d", "e"], ["f"]]


def test_the_layer_contracts_catch_upward_imports(tmp_path: Path) -> None:
    layers = {
        "low": _layer(["pkg.low"], ["low"]),
        "top": _layer(["pkg"], ["top", "low"]),
    }
    graph = _write(
        tmp_path,
        {
            "pkg/__init__.py": "from pkg.low import L\n",
            "pkg/low/__init__.py": "L = 1\n\ndef f():\n    from pkg.api import A\n",
            "pkg/lower.py": "",
            "pkg/api.py": "from pkg.low import L\nfrom pkg import lower\n",
        },
    )
    assert layer_of("pkg.lower", layers) == "top"
    assert layer_of("pkg.low", layers) == "low"
    assert layer_of("elsewhere", layers) is None
    [bad] = violations(graph, layers, "low")
    assert bad.startswith("pkg.low -> pkg.api  (pkg/low/__init__.py:4)  [function-local]")
    assert violations(graph, layers, "top") == []
