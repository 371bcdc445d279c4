"""The CRUD scenarios (tests/api/crud_scenarios.py) against a simulated standalone."""

from __future__ import annotations

import itertools
from typing import Any

import pytest

from asyncmongo import AsyncMongoClient
from asyncmongo.testing import Standalone
from tests.api.crud_scenarios import SCENARIOS

_names = itertools.count()


@pytest.mark.parametrize("name", sorted(SCENARIOS))
async def test_crud_scenario_on_the_simulator(name: str) -> None:
    events: list[Any] = []
    async with Standalone() as server:
        async with AsyncMongoClient(server.uri, event_listeners=[events.append]) as client:
            coll = client.api_tests[f"{name}_{next(_names)}"]
            await coll.database.command("ping")
            events.clear()
            await SCENARIOS[name](coll, events)
