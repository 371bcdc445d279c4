"""A small asyncio HTTP/1.1 client: one request per connection, bounded by a deadline.

MONGODB-AWS uses it to fetch credentials (STS over TLS, the ECS container endpoint and EC2
instance metadata over plain HTTP). The bytes are the pure :mod:`asyncmongo.core.http`'s; the
connection (and TLS) is :func:`asyncmongo.runtime.network.open_transport`'s, so the only
socket and ssl code stays there. Nothing blocks the event loop.
"""

from __future__ import annotations

import asyncio
from collections.abc import Callable

from asyncmongo.core.http import (
    HttpError,
    HttpRequest,
    HttpResponse,
    ResponseParser,
    encode_request,
)
from asyncmongo.errors import ConnectionFailure, NetworkTimeout
from asyncmongo.runtime.network import TlsSettings, open_transport

__all__ = ["HttpError", "request"]


class _ResponseProtocol(asyncio.Protocol):
    """Feeds the parser; resolves :attr:`response` when a whole response has arrived."""

    __slots__ = ("_parser", "response")

    def __init__(self, loop: asyncio.AbstractEventLoop) -> None:
        self._parser = ResponseParser()
        self.response: asyncio.Future[HttpResponse] = loop.create_future()

    def data_received(self, data: bytes) -> None:
        self._step(lambda: self._parser.feed(data))

    def eof_received(self) -> bool | None:
        self._step(self._parser.feed_eof)
        return None

    def connection_lost(self, exc: Exception | None) -> None:
        if exc is not None and not self.response.done():
            self.response.set_exception(ConnectionFailure(f"connection lost: {exc}"))
        self._step(self._parser.feed_eof)

    def _step(self, action: Callable[[], None]) -> None:
        if self.response.done():
            return
        try:
            action()
            response = self._parser.next_response()
        except HttpError as exc:
            self.response.set_exception(exc)
            return
        if response is not None:
            self.response.set_result(response)


async def request(
    http_request: HttpRequest, *, deadline: float, ca_file: str | None = None
) -> HttpResponse:
    """Send ``http_request`` and return the response, all before ``deadline`` (loop time).

    TLS for ``https`` URLs, verified against the system's CAs or ``ca_file``. A timeout is a
    :class:`~asyncmongo.errors.NetworkTimeout`, a refused or cut connection a
    :class:`~asyncmongo.errors.ConnectionFailure`, a malformed response an
    :class:`~asyncmongo.core.http.HttpError`.
    """
    url = http_request.url
    loop = asyncio.get_running_loop()
    tls = TlsSettings(enabled=url.scheme == "https", ca_file=ca_file)
    transport, protocol = await open_transport(
        (url.host, url.port), lambda: _ResponseProtocol(loop), tls=tls, deadline=deadline
    )
    try:
        transport.write(encode_request(http_request))
        async with asyncio.timeout_at(deadline):
            return await protocol.response
    except TimeoutError:
        raise NetworkTimeout(f"no complete answer from {url} in time") from None
    finally:
        transport.close()
