"""The load-balancers unified tests (spec_tests/data/load-balancers) through the unified
runner, against asyncmongo.testing's simulated load balancer (LoadBalanced).

Every test passes, or is skipped with the reason the runner gives (an unmet
runOnRequirement, a server feature asyncmongo.testing lacks) or the specific one in ``SKIPS``.
"""

from __future__ import annotations

import json

import pytest

from spec_tests.unified.suite import UnifiedCase, run_unified_case, target_pool, unified_params
from spec_tests.unified.target import TargetPool

__all__ = ["target_pool"]

SKIPS: dict[tuple[str, str], str] = {
    (
        "sdam-error-handling.json",
        "only connections for a specific serviceId are closed when pools are cleared",
    ): "the test needs multiClient (useMultipleMongoses: true) to reach two services behind "
    "the load balancer, but spec_tests/unified/target.py starts LoadBalanced() with one "
    "service and gives multi- and single-mongos clients the same URI, so both cursors' "
    "connections share one serviceId and the clear rightly closes both (the target needs a "
    "second, two-service LoadBalanced(services=2) for useMultipleMongoses clients; reported)",
}


def _case_key(case: UnifiedCase) -> tuple[str, str]:
    tests = json.loads(case.path.read_text())["tests"]
    return case.path.name, str(tests[case.index]["description"])


@pytest.mark.asyncio(loop_scope="module")
@pytest.mark.parametrize("case", unified_params("load-balancers"))
async def test_load_balancers_unified(target_pool: TargetPool, case: UnifiedCase) -> None:
    reason = SKIPS.get(_case_key(case))
    if reason is not None:
        pytest.skip(reason)
    await run_unified_case(target_pool, case)
