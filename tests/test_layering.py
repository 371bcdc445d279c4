"""The onion's inner ring is pure: nothing under asyncmongo/bson or asyncmongo/core imports
asyncio, socket, ssl, selectors or time (time and randomness come in as arguments)."""

from __future__ import annotations

import ast
from pathlib import Path

import pytest

PACKAGE = Path(__file__).resolve().parent.parent / "asyncmongo"
FORBIDDEN = {"asyncio", "socket", "ssl", "selectors", "time"}
PURE_FILES = sorted(
    p for ring in ("bson", "core") for p in (PACKAGE / ring).rglob("*.py")
)


def imported_roots(source: str) -> set[str]:
    roots: set[str] = set()
    for node in ast.walk(ast.parse(source)):
        if isinstance(node, ast.Import):
            roots.update(alias.name.split(".")[0] for alias in node.names)
        elif isinstance(node, ast.ImportFrom) and node.level == 0 and node.module:
            roots.add(node.module.split(".")[0])
    return roots


def test_there_are_pure_files() -> None:
    assert PURE_FILES


@pytest.mark.parametrize("path", PURE_FILES, ids=lambda p: str(p.relative_to(PACKAGE)))
def test_pure_module_does_no_io(path: Path) -> None:
    bad = imported_roots(path.read_text()) & FORBIDDEN
    assert not bad, f"{path} imports {sorted(bad)}"


def test_the_checker_sees_imports() -> None:
    assert imported_roots("import asyncio\nfrom time import monotonic\n") == {"asyncio", "time"}
