"""The server selection spec's logging tests (spec_tests/data/server-selection/logging)
through the unified runner, against asyncmongo.testing's simulated deployments.

Every test passes, or is skipped with the reason the runner gives (an unmet runOnRequirement,
an asyncmongo API not built yet, a server feature asyncmongo.testing lacks) or the specific
reason written in SKIPS below.
"""

from __future__ import annotations

import pytest

from spec_tests.support.session_suites import skip_reason
from spec_tests.unified.suite import UnifiedCase, run_unified_case, target_pool, unified_params
from spec_tests.unified.target import TargetPool

__all__ = ["target_pool"]

#: (file name, test description) -> the written reason it cannot pass yet.
SKIPS: dict[tuple[str, str], str] = {}


@pytest.mark.asyncio(loop_scope="module")
@pytest.mark.parametrize("case", unified_params("server-selection/logging"))
async def test_server_selection_logging_unified(target_pool: TargetPool, case: UnifiedCase) -> None:
    reason = skip_reason(SKIPS, case)
    if reason is not None:
        pytest.skip(reason)
    await run_unified_case(target_pool, case)

