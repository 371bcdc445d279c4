"""The simulated server's network side: the listening socket on 127.0.0.1 (TLS optional), one
task per accepted connection that reads requests and hands them to a handler, the writing of
replies (broken ones too, when a network fault asks), and closing it all on stop or partition.

What a request means is not its business: the handler (the dispatcher) answers it and says
whether the connection stays open.
"""

from __future__ import annotations

import asyncio
import collections
import contextlib
import functools
import ssl
from collections.abc import Awaitable, Callable, Mapping
from typing import Any

from asyncmongo.core.wire.opcodes import HEADER_SIZE
from asyncmongo.errors import ProtocolError
from asyncmongo.runtime.network import limit_read_size
from asyncmongo.testing.protocol import Request, decode_request, encode_reply, read_header
from asyncmongo.testing.scram import SaslServer, UserDirectory
from asyncmongo.testing.server.faults import Faults, ReplyFault, garbage_reply
from asyncmongo.testing.tls import peer_subject


class Connection:
    """One accepted client connection."""

    __slots__ = ("app_name", "connection_id", "metadata", "peer", "peer_subject", "reader",
                 "sasl", "writer")

    def __init__(self, reader: asyncio.StreamReader, writer: asyncio.StreamWriter,
                 connection_id: int, users: UserDirectory) -> None:
        self.reader = reader
        self.writer = writer
        self.connection_id = connection_id
        self.sasl = SaslServer(users)
        self.app_name: str | None = None
        #: The handshake's ``client`` document (mongod accepts it once per connection).
        self.metadata: Mapping[str, Any] | None = None
        #: The TLS client certificate's subject (MONGODB-X509), None without one.
        self.peer_subject = peer_subject(writer.get_extra_info("ssl_object"))
        peer = writer.get_extra_info("peername")
        self.peer = f"{peer[0]}:{peer[1]}" if isinstance(peer, tuple) else "unknown"


#: Answers one request; False closes the connection.
Handler = Callable[[Connection, Request], Awaitable[bool]]


class Network:
    """The listener and the open connections of one server."""

    __slots__ = ("_connections", "_faults", "_listener", "_next_connection_id",
                 "_next_request_id", "_port", "advertised_port", "compressed_requests",
                 "has_listened", "host_name", "ssl_context", "users")

    def __init__(self, faults: Faults, *, port: int, users: UserDirectory,
                 ssl_context: ssl.SSLContext | None, host_name: str) -> None:
        self._faults = faults
        self._port = port
        self.users = users
        self.ssl_context = ssl_context
        #: The name the member gives itself (it always listens on 127.0.0.1).
        self.host_name = host_name
        #: The port the member names itself by when it differs from the bound one (behind a
        #: fault proxy, the proxy's port).
        self.advertised_port: int | None = None
        #: True once the server has listened (a later start is a new process).
        self.has_listened = False
        #: How many requests arrived compressed, by compressor name (for tests).
        self.compressed_requests: collections.Counter[str] = collections.Counter()
        self._listener: asyncio.Server | None = None
        self._connections: dict[Connection, asyncio.Task[Any]] = {}
        self._next_connection_id = 0
        self._next_request_id = 0

    @property
    def port(self) -> int:
        """The bound port (after :meth:`listen`; the requested one before)."""
        return self._port

    @property
    def host(self) -> str:
        """``"<host_name>:<port>"`` (the advertised port, when there is one)."""
        return f"{self.host_name}:{self.advertised_port or self._port}"

    @property
    def listening(self) -> bool:
        return self._listener is not None

    @property
    def connections(self) -> tuple[Connection, ...]:
        """The open client connections."""
        return tuple(self._connections)

    @property
    def total_connections(self) -> int:
        """Client connections accepted since the server was created."""
        return self._next_connection_id

    async def listen(self, handler: Handler) -> None:
        """Accept connections on the port (a free one for 0), each served by ``handler``."""
        self._listener = await asyncio.start_server(
            functools.partial(self._serve, handler), "127.0.0.1", self._port,
            ssl=self.ssl_context, reuse_address=True)
        self._port = self._listener.sockets[0].getsockname()[1]
        self.has_listened = True

    async def close(self) -> None:
        """Stop listening and close every connection."""
        listener, self._listener = self._listener, None
        if listener is not None:
            listener.close()
        tasks = list(self._connections.values())
        for task in tasks:
            task.cancel()
        await asyncio.gather(*tasks, return_exceptions=True)
        if listener is not None:
            await listener.wait_closed()

    async def _serve(self, handler: Handler, reader: asyncio.StreamReader,
                     writer: asyncio.StreamWriter) -> None:
        task = asyncio.current_task()
        assert task is not None
        limit_read_size(writer.transport)  # as the driver's connections (runtime/network.py)
        self._next_connection_id += 1
        conn = Connection(reader, writer, self._next_connection_id, self.users)
        self._connections[conn] = task
        try:
            await self._read_loop(conn, handler)
        except (asyncio.IncompleteReadError, ConnectionError, ProtocolError, ssl.SSLError):
            pass
        except asyncio.CancelledError:
            # close() cancels this task; it ends normally, or Python 3.11's stream callback
            # logs the cancellation as an unretrieved error.
            pass
        finally:
            self._connections.pop(conn, None)
            writer.close()
            with contextlib.suppress(Exception):
                await writer.wait_closed()

    async def _read_loop(self, conn: Connection, handler: Handler) -> None:
        while True:
            header = await conn.reader.readexactly(HEADER_SIZE)
            length = read_header(header)
            request = decode_request(header + await conn.reader.readexactly(
                length - HEADER_SIZE))
            if request.compressor is not None:
                self.compressed_requests[request.compressor.handshake_name] += 1
            if self._faults.silent:
                continue
            if not await handler(conn, request):
                return

    async def send(self, conn: Connection, request: Request, reply: Mapping[str, Any], *,
                   more_to_come: bool = False, response_to: int | None = None) -> bool:
        """Write one reply; False when the connection must close (a truncated reply)."""
        return await self.send_reply(conn, request, reply, more_to_come=more_to_come,
                                     response_to=response_to) is not None

    async def send_reply(self, conn: Connection, request: Request, reply: Mapping[str, Any],
                         *, more_to_come: bool = False, response_to: int | None = None
                         ) -> int | None:
        """Write one reply and return its requestID (what the next exhaust reply answers);
        None when the connection must close (a truncated reply)."""
        self._next_request_id += 1
        request_id = self._next_request_id
        data = encode_reply(request, request_id, reply, more_to_come=more_to_come,
                            response_to=response_to)
        fault = self._faults.take_reply_fault(request.name)
        if fault is ReplyFault.GARBAGE:
            data = garbage_reply(request_id, request.request_id)
        elif fault is ReplyFault.TRUNCATED:
            conn.writer.write(data[: max(1, len(data) // 2)])
            await conn.writer.drain()
            return None
        conn.writer.write(data)
        await conn.writer.drain()
        return request_id
