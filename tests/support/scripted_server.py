"""A scripted loopback MongoDB server for connection tests.

An asyncio server on 127.0.0.1 (or a Unix socket, optionally TLS) that parses requests with
its own small OP_MSG/OP_COMPRESSED parser and PyMongo's ``bson`` (independent of the code under
test) and answers through a handler: ``async def handler(request, peer)``. The handler replies
with ``await peer.reply(request, doc)`` or misbehaves on purpose: ``peer.send_raw(bytes)``
(garbage, truncated replies), ``peer.abort()`` (close mid-reply), ``asyncio.sleep`` (delay),
or stays silent. The default handler answers ``hello``/``isMaster`` like a 7.0 standalone and
``ping`` with ``ok: 1``.
"""

from __future__ import annotations

import asyncio
import itertools
import ssl
import struct
from collections.abc import Awaitable, Callable, Sequence
from dataclasses import dataclass, field
from typing import Any

import bson
import cramjam

_HEADER = struct.Struct("<iiii")
_OP_MSG = 2013
_OP_COMPRESSED = 2012
_ids = itertools.count(1000)


@dataclass
class Request:
    """One request as the server saw it."""

    request_id: int
    flags: int
    command: dict[str, Any]
    sequences: dict[str, list[dict[str, Any]]]
    compressor_id: int | None

    @property
    def name(self) -> str:
        return next(iter(self.command))

    @property
    def db(self) -> str:
        return str(self.command.get("$db"))


Handler = Callable[[Request, "Peer"], Awaitable[None]]


def parse_op_msg(body: bytes) -> tuple[int, dict[str, Any], dict[str, list[dict[str, Any]]]]:
    (flags,) = struct.unpack_from("<I", body, 0)
    pos, end = 4, len(body) - (4 if flags & 1 else 0)
    command: dict[str, Any] = {}
    sequences: dict[str, list[dict[str, Any]]] = {}
    while pos < end:
        kind = body[pos]
        pos += 1
        (size,) = struct.unpack_from("<i", body, pos)
        if kind == 0:
            command = bson.decode(body[pos : pos + size])
        else:
            nul = body.index(b"\x00", pos + 4)
            sequences[body[pos + 4 : nul].decode()] = bson.decode_all(body[nul + 1 : pos + size])
        pos += size
    return flags, command, sequences


def op_msg(
    doc: dict[str, Any], response_to: int, flags: int = 0, request_id: int | None = None
) -> bytes:
    payload = struct.pack("<I", flags) + b"\x00" + bson.encode(doc)
    rid = next(_ids) if request_id is None else request_id
    return _HEADER.pack(16 + len(payload), rid, response_to, _OP_MSG) + payload


def compress_message(message: bytes, compressor_id: int) -> bytes:
    _, rid, rto, opcode = _HEADER.unpack_from(message)
    raw = message[16:]
    packed = _compress(compressor_id, raw)
    body = struct.pack("<iiB", opcode, len(raw), compressor_id) + packed
    return _HEADER.pack(16 + len(body), rid, rto, _OP_COMPRESSED) + body


#: OP_COMPRESSED compressor ids (1 snappy, 2 zlib, 3 zstd) to (compress, decompress).
_CODECS: dict[int, tuple[Callable[[bytes], Any], Callable[[bytes], Any]]] = {
    1: (cramjam.snappy.compress_raw, cramjam.snappy.decompress_raw),
    2: (cramjam.zlib.compress, cramjam.zlib.decompress),
    3: (cramjam.zstd.compress, cramjam.zstd.decompress),
}


def _compress(compressor_id: int, raw: bytes) -> bytes:
    codec = _CODECS.get(compressor_id)
    return bytes(codec[0](raw)) if codec is not None else raw


def _decompress(compressor_id: int, data: bytes) -> bytes:
    codec = _CODECS.get(compressor_id)
    return bytes(codec[1](data)) if codec is not None else data


HELLO_REPLY: dict[str, Any] = {
    "helloOk": True,
    "isWritablePrimary": True,
    "maxBsonObjectSize": 16 * 1024 * 1024,
    "maxMessageSizeBytes": 48_000_000,
    "maxWriteBatchSize": 100_000,
    "localTime": None,
    "logicalSessionTimeoutMinutes": 30,
    "connectionId": 1,
    "minWireVersion": 0,
    "maxWireVersion": 21,
    "readOnly": False,
    "ok": 1.0,
}


