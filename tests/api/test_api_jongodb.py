"""The CRUD scenarios against jongodb, an independent MongoDB-compatible server.

Every scenario uses its own collection (jongodb has no ``drop``), in a database unique to
this test run, so reruns against the shared server do not collide.
"""

from __future__ import annotations

import itertools
import os
from typing import Any

import pytest

from asyncmongo import AsyncMongoClient
from tests.api.crud_scenarios import SCENARIOS
from tests.support.jongodb import jongodb_uri  # noqa: F401 - the fixture

pytestmark = pytest.mark.jongodb

_names = itertools.count()

_DUPLICATE = (
    "jongodb answers a duplicate key in a multi-document insert with a top-level ok:0 "
    "E11000 instead of writeErrors (PyMongo's insert_many raises DuplicateKeyError there too), "
    "so no BulkWriteError with indexes can come back; covered on the simulator"
)
#: Scenarios jongodb cannot run, each checked against PyMongo doing the same on jongodb.
JONGODB_GAPS = {
    "bulk_write_ordered_error": _DUPLICATE,
    "bulk_write_unordered_errors_keep_user_indexes": _DUPLICATE,
    "insert_many_unordered_reports_indexes": _DUPLICATE,
    "database_and_run_command": "jongodb has no listCollections command (code 59)",
    "indexes": "jongodb has no dropIndexes command (code 59)",
    "projections": ("jongodb ignores projections (find and findAndModify return whole documents)"),
    "unacknowledged_writes": (
        "jongodb replies to moreToCome (w:0) requests, which the OP_MSG spec forbids; the "
        "stray reply breaks the connection for us and for PyMongo (ProtocolError)"
    ),
    "pipeline_update": "jongodb does not support aggregation expressions in pipeline updates",
}
_DATABASE = f"api_{os.getpid()}"


@pytest.mark.parametrize("name", sorted(SCENARIOS))
async def test_crud_scenario_on_jongodb(name: str, jongodb_uri: str) -> None:  # noqa: F811
    if name in JONGODB_GAPS:
        pytest.skip(JONGODB_GAPS[name])
    events: list[Any] = []
    async with AsyncMongoClient(jongodb_uri, event_listeners=[events.append]) as client:
        coll = client[_DATABASE][f"{name}_{next(_names)}"]
        await coll.database.command("ping")
        events.clear()
        await SCENARIOS[name](coll, events)
