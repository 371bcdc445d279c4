"""A replay server for driver benchmarks: answers every command from canned replies.

It parses only what it must (the message header, OP_MSG sections, the command name, an
OP_QUERY handshake) and answers with replies encoded once at start, so its cost per request
is a few microseconds and the client, not the server, bounds a benchmark. Run it in its own
process (its CPU must not count as the client's):

    python benchmarks/replay_server.py [--port 0] [--tweet PATH]   # prints "port N", serves

Replies: hello/isMaster/ismaster (mongod 7.0, no topologyVersion so monitors poll), ping and
every unknown command ``{ok: 1}``, insert ``{n: <documents sent>, ok: 1}``, update/delete
``{n: 1, nModified: 1, ok: 1}``, find with an ``_id`` filter one TWEET document, any other
find the first 101 of ``--find-many`` TWEET documents and a getMore the rest, drop/create
``{ok: 1}``. Requests with moreToCome (w:0) get no reply.
"""

from __future__ import annotations

import argparse
import asyncio
import datetime
import json
import struct
import sys
import tarfile
from pathlib import Path
from typing import Any, cast

import bson  # PyMongo's C codec: the server is benchmark infrastructure, not the driver

OP_REPLY, OP_QUERY, OP_MSG = 1, 2004, 2013
MORE_TO_COME = 2
CHECKSUM_PRESENT = 1
TGZ = Path("/work/shared/benchmark-data/single_and_multi_document.tgz")
_HEADER = struct.Struct("<iiii")
_INT = struct.Struct("<i")


def load_tweet(tgz: Path = TGZ) -> dict[str, Any]:
    with tarfile.open(tgz) as archive:
        member = archive.extractfile("single_and_multi_document/tweet.json")
        assert member is not None
        document: dict[str, Any] = json.load(member)
        return document


def hello_reply() -> dict[str, Any]:
    return {
        "helloOk": True,
        "isWritablePrimary": True,
        "ismaster": True,
        "topologyVersion": None,
        "maxBsonObjectSize": 16 * 1024 * 1024,
        "maxMessageSizeBytes": 48_000_000,
        "maxWriteBatchSize": 100_000,
        "localTime": datetime.datetime.now(datetime.UTC),
        "logicalSessionTimeoutMinutes": 30,
        "connectionId": 1,
        "minWireVersion": 0,
        "maxWireVersion": 21,
        "readOnly": False,
        "ok": 1.0,
    }


class Replies:
    """Every reply body, encoded once."""

    def __init__(self, tweet: dict[str, Any], find_many: int) -> None:
        hello = hello_reply()
        del hello["topologyVersion"]
        self.hello = bson.encode(hello)
        self.ok = bson.encode({"ok": 1.0})
        self.write = bson.encode({"n": 1, "nModified": 1, "ok": 1.0})
        one = dict(tweet, _id=1)
        self.find_one = bson.encode(
            {"cursor": {"firstBatch": [one], "id": 0, "ns": "perftest.corpus"}, "ok": 1.0}
        )
        docs = [dict(tweet, _id=i) for i in range(find_many)]
        self.find_first = bson.encode(
            {"cursor": {"firstBatch": docs[:101], "id": 7, "ns": "perftest.corpus"}, "ok": 1.0}
        )
        self.get_more = bson.encode(
            {"cursor": {"nextBatch": docs[101:], "id": 0, "ns": "perftest.corpus"}, "ok": 1.0}
        )
        self._inserts: dict[int, bytes] = {}

    def inserted(self, n: int) -> bytes:
        reply = self._inserts.get(n)
        if reply is None:
            reply = self._inserts[n] = bson.encode({"n": n, "ok": 1.0})
        return reply

    def for_command(self, name: bytes, body: memoryview, sequence_docs: int) -> bytes:
        if name == b"insert":
            if sequence_docs:
                return self.inserted(sequence_docs)
            documents = bson.decode(bytes(body)).get("documents", [])
            return self.inserted(len(documents))
        if name == b"find":
            return self.find_one if b"_id\x00" in bytes(body[:200]) else self.find_first
        if name == b"getMore":
            return self.get_more
        if name in (b"update", b"delete", b"findAndModify"):
            return self.write
        if name in (b"hello", b"isMaster", b"ismaster"):
            return self.hello
        return self.ok


class ReplayProtocol(asyncio.Protocol):
    """Reads whole messages and writes the canned reply of each."""

    def __init__(self, replies: Replies) -> None:
        self.replies = replies
        self.buffer = bytearray()
        self.transport: asyncio.Transport | None = None

    def connection_made(self, transport: asyncio.BaseTransport) -> None:
        self.transport = cast(asyncio.Transport, transport)  # uvloop's is not a subclass

    def data_received(self, data: bytes) -> None:
        buffer = self.buffer
        buffer += data
        offset = 0
        out: list[bytes] = []
        while len(buffer) - offset >= 16:
            length, request_id, _, opcode = _HEADER.unpack_from(buffer, offset)
            if len(buffer) - offset < length:
                break
            message = memoryview(buffer)[offset + 16 : offset + length]
            offset += length
            reply = self.answer(opcode, request_id, message)
            message.release()
            if reply is not None:
                out.append(reply)
        del buffer[:offset]
        if out and self.transport is not None:
            self.transport.writelines(out)

    def answer(self, opcode: int, request_id: int, message: memoryview) -> bytes | None:
        if opcode == OP_QUERY:  # a legacy hello handshake: OP_REPLY
            body = self.replies.hello
            head = _HEADER.pack(16 + 20 + len(body), request_id, request_id, OP_REPLY)
            return head + struct.pack("<iqii", 0, 0, 0, 1) + body
        if opcode != OP_MSG:
            return None
        flags = _INT.unpack_from(message, 0)[0]
        end = len(message) - (4 if flags & CHECKSUM_PRESENT else 0)
        position, body, sequence_docs = 4, None, 0
        while position < end:
            kind = message[position]
            position += 1
            size = _INT.unpack_from(message, position)[0]
            if kind == 0:
                body = message[position : position + size]
            else:
                cursor = position + 4
                while message[cursor] != 0:
                    cursor += 1
                cursor += 1
                while cursor < position + size:
                    cursor += _INT.unpack_from(message, cursor)[0]
                    sequence_docs += 1
            position += size
        if body is None or flags & MORE_TO_COME:
            return None
        name_end = 5
        while body[name_end] != 0:
            name_end += 1
        reply = self.replies.for_command(bytes(body[5:name_end]), body, sequence_docs)
        head = _HEADER.pack(16 + 5 + len(reply), request_id, request_id, OP_MSG)
        return head + b"\x00\x00\x00\x00\x00" + reply


async def serve(port: int, replies: Replies) -> None:
    loop = asyncio.get_running_loop()
    server = await loop.create_server(lambda: ReplayProtocol(replies), "127.0.0.1", port)
    print(f"port {server.sockets[0].getsockname()[1]}", flush=True)
    async with server:
        await server.serve_forever()


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--port", type=int, default=0)
    parser.add_argument("--find-many", type=int, default=10_000)
    parser.add_argument("--tgz", type=Path, default=TGZ)
    args = parser.parse_args()
    replies = Replies(load_tweet(args.tgz), args.find_many)
    try:
        import uvloop

        runner: Any = uvloop.run
    except ImportError:
        runner = asyncio.run
    try:
        runner(serve(args.port, replies))
    except KeyboardInterrupt:
        sys.exit(0)


if __name__ == "__main__":
    main()
