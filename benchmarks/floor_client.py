"""The floor: the least work any asyncio MongoDB driver does per operation.

Per operation, :class:`FloorClient` builds the command document asyncmongo sends (the same
fields in the same order, ``$db``, and the implicit session's ``lsid`` on the commands
asyncmongo sends one with), encodes it with :mod:`asyncmongo.bson`, writes one OP_MSG (header,
flagBits, one kind-0 section), awaits a future that ``data_received`` resolves with the reply,
and decodes the reply with :mod:`asyncmongo.bson`. No pool, server selection, session pool,
monitoring, retries or timeouts: a driver's client CPU per operation over this one's is what
those cost.

One difference of shape: asyncmongo sends an insert's documents as a kind-1 document sequence;
the floor puts them in the body's ``documents`` array (the document is encoded once either
way).
"""

from __future__ import annotations

import asyncio
import socket
import struct
import uuid
from typing import Any, cast
from urllib.parse import urlsplit

from asyncmongo.bson import UUID_SUBTYPE, Binary, ObjectId, decode, encode
from asyncmongo.runtime.network import READ_SIZE

OP_MSG = 2013
_HEADER = struct.Struct("<iiii")
#: A reply's header, flagBits and the kind byte of its first section.
_REPLY = struct.Struct("<iiiiIB")
_NO_FLAGS_BODY = b"\x00\x00\x00\x00\x00"


class FloorProtocol(asyncio.Protocol):
    """Cuts the byte stream into messages and resolves the waiter with each."""

    __slots__ = ("_buffer", "transport", "waiter")

    def __init__(self) -> None:
        self.transport: asyncio.Transport | None = None
        self.waiter: asyncio.Future[bytes] | None = None
        self._buffer = bytearray()

    def connection_made(self, transport: asyncio.BaseTransport) -> None:
        self.transport = cast(asyncio.Transport, transport)  # uvloop's is duck-typed
        # as asyncmongo does (runtime/network.py, READ_SIZE): asyncio's 256 KiB reads cost
        # an mmap/munmap pair per reply in many processes, which would make the floor's
        # cost depend on the allocator's history, not on the work it does
        if isinstance(getattr(type(transport), "max_size", None), int):
            transport.max_size = READ_SIZE  # type: ignore[attr-defined]

    def data_received(self, data: bytes) -> None:
        buffer = self._buffer
        if not buffer and int.from_bytes(data[:4], "little") == len(data):
            self._resolve(data)  # the usual case: the chunk is one whole reply
            return
        buffer += data
        while len(buffer) >= 4:
            length = int.from_bytes(buffer[:4], "little")
            if len(buffer) < length:
                break
            self._resolve(bytes(buffer[:length]))
            del buffer[:length]

    def _resolve(self, message: bytes) -> None:
        waiter = self.waiter
        if waiter is not None and not waiter.done():
            waiter.set_result(message)

    def connection_lost(self, exc: Exception | None) -> None:
        waiter = self.waiter
        if waiter is not None and not waiter.done():
            waiter.set_exception(ConnectionError(f"connection lost: {exc}"))


class FloorClient:
    """One connection, one request at a time; the three operations of the floor row."""

    __slots__ = ("_loop", "_protocol", "_request_id", "_transport", "lsid")

    def __init__(self, transport: asyncio.Transport, protocol: FloorProtocol) -> None:
        self._transport = transport
        self._protocol = protocol
        self._loop = asyncio.get_running_loop()
        self._request_id = 0
        #: The implicit session asyncmongo attaches to find and insert (not to hello).
        self.lsid = {"id": Binary(uuid.uuid4().bytes, UUID_SUBTYPE)}

    @classmethod
    async def connect(cls, uri: str) -> FloorClient:
        """Connect to the first host of a ``mongodb://host:port`` URI, with TCP_NODELAY."""
        where = urlsplit(uri)
        loop = asyncio.get_running_loop()
        transport, protocol = await loop.create_connection(
            FloorProtocol, where.hostname or "localhost", where.port or 27017
        )
        sock = transport.get_extra_info("socket")
        if sock is not None:
            sock.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)
        return cls(transport, protocol)

    def close(self) -> None:
        self._transport.close()

    async def command(self, document: dict[str, Any]) -> dict[str, Any]:
        """Send ``document`` (``$db`` included) as one OP_MSG; the reply, checked for ok."""
        body = encode(document)
        self._request_id += 1
        request_id = self._request_id
        header = _HEADER.pack(21 + len(body), request_id, 0, OP_MSG)
        self._transport.write(header + _NO_FLAGS_BODY + body)
        waiter = self._protocol.waiter = self._loop.create_future()
        message = await waiter
        _, _, response_to, opcode, flags, kind = _REPLY.unpack_from(message)
        if response_to != request_id or opcode != OP_MSG or flags or kind:
            raise ConnectionError(f"unexpected reply: opcode {opcode}, flags {flags}")
        reply: dict[str, Any] = decode(message[21:])
        if reply.get("ok") != 1:
            raise RuntimeError(f"command failed: {reply}")
        return reply

    async def run_command(self, db: str, name: str, value: Any) -> dict[str, Any]:
        """``db.command(name, value)``: hello gets no session, as in asyncmongo."""
        return await self.command({name: value, "$db": db})

    async def find_one(self, db: str, collection: str, filter: dict[str, Any]
                       ) -> dict[str, Any] | None:
        reply = await self.command({
            "find": collection, "filter": filter, "limit": 1, "singleBatch": True,
            "lsid": self.lsid, "$db": db,
        })
        batch: list[dict[str, Any]] = reply["cursor"]["firstBatch"]
        return batch[0] if batch else None

    async def insert_one(self, db: str, collection: str, document: dict[str, Any]) -> Any:
        """Insert ``document``, adding an ``_id`` as drivers do; that ``_id``."""
        if "_id" not in document:
            document["_id"] = ObjectId()
        reply = await self.command({
            "insert": collection, "ordered": True, "lsid": self.lsid, "$db": db,
            "documents": [document],
        })
        if "writeErrors" in reply:
            raise RuntimeError(f"insert failed: {reply['writeErrors']}")
        return document["_id"]
