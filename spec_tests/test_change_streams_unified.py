"""The change streams spec unified tests (spec_tests/data/change-streams)
through the unified runner.

Every test passes, or is skipped with the reason the runner gives (an unmet runOnRequirement,
an asyncmongo API not built yet, a server feature asyncmongo.testing lacks).
"""

from __future__ import annotations

import pytest

from spec_tests.unified.runner import UnifiedTestRunner
from spec_tests.unified.schema import load_unified_file
from spec_tests.unified.suite import (
    DATA,
    UnifiedCase,
    run_unified_case,
    target_pool,
    unified_params,
)
from spec_tests.unified.target import TargetPool

__all__ = ["target_pool"]


@pytest.mark.asyncio(loop_scope="module")
@pytest.mark.parametrize("case", unified_params("change-streams"))
async def test_change_streams_unified(target_pool: TargetPool, case: UnifiedCase) -> None:
    await run_unified_case(target_pool, case)


@pytest.mark.asyncio(loop_scope="module")
async def test_change_streams_unified_on_a_single_server(target_pool: TargetPool) -> None:
    """change-streams-errors.json's single-topology test. The suite runs each file on the one
    simulated topology where most of its tests can run (a replica set here), so that test
    is skipped above; it runs here against a standalone, unchanged."""
    file = load_unified_file(DATA / "change-streams" / "unified" / "change-streams-errors.json")
    test = next(t for t in file.tests if "single server" in str(t.get("description")))
    target, internal = await target_pool.get("single")
    runner = UnifiedTestRunner(file, target, internal, excuse_simulator_gaps=False)
    assert runner.skip_reason(test) is None
    await runner.run_test(test)
