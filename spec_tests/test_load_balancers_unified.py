"""The load-balancers unified tests (spec_tests/data/load-balancers) through the unified
runner, against asyncmongo.testing's simulated load balancers: a client with
``useMultipleMongoses: false`` reaches one fronting a single service, any other one fronting
two (unified test format), both over the same data.

Every test passes, or is skipped with the reason the runner gives (an unmet
runOnRequirement, a server feature asyncmongo.testing lacks).
"""

from __future__ import annotations

import pytest

from spec_tests.unified.suite import UnifiedCase, run_unified_case, target_pool, unified_params
from spec_tests.unified.target import TargetPool

__all__ = ["target_pool"]


@pytest.mark.asyncio(loop_scope="module")
@pytest.mark.parametrize("case", unified_params("load-balancers"))
async def test_load_balancers_unified(target_pool: TargetPool, case: UnifiedCase) -> None:
    await run_unified_case(target_pool, case)
