"""The client backpressure unified tests (spec_tests/data/client-backpressure) through the
unified runner, against asyncmongo.testing's simulated deployments.

Every test passes, or is skipped with the reason the runner gives (an unmet runOnRequirement,
a server feature asyncmongo.testing lacks) or the specific reason written in SKIPS below.
The backoff sleeps are real (the client's default jitter): the suite checks the retry loop
as users get it, not a schedule pinned for tests.
"""

from __future__ import annotations

import pytest

from spec_tests.support.session_suites import run_case, skip_reason
from spec_tests.unified.suite import UnifiedCase, target_pool, unified_params
from spec_tests.unified.target import TargetPool

__all__ = ["target_pool"]

SKIPS: dict[tuple[str, str], str] = {}


@pytest.mark.asyncio(loop_scope="module")
@pytest.mark.parametrize("case", unified_params("client-backpressure"))
async def test_client_backpressure_unified(target_pool: TargetPool, case: UnifiedCase) -> None:
    reason = skip_reason(SKIPS, case)
    if reason is not None:
        pytest.skip(reason)
    await run_case(target_pool, case)
