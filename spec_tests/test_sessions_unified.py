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

_SNAPSHOT_TIME_NOT_RESOLVED = (
    "the unified runner passes sessionOptions.snapshotTime through as the entity's NAME (the "
    "string 'savedSnapshotTime') instead of the saved entity (spec_tests/unified/entities.py "
    "_create_session / session_options), so the driver sends readConcern.atClusterTime as a "
    "string and the server answers TypeMismatch; with the entity resolved the test passes "
    "against the simulator's snapshot history"
)

#: (file name, test description) -> the written reason it cannot pass here. The
#: snapshot-sessions tests used to skip because the store kept no history; it now answers
#: snapshot reads from retained snapshots keyed by cluster time
#: (asyncmongo/testing/store/snapshots.py), and the 8 without snapshotTime pass.
SKIPS: dict[tuple[str, str], str] = {
    **{
        ("snapshot-sessions.json", f"{name} operation with snapshot and snapshot time"): (
            _SNAPSHOT_TIME_NOT_RESOLVED
        )
        for name in ("Find", "Distinct", "Aggregate", "countDocuments")
    },
    ("snapshot-sessions.json", "Mixed operation with snapshot and snapshotTime"): (
        _SNAPSHOT_TIME_NOT_RESOLVED
    ),
}


@pytest.mark.asyncio(loop_scope="module")
@pytest.mark.parametrize("case", unified_params("sessions"))
async def test_sessions_unified(target_pool: TargetPool, case: UnifiedCase) -> None:
    reason = skip_reason(SKIPS, case)
    if reason is not None:
        pytest.skip(reason)
    await run_case(target_pool, case)
