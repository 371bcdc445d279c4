"""The CRUD spec's rawData tests (``*-rawdata.json``) against the simulator playing MongoDB 8.2.

asyncmongo.testing plays 8.0 (maxWireVersion 25), so in spec_tests/test_crud_unified.py the
rawData cases that need minServerVersion 8.2.0 are skipped by their runOnRequirements (their
"less than 8.2.0 - ignore argument" twins run there). Here the same files run with the
simulator claiming 8.2.0 / maxWireVersion 27, so the driver's side of rawData (sending
``rawData`` to an 8.2 server, in every command and in client bulkWrite) is tested too; the
"ignore argument" twins are skipped here by their runOnRequirements instead.

The rawData files have no initialData, so against one long-lived deployment insertOne's and
insertMany's ``{_id: 2}`` would collide (in the full crud run other files' initialData drop
the collection in between); each case here starts from an empty ``crud-tests`` database.
"""

from __future__ import annotations

from collections.abc import Iterator

import pytest

from asyncmongo.testing import builtins, member
from spec_tests.unified import target
from spec_tests.unified.schema import load_unified_file
from spec_tests.unified.suite import UnifiedCase, run_unified_case, target_pool, unified_params
from spec_tests.unified.target import TargetPool, choose_deployment

__all__ = ["target_pool"]

#: MongoDB 8.2's wire version (the driver sends rawData from this one on).
WIRE_VERSION_8_2 = 27

RAW_DATA_CASES = [param for param in unified_params("crud")
                  if param.values[0].path.name.endswith("-rawdata.json")]


@pytest.fixture
def mongod_8_2(monkeypatch: pytest.MonkeyPatch) -> Iterator[None]:
    """The simulator (hello, buildInfo) and the runner's runOnRequirements both see 8.2."""
    monkeypatch.setattr(member, "MAX_WIRE_VERSION", WIRE_VERSION_8_2)
    monkeypatch.setattr(builtins, "SERVER_VERSION", "8.2.0")
    monkeypatch.setattr(target, "SIMULATED_VERSION", (8, 2, 0))
    yield


def test_every_rawdata_file_is_collected() -> None:
    assert len({param.values[0].path for param in RAW_DATA_CASES}) >= 20


@pytest.mark.asyncio(loop_scope="module")
@pytest.mark.parametrize("case", RAW_DATA_CASES)
async def test_crud_rawdata_unified(mongod_8_2: None, target_pool: TargetPool,
                                    case: UnifiedCase) -> None:
    file = load_unified_file(case.path)
    _, internal = await target_pool.get(*choose_deployment(file.run_on_requirements,
                                                           file.tests))
    await internal.drop_database("crud-tests")
    await run_unified_case(target_pool, case)
