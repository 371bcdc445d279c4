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

_FOREIGN_SELECTION_LOGS = (
    "server selection log messages carry no topologyId (asyncmongo/runtime/selection_log.py), "
    "so the unified runner (spec_tests/unified/logs.py messages_for) attributes them all to "
    "the one observing client: failPointClient's configureFailPoint selection (started, "
    "waiting, succeeded) lands in 'client''s log and 6 messages are seen where 3 are expected"
)
#: (file name, test description) -> the written reason it cannot pass yet.
SKIPS: dict[tuple[str, str], str] = {
    ("standalone.json", "Failure due to unreachable server"): _FOREIGN_SELECTION_LOGS,
    ("sharded.json", "Failure due to unreachable server"): _FOREIGN_SELECTION_LOGS,
    ("operation-id.json", "Failed bulkWrite operation: log messages have operationIds"): (
        _FOREIGN_SELECTION_LOGS
    ),
    ("operation-id.json", "Failed client bulkWrite operation: log messages have operationIds"): (
        _FOREIGN_SELECTION_LOGS
    ),
}


@pytest.mark.asyncio(loop_scope="module")
@pytest.mark.parametrize("case", unified_params("server-selection/logging"))
async def test_server_selection_logging_unified(target_pool: TargetPool, case: UnifiedCase) -> None:
    reason = skip_reason(SKIPS, case)
    if reason is not None:
        pytest.skip(reason)
    await run_unified_case(target_pool, case)

