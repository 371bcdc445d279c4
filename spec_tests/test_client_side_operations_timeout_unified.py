"""The client-side-operations-timeout unified tests (spec_tests/data/client-side-operations-timeout)
through the unified runner, against asyncmongo.testing's simulated deployments.

Every test passes, or is skipped with the reason the runner gives (an unmet runOnRequirement,
a server feature asyncmongo.testing lacks) or the specific reason written in SKIPS below.
"""

from __future__ import annotations

import pytest

from spec_tests.support.session_suites import run_case, skip_reason
from spec_tests.unified.suite import UnifiedCase, target_pool, unified_params
from spec_tests.unified.target import TargetPool

__all__ = ["target_pool"]

_REFRESHED_ITERATION = (
    "the getMore is blocked 60ms and timeoutMS (100) is refreshed for each iteration, so "
    "under the spec's iteration rule (which the runner's other iteration tests check) it "
    "cannot time out")

SKIPS: dict[tuple[str, str], str] = {
    ("runCursorCommand.json", "Non-tailable cursor iteration timeoutMS is refreshed for "
                              "getMore if timeoutMode is iteration - failure"):
        _REFRESHED_ITERATION,
    ("runCursorCommand.json", "Tailable cursor iteration timeoutMS is refreshed for getMore "
                              "- failure"): _REFRESHED_ITERATION,
    ("runCursorCommand.json", "Tailable cursor awaitData iteration timeoutMS is refreshed for "
                              "getMore - failure"): _REFRESHED_ITERATION,
}


@pytest.mark.asyncio(loop_scope="module")
@pytest.mark.parametrize("case", unified_params("client-side-operations-timeout"))
async def test_client_side_operations_timeout_unified(target_pool: TargetPool,
                                                      case: UnifiedCase) -> None:
    reason = skip_reason(SKIPS, case)
    if reason is not None:
        pytest.skip(reason)
    await run_case(target_pool, case)
