"""An HTTP CONNECT proxy for KMS traffic, the client-side encryption prose tests'
``kms_http_proxy.py`` (prose 28, "KMS Connect Callback").

Plain HTTP, or HTTPS when given a server ``ssl_context`` (the callback then speaks TLS to the
proxy, and the driver's own TLS to the KMS host runs inside the tunnel). Besides
``CONNECT host:port``, it answers the spec's control endpoints on the same port:
``POST /reset`` zeroes the counters and ``GET /metrics`` returns ``connect_count <N>``::

    async with KmsHttpProxy() as proxy:            # KmsHttpProxy(server_context): HTTPS
        ...                                        # a kms_connect_callback CONNECTs through it
        assert proxy.connect_count >= 1            # or GET /metrics over HTTP

``map={"kms.example.test:443": "127.0.0.1:8443"}`` sends a requested target elsewhere (the
proxy resolves names the client cannot, as real proxies do). ``connect_count`` counts the
tunnels asked for (CONNECT requests) since the last reset, not every TCP connection: a
connection that only fetches ``/metrics`` must not count itself.
"""

from __future__ import annotations

import asyncio
import ssl
from collections.abc import Mapping

from asyncmongo.testing.tcp_service import TcpService, splice

__all__ = ["KmsHttpProxy"]

_MAX_HEAD = 64 * 1024


class KmsHttpProxy(TcpService):
    """An HTTP (or, with ``ssl_context``, HTTPS) CONNECT proxy on ``host`` (port 0: any
    free one), with the ``/reset`` and ``/metrics`` control endpoints."""

    def __init__(self, ssl_context: ssl.SSLContext | None = None, *, host: str = "127.0.0.1",
                 port: int = 0, map: Mapping[str, str] | None = None) -> None:
        super().__init__(host=host, port=port, ssl_context=ssl_context)
        self._map = dict(map or {})
        #: CONNECT requests since the last reset (the spec's ``connect_count``).
        self.connect_count = 0
        #: The ``host:port`` of every CONNECT since the last reset, in order.
        self.targets: list[str] = []

    def __repr__(self) -> str:
        scheme = "https" if self.ssl_context is not None else "http"
        return (f"<KmsHttpProxy {scheme}://{self.host}:{self.port}: "
                f"{self.connect_count} CONNECTs, {len(self._handlers)} open>")

    def reset(self) -> None:
        """What ``POST /reset`` does: zero the counters."""
        self.connect_count = 0
        self.targets.clear()

    def metrics(self) -> str:
        """The body of ``GET /metrics``: one ``key value`` line per counter."""
        return f"connect_count {self.connect_count}\n"

    async def serve_connection(self, reader: asyncio.StreamReader,
                               writer: asyncio.StreamWriter) -> None:
        try:
            head = await reader.readuntil(b"\r\n\r\n")
            method, target, headers = _parse_head(head)
            if method == "CONNECT":
                await self._tunnel(target, reader, writer)
            else:
                await _drain_body(reader, headers)
                writer.write(self._control(method, target))
                await writer.drain()
        except (OSError, ValueError, asyncio.IncompleteReadError, asyncio.LimitOverrunError):
            pass
        finally:
            writer.close()

    async def _tunnel(self, target: str, reader: asyncio.StreamReader,
                      writer: asyncio.StreamWriter) -> None:
        """CONNECT: open ``target``, answer 200 and carry bytes both ways until either side
        closes (or close() cancels this); 502 when ``target`` cannot be reached."""
        self.connect_count += 1
        self.targets.append(target)
        host, _, port = self._map.get(target, target).rpartition(":")
        try:
            up_reader, upstream = await asyncio.open_connection(host.strip("[]"), int(port))
        except (OSError, ValueError):
            writer.write(_response(502, "Bad Gateway", f"cannot connect to {target}\n"))
            await writer.drain()
            return
        try:
            writer.write(b"HTTP/1.1 200 Connection established\r\n\r\n")
            await writer.drain()
            await splice(reader, writer, up_reader, upstream)
        finally:
            upstream.close()

    def _control(self, method: str, target: str) -> bytes:
        if (method, target) == ("POST", "/reset"):
            self.reset()
            return _response(200, "OK", "")
        if (method, target) == ("GET", "/metrics"):
            return _response(200, "OK", self.metrics())
        return _response(404, "Not Found", f"no {method} {target}\n")


def _parse_head(head: bytes) -> tuple[str, str, dict[str, str]]:
    """(method, target, headers with lower-case names) of an HTTP/1.1 request head."""
    request_line, *lines = head.decode("latin-1").split("\r\n")
    method, target, _version = request_line.split(" ")
    headers = {}
    for line in lines:
        name, sep, value = line.partition(":")
        if sep:
            headers[name.strip().lower()] = value.strip()
    return method, target, headers


async def _drain_body(reader: asyncio.StreamReader, headers: dict[str, str]) -> None:
    length = int(headers.get("content-length", "0"))
    if length:
        await reader.readexactly(min(length, _MAX_HEAD))


def _response(status: int, reason: str, body: str) -> bytes:
    data = body.encode()
    return (f"HTTP/1.1 {status} {reason}\r\nContent-Type: text/plain\r\n"
            f"Content-Length: {len(data)}\r\nConnection: close\r\n\r\n").encode() + data
