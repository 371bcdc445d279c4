"""A small TCP (or TLS) service on 127.0.0.1 for the test servers of asyncmongo.testing.

The simulated KMS servers, the AWS credential endpoints and the SOCKS5 proxy all listen,
serve each connection in its own task and, on close, stop listening and cancel the
connections still open. :class:`TcpService` does that once: a subclass only says how to serve
one connection (:meth:`TcpService.serve_connection`). A handler cancelled by
:meth:`TcpService.close` ends normally: Python 3.11's stream callback would log a cancelled
handler as a traceback.
"""

from __future__ import annotations

import asyncio
import contextlib
import ssl
from typing import Self

__all__ = ["TcpService"]


class TcpService:
    """Listens on ``host``:``port`` (0: a free port, known once started), TLS with
    ``ssl_context``; ``async with`` starts and closes it."""

    def __init__(self, *, host: str = "127.0.0.1", port: int = 0,
                 ssl_context: ssl.SSLContext | None = None) -> None:
        self.host = host
        self.port = port
        self.ssl_context = ssl_context
        self._server: asyncio.Server | None = None
        self._handlers: set[asyncio.Task[None]] = set()

    @property
    def listening(self) -> bool:
        return self._server is not None

    async def start(self) -> None:
        self._server = await asyncio.start_server(
            self._accept, self.host, self.port, ssl=self.ssl_context, reuse_address=True)
        self.port = self._server.sockets[0].getsockname()[1]

    async def close(self) -> None:
        """Stop listening and cut every open connection."""
        server, self._server = self._server, None
        if server is not None:
            server.close()
        handlers = list(self._handlers)
        for task in handlers:
            task.cancel()
        await asyncio.gather(*handlers, return_exceptions=True)
        if server is not None:
            await server.wait_closed()

    async def serve_connection(self, reader: asyncio.StreamReader,
                               writer: asyncio.StreamWriter) -> None:
        """Serve one connection (the subclass's protocol)."""
        raise NotImplementedError

    async def _accept(self, reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        task = asyncio.current_task()
        assert task is not None
        self._handlers.add(task)
        try:
            await self.serve_connection(reader, writer)
        except asyncio.CancelledError:
            pass  # close() cancels the handler: it ends normally (see the module docstring)
        finally:
            self._handlers.discard(task)

    async def __aenter__(self) -> Self:
        await self.start()
        return self

    async def __aexit__(self, *exc_info: object) -> None:
        await self.close()


#: Bytes a splice copies per read.
_CHUNK = 64 * 1024


async def splice(reader: asyncio.StreamReader, writer: asyncio.StreamWriter,
                 up_reader: asyncio.StreamReader, upstream: asyncio.StreamWriter) -> None:
    """A tunnel's two directions (client to upstream, upstream to client), copied until
    either side closes. Cancelled (by the service's close()), it cancels and awaits both
    pumps, so nothing is left running."""
    pumps = [asyncio.ensure_future(_pump(reader, upstream)),
             asyncio.ensure_future(_pump(up_reader, writer))]
    try:
        await asyncio.wait(pumps, return_when=asyncio.FIRST_COMPLETED)
    finally:
        for pump in pumps:
            pump.cancel()
        await asyncio.gather(*pumps, return_exceptions=True)


async def _pump(reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
    with contextlib.suppress(OSError):
        while data := await reader.read(_CHUNK):
            writer.write(data)
            await writer.drain()
