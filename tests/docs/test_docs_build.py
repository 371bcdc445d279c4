"""The documentation site builds strictly: any MkDocs or mkdocstrings warning (a broken link,
a page missing from the nav, an unresolvable reference) fails the test."""

from __future__ import annotations

import importlib.util
import os
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]
NEEDED = ("mkdocs", "material", "mkdocstrings", "mkdocstrings_handlers.python")


def _missing() -> list[str]:
    missing = []
    for name in NEEDED:
        try:
            found = importlib.util.find_spec(name) is not None
        except ModuleNotFoundError:
            found = False
        if not found:
            missing.append(name)
    return missing


@pytest.mark.slow
@pytest.mark.skipif(
    bool(_missing()),
    reason=f"mkdocs is not installed ({', '.join(_missing())} missing): "
    'pip install -e ".[docs]" to build the documentation',
)
def test_docs_build_strictly(tmp_path: Path) -> None:
    done = subprocess.run(
        [sys.executable, "-m", "mkdocs", "build", "--strict", "--site-dir", str(tmp_path)],
        cwd=ROOT,
        capture_output=True,
        text=True,
        timeout=280,
        env={**os.environ, "NO_MKDOCS_2_WARNING": "1"},
    )
    assert done.returncode == 0, done.stderr[-4000:]
    for page in ("index.html", "quickstart/index.html", "guides/testing/index.html",
                 "reference/client/index.html", "changelog/index.html",
                 "guides/migrating/index.html"):
        assert (tmp_path / page).is_file(), page
    reference = (tmp_path / "reference/client/index.html").read_text()
    assert "AsyncMongoClient" in reference and "topology_description" in reference
    changelog = (tmp_path / "changelog/index.html").read_text()
    assert "Unreleased" in changelog


def test_every_guide_and_reference_page_is_in_the_nav() -> None:
    nav = (ROOT / "mkdocs.yml").read_text()
    pages = sorted(p.relative_to(ROOT / "docs").as_posix() for p in (ROOT / "docs").rglob("*.md"))
    assert [page for page in pages if page not in nav] == []
    assert "Migrating from PyMongo and Motor" in nav
