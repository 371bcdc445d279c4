"""A minimal wire client for the simulator's tests: OP_MSG / OP_QUERY out, raw replies in."""

from __future__ import annotations

import asyncio
import struct
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

from asyncmongo.bson import decode, encode
from asyncmongo.core.wire.compression import Compressor, decode_op_compressed, encode_op_compressed
from asyncmongo.core.wire.op_msg import decode_op_msg, encode_op_msg, encode_op_msg_payload
from asyncmongo.core.wire.opcodes import HEADER, HEADER_SIZE, OpCode, OpMsgFlags


@dataclass
class Reply:
    request_id: int
    response_to: int
    opcode: int
    flags: int
    document: dict[str, Any]
    compressed: bool = False

    @property
    def more_to_come(self) -> bool:
        return bool(self.flags & OpMsgFlags.MORE_TO_COME)


class RawClient:
    """One connection to a simulated server."""

    def __init__(self, reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        self.reader = reader
        self.writer = writer
        self.next_id = 0

    @classmethod
    async def connect(cls, port: int) -> RawClient:
        reader, writer = await asyncio.open_connection("127.0.0.1", port)
        return cls(reader, writer)

    async def close(self) -> None:
        self.writer.close()
        try:
            await self.writer.wait_closed()
        except OSError:
            pass

    def _id(self) -> int:
        self.next_id += 1
        return self.next_id

    async def send_msg(self, command: dict[str, Any], *, flags: int = 0,
                       compressor: Compressor | None = None) -> int:
        request_id = self._id()
        body = encode(command)
        if compressor is None:
            self.writer.writelines(encode_op_msg(request_id, body, flags=flags))
        else:
            payload = encode_op_msg_payload(body, flags=flags)
            self.writer.writelines(encode_op_compressed(request_id, OpCode.OP_MSG, payload,
                                                        compressor))
        await self.writer.drain()
        return request_id

    async def send_query(self, command: dict[str, Any], namespace: str = "admin.$cmd") -> int:
        request_id = self._id()
        body = (struct.pack("<i", 0) + namespace.encode() + b"\x00" + struct.pack("<ii", 0, -1)
                + encode(command))
        self.writer.write(HEADER.pack(HEADER_SIZE + len(body), request_id, 0, OpCode.OP_QUERY)
                          + body)
        await self.writer.drain()
        return request_id

    async def read_raw(self) -> tuple[tuple[int, int, int, int], bytes]:
        header = await self.reader.readexactly(HEADER_SIZE)
        fields = HEADER.unpack(header)
        return fields, await self.reader.readexactly(fields[0] - HEADER_SIZE)

    async def read(self) -> Reply:
        (_, request_id, response_to, opcode), data = await self.read_raw()
        compressed = opcode == OpCode.OP_COMPRESSED
        if compressed:
            opcode, data = decode_op_compressed(data, 48_000_000)
        if opcode == OpCode.OP_REPLY:
            return Reply(request_id, response_to, opcode, 0, decode(data[20:]), compressed)
        message = decode_op_msg(request_id, response_to, data)
        return Reply(request_id, response_to, opcode, message.flags, decode(message.body),
                     compressed)

    async def command(self, command: dict[str, Any], **kwargs: Any) -> dict[str, Any]:
        await self.send_msg(command, **kwargs)
        return (await self.read()).document


async def wait_until(predicate: Callable[[], bool], within: float = 5.0) -> None:
    """Poll ``predicate`` every 10 ms; fail the test after ``within`` seconds."""
    for _ in range(int(within / 0.01)):
        if predicate():
            return
        await asyncio.sleep(0.01)
    raise AssertionError(f"condition not met within {within}s")
