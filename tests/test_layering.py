"""The onion's rings, checked on the source:

- the inner ring is pure: nothing under asyncmongo/bson or asyncmongo/core imports asyncio,
  socket, ssl, selectors or time (time and randomness come in as arguments);
- the inner ring points inwards only: asyncmongo/bson imports only itself, asyncmongo/core
  only itself, asyncmongo.bson and the (pure) asyncmongo.errors;
- monitoring sits below the runtime: asyncmongo/monitoring imports only itself, bson, core
  and errors, and asyncmongo/runtime only itself, bson, core, errors and monitoring (never
  the sessions or the API), typing-only and function-level imports included;
- no module of the package imports PyMongo or its ``bson``/``gridfs`` (PyMongo is a peer in
  tests and benchmarks only), neither by ``import`` nor through ``importlib``/``__import__``.
"""

from __future__ import annotations

import ast
from pathlib import Path

import pytest

PACKAGE = Path(__file__).resolve().parent.parent / "asyncmongo"
FORBIDDEN = {"asyncio", "socket", "ssl", "selectors", "time"}
PEER_PACKAGES = {"pymongo", "bson", "gridfs", "motor"}
PURE_FILES = sorted(
    p for ring in ("bson", "core") for p in (PACKAGE / ring).rglob("*.py")
)
ALL_FILES = sorted(PACKAGE.rglob("*.py"))
#: asyncmongo.compat, the PyMongo-compatible client, exists to hand back PyMongo's classes:
#: it alone imports PyMongo, and nothing else in the package imports it (checked below).
COMPAT = PACKAGE / "compat"
NON_COMPAT_FILES = [p for p in ALL_FILES if COMPAT not in p.parents]
MONITORING_FILES = sorted((PACKAGE / "monitoring").rglob("*.py"))
RUNTIME_FILES = sorted((PACKAGE / "runtime").rglob("*.py"))
#: What each ring may import from the package (module prefixes).
ALLOWED_INWARD = {
    "bson": ("asyncmongo.bson",),
    "core": ("asyncmongo.core", "asyncmongo.bson", "asyncmongo.errors"),
    "monitoring": (
        "asyncmongo.monitoring",
        "asyncmongo.bson",
        "asyncmongo.core",
        "asyncmongo.errors",
    ),
    "runtime": (
        "asyncmongo.runtime",
        "asyncmongo.bson",
        "asyncmongo.core",
        "asyncmongo.errors",
        "asyncmongo.monitoring",
    ),
}


def _rel(path: Path) -> str:
    return str(path.relative_to(PACKAGE))


def imported_modules(source: str) -> set[str]:
    """Absolute module names imported by ``source`` (statements and constant dynamic imports)."""
    modules: set[str] = set()
    for node in ast.walk(ast.parse(source)):
        if isinstance(node, ast.Import):
            modules.update(alias.name for alias in node.names)
        elif isinstance(node, ast.ImportFrom) and node.level == 0 and node.module:
            modules.add(node.module)
        elif isinstance(node, ast.Call) and _is_dynamic_import(node.func) and node.args:
            first = node.args[0]
            if isinstance(first, ast.Constant) and isinstance(first.value, str):
                modules.add(first.value)
    return modules


def _is_dynamic_import(func: ast.expr) -> bool:
    if isinstance(func, ast.Name):
        return func.id in {"__import__", "import_module"}
    return isinstance(func, ast.Attribute) and func.attr == "import_module"


def imported_roots(source: str) -> set[str]:
    return {name.split(".")[0] for name in imported_modules(source)}


def test_there_are_pure_files() -> None:
    assert len(PURE_FILES) > 20
    assert len(ALL_FILES) > len(PURE_FILES)


@pytest.mark.parametrize("path", PURE_FILES, ids=_rel)
def test_pure_module_does_no_io(path: Path) -> None:
    bad = imported_roots(path.read_text()) & FORBIDDEN
    assert not bad, f"{path} imports {sorted(bad)}"


def outward_imports(path: Path) -> list[str]:
    """The package modules ``path`` imports that its ring may not (see ``ALLOWED_INWARD``)."""
    allowed = ALLOWED_INWARD[path.relative_to(PACKAGE).parts[0]]
    own = {m for m in imported_modules(path.read_text()) if m.split(".")[0] == "asyncmongo"}
    return sorted(m for m in own if not any(m == a or m.startswith(a + ".") for a in allowed))


@pytest.mark.parametrize("path", PURE_FILES, ids=_rel)
def test_inner_ring_imports_only_inwards(path: Path) -> None:
    bad = outward_imports(path)
    assert not bad, f"{path} reaches outwards to {bad}"


@pytest.mark.parametrize("path", MONITORING_FILES, ids=_rel)
def test_monitoring_imports_only_bson_core_errors(path: Path) -> None:
    bad = outward_imports(path)
    assert not bad, f"{path} reaches above monitoring to {bad}"


@pytest.mark.parametrize("path", RUNTIME_FILES, ids=_rel)
def test_runtime_imports_only_what_lies_below_it(path: Path) -> None:
    bad = outward_imports(path)
    assert not bad, f"{path} reaches above the runtime to {bad}"


@pytest.mark.parametrize("path", NON_COMPAT_FILES, ids=_rel)
def test_package_never_imports_pymongo(path: Path) -> None:
    bad = imported_roots(path.read_text()) & PEER_PACKAGES
    assert not bad, f"{path} imports {sorted(bad)} (PyMongo is a test/benchmark peer only)"


@pytest.mark.parametrize("path", NON_COMPAT_FILES, ids=_rel)
def test_only_compat_imports_compat(path: Path) -> None:
    bad = {m for m in imported_modules(path.read_text()) if m.startswith("asyncmongo.compat")}
    assert not bad, f"{path} imports {sorted(bad)}: only PyMongo-compatible users import it"


def test_the_checker_sees_imports() -> None:
    assert imported_roots("import asyncio\nfrom time import monotonic\n") == {"asyncio", "time"}


def test_the_checker_sees_peer_and_dynamic_imports() -> None:
    source = (
        "import bson.json_util\nfrom pymongo import MongoClient\n"
        "import importlib\nimportlib.import_module('gridfs')\n__import__('motor.core')\n"
        "from . import bson as ours\n"
    )
    assert imported_roots(source) & PEER_PACKAGES == {"bson", "pymongo", "gridfs", "motor"}


def test_the_checker_sees_typing_only_and_function_level_imports() -> None:
    source = (
        "from typing import TYPE_CHECKING\n"
        "if TYPE_CHECKING:\n    from asyncmongo.session import AsyncClientSession\n"
        "def f():\n    from asyncmongo.client import AsyncMongoClient\n"
    )
    assert {"asyncmongo.session", "asyncmongo.client"} <= imported_modules(source)


def test_the_checker_ignores_relative_imports() -> None:
    assert imported_modules("from .bson import encode\nfrom ..errors import X\n") == set()
