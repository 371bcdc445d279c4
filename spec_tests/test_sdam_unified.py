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

#: (file name, test description) -> the written reason it cannot pass yet.
SKIPS: dict[tuple[str, str], str] = {}


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
