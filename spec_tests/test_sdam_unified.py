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

_CHECK_IN_ORDER = (
    "asyncmongo/runtime/operation_executor.py checks the connection in before the SDAM "
    "verdict clears the pool, so the connection is not closed as stale and no "
    "PoolClearedEvent precedes the check-in (asyncmongo/runtime/executor.py has the order "
    "the spec wants; the fix was reported to the operation executor's owner)"
)
_WHERE = (
    "the test blocks a find with $where: 'sleep(2000)', which asyncmongo.testing's store "
    "does not implement (it answers BadValue at once, so no monitor timeout happens)"
)

_SHUTDOWN_TV = (
    "asyncmongo.testing stamps shutdown errors (code 91) with the member's current "
    "topologyVersion, so SDAM rightly ignores them as stale; mongod appends topologyVersion "
    "to ShutdownErrors only in quiesce mode (NotPrimaryErrors always), so against mongod the "
    "error is not stale (reported to the simulator's owner)"
)

SKIPS: dict[tuple[str, str], str] = {
    ("find-shutdown-error.json", "Concurrent shutdown error on find"): _SHUTDOWN_TV,
    ("insert-shutdown-error.json", "Concurrent shutdown error on insert"): _SHUTDOWN_TV,
    ("minPoolSize-error.json", "Server error on minPoolSize background creation"): _SHUTDOWN_TV,
    (
        "auth-shutdown-error.json",
        "Reset server and pool after shutdown error during authentication",
    ): _SHUTDOWN_TV,
    (
        "pool-clear-application-error.json",
        "Pool is cleared before application connection is checked into the pool",
    ): _CHECK_IN_ORDER,
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
