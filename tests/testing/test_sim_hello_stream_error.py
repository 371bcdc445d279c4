"""A fail point's error reply ends an exhaust hello stream, and the connection stays usable:
the stream's pending end-of-file read is over before the connection reads its next request
(it used to raise "readexactly() called while another coroutine is already waiting" and drop
the connection, logged as an unhandled exception in the server's callback)."""

from __future__ import annotations

import pytest

from asyncmongo.core.wire.opcodes import OpMsgFlags
from asyncmongo.testing import SimServer
from tests.testing.raw_client import RawClient

pytestmark = pytest.mark.timeout(15)

HELLO = {"hello": 1, "$db": "admin"}


async def test_error_reply_ends_the_stream_and_the_connection_keeps_serving() -> None:
    async with SimServer() as server:
        client = await RawClient.connect(server.port)
        try:
            tv = (await client.command(HELLO))["topologyVersion"]
            await client.send_msg({**HELLO, "topologyVersion": tv, "maxAwaitTimeMS": 50},
                                  flags=OpMsgFlags.EXHAUST_ALLOWED)
            assert (await client.read()).more_to_come
            server.fail_point({"times": 1}, failCommands=["hello"], errorCode=91)
            error = await client.read()             # the next streamed hello fails
            assert not error.more_to_come and error.document["code"] == 91
            assert (await client.command({"ping": 1, "$db": "admin"}))["ok"] == 1.0
        finally:
            await client.close()
