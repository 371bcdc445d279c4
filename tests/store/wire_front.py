"""A minimal, test-only wire front end for the store, so PyMongo can talk to it.

Threaded TCP on 127.0.0.1, OP_MSG (and the legacy OP_QUERY hello PyMongo opens with), one
process-wide lock around the store. It plays a one-member replica set primary (so PyMongo
allows sessions, transactions and retryable writes) and answers hello/ping/buildInfo itself;
every other command goes to :class:`Store`. The real simulated server is asyncmongo.testing's;
this exists only to prove that PyMongo accepts the store's replies.
"""

from __future__ import annotations

import datetime
import socket
import socketserver
import struct
import threading
from types import TracebackType
from typing import Any

from asyncmongo.bson import decode, encode
from asyncmongo.bson.objectid import ObjectId
from asyncmongo.testing.store import Store

OP_REPLY, OP_QUERY, OP_MSG = 1, 2004, 2013
MORE_TO_COME = 1 << 1
_HEADER = struct.Struct("<iiii")


def _read_exactly(sock: socket.socket, count: int) -> bytes:
    data = bytearray()
    while len(data) < count:
        chunk = sock.recv(count - len(data))
        if not chunk:
            raise ConnectionError("peer closed")
        data += chunk
    return bytes(data)


def _cstring(data: bytes, start: int) -> tuple[str, int]:
    end = data.index(b"\0", start)
    return data[start:end].decode(), end + 1


def parse_op_msg(payload: bytes) -> tuple[int, dict[str, Any]]:
    """(flagBits, command) with kind-1 document sequences folded into the body."""
    (flags,) = struct.unpack_from("<I", payload, 0)
    position, body, sequences = 4, None, {}
    end = len(payload) - (4 if flags & 1 else 0)
    while position < end:
        kind = payload[position]
        position += 1
        (size,) = struct.unpack_from("<i", payload, position)
        if kind == 0:
            body = decode(payload[position:position + size])
        else:
            identifier, start = _cstring(payload, position + 4)
            docs, cursor = [], start
            while cursor < position + size:
                (length,) = struct.unpack_from("<i", payload, cursor)
                docs.append(decode(payload[cursor:cursor + length]))
                cursor += length
            sequences[identifier] = docs
        position += size
    assert body is not None
    body.update(sequences)
    return flags, body


class StoreServer:
    """The store behind a socket: ``with StoreServer() as server: MongoClient(server.uri)``."""

    def __init__(self, store: Store | None = None) -> None:
        self.store = store or Store()
        self.lock = threading.Lock()
        owner = self

        class Handler(socketserver.BaseRequestHandler):
            def handle(self) -> None:
                owner.serve(self.request)

        self._server = socketserver.ThreadingTCPServer(("127.0.0.1", 0), Handler,
                                                       bind_and_activate=True)
        self._server.daemon_threads = True
        self.port: int = self._server.server_address[1]
        self._thread = threading.Thread(target=self._server.serve_forever, daemon=True)

    @property
    def address(self) -> str:
        return f"127.0.0.1:{self.port}"

    @property
    def uri(self) -> str:
        return f"mongodb://{self.address}/?directConnection=true&replicaSet=rs0"

    def __enter__(self) -> StoreServer:
        self._thread.start()
        return self

    def __exit__(self, kind: type[BaseException] | None, error: BaseException | None,
                 trace: TracebackType | None) -> None:
        self._server.shutdown()
        self._server.server_close()
        self._thread.join()

    def hello(self) -> dict[str, Any]:
        return {
            "helloOk": True, "isWritablePrimary": True, "ismaster": True, "setName": "rs0",
            "setVersion": 1, "electionId": ObjectId("7fffffff0000000000000001"),
            "hosts": [self.address], "primary": self.address, "me": self.address,
            "maxBsonObjectSize": 16 * 1024 * 1024, "maxMessageSizeBytes": 48_000_000,
            "maxWriteBatchSize": 100_000, "localTime": datetime.datetime.now(datetime.UTC),
            "logicalSessionTimeoutMinutes": 30, "connectionId": 1, "minWireVersion": 0,
            "maxWireVersion": 25, "readOnly": False, "ok": 1.0,
        }

    def answer(self, command: dict[str, Any]) -> dict[str, Any]:
        name = next(iter(command))
        if name.lower() in ("hello", "ismaster"):
            return self.hello()
        if name in ("ping", "getLastError"):
            return {"ok": 1.0}
        if name.lower() == "buildinfo":
            return {"version": "8.0.0", "versionArray": [8, 0, 0, 0], "ok": 1.0}
        db = command.pop("$db", "admin")
        with self.lock:
            return self.store.handle(db, command)

    def serve(self, sock: socket.socket) -> None:
        try:
            while True:
                header = _read_exactly(sock, 16)
                length, request_id, _, opcode = _HEADER.unpack(header)
                payload = _read_exactly(sock, length - 16)
                reply = self._reply(opcode, payload, request_id)
                if reply:
                    sock.sendall(reply)
        except (ConnectionError, OSError):
            return

    def _reply(self, opcode: int, payload: bytes, request_id: int) -> bytes:
        if opcode == OP_QUERY:
            _, position = _cstring(payload, 4)
            (size,) = struct.unpack_from("<i", payload, position + 8)
            command = decode(payload[position + 8:position + 8 + size])
            body = encode(self.answer(command))
            prefix = struct.pack("<iqii", 0, 0, 0, 1)
            return _HEADER.pack(16 + len(prefix) + len(body), 0, request_id, OP_REPLY) + (
                prefix + body)
        flags, command = parse_op_msg(payload)
        body = encode(self.answer(command))
        if flags & MORE_TO_COME:
            return b""
        message = struct.pack("<I", 0) + b"\0" + body
        return _HEADER.pack(16 + len(message), 0, request_id, OP_MSG) + message
