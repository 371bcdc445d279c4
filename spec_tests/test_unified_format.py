"""The unified test format's own suite: valid-pass passes, valid-fail fails, invalid is rejected.

invalid/ files must be refused by the schema check before anything runs; valid-fail/ files
must make the runner fail (an assertion, a malformed file, an unexpected driver error), never
pass; valid-pass/ files run like any spec suite.
"""

from __future__ import annotations

from pathlib import Path

import pytest

from spec_tests.unified.schema import InvalidTestFile, load_unified_file
from spec_tests.unified.suite import (
    DATA,
    UnifiedCase,
    run_unified_case,
    target_pool,
    unified_params,
)
from spec_tests.unified.target import TargetPool

__all__ = ["target_pool"]

_INVALID = sorted((DATA / "unified-test-format" / "invalid").glob("*.json"))


@pytest.mark.parametrize("path", _INVALID, ids=[p.stem for p in _INVALID])
def test_invalid_file_is_rejected(path: Path) -> None:
    with pytest.raises(InvalidTestFile):
        load_unified_file(path)


@pytest.mark.asyncio(loop_scope="module")
@pytest.mark.parametrize("case", unified_params("unified-test-format/valid-pass"))
async def test_valid_pass(target_pool: TargetPool, case: UnifiedCase) -> None:
    await run_unified_case(target_pool, case)


@pytest.mark.asyncio(loop_scope="module")
@pytest.mark.parametrize("case", unified_params("unified-test-format/valid-fail",
                                                expect_failure=True))
async def test_valid_fail(target_pool: TargetPool, case: UnifiedCase) -> None:
    await run_unified_case(target_pool, case)
