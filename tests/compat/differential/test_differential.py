"""The differential API suite: PyMongo's AsyncMongoClient against asyncmongo.compat's.

Each API area's scripts (``scripts.py``) run through both clients against the same simulated
deployment; every step's result, result class, error and commands must agree, except for the
differences listed in ``DELIBERATE_DIFFERENCES`` (and in docs/guides/migrating.md, "Known
differences from PyMongo").
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest

from asyncmongo.testing import ReplicaSet, Standalone
from tests.compat.differential.differences import DELIBERATE, DELIBERATE_DIFFERENCES
from tests.compat.differential.harness import Run, compare
from tests.compat.differential.scripts import AREAS
from tests.support.pymongo_peer import PYMONGO_PEER_MARKS, collect_pymongo_leaks  # noqa: F401

pytestmark = [pytest.mark.timeout(60), *PYMONGO_PEER_MARKS]


def _deployment(kind: str) -> Any:
    return Standalone() if kind == "standalone" else ReplicaSet(members=1)


@pytest.mark.parametrize("area", list(AREAS))
async def test_area(area: str) -> None:
    kind, scripts = AREAS[area]
    differences: list[str] = []
    async with _deployment(kind) as deployment:
        for script in scripts:
            name = script.__name__
            runs = [Run(client, deployment.uri, name) for client in ("pymongo", "compat")]
            for run in runs:
                await script(run)
            differences += compare(name, runs[0], runs[1], DELIBERATE_DIFFERENCES)
    assert not differences, "\n".join(differences)


def test_deliberate_differences_name_existing_steps() -> None:
    """Every listed difference names an area script and an aspect that exist."""
    scripts = {s.__name__ for _, group in AREAS.values() for s in group}
    for script, _label, aspect in DELIBERATE_DIFFERENCES:
        assert script in scripts
        assert aspect in {"value", "class", "commands", "error"}


def test_the_migration_guide_lists_every_deliberate_difference() -> None:
    guide = (Path(__file__).parents[3] / "docs" / "guides" / "migrating.md").read_text()
    section = guide.split("## Known differences from PyMongo", 1)[1].split("\n## ", 1)[0]
    for entry in DELIBERATE:
        assert f"- **{entry.what}.** {entry.why}" in section, entry.what
