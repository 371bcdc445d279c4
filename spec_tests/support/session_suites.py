"""Shared by the session, transaction and retryability suite runners: written skip reasons
looked up by (file, test description), and running one case.

Before each test the unified format has the runner send ``killAllSessions`` so that no
transaction left open by an earlier test (one whose abort failed on purpose, for instance)
holds document locks; asyncmongo.testing honours it (its store aborts every open transaction
and closes the sessions' cursors: asyncmongo/testing/builtins.py), so no emulation is needed.
"""

from __future__ import annotations

import json
from functools import cache
from pathlib import Path

from spec_tests.unified.suite import UnifiedCase, run_unified_case
from spec_tests.unified.target import TargetPool

__all__ = ["case_key", "run_case", "skip_reason"]


@cache
def _descriptions(path: Path) -> tuple[str, ...]:
    tests = json.loads(path.read_text())["tests"]
    return tuple(str(test["description"]) for test in tests)


def case_key(case: UnifiedCase) -> tuple[str, str]:
    """(file name, test description) of a case."""
    return case.path.name, _descriptions(case.path)[case.index]


def skip_reason(skips: dict[tuple[str, str], str], case: UnifiedCase) -> str | None:
    """The written reason for skipping ``case`` (by file and description, or by file with
    the description ``"*"``), if there is one."""
    name, description = case_key(case)
    return skips.get((name, description)) or skips.get((name, "*"))


async def run_case(pool: TargetPool, case: UnifiedCase) -> None:
    """Run one case (the unified runner sends killAllSessions first)."""
    await run_unified_case(pool, case)