class Peer:
    """The server's side of one client connection, handed to the handler."""

    def __init__(
        self, server: ScriptedServer, reader: asyncio.StreamReader, writer: asyncio.StreamWriter
    ) -> None:
        self.server = server
        self.reader = reader
        self.writer = writer
        self.compressor_id: int | None = None  # set when a handshake negotiated one

    async def reply(
        self,
        request: Request,
        doc: dict[str, Any],
        *,
        flags: int = 0,
        compressor_id: int | None = None,
        response_to: int | None = None,
        request_id: int | None = None,
    ) -> int:
        """Send an OP_MSG reply (compressed like the request unless told otherwise)."""
        rid = next(_ids) if request_id is None else request_id
        message = op_msg(
            doc, request.request_id if response_to is None else response_to, flags, rid
        )
        cid = request.compressor_id if compressor_id is None else compressor_id
        if cid is not None and cid >= 0:
            message = compress_message(message, cid)
        self.writer.write(message)
        await self.writer.drain()
        return rid

    def send_raw(self, data: bytes) -> None:
        self.writer.write(data)

    def abort(self) -> None:
        transport = self.writer.transport
        transport.abort()

    async def default(self, request: Request) -> None:
        """Answer like the default handler."""
        await default_handler(request, self)


async def default_handler(request: Request, peer: Peer) -> None:
    name = request.name.lower()
    if name in ("hello", "ismaster"):
        reply = dict(HELLO_REPLY, **peer.server.hello_extra)
        if name == "ismaster":
            reply["ismaster"] = True
        offered = request.command.get("compression") or []
        common = [c for c in offered if c in peer.server.compressors]
        if common:
            reply["compression"] = common
        await peer.reply(request, reply)
    elif name == "ping":
        await peer.reply(request, {"ok": 1.0})
    elif name == "echo":
        await peer.reply(
            request, {"ok": 1.0, "command": request.command, "sequences": request.sequences}
        )
    else:
        await peer.reply(
            request,
            {
                "ok": 0.0,
                "errmsg": f"no such command: '{request.name}'",
                "code": 59,
                "codeName": "CommandNotFound",
            },
        )


@dataclass
class ScriptedServer:
    """``async with ScriptedServer(handler) as server: ... server.address ...``"""

    handler: Handler = default_handler
    ssl_context: ssl.SSLContext | None = None
    unix_path: str | None = None
    compressors: Sequence[str] = ()
    hello_extra: dict[str, Any] = field(default_factory=dict)
    requests: list[Request] = field(default_factory=list)
    peers: list[Peer] = field(default_factory=list)
    _server: asyncio.Server | None = None
    _tasks: set[asyncio.Task[None]] = field(default_factory=set)

    @property
    def address(self) -> tuple[str, int | None]:
        if self.unix_path is not None:
            return (self.unix_path, None)
        assert self._server is not None
        return ("127.0.0.1", self._server.sockets[0].getsockname()[1])

    async def __aenter__(self) -> ScriptedServer:
        if self.unix_path is not None:
            self._server = await asyncio.start_unix_server(
                self._serve, self.unix_path, ssl=self.ssl_context
            )
        else:
            self._server = await asyncio.start_server(
                self._serve, "127.0.0.1", 0, ssl=self.ssl_context
            )
        return self

    async def __aexit__(self, *exc: object) -> None:
        assert self._server is not None
        self._server.close()
        for peer in self.peers:
            peer.abort()
        for task in list(self._tasks):
            task.cancel()
        await asyncio.gather(*self._tasks, return_exceptions=True)
        await self._server.wait_closed()

    async def _serve(self, reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        task = asyncio.current_task()
        assert task is not None
        self._tasks.add(task)
        peer = Peer(self, reader, writer)
        self.peers.append(peer)
        try:
            while True:
                request = await self._read_request(reader)
                if request is None:
                    break
                self.requests.append(request)
                await self.handler(request, peer)
        except (ConnectionError, asyncio.IncompleteReadError, ssl.SSLError):
            pass
        except asyncio.CancelledError:
            pass  # the server is closing: end quietly (asyncio logs a cancelled client task)
        finally:
            self._tasks.discard(task)
            writer.transport.abort()

    async def _read_request(self, reader: asyncio.StreamReader) -> Request | None:
        try:
            header = await reader.readexactly(16)
        except asyncio.IncompleteReadError:
            return None
        length, request_id, _, opcode = _HEADER.unpack(header)
        body = await reader.readexactly(length - 16)
        compressor_id = None
        if opcode == _OP_COMPRESSED:
            opcode, _, compressor_id = struct.unpack_from("<iiB", body)
            body = _decompress(compressor_id, body[9:])
        assert opcode == _OP_MSG, f"scripted server got opcode {opcode}"
        flags, command, sequences = parse_op_msg(body)
        return Request(request_id, flags, command, sequences, compressor_id)
