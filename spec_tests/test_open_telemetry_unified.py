"""The open-telemetry unified tests (spec_tests/data/open-telemetry) through the unified
runner: each client that observes tracing messages traces to an in-memory exporter of its own
(spec_tests/unified/tracing.py), and its spans are checked as a tree.

Every test passes, or is skipped with the reason the runner gives (an unmet runOnRequirement,
a server feature asyncmongo.testing lacks) or the specific reason written in SKIPS below.
"""

from __future__ import annotations

import pytest

from spec_tests.support.session_suites import skip_reason
from spec_tests.unified.suite import UnifiedCase, run_unified_case, target_pool, unified_params
from spec_tests.unified.target import TargetPool

__all__ = ["target_pool"]

#: (file name, test description or "*") -> the written reason it cannot pass here.
SKIPS: dict[tuple[str, str], str] = {}


@pytest.mark.asyncio(loop_scope="module")
@pytest.mark.parametrize("case", unified_params("open-telemetry"))
async def test_open_telemetry_unified(target_pool: TargetPool, case: UnifiedCase) -> None:
    reason = skip_reason(SKIPS, case)
    if reason is not None:
        pytest.skip(reason)
    await run_unified_case(target_pool, case)
