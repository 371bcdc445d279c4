"""Which command the monitor's checks send (handshake spec, "hello command"): hello once the
handshake's reply said helloOk, or from the start when a serverApi is declared, for the life
of the connection. A reply to hello does not repeat helloOk; reading it as "no helloOk" once
sent every other check as a legacy isMaster, which a server refuses under apiStrict."""

from __future__ import annotations

import asyncio

import pytest

from asyncmongo import AsyncMongoClient, ServerApi
from asyncmongo.core.sdam.events import ServerHeartbeatFailedEvent
from asyncmongo.testing import SimServer

pytestmark = pytest.mark.timeout(30)


@pytest.mark.parametrize("server_api", [None, ServerApi("1", strict=True)],
                         ids=["helloOk", "strict-server-api"])
async def test_checks_keep_using_hello(server_api: ServerApi | None) -> None:
    events: list[object] = []
    async with SimServer(streaming=False) as server:
        options = {"server_api": server_api} if server_api is not None else {}
        async with AsyncMongoClient(f"mongodb://127.0.0.1:{server.port}",
                                    heartbeatFrequencyMS=500,
                                    event_listeners=[events.append], **options) as client:
            await client.admin_command({"ping": 1})
            legacy = server.command_counts["isMaster"]
            hellos = server.command_counts["hello"]
            await asyncio.sleep(1.2)  # two more checks, 500 ms apart
            assert server.command_counts["hello"] >= hellos + 2
            assert server.command_counts["isMaster"] == legacy
            if server_api is not None:
                assert legacy == 0
    assert not [e for e in events if isinstance(e, ServerHeartbeatFailedEvent)]
