"""The sessions unified tests (spec_tests/data/sessions) through the unified runner,
against asyncmongo.testing's simulated deployments.

Every test passes, or is skipped with the reason the runner gives (an unmet runOnRequirement,
a server feature asyncmongo.testing lacks) or the specific reason written in SKIPS below.
The runner sends killAllSessions before each test; the simulator ends every session for it.
"""

from __future__ import annotations

import pytest

from spec_tests.support.session_suites import run_case, skip_reason
from spec_tests.unified.suite import UnifiedCase, target_pool, unified_params
from spec_tests.unified.target import TargetPool

__all__ = ["target_pool"]

_NO_SNAPSHOT_READS = (
    "asyncmongo.testing's store keeps no history and does not answer a snapshot read with "
    "atClusterTime, so a later read cannot see the snapshot (the driver sends readConcern "
    "{level: snapshot}, and atClusterTime once a reply gives one: tests/sessions)"
)
_NO_SNAPSHOT_TIME_OPTION = (
    "the unified runner does not map the snapshotTime session option yet "
    "(spec_tests/unified/entities.py session_options); and " + _NO_SNAPSHOT_READS
)

SKIPS: dict[tuple[str, str], str] = {
    ("snapshot-sessions.json", "*"): _NO_SNAPSHOT_READS,
    **{
        ("snapshot-sessions.json", f"{name} operation with snapshot and snapshot time"): (
            _NO_SNAPSHOT_TIME_OPTION
        )
        for name in ("Find", "Distinct", "Aggregate", "countDocuments")
    },
    ("snapshot-sessions.json", "Mixed operation with snapshot and snapshotTime"): (
        _NO_SNAPSHOT_TIME_OPTION
    ),
}


@pytest.mark.asyncio(loop_scope="module")
@pytest.mark.parametrize("case", unified_params("sessions"))
async def test_sessions_unified(target_pool: TargetPool, case: UnifiedCase) -> None:
    reason = skip_reason(SKIPS, case)
    if reason is not None:
        pytest.skip(reason)
    await run_case(target_pool, case)
