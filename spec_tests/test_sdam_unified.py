"""SDAM unified spec tests (spec_tests/data/server-discovery-and-monitoring/unified) through the
unified test runner, against asyncmongo.testing's simulated deployments.

Every file and test is collected; the runner skips what the target cannot play, with its
reason (authentication, log-message capture, server versions, missing simulator commands).
The tests in ``SKIPS`` are skipped here with the specific reason they cannot pass yet.
"""

from __future__ import annotations

import json

import pytest

from spec_tests.unified.suite import UnifiedCase, run_unified_case, target_pool, unified_params
from spec_tests.unified.target import TargetPool

__all__ = ["target_pool"]

_WHERE = (
    "the test blocks a find with $where: 'sleep(2000)', which asyncmongo.testing's store "
    "does not implement (it answers BadValue at once, so no monitor timeout happens)"
)

SKIPS: dict[tuple[str, str], str] = {
    (
        "interruptInUse-pool-clear.json",
        "Connection pool clear uses interruptInUseConnections=true after monitor timeout",
    ): _WHERE,
    (
        "interruptInUse-pool-clear.json",
        "Error returned from connection pool clear with interruptInUseConnections=true is "
        "retryable",
    ): _WHERE,
    (
        "interruptInUse-pool-clear.json",
        "Error returned from connection pool clear with interruptInUseConnections=true is "
        "retryable for write",
    ): _WHERE,
}


def _case_key(case: UnifiedCase) -> tuple[str, str]:
    tests = json.loads(case.path.read_text())["tests"]
    return case.path.name, str(tests[case.index]["description"])


@pytest.mark.asyncio(loop_scope="module")
@pytest.mark.parametrize("case", unified_params("server-discovery-and-monitoring/unified"))
async def test_sdam_unified(target_pool: TargetPool, case: UnifiedCase) -> None:
    reason = SKIPS.get(_case_key(case))
    if reason is not None:
        pytest.skip(reason)
    await run_unified_case(target_pool, case)
