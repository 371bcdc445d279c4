"""The GridFS spec unified tests (spec_tests/data/gridfs) through the unified runner:
bucket entities are asyncmongo.gridfs.AsyncGridFSBucket.

Every test passes, or is skipped with the reason the runner gives (an unmet runOnRequirement,
an asyncmongo API not built yet, a server feature asyncmongo.testing lacks).
"""

from __future__ import annotations

import pytest

from spec_tests.unified.suite import UnifiedCase, run_unified_case, target_pool, unified_params
from spec_tests.unified.target import TargetPool

__all__ = ["target_pool"]


@pytest.mark.asyncio(loop_scope="module")
@pytest.mark.parametrize("case", unified_params("gridfs"))
async def test_gridfs_unified(target_pool: TargetPool, case: UnifiedCase) -> None:
    await run_unified_case(target_pool, case)
