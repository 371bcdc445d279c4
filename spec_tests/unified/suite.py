"""Parametrising a spec suite's unified files, and running one case.

A suite runner is three lines::

    from spec_tests.unified.suite import run_unified_case, target_pool, unified_params
    pytestmark = pytest.mark.asyncio(loop_scope="module")

    @pytest.mark.parametrize("case", unified_params("crud"))
    async def test_crud_unified(target_pool, case): await run_unified_case(target_pool, case)

Every JSON file under ``spec_tests/data/<suite>/`` that has a ``schemaVersion`` is a unified
file; each of its tests is its own pytest id ``<file>::<test description>``. The module keeps
one :class:`TargetPool`, so all files that want the same topology share one deployment.
"""

from __future__ import annotations

import json
from collections.abc import AsyncIterator
from dataclasses import dataclass
from functools import cache
from pathlib import Path
from typing import Any

import pytest
import pytest_asyncio

from asyncmongo.errors import MongoError
from spec_tests.unified.errors import ApiMissing, Unsupported
from spec_tests.unified.gaps import API_NOT_BUILT, known_gap_reason
from spec_tests.unified.matcher import TestFormatError
from spec_tests.unified.runner import UnifiedTestRunner
from spec_tests.unified.schema import InvalidTestFile, UnifiedFile, load_unified_file
from spec_tests.unified.target import TargetPool, choose_deployment

__all__ = ["DATA", "UnifiedCase", "run_unified_case", "target_pool", "unified_params"]

DATA = Path(__file__).resolve().parent.parent / "data"


@dataclass(frozen=True, slots=True)
class UnifiedCase:
    """One test of one file; ``expect_failure`` for the format's valid-fail files."""

    path: Path
    index: int
    expect_failure: bool = False


def _is_unified(path: Path) -> bool:
    try:
        raw = json.loads(path.read_bytes())
    except ValueError:
        return False
    return isinstance(raw, dict) and "schemaVersion" in raw


def _test_descriptions(path: Path) -> list[str]:
    raw = json.loads(path.read_bytes())
    tests = raw.get("tests")
    if not isinstance(tests, list) or not tests:
        return ["<file>"]
    return [t.get("description", f"test {i}") if isinstance(t, dict) else f"test {i}"
            for i, t in enumerate(tests)]


def unified_params(suite: str, *, expect_failure: bool = False) -> list[Any]:
    """pytest params for every test of every unified file under ``data/<suite>``."""
    root = DATA / suite
    params = []
    for path in sorted(root.rglob("*.json")):
        if not _is_unified(path):
            continue
        relative = path.relative_to(root).as_posix()
        for index, description in enumerate(_test_descriptions(path)):
            params.append(pytest.param(UnifiedCase(path, index, expect_failure),
                                       id=f"{relative}::{description}"))
    return params


@cache
def _load(path: Path) -> UnifiedFile:
    return load_unified_file(path)


@pytest_asyncio.fixture(scope="module", loop_scope="module")
async def target_pool() -> AsyncIterator[TargetPool]:
    """One pool of deployments for a test module, closed when the module is done."""
    pool = TargetPool()
    try:
        yield pool
    finally:
        await pool.close()


async def run_unified_case(pool: TargetPool, case: UnifiedCase) -> None:
    """Run one test: pass, fail, or skip with the written reason."""
    if case.expect_failure:
        await _run_expecting_failure(pool, case)
        return
    try:
        await _run(pool, case)
    except Unsupported as exc:
        pytest.skip(str(exc))


async def _run(pool: TargetPool, case: UnifiedCase) -> None:
    file = _load(case.path)
    test = file.tests[case.index]
    topology, auth = choose_deployment(file.run_on_requirements, file.tests)
    target, internal = await pool.get(topology, auth)
    # A valid-fail test is meant to fail: nothing it hits is excused as a simulator gap.
    runner = UnifiedTestRunner(file, target, internal,
                               excuse_simulator_gaps=not case.expect_failure)
    reason = runner.skip_reason(test)
    if reason is not None:
        raise Unsupported(reason)
    key = (case.path.relative_to(DATA).as_posix(), str(test.get("description", "")))
    listed = known_gap_reason(key, simulated=runner.excuse_simulator_gaps)
    try:
        await runner.run_test(test)
    except ApiMissing as exc:
        missing = API_NOT_BUILT.get(exc.what)
        if missing is None:
            raise AssertionError(f"asyncmongo API lacks {exc.what}, which is not listed in "
                                 "spec_tests/unified/gaps.py API_NOT_BUILT") from exc
        raise Unsupported(f"known driver gap: {missing}") from exc
    except (AssertionError, MongoError) as exc:
        if listed is None:
            raise
        summary = f"{type(exc).__name__}: {exc}"
        raise Unsupported(f"{listed}; the test fails with {summary[:300]}") from exc
    if listed is not None:
        pytest.fail(f"this test passes but spec_tests/unified/gaps.py lists it as a known gap "
                    f"({listed}): remove the entry")


#: What a valid-fail test may legitimately fail with: an assertion, a malformed or
#: unsupported file, or an error the driver raised while the test expected none.
_EXPECTED_FAILURES = (AssertionError, TestFormatError, InvalidTestFile, MongoError)


async def _run_expecting_failure(pool: TargetPool, case: UnifiedCase) -> None:
    try:
        await _run(pool, case)
    except Unsupported as exc:
        pytest.skip(str(exc))
    except _EXPECTED_FAILURES:
        return
    pytest.fail("this valid-fail test was expected to fail, but it passed")
