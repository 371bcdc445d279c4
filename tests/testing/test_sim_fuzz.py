"""Random and mutated requests: the parser only ever raises ProtocolError, and a live server
survives whatever a client sends (the connection closes, the server keeps serving)."""

from __future__ import annotations

import asyncio

from hypothesis import given, settings
from hypothesis import strategies as st

from asyncmongo.bson import encode
from asyncmongo.core.wire.op_msg import encode_op_msg
from asyncmongo.core.wire.opcodes import HEADER, OpCode
from asyncmongo.errors import ProtocolError
from asyncmongo.testing import SimServer
from asyncmongo.testing.protocol import decode_request
from tests.testing.raw_client import RawClient

VALID = b"".join(encode_op_msg(1, encode({"find": "c", "filter": {"a": 1}, "$db": "db"})))


def _try(message: bytes) -> None:
    try:
        decode_request(message)
    except ProtocolError:
        pass


@given(st.binary(max_size=200))
def test_random_bytes_are_protocol_errors(noise: bytes) -> None:
    _try(noise)
    for opcode in (OpCode.OP_MSG, OpCode.OP_QUERY, OpCode.OP_COMPRESSED):
        _try(HEADER.pack(16 + len(noise), 1, 0, opcode) + noise)


@given(st.integers(0, len(VALID) - 1), st.integers(0, 255))
def test_mutated_requests_are_protocol_errors(position: int, value: int) -> None:
    mutated = bytearray(VALID)
    mutated[position] = value
    _try(bytes(mutated))


@settings(max_examples=25, deadline=None)
@given(st.binary(min_size=1, max_size=120))
def test_server_survives_any_bytes(noise: bytes) -> None:
    async def scenario() -> None:
        async with SimServer() as server:
            client = await RawClient.connect(server.port)
            client.writer.write(HEADER.pack(16 + len(noise), 1, 0, OpCode.OP_MSG) + noise)
            await client.writer.drain()
            await client.close()
            healthy = await RawClient.connect(server.port)
            try:
                assert (await healthy.command({"ping": 1, "$db": "admin"}))["ok"] == 1.0
            finally:
                await healthy.close()

    asyncio.run(scenario())
